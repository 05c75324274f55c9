"""CANopen bring-up packages from real vendor drive files (issue 23), built the way a ROS 2 workspace builds them:
ros2_canopen's unmodified ``generate_dcf()`` macro and lely's ``dcfgen`` from ../shared/ros2-canopen
(``build_package.sh``). What RobotSystem (canopen_ros2_control/src/robot_system.cpp) reads is checked against the
installed files: each joint's ``device_name`` is a ``ros2_canopen::Cia402Driver`` device of the installed bus.yml,
with the ``*_mode`` key of its command interface; master.dcf expects the profile's node ids and identities; the
drives' .bin files carry the PDO mapping and 0x60C2. The vendor files are in tests/data/vendor_eds (README)."""

from __future__ import annotations

import configparser
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from kit_build import kit_build

from timor_core import ModuleAssembly, ModulesDB
from timor_core.errors import InputError
from timor_core.hardware.bringup import write_bringup
from timor_core.hardware.profiles import HardwareProfile

yaml = pytest.importorskip("yaml")

VENDOR = Path(__file__).parent / "data" / "vendor_eds"
KIT = Path(__file__).resolve().parents[4] / "shared" / "ros2-canopen"
VENV = Path(sys.prefix)
ARM = ["base", "J1", "J2", "P1", "eef"]  # geometric_primitive_modules: two revolute joints, one prismatic
PACKAGE = "vendor"  # the robot name of the packages built in kit_tree (vendor_bringup)
needs_kit = pytest.mark.skipif(
    not (KIT / "build_package.sh").is_file()
    or not (VENV / "share/lely_core_libraries/cmake/lely_core_librariesConfig.cmake").is_file()
    or not (VENV / "share/ament_cmake/cmake/ament_cmakeConfig.cmake").is_file(),
    reason="needs ../shared/ros2-canopen with its install.sh (and ament_cmake) run on this venv",
)

# maxon EPOS4 (rev/min), Elmo Gold (identity in the file), Schunk (no identity: the profile gives it)
MIXED = {
    "J1": {"eds": "eds/maxon_epos4_50_15.dcf", "gear_ratio": 101, "encoder_counts": 4096},
    "J2": {"eds": "eds/elmo_gold.dcf", "gear_ratio": 50, "encoder_counts": 2048, "vendor_id": "0x9A"},
    "P1": {"eds": "eds/schunk_0_63.dcf", "gear_ratio": 500, "encoder_counts": 1000, "vendor_id": "0x000000D2",
           "product_code": "0x00000063", "operation_mode": "interpolated_position"},  # its 0x6502: pp, vl, ip
}  # fmt: skip


def _profile(folder: Path, drives: dict, **bus) -> Path:
    (folder / "eds").mkdir(parents=True, exist_ok=True)
    for name in ("maxon_epos4_50_15.dcf", "elmo_gold.dcf", "schunk_0_63.dcf", "pilz_prbt_0_1.dcf"):
        shutil.copy(VENDOR / name, folder / "eds" / name)
    path = folder / "profile.json"
    path.write_text(json.dumps({"route": "canopen", "bus": {"first_node_id": 5, **bus}, "drives": drives}))
    return path


@pytest.fixture(scope="module")
def arm() -> ModuleAssembly:
    return ModuleAssembly.from_serial_modules(ModulesDB.from_name("geometric_primitive_modules"), ARM)


def _bin(path: Path) -> dict[tuple[int, int], int]:
    """The SDO writes of a dcfgen .bin (concise DCF: count, then index u16, sub u8, size u32, data)."""
    data = path.read_bytes()
    (n,) = struct.unpack_from("<L", data)
    out, at = {}, 4
    for _ in range(n):
        index, sub, size = struct.unpack_from("<HBL", data, at)
        out[(index, sub)] = int.from_bytes(data[at + 7 : at + 7 + size], "little", signed=index == 0x60C2)
        at += 7 + size
    return out


def _joints(urdf: str) -> list[ET.Element]:
    return ET.fromstring(urdf).findall("ros2_control/joint")


@needs_kit
@pytest.mark.xdist_group("canopen_vendor_kit_tree")  # one worker builds the four packages here in one tree
def test_three_vendor_drives_build_and_give_robotsystem_what_it_reads(arm, tmp_path, kit_tree):
    """(The first of the module's packages built in ``kit_tree`` is built by build_package.sh, the others reuse its
    CMake configure: see kit_build.py.)"""
    profile = _profile(tmp_path / "hw", MIXED)
    result = write_bringup(arm, tmp_path / "src", profile, name=PACKAGE, n_samples=10)
    share = kit_build(result.folder, kit_tree) / "share" / result.folder.name
    config = share / "config" / "bus"
    bus = yaml.safe_load((config / "bus.yml").read_text())
    assert bus["options"]["dcf_path"] == str(config)  # the real install path, not @BUS_CONFIG_PATH@
    assert (config / "master.dcf").is_file()
    xacro = pytest.importorskip("xacro")  # as the package's launch files expand it, config_dir = installed config
    urdf = xacro.process_file(
        str(share / "urdf" / f"{PACKAGE}.urdf.xacro"), mappings={"config_dir": str(share / "config")}
    ).toxml()
    joints = _joints(urdf)
    assert len(joints) == 3
    master = configparser.RawConfigParser()
    master.optionxform = str  # type: ignore[assignment,method-assign]
    master.read(config / "master.dcf")
    expected = {5: (0xFB, 0x65520000), 6: (0x9A, 0x30923), 7: (0xD2, 0x63)}  # the profile's (and the files')
    for joint, node_id in zip(joints, (5, 6, 7)):
        device = joint.find("param[@name='device_name']").text
        dev = bus[device]  # RobotSystem: config.get_entry(device_name, "driver")
        assert dev["driver"] == "ros2_canopen::Cia402Driver" and dev["node_id"] == node_id
        commands = [c.get("name") for c in joint.findall("command_interface")]
        mode = 7 if node_id == 7 else 8  # the Schunk drive in interpolated position mode
        assert commands == ["position"] and dev["position_mode"] == mode  # cia402_data.hpp: position_mode -> position
        assert not {"velocity_mode", "effort_mode"} & set(dev)
        assert (config / f"{device}.bin").is_file() and (config / dev["dcf"]).is_file()
        vendor, product = expected[node_id]
        assert int(master["1F85Value"][str(node_id)], 0) == vendor  # expected identity, checked at boot
        assert int(master["1F86Value"][str(node_id)], 0) == product
        sdo = _bin(config / f"{device}.bin")  # what the master writes to the drive at boot
        assert sdo[(0x1600, 1)] == 0x60400010 and sdo[(0x1601, 1)] == 0x607A0020  # controlword, target position
        assert sdo[(0x1A00, 1)] == 0x60410010 and sdo[(0x1A01, 1)] == 0x60640020  # statusword, position actual
        assert sdo[(0x60C2, 1)] == 10 and sdo[(0x60C2, 2)] == -3 and sdo[(0x6060, 0)] == mode
    assert sorted(int(k) for k in master["1F81Value"] if k.isdigit() and k != "0") == [5, 6, 7]
    hw = {p.get("name"): p.text for p in ET.fromstring(urdf).findall("ros2_control/hardware/param")}
    assert hw["bus_config"] == str(config / "bus.yml") and hw["master_config"] == str(config / "master.dcf")
    # units: the maxon drive's velocity is in rev/min (0x60A9 = 0x00B44700), position in increments
    maxon = bus[joints[0].find("param[@name='device_name']").text]
    assert math.isclose(maxon["scale_vel_to_dev"], 101 * 60 / (2 * math.pi), rel_tol=1e-5)  # ~964.5
    assert math.isclose(maxon["scale_pos_to_dev"], 4096 * 101 / (2 * math.pi), rel_tol=1e-5)
    schunk = bus[joints[2].find("param[@name='device_name']").text]
    assert math.isclose(schunk["scale_pos_to_dev"], 1000 * 500, rel_tol=1e-9)  # counts per metre
    assert schunk["dcf"] != "schunk_0_63.dcf" and "VendorNumber=0x000000D2" in (config / schunk["dcf"]).read_text()


@pytest.fixture(scope="module")
def kit_tree(tmp_path_factory) -> Path:
    """One folder where the packages of the three-vendor arm and of test_each_vendor_file_alone_on_a_robco_arm are
    built in turn (all named PACKAGE: the same CMakeLists.txt and package.xml, so one CMake configure)."""
    return tmp_path_factory.mktemp("kit")


@needs_kit
@pytest.mark.xdist_group("canopen_vendor_kit_tree")  # one worker builds the four packages here in one tree
@pytest.mark.parametrize("eds", ["maxon_epos4_50_15.dcf", "elmo_gold.dcf", "pilz_prbt_0_1.dcf"])
def test_each_vendor_file_alone_on_a_robco_arm(tmp_path, kit_tree, eds):
    """Three joints on one vendor file: one copy of it, three devices, three .bin files. (The CMake configure of the
    first package is reused by the others: see kit_build.py.)"""
    robco = ModulesDB.from_name("robco_like")
    arm = ModuleAssembly.from_serial_modules(robco, ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"])
    drive = {"eds": f"eds/{eds}", "gear_ratio": 101, "encoder_counts": 4096}
    if eds == "pilz_prbt_0_1.dcf":
        # no identity in the file: the profile's (a placeholder here; a real profile takes what discover prints)
        drive.update(vendor_id="0x00000ABC", product_code="0x00000001")
    mode = "profile_position" if eds == "pilz_prbt_0_1.dcf" else "cyclic_synchronous_position"
    profile = _profile(tmp_path / "hw", {"J": {**drive, "operation_mode": mode}})
    result = write_bringup(arm, tmp_path / "src", profile, name=PACKAGE, n_samples=10)
    config = kit_build(result.folder, kit_tree) / "share" / result.folder.name / "config" / "bus"
    bus = yaml.safe_load((config / "bus.yml").read_text())
    urdf = (result.folder / "urdf" / f"{PACKAGE}.urdf").read_text()
    devices = [j.find("param[@name='device_name']").text for j in _joints(urdf)]
    assert len(set(devices)) == 3 and all((config / f"{d}.bin").is_file() for d in devices)
    assert {bus[d]["node_id"] for d in devices} == {5, 6, 7}
    assert len({bus[d]["dcf"] for d in devices}) == 1


def test_a_profile_identity_that_differs_from_the_eds_is_refused_naming_both(arm, tmp_path):
    drives = {**MIXED, "J1": {**MIXED["J1"], "product_code": "0x65520001"}}
    with pytest.raises(InputError, match=r"product_code 0x65520001 differs from the EDS's 0x65520000"):
        HardwareProfile.from_json_file(_profile(tmp_path, drives))


def test_an_eds_without_identity_needs_the_profiles(arm, tmp_path):
    drives = {**MIXED, "P1": {k: v for k, v in MIXED["P1"].items() if k != "product_code"}}
    with pytest.raises(InputError, match=r"schunk_0_63.dcf gives no product_code .*give it in the profile"):
        HardwareProfile.from_json_file(_profile(tmp_path, drives))
    drives = {**MIXED, "P1": {**MIXED["P1"], "vendor_id": 0}}
    with pytest.raises(InputError, match=r"0 would make the master check nothing at boot"):
        HardwareProfile.from_json_file(_profile(tmp_path, drives))


def test_velocity_scale_follows_the_eds_units_and_the_profile_overrides(arm, tmp_path):
    from timor_core.hardware.bringup_routes import route_files

    profile = HardwareProfile.from_json_file(_profile(tmp_path, MIXED))
    bus = yaml.safe_load(route_files(arm, profile).files["config/bus/bus.yml"])
    devices = [v for k, v in bus.items() if k not in ("options", "master")]
    maxon, elmo = devices[0], devices[1]
    assert math.isclose(maxon["scale_vel_to_dev"], 964.49, rel_tol=1e-4)  # rev/min: 101 x 60 / 2 pi
    assert math.isclose(elmo["scale_vel_to_dev"], elmo["scale_pos_to_dev"])  # no 0x60A9: increments per second
    over = {**MIXED, "J1": {**MIXED["J1"], "scale_vel_to_dev": 1234.5}}
    profile = HardwareProfile.from_json_file(_profile(tmp_path, over))
    bus = yaml.safe_load(route_files(arm, profile).files["config/bus/bus.yml"])
    assert [v for k, v in bus.items() if k not in ("options", "master")][0]["scale_vel_to_dev"] == 1234.5


def test_encoder_counts_come_from_the_eds_or_must_be_given(arm, tmp_path):
    drives = {**MIXED, "J2": {k: v for k, v in MIXED["J2"].items() if k != "encoder_counts"}}
    profile = HardwareProfile.from_json_file(_profile(tmp_path, drives))
    from timor_core.hardware.bringup_routes import route_files

    with pytest.raises(InputError, match=r"elmo_gold.dcf gives none per motor revolution \(0x608F\)"):
        route_files(arm, profile)  # its 0x608F is the placeholder 1/1


def test_a_velocity_mode_gives_velocity_mode_the_target_velocity_pdo_and_velocity_commands(arm, tmp_path):
    mode = {"operation_mode": "cyclic_synchronous_velocity"}
    drives = {m: {**d, **mode} for m, d in MIXED.items() if m != "P1"}
    drives["P1"] = {**MIXED["J2"], "gear_ratio": 500, **mode}  # the Elmo drive on the linear axis too
    result = write_bringup(arm, tmp_path / "out", _profile(tmp_path, drives), name="vel", n_samples=5)
    bus = yaml.safe_load((result.folder / "config" / "bus" / "bus.yml").read_text())
    joints = _joints((result.folder / "urdf" / "vel.urdf").read_text())
    for joint in joints:
        dev = bus[joint.find("param[@name='device_name']").text]
        assert dev["velocity_mode"] == 9 and "position_mode" not in dev
        assert [c.get("name") for c in joint.findall("command_interface")] == ["velocity"]
        assert dev["rpdo"][2]["mapping"] == [{"index": 0x60FF, "sub_index": 0}]
    controllers = yaml.safe_load((result.folder / "config" / "ros2_controllers.yaml").read_text())
    assert controllers["/**/arm_controller"]["ros__parameters"]["command_interfaces"] == ["velocity"]


def test_modes_and_objects_the_drive_lacks_are_refused(arm, tmp_path):
    torque = {**MIXED, "P1": {**MIXED["P1"], "operation_mode": "cyclic_synchronous_torque"}}
    with pytest.raises(InputError, match=r"schunk_0_63.dcf: the drive does not support cyclic_synchronous_torque "
                       r"\(mode 10; its supported drive modes 0x6502 are 0x00000043\)"):  # fmt: skip
        write_bringup(arm, tmp_path / "out", _profile(tmp_path, torque), n_samples=5)
    mixed = {**MIXED, "J2": {**MIXED["J2"], "operation_mode": "cyclic_synchronous_velocity"}}
    with pytest.raises(InputError, match=r"different command interfaces .*J2: velocity"):
        write_bringup(arm, tmp_path / "out", _profile(tmp_path / "m", mixed), n_samples=5)
    assert not (tmp_path / "out").exists()


@needs_kit
def test_without_lely_core_libraries_the_package_builds_and_says_the_bus_cannot_start(tmp_path):
    """Where ros2_canopen is not installed (a workspace for the mock route, the launch tests of timor_ros)."""
    robco = ModulesDB.from_name("robco_like")
    arm = ModuleAssembly.from_serial_modules(robco, ["base", "J", "L_250", "J", "gripper"])
    result = write_bringup(arm, tmp_path / "src", "canopen", name="nolely", n_samples=5)
    run = subprocess.run(["bash", str(KIT / "build_package.sh"), str(VENV), str(result.folder), str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ,
                              "CMAKE_ARGS": "-DCMAKE_DISABLE_FIND_PACKAGE_lely_core_libraries=TRUE"})  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:]
    log = (tmp_path / "out" / "build.log").read_text()
    assert "lely_core_libraries (ros2_canopen) not found: no master.dcf" in log
    config = tmp_path / "out" / "install" / "share" / "nolely_bringup" / "config" / "bus"
    assert (config / "bus.yml").is_file() and not (config / "master.dcf").exists()


def test_discovery_of_the_three_vendor_drives_on_a_simulated_bus(tmp_path):
    """The simulator answers from the vendor files (with the profile's identity for the Schunk drive, which has
    none); discovery maps the identities back to J1, J2, P1 and writes their package."""
    pytest.importorskip("canopen")
    import uuid

    from timor_core.hardware.canopen_sim import sim_drives, simulated_bus
    from timor_core.hardware.discover import discover_canopen

    db = ModulesDB.from_name("geometric_primitive_modules")
    profile = HardwareProfile.from_json_file(_profile(tmp_path / "hw", MIXED))
    channel = f"vendor_{uuid.uuid4().hex[:8]}"
    with simulated_bus(channel, "virtual", sim_drives(profile, ["5:J1", "6:J2", "7:P1"])):
        assembly, nodes = discover_canopen(channel, "virtual", profile, db, expect=3)
    assert assembly.module_ids == ARM
    assert [(n.vendor_id, n.product_code) for n in nodes] == [(0xFB, 0x65520000), (0x9A, 0x30923), (0xD2, 0x63)]
    result = write_bringup(assembly, tmp_path / "src", profile, name="found", n_samples=5)
    assert (result.folder / "config" / "bus" / "bus.yml").is_file()


def test_a_drive_that_scales_positions_itself_needs_the_profiles_scale_factors(arm, tmp_path):
    """The Elmo file's factor group is 1/1 (accepted above); set to 10/1 the drive's units are no longer encoder
    increments at the motor, and timor asks for the scale factors instead of guessing."""
    folder = tmp_path / "hw"
    _profile(folder, MIXED)
    elmo = folder / "eds" / "elmo_gold.dcf"
    text = elmo.read_text(encoding="latin-1")
    start = text.index("[6091sub1]")
    end = text.index("[", start + 1)
    elmo.write_text(text[:start] + text[start:end].replace("DefaultValue=1", "DefaultValue=10") + text[end:],
                    encoding="latin-1")  # fmt: skip
    from timor_core.hardware.bringup_routes import route_files

    profile = HardwareProfile.from_json_file(folder / "profile.json")
    with pytest.raises(
        InputError, match=r"elmo_gold.dcf: the drive scales positions itself \(0x6091 gear ratio 10/1, 0x6092 feed "
    ):
        route_files(arm, profile)
    over = {**MIXED, "J2": {**MIXED["J2"], "scale_pos_to_dev": 1000, "scale_vel_to_dev": 1000}}
    (folder / "profile.json").write_text(json.dumps({"route": "canopen", "bus": {"first_node_id": 5}, "drives": over}))
    bus = yaml.safe_load(
        route_files(arm, HardwareProfile.from_json_file(folder / "profile.json")).files["config/bus/bus.yml"]
    )
    assert [v for k, v in bus.items() if k not in ("options", "master")][1]["scale_pos_to_dev"] == 1000
