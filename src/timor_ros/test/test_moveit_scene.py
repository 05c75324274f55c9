"""The task's world in the real move_group: ``moveit.launch.py task:=...`` starts timor's task_scene node, which puts
the task's obstacles (and its safety margin as link padding) into move_group's planning scene. A goal whose straight
joint-space path runs through an obstacle is planned around it by OMPL and executed on mock hardware; timor's own
collision checker finds every state of the executed motion (the /joint_states received during it) and of the
planned path free of collisions with the task's obstacles. Skipped where move_group is not really installed.
"""

from __future__ import annotations

import threading
from importlib import resources

import numpy as np
import pytest
from moveit_kit import CHAIN, move_group_launch
from ros2_cli import real_package
from ros_helpers import wait_for
from sensor_msgs.msg import JointState

from timor_core import ModuleAssembly, ModulesDB
from timor_core.export.formats.planning_scene import safety_margin
from timor_core.task.task import Task

NEEDED = ("moveit_ros_move_group", "robot_state_publisher", "controller_manager", "joint_trajectory_controller")
pytestmark = pytest.mark.skipif(
    not all(real_package(p) for p in NEEDED),
    reason=f"not really installed: {[p for p in NEEDED if not real_package(p)]} (make ros, ../shared/ros-moveit)",
)
TASK = resources.files("timor_core") / "data" / "tasks" / "pick_and_place.json"


class Recorder:
    """Every /joint_states message's positions of ``joints``, in order."""

    def __init__(self, node, joints: list[str]) -> None:
        self.node, self.joints = node, joints
        self.lock = threading.Lock()
        self.samples: list[np.ndarray] = []
        self.sub = node.create_subscription(JointState, "/joint_states", self._on, 100)

    def _on(self, msg: JointState) -> None:
        d = dict(zip(msg.name, msg.position))
        if all(j in d for j in self.joints):
            with self.lock:
                self.samples.append(np.array([d[j] for j in self.joints]))

    def take(self) -> np.ndarray:
        with self.lock:
            out, self.samples = np.array(self.samples), []
        return out

    def close(self) -> None:
        self.node.destroy_subscription(self.sub)


def _obstacle_hits(robot, task, q) -> list[str]:
    checker = robot.collision_checker(task, 0.0, self_collision=False)
    return [c.describe() for c in checker.collisions(np.asarray(q, dtype=float))]


def _blocked_pair(robot, task, margin: float, rng: np.random.Generator):
    """A start and a goal, both free (with the margin), whose straight joint-space path hits an obstacle."""
    for _ in range(5000):
        q0, q1 = robot.random_configuration(rng=rng), robot.random_configuration(rng=rng)
        if robot.has_collision(q0, task, margin) or robot.has_collision(q1, task, margin):
            continue
        if any(_obstacle_hits(robot, task, q0 + (q1 - q0) * s) for s in np.linspace(0, 1, 50)):
            return q0, q1
    raise AssertionError("no blocked start/goal pair found")


def test_a_goal_behind_an_obstacle_is_planned_around_it(ros_client, tmp_path):
    from moveit_tools import SUCCESS, densify, joint_goal, move, world_object_names

    task = Task.from_json_file(str(TASK))
    robot = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), CHAIN).robot
    joints = list(robot.joints)
    start, goal = _blocked_pair(robot, task, safety_margin(task), np.random.default_rng(3))
    with move_group_launch(ros_client, tmp_path, CHAIN, extra=(f"task:={TASK}",)) as launch:
        wanted = {o.id for o in task.obstacles}
        assert wait_for(lambda: wanted <= world_object_names(ros_client), 60, 0.5), launch.output()[-3000:]
        assert '"objects": ["crate", "pillar"]' in ros_client.latest_description(topic="/task_scene/applied")
        recorder = Recorder(ros_client.node, joints)
        try:
            for target in (start, goal):
                recorder.take()
                got = move(ros_client, "/move_action", joint_goal(joints, target))
                assert got.accepted and got.error_code == SUCCESS, (got, launch.output()[-3000:])
                assert wait_for(lambda t=target: _at(recorder, t), 15, 0.1), "did not end at the goal"
            executed = recorder.take()
        finally:
            recorder.close()
        path = densify(got.points, 0.005)
        assert np.allclose(path[0], start, atol=2e-3) and np.allclose(path[-1], goal, atol=2e-3)
        hits = [(k, h) for k, q in enumerate(path) if (h := _obstacle_hits(robot, task, q))]
        assert not hits, f"the planned path collides: {hits[:3]}"
        assert len(executed) > 10, "too few /joint_states during the motion"
        hits = [(k, h) for k, q in enumerate(executed) if (h := _obstacle_hits(robot, task, q))]
        assert not hits, f"the executed motion collides: {hits[:3]}"
        straight = [_obstacle_hits(robot, task, start + (goal - start) * s) for s in np.linspace(0, 1, 50)]
        assert any(straight), "the straight path must be blocked, or the test proves nothing"


def _at(recorder: Recorder, target: np.ndarray) -> bool:
    with recorder.lock:
        last = recorder.samples[-1] if recorder.samples else None
    return last is not None and float(np.max(np.abs(last - target))) < 2e-3
