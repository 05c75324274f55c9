"""The filters run per pose goal once the robot is built (the last four of the default chain, see
``search.filtering.filters``): kinematic IK (``ik``), task-aware IK (``ik_task``), static torques (``torques``) and
the joint limits and ``validJointAngles`` constraints (``joint_limits``); each goal's configuration is kept in its
:class:`GoalIK` record for the next filter. Before an IK the ``ik`` and ``ik_task`` filters try a sweep proof
(``search.sweep_proof``) where the family says it may refuse the goal."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from timor_core.errors import InputError
from timor_core.search.filtering.arm_segments import kinematic_ik
from timor_core.search.filtering.filter_base import Filter
from timor_core.search.filtering.filter_state import Candidate, GoalIK, PoseGoal, reason_category
from timor_core.search.filtering.sweep_proof import collision_refusal, likely_refusal
from timor_core.task import ValidJointAngles

if TYPE_CHECKING:
    from timor_core.kinematics.robot import PinRobot

__all__ = ["GoalFilter", "IKFilter", "TaskIKFilter", "TorqueFilter", "JointLimitsFilter"]


class GoalFilter(Filter):
    """Runs ``check_goal`` per pose goal; stops at the first failure unless ``stop_early`` is off."""

    def __call__(self, c: Candidate) -> bool:
        ok = True
        for k, g in enumerate(c.ctx.goals):
            rec = c.goal(g.id)
            if not self.check_goal(c, k, g, rec):
                rec.success, rec.stage = False, self.name
                if ok:
                    c.fail(f"{g.id}: {reason_category(rec.reason)}", f"goal {g.id}: {rec.reason}")
                ok = False
                if c.ctx.config.stop_early:
                    return False
            else:
                rec.success, rec.stage = True, self.name
        return ok

    def check_goal(self, c: Candidate, k: int, g: PoseGoal, rec: GoalIK) -> bool:
        raise NotImplementedError


def _task_ik(c: Candidate, k: int, g: PoseGoal, q_init, stage: str, attempt: int = 0, torques: bool = False):
    cfg = c.ctx.config
    return c.require_robot().ik(
        g.pose,
        q_init=q_init,
        task=c.ctx.task,
        rng=c.rng(stage, k, attempt),
        margin=c.ctx.margin,
        check_static_torques=torques,
        max_n_tries=cfg.task_ik_tries,
        details=True,
    )


class IKFilter(GoalFilter):
    """Kinematic IK per pose goal (no obstacles, no self-collision): can the TCP get there at all?"""

    name = "ik"

    def check_goal(self, c: Candidate, k: int, g: PoseGoal, rec: GoalIK) -> bool:
        cfg = c.ctx.config
        if (proven := likely_refusal(c, k, g)) is not None:  # the ik_task filter's proof, where the family had it
            rec.reason = proven
            return False
        result = kinematic_ik(c, g.pose, c.rng(self.name, k))
        rec.q = [float(v) for v in result.q]
        rec.reason = result.reason
        if not result.success or not g.path:
            return bool(result.success)
        q = result.q  # a follow goal: a sample of its trajectory, each pose seeded with the previous solution
        n, m = len(g.path), cfg.follow_samples
        picks = sorted({round(i * (n - 1) / max(m - 1, 1)) for i in range(m)}) if m else []
        for i in picks:
            step = c.require_robot().ik(
                g.path[i], q_init=q, rng=c.rng(self.name, k, i + 1), ignore_self_collision=True,
                max_n_tries=cfg.ik_tries, max_iter=cfg.ik_iter, details=True,
            )  # fmt: skip
            if not step.success:
                rec.reason = f"pose {i + 1} of its trajectory: {step.reason}"
                return False
            q = step.q
        return True


class TaskIKFilter(GoalFilter):
    """Task-aware IK per goal (obstacles with the safety margin, self-collision), seeded with the ``ik`` result."""

    name = "ik_task"

    def check_goal(self, c: Candidate, k: int, g: PoseGoal, rec: GoalIK) -> bool:
        if (proven := collision_refusal(c, g, rec.q, k)) is not None:  # every configuration at it hits an obstacle
            rec.reason = proven
            return False
        result = _task_ik(c, k, g, np.asarray(rec.q), self.name)
        rec.q = [float(v) for v in result.q]
        rec.reason = result.reason
        return bool(result.success)


class TorqueFilter(GoalFilter):
    """Static torques at the goal configuration within the torque limits; else task-aware IK with the torque
    check (seeded with the current solution, then ``retries`` fresh starts)."""

    name = "torques"

    def __call__(self, c: Candidate) -> bool:
        if not c.ctx.config.torques:
            return True
        return super().__call__(c)

    def check_goal(self, c: Candidate, k: int, g: PoseGoal, rec: GoalIK) -> bool:
        robot = c.require_robot()
        limits = robot.torque_limits
        if _torques_ok(robot, _goal_q(rec), limits):
            return True
        q_init: np.ndarray | None = np.asarray(rec.q)
        for attempt in range(1 + c.ctx.config.retries):
            result = _task_ik(c, k, g, q_init, self.name, attempt, torques=True)
            if result.success:
                rec.q, rec.reason = [float(v) for v in result.q], ""
                return True
            rec.reason = result.reason
            q_init = None
        return False


def _goal_q(rec: GoalIK) -> list[float]:
    """The goal's configuration found by an earlier IK filter; InputError if none ran (chain misordered)."""
    if rec.q is None:
        raise InputError("no goal configuration yet: the 'ik' filter must come earlier in the chain")
    return rec.q


def _torques_ok(robot: PinRobot, q: Sequence[float], limits: np.ndarray) -> bool:
    tau = robot.static_torque(np.asarray(q, dtype=float))
    return bool(np.all(np.abs(tau) <= limits))


class JointLimitsFilter(GoalFilter):
    """Goal configurations within the joint position limits and every validJointAngles constraint (task or goal);
    else ``retries`` more task-aware IK runs from fresh random starts."""

    name = "joint_limits"

    def check_goal(self, c: Candidate, k: int, g: PoseGoal, rec: GoalIK) -> bool:
        constraints = (*c.ctx.angle_limits, *(x for x in g.constraints if isinstance(x, ValidJointAngles)))
        robot = c.require_robot()
        why = _angles_violation(robot, _goal_q(rec), constraints)
        if why is None:
            return True
        rec.reason = why
        if "wide for a" in why:  # no configuration of this robot can satisfy it
            return False
        limits = robot.torque_limits if c.ctx.config.torques else None
        for attempt in range(c.ctx.config.retries):
            result = _task_ik(c, k, g, None, self.name, attempt, torques=limits is not None)
            if result.success and _angles_violation(robot, result.q, constraints) is None:
                rec.q, rec.reason = [float(v) for v in result.q], ""
                return True
        return False


def _angles_violation(
    robot: PinRobot, q_in: Sequence[float] | np.ndarray, constraints: Iterable[ValidJointAngles]
) -> str | None:
    q = np.asarray(q_in, dtype=float)
    lo, hi = robot.joint_limits
    bad = np.flatnonzero((q < lo) | (q > hi))
    if bad.size:
        j = int(bad[0])
        return f"joint limits: joint {robot.joints[j]} at {q[j]:.4g} outside [{lo[j]:.4g}, {hi[j]:.4g}]"
    for con in constraints:
        lim = np.asarray(con.limits, dtype=float)
        if lim.shape != (2, robot.dof):
            return f"validJointAngles: limits are {lim.shape[-1]} wide for a {robot.dof}-DOF robot"
        if not con.valid(q):
            qm = np.mod(q + np.pi, 2 * np.pi) - np.pi if con.coterminal else q
            j = int(np.flatnonzero((qm < lim[0]) | (qm > lim[1]))[0])
            where = f"[{lim[0, j]:.4g}, {lim[1, j]:.4g}]"
            return f"validJointAngles: joint {robot.joints[j]} at {qm[j]:.4g} outside {where}"
    return None
