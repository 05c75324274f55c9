"""ros2_control for real (../shared/ros-cpp, installed by `make ros`): moveit.launch.py (move_group:=false) starts the
real ros2_control_node with timor's URDF ``<ros2_control>`` block (mock_components/GenericSystem) and
ros2_controllers.yaml; the real spawners activate joint_state_broadcaster and arm_controller; a motion planned by
timor (``plan()``) runs through arm_controller's FollowJointTrajectory action, /joint_states ends at the goal and
the TCP from the real robot_state_publisher's TF equals timor's FK of the goal. In the root namespace and in one of
its own (several robots, one per namespace). Skipped where these packages are not really installed.
"""

from __future__ import annotations

import numpy as np
import pytest
from control_tools import JointStateCache, controller_states, follow
from ros2_cli import TOKEN_VAR, Launch, deaths, died, marked_processes, real_package, require_ros2
from ros_helpers import wait_for
from tf_tools import TfListener, pose_error

from timor_core import ModuleAssembly, ModulesDB
from timor_core.kinematics.planning import plan
from timor_ros.launching import installed_versions

NEEDED = ("robot_state_publisher", "controller_manager", "joint_trajectory_controller", "joint_state_broadcaster")
pytestmark = pytest.mark.skipif(
    not all(real_package(p) for p in NEEDED),
    reason=f"not really installed: {[p for p in NEEDED if not real_package(p)]} (make ros, ../shared/ros-cpp)",
)

CHAIN = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
ACTIVE = {"joint_state_broadcaster": "active", "arm_controller": "active"}


def _abs(ns: str, name: str) -> str:
    return f"/{ns}/{name}" if ns else f"/{name}"


@pytest.fixture
def control_launch(ros_client, tmp_path, request):
    """moveit.launch.py with ros2_control on mock hardware and no move_group, in namespace ``request.param``."""
    require_ros2()
    ns, prefix = request.param
    args = ["timor_ros", "moveit.launch.py", "db:=robco_like", f"modules:={' '.join(CHAIN)}", "move_group:=false",
            "rviz:=false", "search:=false", f"config_dir:={tmp_path / 'config'}"]  # fmt: skip
    args += [f"prefix:={prefix}"] if prefix else []
    args += [f"namespace:={ns}"] if ns else []
    launch = Launch(args, tmp_path / "launch.log")
    try:
        manager = _abs(ns, "controller_manager")
        states = wait_for(lambda: ACTIVE.items() <= controller_states(ros_client, manager).items(), 120, 0.2)
        assert states, f"controllers not active: {controller_states(ros_client, manager)}\n{launch.output()[-4000:]}"
        yield ns, prefix, launch
    finally:
        launch.stop()
        left = launch.kill_leftovers()
        assert not left, f"processes left behind: {left}"
    assert not died(launch.output()), deaths(launch.output())


@pytest.mark.parametrize("control_launch", [("", ""), ("r3", "r3_")], indirect=True, ids=["root", "namespaced"])
def test_a_timor_plan_runs_on_the_real_controllers(control_launch, ros_client):
    ns, prefix, launch = control_launch
    assembly = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), CHAIN)
    robot = assembly.robot
    joints = [prefix + n for n in list(robot.model.names)[1:]]
    states = JointStateCache(ros_client.node, _abs(ns, "joint_states"))
    tf = TfListener(ros_client.node)
    try:
        start = states.positions(joints)
        assert start is not None, "no /joint_states from joint_state_broadcaster"
        goal = np.array([0.8, -0.6, 0.9])
        trajectory = plan(robot, start, goal, rng=1)
        assert trajectory is not None
        accepted, result = follow(ros_client, _abs(ns, "arm_controller/follow_joint_trajectory"), joints, trajectory)
        assert accepted, launch.output()[-3000:]
        assert result is not None and result.result.error_code == 0, (result, launch.output()[-3000:])
        reached = wait_for(lambda: _near(states.positions(joints), goal), 10, 0.1)
        assert reached, f"/joint_states {states.positions(joints)} did not end at {goal}"
        found = tf.wait_for(prefix + "base_link", [prefix + "tool0"], 20)
        tcp = wait_for(lambda: _tcp_close(tf, prefix, robot.fk(goal)), 10, 0.1)
        assert prefix + "tool0" in found and tcp, f"TF tool0 {tf.lookup(prefix + 'base_link', prefix + 'tool0')}"
    finally:
        states.close()
        tf.close()


def _near(q, goal, tol: float = 1e-3) -> bool:
    return q is not None and float(np.max(np.abs(q - goal))) < tol


def _tcp_close(tf: TfListener, prefix: str, expected: np.ndarray) -> bool:
    pose = tf.lookup(prefix + "base_link", prefix + "tool0")
    if pose is None:
        return False
    dp, dr = pose_error(pose, expected)
    return dp < 1e-3 and dr < 1e-3


@pytest.mark.parametrize("distro", ["humble", "jazzy"])
def test_moveit_launch_wires_each_distro(ros_client, tmp_path, distro):
    """ros_distro picks the MoveIt layout (Humble's planning_plugin, Jazzy's list); the installed controller
    manager's version decides over the name how it is wired: 4.24 here reads robot_description itself, so it gets
    no remapping even with ros_distro:=humble (a Humble one, 2.x, would: test_ros_distro.py). The controllers come
    up either way."""
    import yaml

    require_ros2()
    config = tmp_path / "config"
    args = ["timor_ros", "moveit.launch.py", "db:=robco_like", f"modules:={' '.join(CHAIN)}", "move_group:=false",
            "rviz:=false", "search:=false", f"config_dir:={config}", f"ros_distro:={distro}"]  # fmt: skip
    launch = Launch(args, tmp_path / "launch.log")
    try:
        ok = wait_for(lambda: ACTIVE.items() <= controller_states(ros_client, "/controller_manager").items(), 120, 0.2)
        assert ok, launch.output()[-4000:]
        ompl = yaml.safe_load((config / "ompl_planning.yaml").read_text())
        assert ("planning_plugin" in ompl) == (distro == "humble") != ("planning_plugins" in ompl)
        managers = [c for _, c in marked_processes(TOKEN_VAR, launch.token) if "ros2_control_node" in c]
        assert managers, launch.output()[-3000:]
        installed = installed_versions(["controller_manager"])["controller_manager"]
        assert int(installed.split(".")[0]) >= 4, installed
        assert "~/robot_description" not in managers[0], managers
    finally:
        launch.stop()
        assert not launch.kill_leftovers()
