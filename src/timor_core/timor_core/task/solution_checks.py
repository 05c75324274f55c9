"""The constraint half of a Solution: each CoBRA constraint checked over the trajectory samples, with the time
and the reason when it fails. A mixin, so ``solution.valid`` and ``solution.report()`` read as they always did
while this file stays one concept; it uses the solution's ``task``, ``trajectory``, ``tcp_poses``,
``base_placement``, ``_robot``, ``achieved``, ``goal_reason``, ``_index_of`` and ``_search``."""

from __future__ import annotations

from typing import Any

import numpy as np

from timor_core.task import (
    AllGoalsFulfilled,
    BasePlacement,
    CollisionFree,
    EndEffector,
    GoalOrder,
    JointLimits,
    SelfCollisionFree,
    ValidJointAngles,
)

__all__ = ["SolutionChecks", "violation_text", "format_time", "LIMIT_SLACK"]

#: Relative slack on velocity, acceleration and torque limits (absorbs rounding in time parametrization).
LIMIT_SLACK = 1e-9

Constraint = Any  # a timor_core.task.Constraint


def format_time(t: float) -> str:
    """A time in seconds for messages (6 significant digits)."""
    return f"{t:.6g}"


def violation_text(pose, real: np.ndarray) -> str:
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


class SolutionChecks:
    """Constraint checks of a Solution (mixed into it; not used alone)."""

    task: Any
    trajectory: Any
    tcp_poses: Any
    base_placement: Any
    _robot: Any
    goal_times: Any
    achieved: Any  # methods of Solution
    goal_reason: Any
    torques: Any
    _index_of: Any
    _search: Any

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
                    return self._result(c, False, i, self._self_collision_text(tr.q[i]))
            return self._result(c, True)
        if isinstance(c, CollisionFree):
            return self._check_collision_free(c, indices)
        if isinstance(c, ValidJointAngles):
            return self._check_joint_angles(c, indices)
        if isinstance(c, BasePlacement):
            if c.pose is None or c.pose.valid(self.base_placement):
                return self._result(c, True)
            return self._result(
                c, False, None, f"base placement outside the tolerance ({violation_text(c.pose, self.base_placement)})"
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
                twist = robot.jacobian(tr.q[i]) @ np.asarray(tr.dq[i], dtype=float)
                why = c.violation(self.tcp_poses[i], twist)
                if why is not None:
                    return self._result(c, False, i, why)
            return self._result(c, True)
        return self._result(c, True, None, "not evaluated by timor", checked=False)

    def _self_collision_text(self, q: np.ndarray) -> str:
        pairs = self._robot.self_collisions(q)
        what = ", ".join(f"{a} / {b}" for a, b in pairs[:3]) if pairs else "robot geometries"
        return f"self-collision ({what})"

    def _check_collision_free(self, c: CollisionFree, indices: list[int]) -> dict:
        """No obstacle within the safety margin and no self-collision at the samples."""
        robot = self._robot
        margin = float(c.safety_margin or 0.0)
        obstacles = robot.collision_checker(self.task, margin, self_collision=False)
        own = robot.collision_checker(None, 0.0, self_collision=True)
        for i in indices:
            q = self.trajectory.q[i]
            if self.task.obstacles and obstacles.in_collision(q):
                hits = [h for h in obstacles.collisions(q) if h.kind == "obstacle"]
                what = "; ".join(h.describe() for h in hits[:3]) if hits else "collision with an obstacle"
                if margin:
                    what += f" (safety margin {margin:g} m)"
                return self._result(c, False, i, what)
            if own.in_collision(q):
                return self._result(c, False, i, self._self_collision_text(q))
        return self._result(c, True)

    def _check_joint_angles(self, c: ValidJointAngles, indices: list[int]) -> dict:
        """Every joint angle within the constraint's limits (modulo a turn if coterminal) at the samples."""
        robot = self._robot
        lim = np.asarray(c.limits, dtype=float)
        if lim.shape != (2, robot.dof):
            return self._result(c, False, None, f"limits are {lim.shape[1]} wide for a {robot.dof}-DOF robot")
        for i in indices:
            if not c.valid(self.trajectory.q[i]):
                q = np.asarray(self.trajectory.q[i])
                qm = np.mod(q + np.pi, 2 * np.pi) - np.pi if c.coterminal else q
                bad = int(np.flatnonzero((qm < lim[0]) | (qm > lim[1]))[0])
                text = f"joint {robot.joints[bad]} angle {qm[bad]:.4g} outside [{lim[0, bad]:.4g}, {lim[1, bad]:.4g}]"
                return self._result(c, False, i, text + (" (coterminal)" if c.coterminal else ""))
        return self._result(c, True)

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
                        f"goal {gid!r} (t={format_time(t)} s) comes before goal {prev[0]!r} "
                        f"(t={format_time(prev[1])} s)",
                    )
                prev = (gid, t)
            return self._result(c, True)
        start, prev_id = 0, None
        for gid in c.order:
            goal = self.task.goal(gid)
            idx, reason = self._search(goal, start)
            if idx is None:
                after = f" after goal {prev_id!r} (t={format_time(self.trajectory.t[start])} s)" if prev_id else ""
                return self._result(c, False, None, f"goal {gid!r} is not achieved{after}: {reason}")
            start, prev_id = idx, gid
        return self._result(c, True)
