"""Live reconfiguration reaches the real move_group: after ``set_assembly`` the moveit_supervisor restarts move_group
with the new robot's configuration (the real node reads its robot model once), and a MoveGroup goal for the new
robot's joints plans and executes on the new controllers; the TCP from TF equals timor's FK of the new robot.
A robot the assembly node refuses leaves MoveIt planning for the last good one. Skipped without the real nodes.
"""

from __future__ import annotations

import json
import os
import signal

import numpy as np
import pytest
from control_tools import JointStateCache, controller_states
from moveit_kit import ACTIVE, CHAIN, READY, move_group_launch, settled
from ros2_cli import TOKEN_VAR, Launch, marked_processes, real_package, require_ros2, wait_for_output
from ros_helpers import wait_for
from tf_tools import TfListener

from timor_core import ModuleAssembly, ModulesDB
from timor_interfaces.srv import SetAssembly

NEEDED = ("moveit_ros_move_group", "robot_state_publisher", "controller_manager", "joint_trajectory_controller")
pytestmark = pytest.mark.skipif(
    not all(real_package(p) for p in NEEDED),
    reason=f"not really installed: {[p for p in NEEDED if not real_package(p)]} (make ros, ../shared/ros-moveit)",
)
FOUR = ["base", "J", "L_200", "J", "L_250", "J", "L_250", "J", "gripper"]  # free of self-collision at home


def _status(ros_client, after: str = "") -> dict:
    text = ros_client.latest_description(timeout=1.0, after=after or None, topic="/moveit_supervisor/status")
    return json.loads(text) if text else {}


def _planning_for(ros_client, modules: list[str]) -> dict | None:
    status = _status(ros_client)
    return status if status.get("ok") and status.get("message") == f"planning for {' '.join(modules)}" else None


def _wait_planning_for(ros_client, modules: list[str], timeout: float) -> dict | None:
    """The supervisor's status once it says move_group plans for ``modules`` (None if not within ``timeout``)."""

    def planning(text: str) -> bool:
        try:
            status = json.loads(text)
        except ValueError:
            return False
        return bool(status.get("ok")) and status.get("message") == f"planning for {' '.join(modules)}"

    text = ros_client.wait_latched("/moveit_supervisor/status", planning, timeout)
    return json.loads(text) if text and planning(text) else None


def test_move_group_plans_for_the_new_robot_after_set_assembly(ros_client, tmp_path):
    from moveit_tools import SUCCESS, joint_goal, move

    db = ModulesDB.load("robco_like")
    with move_group_launch(ros_client, tmp_path, CHAIN) as launch:
        assert _wait_planning_for(ros_client, CHAIN, 60), launch.output()[-3000:]
        first = ModuleAssembly.from_serial_modules(db, CHAIN).robot
        got = move(ros_client, "/move_action", joint_goal(list(first.joints), [0.3, -0.3, 0.4]))
        assert got.accepted and got.error_code == SUCCESS, got

        answer = ros_client.call(SetAssembly, "/assembly/set_assembly", SetAssembly.Request(modules=FOUR), 60)
        assert answer.success, answer.message
        status = _wait_planning_for(ros_client, FOUR, 120)
        assert status, (_status(ros_client), launch.output()[-3000:])
        assert status["up"] > 0 and status["request"] >= status["up"]

        robot = ModuleAssembly.from_serial_modules(db, FOUR).robot
        joints = list(robot.joints)
        assert len(joints) == 4
        states = JointStateCache(ros_client.node, "/joint_states")
        tf = TfListener(ros_client.node)
        try:
            target = np.array([0.5, -0.4, 0.6, -0.7])
            got = move(ros_client, "/move_action", joint_goal(joints, target))
            assert got.accepted and got.error_code == SUCCESS, (got, launch.output()[-3000:])
            assert got.joint_names == joints
            q_end, why = settled(states, joints, got.points[-1], tf, ("base_link", "tool0"), robot.fk)
            assert q_end is not None, why
            assert _near(q_end, target), (q_end, target)  # move_group's goal: within its tolerance (1e-3 rad)

            # a robot the assembly node refuses (no movable joint): MoveIt keeps planning for the four joints
            refused = SetAssembly.Request(modules=["base", "gripper"])
            answer = ros_client.call(SetAssembly, "/assembly/set_assembly", refused, 60)
            assert not answer.success
            got = move(ros_client, "/move_action", joint_goal(joints, np.zeros(4)))
            assert got.accepted and got.error_code == SUCCESS, got
            assert _planning_for(ros_client, FOUR)
        finally:
            states.close()
            tf.close()


def _near(q, goal, tol: float = 2e-3) -> bool:
    return q is not None and float(np.max(np.abs(np.asarray(q) - goal))) < tol


def test_two_arms_on_one_base_are_two_planning_groups(ros_client, tmp_path):
    """A base with two arms (set_assembly with an assembly JSON): move_group restarts with one planning group per
    arm, and a goal for each group plans and executes through the one arm_controller (one arm's trajectory), the
    other arm staying where it is; each tool's TF equals timor's FK."""
    import sys
    from pathlib import Path

    from moveit_tools import SUCCESS, joint_goal, move

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "timor_core" / "tests"))
    from branched_set import branched_json
    from test_moveit_groups import two_arms

    db_path = tmp_path / "branched.json"
    db_path.write_text(json.dumps(branched_json()))
    db = ModulesDB.from_json_file(db_path)
    first = ["base", "J2", "i_45", "J1", "eef"]
    with move_group_launch(ros_client, tmp_path, first, db=str(db_path)) as launch:
        tree = two_arms(db)
        request = SetAssembly.Request(assembly_json=json.dumps(tree.to_json_data()))
        answer = ros_client.call(SetAssembly, "/assembly/set_assembly", request, 60)
        assert answer.success, answer.message
        names = " ".join(tree.to_json_data()["moduleOrder"])
        assert _wait_planning_for(ros_client, names.split(), 120), launch.output()[-3000:]
        robot = tree.robot
        joints = list(robot.joints)
        states = JointStateCache(ros_client.node, "/joint_states")
        tf = TfListener(ros_client.node)
        try:
            q = np.zeros(4)  # where the plans end: move_group samples each goal within its tolerance (1e-3 rad)
            for group, arm, target in (("manipulator_1", [0, 1], [0.6, -0.5]), ("manipulator_2", [2, 3], [0.4, -0.7])):
                got = move(ros_client, "/move_action", joint_goal([joints[k] for k in arm], target), group=group)
                assert got.accepted and got.error_code == SUCCESS, (group, got, launch.output()[-3000:])
                assert got.joint_names == [joints[k] for k in arm] and _near(got.points[-1], target), got
                q[arm] = got.points[-1]
                q_end, why = settled(
                    states, joints, q, tf, ("base_link", "tool0"), lambda v: robot.frame_pose("tool0", v)
                )
                assert q_end is not None, (group, why)
            # a goal of arm 2 where timor finds it hitting arm 1's gripper: move_group finds no valid goal state either
            clash = np.array([*q[:2], -0.4, 0.7])
            assert robot.has_self_collision(clash)
            got = move(ros_client, "/move_action", joint_goal(joints[2:], clash[2:]), group="manipulator_2",
                       planning_time=2.0)  # fmt: skip
            assert got.error_code != SUCCESS and _near(states.positions(joints), q)
            for tool in ("tool0", "tool1"):
                q_end, why = settled(
                    states, joints, q, tf, ("base_link", tool), lambda v, t=tool: robot.frame_pose(t, v)
                )
                assert q_end is not None, (tool, why)
        finally:
            states.close()
            tf.close()


def test_a_robot_the_real_move_group_refuses_brings_the_last_one_back(tmp_path):
    """The supervisor's refusal path against the real node: move_group cannot build a robot model from a robot
    description urdfdom cannot parse, and does not come up; the previous robot's move_group is started again."""
    import io

    from timor_core.export.formats.moveit_config import move_group_parameters, moveit_config_data
    from timor_core.ros.move_group_process import READY, MoveGroupError, MoveGroupSupervisor
    from timor_core.ros.robot_description import describe
    from timor_ros.moveit_supervisor import move_group_executable

    assembly = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), CHAIN)
    desc = describe(assembly, srdf_samples=50)
    good = move_group_parameters(moveit_config_data(assembly), desc.urdf, desc.srdf)
    broken = dict(good, robot_description='<robot name="broken"><joint name="j" type="revolute"/></robot>')
    out = io.StringIO()
    sup = MoveGroupSupervisor(move_group_executable(), "refusal", tmp_path, ready_timeout=60, echo=out)
    try:
        sup.start(good)
        first = sup.process.pid
        with pytest.raises(MoveGroupError, match="did not come up") as info:
            sup.start(broken)
        assert "Planning scene not configured" in info.value.tail or "Unable to parse URDF" in info.value.tail, info
        assert sup.process is not None and sup.process.pid != first and sup.process.proc.poll() is None
        assert out.getvalue().count(READY) == 2  # the first robot's move_group, then again after the refusal
    finally:
        sup.close()


SUPERVISED = ("moveit_supervisor", "move_group", "ros2_control_node", "lib/timor_ros/")


def test_a_killed_launch_leaves_no_timor_node_or_supervised_process_running(ros_client, tmp_path):
    """A launch ended by SIGKILL cannot stop its children: each timor node then sees its parent gone and shuts down
    as on SIGTERM, and with it the move_group and ros2_control_node it supervises (once, a supervisor of a killed
    launch ran on for ~21 min at ~50 % CPU, keeping both alive). Upstream nodes the launch started directly
    (robot_state_publisher) are orphaned as by any launch killed so, and are killed here by PID."""
    require_ros2()
    args = ["timor_ros", "moveit.launch.py", "db:=robco_like", f"modules:={' '.join(CHAIN)}", "rviz:=false",
            "search:=false", f"config_dir:={tmp_path / 'config'}"]  # fmt: skip
    launch = Launch(args, tmp_path / "launch.log")

    def ours() -> list[str]:
        return [cmd for _, cmd in marked_processes(TOKEN_VAR, launch.token) if any(s in cmd for s in SUPERVISED)]

    try:
        assert wait_for_output(launch, READY, 120), launch.output()[-4000:]
        assert wait_for(lambda: ACTIVE.items() <= controller_states(ros_client, "/controller_manager").items(), 120)
        running = ours()
        assert any("move_group" in c for c in running) and any("ros2_control_node" in c for c in running), running
        os.kill(launch.proc.pid, signal.SIGKILL)  # the launch alone, as a timeout or the OOM killer ends it
        launch.proc.wait()
        assert wait_for(lambda: not ours(), 30, 0.2), (ours(), launch.output()[-3000:])
    finally:
        launch.stop()
        launch.kill_leftovers()
