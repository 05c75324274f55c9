"""moveit_kit.settled, the MoveIt tests' check that the robot came to rest where its plan ends and TF agrees, on
stand-ins for the joint states and TF (no ROS graph): it must accept a goal move_group sampled within its tolerance
and refuse a TF that disagrees, on events, without waiting out a guessed time."""

from __future__ import annotations

import time

import numpy as np
from moveit_kit import settled

from timor_core import ModuleAssembly, ModulesDB

FOUR = ["base", "J", "L_200", "J", "L_250", "J", "L_250", "J", "gripper"]


class _States:
    def __init__(self, joints: list[str], q) -> None:
        self.joints, self.q = joints, np.asarray(q, float)

    def positions(self, names: list[str], timeout: float = 20.0) -> np.ndarray:
        return np.array([self.q[self.joints.index(n)] for n in names])


class _Tf:
    """TF as robot_state_publisher publishes it: the tool's pose, always received "now"."""

    def __init__(self, pose: np.ndarray) -> None:
        self.pose, self.updates = pose, 0

    def wait_for(self, root: str, frames: list[str], timeout: float, newer_than: float = 0.0) -> dict:
        self.updates += 1
        return {frames[0]: self.pose} if time.monotonic() >= newer_than else {}


def test_a_joint_goal_sampled_within_its_tolerance_is_settled_where_the_plan_ends():
    """move_group ended a four-joint goal at target + up to its 1e-3 rad tolerance: TF there is 2.5e-3 rad off the
    FK of the requested target (the old check's 2e-3 failed it for good), and equal to the FK of where it is."""
    robot = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), FOUR).robot
    joints = list(robot.joints)
    target = np.array([0.5, -0.4, 0.6, -0.7])
    end = target + np.array([9e-4, 9e-4, -9e-4, -9e-4])  # the plan's last point, within the goal's tolerance
    a, b = robot.fk(end), robot.fk(target)
    assert np.arccos(np.clip((np.trace(a[:3, :3].T @ b[:3, :3]) - 1) / 2, -1, 1)) > 2e-3  # off the goal's FK
    q, why = settled(_States(joints, end), joints, end, _Tf(robot.fk(end)), ("base_link", "tool0"), robot.fk)
    assert q is not None and np.allclose(q, end), why


def test_a_tf_that_keeps_disagreeing_fails_after_that_many_fresh_updates_and_says_why():
    robot = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), FOUR).robot
    joints = list(robot.joints)
    q = np.array([0.5, -0.4, 0.6, -0.7])
    tf = _Tf(robot.fk(q + 0.01))  # e.g. a robot_state_publisher still holding another robot's description
    started = time.monotonic()
    got, why = settled(_States(joints, q), joints, q, tf, ("base_link", "tool0"), robot.fk, misses=20)
    assert got is None and tf.updates == 20, why
    assert "off the FK of the joints" in why and "20 fresh updates" in why, why
    assert time.monotonic() - started < 60  # ended by the count of updates, not by the 180 s cap
