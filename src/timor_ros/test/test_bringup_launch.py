"""Generated bring-up packages (issue 16) built with colcon (ament_cmake from the PyPI wheels) and their launch files
started under the real `ros2 launch`, with placeholders for the C++ nodes (they only show that the launch files
start what they should with the right parameters; the drivers themselves are not here)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from ros2_cli import (
    ROS2,
    Launch,
    deaths,
    died,
    make_placeholders,
    real_package,
    require_ros2,
    ros2_until_ok,
    wait_for_output,
)

from timor_core import ModuleAssembly, ModulesDB
from timor_core.hardware.bringup import write_bringup

ARM = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
ROUTES = ("mock", "canopen", "ethercat", "gazebo")
EXTRA_PLACEHOLDERS = ("canopen_ros2_control/none", "ethercat_driver/none", "ros_gz_sim/create",
                      "ros_gz_bridge/parameter_bridge")  # fmt: skip

pytestmark = pytest.mark.usefixtures("ros2_daemon_stopped")  # nothing of the CLI left running


@pytest.fixture(scope="module")
def workspace(tmp_path_factory) -> Path:
    """One colcon workspace with a bring-up package per route, built; returns the install folder."""
    require_ros2()
    sourced = bool(os.environ.get("ROS_DISTRO")) and shutil.which("colcon") is not None  # a ROS 2 install
    colcon = Path(shutil.which("colcon") or "") if sourced else Path(sys.prefix) / "bin" / "colcon"
    if not colcon.is_file():
        pytest.skip("no colcon in this environment (make ros installs it)")
    root = tmp_path_factory.mktemp("bringup_ws")
    arm = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ARM)
    for route in ROUTES:
        write_bringup(arm, root / "src", route, name=f"arm_{route}", n_samples=20)
    write_bringup(arm, root / "src", "mock", name="arm_prefixed", prefix="p_", n_samples=20)
    if sourced:  # the install's own prefixes, as its setup.bash set them
        env = dict(os.environ)
    else:  # make ros: the venv is the ROS prefix
        venv = sys.prefix
        env = dict(os.environ, PATH=f"{venv}/bin:{os.environ['PATH']}", AMENT_PREFIX_PATH=venv, CMAKE_PREFIX_PATH=venv)
    build = subprocess.run(
        [str(colcon), "--log-base", str(root / "log"), "build", "--base-paths", str(root / "src"),
         "--build-base", str(root / "build"), "--install-base", str(root / "install"), "--cmake-args",
         f"-DPython3_EXECUTABLE={sys.executable}", "-DBUILD_TESTING=OFF"],
        cwd=root, env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    return root / "install"


@pytest.fixture(scope="module")
def prefixes(workspace, tmp_path_factory) -> list[Path]:
    """The placeholders and every built package, searched before the environment's prefixes."""
    placeholders = make_placeholders(tmp_path_factory.mktemp("placeholders"), EXTRA_PLACEHOLDERS)
    return [placeholders, *(p for p in sorted(workspace.iterdir()) if (p / "share").is_dir())]


@pytest.mark.parametrize(
    ("route", "launch_file", "args", "started"),
    [
        ("mock", "view.launch.py", ["rviz:=false"], ("robot_state_publisher", "joint_state_publisher")),
        ("mock", "control.launch.py", [], ("robot_state_publisher", "ros2_control_node", "spawner")),
        ("mock", "moveit.launch.py", [], ("move_group", "ros2_control_node", "spawner")),
        ("canopen", "control.launch.py", ["can_interface:=vcan0"], ("ros2_control_node", "spawner")),
        ("ethercat", "control.launch.py", [], ("ros2_control_node", "spawner")),
        ("gazebo", "sim.launch.py", ["gazebo:=false"], ("create", "parameter_bridge", "spawner")),
    ],
)
def test_generated_launch_files_start_under_ros2_launch(workspace, prefixes, tmp_path, route, launch_file, args,
                                                        started):  # fmt: skip
    launch = Launch([f"arm_{route}_bringup", launch_file, *args], tmp_path / "launch.log", prefixes)
    try:
        for executable in started:
            assert wait_for_output(launch, f"[{executable}-", 60), launch.output()[-3000:]
        assert "Caught exception" not in launch.output(), launch.output()[-3000:]
        if launch_file == "control.launch.py":  # the description robot_state_publisher got names the route
            plugin = {"mock": "mock_components/GenericSystem", "canopen": "canopen_ros2_control/RobotSystem",
                      "ethercat": "ethercat_driver/EthercatDriver"}[route]  # fmt: skip
            got = ros2_until_ok("param", "get", "/robot_state_publisher", "robot_description")
            assert plugin in got.stdout, got.stdout[-2000:]
            if route == "canopen":
                assert "vcan0" in got.stdout and "/config/bus/bus.yml" in got.stdout
    finally:
        launch.stop()
        assert not launch.kill_leftovers()


@pytest.mark.parametrize("arg", ["rviz:=maybe", "namespace:=1bad/../x"])
def test_a_bad_argument_starts_nothing(workspace, prefixes, tmp_path, arg):
    launch = Launch(["arm_mock_bringup", "view.launch.py", arg], tmp_path / "l.log", prefixes)
    assert launch.wait(120) != 0
    assert "nothing was started" in launch.output() and "process started" not in launch.output()
    assert arg.split(":=")[0] in launch.output()
    assert not launch.kill_leftovers()
    assert ROS2.exists()


@pytest.mark.skipif(
    not all(real_package(p) for p in ("robot_state_publisher", "controller_manager", "joint_trajectory_controller")),
    reason="the real robot_state_publisher / ros2_control are not installed (make ros, ../shared/ros-cpp)",
)
@pytest.mark.parametrize(("package", "ns", "prefix"), [("arm_mock", "", ""), ("arm_prefixed", "r6", "p_")])
def test_mock_route_runs_a_timor_plan_on_the_real_controllers(workspace, prefixes, tmp_path, ros_client, package,
                                                              ns, prefix):  # fmt: skip
    """The package's control.launch.py with the real nodes: both controllers active, a timor plan executed through
    arm_controller, /joint_states at the goal and TF's TCP at timor's FK of the goal; also for a package written
    with a name prefix and launched in a namespace."""
    from control_tools import JointStateCache, controller_states, follow
    from ros_helpers import wait_for
    from tf_tools import TfListener, pose_error

    from timor_core.kinematics.planning import plan

    args = [f"{package}_bringup", "control.launch.py"] + ([f"namespace:={ns}"] if ns else [])
    launch = Launch(args, tmp_path / "launch.log", prefixes)
    arm = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ARM)
    joints = [prefix + n for n in list(arm.robot.model.names)[1:]]
    root = "/" + ns if ns else ""
    states, tf = JointStateCache(ros_client.node, f"{root}/joint_states"), TfListener(ros_client.node)
    try:
        active = {"joint_state_broadcaster": "active", "arm_controller": "active"}
        manager = f"{root}/controller_manager"
        ok = wait_for(lambda: active.items() <= controller_states(ros_client, manager).items(), 120, 0.2)
        assert ok, launch.output()[-4000:]
        start = states.positions(joints)
        goal = np.array([-0.7, 0.5, -1.1])
        accepted, result = follow(ros_client, f"{root}/arm_controller/follow_joint_trajectory", joints,
                                  plan(arm.robot, start, goal, rng=2))  # fmt: skip
        assert accepted and result is not None and result.result.error_code == 0, launch.output()[-3000:]
        assert wait_for(lambda: float(np.max(np.abs(states.positions(joints) - goal))) < 1e-3, 10, 0.1)

        def tcp_error():
            pose = tf.lookup(prefix + "base_link", prefix + "tool0")
            return pose is not None and max(pose_error(pose, arm.robot.fk(goal))) < 1e-3

        assert wait_for(tcp_error, 20, 0.1), tf.lookup(prefix + "base_link", prefix + "tool0")
        assert "process has died" not in launch.output(), launch.output()[-3000:]
    finally:
        states.close()
        tf.close()
        launch.stop()
        assert not launch.kill_leftovers()


@pytest.mark.skipif(
    not all(real_package(p) for p in ("moveit_ros_move_group", "controller_manager", "joint_trajectory_controller")),
    reason="the real move_group / ros2_control are not installed (make ros, ../shared/ros-moveit, ../shared/ros-cpp)",
)
@pytest.mark.parametrize(("package", "ns", "prefix"), [("arm_mock", "", ""), ("arm_prefixed", "r7", "p_")])
def test_the_packages_moveit_launch_plans_and_executes_with_the_real_move_group(
    workspace, prefixes, tmp_path, ros_client, package, ns, prefix
):
    """The package's moveit.launch.py (its own control.launch.py included) with the real move_group: it loads the
    package's config, and a joint goal and a tool0 position goal sent as MoveGroup actions are planned and
    executed; /joint_states end at the goal."""
    from control_tools import JointStateCache, controller_states
    from moveit_kit import READY
    from moveit_tools import SUCCESS, joint_goal, move, pose_goal
    from ros_helpers import wait_for

    args = [f"{package}_bringup", "moveit.launch.py"] + ([f"namespace:={ns}"] if ns else [])
    launch = Launch(args, tmp_path / "launch.log", prefixes)
    robot = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ARM).robot
    joints = [prefix + n for n in robot.joints]
    root = "/" + ns if ns else ""
    states = JointStateCache(ros_client.node, f"{root}/joint_states")
    try:
        assert wait_for_output(launch, READY, 120), launch.output()[-4000:]
        active = {"joint_state_broadcaster": "active", "arm_controller": "active"}
        ok = wait_for(lambda: active.items() <= controller_states(ros_client, f"{root}/controller_manager").items(),
                      120, 0.2)  # fmt: skip
        assert ok, launch.output()[-4000:]
        goal = np.array([0.6, -0.4, 0.7])
        got = move(ros_client, f"{root}/move_action", joint_goal(joints, goal), frame=prefix + "base_link")
        assert got.accepted and got.error_code == SUCCESS, (got, launch.output()[-3000:])
        assert wait_for(lambda: float(np.max(np.abs(states.positions(joints) - goal))) < 2e-3, 15, 0.1)
        T = robot.fk(np.array([-0.5, 0.3, -0.8]))
        target = pose_goal(prefix + "tool0", prefix + "base_link", T, angle_tolerance=None)
        got = move(ros_client, f"{root}/move_action", target, frame=prefix + "base_link")
        assert got.accepted and got.error_code == SUCCESS, (got, launch.output()[-3000:])
        end = got.points[-1]
        assert wait_for(lambda: float(np.max(np.abs(states.positions(joints) - end))) < 2e-3, 15, 0.1)
        assert np.linalg.norm(robot.fk(states.positions(joints))[:3, 3] - T[:3, 3]) < 2e-3
        assert "[ERROR]" not in "\n".join(ln for ln in launch.output().splitlines() if "[move_group" in ln)
    finally:
        states.close()
        launch.stop()
        assert not launch.kill_leftovers()
    assert not died(launch.output()), deaths(launch.output(), 3000)
