"""The MoveIt 2 config folder and the ROS export subcommands of the ``timor`` CLI."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pinocchio as pin
import pytest
from urdf_parser_py.urdf import URDF

from timor_core import ModuleAssembly
from timor_core.cli.app import main
from timor_core.errors import InputError, UnknownModuleError
from timor_core.export.formats.moveit_config import (
    MOVEIT_FILES,
    MoveItOptions,
    move_group_parameters,
    moveit_config_data,
    ros2_control_node_parameters,
    to_yaml,
    write_moveit_config,
)
from timor_core.export.formats.ros2_control import Ros2ControlConfig

yaml = pytest.importorskip("yaml")  # PyYAML is only used to read the files back

SET = "geometric_primitive_modules"
CHAIN = ("base", "J2", "i_45", "J2", "J2", "eef")


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_moveit_config_files_agree(primitives, tmp_path):
    A = ModuleAssembly.from_serial_modules(primitives, CHAIN)
    (tmp_path / "keep.txt").write_text("mine")
    config = Ros2ControlConfig(plugin="my_hw/System", initial_positions={"m1_J2_joint": 0.5})
    written = write_moveit_config(A, tmp_path, name="bot", prefix="p_", ros2_control=config, n_samples=100)
    assert set(written) == {"bot.urdf", "bot.srdf", *MOVEIT_FILES}
    assert (tmp_path / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*written, "keep.txt"])  # no temp files left
    urdf_text = written["bot.urdf"].read_text()
    urdf = URDF.from_xml_string(urdf_text)
    assert pin.buildModelFromXML(urdf_text).nq == 3
    joints = [j.name for j in urdf.joints if j.type != "fixed"]
    assert joints == ["p_m1_J2_joint", "p_m3_J2_joint", "p_m4_J2_joint"]
    control = ET.fromstring(urdf_text).find("ros2_control")
    assert control.find("hardware/plugin").text == "my_hw/System"
    srdf = ET.fromstring(written["bot.srdf"].read_text())
    assert srdf.get("name") == urdf.name == "bot"
    files = {name: yaml.safe_load(written[name].read_text()) for name in MOVEIT_FILES}
    kin = files["kinematics.yaml"]["manipulator"]
    assert kin["kinematics_solver"] == "kdl_kinematics_plugin/KDLKinematicsPlugin"
    assert isinstance(kin["kinematics_solver_timeout"], float)
    limits = files["joint_limits.yaml"]["joint_limits"]
    assert list(limits) == joints
    by_name = {j.name: j for j in urdf.joints}
    for name, entry in limits.items():
        assert entry["has_velocity_limits"] is True
        assert entry["max_velocity"] == pytest.approx(by_name[name].limit.velocity)
        assert entry["has_acceleration_limits"] is True and entry["max_acceleration"] == pytest.approx(8.0)
        assert all(isinstance(entry[k], float) for k in ("max_velocity", "max_acceleration"))
    cm = files["ros2_controllers.yaml"]["/**/controller_manager"]["ros__parameters"]
    assert cm["update_rate"] == 100
    assert cm["arm_controller"]["type"] == "joint_trajectory_controller/JointTrajectoryController"
    assert cm["joint_state_broadcaster"]["type"] == "joint_state_broadcaster/JointStateBroadcaster"
    arm = files["ros2_controllers.yaml"]["/**/arm_controller"]["ros__parameters"]
    assert arm["joints"] == joints
    assert arm["command_interfaces"] == ["position"] and arm["state_interfaces"] == ["position", "velocity"]
    mc = files["moveit_controllers.yaml"]
    assert mc["moveit_controller_manager"] == "moveit_simple_controller_manager/MoveItSimpleControllerManager"
    assert mc["moveit_simple_controller_manager"]["controller_names"] == ["arm_controller"]
    follow = mc["moveit_simple_controller_manager"]["arm_controller"]
    assert follow["type"] == "FollowJointTrajectory" and follow["joints"] == joints and follow["default"] is True
    assert files["initial_positions.yaml"]["initial_positions"] == {
        "p_m1_J2_joint": 0.5,
        "p_m3_J2_joint": 0.0,
        "p_m4_J2_joint": 0.0,
    }
    initial = control.find("joint[@name='p_m1_J2_joint']/state_interface[@name='position']/param").text
    assert float(initial) == 0.5
    assert set(files["pilz_cartesian_limits.yaml"]["cartesian_limits"]) == {
        "max_trans_vel",
        "max_trans_acc",
        "max_trans_dec",
        "max_rot_vel",
    }


def test_ompl_planning_and_move_group_parameters(primitives, tmp_path):
    A = ModuleAssembly.from_serial_modules(primitives, CHAIN)
    written = write_moveit_config(A, tmp_path, name="bot", prefix="p_", group="arm", n_samples=50)
    files = {name: yaml.safe_load(written[name].read_text()) for name in MOVEIT_FILES}
    data = moveit_config_data(A, name="bot", prefix="p_", group="arm", n_samples=50)
    assert data == files  # the written YAML is exactly the data
    ompl = files["ompl_planning.yaml"]
    assert ompl["planning_plugins"] == ["ompl_interface/OMPLPlanner"]  # Jazzy+: a list, not planning_plugin
    assert all(a.startswith("default_planning_request_adapters/") for a in ompl["request_adapters"])
    assert "default_planning_response_adapters/AddTimeOptimalParameterization" in ompl["response_adapters"]
    assert ompl["planner_configs"]["RRTConnectkConfigDefault"]["type"] == "geometric::RRTConnect"
    assert ompl["arm"]["default_planner_config"] == "RRTConnectkConfigDefault"
    assert set(ompl["arm"]["planner_configs"]) <= set(ompl["planner_configs"])

    urdf_text, srdf_text = written["bot.urdf"].read_text(), written["bot.srdf"].read_text()
    params = move_group_parameters(data, urdf_text, srdf_text)
    assert params["robot_description"] == urdf_text and params["robot_description_semantic"] == srdf_text
    assert params["robot_description_kinematics"]["arm"]["kinematics_solver"] == (
        "kdl_kinematics_plugin/KDLKinematicsPlugin"
    )
    planning = params["robot_description_planning"]
    joints = [j.name for j in URDF.from_xml_string(urdf_text).joints if j.type != "fixed"]
    assert list(planning["joint_limits"]) == joints
    assert set(planning["cartesian_limits"]) == {"max_trans_vel", "max_trans_acc", "max_trans_dec", "max_rot_vel"}
    assert planning["default_velocity_scaling_factor"] == pytest.approx(0.1)
    assert params["planning_pipelines"] == ["ompl"] and params["default_planning_pipeline"] == "ompl"
    assert params["ompl"]["planning_plugins"] == ["ompl_interface/OMPLPlanner"]
    assert params["ompl"]["arm"]["planner_configs"]
    arm = files["ros2_controllers.yaml"]["/**/arm_controller"]["ros__parameters"]
    simple = params["moveit_simple_controller_manager"]
    assert params["moveit_controller_manager"] == "moveit_simple_controller_manager/MoveItSimpleControllerManager"
    assert simple["controller_names"] == ["arm_controller"]
    assert simple["arm_controller"]["joints"] == arm["joints"] == joints
    assert simple["arm_controller"]["action_ns"] == "follow_joint_trajectory"
    assert params["trajectory_execution"]["allowed_start_tolerance"] > 0
    assert params["moveit_manage_controllers"] is True and params["allow_trajectory_execution"] is True
    assert params["publish_planning_scene"] is True
    # ros2_control's files are not move_group's business
    assert "controller_manager" not in params and "initial_positions" not in params and "arm_controller" not in params
    # no PyYAML needed: plain types only, and the input data is not shared
    params["robot_description_planning"]["joint_limits"].clear()
    assert data["joint_limits.yaml"]["joint_limits"]
    assert ros2_control_node_parameters(written) == [str(tmp_path / "ros2_controllers.yaml")]
    assert ros2_control_node_parameters(tmp_path) == ros2_control_node_parameters(tmp_path / "ros2_controllers.yaml")


def test_moveit_config_errors(primitives, tmp_path):
    A = ModuleAssembly.from_serial_modules(primitives, CHAIN)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(InputError, match="cannot write"):
        write_moveit_config(A, blocker, n_samples=5)
    with pytest.raises(InputError, match="cannot write"):
        write_moveit_config(A, blocker / "sub", n_samples=5)
    with pytest.raises(InputError, match="command interface"):
        write_moveit_config(A, tmp_path / "a", ros2_control=Ros2ControlConfig(command_interfaces=()), n_samples=5)
    with pytest.raises(InputError, match="update_rate"):
        write_moveit_config(A, tmp_path / "b", update_rate=0, n_samples=5)
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()  # nothing written on bad input


def test_yaml_writer_round_trips():
    data = {
        "a": {"b": [1, 2.0, 1e-05, -3.5e20, "yes", "no", "x/y_z", "with space", "", "1.5"]},
        "empty": {},
        "none": [],
        "flags": {"t": True, "f": False},
        "inf": float("inf"),
    }
    assert yaml.safe_load(to_yaml(data)) == data


def test_cli_moveit_config_xacro_srdf(capsys, tmp_path):
    out = tmp_path / "cfg"
    code, stdout, err = _run(
        capsys, "moveit-config", "--db", SET, "--modules", *CHAIN, "-o", str(out), "--prefix", "a_",
        "--plugin", "my_hw/System", "--samples", "50", "--seed", "2", "--name", "arm",
    )  # fmt: skip
    assert code == 0, err
    assert sorted(p.name for p in out.iterdir()) == sorted(["arm.urdf", "arm.srdf", *MOVEIT_FILES])
    assert len(stdout.splitlines()) == 2 + len(MOVEIT_FILES) == 9
    for name in MOVEIT_FILES:
        assert yaml.safe_load((out / name).read_text())
    assert ET.parse(out / "arm.urdf").getroot().find("ros2_control/hardware/plugin").text == "my_hw/System"
    code, stdout, err = _run(
        capsys, "srdf", "--db", SET, "--modules", *CHAIN, "--samples", "50", "--seed", "2", "--prefix", "a_",
        "--name", "arm",
    )  # fmt: skip
    assert code == 0 and stdout == (out / "arm.srdf").read_text()  # same seed, same SRDF
    target = tmp_path / "x" / "arm.xacro"
    code, _, err = _run(capsys, "xacro", "--db", SET, "--modules", *CHAIN, "-o", str(target), "--macro", "arm",
                        "--ros2-control")  # fmt: skip
    assert code == 0 and "wrote" in err
    root = ET.parse(target).getroot()
    assert root.find("{http://www.ros.org/wiki/xacro}macro").get("name") == "arm"
    code, stdout, _ = _run(capsys, "urdf", SET, *CHAIN, "--ros2-control")
    assert code == 0 and ET.fromstring(stdout).find("ros2_control/hardware/plugin").text.startswith("mock_components")
    code, stdout, _ = _run(capsys, "urdf", SET, *CHAIN)
    assert code == 0 and ET.fromstring(stdout).find("ros2_control") is None


def test_cli_errors_are_one_line(capsys, tmp_path):
    code, stdout, err = _run(capsys, "srdf", "--db", SET, "--modules", "base", "NOPE")
    assert code == 2 and stdout == "" and err.count("\n") == 1 and "NOPE" in err
    blocker = tmp_path / "f"
    blocker.write_text("")
    with pytest.raises(SystemExit) as info:  # refused by the option's type, before any work
        main(["moveit-config", "--db", SET, "--modules", *CHAIN, "-o", str(blocker), "--samples", "5"])
    err = capsys.readouterr().err
    assert info.value.code == 2 and err.splitlines()[-1].startswith("error: timor moveit-config: argument -o")
    code, _, err = _run(capsys, "srdf", "--db", SET, "--modules", "base", "l_30", "eef")
    assert code == 2 and "no movable joint" in err
    code, _, err = _run(capsys, "xacro", "--db", SET, "--modules", *CHAIN, "--macro", "9x")
    assert code == 2 and "macro name" in err
    with pytest.raises(SystemExit):
        main(["srdf", "--db", SET, "--modules", *CHAIN, "--samples", "0"])
    assert UnknownModuleError.__mro__[1].__name__ == "TimorError"


@pytest.mark.parametrize("distro", ["humble", "jazzy", "kilted", "rolling"])
def test_ompl_planning_in_the_layout_of_each_distro(primitives, distro):
    """Checked against each distro's own defaults: moveit2@humble and moveit2@jazzy
    moveit_configs_utils/default_configs/ompl_planning.yaml (Kilted and Rolling read Jazzy's layout)."""
    A = ModuleAssembly.from_serial_modules(primitives, CHAIN)
    ompl = moveit_config_data(A, group="arm", distro=distro)["ompl_planning.yaml"]
    if distro == "humble":  # planning_plugin: one name; request_adapters: one string, AddTimeOptimal... first
        assert ompl["planning_plugin"] == "ompl_interface/OMPLPlanner" and "planning_plugins" not in ompl
        adapters = ompl["request_adapters"].split()
        assert adapters[0] == "default_planner_request_adapters/AddTimeOptimalParameterization"
        assert all(a.startswith("default_planner_request_adapters/") for a in adapters) and len(adapters) == 6
        assert "response_adapters" not in ompl and ompl["start_state_max_bounds_error"] == 0.1
    else:
        assert ompl["planning_plugins"] == ["ompl_interface/OMPLPlanner"] and "planning_plugin" not in ompl
        assert ompl["request_adapters"][0] == "default_planning_request_adapters/ResolveConstraintFrames"
        assert ompl["response_adapters"][0] == "default_planning_response_adapters/AddTimeOptimalParameterization"
    assert ompl["arm"]["default_planner_config"] == "RRTConnectkConfigDefault"
    with pytest.raises(InputError, match="distro"):
        moveit_config_data(A, distro="noetic")


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("update_rate", 10**6),
        ("update_rate", True),
        ("kinematics_timeout", 1e9),
        ("kinematics_timeout", 0.0),
        ("kinematics_resolution", float("nan")),
        ("kinematics_resolution", 2.0),
    ],
)
def test_moveit_options_have_both_bounds(field, value):
    """Issue 26: update_rate and kinematics_timeout had only a lower bound."""
    with pytest.raises(InputError, match=field) as err:
        MoveItOptions(**{field: value})
    assert "must be" in str(err.value)


_RCL_READS = """
import sys, yaml, rclpy
from rclpy.node import Node
path = sys.argv[1]
rclpy.init(args=["--ros-args", "--params-file", path])
data = yaml.safe_load(open(path))
def flat(d, pre=""):
    for k, v in d.items():
        yield from flat(v, pre + k + ".") if isinstance(v, dict) else [(pre + k, v)]
for key in data:
    node = Node(key.rsplit("/", 1)[1], namespace="/robot1", automatically_declare_parameters_from_overrides=True)
    for name, value in flat(data[key]["ros__parameters"]):
        got = node.get_parameter(name).value
        assert (list(got) if not isinstance(got, (str, bool, int, float)) else got) == value, (name, got, value)
    node.destroy_node()
rclpy.shutdown()
print("rcl read", len(data), "nodes")
"""


def test_rcl_reads_the_controller_file_as_written(primitives, tmp_path):
    """ROS 2's own parameter parser (rcl_yaml_param_parser, through rclpy) reads ros2_controllers.yaml as PyYAML
    does: every value of both nodes, in a namespace (the "/**/" keys)."""
    pytest.importorskip("rclpy", reason="rclpy is not installed (make ros)")
    import subprocess
    import sys

    A = ModuleAssembly.from_serial_modules(primitives, CHAIN)
    written = write_moveit_config(A, tmp_path, prefix="p_", n_samples=5)
    done = subprocess.run([sys.executable, "-c", _RCL_READS, str(written["ros2_controllers.yaml"])],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "rcl read 2 nodes" in done.stdout
