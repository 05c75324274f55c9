"""Bring-up packages (issue 16): hardware profiles, the <ros2_control> block of every route, ros2_canopen's bus.yml
through lely's real dcfgen, xacro expansion, meshes; every URDF written here also passes check_urdf (conftest)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from conftest import IMPROV_FILE

from timor_core import ModuleAssembly, ModulesDB
from timor_core.cli.app import main
from timor_core.errors import InputError
from timor_core.hardware.bringup import write_bringup
from timor_core.hardware.profiles import HardwareProfile, joint_drives

ROBCO_ARM = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
DCFGEN = shutil.which("dcfgen") or str(Path(sys.executable).parent / "dcfgen")


@pytest.fixture(scope="module")
def arm(robco) -> ModuleAssembly:
    return ModuleAssembly.from_serial_modules(robco, ROBCO_ARM)


def _xacro(package: Path, config_dir: Path, **args: str) -> str:
    """The package's xacro expanded as its launch files do (written beside it, so check_urdf checks it too)."""
    xacro = pytest.importorskip("xacro")
    (urdf_xacro,) = (package / "urdf").glob("*.urdf.xacro")
    text = xacro.process_file(str(urdf_xacro), mappings={"config_dir": str(config_dir), **args}).toxml()
    (package / "urdf" / "expanded.urdf").write_text(text)
    return text


def _control(urdf: str) -> ET.Element:
    (block,) = ET.fromstring(urdf).findall("ros2_control")
    return block


def test_mock_package_layout(arm, tmp_path):
    result = write_bringup(arm, tmp_path, "mock", n_samples=30)
    pkg = result.folder
    assert pkg.name == result.package and result.package.endswith("_bringup")
    for rel in ("package.xml", "CMakeLists.txt", "srdf", "config/ros2_controllers.yaml", "config/kinematics.yaml",
                "config/joint_limits.yaml", "launch/view.launch.py", "launch/control.launch.py",
                "launch/moveit.launch.py"):  # fmt: skip
        assert (pkg / rel).exists(), rel
    assert not (pkg / "launch" / "sim.launch.py").exists()
    assert ET.parse(pkg / "package.xml").getroot().findtext("name") == result.package
    assert f"project({result.package} NONE)" in (pkg / "CMakeLists.txt").read_text()
    block = _control(_xacro(pkg, pkg / "config"))
    assert block.findtext("hardware/plugin") == "mock_components/GenericSystem"
    assert len(block.findall("joint")) == arm.robot.dof
    for launch in (pkg / "launch").glob("*.py"):
        compile(launch.read_text(), str(launch), "exec")  # valid Python


def test_canopen_package_bus_yml_is_accepted_by_dcfgen(arm, tmp_path):
    result = write_bringup(arm, tmp_path, "canopen", n_samples=30)
    bus = result.folder / "config" / "bus"
    assert (bus / "cia402_drive.eds").is_file()
    out = tmp_path / "dcf"
    out.mkdir()
    run = subprocess.run([DCFGEN, "-r", "-d", str(out), "bus.yml"], cwd=bus, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    master = (out / "master.dcf").read_text()
    slaves = master.split("[1F81Value]", 1)[1].split("\n\n", 1)[0]  # NMT slave assignment: nodes 2, 3, 4
    assert [line.split("=")[0] for line in slaves.strip().splitlines()[1:]] == ["2", "3", "4"]
    vendors = master.split("[1F85Value]", 1)[1].split("\n\n", 1)[0]  # expected vendor id of each slave
    assert vendors.count("=0x00000F1E") == 3
    text = (bus / "bus.yml").read_text()
    bus_data = yaml.safe_load(text)
    drives = [v for v in bus_data.values() if v.get("driver") == "ros2_canopen::Cia402Driver"]
    assert len(drives) == 3 and all(d["position_mode"] == 8 for d in drives)
    assert "scale_pos_to_dev: 65841.7" in text  # 4096 counts x 101 / 2 pi
    assert "#   sdo 0x6060 sub 0 = 8:" in text  # what each number means, as comments above the data
    block = _control(_xacro(result.folder, tmp_path / "cfg", can_interface="vcan0"))
    assert block.findtext("hardware/plugin") == "canopen_ros2_control/RobotSystem"
    params = {p.get("name"): p.text for p in block.findall("hardware/param")}
    assert params["bus_config"] == f"{tmp_path / 'cfg'}/bus/bus.yml" and params["can_interface_name"] == "vcan0"
    devices = [j.find("param[@name='device_name']").text for j in block.findall("joint")]
    assert devices == [j.get("name") for j in block.findall("joint")]  # the joint names are plain identifiers
    assert all(j.find("command_interface").get("name") == "position" for j in block.findall("joint"))
    (plain_file,) = [p for p in (result.folder / "urdf").glob("*.urdf") if p.name != "expanded.urdf"]
    plain = _control(plain_file.read_text())
    assert {p.get("name"): p.text for p in plain.findall("hardware/param")}["can_interface_name"] == "can0"


def test_dcfgen_refuses_a_broken_eds(arm, tmp_path):
    """The check is real: dcfgen refuses the bus when the drive's EDS lacks its mandatory objects."""
    result = write_bringup(arm, tmp_path, "canopen", n_samples=10)
    eds = result.folder / "config" / "bus" / "cia402_drive.eds"
    eds.write_text(eds.read_text().replace("[MandatoryObjects]", "[Broken]"))
    run = subprocess.run([DCFGEN, "-d", str(tmp_path), "bus.yml"], cwd=eds.parent, capture_output=True, text=True)
    assert run.returncode != 0


def test_ethercat_package(arm, tmp_path):
    result = write_bringup(arm, tmp_path, "ethercat", n_samples=10)
    block = _control(_xacro(result.folder, tmp_path / "cfg"))
    assert block.findtext("hardware/plugin") == "ethercat_driver/EthercatDriver"
    modules = [j.find("ec_module") for j in block.findall("joint")]
    assert all(m is not None and m.findtext("plugin") == "ethercat_generic_plugins/EcCiA402Drive" for m in modules)
    positions = [m.find("param[@name='position']").text for m in modules]
    assert positions == ["0", "1", "2"]
    assert all(m.find("param[@name='slave_config']").text.startswith(str(tmp_path / "cfg")) for m in modules)
    assert (result.folder / "config" / "ethercat" / "cia402_drive_ethercat.yaml").is_file()


def test_gazebo_package(arm, tmp_path):
    result = write_bringup(arm, tmp_path, "gazebo", n_samples=10)
    robot = ET.fromstring(_xacro(result.folder, tmp_path / "cfg"))
    assert robot.find("ros2_control/hardware/plugin").text == "gz_ros2_control/GazeboSimSystem"
    plugin = robot.find("gazebo/plugin")
    assert plugin.get("filename") == "gz_ros2_control-system"
    assert plugin.findtext("parameters") == f"{tmp_path / 'cfg'}/ros2_controllers.yaml"
    assert (result.folder / "launch" / "sim.launch.py").is_file()
    fixed = {j.find("child").get("link") for j in robot.iter("joint") if j.get("type") == "fixed"}
    for link in robot.iter("link"):  # a massless link only where sdformat lumps it into its parent: a tool frame
        mass = link.find("inertial/mass")
        assert (
            mass is None
            or float(mass.get("value")) > 0
            or (link.get("name") in fixed and not list(link.iter("geometry")))
        )


def test_vendor_plugin_profile_with_per_joint_parameters(arm, tmp_path):
    profile = tmp_path / "robco_hw.json"
    profile.write_text(json.dumps({
        "route": "plugin", "plugin": "vendor_driver/ArmSystem", "hardware_parameters": {"ip": "192.168.1.10"},
        "drives": {"J": {"parameters": {"gear": "101", "motor": "M3"}}},
    }))  # fmt: skip
    result = write_bringup(arm, tmp_path / "out", profile, n_samples=10)
    block = _control(_xacro(result.folder, tmp_path))
    assert block.findtext("hardware/plugin") == "vendor_driver/ArmSystem"
    assert block.find("hardware/param[@name='ip']").text == "192.168.1.10"
    for k, joint in enumerate(block.findall("joint")):
        params = {p.get("name"): p.text for p in joint.findall("param")}
        assert params == {"node_id": str(k), "gear": "101", "motor": "M3"}


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda d: d.update(route="profibus"), "route"),
        (lambda d: d["drives"]["J"].update(operation_mode="warp"), "operation_mode"),
        (lambda d: d["drives"]["J"].update(eds="nosuch.eds"), "eds"),
        (lambda d: d["drives"]["J"].update(product_code="0xZZ"), "product_code"),
        (lambda d: d["bus"].update(master_node_id=200), "master_node_id"),
        (lambda d: d["drives"].pop("J"), "'J' has no drive"),
        (lambda d: d["drives"]["J"].update(node_id=5), "occurs 3 times"),
    ],
)
def test_bad_profiles_are_refused_naming_field_and_value(robco, arm, tmp_path, edit, needle):
    data = json.loads((robco.base_dir / "hardware_canopen.json").read_text())
    shutil.copytree(robco.base_dir / "hardware", tmp_path / "hardware")
    edit(data)
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as err:
        joint_drives(arm, HardwareProfile.from_json_file(path))
    assert needle in str(err.value) and str(path) in str(err.value)


def test_cli_bringup(tmp_path, capsys):
    code = main(["bringup", "--db", "robco_like", "--modules", *ROBCO_ARM, "--hardware", "canopen",
                 "-o", str(tmp_path), "--samples", "10"])  # fmt: skip
    assert code == 0
    folder = Path(capsys.readouterr().out.strip())
    assert (folder / "config" / "bus" / "bus.yml").is_file()
    assert main(["bringup", "--db", "robco_like", "--modules", *ROBCO_ARM, "--hardware", "nonsense",
                 "-o", str(tmp_path)]) == 2  # fmt: skip
    assert "--hardware is mock, gazebo" in capsys.readouterr().err


def test_improv_six_axis_on_canopen_with_meshes(tmp_path):
    """IMPROV's joints as Schunk-type CiA 402 drives: a profile beside a copy of the set, meshes copied in."""
    if not IMPROV_FILE.is_file():
        pytest.skip(f"IMPROV not available (expected {IMPROV_FILE})")
    db = ModulesDB.from_json_file(IMPROV_FILE)
    eds = Path(ModulesDB.from_name("robco_like").base_dir) / "hardware" / "cia402_drive.eds"
    shutil.copy(eds, tmp_path / "drive.eds")
    drive = {"eds": "drive.eds", "encoder_counts": 4096, "gear_ratio": 161, "product_code": "0x402"}
    profile = tmp_path / "improv_canopen.json"
    profile.write_text(json.dumps({"route": "canopen", "drives": {m: drive for m in ("21", "22", "23", "29")}}))
    assembly = ModuleAssembly.from_serial_modules(db, ["1", "21", "4", "21", "5", "23", "7", "12"])
    result = write_bringup(assembly, tmp_path / "out", profile, n_samples=20)
    urdf = next((result.folder / "urdf").glob("*.urdf")).read_text()
    uris = [m.get("filename") for m in ET.fromstring(urdf).iter("mesh")]
    assert uris and all(u.startswith(f"package://{result.package}/meshes/") for u in uris)
    for uri in uris:
        assert (result.folder / "meshes" / uri.split("/meshes/", 1)[1]).is_file()
    joints = _control(urdf).findall("joint")
    assert len(joints) == assembly.robot.dof == 6
    bus = (result.folder / "config" / "bus" / "bus.yml").read_text()
    assert [f"node_id: {k}" in bus for k in range(2, 8)] == [True] * 6
    assert all(j.find("param[@name='device_name']") is not None for j in joints)


def test_gazebo_refuses_what_gazebo_cannot_simulate_and_welds_the_robot(tmp_path):
    """IMPROV's module 7 has an inertia no rigid body has: refused, naming it; without it the robot is welded to
    Gazebo's world, and massless bodies welded to a body with mass (module 21's) are accepted."""
    if not IMPROV_FILE.is_file():
        pytest.skip(f"IMPROV not available (expected {IMPROV_FILE})")
    db = ModulesDB.from_json_file(IMPROV_FILE)
    with pytest.raises(InputError, match=r"module '7' body '7': Gazebo needs a physical inertia"):
        write_bringup(ModuleAssembly.from_serial_modules(db, ["1", "21", "4", "21", "5", "23", "7", "12"]),
                      tmp_path, "gazebo", n_samples=10)  # fmt: skip
    assert not list(tmp_path.iterdir())  # nothing written
    result = write_bringup(ModuleAssembly.from_serial_modules(db, ["1", "21", "4", "21", "5", "23", "12"]),
                           tmp_path, "gazebo", n_samples=10)  # fmt: skip
    robot = ET.fromstring(_xacro(result.folder, tmp_path / "cfg"))
    weld = robot.find("joint[@name='world_to_base_link']")
    assert weld is not None and weld.get("type") == "fixed" and weld.find("parent").get("link") == "world"


def test_every_embedded_profile_makes_a_package_dcfgen_accepts(tmp_path):
    """The example profiles the embedded sets ship (a prismatic joint counts per metre: P1's 1000 counts x 500
    motor turns per metre)."""
    db = ModulesDB.from_name("geometric_primitive_modules")
    arm = ModuleAssembly.from_serial_modules(db, ["base", "J1", "J2", "P1", "eef"])
    result = write_bringup(arm, tmp_path, "canopen", n_samples=10)
    bus = result.folder / "config" / "bus"
    run = subprocess.run([DCFGEN, "-r", "-d", str(tmp_path), "bus.yml"], cwd=bus, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    text = (bus / "bus.yml").read_text()
    assert "node_id: 10" in text and "node_id: 12" in text and "position_mode: 1" in text
    assert "scale_pos_to_dev: 500000" in text and "scale_pos_to_dev: 16297.4" in text  # 2048 x 50 / 2 pi
