"""MoveIt for real (../shared/ros-moveit, installed by `make ros`): moveit.launch.py starts MoveIt 2's real move_group
with timor's configuration and ros2_control on mock hardware; MoveGroup goals sent from rclpy are planned by OMPL
(the goal states of pose and position goals sampled by the KDL plugin with the generated kinematics.yaml) and
executed through arm_controller. /joint_states end at the goal and the TCP from the real robot_state_publisher's TF
equals timor's FK. move_group starts without an ERROR line and without a warning that matters (the two it prints
are listed in HARMLESS with why). Skipped where move_group is not really installed.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from control_tools import JointStateCache, controller_states, follow
from moveit_kit import ACTIVE, CHAIN, SIX, abs_name, move_group_launch, settled
from ros2_cli import real_package
from ros_helpers import wait_for
from tf_tools import TfListener

from timor_core import ModuleAssembly, ModulesDB
from timor_core.export.formats.srdf import planning_chain
from timor_core.kinematics.planning import plan

NEEDED = ("moveit_ros_move_group", "robot_state_publisher", "controller_manager", "joint_trajectory_controller")
pytestmark = pytest.mark.skipif(
    not all(real_package(p) for p in NEEDED),
    reason=f"not really installed: {[p for p in NEEDED if not real_package(p)]} (make ros, ../shared/ros-moveit)",
)

#: warnings of a healthy start that say nothing about timor's configuration
HARMLESS = (
    # KDL ignores the root link's inertia (the robot's base module has a mass: MoveIt never uses it)
    "KDL does not support a root link with an inertia",
    # move_group creates several rclcpp nodes named move_group in one process (upstream, any configuration)
    "Publisher already registered for node name",
    # the supervisor's readiness probes, sent before move_group's state monitor heard /joint_states, or before its
    # controller client connected to arm_controller (a probe that stays where the robot is; sent again)
    "Failed to fetch current robot state",
    "Action client not connected to action server",
    "Failed to send trajectory part",
    # move_group's answer to such a probe (the plan_kinematic_path service; the name is cut short in the line) whose
    # client it had not matched yet: the supervisor asks again after 2 s (make test-ros-load, load 1-15 + 2 burners)
    "failed to send response to",
)


def _bad_lines(log: str) -> list[str]:
    ours = ("[move_group", "[moveit_supervisor")  # move_group's output comes through the supervisor
    lines = [ln for ln in log.splitlines() if ln.startswith(ours) and re.search(r"\[(ERROR|FATAL|WARN)\]", ln)]
    return [ln for ln in lines if not any(h in ln for h in HARMLESS)]


@pytest.mark.parametrize("variant", [("", ""), ("m2", "m2_")], ids=["root", "namespace_and_prefix"])
def test_joint_and_position_goals_plan_and_execute(ros_client, tmp_path, variant):
    """3 joints: a joint-space goal, then a tool0 position goal (position-only KDL IK), both executed."""
    ns, prefix = variant
    from moveit_tools import SUCCESS, joint_goal, move, pose_goal

    robot = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), CHAIN).robot
    joints = [prefix + n for n in robot.joints]
    with move_group_launch(ros_client, tmp_path, CHAIN, ns=ns, prefix=prefix) as launch:
        assert not _bad_lines(launch.output()), _bad_lines(launch.output())
        config = (tmp_path / "config" / "kinematics.yaml").read_text()
        assert "position_only_ik: true" in config, config
        states = JointStateCache(ros_client.node, abs_name(ns, "joint_states"))
        tf = TfListener(ros_client.node)
        try:
            target = np.array([0.7, -0.5, 0.8])
            got = move(ros_client, abs_name(ns, "move_action"), joint_goal(joints, target), frame=prefix + "base_link")
            assert got.accepted and got.error_code == SUCCESS, (got, launch.output()[-3000:])
            frames = (prefix + "base_link", prefix + "tool0")
            q_end, why = settled(states, joints, got.points[-1], tf, frames, robot.fk)
            assert q_end is not None, why
            assert _near(q_end, target), (q_end, target)  # move_group's goal: within its tolerance (1e-3 rad)

            q_goal = np.array([-0.6, 0.4, -0.9])
            T = robot.fk(q_goal)
            goal = pose_goal(prefix + "tool0", prefix + "base_link", T, angle_tolerance=None)
            got = move(ros_client, abs_name(ns, "move_action"), goal, frame=prefix + "base_link")
            assert got.accepted and got.error_code == SUCCESS, (got, launch.output()[-3000:])
            q_end, why = settled(states, joints, got.points[-1], tf, frames, robot.fk)
            assert q_end is not None, why
            assert np.linalg.norm(robot.fk(q_end)[:3, 3] - T[:3, 3]) < 2e-3, (q_end, T)
        finally:
            states.close()
            tf.close()
        assert controller_states(ros_client, abs_name(ns, "controller_manager")).items() >= ACTIVE.items()


def test_a_six_joint_pose_goal_is_solved_in_full(ros_client, tmp_path):
    """6 joints: kinematics.yaml asks KDL for full poses; a pose goal (position and orientation) plans, executes,
    and the TCP from TF equals the goal pose."""
    from moveit_tools import START_STATE_IN_COLLISION, SUCCESS, move, pose_goal

    robot = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), SIX).robot
    joints = list(robot.joints)
    with move_group_launch(ros_client, tmp_path, SIX) as launch:
        # the supervisor's first plan (from home) is refused: this robot's home is in self-collision (asserted below)
        start = ("CheckStartStateCollision", "Start state appears to be in collision", "planning pipeline failed",
                 "START_STATE_IN_COLLISION", "m12_gripper_body", "Aborting planning pipeline")  # fmt: skip
        bad = [ln for ln in _bad_lines(launch.output()) if not any(s in ln for s in start)]
        assert not bad, bad
        assert "position_only_ik" not in (tmp_path / "config" / "kinematics.yaml").read_text()
        states = JointStateCache(ros_client.node, "/joint_states")
        tf = TfListener(ros_client.node)
        try:
            q_goal = np.array([0.5, -0.4, 0.9, 0.3, 0.6, -0.2])
            T = robot.fk(q_goal)
            # this robot's home (all zeros) is in self-collision for timor, and so for move_group (the SRDF keeps
            # every pair timor checks): it refuses to plan from there; the controller takes it out first
            assert robot.has_self_collision(np.zeros(6))
            got = move(ros_client, "/move_action", pose_goal("tool0", "base_link", T, 1e-3, 1e-2), planning_time=2.0)
            assert got.error_code == START_STATE_IN_COLLISION, got
            q_free = np.array([0.0, -0.5, 1.0, 0.0, 0.8, 0.0])
            assert not robot.has_self_collision(q_free)
            accepted, result = follow(ros_client, "/arm_controller/follow_joint_trajectory", joints,
                                      plan(robot, np.zeros(6), q_free, robot.within_limits, rng=0))  # fmt: skip
            assert accepted and result.result.error_code == 0, result
            assert wait_for(lambda: _near(states.positions(joints), q_free), 15, 0.1)
            got = move(ros_client, "/move_action", pose_goal("tool0", "base_link", T, 1e-3, 1e-2))
            assert got.accepted and got.error_code == SUCCESS, (got, launch.output()[-3000:])
            q_end, why = settled(states, joints, got.points[-1], tf, ("base_link", "tool0"), robot.fk)
            assert q_end is not None, why
            reached = robot.fk(q_end)
            assert np.linalg.norm(reached[:3, 3] - T[:3, 3]) < 2e-3
            angle = np.arccos(np.clip((np.trace(reached[:3, :3].T @ T[:3, :3]) - 1) / 2, -1, 1))
            assert angle < 2e-2, angle
        finally:
            states.close()
            tf.close()


def _near(q, goal, tol: float = 2e-3) -> bool:
    return q is not None and float(np.max(np.abs(np.asarray(q) - goal))) < tol


def _example_robot(name: str) -> Path:
    from importlib import metadata

    try:
        files = metadata.files("example-robot-data") or []
    except metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed")
    found = next((Path(f.locate()) for f in files if str(f).endswith(f"/{name}.urdf")), None)
    if found is None:
        pytest.skip(f"example-robot-data has no {name}.urdf")
    return found


def test_an_imported_urdf_robot_plans_and_executes_a_pose_goal(ros_client, tmp_path):
    """example-robot-data's UR5, imported with `timor import --keep-names`, launched with a prefix in a namespace:
    move_group loads timor's config of a robot nobody here wrote, and a full pose goal for its TCP plans and
    executes; the TCP from TF equals timor's FK."""
    from moveit_tools import SUCCESS, move, pose_goal

    urdf = _example_robot("ur5_robot")
    out = tmp_path / "ur5" / "modules.json"
    cli = [sys.executable, "-m", "timor_core.cli", "import", str(urdf), "-o", str(out), "--keep-names",
           "--package-dir", str(urdf.parents[4])]  # fmt: skip
    done = subprocess.run(cli, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    db = ModulesDB.from_json_file(out)
    ids = [m.id for m in db]
    assembly = ModuleAssembly.from_serial_modules(db, ids)
    robot = assembly.robot
    chain = planning_chain(assembly, "u_")
    joints = list(chain.commanded)
    with move_group_launch(ros_client, tmp_path, ids, ns="u", prefix="u_", db=str(out)) as launch:
        assert not _bad_lines(launch.output()), _bad_lines(launch.output())
        states = JointStateCache(ros_client.node, "/u/joint_states")
        tf = TfListener(ros_client.node)
        try:
            q_goal = np.array([0.4, -1.2, 1.3, -0.6, 1.1, 0.3])
            assert not robot.has_self_collision(q_goal)
            T = robot.fk(q_goal)  # the TCP in the robot's root frame (its base placement is the identity)
            got = move(ros_client, "/u/move_action", pose_goal(chain.tip_link, chain.base_link, T, 1e-3, 1e-2),
                       frame=chain.base_link)  # fmt: skip
            assert got.accepted and got.error_code == SUCCESS, (got, launch.output()[-3000:])
            q_end, why = settled(states, joints, got.points[-1], tf, (chain.base_link, chain.tip_link), robot.fk)
            assert q_end is not None, why
            assert np.linalg.norm(robot.fk(q_end)[:3, 3] - T[:3, 3]) < 2e-3
        finally:
            states.close()
            tf.close()
