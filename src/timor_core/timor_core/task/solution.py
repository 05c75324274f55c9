"""Solutions of tasks: an assembly, its base placement and a joint trajectory — checked against the task.

A :class:`Solution` answers whether each goal is achieved (and when), whether every task constraint holds over
the whole trajectory, and — in :meth:`Solution.report` — which constraint failed, at which time and why. It reads
and writes the CoBRA solution JSON layout::

    {"cost": ..., "costFunction": "mass_0.5,cyc", "taskID": ..., "version": ..., "author": [...], ...,
     "moduleSet": ..., "moduleOrder": [...], "moduleConnection": [...], "baseConnection": [...],
     "basePose": [4x4], "trajectory": {"t": [...], "q": [[...]], "dq": ..., "ddq": ..., "goal2time": {...}}}

Semantics (as in the reference toolbox, timor-python 1.1.1, unless noted):

* **Goal times.** With ``goal_times`` (CoBRA ``goal2time``) every goal is evaluated at its time, which must be a
  sample time of the trajectory (within 1e-6 s); a goal without a time is not achieved. Without goal times (a
  timor extension) each goal is searched: its time is the first sample at which it is achieved.
* ``at``: the TCP pose lies within the goal's tolerance; ``reach``: also every joint velocity ``|dq| <= 1e-3``
  (the reference bounds the TCP twist instead); ``pause``: during the ``duration`` seconds up to the goal time
  every ``|dq| <= 1e-3`` and q stays within 1e-4 (per joint) of its value at the window's start (the reference
  demands exact zeros); ``returnTo``: q at the goal time lies within ``epsilon`` (L2, default 1e-4) of q at the
  referenced goal's time (the start if none), no earlier than that time (the reference also compares dq and
  ddq); ``follow``: the i-th pose of the goal's trajectory is met at ``t_goal - (n - 1 - i) * timeStepSize``.
  Goal-level constraints must hold at the goal's time (over the whole window for pause and follow).
* **Constraints.** ``joint``: for the listed parts, q within the position limits, ``|dq|``, ``|ddq|``, ``|tau|``
  within the velocity, acceleration and torque limits (``tau = robot.id(q, dq, ddq)`` with rotor inertia and
  friction, in the task's gravity; limits get a relative slack of 1e-9 for rounding); ``selfCollisionFree``;
  ``collisionFree``: no obstacle closer than the safety margin, and no self-collision (as the reference);
  ``allGoalsFulfilled``; ``allGoalsFulfilledInOrder``: the listed goals are achieved at non-decreasing times in
  that order; ``basePlacement``: the base placement within the tolerated pose; ``validJointAngles``. Collision
  constraints are checked at the samples of the trajectory. Other constraint types are reported as not checked.
* :attr:`Solution.valid` is True when every *task-level* constraint holds (as in the reference: goals count only
  through ``allGoalsFulfilled``); :attr:`Solution.all_goals_achieved` says whether every goal is achieved.
"""

from __future__ import annotations

import copy
import datetime
import math
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.common.fileio import write_json
from timor_core.errors import FormatError, InputError, TimorError, ValidationError
from timor_core.kinematics.trajectory import Trajectory
from timor_core.task import (
    AllGoalsFulfilled,
    At,
    BasePlacement,
    CollisionFree,
    EndEffector,
    Follow,
    GoalOrder,
    JointLimits,
    Pause,
    Reach,
    ReturnTo,
    SelfCollisionFree,
    Task,
    ValidJointAngles,
)
from timor_core.task.costs import CostFunction, parse_cost

if TYPE_CHECKING:
    from timor_core.kinematics.robot import PinRobot
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.model.db import ModulesDB
    from timor_core.task import Constraint, Goal

__all__ = [
    "Solution",
    "SolveError",
    "VELOCITY_EPS",
    "HOLD_EPS",
    "RETURN_EPS",
    "TIME_EPS",
    "LIMIT_SLACK",
]

#: A joint counts as standing still when ``|dq| <=`` this (rad/s or m/s).
VELOCITY_EPS = 1e-3
#: During a pause, q may drift this far (per joint) from its value at the pause's start.
HOLD_EPS = 1e-4
#: Default L2 distance within which a returnTo goal's configuration must match the referenced one.
RETURN_EPS = 1e-4
#: Two times closer than this (s) are the same sample.
TIME_EPS = 1e-6
#: Relative slack on velocity, acceleration and torque limits (absorbs rounding in time parametrization).
LIMIT_SLACK = 1e-9

_HEADER_DEFAULTS: dict[str, Any] = {
    "version": "2023",
    "author": [],
    "email": [],
    "affiliation": [],
    "publication": "",
    "date": None,  # today
    "computationTime": -1.0,
    "processorName": "",
    "notes": "",
    "tags": [],
}
_LAYOUT_KEYS = (
    "cost",
    "costFunction",
    "moduleSet",
    "moduleOrder",
    "moduleConnection",
    "baseConnection",
    "basePose",
    "jointOrder",
)


class SolveError(TimorError):
    """A solution could not be built (a goal is unreachable, no collision-free path, unsupported goal type)."""


def _fmt_time(t: float) -> str:
    return f"{t:.6g}"


class Solution:
    """An assembly, placed in the world, following a joint trajectory to solve a task.

    ``base_placement`` defaults to the assembly's; ``goal_times`` maps goal IDs to times (CoBRA ``goal2time``;
    omit it to let every goal be searched); ``cost_function`` is a :class:`~timor_core.task.costs.CostFunction` or a
    descriptor string; ``header`` holds the CoBRA solution header fields (``taskID`` defaults to the task's ID).
    """

    def __init__(
        self,
        task: Task,
        assembly: ModuleAssembly,
        trajectory: Trajectory,
        base_placement: np.ndarray | None = None,
        goal_times: Mapping[str, float] | None = None,
        cost_function: CostFunction | str | None = None,
        header: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(task, Task):
            raise InputError("a solution needs a Task", value=task)
        if not isinstance(trajectory, Trajectory):
            raise InputError("a solution needs a Trajectory", value=trajectory)
        self.task = task
        self.assembly = assembly
        self._robot: PinRobot = assembly.to_pin_robot(base_placement)
        self._robot.model.gravity.linear = np.asarray(task.header.gravity, dtype=float)
        if trajectory.dof != self._robot.dof:
            raise InputError(
                f"the trajectory has {trajectory.dof} joints, the robot has {self._robot.dof}", value=trajectory
            )
        self.trajectory = trajectory
        self.goal_times = self._check_goal_times(goal_times)
        self.cost_function = parse_cost(cost_function)
        self.header = _header(header, task)
        self.stated_cost: float | None = None  # the cost written in the file this solution was read from
        self.extra: dict[str, Any] = {}  # unknown top-level JSON fields, written back unchanged
        self._tcp: np.ndarray | None = None
        self._torques: dict[tuple[bool, bool], np.ndarray] = {}
        self._goal_results: dict[str, tuple[int | None, str]] = {}
        self._in_progress: set[str] = set()
        self._constraint_results: list[dict] | None = None

    def _check_goal_times(self, goal_times: Mapping[str, float] | None) -> dict[str, float] | None:
        if not goal_times:
            return None
        known = {g.id for g in self.task.goals}
        out: dict[str, float] = {}
        for gid, t in goal_times.items():
            gid = str(gid)
            if gid not in known:
                raise ValidationError(
                    "goal time for a goal the task does not have", path=f"$.goal2time.{gid}", value=gid
                )
            if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not math.isfinite(t):
                raise FormatError("a goal time must be a finite number", path=f"$.goal2time.{gid}", value=t)
            if t < -TIME_EPS or t > self.trajectory.duration + TIME_EPS:
                raise ValidationError(
                    f"goal time outside the trajectory [0, {self.trajectory.duration:g}] s",
                    path=f"$.goal2time.{gid}",
                    value=float(t),
                )
            out[gid] = float(t)
        return out

    # -- plain properties --------------------------------------------------------------------------
    @property
    def robot(self) -> PinRobot:
        """The robot at its base placement, in the task's gravity (built once)."""
        return self._robot

    @property
    def base_placement(self) -> np.ndarray:
        """The pose of the robot's base in the world."""
        return self._robot.placement

    @property
    def cost(self) -> float:
        """The cost function evaluated on this solution."""
        return self.cost_function.evaluate(self)

    @property
    def tcp_poses(self) -> np.ndarray:
        """(N, 4, 4) TCP poses at the trajectory's samples (cached)."""
        if self._tcp is None:
            self._tcp = np.array([self._robot.fk(q) for q in self.trajectory.q]).reshape(-1, 4, 4)
        return self._tcp

    def torques(self, motor_inertia: bool = True, friction: bool = True) -> np.ndarray:
        """(N, dof) joint torques along the trajectory (inverse dynamics, in the task's gravity; cached)."""
        key = (bool(motor_inertia), bool(friction))
        if key not in self._torques:
            tr = self.trajectory
            self._torques[key] = np.array(
                [
                    self._robot.id(q, dq, ddq, motor_inertia=motor_inertia, friction=friction)
                    for q, dq, ddq in zip(tr.q, tr.dq, tr.ddq)
                ]
            ).reshape(len(tr), tr.dof)
        return self._torques[key]

    @property
    def tau(self) -> np.ndarray:
        """Joint torques with rotor inertia and friction (what the joint-limit constraint checks)."""
        return self.torques()

    def visualize(self, **kwargs):
        """Play the solution in the browser viewer (needs the ``viz`` extra); returns the Viewer."""
        from timor_core.common.extensions import implementation

        return implementation("show_solution")(self, **kwargs)

    def __repr__(self) -> str:
        return f"Solution(task={self.task.id!r}, assembly={self.assembly.module_ids!r}, {self.trajectory!r})"

    # -- time lookup -------------------------------------------------------------------------------
    def _index_of(self, t: float) -> int | None:
        times = self.trajectory.t
        i = int(np.searchsorted(times, t))
        best = None
        for j in (i - 1, i):
            if 0 <= j < times.size and abs(times[j] - t) <= TIME_EPS and (best is None or abs(times[j] - t) < best[1]):
                best = (j, abs(times[j] - t))
        return None if best is None else best[0]

    # -- goals -------------------------------------------------------------------------------------
    def _goal(self, goal: Goal | str) -> Goal:
        if isinstance(goal, str):
            return self.task.goal(goal)
        return goal

    def achieved(self, goal: Goal | str) -> bool:
        """True if the goal (or goal ID) is achieved (see the module docstring for each goal type)."""
        return self._goal_result(self._goal(goal))[0] is not None

    def goal_time(self, goal: Goal | str) -> float | None:
        """The time at which the goal is achieved (its given time, or the first time found); None if it is not."""
        idx = self._goal_result(self._goal(goal))[0]
        return None if idx is None else float(self.trajectory.t[idx])

    def goal_reason(self, goal: Goal | str) -> str:
        """Why the goal is not achieved ("" if it is)."""
        return self._goal_result(self._goal(goal))[1]

    def _goal_result(self, goal: Goal) -> tuple[int | None, str]:
        hit = self._goal_results.get(goal.id)
        if hit is not None:
            return hit
        if goal.id in self._in_progress:
            return None, "returnTo goals refer to each other in a cycle"
        self._in_progress.add(goal.id)
        try:
            if self.goal_times is not None:
                result = self._evaluate_given(goal)
            else:
                result = self._search(goal)
        finally:
            self._in_progress.discard(goal.id)
        self._goal_results[goal.id] = result
        return result

    def _evaluate_given(self, goal: Goal) -> tuple[int | None, str]:
        assert self.goal_times is not None
        if goal.id not in self.goal_times:
            return None, "the solution gives no time for this goal (goal2time)"
        t = self.goal_times[goal.id]
        idx = self._index_of(t)
        if idx is None:
            return None, f"its time t={_fmt_time(t)} s is not a sample time of the trajectory"
        reason = self._check_goal_at(goal, idx)
        return (idx, "") if not reason else (None, f"at t={_fmt_time(t)} s: {reason}")

    def _search(self, goal: Goal, start: int = 0) -> tuple[int | None, str]:
        """The first sample (from ``start``) at which the goal is achieved, or None and why not."""
        n = len(self.trajectory)
        if isinstance(goal, ReturnTo):
            return self._search_return(goal, start)
        if isinstance(goal, At):  # a cheap pre-filter: the pose
            poses = self.tcp_poses
            goal_pose = goal.require_pose()
            candidates = [i for i in range(start, n) if goal_pose.valid(poses[i])]
            if not candidates:
                return None, self._pose_miss(goal_pose, range(start, n))
        else:
            candidates = list(range(start, n))
        first_reason = ""
        for i in candidates:
            reason = self._check_goal_at(goal, i)
            if not reason:
                return i, ""
            first_reason = first_reason or f"at t={_fmt_time(self.trajectory.t[i])} s: {reason}"
        return None, f"never achieved (first attempt {first_reason})" if first_reason else "never achieved"

    def _search_return(self, goal: ReturnTo, start: int) -> tuple[int | None, str]:
        ref, why = self._return_reference(goal)
        if ref is None:
            return None, why
        eps = goal.epsilon if goal.epsilon is not None else RETURN_EPS
        q = self.trajectory.q
        dist = np.linalg.norm(q - q[ref], axis=1)
        lo = max(start, ref)
        away = np.flatnonzero(dist[lo:] > eps)
        if away.size == 0:  # never leaves: achieved at the end (if the goal constraints hold)
            order = range(len(q) - 1, lo - 1, -1)
        else:
            order = range(lo + int(away[0]), len(q))
        for i in order:
            if dist[i] <= eps and not self._check_goal_at(goal, i):
                return i, ""
        return None, f"never returns within {eps:g} (L2) of q at t={_fmt_time(self.trajectory.t[ref])} s"

    def _return_reference(self, goal: ReturnTo) -> tuple[int | None, str]:
        if goal.return_to is None:
            return 0, ""
        try:
            other = self.task.goal(goal.return_to)
        except InputError:
            return None, f"it returns to an unknown goal {goal.return_to!r}"
        idx, _ = self._goal_result(other)
        if idx is None:
            return None, f"the goal it returns to, {goal.return_to!r}, is not achieved"
        return idx, ""

    def _pose_miss(self, pose, indices) -> str:
        """A sentence on how close the TCP came to a tolerated pose."""
        poses = self.tcp_poses
        desired = pose.world
        best = None
        for i in indices:
            v = float(np.linalg.norm(pose.tolerance.violation(desired, poses[i])))
            if best is None or v < best[0]:
                best = (v, i)
        if best is None:
            return "no samples to check"
        v, i = best
        detail = _violation_text(pose, poses[i])
        return f"the TCP never comes within the tolerance (closest at t={_fmt_time(self.trajectory.t[i])} s: {detail})"

    def _check_goal_at(self, goal: Goal, i: int) -> str:
        """Why the goal is not achieved at sample i (the empty string if it is)."""
        tr = self.trajectory
        window = [i]
        if isinstance(goal, At):
            goal_pose = goal.require_pose()
            if not goal_pose.valid(self.tcp_poses[i]):
                return f"TCP pose outside the tolerance ({_violation_text(goal_pose, self.tcp_poses[i])})"
            if isinstance(goal, Reach):
                v = np.abs(tr.dq[i])
                if v.max(initial=0.0) > VELOCITY_EPS:
                    j = int(np.argmax(v))
                    return (
                        f"not standing still: joint {self._robot.joints[j]} moves at {v[j]:.4g}"
                        f" (reach needs |dq| <= {VELOCITY_EPS:g})"
                    )
        elif isinstance(goal, Pause):
            t_start = tr.t[i] - goal.duration + 1e-9
            before = np.flatnonzero(tr.t <= t_start)
            if before.size == 0:
                return f"a pause of {goal.duration:g} s ending at t={_fmt_time(tr.t[i])} s would start before t=0"
            j = int(before[-1])
            window = list(range(j, i + 1))
            v = np.abs(tr.dq[j : i + 1])
            if v.max(initial=0.0) > VELOCITY_EPS:
                step, m = np.unravel_index(int(np.argmax(v)), v.shape)
                return (
                    f"moving during the pause: joint {self._robot.joints[m]} at {v[step, m]:.4g}"
                    f" at t={_fmt_time(tr.t[j + step])} s"
                )
            drift = np.abs(tr.q[j : i + 1] - tr.q[j])
            if drift.max(initial=0.0) > HOLD_EPS:
                step, m = np.unravel_index(int(np.argmax(drift)), drift.shape)
                return f"joint {self._robot.joints[m]} drifts by {drift[step, m]:.4g} during the pause"
        elif isinstance(goal, ReturnTo):
            ref, why = self._return_reference(goal)
            if ref is None:
                return why
            if i < ref:
                return f"earlier than the configuration it returns to (t={_fmt_time(tr.t[ref])} s)"
            eps = goal.epsilon if goal.epsilon is not None else RETURN_EPS
            d = float(np.linalg.norm(tr.q[i] - tr.q[ref]))
            if d > eps:
                return f"q is {d:.4g} (L2) from q at t={_fmt_time(tr.t[ref])} s (epsilon {eps:g})"
        elif isinstance(goal, Follow):
            n = len(goal.trajectory)
            dt = self.task.header.time_step
            window = []
            for k, pose in enumerate(goal.trajectory):
                t = tr.t[i] - (n - 1 - k) * dt
                idx = self._index_of(t)
                if idx is None:
                    return f"pose {k} of {n} falls at t={_fmt_time(t)} s, which is not a sample of the trajectory"
                if not pose.valid(self.tcp_poses[idx]):
                    return (
                        f"pose {k} of {n} missed at t={_fmt_time(t)} s ({_violation_text(pose, self.tcp_poses[idx])})"
                    )
                window.append(idx)
        else:
            return f"goal type {type(goal).__name__} is not supported"
        for c in goal.constraints:
            result = self._check_constraint(c, window)
            if not result["ok"]:
                return f"goal constraint {result['type']} fails: {result['reason']}"
        return ""

    @property
    def all_goals_achieved(self) -> bool:
        """True if every goal of the task is achieved."""
        return all(self.achieved(g) for g in self.task.goals)

    # -- constraints -------------------------------------------------------------------------------
    @property
    def valid(self) -> bool:
        """True if every task-level constraint holds over the whole trajectory."""
        return all(r["ok"] for r in self._constraints())

    def failed_constraints(self) -> list[dict]:
        """The report entries of the task constraints that do not hold."""
        return [r for r in self._constraints() if not r["ok"]]

    def _constraints(self) -> list[dict]:
        if self._constraint_results is None:
            every = list(range(len(self.trajectory)))
            results = []
            for k, c in enumerate(self.task.constraints):
                r = self._check_constraint(c, every)
                r["index"] = k
                results.append(r)
            self._constraint_results = results
        return self._constraint_results

    def report(self) -> dict:
        """Every task constraint and every goal: ok or not, and if not at which time and why (JSON-serializable)."""
        constraints = [dict(r) for r in self._constraints()]
        goals = []
        for g in self.task.goals:
            idx, reason = self._goal_result(g)
            goals.append(
                {
                    "id": g.id,
                    "type": g.type_name,
                    "achieved": idx is not None,
                    "time": None if idx is None else float(self.trajectory.t[idx]),
                    "reason": reason,
                }
            )
        return {
            "task": self.task.id,
            "valid": all(r["ok"] for r in constraints),
            "all_goals_achieved": all(g["achieved"] for g in goals),
            "constraints": constraints,
            "goals": goals,
        }

    def _result(self, c: Constraint, ok: bool, i: int | None = None, reason: str = "", checked: bool = True) -> dict:
        out = {
            "type": c.to_json().get("type", type(c).__name__),
            "ok": bool(ok),
            "time": None if i is None else float(self.trajectory.t[i]),
            "reason": reason,
        }
        if not checked:
            out["checked"] = False
        return out

    def _check_constraint(self, c: Constraint, indices: list[int]) -> dict:
        """Check one constraint at the given samples: a report entry (type, ok, time, reason)."""
        tr = self.trajectory
        robot = self._robot
        if isinstance(c, JointLimits):
            return self._check_joint_limits(c, indices)
        if isinstance(c, SelfCollisionFree):
            for i in indices:
                if robot.has_self_collision(tr.q[i]):
                    pairs = robot.self_collisions(tr.q[i])
                    what = ", ".join(f"{a} / {b}" for a, b in pairs[:3]) if pairs else "robot geometries"
                    return self._result(c, False, i, f"self-collision ({what})")
            return self._result(c, True)
        if isinstance(c, CollisionFree):
            margin = float(c.safety_margin or 0.0)
            obstacles = robot.collision_checker(self.task, margin, self_collision=False)
            own = robot.collision_checker(None, 0.0, self_collision=True)
            for i in indices:
                q = tr.q[i]
                if self.task.obstacles and obstacles.in_collision(q):
                    hits = [h for h in obstacles.collisions(q) if h.kind == "obstacle"]
                    what = "; ".join(h.describe() for h in hits[:3]) if hits else "collision with an obstacle"
                    if margin:
                        what += f" (safety margin {margin:g} m)"
                    return self._result(c, False, i, what)
                if own.in_collision(q):
                    pairs = robot.self_collisions(q)
                    what = ", ".join(f"{a} / {b}" for a, b in pairs[:3]) if pairs else "robot geometries"
                    return self._result(c, False, i, f"self-collision ({what})")
            return self._result(c, True)
        if isinstance(c, ValidJointAngles):
            lim = np.asarray(c.limits, dtype=float)
            if lim.shape != (2, robot.dof):
                return self._result(c, False, None, f"limits are {lim.shape[1]} wide for a {robot.dof}-DOF robot")
            for i in indices:
                if not c.valid(tr.q[i]):
                    q = np.asarray(tr.q[i])
                    qm = np.mod(q + np.pi, 2 * np.pi) - np.pi if c.coterminal else q
                    bad = int(np.flatnonzero((qm < lim[0]) | (qm > lim[1]))[0])
                    return self._result(
                        c,
                        False,
                        i,
                        f"joint {robot.joints[bad]} angle {qm[bad]:.4g} outside [{lim[0, bad]:.4g}, {lim[1, bad]:.4g}]"
                        + (" (coterminal)" if c.coterminal else ""),
                    )
            return self._result(c, True)
        if isinstance(c, BasePlacement):
            if c.pose is None or c.pose.valid(self.base_placement):
                return self._result(c, True)
            return self._result(
                c, False, None, f"base placement outside the tolerance ({_violation_text(c.pose, self.base_placement)})"
            )
        if isinstance(c, AllGoalsFulfilled):
            missed = [g for g in self.task.goals if not self.achieved(g)]
            if not missed:
                return self._result(c, True)
            text = "; ".join(f"goal {g.id!r}: {self.goal_reason(g)}" for g in missed)
            return self._result(c, False, None, f"{len(missed)} goal(s) not achieved: {text}")
        if isinstance(c, GoalOrder):
            return self._check_order(c)
        if isinstance(c, EndEffector):
            for i in indices:
                q, dq = tr.q[i], tr.dq[i]
                twist = robot.jacobian(q) @ np.asarray(dq, dtype=float)
                why = c.violation(self.tcp_poses[i], twist)
                if why is not None:
                    return self._result(c, False, i, why)
            return self._result(c, True)
        return self._result(c, True, None, "not evaluated by timor", checked=False)

    def _check_joint_limits(self, c: JointLimits, indices: list[int]) -> dict:
        tr = self.trajectory
        robot = self._robot
        if not indices:
            return self._result(c, True)
        idx = np.asarray(indices)
        names = robot.joints
        if "q" in c.parts:
            lo, hi = robot.joint_limits
            q = tr.q[idx]
            bad = (q < lo) | (q > hi)
            if bad.any():
                k, j = np.argwhere(bad)[0]
                return self._result(
                    c,
                    False,
                    int(idx[k]),
                    f"joint {names[j]} position {q[k, j]:.6g} outside its limits [{lo[j]:.6g}, {hi[j]:.6g}]",
                )
        checks = (
            ("dq", "velocity", lambda: tr.dq[idx], robot.velocity_limits),
            ("ddq", "acceleration", lambda: tr.ddq[idx], robot.acceleration_limits),
            ("tau", "torque", lambda: self.torques()[idx], robot.torque_limits),
        )
        for part, word, values, limits in checks:
            if part not in c.parts:
                continue
            v = np.abs(values())
            bad = v > limits * (1 + LIMIT_SLACK) + 1e-12
            if bad.any():
                ratio = np.where(bad, v / np.where(limits > 0, limits, 1e-300), 0.0)
                k = int(np.argwhere(bad)[0][0])
                j = int(np.argmax(ratio[k]))
                return self._result(
                    c,
                    False,
                    int(idx[k]),
                    f"joint {names[j]} {word} |{v[k, j]:.6g}| exceeds its limit {limits[j]:.6g}",
                )
        return self._result(c, True)

    def _check_order(self, c: GoalOrder) -> dict:
        if self.goal_times is not None:
            prev = None
            for gid in c.order:
                if not self.achieved(gid):
                    return self._result(c, False, None, f"goal {gid!r} is not achieved: {self.goal_reason(gid)}")
                t = self.goal_times[gid]
                if prev is not None and t < prev[1]:
                    return self._result(
                        c,
                        False,
                        self._index_of(t),
                        f"goal {gid!r} (t={_fmt_time(t)} s) comes before goal {prev[0]!r} (t={_fmt_time(prev[1])} s)",
                    )
                prev = (gid, t)
            return self._result(c, True)
        start, prev_id = 0, None
        for gid in c.order:
            goal = self.task.goal(gid)
            idx, reason = self._search(goal, start)
            if idx is None:
                after = f" after goal {prev_id!r} (t={_fmt_time(self.trajectory.t[start])} s)" if prev_id else ""
                return self._result(c, False, None, f"goal {gid!r} is not achieved{after}: {reason}")
            start, prev_id = idx, gid
        return self._result(c, True)

    # -- JSON --------------------------------------------------------------------------------------
    def to_json_data(self) -> dict:
        """The solution in the CoBRA solution layout (goal2time only when goal times were given)."""
        data: dict[str, Any] = {"cost": float(self.cost), "costFunction": self.cost_function.descriptor()}
        data.update(copy.deepcopy(self.header))
        data.update(self.assembly.to_json_data())
        data["basePose"] = [[[float(v) for v in row] for row in self.base_placement]]
        traj = self.trajectory.to_json()
        if self.goal_times:
            traj["goal2time"] = dict(self.goal_times)
        data["trajectory"] = traj
        if _is_branched(self.assembly):  # say which column is which joint: q orders of trees have differed
            data["jointOrder"] = list(self.assembly.robot.joints)
        for k, v in self.extra.items():
            data.setdefault(k, copy.deepcopy(v))
        return data

    def to_json_file(self, path: str | Path) -> Path:
        """Write the solution JSON atomically (temp file, then rename)."""
        return write_json(path, self.to_json_data())

    @classmethod
    def from_json_data(
        cls,
        data: Any,
        task: Task | Mapping[str, Task],
        db: ModulesDB | str | Path,
        file: str | Path | None = None,
        *,
        legacy_breadth_first: bool = False,
    ) -> Solution:
        """Read a CoBRA solution. ``task`` is the task (or a mapping of task IDs to tasks); ``db`` the module set.

        Configurations are in the depth-first joint order of Pinocchio's URDF loader (the reference's and
        CoBRA's), or in the order the file's ``jointOrder`` names. ``legacy_breadth_first=True`` reads a solution
        of a branched robot written by timor before it adopted that order (it numbered a tree's joints breadth
        first and wrote no ``jointOrder``).
        Bad input raises a :class:`~timor_core.errors.InputError` naming the file, the JSON path and the value.
        """
        from timor_core.model.assembly import ModuleAssembly
        from timor_core.model.db import ModulesDB

        file = Path(file) if file is not None else None
        if not isinstance(db, ModulesDB):
            db = ModulesDB.load(db)
        try:
            d = jf.obj(data, "$")
            header = _parse_header(d)
            the_task = _pick_task(task, header["taskID"])
            descriptor = d.get("costFunction", "")
            if descriptor is None:
                descriptor = ""
            if not isinstance(descriptor, str):
                raise FormatError("expected a cost descriptor string", path="$.costFunction", value=descriptor)
            try:
                cost_function = CostFunction.from_descriptor(descriptor)
            except InputError as exc:
                raise ValidationError(exc.message, path="$.costFunction", value=descriptor) from None
            stated = None
            if d.get("cost") is not None:
                stated = jf.number(d["cost"], "$.cost", allow_inf=True)
            traj_data = jf.obj(jf.req(d, "trajectory", "$"), "$.trajectory")
            trajectory = Trajectory.from_json(_with_derivatives(traj_data), "$.trajectory")
            goal_times = None
            if traj_data.get("goal2time"):
                g2t = jf.obj(traj_data["goal2time"], "$.trajectory.goal2time")
                goal_times = {str(k): jf.number(v, f"$.trajectory.goal2time.{k}") for k, v in g2t.items()}
        except InputError as exc:
            raise exc.located(file=file) from None
        assembly = ModuleAssembly.from_json_data(db, d, file)
        try:
            trajectory = _in_joint_order(trajectory, assembly, d.get("jointOrder"), legacy_breadth_first)
        except InputError as exc:
            raise exc.located(file=file) from None
        try:
            solution = cls(
                the_task,
                assembly,
                trajectory,
                None,
                goal_times,
                cost_function,
                header,
            )
        except InputError as exc:
            path = exc.path
            if path and path.startswith("$.goal2time"):
                path = "$.trajectory" + path[1:]
            elif path is None:
                path = "$.trajectory"
            raise type(exc)(exc.message, file=file, path=path, value=exc.value) from None
        solution.stated_cost = stated
        solution.extra = {k: v for k, v in d.items() if k not in _LAYOUT_KEYS and k != "trajectory" and k not in header}
        return solution

    @classmethod
    def from_json_file(
        cls,
        path: str | Path,
        task: Task | Mapping[str, Task],
        db: ModulesDB | str | Path,
        *,
        legacy_breadth_first: bool = False,
    ) -> Solution:
        """Load a CoBRA solution file for a task (or a mapping of task IDs to tasks) and a module set."""
        path = Path(path)
        return cls.from_json_data(jf.load_json_file(path), task, db, path, legacy_breadth_first=legacy_breadth_first)


# -- helpers ---------------------------------------------------------------------------------------


def _is_branched(assembly: ModuleAssembly) -> bool:
    links = assembly.tree().links
    parents = [link.parent for link in links if link.parent is not None]
    return len(parents) != len(set(parents))


def _in_joint_order(
    trajectory: Trajectory, assembly: ModuleAssembly, stated: Any, legacy_breadth_first: bool
) -> Trajectory:
    """The trajectory with its columns in the robot's joint order (from ``jointOrder`` or the legacy order)."""
    ours = list(assembly.robot.joints)
    if stated is not None:
        names = [jf.string(v, f"$.jointOrder[{i}]") for i, v in enumerate(jf.array(stated, "$.jointOrder"))]
        if sorted(names) != sorted(ours):
            raise ValidationError(
                f"jointOrder must name each joint of the assembly once: {ours}", path="$.jointOrder", value=stated
            )
    elif legacy_breadth_first:
        names = list(assembly.tree().breadth_first_joints)
    else:
        return trajectory
    if names == ours or trajectory.q.ndim != 2 or trajectory.q.shape[1] != len(ours):
        return trajectory
    perm = [names.index(n) for n in ours]
    return replace(trajectory, q=trajectory.q[:, perm], dq=trajectory.dq[:, perm], ddq=trajectory.ddq[:, perm])


def _violation_text(pose, real: np.ndarray) -> str:
    """Which projections of a tolerated pose a real pose violates, by how much."""
    try:
        values = pose.tolerance.error(pose.world, real)
        parts = []
        for p, iv, v in zip(pose.tolerance.projections, pose.tolerance.intervals, values):
            if not iv.contains(v):
                parts.append(f"{p} = {v:.4g} not in [{iv.low:.4g}, {iv.high:.4g}]")
        return ", ".join(parts) if parts else "within tolerance"
    except Exception:  # noqa: BLE001 — a description must never hide the verdict
        return "outside the tolerance"


def _today() -> str:
    return datetime.date.today().isoformat()


def _header(header: Mapping[str, Any] | None, task: Task) -> dict[str, Any]:
    out: dict[str, Any] = {"taskID": task.id}
    for k, v in _HEADER_DEFAULTS.items():
        out[k] = _today() if k == "date" else copy.deepcopy(v)
    if header:
        for k, v in header.items():
            out[str(k)] = copy.deepcopy(v)
    return out


def _string_list(value: Any, path: str) -> list[str] | str:
    if isinstance(value, str):
        return value
    items = jf.array(value, path)
    return [jf.string(v, f"{path}[{i}]", nonempty=False) for i, v in enumerate(items)]


def _parse_header(d: dict) -> dict[str, Any]:
    """The CoBRA solution header fields of a solution JSON (taskID required), type-checked."""
    header: dict[str, Any] = {"taskID": jf.string(jf.req(d, "taskID", "$"), "$.taskID")}
    for key in ("version", "publication", "processorName", "notes"):
        if key in d:
            header[key] = jf.string(d[key], f"$.{key}", nonempty=False)
    for key in ("author", "email", "affiliation", "tags"):
        if key in d:
            header[key] = _string_list(d[key], f"$.{key}")
    if "computationTime" in d:
        header["computationTime"] = jf.number(d["computationTime"], "$.computationTime")
    if "date" in d:
        date = jf.string(d["date"], "$.date")
        try:
            datetime.date.fromisoformat(date.replace("/", "-"))
        except ValueError:
            raise ValidationError("expected a date YYYY-MM-DD", path="$.date", value=date) from None
        header["date"] = date
    return header


def _pick_task(task: Task | Mapping[str, Task], task_id: str) -> Task:
    if isinstance(task, Task):
        if task.id != task_id:
            raise ValidationError(
                f"the solution is for task {task_id!r}, not {task.id!r}", path="$.taskID", value=task_id
            )
        return task
    if isinstance(task, Mapping):
        if task_id not in task:
            raise ValidationError(
                f"no such task among the given ones ({', '.join(map(str, task)) or 'none'})",
                path="$.taskID",
                value=task_id,
            )
        return task[task_id]
    raise InputError("task must be a Task or a mapping of task IDs to tasks", value=task)


def _with_derivatives(traj: dict) -> dict:
    """The trajectory JSON with dq / ddq derived by finite differences where the file omits them."""
    if "dq" in traj and "ddq" in traj:
        return traj
    out = dict(traj)
    try:
        t = np.asarray(traj["t"], dtype=float)
        q = np.asarray(traj["q"], dtype=float)
        if q.ndim == 1:
            q = q.reshape(-1, 1)
    except (KeyError, TypeError, ValueError):
        return traj  # Trajectory.from_json names what is missing or malformed

    def derive(a: np.ndarray) -> np.ndarray:
        if t.size < 2 or a.shape[0] != t.size or np.any(np.diff(t) <= 0):
            return np.zeros_like(a)
        return np.gradient(a, t, axis=0)

    if "dq" not in out:
        out["dq"] = derive(q).tolist()
    if "ddq" not in out:
        out["ddq"] = derive(np.asarray(out["dq"], dtype=float).reshape(q.shape)).tolist()
    return out
