"""ros2_control for real (../shared/ros-cpp, installed by `make ros`) with a robot imported keeping its URDF names
(issue 37): the UR5 of timor_core's ``tests/data/urdf_names/ur5_names.urdf`` (example-robot-data, renamed to
ROS-Industrial and namespaced names, one joint ``arm/joint 6`` with a space; source and licence in the file),
imported without its meshes. The bring-up package's URDF (``<ros2_control>`` with mock_components/GenericSystem)
and ``config/ros2_controllers.yaml`` go to the real robot_state_publisher, ros2_control_node and spawners (as the
package's control.launch.py starts them; the package itself is not built here); joint_state_broadcaster and
arm_controller become active, a FollowJointTrajectory goal naming the joints as the URDF does runs, and
/joint_states carries the same names. Skipped where these packages are not really installed.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml
from control_tools import JointStateCache, controller_states, follow
from ros2_cli import Launch, deaths, died, real_package, require_ros2
from ros_helpers import wait_for

from timor_core import ModuleAssembly
from timor_core.export.urdf_import.importer import MeshesLeftOut, db_from_urdf
from timor_core.hardware.bringup import write_bringup
from timor_core.kinematics.planning import plan

NEEDED = ("robot_state_publisher", "controller_manager", "joint_trajectory_controller", "joint_state_broadcaster")
pytestmark = pytest.mark.skipif(
    not all(real_package(p) for p in NEEDED),
    reason=f"not really installed: {[p for p in NEEDED if not real_package(p)]} (make ros, ../shared/ros-cpp)",
)
FILE = Path(__file__).resolve().parents[2] / "timor_core" / "tests" / "data" / "urdf_names" / "ur5_names.urdf"
MOVABLE = ["joint_1", "joint_2", "joint_3", "joint_4", "joint_5", "arm/joint 6"]
ACTIVE = {"joint_state_broadcaster": "active", "arm_controller": "active"}


LAUNCH = """
from launch import LaunchDescription
from launch_ros.actions import Node


def generate_launch_description():
    with open({urdf!r}) as f:
        description = f.read()
    spawners = [Node(package="controller_manager", executable="spawner", output="screen",
                     arguments=[c, "--controller-manager", "/controller_manager"])
                for c in ("joint_state_broadcaster", "arm_controller")]
    return LaunchDescription([
        Node(package="robot_state_publisher", executable="robot_state_publisher", output="screen",
             parameters=[{{"robot_description": description}}]),
        Node(package="controller_manager", executable="ros2_control_node", output="screen",
             parameters=[{controllers!r}]),
        *spawners,
    ])
"""


def test_the_real_controllers_take_the_kept_names(ros_client, tmp_path):
    require_ros2()
    with pytest.warns(MeshesLeftOut):
        db = db_from_urdf(FILE, module_id="ur5", keep_names=True, missing_meshes="skip")
    assembly = ModuleAssembly.from_serial_modules(db, ["ur5"])
    robot = assembly.robot
    assert robot.joints == MOVABLE
    package = write_bringup(assembly, tmp_path, "mock", name="ur5", n_samples=5).folder
    controllers = package / "config" / "ros2_controllers.yaml"
    assert yaml.safe_load(controllers.read_text())["/**/arm_controller"]["ros__parameters"]["joints"] == MOVABLE
    launch_file = tmp_path / "control.launch.py"
    launch_file.write_text(LAUNCH.format(urdf=str(package / "urdf" / "ur5.urdf"), controllers=str(controllers)))
    launch = Launch([str(launch_file)], tmp_path / "launch.log")
    states = JointStateCache(ros_client.node, "/joint_states")
    try:
        manager = "/controller_manager"
        active = wait_for(lambda: ACTIVE.items() <= controller_states(ros_client, manager).items(), 90, 0.2)
        assert active, (
            f"controllers not active: {controller_states(ros_client, '/controller_manager')}\n"
            + (launch.output()[-4000:])
        )
        start = states.positions(MOVABLE)
        assert start is not None, f"no /joint_states with {MOVABLE}: {sorted(states.latest)}"
        goal = np.array([0.3, -0.5, 0.6, -0.4, 0.5, 0.7])
        trajectory = plan(robot, start, goal, rng=1)
        assert trajectory is not None
        accepted, result = follow(ros_client, "/arm_controller/follow_joint_trajectory", MOVABLE, trajectory)
        assert accepted, launch.output()[-3000:]
        assert result is not None and result.result.error_code == 0, (result, launch.output()[-3000:])
        reached = wait_for(lambda: _near(states.positions(MOVABLE), goal), 10, 0.1)
        assert reached, f"/joint_states {states.positions(MOVABLE)} did not end at {goal}"
    finally:
        states.close()
        launch.stop()
        left = launch.kill_leftovers()
        assert not left, f"processes left behind: {left}"
    assert not died(launch.output()), deaths(launch.output())


def _near(q, goal, tol: float = 1e-3) -> bool:
    return q is not None and float(np.max(np.abs(q - goal))) < tol
