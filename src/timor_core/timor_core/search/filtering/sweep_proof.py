"""A proof that every configuration putting the TCP within a goal's tolerance drives the arm into an obstacle:
the reach proof's branch and bound over the joint angles (:mod:`.reach_proof`), where a box of joint angles is
also refused when some point of the arm's body lies inside an obstacle box for *every* configuration of it.

Why: on ``obstacles_4`` (issue 38) 124 four-joint arms reach a goal's tolerance only through an obstacle; the
reach proof cannot refuse them (the TCP gets there), so the task-aware IK spent its 150 restarts on each (~22 ms
compiled) before it gave up, and a failed IK is only a heuristic refusal. This proves it.

The arm's body: every cylinder, capsule, sphere and box of the robot's collision model holds balls of radius
``rho`` around points of its axis (a cylinder of radius ``R`` and half-length ``H``: around the axis point at ``s``
from its centre, ``rho = min(R, H - |s|)``; a box: around its centre, its smallest half side). Such a point ``P`` on
the link after joint k moves, over a box of joint angles (centre ``c``, half-widths ``h``), by at most
``r = sum_{i <= k} 2 sin(h_i / 2) dist(P(c), axis_i(c))`` from ``P(c)`` (the sequential bound of
:mod:`.reach_proof`: turn the joints one after the other; while joint i turns, ``P`` keeps its distance from its
axis). The signed distance to a convex obstacle grows by at most the distance moved, so where
``sd(P(c)) + r < rho + margin - PENETRATION`` the ball around ``P`` reaches at least ``PENETRATION`` into the obstacle
(or within the safety margin of it) at every configuration of the box: the IK's collision check refuses them all.
Only obstacle boxes are used (any other obstacle is left out: the proof only gets weaker), only revolute chains;
joints on one line with the one before are merged as in the reach proof, and the body between two merged joints
(turned by the first alone, which the merged angle does not fix) is left out.

The boxes left by both bounds are halved as in the reach proof until none is left (proven: no collision-free
configuration reaches the goal, whatever the IK's effort) or the budget is spent or most survive a level
(undecided). Joint limits are ignored (whole turns): the proof holds for any. The bound per box, in numpy and
compiled: :mod:`.sweep_bound`. Property tests:
``tests/test_sweep_proof.py`` (a configuration the collision checker calls free is never inside a refused box;
a pose the arm reaches free of the obstacles is never refused).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import coal
import numpy as np

from timor_core.kinematics.reach import position_slack
from timor_core.search.filtering.arm_body import module_sweep, robot_sweep
from timor_core.search.filtering.proof_kernel import halve_boxes, measure_boxes
from timor_core.search.filtering.proof_numpy import BoxGoal
from timor_core.search.filtering.reach_proof import ROT_WEIGHT, PoseChain, rotation_slack
from timor_core.search.filtering.sweep_bound import (
    PENETRATION,
    ArmSweep,
    ObstacleBoxes,
    certain_collision,
    certain_collision_numpy,
    fixed_collision,
)

if TYPE_CHECKING:
    from timor_core.search.filtering.filter_state import Candidate, PoseGoal

__all__ = [
    "ArmSweep", "ObstacleBoxes", "PENETRATION", "arm_sweep", "candidate_sweep", "certain_collision",
    "certain_collision_numpy", "collision_refusal", "early_refusal", "fixed_collision", "likely_refusal",
    "obstacle_boxes", "sweep_proof", "sweep_reason",
]  # fmt: skip

EPS = 1e-8  # m: rounding
ANGLE_EPS = 1e-6
FIRST_SPLITS = 8
SPLITS = 2
GIVE_UP = 0.9
BUDGET = 8192


def obstacle_boxes(task: Any) -> ObstacleBoxes:
    """The boxes among a task's obstacles' collision shapes (world poses); others are left out."""
    centres, rotations, half = [], [], []
    for obstacle in getattr(task, "obstacles", ()):
        for g in obstacle.collision:
            for shape, pose in g.coal_shapes():
                if isinstance(shape, coal.Box):
                    pose = np.asarray(pose, dtype=float)
                    centres.append(pose[:3, 3])
                    rotations.append(pose[:3, :3])
                    half.append(np.asarray(shape.halfSide, dtype=float))
    return ObstacleBoxes(
        np.array(centres).reshape(-1, 3), np.array(rotations).reshape(-1, 3, 3), np.array(half).reshape(-1, 3)
    )


def arm_sweep(robot: Any) -> ArmSweep | None:
    """The :class:`ArmSweep` of a robot's chain to its TCP, cached on the robot; None if a joint on the way is not a
    one-axis revolute joint, or the chain has no joint."""
    cache = robot.__dict__
    if "_arm_sweep" not in cache:
        cache["_arm_sweep"] = robot_sweep(robot)
    return cache["_arm_sweep"]


def _target(chain: PoseChain, goal: np.ndarray, tolerance: Any) -> BoxGoal:
    g = np.asarray(goal, dtype=float)
    length = float(np.linalg.norm(chain.offset))
    direction = (g[:3, :3] @ chain.offset) / length if length > 0 else np.zeros(3)
    slack = position_slack(tolerance) + EPS
    theta = rotation_slack(tolerance) + ANGLE_EPS
    return BoxGoal(g[:3, 3], g[:3, :3].T, slack, theta, direction, length, (0.0, 0.0), ROT_WEIGHT)


def sweep_proof(
    sweep: ArmSweep,
    obstacles: ObstacleBoxes,
    goal: np.ndarray,
    tolerance: Any,
    margin: float = 0.0,
    budget: int = BUDGET,
) -> int | None:
    """The number of boxes of joint angles that proved every configuration putting the TCP within ``tolerance`` of
    ``goal`` (4x4, world) in collision with an obstacle box (see the module docstring); None: undecided."""
    if fixed_collision(sweep, obstacles, margin):
        return 1
    if not len(obstacles):
        return None
    chain = sweep.chain
    target = _target(chain, goal, tolerance)
    weights = chain.radii + ROT_WEIGHT
    centres, half = halve_boxes(np.zeros((1, chain.dof)), np.full((1, chain.dof), math.pi), weights, FIRST_SPLITS)
    used = 0
    while True:
        used += len(centres)
        excess, _, box_weights = measure_boxes(chain.steps, centres, half, target)
        keep = excess <= 0
        if keep.any():
            hit = certain_collision(sweep, obstacles, centres[keep], half[keep], margin)
            keep[np.flatnonzero(keep)[hit]] = False
        if not keep.any():
            return used
        if keep.mean() > GIVE_UP or used + int(keep.sum()) * 2**SPLITS > budget:
            return None
        centres, half = halve_boxes(centres[keep], half[keep], box_weights[keep], SPLITS)


def sweep_reason(boxes: int) -> str:
    """The reason the search gives for a goal :func:`sweep_proof` proved out of reach free of the obstacles."""
    return (
        "every configuration within its tolerance collides with an obstacle (proven over"
        f" {boxes} boxes of joint angles)"
    )


def collision_refusal(c: Candidate, goal: PoseGoal, q: list[float] | None, index: int | None = None) -> str | None:
    """Why no configuration of the candidate's robot reaches ``goal`` free of the task's obstacle boxes (proven:
    :func:`sweep_proof` within ``FilterConfig.proof_budget`` boxes), or None (undecided, or not tried). Tried only
    where the kinematic IK's configuration ``q`` collides (else the task-aware IK, seeded with it, succeeds at once),
    and not again for a goal (``index``) it was tried for on this robot (:func:`likely_refusal`)."""
    ctx = c.ctx
    if not ctx.config.proof_budget or q is None or index in c.swept:
        return None
    if ctx.obstacle_boxes is None:
        ctx.obstacle_boxes = obstacle_boxes(ctx.task)
    if not len(ctx.obstacle_boxes):
        return None
    robot = c.require_robot()
    if not robot.has_collision(np.asarray(q, dtype=float), ctx.task, ctx.margin):
        return None
    return _swept(c, index, goal, early=False)


def likely_refusal(c: Candidate, index: int, goal: PoseGoal) -> str | None:
    """Why :func:`sweep_proof` proves ``goal`` (the ``index``-th) out of reach free of the obstacles for the
    candidate's robot, tried only where it proved so for other chains of its family (``candidate.family``) more
    often than it failed here, and where the filters stop at a failure; else None. Run before the goal's IK: a chain
    refused later by the same proof is refused now, without its IK runs (the verdict is the same: the proof is
    sound, and the ``ik_task`` filter runs it at that goal where the kinematic IK's configuration collides, as every
    one within the tolerance does)."""
    ctx = c.ctx
    if not ctx.sweeps or not ctx.config.stop_early or not ctx.config.proof_budget or index in c.swept:
        return None
    record = ctx.sweeps.get((index, c.family))
    return _swept(c, index, goal, early=True) if record is not None and record[0] > record[1] else None


def early_refusal(c: Candidate) -> tuple[int, str] | None:
    """The first goal (index, task order) and the reason :func:`sweep_proof` proves it out of reach free of the
    obstacles for the candidate's chain, from its modules alone (:func:`~.arm_body.module_sweep`: no robot built),
    tried where :func:`likely_refusal` would try it (the family's record); None if none is proven. The ``family``
    filter runs it after the family's reach proofs: a chain the ``ik`` filter would refuse so after its robot's
    build and the IK of the goals before is refused at once (the same proof on the same body: the verdict is the
    same; a chain the IK would refuse at an earlier goal is refused at this one instead)."""
    ctx = c.ctx
    if not ctx.sweeps or not ctx.config.stop_early or not ctx.config.proof_budget:
        return None
    for k, g in enumerate(ctx.goals):
        record = ctx.sweeps.get((k, c.family))
        if record is None or record[0] <= record[1] or k in c.swept:
            continue
        if candidate_sweep(c, build=False) is None:
            return None  # not a chain of plain modules: left to the ik filter, once the robot is built
        reason = _swept(c, k, g, early=True)
        if reason is not None:
            return k, reason
    return None


def candidate_sweep(c: Candidate, build: bool = True) -> ArmSweep | None:
    """The :class:`ArmSweep` of the candidate's chain, made once: from its modules where they are a plain chain
    (:func:`~.arm_body.module_sweep`, no robot needed), else from its robot (:func:`arm_sweep`; built now, unless
    ``build`` is off: then None)."""
    if c.sweep is None:
        made = module_sweep(c.require_assembly(), c.ctx.placement)
        c.sweep = made if made is not None else False
    if c.sweep is not False:
        return c.sweep
    return arm_sweep(c.require_robot()) if build or c.robot is not None else None


def _swept(c: Candidate, index: int | None, goal: PoseGoal, early: bool) -> str | None:
    """:func:`sweep_proof` for the candidate's chain and ``goal``, kept in the family's record (proven, or tried
    early in vain)."""
    ctx = c.ctx
    if index is not None:
        c.swept.add(index)
    sweep = candidate_sweep(c)
    if sweep is None:
        return None
    boxes = sweep_proof(sweep, ctx.obstacle_boxes, goal.world, goal.pose.tolerance, ctx.margin, ctx.config.proof_budget)
    if index is not None and c.family is not None and (boxes is not None or early):
        record = ctx.sweeps.setdefault((index, c.family), [0, 0])
        record[0 if boxes is not None else 1] += 1
    return None if boxes is None else sweep_reason(boxes)
