"""Collision-free motion planning in joint space: RRT-Connect, path shortcutting and timing.

:func:`plan` is the one-call entry point for a :class:`~timor_core.kinematics.robot.PinRobot`; the pieces
(:func:`rrt_connect`, :func:`edge_valid`, :func:`shortcut`) work with any validity function, so they can be
used with obstacles or other constraints.

Validity along an edge is checked at discrete configurations at most ``check_resolution`` apart (in the
max-norm over joints); a region in joint space narrower than that can be missed, so callers wanting a
guarantee should pad obstacles by half the resolution.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from timor_core.errors import InputError
from timor_core.kinematics.ompl_planning import OMPL_PLANNERS, ompl_available, ompl_path
from timor_core.kinematics.trajectory import Trajectory, time_parametrize
from timor_core.limits import check_int, check_number, limit_hint, limits

if TYPE_CHECKING:
    from timor_core.kinematics.robot import PinRobot

__all__ = ["PLANNERS", "PlannerConfig", "rrt_connect", "edge_valid", "shortcut", "path_length", "plan", "joint_path"]

Validity = Callable[[np.ndarray], bool]
PLANNERS = ("timor", *OMPL_PLANNERS)
"""``timor``: this module's RRT-Connect; the others: OMPL's planners (``kinematics.ompl_planning``)."""

MAX_STEP = 100.0
"""Largest ``step`` and ``check_resolution`` (rad or m): a motion checked once per 100 rad is not checked at all."""


@dataclass(frozen=True)
class PlannerConfig:
    """Budget and resolution of the planner.

    ``step`` bounds the Euclidean joint-space length of one tree extension (rad); ``check_resolution`` is the
    largest max-norm distance between two validity checks along an edge; ``goal_bias`` is the probability of
    steering towards the other tree's root instead of a random sample; ``time_limit`` (s) bounds the search in wall
    time in addition to ``max_iterations`` (None: timor's planner stops at the ``max_plan_seconds`` limit, OMPL's
    after 10 s). Every field is checked here (limits ``max_plan_iterations``, ``min_check_resolution``,
    ``max_plan_seconds``); an InputError names the field and the value.
    """

    planner: str = "RRTConnect"  # "timor" (our RRT-Connect) or one of ompl_planning.OMPL_PLANNERS
    max_iterations: int = 5000
    step: float = 0.2
    check_resolution: float = 0.02
    goal_bias: float = 0.1
    shortcut_iterations: int = 100
    time_limit: float | None = 10.0

    def __post_init__(self) -> None:
        if not isinstance(self.planner, str) or self.planner not in PLANNERS:
            known = ", ".join(PLANNERS)
            raise InputError(f"PlannerConfig.planner: unknown planner (one of {known})", value=self.planner)
        for name in ("max_iterations", "shortcut_iterations"):
            check_int(getattr(self, name), f"PlannerConfig.{name}", 0, "max_plan_iterations")
        for name in ("step", "check_resolution"):  # a finer resolution multiplies the collision checks per motion
            check_number(getattr(self, name), f"PlannerConfig.{name}", "min_check_resolution", MAX_STEP)
        check_number(self.goal_bias, "PlannerConfig.goal_bias", 0.0, 1.0)
        if self.time_limit is not None:  # finite: an impossible query must end (inf made OMPL's anytime planners
            # return no path at all, 1e12 never returned)
            check_number(self.time_limit, "PlannerConfig.time_limit", 0.0, "max_plan_seconds", low_open=True)

    @property
    def seconds(self) -> float:
        """The wall-time limit in force: ``time_limit``, or the ``max_plan_seconds`` limit when it is None."""
        return float(self.time_limit) if self.time_limit is not None else float(limits().max_plan_seconds)


def check_motion_checks(lower: np.ndarray, upper: np.ndarray, resolution: float) -> None:
    """Refuse a ``check_resolution`` that would need more than ``max_edge_checks`` collision checks along one
    straight motion across the planning box ``[lower, upper]`` (checked before planning starts)."""
    extent = float(np.max(np.asarray(upper, dtype=float) - np.asarray(lower, dtype=float), initial=0.0))
    checks = extent / resolution
    limit = limits().max_edge_checks
    if not checks <= limit:
        raise InputError(
            f"PlannerConfig.check_resolution: a motion across the joint range ({extent:g}) would take {checks:.3g}"
            f" collision checks, more than the {limit_hint('max_edge_checks')} ({limit}); use a coarser resolution",
            value=resolution,
        )


def _vector(value, name: str, dof: int | None = None) -> np.ndarray:
    v = np.array(value, dtype=float).reshape(-1)
    if dof is not None and v.shape != (dof,):
        raise InputError(f"{name} must have {dof} entries", value=np.asarray(value).tolist())
    if not np.all(np.isfinite(v)):
        raise InputError(f"{name} must be finite", value=v.tolist())
    return v


def _edge_order(n: int) -> np.ndarray:
    """The indices 1..n, coarse to fine (end point first, then halves, quarters, ...), to find collisions early."""
    order = [n]
    seen = {0, n}
    stride = n
    while stride > 1:
        half = stride // 2
        for i in range(half, n, half):
            if i not in seen:
                seen.add(i)
                order.append(i)
        stride = half
    order.extend(i for i in range(1, n) if i not in seen)
    return np.array(order)


def edge_valid(a, b, is_valid: Validity, resolution: float) -> bool:
    """True if the configurations on the straight edge from ``a`` to ``b`` are valid.

    Checks ``b`` and evenly spaced configurations between ``a`` and ``b`` at most ``resolution`` apart in the
    max-norm; ``a`` itself is not checked (it is assumed to be valid already).
    """
    a = np.asarray(a, dtype=float)
    b = np.asarray(b, dtype=float)
    n = max(1, math.ceil(float(np.max(np.abs(b - a), initial=0.0)) / resolution))
    delta = b - a
    for i in _edge_order(n):
        q = b if i == n else a + (i / n) * delta
        if not is_valid(q):
            return False
    return True


def path_length(path) -> float:
    """Euclidean joint-space length of a piecewise-linear path."""
    path = np.asarray(path, dtype=float)
    if len(path) < 2:
        return 0.0
    return float(np.sum(np.linalg.norm(np.diff(path, axis=0), axis=1)))


class _Tree:
    """Nodes (preallocated, grown by doubling) and parent indices of one RRT tree."""

    def __init__(self, root: np.ndarray, capacity: int) -> None:
        self.nodes = np.empty((max(capacity, 16), root.size))
        self.parents = np.empty(max(capacity, 16), dtype=np.int64)
        self.nodes[0] = root
        self.parents[0] = -1
        self.size = 1

    def nearest(self, q: np.ndarray) -> int:
        d = self.nodes[: self.size] - q
        return int(np.argmin(np.einsum("ij,ij->i", d, d)))

    def add(self, q: np.ndarray, parent: int) -> int:
        if self.size == len(self.nodes):
            self.nodes = np.vstack((self.nodes, np.empty_like(self.nodes)))
            self.parents = np.concatenate((self.parents, np.empty_like(self.parents)))
        self.nodes[self.size] = q
        self.parents[self.size] = parent
        self.size += 1
        return self.size - 1

    def branch(self, i: int) -> list[np.ndarray]:
        """Nodes from node i back to the root."""
        out = []
        while i >= 0:
            out.append(self.nodes[i].copy())
            i = int(self.parents[i])
        return out


_TRAPPED, _ADVANCED, _REACHED = 0, 1, 2


def _extend(tree: _Tree, target: np.ndarray, step: float, is_valid: Validity, resolution: float) -> tuple[int, int]:
    """One step of at most ``step`` from the node nearest ``target`` towards it: (status, new node index)."""
    i = tree.nearest(target)
    near = tree.nodes[i]
    delta = target - near
    dist = float(np.linalg.norm(delta))
    if dist <= step:
        new, status = target, _REACHED
    else:
        new, status = near + delta * (step / dist), _ADVANCED
    if dist == 0.0:
        return _REACHED, i
    if not edge_valid(near, new, is_valid, resolution):
        return _TRAPPED, -1
    return status, tree.add(new.copy(), i)


def rrt_connect(
    start,
    goal,
    is_valid: Validity,
    lower,
    upper,
    rng: np.random.Generator | int | None = None,
    config: PlannerConfig = PlannerConfig(),  # noqa: B008 (frozen, immutable default)
) -> np.ndarray | None:
    """Bidirectional RRT-Connect between ``start`` and ``goal`` within the box ``[lower, upper]``.

    Returns an (M, dof) array of waypoints whose first row is ``start`` and last row is ``goal`` (exactly),
    each straight edge checked with :func:`edge_valid` at ``config.check_resolution``; or None if no path was
    found within ``config.max_iterations`` iterations (one random sample each) or ``config.time_limit``.
    ``start`` and ``goal`` are assumed valid. Deterministic for a given seed or generator state (unless the
    time limit cuts the search short).
    """
    start = _vector(start, "start")
    dof = start.size
    goal = _vector(goal, "goal", dof)
    lower = _vector(lower, "lower", dof)
    upper = _vector(upper, "upper", dof)
    if np.any(lower > upper):
        raise InputError("lower bounds must not exceed upper bounds", value=[lower.tolist(), upper.tolist()])
    rng = np.random.default_rng(rng)
    res = config.check_resolution
    check_motion_checks(lower, upper, res)
    if edge_valid(start, goal, is_valid, res):
        return np.vstack((start, goal))
    deadline = time.monotonic() + config.seconds
    capacity = min(config.max_iterations, 4096) + 2
    start_tree, goal_tree = _Tree(start, capacity), _Tree(goal, capacity)
    trees = [start_tree, goal_tree]
    for _ in range(config.max_iterations):
        if time.monotonic() > deadline:
            break
        a, b = trees
        if rng.random() < config.goal_bias:
            target = b.nodes[0]
        else:
            target = rng.uniform(lower, upper)
        status, new = _extend(a, target, config.step, is_valid, res)
        if status != _TRAPPED:
            q_new = a.nodes[new]
            # connect: grow b towards the new node until it is reached or b is blocked
            while True:
                status_b, new_b = _extend(b, q_new, config.step, is_valid, res)
                if status_b != _ADVANCED:
                    break
            if status_b == _REACHED:
                branch_a = a.branch(new)
                branch_b = b.branch(new_b)
                # q_new appears in both branches: drop one copy
                path = branch_a[::-1] + branch_b[1:]
                if a is goal_tree:
                    path = path[::-1]
                return np.array(path)
        trees.reverse()
    return None


def shortcut(path, is_valid: Validity, rng: np.random.Generator | int | None, iterations: int, resolution: float):
    """Shorten a valid path by random shortcuts.

    First removes waypoints greedily (from each waypoint, jump to the farthest one reachable in a valid
    straight line), then ``iterations`` times picks two random points on the path (anywhere along its
    edges) and replaces the part between them by a straight edge if that edge is valid and shorter, then
    removes waypoints greedily again (a random shortcut adds waypoints inside edges). The result starts and
    ends at the same configurations, its edges are valid at ``resolution``, and it is never longer than the
    input.
    """
    path = np.array(path, dtype=float)
    if path.ndim != 2 or len(path) < 3:
        return path.copy()
    rng = np.random.default_rng(rng)
    path = _greedy(path, is_valid, resolution)
    for _ in range(iterations):
        if len(path) < 3:
            break
        seg = np.linalg.norm(np.diff(path, axis=0), axis=1)
        cum = np.concatenate(([0.0], np.cumsum(seg)))
        total = cum[-1]
        s1, s2 = np.sort(rng.uniform(0.0, total, 2))
        i = min(int(np.searchsorted(cum, s1, side="right")) - 1, len(seg) - 1)
        j = min(int(np.searchsorted(cum, s2, side="right")) - 1, len(seg) - 1)
        if i == j or seg[i] == 0 or seg[j] == 0:
            continue
        p1 = path[i] + (s1 - cum[i]) / seg[i] * (path[i + 1] - path[i])
        p2 = path[j] + (s2 - cum[j]) / seg[j] * (path[j + 1] - path[j])
        middle = [p1, p2]
        if np.array_equal(p1, path[i]):
            middle = middle[1:]
        if np.array_equal(p2, path[j + 1]):
            middle = middle[:-1]
        candidate = np.vstack((path[: i + 1], *(m[None] for m in middle), path[j + 1 :]))
        if path_length(candidate) >= path_length(path):
            continue
        if not edge_valid(p1, p2, is_valid, resolution):
            continue
        path = candidate
    # random shortcuts add waypoints inside edges, and the timing stops at every waypoint: drop those it can
    return _greedy(path, is_valid, resolution)


def _greedy(path: np.ndarray, is_valid: Validity, resolution: float) -> np.ndarray:
    """Greedy waypoint removal: from each waypoint jump to the farthest one reachable by a valid straight edge."""
    if len(path) < 3:
        return path
    keep = [path[0]]
    i = 0
    while i < len(path) - 1:
        j = len(path) - 1
        while j > i + 1 and not edge_valid(path[i], path[j], is_valid, resolution):
            j -= 1
        keep.append(path[j])
        i = j
    reduced = np.array(keep)
    return reduced if path_length(reduced) <= path_length(path) else path


def _default_validity(robot: PinRobot) -> tuple[Validity, Callable[[np.ndarray], str | None]]:
    limits = robot.joint_limits
    lo, hi = limits[0], limits[1]

    def why_invalid(q: np.ndarray) -> str | None:
        if np.any(q < lo) or np.any(q > hi):
            bad = np.flatnonzero((q < lo) | (q > hi)).tolist()
            return f"outside the joint limits (joint(s) {bad})"
        if robot.has_self_collision(q):
            pairs = robot.self_collisions(q)
            return "in self-collision" + (f" ({', '.join(f'{a} / {b}' for a, b in pairs[:3])})" if pairs else "")
        return None

    def is_valid(q: np.ndarray) -> bool:
        return bool(np.all(q >= lo) and np.all(q <= hi)) and not robot.has_self_collision(q)

    return is_valid, why_invalid


def plan(
    robot: PinRobot,
    start,
    goal,
    is_valid: Validity | None = None,
    rng: np.random.Generator | int | None = None,
    config: PlannerConfig = PlannerConfig(),  # noqa: B008 (frozen, immutable default)
    dt: float = 0.01,
) -> Trajectory | None:
    """Plan a collision-free, time-parametrized motion of ``robot`` from ``start`` to ``goal``.

    ``is_valid`` defaults to "within the joint limits and free of self-collision". Runs :func:`rrt_connect`
    (sampling within the joint limits; ``[-π, π]`` for unlimited joints, widened to contain start and goal),
    :func:`shortcut` and :func:`~timor_core.kinematics.trajectory.time_parametrize` with the robot's velocity and
    acceleration limits, sampled every ``dt`` seconds. Returns None if no path was found within the budget.

    Raises :class:`~timor_core.errors.InputError` if start or goal is malformed or itself invalid.
    """
    dof = robot.dof
    start = _vector(start, "start configuration", dof)
    goal = _vector(goal, "goal configuration", dof)
    rng = np.random.default_rng(rng)
    if is_valid is None:
        is_valid, why_invalid = _default_validity(robot)
    else:
        user_valid = is_valid

        def why_invalid(q: np.ndarray) -> str | None:
            return None if user_valid(q) else "not valid (is_valid returned False)"

    for name, q in (("start", start), ("goal", goal)):
        reason = why_invalid(q)
        if reason is not None:
            raise InputError(f"the {name} configuration is {reason}", value=q.tolist())
    limits = robot.joint_limits
    lower = np.minimum(np.where(np.isfinite(limits[0]), limits[0], -np.pi), np.minimum(start, goal))
    upper = np.maximum(np.where(np.isfinite(limits[1]), limits[1], np.pi), np.maximum(start, goal))
    path = joint_path(start, goal, is_valid, lower, upper, rng=rng, config=config)
    if path is None:
        return None
    return time_parametrize(path, robot.velocity_limits, robot.acceleration_limits, dt)


def joint_path(
    start: np.ndarray,
    goal: np.ndarray,
    is_valid: Validity,
    lower: np.ndarray,
    upper: np.ndarray,
    rng: np.random.Generator | int | None = None,
    config: PlannerConfig = PlannerConfig(),  # noqa: B008 (frozen, immutable default)
) -> np.ndarray | None:
    """A valid joint-space path (waypoints) with the configured planner, shortcut; None if none was found.

    OMPL's planners are used when OMPL is installed; without it the ``RRTConnect`` default falls back to timor's
    own RRT-Connect (other OMPL planners raise InputError).
    """
    check_motion_checks(lower, upper, config.check_resolution)
    gen = np.random.default_rng(rng)
    name = config.planner
    if name == "RRTConnect" and not ompl_available():
        name = "timor"
    if name == "timor":
        path = rrt_connect(start, goal, is_valid, lower, upper, rng=gen, config=config)
    else:
        seconds = config.time_limit if config.time_limit is not None else min(10.0, limits().max_plan_seconds)
        path = ompl_path(start, goal, is_valid, lower, upper, planner=name, time_limit=seconds,
                         check_resolution=config.check_resolution, seed=int(gen.integers(1, 2**31 - 1)))  # fmt: skip
    if path is None:
        return None
    return shortcut(path, is_valid, gen, config.shortcut_iterations, config.check_resolution)
