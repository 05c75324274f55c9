"""A reach proof's levels and widening in one compiled call (:func:`~.reach_proof.pose_proof`, numba's or built ahead
of time with the proofs' other kernels, :mod:`.proof_aot`).

Why: a proof measures ~1,500 boxes at ~0.25 us each, but its levels, witness searches and widening rounds were each a
handful of numpy calls on arrays of a few hundred boxes, and those calls' overhead (~0.8 ms a proof) was more than
half of a proof's CPU on the unseen tasks (``five_joints``: 0.3 of 0.5 s). The same steps in one compiled loop: the
same bounds (the kernels of :mod:`.proof_kernel`), the same boxes in the same order, the same witness descent
(:func:`~.proof_descent.descend`), so the same proofs, margins and kept boxes (``tests/test_proof_fused.py``).
"""

from __future__ import annotations

import functools
import math
import types
from typing import Any

import numpy as np

from timor_core.common import compiled
from timor_core.common.jit_cache import keyed
from timor_core.search.filtering.proof_descent import ROT_FRACTION, calling_compiled, descend
from timor_core.search.filtering.proof_kernel import AHEAD, ahead_kernel, lane_kernels, py_kernels

__all__ = [
    "HELPERS",
    "first_by",
    "halved",
    "turn_weights",
    "OVERFLOW",
    "PROVEN",
    "UNDECIDED",
    "WITNESS",
    "calling_compiled_fused",
    "fused_kernel",
    "fused_proof",
]

UNDECIDED, PROVEN, WITNESS, OVERFLOW = 0, 1, 2, 3  # what :func:`fused_proof` returns
# params: slack, theta, length, near_pos, near_angle, rot_weight, widen, loose, extra, give_up, rot_score,
# witness_eps, witness_angle_eps, d (a started proof's); counts: budget, widen_budget, used, started, near,
# witness_levels, first splits (> 0: the whole turn, cut so often, is measured first), splits, witness_starts,
# witness_steps, has_levels; result: used, margin, boxes kept, floor
poses, halves = (py_kernels()[name] for name in ("poses", "halves"))
measure_lanes = lane_kernels()["measure_lanes"]


def measure_all(rot_steps, trans_steps, centres, half, gpos, gaxes, direction, params, upper, has_levels, trig):
    """Per box: excess, weights (what :func:`~.proof_kernel.measure_boxes` gives) and whether a centre is near the
    goal, lowering ``upper[0]`` by the centres' misses where ``has_levels``: :func:`~.box_lanes.measure_lanes`, the
    boxes in the inner loops (the same values as :mod:`.box_bounds`' kernels to the last bit)."""
    m, n = centres.shape
    excess, weights, centre = np.empty(m), np.empty((m, n)), np.empty(m if has_levels else 0)
    near = measure_lanes(rot_steps, trans_steps, centres, half, gpos, gaxes, direction, params, excess, weights,
                         centre, trig)  # fmt: skip
    if has_levels and m:
        upper[0] = min(upper[0], centre.min())
    return excess, near, weights


def started(rot_steps, trans_steps, centres, half, excess, weights, gpos, gaxes, direction, params, upper, has_levels,
            trig):  # fmt: skip
    """:func:`~.reach_proof._started`'s first level from a neighbour's kept boxes at distance ``params[13]``: each
    box's excess (the larger of ``excess - d`` and its own measure, for those not refused by rotation alone), whether
    a measured centre is near the goal, the weights, and the boxes measured."""
    excess, weights = excess - params[13], weights.copy()
    open_ = np.isfinite(excess)
    count = int(open_.sum())
    if not count:
        return excess, False, weights, count
    measured, near, measured_weights = measure_all(rot_steps, trans_steps, centres[open_], half[open_], gpos, gaxes,
                                                   direction, params, upper, has_levels, trig)  # fmt: skip
    k = 0
    for b in range(len(excess)):
        if open_[b]:
            for i in range(weights.shape[1]):  # (element by element: a row's slice costs numba an array each)
                weights[b, i] = measured_weights[k, i]
            excess[b] = max(measured[k], excess[b])
            k += 1
    return excess, near, weights, count


def witness_search(rot_steps, trans_steps, centres, gpos, gaxes, params, counts, found, trig):
    """:func:`~.proof_kernel.reach_witness` from ``centres``: True where the descent found a configuration (in
    ``found``)."""
    m, n = centres.shape
    tcp, rot, origins, jaxes = np.empty((m, 3)), np.empty((m, 3, 3)), np.empty((m, n, 3)), np.empty((m, n, 3))
    poses(rot_steps, trans_steps, centres, tcp, rot, origins, jaxes, trig)
    score = np.empty(m)
    for b in range(m):
        trace = 0.0
        for j in range(3):
            for k in range(3):
                trace += rot[b, j, k] * gaxes[k, j]
        turn = math.acos(min(max((trace - 1.0) / 2.0, -1.0), 1.0))
        dx, dy, dz = tcp[b, 0] - gpos[0], tcp[b, 1] - gpos[1], tcp[b, 2] - gpos[2]
        miss = math.sqrt(dx * dx + dy * dy + dz * dz)
        score[b] = miss + params[10] * max(turn - ROT_FRACTION * params[1], 0.0)
    order = first_by(score, counts[8])
    starts = np.empty((len(order), n))
    for s in range(len(order)):
        for i in range(n):
            starts[s, i] = centres[order[s], i]
    return descend(rot_steps, trans_steps, starts, gpos, gaxes, params[0] - params[11], params[1] - params[12],
                   counts[9], found)  # fmt: skip


def first_by(score, count):
    """``np.argsort(score, kind="mergesort")[:count]`` (``count`` >= 0) without sorting the rest: the indices of the
    ``count`` least scores in a stable sort's order (ties by index, NaN last, numba's order), each box inserted into
    the few kept (the witness descents start from 4 of up to thousands of boxes; the sort was ~2 % of a replay)."""
    kept = min(count, len(score))
    order = np.empty(kept, np.int64)
    filled = 0
    for b in range(len(score)):
        x = score[b]
        at = filled
        while at > 0:  # (numba's less-than for floats: x < y, or y NaN and x not)
            y = score[order[at - 1]]
            if not (x < y or (math.isnan(y) and not math.isnan(x))):
                break
            at -= 1
        if at < kept:
            for q in range(min(filled, kept - 1), at, -1):
                order[q] = order[q - 1]
            order[at] = b
            filled = min(filled + 1, kept)
    return order


def aim_at(levels, upper, has_levels, extra, margin, widen):
    """:meth:`~.widening.Levels.aim` (-inf: None, no box is cut)."""
    if not has_levels:
        return widen
    top = upper[0] + extra
    for level in levels:
        if level > margin + extra:
            return min(level - extra, widen) if level < top else -math.inf
    return -math.inf


def widen_boxes(rot_steps, trans_steps, tight, gpos, gaxes, direction, params, counts, levels, upper, floor, trig):
    """:func:`~.widening.widened` of the boxes ``tight`` (centres, half, excess, weights): the boxes left (unsorted)
    and the floor."""
    centres, half, excess, weights = tight
    widen, parts, used = params[6], 1 << counts[7], 0
    while len(excess):
        aim = aim_at(levels, upper, counts[10] == 1, params[8], min(floor, excess.min()), widen)
        cut = excess < aim
        cuts = int(cut.sum())
        if not cuts or used + cuts * parts > counts[1]:
            break
        children, child_half = np.empty((cuts * parts, centres.shape[1])), np.empty((cuts * parts, centres.shape[1]))
        halves(centres[cut], half[cut], weights[cut], counts[7], children, child_half)
        used += len(children)
        child_excess, _, child_weights = measure_all(rot_steps, trans_steps, children, child_half, gpos, gaxes,
                                                     direction, params, upper, counts[10] == 1, trig)  # fmt: skip
        parent = excess[cut]
        for c in range(len(children)):
            child_excess[c] = max(child_excess[c], parent[c // parts])
        done = child_excess >= widen
        if done.any():
            floor = min(floor, child_excess[done].min())
        stay, new = ~cut, ~done
        centres = np.concatenate((centres[stay], children[new]))
        half = np.concatenate((half[stay], child_half[new]))
        weights = np.concatenate((weights[stay], child_weights[new]))
        excess = np.concatenate((excess[stay], child_excess[new]))
    return centres, half, excess, weights, floor


def fused_proof(rot_steps, trans_steps, centres, half, excess, weights, gpos, gaxes, direction, params, counts,
                levels, upper, out_centres, out_half, out_weights, out_excess, result, found, trig):  # fmt: skip
    """:func:`~.reach_proof.pose_proof`'s levels from its first (the whole turn cut and measured, or a neighbour's
    kept boxes measured: see the counts above) to its end: UNDECIDED, WITNESS (a configuration in ``found``), PROVEN
    (``result``: boxes used, margin, boxes kept (sorted by excess, in ``out_*``), floor) or OVERFLOW (more boxes kept
    than ``out_*`` hold). The whole turn's ``weights`` given with no row are made here (:func:`turn_weights`).
    ``trig``: the table of the angles' cosines and sines (:func:`~.box_bounds.trig_table`)."""
    n = centres.shape[1]
    parts, used, near, loose = 1 << counts[7], counts[2], counts[4] == 1, params[7]
    if counts[6] > 0:  # the whole turn (``centres``, ``half``: one box), cut counts[6] times, measured
        if not weights.shape[0]:  # (none given: the chain's radii are its steps', made here)
            weights = turn_weights(trans_steps, params[5])
        centres, half = halved(centres, half, weights, counts[6])
        used = len(centres)
        excess, near, weights = measure_all(rot_steps, trans_steps, centres, half, gpos, gaxes, direction, params,
                                            upper, counts[10] == 1, trig)  # fmt: skip
    elif counts[3] == 1:  # a neighbour's kept boxes (``excess`` theirs): measured for this chain
        excess, near, weights, used = started(rot_steps, trans_steps, centres, half, excess, weights, gpos, gaxes,
                                              direction, params, upper, counts[10] == 1, trig)  # fmt: skip
    tight_c, tight_h = np.empty((0, n)), np.empty((0, n))
    tight_e, tight_w = np.empty(0), np.empty((0, n))
    level = 0
    while True:
        level += 1
        if near:
            return UNDECIDED
        keep = excess <= 0
        kept = int(keep.sum())
        if level <= counts[5] and kept and witness_search(rot_steps, trans_steps, centres[keep], gpos, gaxes, params,
                                                          counts, found, trig):  # fmt: skip
            return WITNESS
        if kept < len(keep):
            low = ~keep & (excess < params[6])
            lows = int(low.sum())
            if lows:
                tight_c, tight_h = np.concatenate((tight_c, centres[low])), np.concatenate((tight_h, half[low]))
                tight_e, tight_w = np.concatenate((tight_e, excess[low])), np.concatenate((tight_w, weights[low]))
            if lows + kept < len(keep):
                loose = min(loose, excess[~keep & ~low].min())
        if not kept:
            out = (out_centres, out_half, out_weights, out_excess)
            return _proven((tight_c, tight_h, tight_e, tight_w), rot_steps, trans_steps, gpos, gaxes, direction, params,
                           counts, levels, upper, loose, used, out, result, trig)  # fmt: skip
        if ((level > 1 or counts[3] == 0) and kept / len(keep) > params[9]) or used + kept * parts > counts[0]:
            return UNDECIDED
        centres, half = halved(centres[keep], half[keep], weights[keep], counts[7])
        used += len(centres)
        excess, near, weights = measure_all(rot_steps, trans_steps, centres, half, gpos, gaxes, direction, params,
                                            upper, counts[10] == 1, trig)  # fmt: skip


def turn_weights(trans_steps, rot_weight):
    """The whole turn's weights to cut by (1, n): each joint's radius, the lengths of the steps after it summed from
    the TCP back, plus ``rot_weight``: :attr:`~.proof_chain.PoseChain.radii` of a chain of steps (its numpy
    operations in the same order, the same values to the last bit) plus ``rot_weight``."""
    n = trans_steps.shape[0] - 1
    weights = np.empty((1, n))
    total = 0.0
    for k in range(n, 0, -1):
        x, y, z = trans_steps[k, 0], trans_steps[k, 1], trans_steps[k, 2]
        total += math.sqrt((x * x + y * y) + z * z)  # (0.0 + the last length: that length, as numpy's cumsum)
        weights[0, k - 1] = total + rot_weight
    return weights


def halved(centres, half, weights, times):
    """:func:`~.proof_kernel.halve_boxes` in the compiled loop."""
    m, n = centres.shape
    children, child_half = np.empty((m << times, n)), np.empty((m << times, n))
    halves(centres, half, weights, times, children, child_half)
    return children, child_half


def _proven(tight, rot_steps, trans_steps, gpos, gaxes, direction, params, counts, levels, upper, loose, used, out,
            result, trig):  # fmt: skip
    """The widening of a proven goal's tight boxes, the boxes left put in ``out`` sorted by excess (stable)."""
    centres, half, excess, weights, floor = widen_boxes(rot_steps, trans_steps, tight, gpos, gaxes, direction, params,
                                                        counts, levels, upper, loose, trig)  # fmt: skip
    out_centres, out_half, out_weights, out_excess = out
    if len(excess) > len(out_excess):
        return OVERFLOW
    order = np.argsort(excess, kind="mergesort")
    for r in range(len(order)):
        o = order[r]
        for i in range(centres.shape[1]):  # (element by element, as in started)
            out_centres[r, i], out_half[r, i], out_weights[r, i] = centres[o, i], half[o, i], weights[o, i]
        out_excess[r] = excess[o]
    first = excess[order[0]] if len(order) else math.inf
    result[0], result[1], result[2], result[3] = used, min(floor, first) + params[8], len(order), floor
    return PROVEN


HELPERS = (
    "measure_all",
    "started",
    "first_by",
    "witness_search",
    "aim_at",
    "widen_boxes",
    "turn_weights",
    "halved",
    "_proven",
)
"""The functions :func:`fused_proof` calls, compiled before it (in this order)."""


def calling_compiled_fused(jit: Any) -> Any:
    """:func:`fused_proof` as a function calling ``jit``'s compilations of its helpers and of the bounds' kernels
    (as :func:`~.proof_descent.calling_compiled`), it and its helpers named by the kernels' sources
    (:func:`~timor_core.common.jit_cache.keyed`: numba's cache checks only this file, and those of other files are
    compiled into them)."""
    names: dict[str, Any] = {**fused_proof.__globals__}
    names.update({name: jit(kernel) for name, kernel in py_kernels(jit).items()})
    names.update({name: jit(kernel) for name, kernel in lane_kernels(jit).items()})
    names["descend"] = jit(calling_compiled(jit))
    for name in HELPERS:
        function = names[name]
        names[name] = jit(keyed(types.FunctionType(function.__code__, names, function.__name__), AHEAD.sources))
    return keyed(types.FunctionType(fused_proof.__code__, names, fused_proof.__name__), AHEAD.sources)


def for_build(cache: bool = True) -> Any:
    """:func:`fused_proof` calling numba's compilations of its helpers: what numba compiles (:mod:`.proof_aot`'s build,
    or :func:`fused_kernel` where none is built). ``cache``: numba's on-disk cache for the helpers (it checks only
    each function's own file, not the kernels of :mod:`.proof_kernel` they take in, so a build does without it)."""
    import numba  # noqa: PLC0415 (only once the process compiles its kernels)

    return calling_compiled_fused(numba.njit(cache=cache, fastmath=False, nogil=True))


@functools.cache
def _jit_kernel() -> Any:
    """:func:`fused_proof` compiled by numba (where it is not built ahead of time)."""
    import numba  # noqa: PLC0415 (only once the process runs its compiled kernels)

    kernel = numba.njit(cache=True, fastmath=False, nogil=True)(for_build())
    compiled.mark_loaded()
    return kernel


def fused_kernel(jit: bool = False) -> Any:
    """The compiled :func:`fused_proof` where it is built ahead of time, else None (then
    :func:`~.reach_proof.pose_proof` runs its levels in numpy, with numba's separate kernels by the rule): numba
    compiles it in ~15 CPU-s on a cold cache, against ~2 s for the proofs' other kernels, more than the levels it
    saves are worth in one process. ``jit``: numba's where none is built (the tests), by the rule."""
    kernel = ahead_kernel("fused_proof")
    return kernel if kernel is not None or not jit else compiled.loaded_or_none(_jit_kernel, "the reach proofs")
