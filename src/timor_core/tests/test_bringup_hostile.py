"""Hostile and careless hardware profiles for ``timor bringup`` (issue 23, the bring-up part of the second
adversarial round): every refusal is one ``error:`` line naming file, field and value, exit 2, nothing written;
what is accepted is escaped so that the xacro the launch files expand is exactly the plain URDF (checked with the
real ``xacro`` package) and bus.yml is exactly what was meant (checked with a YAML parser and lely's dcfgen)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import primitives_json, write_db
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core import ModuleAssembly, ModulesDB
from timor_core.cli.app import main
from timor_core.common.names import xacro_escape
from timor_core.hardware.bringup import write_bringup
from timor_core.ros.launch_arguments import BringupLaunch

yaml = pytest.importorskip("yaml")
xacro = pytest.importorskip("xacro")

ARM = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
DCFGEN = shutil.which("dcfgen") or str(Path(sys.executable).parent / "dcfgen")
EXAMPLE = Path(ModulesDB.from_name("robco_like").base_dir)


def _profile(folder: Path, route: str = "canopen", edit=None) -> Path:
    """The robco_like profile of a route copied into ``folder`` (with its hardware/ files), then edited."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copytree(EXAMPLE / "hardware", folder / "hardware", dirs_exist_ok=True)
    data = json.loads((EXAMPLE / f"hardware_{route}.json").read_text())
    if edit is not None:
        edit(data, folder)
    path = folder / "profile.json"
    path.write_text(json.dumps(data))
    return path


def _bringup(profile: Path | str, out: Path, capsys, *extra: str) -> tuple[int, str]:
    code = main(["bringup", "--db", "robco_like", "--modules", *ARM, "--hardware", str(profile), "-o", str(out),
                 "--samples", "5", *extra])  # fmt: skip
    return code, capsys.readouterr().err


def _eds(name: str, value):
    def edit(data, folder):
        data["drives"]["J"]["eds"] = value(folder) if callable(value) else value

    return edit


def _sparse(folder: Path) -> str:
    with (folder / "hardware" / "huge.eds").open("wb") as f:
        f.truncate(5 << 30)  # 5 GiB, no disk used
    return "hardware/huge.eds"


def _symlink_out(folder: Path) -> str:
    (folder.parent / "outside.eds").write_bytes((EXAMPLE / "hardware" / "cia402_drive.eds").read_bytes())
    os.symlink(folder.parent / "outside.eds", folder / "hardware" / "link.eds")
    return "hardware/link.eds"


def _write(name: str, data: bytes):
    def make(folder: Path) -> str:
        (folder / "hardware" / name).write_bytes(data)
        return f"hardware/{name}"

    return make


def _without(index: str):
    """The example EDS without the sections of one object (and its sub-objects)."""
    text = (EXAMPLE / "hardware" / "cia402_drive.eds").read_text()
    kept = [part for part in text.split("\n\n") if not part.lstrip().startswith(f"[{index}")]
    return _write("cut.eds", "\n\n".join(kept).encode())


def _set(*keys, value):
    def edit(data, folder):
        d = data
        for k in keys[:-1]:
            d = d[k]
        d[keys[-1]] = value

    return edit


REFUSED = [
    ("dotdot", _eds("eds", "../../x.eds"), ["$.drives.J.eds", "'../../x.eds'", "without '..'"]),
    ("absolute", _eds("eds", "/etc/hostname"), ["$.drives.J.eds", "'/etc/hostname'"]),
    ("symlink-out", _eds("eds", _symlink_out), ["$.drives.J.eds", "leads out of the profile's folder"]),
    ("empty", _eds("eds", _write("empty.eds", b"")), ["empty.eds", "$.drives.J.eds", "empty"]),
    ("binary", _eds("eds", _write("bin.eds", bytes(range(256)) * 4)), ["bin.eds", "NUL bytes"]),
    ("not-ini", _eds("eds", _write("text.eds", b"hello world\n")), ["text.eds", "not an EDS/DCF file"]),
    ("no-deviceinfo", _eds("eds", _write("x.eds", b"[FileInfo]\nFileName=x\n")), ["x.eds", "[DeviceInfo]"]),
    ("5GiB", _eds("eds", _sparse), ["$.drives.J.eds", "huge.eds", "too large"]),
    ("nul-in-path", _eds("eds", "hard\x00ware.eds"), ["$.drives.J.eds", "NUL"]),
    ("directory", _eds("eds", "hardware"), ["$.drives.J.eds", "file not found"]),
    ("no-607A", _eds("eds", _without("607A")), ["cut.eds", "0x607A", "target position"]),
    ("no-60C2", _eds("eds", _without("60C2")), ["cut.eds", "0x60C2", "cyclic_synchronous_position"]),
    ("interface", _set("bus", "interface", value='can0"/><xacro:include filename="/etc/hostname"/>'),
     ["$.bus.interface", "xacro:include"]),
    ("gear-1e308", _set("drives", "J", "gear_ratio", value=1e308), ["$.drives.J.gear_ratio", "1e+308"]),
    ("node-id-0", _set("drives", "J", "node_id", value=0), ["$.drives.J.node_id", "0"]),
    ("node-id-master", _set("bus", "first_node_id", value=1), ["$.bus.first_node_id", "master", "profile.json"]),
    ("product-mismatch", _set("drives", "J", "product_code", value="0x403"),
     ["$.drives.J.product_code", "0x00000403", "0x00000402"]),
    ("homing", _set("drives", "J", "operation_mode", value="homing"),
     ["$.drives.J.operation_mode", "homing is not a mode"]),
    ("scale-negative", _set("drives", "J", "scale_vel_to_dev", value=-1), ["$.drives.J.scale_vel_to_dev"]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "edit", "needles"), REFUSED, ids=[c[0] for c in REFUSED])
def test_a_bad_canopen_profile_is_one_error_line_exit_2_nothing_written(tmp_path, capsys, case, edit, needles):
    profile = _profile(tmp_path / "prof", edit=edit)
    out = tmp_path / "out"
    out.mkdir()
    code, err = _bringup(profile, out, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert not list(out.iterdir())


@pytest.mark.parametrize(
    "path",
    [lambda f: "../outside.yaml", lambda f: "/etc/hostname", lambda f: _symlink_out(f)],
    ids=["dotdot", "absolute", "symlink"],
)
def test_ethercat_slave_config_is_confined_to_the_profiles_folder(tmp_path, capsys, path):
    (tmp_path / "outside.yaml").write_text("vendor_id: 1\n")

    def edit(data, folder):
        data["drives"]["J"]["slave_config"] = path(folder)

    profile = _profile(tmp_path / "prof", "ethercat", edit)
    code, err = _bringup(profile, tmp_path / "out", capsys)
    assert code == 2 and err.startswith("error: ") and "$.drives.J.slave_config" in err, err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_nul_byte_in_the_hardware_argument_is_an_error_not_a_crash(tmp_path, capsys):
    code, err = _bringup("prof\x00ile.json", tmp_path / "out", capsys)
    assert code == 2 and err.startswith("error: ") and "--hardware" in err, err


def _same(a: ET.Element, b: ET.Element) -> None:
    assert (a.tag, a.attrib, (a.text or "").strip(), (a.tail or "").strip()) == (
        b.tag, b.attrib, (b.text or "").strip(), (b.tail or "").strip())  # fmt: skip
    assert len(a) == len(b), a.tag
    for x, y in zip(a, b):
        _same(x, y)


def _xacro_is_plain(package: Path, robot: str, **args: str) -> ET.Element:
    plain = ET.parse(package / "urdf" / f"{robot}.urdf").getroot()
    expanded = xacro.process_file(
        str(package / "urdf" / f"{robot}.urdf.xacro"),
        mappings={"config_dir": str((package / "config").resolve()), **args},
    ).toxml()
    _same(ET.fromstring(expanded), plain)
    return plain


HOSTILE_TEXT = "${3*7} $(env HOME) $$x $${y} a$b ' \" & <z/>"


def test_dollar_expressions_in_parameters_reach_ros2_control_literally(tmp_path):
    def edit(data, folder):
        data["hardware_parameters"] = {"note": HOSTILE_TEXT}

    profile = _profile(tmp_path / "prof", edit=edit)
    arm = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ARM)
    result = write_bringup(arm, tmp_path / "out", profile, name="arm", n_samples=5)
    plain = _xacro_is_plain(result.folder, "arm", can_interface="can0")
    assert plain.find("ros2_control/hardware/param[@name='note']").text == HOSTILE_TEXT
    plugin = tmp_path / "plugin.json"
    plugin.write_text(json.dumps({"route": "plugin", "plugin": "vendor/Arm", "drives": {"J": {
        "parameters": {"motor": HOSTILE_TEXT}}}}))  # fmt: skip
    result = write_bringup(arm, tmp_path / "out2", plugin, name="arm", n_samples=5)
    plain = _xacro_is_plain(result.folder, "arm")
    assert {p.find("param[@name='motor']").text for p in plain.findall("ros2_control/joint")} == {HOSTILE_TEXT}


def test_an_output_folder_with_markup_gives_valid_xml_and_the_same_xacro(tmp_path):
    arm = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ARM)
    out = tmp_path / "R&D <arm> $(env HOME) ${1+1}"
    result = write_bringup(arm, out, "canopen", name="arm", n_samples=5)
    plain = _xacro_is_plain(result.folder, "arm", can_interface="can0")
    params = {p.get("name"): p.text for p in plain.findall("ros2_control/hardware/param")}
    assert params["bus_config"] == str((result.folder / "config" / "bus" / "bus.yml").resolve())


def test_eds_file_names_with_quotes_and_newlines_and_shared_base_names_stay_apart(tmp_path):
    """Two drives whose files share a base name in different folders; a name with a quote and a newline:
    bus.yml holds exactly the devices meant, each with its own copy, and lely's dcfgen accepts it."""
    folder = tmp_path / "prof"
    weird = 'we"ird\nkey: 1.eds'
    (folder / "a").mkdir(parents=True)
    (folder / "b").mkdir()
    text = (EXAMPLE / "hardware" / "cia402_drive.eds").read_text()
    (folder / "a" / "drive.eds").write_text(text)
    (folder / "b" / "drive.eds").write_text(text.replace("0x00000402", "0x00000403"))
    (folder / "a" / weird).write_text(text.replace("0x00000402", "0x00000404"))
    base = {"encoder_counts": 2048, "gear_ratio": 50}
    (folder / "p.json").write_text(json.dumps({"route": "canopen", "drives": {
        "J1": {"eds": "a/drive.eds", **base}, "J2": {"eds": "b/drive.eds", **base},
        "P1": {"eds": f"a/{weird}", **base, "operation_mode": "profile_position"}}}))  # fmt: skip
    db = ModulesDB.from_name("geometric_primitive_modules")
    arm = ModuleAssembly.from_serial_modules(db, ["base", "J1", "J2", "P1", "eef"])
    result = write_bringup(arm, tmp_path / "out", folder / "p.json", name="arm", n_samples=5)
    bus_dir = result.folder / "config" / "bus"
    bus = yaml.safe_load((bus_dir / "bus.yml").read_text())
    devices = {k: v for k, v in bus.items() if k not in ("options", "master")}
    assert len(devices) == 3 and all(set(v) >= {"node_id", "dcf", "driver"} for v in devices.values())
    files = [v["dcf"] for v in devices.values()]
    assert len(set(files)) == 3 and all("\n" not in f and '"' not in f for f in files)
    products = [(bus_dir / f).read_text().count(code) for f, code in zip(files, ("0402", "0403", "0404"))]
    assert all(n >= 2 for n in products)  # each device's own file
    run = subprocess.run([DCFGEN, "-S", "-r", "-d", str(tmp_path), "bus.yml"], cwd=bus_dir, capture_output=True,
                         text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr


def test_mesh_names_with_markup_are_copied_into_the_package(tmp_path):
    data = primitives_json()
    weird = "it's & <ok> ${x}.stl"
    folder = tmp_path / "set"
    folder.mkdir()
    import trimesh

    trimesh.creation.box(extents=(0.05, 0.05, 0.05)).export(folder / weird, file_type="stl")
    eye = [[1.0, 0, 0, 0], [0, 1.0, 0, 0], [0, 0, 1.0, 0], [0, 0, 0, 1.0]]
    data["modules"][0]["bodies"][0]["visual"] = [{"type": "mesh", "parameters": {"file": weird}, "pose": eye}]
    db = ModulesDB.from_json_file(write_db(folder, data))
    arm = ModuleAssembly.from_serial_modules(db, ["base", "J2", "i_45", "J2", "eef"])
    result = write_bringup(arm, tmp_path / "out", "mock", name="arm", n_samples=5)
    assert (result.folder / "meshes" / weird).is_file()
    plain = _xacro_is_plain(result.folder, "arm")
    assert any(m.get("filename", "").endswith(weird) for m in plain.iter("mesh"))


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("$${}()ab'\" "), max_size=20))
def test_xacro_escape_expands_back_to_the_text(text):
    assert xacro.eval_text(xacro_escape(text), xacro.Table()) == text


EPOS4_ETHERCAT = Path(__file__).parent / "data" / "vendor_eds" / "ethercat_epos4_config_with_gear_box.yaml"


def _ethercat(folder: Path, drive: dict, files: dict[str, str | Path]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, Path):
            shutil.copy(content, folder / name)
        else:
            (folder / name).write_text(content)
    path = folder / "ethercat.json"
    path.write_text(json.dumps({"route": "ethercat", "drives": {"J": drive}}))
    return path


def test_a_real_ethercat_slave_configuration_gives_its_identity_and_is_copied(tmp_path):
    arm = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ARM)
    profile = _ethercat(tmp_path / "p", {"slave_config": "epos4.yaml"}, {"epos4.yaml": EPOS4_ETHERCAT})
    result = write_bringup(arm, tmp_path / "out", profile, name="arm", n_samples=5)
    assert (result.folder / "config" / "ethercat" / "epos4.yaml").read_bytes() == EPOS4_ETHERCAT.read_bytes()
    plain = _xacro_is_plain(result.folder, "arm")
    modules = [j.find("ec_module") for j in plain.findall("ros2_control/joint")]
    assert {m.find("param[@name='slave_config']").text for m in modules} == {
        str((result.folder / "config" / "ethercat" / "epos4.yaml").resolve())
    }


ETHERCAT_REFUSED = [
    ("mismatch", {"product_code": "0x63500001"}, {}, ["$.drives.J.product_code", "0x63500001", "0x63500000"]),
    ("not-yaml", {}, {"epos4.yaml": "vendor_id: [\n"}, ["$.drives.J.slave_config", "not valid YAML"]),
    ("alias", {}, {"epos4.yaml": "a: &x [1, 2]\nb: [*x, *x]\n"}, ["aliases are not accepted"]),
    ("no-product", {}, {"epos4.yaml": "vendor_id: 0xfb\n"}, ["product_id", "epos4.yaml"]),
    ("bad-type", {}, {"epos4.yaml": "vendor_id: 1\nproduct_id: 2\nrpdo:\n  - channels:\n"
                      "      - {index: 0x607a, type: float}\n"}, ["rpdo[0].channels[0].type", "float"]),
    ("no-position", {}, {"epos4.yaml": "vendor_id: 1\nproduct_id: 2\n"}, ["maps no rpdo command_interface"]),
]  # fmt: skip


@pytest.mark.parametrize(("case", "drive", "files", "needles"), ETHERCAT_REFUSED, ids=[c[0] for c in ETHERCAT_REFUSED])
def test_a_bad_ethercat_slave_configuration_is_refused(tmp_path, capsys, case, drive, files, needles):
    profile = _ethercat(
        tmp_path / "p", {"slave_config": "epos4.yaml", **drive}, {"epos4.yaml": EPOS4_ETHERCAT, **files}
    )
    code, err = _bringup(profile, tmp_path / "out", capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), err
    for needle in needles:
        assert needle in lines[0], (needle, lines[0])
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


@settings(max_examples=12, deadline=None)
@given(st.text(alphabet=st.sampled_from("$${}()&<>'\"; a\\"), min_size=1, max_size=16))
def test_any_parameter_text_reaches_the_expanded_urdf_unchanged(text):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "plugin.json"
        profile.write_text(json.dumps({"route": "plugin", "plugin": "vendor/Arm", "hardware_parameters": {"p": text},
                                       "drives": {"J": {"parameters": {"q": text}}}}))  # fmt: skip
        arm = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ARM[:3] + ARM[-1:])
        result = write_bringup(arm, Path(tmp) / "out", profile, name="arm", n_samples=2)
        plain = _xacro_is_plain(result.folder, "arm")
        assert plain.find("ros2_control/hardware/param[@name='p']").text == text


def test_an_eds_named_like_dcfgens_output_does_not_take_its_place(tmp_path):
    def edit(data, folder):
        shutil.copy(folder / "hardware" / "cia402_drive.eds", folder / "hardware" / "master.dcf")
        data["drives"]["J"]["eds"] = "hardware/master.dcf"

    arm = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ARM)
    result = write_bringup(arm, tmp_path / "out", _profile(tmp_path / "prof", edit=edit), name="arm", n_samples=5)
    bus = yaml.safe_load((result.folder / "config" / "bus" / "bus.yml").read_text())
    assert {v["dcf"] for k, v in bus.items() if k not in ("options", "master")} == {"master_2.dcf"}
    assert not (result.folder / "config" / "bus" / "master.dcf").exists()


def test_a_hostile_can_interface_name_in_hardware_parameters_stays_text(tmp_path):
    """The bus interface is checked; hardware_parameters can still override can_interface_name: it becomes the
    xacro argument's default (escaped), and the launch files' default (in their data file, bringup.yaml)."""
    hostile = 'can0"/><xacro:include filename="/etc/hostname"/>${1+1}'

    def edit(data, folder):
        data["hardware_parameters"] = {"can_interface_name": hostile}

    arm = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ARM)
    result = write_bringup(arm, tmp_path / "out", _profile(tmp_path / "prof", edit=edit), name="arm", n_samples=5)
    plain = _xacro_is_plain(result.folder, "arm")  # no can_interface mapping: the xacro's default is used
    assert plain.find("ros2_control/hardware/param[@name='can_interface_name']").text == hostile
    data = yaml.safe_load((result.folder / "launch" / "bringup.yaml").read_text())
    assert data["xacro_arguments"] == {"can_interface": hostile}
    declared = BringupLaunch.arguments(result.folder / "launch" / "control.launch.py")
    assert declared["can_interface"][0] == hostile
