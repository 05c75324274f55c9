"""Hostile input, third round (issue 36): the limits read from the environment, the one YAML loader, the EtherCAT
slave configs and bring-up data, hardware profiles' fields, and VRML's DEF/USE.

Each case below crashed, hung or was refused without naming its source before; each now gives a typed error
naming the file or variable, the field and the value. The hypothesis fuzz tests run under a memory cap and a time
cap (``hostile.memory_cap`` / ``hostile.time_cap``, or a capped child process). URDF import has its own file,
test_hostile_urdf_import.py.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import primitives_json
from hostile import assert_clean_error, memory_cap, run_cli, time_cap
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core import ModuleAssembly, ModulesDB
from timor_core.cli.app import main
from timor_core.common.names import expand_xacro
from timor_core.common.safe_yaml import MAX_YAML_BYTES, yaml_from_text
from timor_core.errors import InputError, MeshError, ValidationError
from timor_core.export.formats.yaml_text import to_yaml
from timor_core.hardware.ethercat_config import read_slave_config
from timor_core.limits import MAX_LIMIT, Limits, limits
from timor_core.model.vrml import read_vrml
from timor_core.ros.launch_arguments import BringupLaunch

# -- the environment: one error line naming the variable and its value, exit 2 ---------------------------------------


@pytest.mark.parametrize(
    "variable, value",
    [
        ("TIMOR_MAX_FILE_BYTES", "128MB"),
        ("TIMOR_FORCE_WORKERS", "enabled"),
        ("TIMOR_MAX_SEARCH_SECONDS", "nan"),
        ("TIMOR_MAX_SEARCH_SECONDS", "-inf"),
        ("TIMOR_MAX_DENSITY", "1e400"),
        ("TIMOR_MAX_DOF", "0"),
        ("TIMOR_MAX_DOF", "9" * 5000),
        ("TIMOR_MAX_MESH_BYTES", "1" + "0" * 400),
        ("TIMOR_COMPILED", "yes"),
    ],
)
def test_a_bad_environment_variable_is_one_error_line_naming_it(variable, value):
    proc = run_cli(["db", "info", "geometric_primitive_modules"], env={variable: value}, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert_clean_error(proc, variable, value[:20])
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_good_environment_variables_still_set_their_limits():
    """Read on first use in a child process, as a command or a ROS node reads them."""
    code = "from timor_core.limits import limits; l = limits(); print(l.max_dof, l.force_workers, l.max_duration_s)"
    env = dict(os.environ, TIMOR_MAX_DOF="7", TIMOR_FORCE_WORKERS="on", TIMOR_MAX_DURATION_S="2.5")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.split() == ["7", "True", "2.5"], proc.stderr


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["TIMOR_MAX_DOF", "TIMOR_MAX_FILE_BYTES", "TIMOR_MAX_SEARCH_SECONDS", "TIMOR_FORCE_WORKERS"]),
    st.one_of(
        st.text(max_size=12),
        st.floats().map(repr),
        st.integers(-(10**30), 10**30).map(str),
        st.text(alphabet="9", min_size=300, max_size=5000),
    ),
)
def test_fuzz_environment_limits(variable, value):
    """Any text in a TIMOR_ variable: the limits it sets are positive, finite and at most MAX_LIMIT, or an InputError
    names the variable (the CLI turns that into its one line, see above)."""
    if "\x00" in value:
        value = value.replace("\x00", "")
    with memory_cap(), time_cap(60):
        try:
            lim = Limits.from_environment({variable: value})
        except InputError as exc:
            assert variable in str(exc)
            return
    for name in ("max_dof", "max_file_bytes", "max_search_seconds"):
        assert 0 < getattr(lim, name) <= MAX_LIMIT


# -- YAML: one loader, no aliases or tags, bounded depth, size and numbers ------------------------------------------

yaml = pytest.importorskip("yaml")

_BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")
)


def _bringup_package(tmp_path: Path, xacro_arguments: str) -> Path:
    """A bring-up package's launch folder: control.launch.py beside its data file, bringup.yaml."""
    launch = tmp_path / "launch"
    launch.mkdir(parents=True, exist_ok=True)
    (launch / "control.launch.py").write_text("")
    (launch / "bringup.yaml").write_text(
        "package: arm_bringup\nrobot: arm\ndistro: jazzy\nroute_packages: []\n" + xacro_arguments
    )
    return launch / "control.launch.py"


@pytest.mark.parametrize(
    "xacro_arguments, needle",
    [
        (_BOMB.replace("a: &a", "xacro_arguments:\n  can_interface: *i\na: &a"), "aliases"),
        ("xacro_arguments: {can_interface: " + "1" * 5001 + "}\n", "max_number_digits"),
        ("xacro_arguments: {can_interface: !!binary Y2FuMA==}\n", "tags"),
        ("xacro_arguments: " + "[" * 100_000 + "]" * 100_000 + "\n", "max_json_depth"),
        ("xacro_arguments: {}\n#" + "x" * MAX_YAML_BYTES, f"largest size of such a file ({MAX_YAML_BYTES} bytes)"),
    ],
    ids=["alias-bomb", "5001-digits", "tag", "deep", "too-large"],
)
def test_bringup_data_goes_through_the_safe_yaml_loader(tmp_path, xacro_arguments, needle):
    launch_file = _bringup_package(tmp_path, xacro_arguments)
    with memory_cap(512 * 2**20), time_cap(30), pytest.raises(InputError) as err:
        BringupLaunch.arguments(launch_file)
    assert "bringup.yaml" in str(err.value) and needle in str(err.value)


def test_a_xacro_substitution_in_a_launch_argument_is_refused_naming_it(tmp_path):
    launch_file = _bringup_package(tmp_path, "xacro_arguments: {can_interface: can0}\n")
    assert BringupLaunch.from_arguments(launch_file, {"can_interface": "${1+1}"}).text["can_interface"] == "${1+1}"
    with pytest.raises(InputError, match="launch argument 'can_interface'.*xacro substitution") as err:
        BringupLaunch.from_arguments(launch_file, {"can_interface": "$(eval 3*7)"})
    assert "$(eval 3*7)" in str(err.value)
    with pytest.raises(InputError, match="launch argument 'can_interface'"):
        BringupLaunch.from_arguments(launch_file, {"can_interface": "1" * 5001})


def test_xacros_own_errors_name_the_file(tmp_path):
    xacro_file = tmp_path / "arm.urdf.xacro"
    xacro_file.write_text('<robot name="arm" xmlns:xacro="http://www.ros.org/wiki/xacro">'
                          '<xacro:arg name="can" default="can0"/><link name="$(arg can)"/></robot>')  # fmt: skip
    assert 'name="can0"' in expand_xacro(xacro_file, {})
    with pytest.raises(InputError, match="xacro refused") as err:
        expand_xacro(xacro_file, {"can": "$(eval 3*7)"})
    assert str(xacro_file) in str(err.value)


def _slave_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "slave.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    "text, needle",
    [
        ("vendor_id: " + "9" * 5001 + "\nproduct_id: 1\n", "max_number_digits"),
        ("vendor_id: 1\nproduct_id: 2\nrpdo: " + "[" * 100_000 + "]" * 100_000 + "\n", "max_json_depth"),
        ("vendor_id: 1\nproduct_id: 2\nrpdo: !!python/object:os.system [ls]\n", "tags"),
        ("vendor_id: 1\nproduct_id: 2\nx: 2001-13-45\n", "not valid YAML"),
    ],
    ids=["5001-digit-vendor", "deep", "tag", "bad-date"],
)
def test_a_hostile_slave_configuration_is_refused_naming_file_and_field(tmp_path, text, needle):
    path = _slave_config(tmp_path, text)
    with memory_cap(512 * 2**20), time_cap(30), pytest.raises(InputError) as err:
        read_slave_config(path, "$.drives.J.slave_config", None, None)
    assert str(path) in str(err.value) and "$.drives.J.slave_config" in str(err.value) and needle in str(err.value)


def test_flow_brackets_deeper_than_the_limit_are_refused_before_what_follows_is_scanned():
    """200 ``[`` and a tab: refused as nested too deeply on line 1, where the scanner used to read ahead past the
    limit (each bracket against every open level, ~0.2 s for a long line) and report the tab as not valid YAML; a
    document within the limit and a line of brackets further down still read as before."""
    with pytest.raises(InputError, match=r"^f\.yaml: \$\.x: nested too deeply .*\(line 1\)$"):
        yaml_from_text("[" * 200 + "\t" + "]" * 200, file="f.yaml", path="$.x")
    depth, expected = limits().max_json_depth, []
    for _ in range(depth - 1):
        expected = [expected]
    assert yaml_from_text("[" * depth + "]" * depth) == expected
    with pytest.raises(InputError, match=r"nested too deeply .*\(line 3\)"):
        yaml_from_text("a:\n  b:\n    " + "[" * 3000 + "]" * 3000)


def test_written_yaml_has_no_aliases_so_timor_reads_it_back():
    shared = {"joints": ["a", "b"]}
    text = to_yaml({"one": shared, "two": shared})
    assert "&" not in text and yaml_from_text(text) == {"one": shared, "two": shared}


_SCALARS = st.one_of(st.integers(-(10**500), 10**500), st.floats(), st.text(max_size=8), st.booleans(), st.none())
_DOCUMENTS = st.recursive(_SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=4)), max_leaves=30)  # fmt: skip


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        _DOCUMENTS.map(lambda d: yaml.safe_dump(d)),
        st.text(alphabet=st.sampled_from("&*!:[]{}-, \n\"'ab01.#|>%@`~\t"), max_size=200),
        st.integers(1, 3000).map(lambda n: "[" * n + "]" * n),
        st.integers(1, 300).map(lambda n: "".join(" " * i + "k:\n" for i in range(n))),
    )
)
def test_fuzz_yaml_loader(text):
    """Any text: a document without aliases, no deeper than the limit, or an InputError naming the file."""
    with memory_cap(), time_cap(60):
        try:
            data = yaml_from_text(text, file="f.yaml", path="$.x")
        except InputError as exc:
            assert str(exc).startswith("f.yaml: $.x: ")
            return

    def depth(d) -> int:
        items = d.values() if isinstance(d, dict) else d if isinstance(d, list) else ()
        return 1 + max(map(depth, items), default=0) if isinstance(d, (dict, list)) else 0

    assert depth(data) <= limits().max_json_depth


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.fixed_dictionaries(
        {"vendor_id": st.one_of(st.integers(0, 2**32), _SCALARS), "product_id": st.one_of(st.integers(0, 5), _SCALARS)},
        optional={"rpdo": _DOCUMENTS, "tpdo": _DOCUMENTS},
    ).map(lambda d: yaml.safe_dump(d)),
    st.sampled_from(["", "&a ", "!!str ", "[[[[[[[[", "1" * 5001 + " #"]),
)
def test_fuzz_slave_configuration(tmp_path_factory, text, poison):
    """Any slave configuration: read with uint32 identities, or an InputError naming the file and the field."""
    path = _slave_config(tmp_path_factory.mktemp("slave"), text.replace("vendor_id: ", "vendor_id: " + poison, 1))
    with memory_cap(), time_cap(60):
        try:
            info = read_slave_config(path, "$.drives.J.slave_config", None, None)
        except InputError as exc:
            assert str(path) in str(exc) and "$.drives.J.slave_config" in str(exc)
            return
    assert 0 <= info.vendor_id <= 0xFFFFFFFF and 0 <= info.product_id <= 0xFFFFFFFF


# -- left from the second round: hardware profiles ------------------------------------------------------------------

ARM = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]


def _profile_run(tmp_path: Path, capsys, edit) -> tuple[int, list[str], Path]:
    """``timor bringup`` with the robco_like CANopen profile copied to ``tmp_path`` and edited: exit code, the
    stderr lines, the profile file."""
    example = Path(ModulesDB.from_name("robco_like").base_dir)
    folder = tmp_path / "prof"
    shutil.copytree(example / "hardware", folder / "hardware")
    data = json.loads((example / "hardware_canopen.json").read_text())
    edit(data, folder)
    profile = folder / "profile.json"
    profile.write_text(json.dumps(data))
    code = main(["bringup", "--db", "robco_like", "--modules", *ARM, "--hardware", str(profile),
                 "-o", str(tmp_path / "out"), "--samples", "3"])  # fmt: skip
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()], profile


@pytest.mark.parametrize(
    "edit, field",
    [
        (lambda d, f: d.__setitem__("hardware_parameters", {"p": "a\x01b"}), "$.hardware_parameters.p"),
        (lambda d, f: d["drives"]["J"].__setitem__("parameters", {"q\x1b": "1"}), "$.drives.J.parameters.q"),
        (lambda d, f: d.__setitem__("chain", {"links": ["L_250"]}), "$.chain.links[0]"),
    ],
    ids=["control-character", "control-character-in-a-drive-parameter-name", "chain-links"],
)
def test_profile_errors_name_the_profile_file_and_the_field(tmp_path, capsys, edit, field):
    code, lines, profile = _profile_run(tmp_path, capsys, edit)
    assert code == 2 and len(lines) == 1 and lines[0].startswith(f"error: {profile}: {field}"), lines


def test_an_eds_file_name_with_a_newline_stays_on_the_one_error_line(tmp_path, capsys):
    def edit(data, folder):
        shutil.copy(folder / "hardware" / "cia402_drive.eds", folder / "hardware" / "a\nb.eds")
        data["drives"]["J"].update(eds="hardware/a\nb.eds", product_code="0x1234")

    code, lines, _ = _profile_run(tmp_path, capsys, edit)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and "a\\nb.eds" in lines[0], lines


# -- recursive readers: VRML's DEF/USE is YAML's anchor/alias --------------------------------------------------------

_SHAPE = "Shape { geometry IndexedFaceSet { coord Coordinate { point [0 0 0, 1 0 0, 0 1 0] } coordIndex [0 1 2 -1] } }"


def _use_bomb(levels: int, shape: str = _SHAPE) -> str:
    text = f"#VRML V2.0 utf8\nDEF L0 Transform {{ children [ {shape} ] }}\n"
    return text + "".join(
        f"DEF L{k} Transform {{ children [ USE L{k - 1} USE L{k - 1} ] }}\n" for k in range(1, levels)
    )


@pytest.mark.parametrize("shape", [_SHAPE, ""], ids=["shapes", "empty-transforms"])
def test_a_vrml_use_bomb_is_refused_before_it_is_walked(tmp_path, shape):
    path = tmp_path / "bomb.wrl"
    path.write_text(_use_bomb(24, shape))
    with memory_cap(), time_cap(30), pytest.raises(MeshError, match="USE copies add more than") as err:
        read_vrml(path)
    assert str(path) in str(err.value)


def test_a_vrml_file_may_still_use_a_node_a_few_times(tmp_path):
    path = tmp_path / "few.wrl"
    path.write_text(_use_bomb(5))
    assert len(read_vrml(path)) == 2**5 - 1  # each top-level DEF is drawn too: 1 + 2 + 4 + 8 + 16 shapes


def test_a_validation_problem_in_a_file_named_with_a_newline_stays_on_one_line(tmp_path, capsys):
    data = primitives_json()
    data["modules"][0]["bodies"][0]["mass"] = -1
    path = tmp_path / "a\nb.json"
    path.write_text(json.dumps(data))
    assert main(["db", "validate", str(path)]) == 1
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error: ") and "a\\nb.json" in lines[0], lines


# -- masses: a robot's mass is never inf -------------------------------------------------------------------------------


def test_masses_whose_sum_overflows_are_refused(tmp_path):
    data = primitives_json()
    for module in data["modules"]:
        for body in module["bodies"]:
            body["mass"] = 1e308
    two = next(k for k, m in enumerate(data["modules"]) if len(m["bodies"]) > 1)
    with pytest.raises(ValidationError, match="masses add up") as err:
        ModulesDB.from_json_data(data, base_dir=tmp_path)
    assert err.value.path == f"$.modules[{two}].bodies"
    data["modules"] = [m for m in data["modules"] if len(m["bodies"]) == 1]  # each module's mass is finite
    db = ModulesDB.from_json_data(data, base_dir=tmp_path)
    chain = [m.id for m in db.bases[:1]] + [m.id for m in db.links[:2]] + [m.id for m in db.end_effectors[:1]]
    assembly = ModuleAssembly.from_serial_modules(db, chain)
    with pytest.raises(ValidationError, match="masses add up"):
        _ = assembly.robot
