"""A proof that no configuration of a robot puts its TCP within a goal's tolerance: branch and bound over the joint
angles, before the IK is run.

Why: on tasks other than the user study most of the search's time went into kinematic IK runs that fail (2-9 ms
each): light 3-joint robots whose TCP misses a goal by 20 cm at the goal's orientation, which the distance bounds
of :mod:`timor_core.kinematics.reach` cannot exclude because they ignore the orientation. An IK failure proves
nothing; this does. For a serial chain of revolute joints (origins ``o_i``, unit axes ``a_i`` at q = 0), the TCP
pose is the product of exponentials ``T(q) = E_1(q_1) ... E_n(q_n) T(0)``, and over a box of joint angles
(centre ``c``, half-widths ``h``):

* **the sequential bound:** go from ``c`` to any ``q`` of the box by turning joint 1, then 2, ...: while joint i
  turns, the joints after it are still at ``c``'s angles, so the TCP keeps ``rho_i(c)``, its distance from joint i's
  axis at ``c`` (the joints before i move axis and TCP together), and moves by the chord ``2 rho_i(c) sin(|d|/2)``:
  in all at most ``sum_i rho_i(c) 2 sin(h_i / 2)`` from ``p(c)``. Likewise the last joint's origin ``w`` (the
  wrist: joint n does not move it);
* **to first order:** step i moves the TCP by ``d J_i`` (``J_i = z_i x (p - o_i)`` at ``c``) plus a rest of at most
  ``rho_i(c) (h - sin h + 1 - cos h + 2 sin(h/2) sum_{j<i} h_j)`` (the arc leaving its tangent, and the earlier
  steps turning the tangent by at most the sum of their angles); so along the miss's direction ``u`` the TCP
  comes at most ``sum_i h_i |u . J_i|`` plus the rests closer to the goal. The same for each TCP axis ``t_k``
  against the goal's ``g_k`` (``g_k . t_k >= cos theta`` within a rotation tolerance ``theta``): ``g_k . t_k``
  grows by at most ``sum_i h_i |z_i . (t_k x g_k)|`` plus the rests times ``|z_i x t_k|``;
* the TCP's rotation differs from ``R(c)`` by an angle of at most ``sum_i h_i`` (the rotation angle is a metric);
* where the TCP is within the goal's rotation tolerance ``theta`` and position slack ``s``, ``w = p + R d``
  (``d`` the wrist seen from the TCP, fixed) lies within ``s`` of the spherical cap ``g + v``, ``|v| = |d|``, ``v``
  within ``theta`` of the goal's ``R_g d``.

Joints on one line with the joint before (``J I_50 J`` in robco_like) are merged into it first: over whole turns
they add nothing. A box whose centre violates one of these by more than its bound holds no solution; the rest are
halved across their widest sides, level by level, until no box is left (proven: the IK cannot succeed, whatever its
seed or effort) or the budget is spent or most boxes survive a level (undecided: the IK decides as before).
In its first levels a proof also looks for a configuration within the slacks (:func:`~.proof_kernel.reach_witness`,
a compiled descent from the box centres nearest the goal): where one is found the proof ends undecided at once, as
it would have later (the box holding it is never refused).
Revolute joints are searched over a whole turn, so joint limits never matter (the proof holds for any). The bounds
only ever overestimate how far a box can move, so a pose the robot reaches is never refused (property test over
random robots, placements, configurations and goals within four kinds of tolerance, ``tests/test_reach_proof.py``).
"""

from __future__ import annotations

import functools
import itertools
import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from timor_core.kinematics.reach import position_slack
from timor_core.search.filtering.box_bounds import trig_table
from timor_core.search.filtering.proof_chain import (
    PoseChain,
    chain_from_frames,
    chain_of_steps,
    chain_poses,
    pose_chain,
)
from timor_core.search.filtering.proof_fused import OVERFLOW, PROVEN, WITNESS, fused_kernel
from timor_core.search.filtering.proof_kernel import (
    ROT_SCORE,
    WITNESS_ANGLE_EPS,
    WITNESS_EPS,
    WITNESS_STARTS,
    WITNESS_STEPS,
    halve_boxes,
    measure_boxes,
    reach_witness,
    witness_from,
)
from timor_core.search.filtering.proof_numpy import BoxGoal
from timor_core.search.filtering.widening import SPLITS, Boxes, Levels, widened

__all__ = [
    "BUDGET",
    "PoseChain",
    "box_excess",
    "box_goal",
    "Boxes",
    "Proof",
    "pose_proof",
    "chain_from_frames",
    "chain_of_steps",
    "chain_poses",
    "GoalTerms",
    "goal_terms",
    "pose_chain",
    "proof_reason",
    "reaches",
    "reaching",
    "rotation_slack",
    "unreachable_pose",
]

BUDGET = 4096
"""Boxes evaluated per goal at most before the proof gives up (undecided: the IK decides)."""
EPS = 1e-8  # m: rounding (and merging joints within COAXIAL) must never make a reachable pose look out of reach
ANGLE_EPS = 1e-6  # rad: the same for angles (arccos near 0 is accurate to ~1e-8 only)
FIRST_SPLITS = 8  # the whole turn of every joint cut into 2**8 boxes before the first evaluation (7 left 65 more of
# obstacle_middle's chains undecided, each a failing IK)
NEAR, NEAR_ANGLE = 0.005, 0.05  # m, rad: a box centre this close to the goal ends the proof (undecided)
WITNESS_LEVELS = 3  # the first levels look for a configuration reaching the goal (then it ends undecided at once: on
# obstacles_4 such proofs ran 6-12 levels, 1,000-4,000 boxes, before a box centre came within NEAR)
GIVE_UP = 0.9  # undecided when more than this fraction of a level's boxes survive (a reachable goal, mostly)
ROT_WEIGHT = 0.01  # m per rad: added to a joint's reach when choosing the side to cut (a joint turning the TCP about
# itself is cut too, at last; 0.01 against 0.1: obstacle_middle's proofs 15.7 -> 13.1 s CPU, 32 more chains decided)


def proof_reason(boxes: int) -> str:
    """The reason the search gives for a goal :func:`unreachable_pose` proved out of reach."""
    return f"no configuration reaches it within its tolerance (proven over {boxes} boxes of joint angles)"


def rotation_slack(tolerance: Any) -> float:
    """The largest rotation angle (rad) a tolerance allows between the TCP and the goal (pi: it bounds none)."""
    parts = {p.projection: p.interval for p in getattr(tolerance, "parts", ())}
    if "Theta_R" in parts:
        return min(math.pi, float(parts["Theta_R"].high))
    if all(f"N_{a}" in parts for a in "xyz"):  # the rotation vector's components: its length is the angle
        corner = [max(abs(parts[f"N_{a}"].low), abs(parts[f"N_{a}"].high)) for a in "xyz"]
        return min(math.pi, math.sqrt(sum(v * v for v in corner)))
    return math.pi


@dataclass(frozen=True)
class Proof:
    """A goal proven out of reach: ``boxes`` evaluated, and ``margin`` (m): every box was refused with more than this
    to spare in position (or by rotation alone), so the same boxes refuse any chain whose TCP and last joint origin
    stay within less than ``margin`` of this one's at every configuration, at the same orientations
    (:mod:`.family_proof`)."""

    boxes: int
    margin: float


def unreachable_pose(chain: PoseChain, goal: np.ndarray, tolerance: Any, budget: int = BUDGET) -> int | None:
    """The number of boxes that proved that no configuration puts the TCP within ``tolerance`` of ``goal`` (a 4x4
    world pose); None (undecided) if the budget ran out first or a box centre comes within the slack of the goal."""
    proof = pose_proof(chain, goal, tolerance, budget)
    return None if proof is None else proof.boxes


def _measure(
    chain: PoseChain, goal: BoxGoal, centres: np.ndarray, half: np.ndarray, upper: list[float] | None = None
) -> tuple[np.ndarray, bool, np.ndarray]:
    """Per box, by how much (m) no configuration in it puts the TCP within the slack (inf: not at the goal's
    orientation; <= 0: maybe), whether a box centre is nearly at the goal (then the proof is left to the IK), and
    per box and joint how far turning it moves the TCP per radian at the centre, plus ``ROT_WEIGHT``: the side to
    cut a box across next (the one its bound loses most on). The bounds of the module docstring
    (:func:`~.proof_kernel.measure_boxes`: in numpy, then compiled). ``upper`` (one value): lowered to the least
    miss less the slack of a box centre within the goal's rotation slack (no proof's margin can exceed it)."""
    return Levels((), upper, 0.0).measure(chain.steps, goal, centres, half)


class GoalTerms(NamedTuple):
    """What a goal (4x4) and tolerance give every proof of it (:func:`goal_terms`; a tuple, so that the proofs'
    callers unpack it at a tuple's cost)."""

    tolerance: Any
    """The tolerance (held: its id keys the cache, and tolerances are frozen)."""
    pos: np.ndarray
    """The goal's position (3,), C order as the kernels take it."""
    axes: np.ndarray
    """The goal's axes as rows (3, 3): its rotation transposed, C order."""
    turn: np.ndarray
    """The goal's rotation (3, 3), C order."""
    slack: float
    """The position slack plus ``EPS`` (m)."""
    theta: float
    """The rotation slack plus ``ANGLE_EPS`` (rad)."""


_GOALS: dict[tuple[bytes, int], GoalTerms] = {}


def goal_terms(goal: np.ndarray, tolerance: Any) -> GoalTerms:
    """What a goal (4x4) and tolerance give every proof of it (:class:`GoalTerms`), made once (keyed by the goal's
    values, not its array: a goal moved in place between two searches is a new goal; and by the tolerance, held so
    that its id is not reused: tolerances are frozen)."""
    g = np.asarray(goal, dtype=float)
    key = (g.tobytes(), id(tolerance))
    hit = _GOALS.get(key)
    if hit is None or hit.tolerance is not tolerance:
        if len(_GOALS) > 4096:
            _GOALS.clear()
        pos, axes, turn = (np.array(a, order="C") for a in (g[:3, 3], g[:3, :3].T, g[:3, :3]))
        slack, theta = position_slack(tolerance) + EPS, rotation_slack(tolerance) + ANGLE_EPS
        hit = _GOALS[key] = GoalTerms(tolerance, pos, axes, turn, slack, theta)
    return hit


def box_goal(
    chain: PoseChain, goal: np.ndarray, tolerance: Any, extra: float = 0.0, near: tuple = (NEAR, NEAR_ANGLE)
) -> BoxGoal:
    """The chain's :class:`BoxGoal` (``extra``: more position slack; ``near``: the distances ending a proof)."""
    _, pos, axes, turn, slack, theta = goal_terms(goal, tolerance)
    direction, length = _direction(turn, chain.offset)
    return BoxGoal(pos, axes, slack + extra, theta, direction, length, near, ROT_WEIGHT)


def _direction(turn: np.ndarray, offset: np.ndarray) -> tuple[np.ndarray, float]:
    """:class:`BoxGoal`'s ``direction`` and ``length``: the wrist seen from the TCP (``offset``) turned by the goal's
    rotation ``turn``, as a unit vector, and its length."""
    flat = offset.ravel(order="K")
    length = math.sqrt(flat.dot(flat))  # (np.linalg.norm's value: the root of the same dot, without its checks)
    return ((turn @ offset) / length if length > 0 else np.zeros(3)), length


def reaches(steps: tuple[np.ndarray, np.ndarray], configurations: np.ndarray, goal: np.ndarray, tolerance: Any) -> bool:
    """Whether a witness's descent (:func:`~.proof_kernel.reach_witness`) from one of ``configurations`` (K, n) of
    the chain ``T = A_0 Rz(q_1) A_1 ... Rz(q_n) A_n`` (``steps``: rotations (n + 1, 3, 3), translations (n + 1, 3))
    finds a configuration putting the TCP within the proof's slacks of ``goal`` (4x4) less a witness's allowances:
    then, as for a witness of :func:`pose_proof`, no proof of this chain and goal can refuse it, nor any sound
    reach bound. False where the compiled kernels do not run (it only saves time)."""
    return reaching(steps, configurations, goal, tolerance) is not None


def reaching(
    steps: tuple[np.ndarray, np.ndarray], configurations: np.ndarray, goal: np.ndarray, tolerance: Any
) -> np.ndarray | None:
    """The configuration (n,) :func:`reaches` finds, or None."""
    _, pos, axes, _, slack, theta = goal_terms(goal, tolerance)
    return witness_from(steps, configurations, pos, axes, slack, theta)


def box_excess(
    chain: PoseChain,
    goal: np.ndarray,
    tolerance: Any,
    centres: np.ndarray,
    half: np.ndarray,
    upper: np.ndarray | None = None,
) -> np.ndarray:
    """Per box of joint angles (centres and half-widths, (M, n)), by how much (m) no configuration in it puts the
    TCP within ``tolerance`` of ``goal``: > 0 refused (inf: by orientation alone), <= 0 maybe. What the proof cuts
    with, public for the tests that check it against the chain's own poses; ``upper`` (M,), where given, gets per
    box what the widening reads (:func:`~.proof_kernel.measure_boxes`)."""
    target, centres, half = box_goal(chain, goal, tolerance), np.atleast_2d(centres), np.atleast_2d(half)
    return measure_boxes(chain.steps, centres, half, target, upper)[0]


def pose_proof(
    chain: PoseChain,
    goal: np.ndarray,
    tolerance: Any,
    budget: int = BUDGET,
    extra: float = 0.0,
    widen: float = 0.0,
    widen_budget: int = BUDGET,
    witnesses: list[np.ndarray] | None = None,
    start: tuple[Boxes, float] | None = None,
    kept: list[Boxes] | None = None,
    levels: Sequence[float] = (),
) -> Proof | None:
    """:func:`unreachable_pose` with the proof's margin (see :class:`Proof`); None if undecided. ``extra`` (m)
    widens the position slack: a proof then has a margin above ``extra`` (included in the margin it gives).
    ``widen`` (m): once proven, the boxes refused with less than this to spare are cut further (up to
    ``widen_budget`` boxes more) for a larger margin; the proof itself does not change. A witness that ends the
    proof (a configuration within the slacks, :func:`~.proof_kernel.reach_witness`) is appended to ``witnesses``.
    ``start`` (a :class:`Boxes` of a proven chain and ``d``, less than its ``floor``: this chain's TCP stays within
    ``d`` of that one's at every configuration, at the same orientations): the proof starts from those boxes, with
    ``excess - d`` as each one's bound, instead of from the whole turn. ``kept``: a proof's :class:`Boxes` is
    appended to it. ``levels`` (m, ascending): the margins worth widening to (:class:`~.widening.Levels`)."""
    upper = [math.inf] if levels else None  # (Levels.upper)
    loose = math.inf if start is None else start[0].floor - start[1]
    spend, aims = (budget, min(widen, loose), widen_budget), (levels, upper, extra)  # (no margin exceeds ``loose``)
    kernel = fused_kernel()
    if kernel is not None:
        fused = _fused(kernel, chain, goal_terms(goal, tolerance), start, spend, aims, witnesses)
        if fused is not False:
            if isinstance(fused, tuple) and kept is not None:
                kept.append(fused[1])
            return fused[0] if isinstance(fused, tuple) else None
    target = box_goal(chain, goal, tolerance, extra)  # (no compiled kernel, or its buffers were too small)
    return _levels(chain, target, _first(chain, target, start, upper), spend, aims, (witnesses, kept))


def _first(chain: PoseChain, target: BoxGoal, start: tuple[Boxes, float] | None, upper: list[float] | None) -> tuple:
    """:func:`pose_proof`'s first level in numpy (what the compiled call does first): the whole turn cut
    :data:`FIRST_SPLITS` times and measured, or the boxes of ``start`` (:func:`_started`); as :func:`_levels` takes
    it."""
    if start is not None:
        return (*_started(chain, target, *start, upper), True)
    weights = chain.radii + ROT_WEIGHT
    centres, half = halve_boxes(np.zeros((1, chain.dof)), np.full((1, chain.dof), math.pi), weights, FIRST_SPLITS)
    excess, near, box_weights = _measure(chain, target, centres, half, upper)
    return centres, half, excess, box_weights, bool(near), len(centres), math.inf, False


def _levels(chain: PoseChain, target: BoxGoal, state: tuple, spend: tuple, aims: tuple, out: tuple) -> Proof | None:
    """:func:`pose_proof`'s levels from the first measured one (``state``: centres, half, excess, weights, near, boxes
    used, loose, started; ``spend``: budget, widen, widen budget; ``aims``: levels, upper, extra; ``out``: the
    witnesses and kept boxes), in numpy (what :mod:`.proof_fused` does in one compiled call)."""
    centres, half, excess, box_weights, near, used, loose, started = state
    (budget, widen, widen_budget), (levels, upper, extra), (witnesses, kept) = spend, aims, out
    tight: list = []
    for level in itertools.count(1):
        if near:
            return None
        keep = excess <= 0
        kept_boxes = int(np.count_nonzero(keep))  # (counted once: the level's any, all and share of them)
        if level <= WITNESS_LEVELS and kept_boxes:
            found = reach_witness(chain.steps, centres[keep], target)
            if found is not None:  # a configuration within the tolerance: no box holding it is ever refused
                if witnesses is not None:
                    witnesses.append(found)
                return None
        if kept_boxes < len(keep):
            low = ~keep & (excess < widen)
            if lows := int(np.count_nonzero(low)):
                tight.append((centres[low], half[low], excess[low], box_weights[low]))
            if lows + kept_boxes < len(keep):
                loose = min(loose, float(excess[~keep & ~low].min()))
        if not kept_boxes:
            left = widened(chain.steps, target, tight, (widen, widen_budget), loose, Levels(levels, upper, extra))
            if kept is not None:
                kept.append(left)
            return Proof(used, min(left.floor, float(left.excess[0]) if len(left.excess) else math.inf) + extra)
        if (level > 1 or not started) and kept_boxes / len(keep) > GIVE_UP or used + kept_boxes * 2**SPLITS > budget:
            return None
        centres, half = halve_boxes(centres[keep], half[keep], box_weights[keep], SPLITS)
        used += len(centres)
        excess, near, box_weights = _measure(chain, target, centres, half, upper)
    return None  # (not reached: every level returns or goes on)


def _started(chain: PoseChain, goal: BoxGoal, boxes: Boxes, d: float, upper: list[float] | None = None) -> tuple:
    """A proof's first level from another chain's :class:`Boxes` at distance ``d``: the boxes, their excess (the
    larger of ``excess - d`` and this chain's measure, for every box not refused by rotation alone: the widening
    cuts the rest from their own bound, not from ``excess - d``, s47: 5-7 % fewer boxes in all), whether a measured
    centre is near the goal, their weights, the boxes measured, and the bound of every other box (``floor - d``)."""
    excess, weights, near = boxes.excess - d, boxes.weights.copy(), False  # (as :func:`~.proof_fused.started`)
    open_ = np.isfinite(excess)
    if open_.any():
        measured, near, measured_weights = _measure(chain, goal, boxes.centres[open_], boxes.half[open_], upper)
        weights[open_] = measured_weights
        excess[open_] = np.maximum(measured, excess[open_])
    return boxes.centres, boxes.half, excess, weights, bool(near), int(open_.sum()), boxes.floor - d


@functools.cache
def _whole_turn(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The whole turn of ``n`` joints as one box (centres, half-widths), its excess and no weights (the kernel makes
    them from a chain of steps), as :func:`_fused` passes them (made once per ``n``: the kernel reads them, its first
    level cuts them into new arrays)."""
    return np.zeros((1, n)), np.full((1, n), math.pi), np.empty(1), np.empty((0, n))


_LEVELS: list[tuple[Sequence[float], np.ndarray]] = [((), np.empty(0))]  # the last levels passed, as an array


def _levels_array(levels: Sequence[float]) -> np.ndarray:
    """``levels`` as the kernel takes them, made once while the same sequence is passed (a family's proofs pass the
    very tuple :class:`~.widening.Distances` keeps until it sees a new distance). Only a tuple is kept: a list or
    an array passed again may have changed in place since."""
    if type(levels) is not tuple:
        return np.asarray(levels, dtype=np.float64)
    last = _LEVELS[0]  # (one tuple, read and replaced whole: consistent across threads)
    if last[0] is not levels:
        last = _LEVELS[0] = (levels, np.asarray(levels, dtype=np.float64))
    return last[1]


_THREAD = threading.local()


def _outputs(rows: int, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The compiled call's arrays for the boxes it keeps (centres, half-widths, weights (rows, n), excess (rows,)),
    ``rows`` long: views of arrays at least as long kept per thread and number of joints (the kernels run without
    the GIL) and reused; the kept boxes are copied out of them after each call. Why: fresh, each ~0.3 MB, they were
    mapped and unmapped by the allocator on every proof, their pages faulted in anew (~20 us a proof, s54-proof).
    Views of ``rows`` exactly: the kernel's OVERFLOW is by their length, as with fresh arrays."""
    held = _THREAD.__dict__.setdefault("outputs", {})
    found = held.get(n)
    if found is None or len(found[3]) < rows:
        size = max(rows, 2 * len(found[3])) if found is not None else rows
        found = held[n] = (np.empty((size, n)), np.empty((size, n)), np.empty((size, n)), np.empty(size))
    return found[0][:rows], found[1][:rows], found[2][:rows], found[3][:rows]


def _fused(
    kernel: Any,
    chain: PoseChain,
    terms: GoalTerms,
    start: tuple[Boxes, float] | None,
    spend: tuple,
    aims: tuple,
    witnesses: Any,
) -> Any:
    """:func:`pose_proof`'s levels from the whole turn or ``start`` in one compiled call (:mod:`.proof_fused`, its
    first level too) against the goal's ``terms``: the :class:`Proof` and the :class:`Boxes` kept, None (undecided;
    a witness found is appended to ``witnesses``), or False where the kernel's buffers were too small (the numpy
    levels then run). The kernel's inputs are the arrays :func:`box_goal` and the chain give (C order, float64)."""
    (budget, widen, widen_budget), (levels, upper, extra), n = spend, aims, chain.dof
    _, pos, axes, turn, slack, theta = terms
    if start is None:
        centres, half, excess, weights = _whole_turn(n)
        weights = weights if chain.radii_of_steps else (chain.radii + ROT_WEIGHT)[None]  # (none: the kernel's)
        m, loose, d, first = 1 << FIRST_SPLITS, math.inf, 0.0, FIRST_SPLITS
    else:
        (boxes, d), first = start, 0
        centres, half, excess, weights = boxes.centres, boxes.half, boxes.excess, boxes.weights
        m, loose = len(boxes.excess), boxes.floor - d
    direction, length = _direction(turn, chain.offset)
    out, result, found = _outputs(m + budget + widen_budget + 16, n), np.empty(4), np.empty(n)
    params = np.array([slack + extra, theta, length, NEAR, NEAR_ANGLE, ROT_WEIGHT, widen, loose, extra, GIVE_UP,
                       ROT_SCORE, WITNESS_EPS, WITNESS_ANGLE_EPS, d], dtype=np.float64)  # fmt: skip
    counts = np.array([budget, widen_budget, 0, start is not None, 0, WITNESS_LEVELS, first, SPLITS, WITNESS_STARTS,
                       WITNESS_STEPS, upper is not None], dtype=np.int64)  # fmt: skip
    contiguous, (rotations, translations) = np.ascontiguousarray, chain.steps
    bound = np.array(upper if upper is not None else [math.inf], dtype=np.float64)
    status = kernel(contiguous(rotations, dtype=np.float64), contiguous(translations, dtype=np.float64),
                    contiguous(centres, dtype=np.float64), contiguous(half, dtype=np.float64),
                    contiguous(excess, dtype=np.float64), contiguous(weights, dtype=np.float64), pos, axes, direction,
                    params, counts, _levels_array(levels), bound, *out, result, found, trig_table())  # fmt: skip
    if upper is not None:
        upper[0] = float(bound[0])
    if status == OVERFLOW:
        return False
    if status == WITNESS and witnesses is not None:
        witnesses.append(found)
    if status != PROVEN:
        return None
    k = int(result[2])
    left = Boxes(out[0][:k].copy(), out[1][:k].copy(), out[2][:k].copy(), out[3][:k].copy(), float(result[3]))
    return Proof(int(result[0]), float(result[1])), left
