"""A sweep proof's levels in one compiled call (:func:`~.sweep_proof.sweep_certificate`, built ahead of time with the
proofs' other kernels, :mod:`.proof_aot`, or numba's in the tests).

Why: a sweep proof measures ~1,000 boxes in ~5 levels, but each level was a handful of numpy calls and three kernel
calls (measure, the body's bound, halve) on arrays of a few hundred boxes: on ``obstacles_4`` the 347 proofs took
~0.19 CPU-s, ~0.5 ms each, mostly those calls' overhead (``measure_boxes`` ~62 us a call). The same steps in one
compiled loop: the same bounds (the kernels of :mod:`.proof_kernel` and :mod:`.sweep_bound`), the same boxes in the
same order, so the same verdicts, box counts and refused boxes to the last bit (``tests/test_sweep_fused.py``).
"""

from __future__ import annotations

import functools
import math
import types
from typing import Any, Literal

import numpy as np

from timor_core.common import compiled
from timor_core.common.jit_cache import keyed
from timor_core.search.filtering import sweep_bound
from timor_core.search.filtering.box_bounds import trig_table
from timor_core.search.filtering.proof_fused import halved, measure_all
from timor_core.search.filtering.proof_kernel import AHEAD, ahead_kernel, py_kernels
from timor_core.search.filtering.proof_numpy import BoxGoal
from timor_core.search.filtering.sweep_bound import ArmSweep, ObstacleBoxes

__all__ = ["BODY", "ENDED", "HELPERS", "OVERFLOW", "PROVEN", "UNDECIDED", "calling_compiled_sweep", "for_build",
           "fused_levels", "fused_sweep", "numba_jit", "sweep_kernel"]  # fmt: skip

UNDECIDED, PROVEN, OVERFLOW, ENDED = 0, 1, 3, 4  # what :func:`fused_sweep` returns
BODY = 1e300  # the excess of a box the body refused: above any distance, yet not inf (a box refused by rotation
# alone: the same for every chain of its family, while the body's verdict holds only for the same modules)
MOST_ROWS = 1 << 16  # refused boxes the buffers of :func:`fused_levels` hold at most (more: the numpy levels run)
# params: slack, theta, length, near_pos, near_angle, rot_weight, give_up, d (the started boxes' distance); counts:
# budget, started, first splits, splits, leaves, rerun (from the whole turn after an undecided started proof), the
# started proof's rows, the whole turn's; result: boxes used, refused boxes written, the link their body needed (where
# written), whether the started proof ended the call
collisions = sweep_bound.py_kernels()["collisions"]


def _measure_open(rot_steps, trans_steps, centres, half, excess, weights, goal, trig):
    """A started proof's first level (:func:`~.sweep_proof.sweep_certificate`'s ``start``): the boxes whose
    ``excess`` is not above 0 measured, their excess and weights the measured ones (the numpy levels take the larger
    excess, but where the measured one is not above 0 neither is the larger: the box stays open, its excess unread);
    the boxes measured."""
    gpos, gaxes, direction, params = goal
    open_ = np.flatnonzero(excess <= 0)
    if not len(open_):
        return 0
    measured, _, measured_weights = measure_all(rot_steps, trans_steps, centres[open_], half[open_], gpos, gaxes,
                                                direction, params, np.empty(1), False, trig)  # fmt: skip
    for r in range(len(open_)):
        excess[open_[r]] = measured[r]
        for j in range(weights.shape[1]):  # (element by element, as in _keep_leaves)
            weights[open_[r], j] = measured_weights[r, j]
    return len(open_)


def _refuse(rot_steps, trans_steps, centres, half, excess, body, ball, trig):
    """The body's bound (:func:`~.sweep_bound.certain_collision`) on the boxes not refused by the goal: those it
    refuses get excess :data:`BODY` and ``body`` True; the boxes left open."""
    points, links, need, ob_c, ob_r, ob_h = ball
    tried = np.flatnonzero(excess <= 0)
    if len(tried):
        hit = np.zeros(len(tried), dtype=np.bool_)
        collisions(rot_steps, trans_steps, centres[tried], half[tried], points, links, need, ob_c, ob_r, ob_h, hit,
                   trig)  # fmt: skip
        for t in range(len(tried)):
            if hit[t]:
                excess[tried[t]], body[tried[t]] = BODY, True
    return excess <= 0


def _keep_leaves(centres, half, weights, excess, body, keep, out, rows):
    """The refused boxes (not ``keep``) written to ``out`` from row ``rows``: the rows after them, -1 where ``out``
    is too small."""
    out_centres, out_half, out_weights, out_excess, out_body = out
    for b in range(len(keep)):
        if keep[b]:
            continue
        if rows >= len(out_excess):
            return -1
        for j in range(centres.shape[1]):  # (element by element: a row's slice costs numba an array each)
            out_centres[rows, j], out_half[rows, j], out_weights[rows, j] = centres[b, j], half[b, j], weights[b, j]
        out_excess[rows], out_body[rows] = excess[b], body[b]
        rows += 1
    return rows


def _link(rot_steps, trans_steps, out_centres, out_half, out_body, rows, ball, trig):
    """The least link whose balls and those of the links before it refuse every box the body refused (``out_*`` up
    to row ``rows`` where ``out_body``; -1: none): :func:`~.sweep_proof._body_link`'s loop in the compiled call (the
    same kernel on the same balls), without its numpy calls per link (~40 us a proof)."""
    points, links, need, ob_c, ob_r, ob_h = ball
    body = np.flatnonzero(out_body[:rows])
    if not len(body):
        return -1
    centres, half, last = out_centres[body], out_half[body], rot_steps.shape[0] - 2
    for link in range(last):  # (the boxes left were refused by no ball before this link: its balls alone tried)
        on = np.flatnonzero(links == link)
        hit = np.zeros(len(centres), dtype=np.bool_)
        collisions(rot_steps, trans_steps, centres, half, points[on], links[on], need[on], ob_c, ob_r, ob_h, hit, trig)
        left = np.flatnonzero(~hit)
        centres, half = centres[left], half[left]
        if not len(centres):
            return link
    return last


def _levels(rot_steps, trans_steps, centres, half, excess, weights, goal, counts, started, ball, out, result, trig):
    """The levels of one proof: from the whole turn (``started`` False: ``centres``, ``half`` one box, halved
    ``counts[2]`` times by ``weights`` (1, n)) or from a started proof's boxes (their ``excess`` and ``weights``,
    changed in place); UNDECIDED, PROVEN (``result``: boxes used, refused boxes written to ``out`` where
    ``counts[4]``, in the numpy levels' order, ``out``'s body flags True where the body refused one, and then the
    link their body needed, :func:`_link`) or OVERFLOW (more refused boxes than ``out`` holds)."""
    gpos, gaxes, direction, params = goal
    out_centres, out_half, _, _, out_body = out
    if not started:
        centres, half = halved(centres, half, weights, counts[2])
        used = len(centres)
        excess, _, weights = measure_all(rot_steps, trans_steps, centres, half, gpos, gaxes, direction, params,
                                         np.empty(1), False, trig)  # fmt: skip
    else:
        used = _measure_open(rot_steps, trans_steps, centres, half, excess, weights, goal, trig)
    rows = 0
    while True:
        body = np.zeros(len(excess), dtype=np.bool_)
        keep = _refuse(rot_steps, trans_steps, centres, half, excess, body, ball, trig)
        if counts[4] != 0:
            rows = _keep_leaves(centres, half, weights, excess, body, keep, out, rows)
            if rows < 0:
                return OVERFLOW
        kept = int(keep.sum())
        if not kept:
            result[0], result[1] = used, rows
            if counts[4] != 0:
                result[2] = _link(rot_steps, trans_steps, out_centres, out_half, out_body, rows, ball, trig)
            return PROVEN
        if kept / len(keep) > params[6] or used + kept * (1 << counts[3]) > counts[0]:
            return UNDECIDED
        centres, half = halved(centres[keep], half[keep], weights[keep], counts[3])
        used += len(centres)
        excess, _, weights = measure_all(rot_steps, trans_steps, centres, half, gpos, gaxes, direction, params,
                                         np.empty(1), False, trig)  # fmt: skip


def fused_sweep(rot_steps, trans_steps, radii, witness, centres, half, excess, weights, gpos, gaxes, direction,
                params, counts, points, links, need, need_w, ob_c, ob_r, ob_h, out_centres, out_half, out_weights,
                out_excess, out_body, result, trig):  # fmt: skip
    """:func:`~.sweep_proof.sweep_certificate`'s levels for one chain in one call: first, where ``witness`` holds a
    configuration (1, n), ENDED where the body's balls leave it unrefused at ``need_w``
    (:func:`~.sweep_proof.witness_ends`); then, where ``counts[1]``, the proof started from a proof's boxes
    (``centres``, ``half``, their ``excess`` less ``params[7]``, ``weights``: copied, not changed), its refused boxes
    written to the first ``counts[6]`` rows of ``out_*``; then, where that is undecided and ``counts[5]`` or where
    none was started, the proof from the whole turn (its weights ``radii`` + ``params[5]``), to the first
    ``counts[7]`` rows. Each as :func:`_levels` ends it; ``result[3]`` 1 where the started proof ended the call.
    ``trig``: the table of the angles' cosines and sines (:func:`~.box_bounds.trig_table`)."""
    goal, ball = (gpos, gaxes, direction, params), (points, links, need, ob_c, ob_r, ob_h)
    if len(witness):  # (the witness check: its box of no width, with the witness's slack)
        hit = np.zeros(1, dtype=np.bool_)
        collisions(rot_steps, trans_steps, witness, np.zeros_like(witness), points, links, need_w, ob_c, ob_r, ob_h,
                   hit, trig)  # fmt: skip
        if not hit[0]:
            return ENDED
    if counts[1] != 0:
        r = counts[6]
        out = (out_centres[:r], out_half[:r], out_weights[:r], out_excess[:r], out_body[:r])
        status = _levels(rot_steps, trans_steps, centres, half, excess - params[7], weights.copy(), goal, counts,
                         True, ball, out, result, trig)  # fmt: skip
        result[3] = 1
        if status != UNDECIDED or counts[5] == 0:
            return status
    n, r = len(radii), counts[7]
    whole = np.empty((1, n))
    for j in range(n):
        whole[0, j] = radii[j] + params[5]
    out = (out_centres[:r], out_half[:r], out_weights[:r], out_excess[:r], out_body[:r])
    result[3] = 0
    return _levels(rot_steps, trans_steps, np.zeros((1, n)), np.full((1, n), math.pi), np.empty(1), whole, goal,
                   counts, False, ball, out, result, trig)  # fmt: skip


HELPERS = ("measure_all", "halved", "_measure_open", "_refuse", "_keep_leaves", "_link", "_levels")
"""The functions :func:`fused_sweep` calls, compiled before it (in this order)."""


def calling_compiled_sweep(jit: Any) -> Any:
    """:func:`fused_sweep` as a function calling ``jit``'s compilations of its helpers and of the bounds' kernels
    (as :func:`~.proof_fused.calling_compiled_fused`, named by the kernels' sources the same way)."""
    names: dict[str, Any] = {**fused_sweep.__globals__}
    names.update({name: jit(kernel) for name, kernel in py_kernels(jit).items()})
    names.update({name: jit(kernel) for name, kernel in sweep_bound.py_kernels(jit).items()})
    for name in HELPERS:
        function = names[name]
        names[name] = jit(keyed(types.FunctionType(function.__code__, names, function.__name__), AHEAD.sources))
    return keyed(types.FunctionType(fused_sweep.__code__, names, fused_sweep.__name__), AHEAD.sources)


def numba_jit(cache: bool = True) -> Any:
    """numba's compiler as the proofs' kernels use it (imported only once a process compiles its kernels)."""
    import numba  # noqa: PLC0415

    return numba.njit(cache=cache, fastmath=False, nogil=True)


def for_build(cache: bool = True) -> Any:
    """:func:`fused_sweep` calling numba's compilations of its helpers: what numba compiles (:mod:`.proof_aot`'s
    build, or :func:`sweep_kernel` where none is built). ``cache``: numba's on-disk cache for the helpers (as
    :func:`~.proof_fused.for_build`: a build does without it)."""
    return calling_compiled_sweep(numba_jit(cache))


@functools.cache
def _jit_kernel() -> Any:
    """:func:`fused_sweep` compiled by numba (where it is not built ahead of time)."""
    kernel = numba_jit()(for_build())
    compiled.mark_loaded()
    return kernel


def sweep_kernel(jit: bool = False) -> Any:
    """The compiled :func:`fused_sweep` where it is built ahead of time, else None (then the sweep proof runs its
    levels in numpy, with the separate kernels by the rule); ``jit``: numba's where none is built (the tests)."""
    kernel = ahead_kernel("fused_sweep")
    return kernel if kernel is not None or not jit else compiled.loaded_or_none(_jit_kernel, "the sweep proofs")


def fused_levels(
    kernel: Any,
    sweep: ArmSweep,
    obstacles: ObstacleBoxes,
    target: BoxGoal,
    spend: tuple[float, int],
    start: tuple[Any, float] | None,
    steps: tuple[int, int, float, bool],
    witness: tuple[np.ndarray, float] | None = None,
    rerun: bool = False,
) -> tuple[int, tuple[np.ndarray, ...], int, bool] | Literal[False] | None:
    """:func:`~.sweep_proof.sweep_certificate`'s levels in one call of ``kernel`` (:func:`fused_sweep`), with
    ``spend``: its margin and budget, from the whole turn or from ``start`` (a :class:`~.sweep_proof.Leaves` and
    ``d``); ``steps``: the first level's halvings, the later ones', the give-up share and whether the refused boxes
    are wanted; ``witness``: a configuration (n,) and the depth allowed it beyond the margin, checked first (none
    proven where the body leaves it unrefused: :func:`~.sweep_proof.witness_ends`); ``rerun``: from the whole turn
    where the started proof is undecided. None (undecided, or ended by the witness), the boxes used and, where
    wanted, the refused boxes (centres, half, weights, excess, and True where the body refused one), the link their
    body needed (``SweepProof.link``) and whether the started proof gave them; or False where the buffers were too
    small."""
    (margin, budget), (first_splits, splits, give_up, leaves), n = spend, steps, sweep.chain.dof
    contiguous, whole = np.ascontiguousarray, min(1 + budget + (1 << first_splits), MOST_ROWS) if leaves else 0
    if start is None:
        centres = half = weights = np.empty((0, n))
        excess, d, rows = np.empty(0), 0.0, 0
    else:  # (the kernel copies the boxes' excess and weights, which it changes: C-contiguous float64, as it takes them)
        kept, d = start
        centres, half = contiguous(kept.centres, dtype=np.float64), contiguous(kept.half, dtype=np.float64)
        excess, weights = contiguous(kept.excess, dtype=np.float64), contiguous(kept.weights, dtype=np.float64)
        rows = min(len(centres) + budget + (1 << first_splits), MOST_ROWS) if leaves else 0
    size = max(rows, whole if start is None or rerun else 0)
    out = (np.empty((size, n)), np.empty((size, n)), np.empty((size, n)), np.empty(size), np.empty(size, np.bool_))
    params = np.array([target.slack, target.theta, target.length, *target.near, target.rot_weight, give_up, d])
    counts = np.array([budget, start is not None, first_splits, splits, leaves, rerun, rows, whole], dtype=np.int64)
    rot_steps, trans_steps, points, links, _ = sweep.staged  # (made once per chain, as the obstacles' arrays)
    need = sweep.need(margin)
    if witness is None or len(witness[0]) != n:  # (a witness of another chain's joints ends nothing)
        q, need_w = np.empty((0, n)), need
    else:
        q, need_w = contiguous(witness[0], dtype=np.float64).reshape(1, n), sweep.need(margin + witness[1])
    result = np.zeros(4, dtype=np.int64)
    status = kernel(rot_steps, trans_steps, contiguous(sweep.chain.radii, dtype=np.float64), q, centres, half, excess,
                    weights, *_goal_arrays(target), params, counts, points, links, need, need_w, *obstacles.staged,
                    *out, result, trig_table())  # fmt: skip
    if status == OVERFLOW:
        return False
    if status != PROVEN:
        return None
    k = int(result[1])
    return int(result[0]), tuple(a[:k].copy() for a in out), int(result[2]), bool(result[3])


def _goal_arrays(target: BoxGoal) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The target's position, axes and direction as the kernel takes them (C-contiguous float64)."""
    contiguous = np.ascontiguousarray
    return (contiguous(target.pos, dtype=np.float64), contiguous(target.axes, dtype=np.float64),
            contiguous(target.direction, dtype=np.float64))  # fmt: skip
