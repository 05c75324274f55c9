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
compiled: :mod:`.sweep_bound`.

Two shortcuts, the same verdicts: where the family filter found a configuration within the goal's slacks (a witness,
:mod:`.family_proof`) that the body's balls do not refuse on their own, no box holding it is ever refused, and the
proof ends undecided at once (on ``obstacles_4`` 48 such proofs took 4-5 ms each to give up). And a chain of a
proven one's family with the same modules up to the body its proof needed (:class:`SweepStarts`; ``obstacles_4``:
the chains of one head with another extension before the gripper) starts from that proof's boxes: those refused by
the body are refused by the same balls at the same places, the others with ``excess - d`` to spare (``d`` the family
certificates' distance); only the rest are measured again. Every proof's boxes are kept so, a started one's too
(under the modules its own body and its start's needed: the next chain starts from the nearest, ``obstacles_4``:
``d`` 0.10 -> 0.05 m); a chain of the family with no such proof of its modules starts from the family's nearest
proof with the boxes its body refused (excess :data:`~.sweep_fused.BODY`) measured again: those refused by
position or by rotation alone (inf) hold for the whole family (``obstacles_4``: 64 proofs from the whole turn ->
2; the sweep proofs' boxes 215,000 -> 113,000). Property tests:
``tests/test_sweep_proof.py`` (a configuration the collision checker calls free is never inside a refused box;
a pose the arm reaches free of the obstacles is never refused).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import coal
import numpy as np

from timor_core.search.filtering.arm_body import ModuleSweeps, module_sweep, robot_sweep
from timor_core.search.filtering.family_proof import Cut
from timor_core.search.filtering.proof_chain import PoseChain
from timor_core.search.filtering.proof_kernel import halve_boxes, measure_boxes
from timor_core.search.filtering.proof_numpy import BoxGoal
from timor_core.search.filtering.reach_proof import ROT_WEIGHT, box_goal
from timor_core.search.filtering.sweep_bound import (
    PENETRATION,
    ArmSweep,
    ObstacleBoxes,
    certain_collision,
    certain_collision_numpy,
    fixed_collision,
)
from timor_core.search.filtering.sweep_fused import BODY, fused_levels, sweep_kernel
from timor_core.search.filtering.sweep_starts import Leaves, SweepStarts

if TYPE_CHECKING:
    from timor_core.search.filtering.filter_state import Candidate, PoseGoal

__all__ = [
    "ArmSweep", "ObstacleBoxes", "PENETRATION", "arm_sweep", "body_modules", "candidate_sweep", "certain_collision",
    "certain_collision_numpy", "collision_refusal", "early_refusal", "fixed_collision", "likely_refusal",
    "obstacle_boxes", "sweep_certificate", "sweep_proof", "sweep_reason", "witness_ends", "Leaves", "SweepProof",
    "SweepStarts",
]  # fmt: skip

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
    """The chain's :class:`BoxGoal`: the goal's and tolerance's terms made once (:func:`~.reach_proof.goal_terms`),
    the chain's last joint's direction and distance from the TCP per chain."""
    return box_goal(chain, goal, tolerance, near=(0.0, 0.0))


def sweep_proof(
    sweep: ArmSweep, obstacles: ObstacleBoxes, goal: np.ndarray, tolerance: Any, **options: Any
) -> int | None:
    """The number of boxes of joint angles that proved every configuration putting the TCP within ``tolerance`` of
    ``goal`` (4x4, world) in collision with an obstacle box (see the module docstring); None: undecided.
    ``options``: :func:`sweep_certificate`'s ``margin`` and ``budget``."""
    proof = sweep_certificate(sweep, obstacles, goal, tolerance, **options)
    return None if proof is None else proof.boxes


@dataclass(frozen=True)
class SweepProof:
    """A :func:`sweep_certificate`: ``boxes`` evaluated; ``link``: the boxes refused by the body were refused by its
    balls on the chain's links up to this one (-1: the body before the first joint; the same body, at the same
    places, for every chain with the same modules up to the module of joint ``link + 1``); ``leaves``: the boxes
    refused, where asked for."""

    boxes: int
    link: int
    leaves: Leaves | None = None


def sweep_certificate(
    sweep: ArmSweep,
    obstacles: ObstacleBoxes,
    goal: np.ndarray,
    tolerance: Any,
    margin: float = 0.0,
    budget: int = BUDGET,
    witness: np.ndarray | None = None,
    start: tuple[Leaves, float] | None = None,
    leaves: bool = False,
) -> SweepProof | None:
    """:func:`sweep_proof` with what it proved (a :class:`SweepProof`, with its :class:`Leaves` if ``leaves``); None:
    undecided. ``witness``: a configuration (n,) within the goal's slacks less a witness's allowances
    (:func:`~.reach_proof.reaching`): where the body does not refuse it alone, no box holding it is ever refused
    (every bound is sound), so the proof ends undecided at once, as it would have later. ``start``: the
    :class:`Leaves` of a proof for a chain of the same family (with the same modules up to its ``link``'s, or with
    the boxes its body refused open: :meth:`SweepStarts.near`), and ``d``: this chain's TCP and last joint origin stay
    within ``d`` of that one's at every configuration (the same orientations): the proof starts from those boxes,
    each with ``excess - d`` to spare (measured again where that is not above 0), instead of from the whole turn."""
    if _fixed(sweep, obstacles, margin):
        return SweepProof(1, -1)
    if not len(obstacles) or (witness is not None and _free(sweep, obstacles, witness, margin)):
        return None
    target, kernel, steps = _target(sweep.chain, goal, tolerance), sweep_kernel(), (FIRST_SPLITS, SPLITS, GIVE_UP)
    done: tuple | Literal[False] | None = False  # (no kernel built: the numpy levels)
    if kernel is not None:
        done = fused_levels(kernel, sweep, obstacles, target, (margin, budget), start, (*steps, leaves))
    if done is False:  # (or the fused call's buffers were too small)
        return _levels(sweep, obstacles, target, margin, budget, start, leaves)
    if done is None or not leaves:
        return None if done is None else SweepProof(done[0], sweep.chain.dof - 1)
    used, (centres, half, weights, excess, _), link = done
    return SweepProof(used, link, Leaves(centres, half, weights, excess))


_FIXED: dict[tuple[int, int, int, float], tuple[Any, Any, ObstacleBoxes, bool]] = {}


def _fixed(sweep: ArmSweep, obstacles: ObstacleBoxes, margin: float) -> bool:
    """:func:`fixed_collision`, once per body before the first joint (its arrays are those of every chain with the
    same first modules, :class:`~.arm_body.ModuleSweeps`; held with the verdict, so that their ids are not reused)."""
    key = (id(sweep.fixed), id(sweep.fixed_rho), id(obstacles), margin)
    hit = _FIXED.get(key)
    if hit is None or hit[0] is not sweep.fixed or hit[1] is not sweep.fixed_rho or hit[2] is not obstacles:
        if len(_FIXED) > 4096:
            _FIXED.clear()
        hit = _FIXED[key] = (sweep.fixed, sweep.fixed_rho, obstacles, fixed_collision(sweep, obstacles, margin))
    return hit[3]


def _levels(
    sweep: ArmSweep,
    obstacles: ObstacleBoxes,
    target: BoxGoal,
    margin: float,
    budget: int,
    start: tuple[Leaves, float] | None,
    leaves: bool,
) -> SweepProof | None:
    """:func:`sweep_certificate`'s levels in numpy, a kernel call per step (what :mod:`.sweep_fused` does in one
    compiled call)."""
    chain = sweep.chain
    if start is None:
        weights = chain.radii + ROT_WEIGHT
        centres, half = halve_boxes(np.zeros((1, chain.dof)), np.full((1, chain.dof), math.pi), weights, FIRST_SPLITS)
        used = len(centres)
        excess, _, weights = measure_boxes(chain.steps, centres, half, target)
    else:
        centres, half, excess, weights, used = _started(chain, target, *start)
    body: list = []
    refused: list = []
    while True:
        keep = excess <= 0
        if keep.any():
            tried = np.flatnonzero(keep)
            hit = tried[certain_collision(sweep, obstacles, centres[tried], half[tried], margin)]
            keep[hit] = False
            body.append((centres[hit], half[hit]))
            excess[hit] = BODY
        if leaves:
            refused.append((centres[~keep], half[~keep], weights[~keep], excess[~keep]))
        if not keep.any():
            if not leaves:
                return SweepProof(used, chain.dof - 1)
            kept = Leaves(*(np.concatenate([r[i] for r in refused]) for i in range(4)))
            return SweepProof(used, _body_link(sweep, obstacles, body, margin), kept)
        if keep.mean() > GIVE_UP or used + int(keep.sum()) * 2**SPLITS > budget:
            return None
        centres, half = halve_boxes(centres[keep], half[keep], weights[keep], SPLITS)
        used += len(centres)
        excess, _, weights = measure_boxes(chain.steps, centres, half, target)


def witness_ends(sweep: ArmSweep, obstacles: ObstacleBoxes, witness: np.ndarray, margin: float) -> bool:
    """Whether :func:`sweep_certificate` with ``witness`` ends undecided at once, from any start: the body before
    the first joint refuses nothing and the body's balls leave the witness unrefused (:func:`_free`); where not,
    the witness ends nothing, and the certificate without it is the same."""
    return bool(len(obstacles)) and not _fixed(sweep, obstacles, margin) and _free(sweep, obstacles, witness, margin)


def _free(sweep: ArmSweep, obstacles: ObstacleBoxes, q: np.ndarray, margin: float) -> bool:
    """Whether the body's balls leave configuration ``q`` unrefused even with ``WITNESS_SLACK`` more depth allowed
    (a box holding it is refused only where ``q`` alone is: the bound only grows with the box; the slack covers
    rounding)."""
    q = np.asarray(q, dtype=float).reshape(1, -1)
    if q.shape[1] != sweep.chain.dof:
        return False
    return not bool(certain_collision(sweep, obstacles, q, np.zeros_like(q), margin + WITNESS_SLACK)[0])


def _started(chain: PoseChain, target: BoxGoal, start: Leaves, d: float) -> tuple:
    """A proof's first level from another chain's :class:`Leaves` at distance ``d``: the boxes, their excess
    (``excess - d``, measured on this chain where that is not above 0), their weights, and the boxes measured."""
    excess, weights = start.excess - d, start.weights.copy()
    open_ = excess <= 0
    if open_.any():
        measured, _, measured_weights = measure_boxes(chain.steps, start.centres[open_], start.half[open_], target)
        excess[open_] = np.maximum(measured, excess[open_])
        weights[open_] = measured_weights
    return start.centres, start.half, excess, weights, int(open_.sum())


def _body_link(sweep: ArmSweep, obstacles: ObstacleBoxes, body: list, margin: float) -> int:
    """The least link such that the balls on the links up to it refuse every box of ``body`` (centres, half-widths)
    that all the balls refused (a subset of the balls refuses a subset of the boxes: the last link always does)."""
    centres = np.concatenate([b[0] for b in body]) if body else np.empty((0, sweep.chain.dof))
    half = np.concatenate([b[1] for b in body]) if body else centres
    if not len(centres):
        return -1
    last = sweep.chain.dof - 1
    for link in range(last):
        on = sweep.links <= link
        part = dataclasses.replace(sweep, points=sweep.points[on], links=sweep.links[on], rho=sweep.rho[on])
        left = ~certain_collision(part, obstacles, centres, half, margin)
        centres, half = centres[left], half[left]
        if not len(centres):
            return link
    return last


WITNESS_SLACK = 1e-9  # m: a witness is tried against the body with this much more depth allowed (rounding)


def sweep_reason(boxes: int, started: bool = False) -> str:
    """The reason the search gives for a goal :func:`sweep_proof` proved out of reach free of the obstacles
    (``started``: from the boxes of a proof for a chain near it, :func:`sweep_certificate`'s ``start``)."""
    near = " from a proof for a chain of its family" if started else ""
    return (
        "every configuration within its tolerance collides with an obstacle (proven over"
        f" {boxes} boxes of joint angles{near})"
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


def early_refusal(c: Candidate, cut: Cut | None = None) -> tuple[int, str] | None:
    """The first goal (index, task order) and the reason :func:`sweep_proof` proves it out of reach free of the
    obstacles for the candidate's chain, from its modules alone (:func:`~.arm_body.module_sweep`: no robot built),
    tried where :func:`likely_refusal` would try it (the family's record); None if none is proven. The ``family``
    filter runs it after the family's reach proofs: a chain the ``ik`` filter would refuse so after its robot's
    build and the IK of the goals before is refused at once (the same proof on the same body: the verdict is the
    same; a chain the IK would refuse at an earlier goal is refused at this one instead). ``cut``: the chain's
    :class:`~.family_proof.Cut`; with it the proof starts from the boxes of a proof for a chain of its family
    (:class:`SweepStarts`), and keeps its own boxes."""
    ctx = c.ctx
    if not ctx.sweeps or not ctx.config.stop_early or not ctx.config.proof_budget:
        return None
    for k, g in enumerate(ctx.goals):
        record = ctx.sweeps.get((k, c.family))
        if record is None or record[0] <= record[1] or k in c.swept:
            continue
        if candidate_sweep(c, build=False) is None:
            return None  # not a chain of plain modules: left to the ik filter, once the robot is built
        reason = _swept(c, k, g, early=True, cut=cut)
        if reason is not None:
            return k, reason
    return None


def candidate_sweep(c: Candidate, build: bool = True) -> ArmSweep | None:
    """The :class:`ArmSweep` of the candidate's chain, made once: from its modules where they are a plain chain
    (:func:`~.arm_body.module_sweep`, no robot needed), else from its robot (:func:`arm_sweep`; built now, unless
    ``build`` is off: then None)."""
    if c.sweep is None:
        if c.join is None:
            made = module_sweep(c.require_assembly(), c.ctx.placement)
        else:  # (the modules' walk and balls per prefix, no assembly built: arm_body.ModuleSweeps)
            if c.ctx.module_sweeps is None:
                c.ctx.module_sweeps = ModuleSweeps(c.ctx.db, c.ctx.placement)
            made = c.ctx.module_sweeps.sweep(c.ids, c.join)
        c.sweep = made if made is not None else False
    if c.sweep is not False:
        return c.sweep
    return arm_sweep(c.require_robot()) if build or c.robot is not None else None


def _swept(c: Candidate, index: int | None, goal: PoseGoal, early: bool, cut: Cut | None = None) -> str | None:
    """:func:`sweep_proof` for the candidate's chain and ``goal``, kept in the family's record (proven, or tried
    early in vain); ended at once where the family filter found a configuration reaching the goal that the body
    does not refuse (``candidate.witnesses``); with the chain's ``cut``, from the kept boxes of a proof of a chain
    near it where there is one (:class:`SweepStarts`)."""
    ctx = c.ctx
    if index is not None:
        c.swept.add(index)
    sweep = candidate_sweep(c)
    if sweep is None:
        return None
    witness = None if index is None else c.witnesses.get(index)
    prove = functools.partial(sweep_certificate, sweep, ctx.obstacle_boxes, goal.world, goal.pose.tolerance,
                              ctx.margin, ctx.config.proof_budget)  # fmt: skip
    if witness is not None and witness_ends(sweep, ctx.obstacle_boxes, witness, ctx.margin):
        proof, started = None, False  # (what every sweep_certificate with the witness gives, started or not)
    elif cut is None or index is None or c.sweep is not sweep:
        proof, started = prove(), False  # (the witness checked once: refused by the body, it would end nothing)
    else:
        proof, started = _near_or_whole(c, sweep, index, cut, prove)
    if index is not None and c.family is not None and (proof is not None or early):
        record = ctx.sweeps.setdefault((index, c.family), [0, 0])
        record[0 if proof is not None else 1] += 1
    return None if proof is None else sweep_reason(proof.boxes, started)


def _near_or_whole(
    c: Candidate, sweep: ArmSweep, index: int, cut: Cut, prove: Callable[..., SweepProof | None]
) -> tuple[SweepProof | None, bool]:
    """``prove``'s proof started from the kept boxes of a chain near the candidate's (:class:`SweepStarts`), else
    from the whole turn; its boxes kept either way; and whether it was started."""
    starts = c.ctx.sweep_starts
    if starts is None:
        starts = c.ctx.sweep_starts = SweepStarts()
    near = starts.near(index, cut, c.ids)
    if near is not None and (proof := prove(start=near[:2], leaves=True)) is not None:
        _keep(c, sweep, index, cut, proof, near[2])
        return proof, True
    proof = prove(leaves=True)
    if proof is not None:
        _keep(c, sweep, index, cut, proof, 0)
    return proof, False


def _keep(c: Candidate, sweep: ArmSweep, index: int, cut: Cut, proof: SweepProof, shared: int) -> None:
    """Keep a proof's boxes for the chains near the candidate's (:class:`SweepStarts`), under the modules its body
    needed and the ``shared`` ones of the proof it started from (whose body refused some of its boxes)."""
    end = body_modules(c.require_join().modules, sweep, proof.link)
    if end is not None and proof.leaves is not None:
        c.ctx.sweep_starts.add(index, cut, c.ids, max(end, shared - 1), proof.leaves)


def body_modules(modules: Sequence[Any], sweep: ArmSweep, link: int) -> int | None:
    """The index of the last of a serial chain's ``modules`` (of :func:`~.arm_body.module_sweep`'s ``sweep``) whose
    body lies on the chain's links up to ``link`` (the module of the chain's joint ``link + 1``: its body before the
    joint is on ``link``); None: all of them (or the modules do not match the sweep's joints)."""
    joints = [b for b, m in enumerate(modules) if m.joints]
    if len(joints) != len(sweep.groups) or link + 1 >= sweep.chain.dof:
        return None
    return joints[int(np.flatnonzero(sweep.groups == link + 1)[0])]
