"""Goals no assembly of a search space can reach, proven from the modules before any assembly is enumerated.

Why: a task with a goal out of every robot's reach made the constrained search build all 177,155 robots of
experiment 2 (62 s) to say "no solution". Here each module gets a *span*: the largest distance between two of its
frames (bodies and connectors) over all configurations, bounded by summing the lengths of the translations on the
path between them in the module's tree (revolute joints rotate about their origin and add nothing; a prismatic
joint adds its larger limit; any other joint makes the span infinite). The TCP of a serial assembly lies within
the sum of its modules' spans of the base frame (triangle inequality), so the longest such sum over the space's
automaton (:func:`space_reach`) bounds the reach of *every* assembly in it. A pose goal farther than that from
the task's base placement (less the tolerance's position slack) is unreachable for all of them
(:func:`unreachable_goals`); the bound holds for any base placement, since it is measured from the base.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.kinematics.reach import position_slack
from timor_core.search.spaces.space import SerialSpace, post_order
from timor_core.task import At, Follow
from timor_core.task.feedback import task_base_placement

__all__ = ["UnreachableGoal", "module_span", "space_reach", "unreachable_goals"]


@dataclass(frozen=True)
class UnreachableGoal:
    """A goal out of reach of every assembly: its ID, its distance from the base (m), the space's reach bound (m)
    and the tolerance's position slack (m)."""

    goal: str
    distance: float
    reach: float
    slack: float

    def text(self) -> str:
        """One readable line."""
        if self.reach == -math.inf:  # the space holds no assembly at all
            return f"goal {self.goal} is {self.distance:.3f} m from the base; the search space holds no assembly"
        return (
            f"goal {self.goal} is {self.distance:.3f} m from the base; no assembly of the space reaches farther"
            f" than {self.reach:.3f} m (+ {self.slack:.3f} m tolerance)"
        )


def _travel(joint: Any) -> float:
    """How far the joint moves its child away from its frame's origin (see module docstring)."""
    if joint.type in ("revolute", "continuous", "fixed"):
        return 0.0
    if joint.type == "prismatic":
        end = max(abs(float(joint.limits.lower)), abs(float(joint.limits.upper)))
        return end if math.isfinite(end) else math.inf
    return math.inf


def module_span(module: Any) -> float:
    """The largest distance between two frames (bodies, connectors) of ``module`` over all its configurations, or
    an upper bound of it (cached on the module)."""
    cache = module._cache
    if "span" in cache:
        return cache["span"]
    edges: dict[tuple, list[tuple[tuple, float]]] = {}

    def link(a: tuple, b: tuple, length: float) -> None:
        edges.setdefault(a, []).append((b, length))
        edges.setdefault(b, []).append((a, length))

    def norm(T: Any) -> float:
        return float(np.linalg.norm(np.asarray(T, dtype=float)[:3, 3]))

    anchors: list[tuple] = []
    for b in module.bodies:
        anchors.append(("body", b.id))
        edges.setdefault(("body", b.id), [])
        for c in b.connectors:
            anchors.append(("connector", c.id))
            link(("body", b.id), ("connector", c.id), norm(c.pose))
    for j in module.joints:
        link(("body", j.parent), ("joint", j.id), norm(j.pose_parent))
        link(("joint", j.id), ("body", j.child), norm(j.pose_child) + _travel(j))
    span = 0.0
    for start in anchors:  # a tree: one walk per anchor gives the path length to every other node
        far = {start: 0.0}
        todo = [start]
        while todo:
            node = todo.pop()
            for nxt, length in edges.get(node, ()):
                if nxt not in far:
                    far[nxt] = far[node] + length
                    todo.append(nxt)
        span = max(span, max(far[a] for a in anchors if a in far))
    cache["span"] = span
    return span


def space_reach(space: SerialSpace) -> float:
    """An upper bound of the distance from the base to the TCP of any assembly of ``space``, in any configuration:
    the largest sum of module spans along a path of the space's automaton."""
    auto = space._auto  # the compiled space (as AssemblyIterator and cost_order read it)
    trans = auto.trans
    spans = {m: module_span(space.db[m]) for s in trans for m, _ in s}
    longest: list[float | None] = [None] * len(trans)
    longest[0] = 0.0
    for s in post_order(trans):
        longest[s] = max((spans[m] + longest[b] for m, b in trans[s]), default=-math.inf)  # type: ignore[operator]
    value = longest[1]
    return -math.inf if value is None else float(value)


def unreachable_goals(space: SerialSpace, task: Any) -> list[UnreachableGoal]:
    """The pose goals of ``task`` (at, reach; every pose of a follow goal) that no assembly of ``space``, placed at
    the task's nominal base placement, can reach: farther from the base than :func:`space_reach` plus the
    tolerance's position slack. Empty if every goal may be reachable (the bound is necessary, not sufficient)."""
    placement = task_base_placement(task)
    base = np.zeros(3) if placement is None else np.asarray(placement, dtype=float)[:3, 3]
    reach = space_reach(space)
    out = []
    for g in task.goals:
        poses: tuple = ()
        if isinstance(g, At) and g.goal_pose is not None:
            poses = (g.goal_pose,)
        elif isinstance(g, Follow) and g.trajectory:
            poses = tuple(g.trajectory)
        for pose in poses:
            slack = position_slack(pose.tolerance)
            distance = float(np.linalg.norm(np.asarray(pose.world, dtype=float)[:3, 3] - base))
            if distance - slack > reach + 1e-9:
                out.append(UnreachableGoal(g.id, distance, reach, slack))
                break
    return out
