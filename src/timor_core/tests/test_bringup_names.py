"""Names and robots nobody here chose, through ``timor bringup`` and ``timor moveit-config`` (session 57).

A module set is named after its folder or file: a set in ``2dof-kit/``, ``_arm/`` or ``ärm/`` gave a default robot
name that ``timor bringup`` (without ``--name``) then refused as no ROS package name. example-robot-data's Allegro
hand (fingers branching off the palm, joint names ``joint_0.0`` ...) stopped the MoveIt configuration with an
internal ZeroDivisionError: its planning group holds no joint."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import sys
from pathlib import Path

import pytest
from urdf_agreement import robots_share

from timor_core import ModuleAssembly, ModulesDB
from timor_core.cli.app import main
from timor_core.errors import AssemblyError
from timor_core.export.formats.moveit_config import moveit_config_data
from timor_core.export.formats.srdf import assembly_to_srdf
from timor_core.hardware.bringup import bringup_robot_name, write_bringup

yaml = pytest.importorskip("yaml")

ROBCO = ["base", "J", "L_250", "J", "gripper"]
PACKAGE = re.compile(r"[a-z][a-z0-9_]*_bringup")  # REP 144 as catkin_pkg/ament check it
SHARE = robots_share()
KIT = Path(__file__).resolve().parents[4] / "shared" / "ros2-canopen"
VENV = Path(sys.prefix)


@pytest.mark.parametrize("folder", ["2dof-kit", "_arm", "ärm"])
def test_a_set_whose_name_starts_no_package_name_is_brought_up_without_name(tmp_path, capsys, folder):
    shutil.copytree(ModulesDB.from_name("robco_like").base_dir, tmp_path / folder)
    code = main(["bringup", "--db", str(tmp_path / folder), "--modules", *ROBCO, "-o", str(tmp_path / "ws"),
                 "--samples", "3"])  # fmt: skip
    out, err = capsys.readouterr()
    assert code == 0, err
    (package,) = [p.name for p in (tmp_path / "ws").iterdir()]
    assert PACKAGE.fullmatch(package) and package.startswith("robot_") and "__" not in package, package
    robot = package.removesuffix("_bringup")
    assert (tmp_path / "ws" / package / "urdf" / f"{robot}.urdf").is_file() and package in out


@pytest.fixture(scope="module")
def robco() -> ModuleAssembly:
    return ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ROBCO)


def test_a_default_name_that_makes_a_package_is_kept(robco):
    assert re.fullmatch(r"robco_like_[0-9a-f]{8}", bringup_robot_name(robco))


REP144 = re.compile(r"[a-z](_?[a-z0-9]+)*_bringup")  # REP 144: '_' only as a separator (none leading, doubled)


@pytest.mark.parametrize("name", ["_arm", "ärm", "ÄRM", "123", "!!!", "日本", "-", "a-", "arm_", "a__b", "", "x" * 300])
def test_every_set_name_gives_a_rep_144_package_within_a_file_name(robco, name):
    """Umlauts, digits only, symbols only, nothing left once sanitised, doubled or trailing '_', 300 characters:
    the default package name is REP 144's (no ``robot__arm``, ``a__d5054dde``) and a short file name."""
    db = ModulesDB.from_json_data(robco.db.to_json_data(), base_dir=robco.db.base_dir, name=name)
    assert db.name == name
    robot = bringup_robot_name(ModuleAssembly.from_serial_modules(db, ROBCO))
    package = f"{robot.lower()}_bringup"
    assert REP144.fullmatch(package) and len(robot) <= 64, package
    assert bringup_robot_name(ModuleAssembly.from_serial_modules(db, ROBCO)) == robot


def test_a_robot_name_given_that_makes_no_package_is_refused_saying_why(tmp_path, capsys):
    code = main(["bringup", "--db", "robco_like", "--modules", *ROBCO, "--name", "2dof", "-o", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "a letter first" in err and "'2dof'" in err, err


@pytest.fixture(scope="module")
def allegro() -> ModuleAssembly:
    if SHARE is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    from timor_core.export.urdf_import.importer import assembly_from_urdf

    urdf = SHARE / "robots" / "allegro_hand_description" / "urdf" / "allegro_right_hand.urdf"
    return assembly_from_urdf(urdf, [SHARE.parent], keep_names=True)


def test_a_hand_without_arm_is_refused_by_the_moveit_config_naming_the_group(allegro, tmp_path, capsys):
    with pytest.raises(AssemblyError, match=r"'manipulator' \(palm_link -> tool0\) has no driven joint; its joints "
                       r"\['joint_0\.0', 'joint_1\.0', 'joint_2\.0'\]\.\.\. branch off the tool link"):  # fmt: skip
        moveit_config_data(allegro)
    assert '<joint name="joint_15.0"/>' in assembly_to_srdf(allegro, n_samples=3)  # the hand's own group stays
    allegro.db.to_json_file(tmp_path / "hand" / "modules.json")
    module = allegro.db.ids[0]
    code = main(["bringup", "--db", str(tmp_path / "hand"), "--modules", module, "-o", str(tmp_path / "ws")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "no driven joint" in err, err
    assert not (tmp_path / "ws").exists()


def test_a_urdf_written_elsewhere_names_its_installed_meshes_without_the_machines_folders(tmp_path):
    """example-robot-data's SO-100 URDF copied out of its package (as xacro writes a URDF into a workspace) names
    its meshes by package://: the set named them by their absolute path below its folder
    (``<set>/work/.../site-packages/.../so100/Base.stl``); now by their own folder (``so100/Base.stl``)."""
    if SHARE is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    from timor_core.export.urdf_import.importer import db_from_urdf

    urdf = tmp_path / "ws" / "so100.urdf"
    urdf.parent.mkdir()
    shutil.copy(SHARE / "robots" / "so_arm_description" / "urdf" / "so100.urdf", urdf)
    db = db_from_urdf(urdf, [SHARE.parent])
    files = {mesh.file for mesh in db.meshes()}
    assert files and all(re.fullmatch(r"so100/\w+\.stl", f) for f in files), sorted(files)[:3]
    saved = ModulesDB.from_json_file(db.to_json_file(tmp_path / "set" / "modules.json"))
    assert {m.file for m in saved.meshes()} == files and all(m.path.is_file() for m in saved.meshes())
    assembly = ModuleAssembly.from_serial_modules(saved, [saved.ids[0]])
    code = main(["bringup", "--db", str(tmp_path / "set"), "--modules", saved.ids[0], "-o", str(tmp_path / "out"),
                 "--samples", "3"])  # fmt: skip
    assert code == 0 and len(assembly.tree().actuated) == 6
    (urdf_out,) = (tmp_path / "out").glob("*/urdf/*.urdf")
    uris = re.findall(r'filename="([^"]+)"', urdf_out.read_text())
    assert uris and not any("site-packages" in u or str(tmp_path) in u for u in uris), uris[:2]


def test_a_urdf_in_its_package_naming_two_packages_meshes_keeps_its_mesh_names():
    """example-robot-data's anymal-kinova, in place, names meshes of two packages beside it: their common folder
    climbs above the URDF's parent but spells no machine folder; the names stay as before the change above
    (``anymal_b_simple_description/meshes/...``), not one folder longer (``robots/anymal_b_simple_description/...``)."""
    if SHARE is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    from timor_core.export.urdf_import.importer import db_from_urdf

    db = db_from_urdf(
        SHARE / "robots" / "anymal_b_simple_description" / "robots" / "anymal-kinova.urdf", [SHARE.parent]
    )
    files = {mesh.file for mesh in db.meshes()}
    assert {f.split("/")[0] for f in files} == {"anymal_b_simple_description", "kinova_description"}, sorted(files)[:3]


@pytest.mark.parametrize("robot", ["include", "if", "unless", "property", "macro", "arg", "call", "element"])
def test_a_robot_named_like_a_xacro_tag_expands_to_its_urdf(robco, robot):
    """The xacro macro is named after the robot, and ``<xacro:include prefix=...>`` called xacro's include ("missing
    attribute 'filename'"): the macro of such a robot is ``robot_<name>``; a macro name given so is refused."""
    xacro = pytest.importorskip("xacro", reason="needs the xacro package (test extra)")
    import xml.dom.minidom

    from timor_core.errors import InputError
    from timor_core.export.formats.urdf import assembly_to_urdf
    from timor_core.export.formats.xacro import assembly_to_xacro

    assembly = robco
    doc = xml.dom.minidom.parseString(assembly_to_xacro(assembly, name=robot))
    xacro.process_doc(doc)
    joints = [j.getAttribute("name") for j in doc.getElementsByTagName("joint") if j.parentNode.tagName == "robot"]
    assert joints[0] == "world_to_base_link"  # the call hangs the macro from a world link
    assert joints[1:] == re.findall(r'<joint name="([^"]+)"', assembly_to_urdf(assembly, name=robot))
    with pytest.raises(InputError, match="xacro's own tags"):
        assembly_to_xacro(assembly, name="arm", macro_name=robot)


_LONG = "a_joint_name_nobody_here_chose_" * 9


def _so100_long_joints(tmp_path, names: tuple[str, str] = (f"{_LONG}1", f"{_LONG}2")) -> tuple[ModuleAssembly, Path]:
    """example-robot-data's SO-100 with two joint names (by default of 300 characters that differ only at their end),
    and a CANopen profile for its module (the example set's CiA 402 drive)."""
    if SHARE is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    from timor_core.export.urdf_import.importer import db_from_urdf

    text = (SHARE / "robots" / "so_arm_description" / "urdf" / "so100.urdf").read_text()
    text = text.replace('joint name="shoulder_pan"', f'joint name="{names[0]}"')
    text = text.replace('joint name="shoulder_lift"', f'joint name="{names[1]}"')
    (tmp_path / "so100.urdf").write_text(text)
    db = db_from_urdf(tmp_path / "so100.urdf", [SHARE.parent], keep_names=True)
    (tmp_path / "hw").mkdir()
    shutil.copy(Path(ModulesDB.from_name("robco_like").base_dir) / "hardware" / "cia402_drive.eds", tmp_path / "hw")
    drive = {"eds": "cia402_drive.eds", "vendor_id": "0xF1E", "product_code": "0x402", "encoder_counts": 4096}
    profile = {"route": "canopen", "bus": {"first_node_id": 2}, "drives": {db.ids[0]: drive}}
    (tmp_path / "hw" / "profile.json").write_text(json.dumps(profile))
    return ModuleAssembly.from_serial_modules(db, [db.ids[0]]), tmp_path / "hw" / "profile.json"


def test_joint_names_too_long_for_a_file_name_give_short_distinct_bus_devices(tmp_path):
    """dcfgen writes each device's SDOs to ``<device>.bin``: a 300-character joint name made a file name the file
    system refuses (``File name too long``) when the package was built."""
    assembly, profile = _so100_long_joints(tmp_path)
    result = write_bringup(assembly, tmp_path / "src", profile, n_samples=3)
    bus = yaml.safe_load((result.folder / "config" / "bus" / "bus.yml").read_text())
    devices = [k for k in bus if k not in ("options", "master")]
    assert len(devices) == 6 == len(set(devices)) and max(len(d) for d in devices) <= 64, devices
    urdf = (result.folder / "urdf" / f"{result.package.removesuffix('_bringup')}.urdf").read_text()
    assert sorted(re.findall(r'<param name="device_name">([^<]+)</param>', urdf)) == sorted(devices)
    by_joint = _devices_by_joint(result)  # each long joint its own device, named by a hash of that joint's name
    for joint in (f"{_LONG}1", f"{_LONG}2"):
        assert by_joint[joint].endswith(hashlib.sha1(joint.encode()).hexdigest()[:8]), by_joint


def _devices_by_joint(result) -> dict[str, str]:
    """The URDF's ros2_control joints -> their ``device_name`` (what canopen_ros2_control's RobotSystem looks up in
    bus.yml), checked to be keys of bus.yml."""
    bus = yaml.safe_load((result.folder / "config" / "bus" / "bus.yml").read_text())
    urdf = (result.folder / "urdf" / f"{result.package.removesuffix('_bringup')}.urdf").read_text()
    control = urdf[urdf.index("<ros2_control") :]
    pairs = re.findall(r'<joint name="([^"]+)">.*?<param name="device_name">([^<]+)</param>', control, flags=re.S)
    assert pairs and all(device in bus for _, device in pairs), pairs
    return dict(pairs)


def test_two_64_character_joint_names_alike_once_sanitised_keep_devices_within_64(tmp_path):
    """``b...b-`` and ``b...b.`` both give the 64-character device ``b...b_``: the second one's ``_2`` is kept
    within the 64 characters (it made 66)."""
    names = ("b" * 63 + "-", "b" * 63 + ".")
    assembly, profile = _so100_long_joints(tmp_path, names)
    devices = _devices_by_joint(write_bringup(assembly, tmp_path / "src", profile, n_samples=3))
    assert devices[names[0]] == "b" * 63 + "_" and devices[names[1]] == "b" * 62 + "_2", devices
    assert max(len(d) for d in devices.values()) <= 64 and len(set(devices.values())) == len(devices)


@pytest.mark.slow
@pytest.mark.skipif(
    not (KIT / "build_package.sh").is_file()
    or not (VENV / "share/lely_core_libraries/cmake/lely_core_librariesConfig.cmake").is_file()
    or not (VENV / "share/ament_cmake/cmake/ament_cmakeConfig.cmake").is_file(),
    reason="needs ../shared/ros2-canopen with its install.sh (and ament_cmake) run on this venv",
)
def test_joint_names_too_long_for_a_file_name_build_with_generate_dcf(tmp_path):
    from kit_build import kit_build

    assembly, profile = _so100_long_joints(tmp_path)
    result = write_bringup(assembly, tmp_path / "src", profile, n_samples=3)
    config = kit_build(result.folder, tmp_path / "tree") / "share" / result.package / "config" / "bus"
    assert len(list(config.glob("*.bin"))) == 7  # six drives and the master


_PIPELINE_KEYS = [("planner_configs", "kilted"), ("request_adapters", "jazzy"), ("planning_plugin", "humble"),
                  ("start_state_max_bounds_error", "humble")]  # fmt: skip


@pytest.mark.parametrize(("group", "distro"), _PIPELINE_KEYS)
def test_a_group_named_like_an_ompl_pipeline_key_is_refused(robco, group, distro):
    """ompl_planning.yaml holds the pipeline's keys and each group's settings at one level: ``--group
    planner_configs`` replaced the planner configurations (RRTConnectkConfigDefault ...) by the group's."""
    from timor_core.errors import InputError
    from timor_core.export.formats.moveit_config import MoveItOptions

    with pytest.raises(InputError, match=rf"the planning group name '{group}' is a key of ompl_planning.yaml"):
        moveit_config_data(robco, MoveItOptions(group=group, distro=distro))
    ompl = moveit_config_data(robco, MoveItOptions(group="arm", distro=distro))["ompl_planning.yaml"]
    assert "RRTConnectkConfigDefault" in ompl["planner_configs"] and ompl["arm"]["planner_configs"]
