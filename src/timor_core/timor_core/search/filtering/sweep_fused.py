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
from timor_core.search.filtering.proof_kernel import AHEAD, ahead_kernel, lane_kernels, py_kernels
from timor_core.search.filtering.proof_numpy import BoxGoal
from timor_core.search.filtering.sweep_bound import ArmSweep, ObstacleBoxes

__all__ = ["BODY", "HELPERS", "OVERFLOW", "PROVEN", "UNDECIDED", "calling_compiled_sweep", "for_build", "fused_levels",
           "fused_sweep", "numba_jit", "sweep_kernel"]  # fmt: skip

UNDECIDED, PROVEN, OVERFLOW = 0, 1, 3  # what :func:`fused_sweep` returns
BODY = 1e300  # the excess of a box the body refused: above any distance, yet not inf (a box refused by rotation
# alone: the same for every chain of its family, while the body's verdict holds only for the same modules)
MOST_ROWS = 1 << 16  # refused boxes the buffers of :func:`fused_levels` hold at most (more: the numpy levels run)
# params: slack, theta, length, near_pos, near_angle, rot_weight, give_up; counts: budget, started, first splits,
# splits, leaves; result: boxes used, refused boxes written, the link their body needed (where written)
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


def fused_sweep(rot_steps, trans_steps, centres, half, excess, weights, gpos, gaxes, direction, params, counts,
                points, links, need, ob_c, ob_r, ob_h, out_centres, out_half, out_weights, out_excess, out_body,
                result, trig):  # fmt: skip
    """:func:`~.sweep_proof.sweep_certificate`'s levels: from the whole turn (``counts[1]`` 0: ``centres``, ``half``
    one box, halved ``counts[2]`` times by ``weights`` (1, n)) or from a started proof's boxes (their ``excess`` and
    ``weights``, changed in place); UNDECIDED, PROVEN (``result``: boxes used, refused boxes written to ``out_*``
    where ``counts[4]``, in the numpy levels' order, ``out_body`` True where the body refused one, and then the link
    their body needed, :func:`_link`) or OVERFLOW (more refused boxes than ``out_*`` hold). ``trig``: the table of
    the angles' cosines and sines (:func:`~.box_bounds.trig_table`)."""
    goal, ball = (gpos, gaxes, direction, params), (points, links, need, ob_c, ob_r, ob_h)
    out = (out_centres, out_half, out_weights, out_excess, out_body)
    if counts[1] == 0:
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


HELPERS = ("measure_all", "halved", "_measure_open", "_refuse", "_keep_leaves", "_link")
"""The functions :func:`fused_sweep` calls, compiled before it (in this order)."""


def calling_compiled_sweep(jit: Any) -> Any:
    """:func:`fused_sweep` as a function calling ``jit``'s compilations of its helpers and of the bounds' kernels
    (as :func:`~.proof_fused.calling_compiled_fused`, named by the kernels' sources the same way)."""
    names: dict[str, Any] = {**fused_sweep.__globals__}
    names.update({name: jit(kernel) for name, kernel in py_kernels(jit).items()})
    names.update({name: jit(kernel) for name, kernel in lane_kernels(jit).items()})
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
) -> tuple[int, tuple[np.ndarray, ...], int] | Literal[False] | None:
    """:func:`~.sweep_proof.sweep_certificate`'s levels in one call of ``kernel`` (:func:`fused_sweep`), with
    ``spend``: its margin and budget, from the whole turn or from ``start`` (a :class:`~.sweep_proof.Leaves` and
    ``d``); ``steps``: the first level's halvings, the later ones', the give-up share and whether the refused boxes
    are wanted. None (undecided), the boxes used and, where wanted, the refused boxes (centres, half, weights,
    excess, and True where the body refused one) and the link their body needed (``SweepProof.link``), or False
    where the buffers were too small."""
    (margin, budget), (first_splits, splits, give_up, leaves), n = spend, steps, sweep.chain.dof
    if start is None:
        centres, half = np.zeros((1, n)), np.full((1, n), math.pi)
        excess, weights = np.empty(1), np.ascontiguousarray(sweep.chain.radii[None] + target.rot_weight)
    else:
        centres, half = (np.ascontiguousarray(a, dtype=np.float64) for a in (start[0].centres, start[0].half))
        excess, weights = start[0].excess - start[1], np.array(start[0].weights, dtype=np.float64, order="C")
    rows = min(len(centres) + budget + (1 << first_splits), MOST_ROWS) if leaves else 0
    out = (np.empty((rows, n)), np.empty((rows, n)), np.empty((rows, n)), np.empty(rows), np.empty(rows, np.bool_))
    params = np.array([target.slack, target.theta, target.length, *target.near, target.rot_weight, give_up])
    counts = np.array([budget, start is not None, first_splits, splits, leaves], dtype=np.int64)
    rot_steps, trans_steps, points, links, _ = sweep.staged  # (made once per chain, as the obstacles' arrays)
    boxes = (np.ascontiguousarray(a, dtype=np.float64) for a in (centres, half, excess, weights))
    goal = (np.ascontiguousarray(a, dtype=np.float64) for a in (target.pos, target.axes, target.direction))
    result = np.zeros(3, dtype=np.int64)
    status = kernel(rot_steps, trans_steps, *boxes, *goal, params, counts, points, links, sweep.need(margin),
                    *obstacles.staged, *out, result, trig_table())  # fmt: skip
    if status == OVERFLOW:
        return False
    if status != PROVEN:
        return None
    k = int(result[1])
    return int(result[0]), tuple(a[:k].copy() for a in out), int(result[2])
