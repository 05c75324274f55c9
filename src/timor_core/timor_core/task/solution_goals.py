"""The goal half of a Solution: whether and when each goal (at, reach, pause, returnTo, follow) is achieved, and
why not. A mixin, so ``solution.achieved(goal)`` reads as it always did while this file stays one concept; it
uses the solution's ``task``, ``trajectory``, ``tcp_poses``, ``goal_times``, ``_robot``, ``_goal_results``,
``_in_progress``, ``_index_of`` and ``_check_constraint``."""

from __future__ import annotations

from typing import Any

import numpy as np

from timor_core.errors import InputError
from timor_core.task import At, Follow, Pause, Reach, ReturnTo
from timor_core.task.solution_checks import format_time, violation_text

__all__ = ["SolutionGoals", "VELOCITY_EPS", "HOLD_EPS", "RETURN_EPS"]

#: A joint counts as standing still when ``|dq| <=`` this (rad/s or m/s).
VELOCITY_EPS = 1e-3
#: During a pause, q may drift this far (per joint) from its value at the pause's start.
HOLD_EPS = 1e-4
#: Default L2 distance within which a returnTo goal's configuration must match the referenced one.
RETURN_EPS = 1e-4

Goal = Any  # a timor_core.task.Goal


class SolutionGoals:
    """Goal evaluation of a Solution (mixed into it; not used alone)."""

    task: Any
    trajectory: Any
    tcp_poses: Any
    goal_times: Any
    _robot: Any
    _goal_results: Any
    _in_progress: Any
    _index_of: Any
    _check_constraint: Any

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
            return None, f"its time t={format_time(t)} s is not a sample time of the trajectory"
        reason = self._check_goal_at(goal, idx)
        return (idx, "") if not reason else (None, f"at t={format_time(t)} s: {reason}")

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
            first_reason = first_reason or f"at t={format_time(self.trajectory.t[i])} s: {reason}"
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
        return None, f"never returns within {eps:g} (L2) of q at t={format_time(self.trajectory.t[ref])} s"

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
        detail = violation_text(pose, poses[i])
        return (
            f"the TCP never comes within the tolerance (closest at t={format_time(self.trajectory.t[i])} s: {detail})"
        )

    def _check_goal_at(self, goal: Goal, i: int) -> str:
        """Why the goal is not achieved at sample i (the empty string if it is)."""
        window = [i]  # the samples the goal's own constraints are checked at
        if isinstance(goal, At):
            why = self._why_not_at(goal, i)
        elif isinstance(goal, Pause):
            why, window = self._why_not_paused(goal, i)
        elif isinstance(goal, ReturnTo):
            why = self._why_not_returned(goal, i)
        elif isinstance(goal, Follow):
            why, window = self._why_not_followed(goal, i)
        else:
            return f"goal type {type(goal).__name__} is not supported"
        if why:
            return why
        for c in goal.constraints:
            result = self._check_constraint(c, window)
            if not result["ok"]:
                return f"goal constraint {result['type']} fails: {result['reason']}"
        return ""

    def _why_not_at(self, goal: At, i: int) -> str:
        goal_pose = goal.require_pose()
        if not goal_pose.valid(self.tcp_poses[i]):
            return f"TCP pose outside the tolerance ({violation_text(goal_pose, self.tcp_poses[i])})"
        if isinstance(goal, Reach):
            v = np.abs(self.trajectory.dq[i])
            if v.max(initial=0.0) > VELOCITY_EPS:
                j = int(np.argmax(v))
                return (
                    f"not standing still: joint {self._robot.joints[j]} moves at {v[j]:.4g}"
                    f" (reach needs |dq| <= {VELOCITY_EPS:g})"
                )
        return ""

    def _why_not_paused(self, goal: Pause, i: int) -> tuple[str, list[int]]:
        """Why the pause ending at sample i fails (or ""), and the samples it spans."""
        tr = self.trajectory
        before = np.flatnonzero(tr.t <= tr.t[i] - goal.duration + 1e-9)
        if before.size == 0:
            return f"a pause of {goal.duration:g} s ending at t={format_time(tr.t[i])} s would start before t=0", [i]
        j = int(before[-1])
        window = list(range(j, i + 1))
        v = np.abs(tr.dq[j : i + 1])
        if v.max(initial=0.0) > VELOCITY_EPS:
            step, m = np.unravel_index(int(np.argmax(v)), v.shape)
            why = f"moving during the pause: joint {self._robot.joints[m]} at {v[step, m]:.4g}"
            return why + f" at t={format_time(tr.t[j + step])} s", window
        drift = np.abs(tr.q[j : i + 1] - tr.q[j])
        if drift.max(initial=0.0) > HOLD_EPS:
            step, m = np.unravel_index(int(np.argmax(drift)), drift.shape)
            return f"joint {self._robot.joints[m]} drifts by {drift[step, m]:.4g} during the pause", window
        return "", window

    def _why_not_returned(self, goal: ReturnTo, i: int) -> str:
        tr = self.trajectory
        ref, why = self._return_reference(goal)
        if ref is None:
            return why
        if i < ref:
            return f"earlier than the configuration it returns to (t={format_time(tr.t[ref])} s)"
        eps = goal.epsilon if goal.epsilon is not None else RETURN_EPS
        d = float(np.linalg.norm(tr.q[i] - tr.q[ref]))
        if d > eps:
            return f"q is {d:.4g} (L2) from q at t={format_time(tr.t[ref])} s (epsilon {eps:g})"
        return ""

    def _why_not_followed(self, goal: Follow, i: int) -> tuple[str, list[int]]:
        """Why the follow goal ending at sample i fails (or ""), and the samples of its poses."""
        n = len(goal.trajectory)
        dt = self.task.header.time_step
        window: list[int] = []
        for k, pose in enumerate(goal.trajectory):
            t = self.trajectory.t[i] - (n - 1 - k) * dt
            idx = self._index_of(t)
            if idx is None:
                return f"pose {k} of {n} falls at t={format_time(t)} s, which is not a sample of the trajectory", window
            if not pose.valid(self.tcp_poses[idx]):
                return (
                    f"pose {k} of {n} missed at t={format_time(t)} s ({violation_text(pose, self.tcp_poses[idx])})",
                    window,
                )
            window.append(idx)
        return "", window
