"""The bounds of :mod:`.box_bounds` in lanes: :data:`LANES` boxes at a time, the boxes in the inner loops (a structure
of arrays), so that the compiler runs 8 boxes at once in the vector registers (compiled by numba inside the fused
proofs: :mod:`.proof_fused`'s ``measure_all``, which :mod:`.sweep_fused` shares).

Why: :mod:`.box_bounds` poses and bounds one box after the other in scalar code, each box's joints in an inner loop
of 3-6 steps: nothing there for the vector units (~0.2 us a box). Here a joint's frames, reaches and sums are
computed for a chunk of boxes in one loop (per box the same operations in the same order, no fused multiply-add:
the same values to the last bit, ``tests/test_box_lanes.py``), the cosines and sines looked up per box beforehand.
The poses are computed for every box anew, not taken from the box before where the angles agree (the same values: a
frame depends only on the angles before it). The orientation bound's branchy part (its early outs and the cached
cosines of the last sums) stays box by box, reading the lanes. Every cache of the last argument's cosine is carried
from chunk to chunk in ``state`` as :mod:`.box_bounds` carries it from box to box.

Layout: a chunk's rows are :data:`LANES` long, kept in flat arrays (row r of a quantity at ``r * LANES``): with the
rows a constant apart, LLVM checks the arrays' overlap once per array and loop (rows of a 2D array of runtime shape
are one check each, more than it accepts, and the loop stays scalar). ``fa``/``fb``: the frames before and after a
joint in turn (12 rows: the rotation row by row, then the position); ``joints[k]``: joint k's axis and origin (6
rows); ``widths``, ``rest``, ``wts`` (n, LANES): half-widths, second-order rests, weights; ``sums``: per-box terms.
"""

from __future__ import annotations

import math

import numpy as np

from timor_core.search.filtering.box_bounds import cos_sin, wrist_off

__all__ = ["LANES", "LANE_HELPERS", "lane_orientation", "lane_poses", "lane_position", "measure_lanes"]

LANES = 128  # boxes a chunk: a multiple of the vector loops' 32 boxes a step (8 lanes, 4 interleaved)
_ROWS = 11  # rows of ``sums``
LANE_HELPERS = ("_lane_trig", "_lane_step", "_lane_chords", "_lane_joint", "_lane_caps", "_lane_widest", "_lane_turns",
                "lane_widths", "lane_poses", "lane_position", "lane_orientation", "measure_lanes")  # fmt: skip
"""The functions here in the order numba compiles them (each calls only those before it, and ``cos_sin``)."""


def measure_lanes(rot_steps, trans_steps, centres, half, gpos, gaxes, direction, params, excess, weights, centre,
                  trig):  # fmt: skip
    """:func:`~.box_bounds.poses`, ``position`` and ``orientation`` of every box, :data:`LANES` at a time: ``excess``
    and ``weights`` (m, n) set, ``centre`` where it has m places; whether a centre is near the goal. ``params``:
    slack, theta, length, near_pos, near_angle, rot_weight (:mod:`.proof_fused`'s first six)."""
    m, n = centres.shape
    fa, fb, cs, sums = np.empty(12 * LANES), np.empty(12 * LANES), np.empty(2 * LANES), np.empty(_ROWS * LANES)
    joints, widths = np.empty((n, 6 * LANES)), np.empty((n, LANES))
    rest, wts = np.empty((n, LANES)), np.empty((n, LANES))
    state = np.empty(6 * n + 7)  # the caches: per joint the last angle's, per joint the last half-width's, the turns'
    for k in range(n):
        state[3 * k], state[3 * k + 1], state[3 * k + 2] = math.nan, 1.0, 0.0
        state[3 * n + 3 * k], state[3 * n + 3 * k + 1], state[3 * n + 3 * k + 2] = -1.0, 0.0, 0.0
    for r, value in enumerate((-1.0, 1.0, 0.0, -1.0, 1.0, -1.0, 1.0)):  # (box_bounds.orientation's start)
        state[6 * n + r] = value
    found, whole = False, len(centre) == m
    for start in range(0, m, LANES):
        count = min(LANES, m - start)
        lane_widths(half, start, count, widths)
        tip = lane_poses(rot_steps, trans_steps, centres, start, count, (fa, fb, cs), joints, state, trig)
        lane_position(tip, joints, widths, gpos, direction, params, start, count, excess, weights, (rest, wts, sums),
                      state, trig)  # fmt: skip
        near = lane_orientation(tip, joints, widths, rest, (gpos, gaxes, params), start, count, excess,
                                (centre, whole), (sums, state), trig)  # fmt: skip
        found = found or near
    return found


def lane_widths(half, start, count, widths):
    """``widths`` (n, LANES): the rows ``start`` to ``start + count`` of ``half`` (m, n) transposed."""
    for b in range(count):
        for i in range(half.shape[1]):
            widths[i, b] = half[start + b, i]


def lane_poses(rot_steps, trans_steps, centres, start, count, frames, joints, state, trig):
    """:func:`~.box_bounds.poses` of the chunk's boxes, joint by joint: ``joints`` set; the TCP's frame returned (one
    of ``frames``' two; the third, (2 LANES), takes a joint's cosines and sines)."""
    fa, fb, cs = frames
    n = centres.shape[1]
    for r in range(12):
        value = rot_steps[0, r // 3, r % 3] if r < 9 else trans_steps[0, r - 9]
        for b in range(count):
            fa[r * LANES + b] = value
    for k in range(n):
        _lane_trig(centres, start, count, k, cs, state, trig)
        if k % 2 == 0:
            _lane_step(fa, fb, joints, cs, rot_steps, trans_steps, k, count)
        else:
            _lane_step(fb, fa, joints, cs, rot_steps, trans_steps, k, count)
    return fa if n % 2 == 0 else fb


def _lane_trig(centres, start, count, k, cs, state, trig):
    """``cs``: per box the cosine and sine of joint ``k``'s angle, those of the last one looked up where the angle
    equals it (as :func:`~.box_bounds.poses` keeps per joint the last angle's; ``state[3k:3k + 3]``)."""
    seen, c, s = state[3 * k], state[3 * k + 1], state[3 * k + 2]
    for b in range(count):
        x = centres[start + b, k]
        if x != seen:
            seen = x
            c, s = cos_sin(trig, x)
        cs[b], cs[LANES + b] = c, s
    state[3 * k], state[3 * k + 1], state[3 * k + 2] = seen, c, s


def _lane_step(f, g, joints, cs, rot_steps, trans_steps, k, count):
    """The frames ``g`` after joint ``k`` from those before it, ``f``, and its axis and origin into ``joints[k]``
    (:func:`~.box_bounds.poses`' operations in its order; rows, not views: a view costs numba two reference counts)."""
    x0, x1, x2 = trans_steps[k + 1, 0], trans_steps[k + 1, 1], trans_steps[k + 1, 2]
    r00, r01, r02 = rot_steps[k + 1, 0, 0], rot_steps[k + 1, 0, 1], rot_steps[k + 1, 0, 2]
    r10, r11, r12 = rot_steps[k + 1, 1, 0], rot_steps[k + 1, 1, 1], rot_steps[k + 1, 1, 2]
    r20, r21, r22 = rot_steps[k + 1, 2, 0], rot_steps[k + 1, 2, 1], rot_steps[k + 1, 2, 2]
    L = LANES  # noqa: N806 (the rows' stride, short)
    for b in range(count):
        c, s = cs[b], cs[L + b]
        a00, a01, a02, a10, a11, a12 = f[b], f[L + b], f[2 * L + b], f[3 * L + b], f[4 * L + b], f[5 * L + b]
        a20, a21, a22, p0, p1, p2 = f[6 * L + b], f[7 * L + b], f[8 * L + b], f[9 * L + b], f[10 * L + b], f[11 * L + b]
        joints[k, b], joints[k, L + b], joints[k, 2 * L + b] = a02, a12, a22
        joints[k, 3 * L + b], joints[k, 4 * L + b], joints[k, 5 * L + b] = p0, p1, p2
        t00, t01, t10 = c * a00 + s * a01, c * a01 - s * a00, c * a10 + s * a11  # the frame turned by the angle
        t11, t20, t21 = c * a11 - s * a10, c * a20 + s * a21, c * a21 - s * a20
        g[9 * L + b] = p0 + t00 * x0 + t01 * x1 + a02 * x2
        g[10 * L + b] = p1 + t10 * x0 + t11 * x1 + a12 * x2
        g[11 * L + b] = p2 + t20 * x0 + t21 * x1 + a22 * x2
        g[b], g[L + b], g[2 * L + b] = t00 * r00 + t01 * r10 + a02 * r20, t00 * r01 + t01 * r11 + a02 * r21, \
            t00 * r02 + t01 * r12 + a02 * r22  # fmt: skip
        g[3 * L + b], g[4 * L + b], g[5 * L + b] = t10 * r00 + t11 * r10 + a12 * r20, \
            t10 * r01 + t11 * r11 + a12 * r21, t10 * r02 + t11 * r12 + a12 * r22  # fmt: skip
        g[6 * L + b], g[7 * L + b], g[8 * L + b] = t20 * r00 + t21 * r10 + a22 * r20, \
            t20 * r01 + t21 * r11 + a22 * r21, t20 * r02 + t21 * r12 + a22 * r22  # fmt: skip


def lane_position(tip, joints, widths, gpos, direction, params, start, count, excess, weights, rows, state, trig):
    """:func:`~.box_bounds.position` of the chunk's boxes, joint by joint: ``excess`` and ``weights`` (m, n) from
    ``start``, ``rest`` (n, LANES); ``rows``: ``rest``, the weights' lanes and ``sums`` (per box the miss, its unit
    vector, the sums of the moves, first and second order terms and half-widths so far, a joint's chord and bend)."""
    rest, wts, sums = rows
    n, L = widths.shape[0], LANES  # noqa: N806
    for b in range(count):
        dx, dy, dz = tip[9 * L + b] - gpos[0], tip[10 * L + b] - gpos[1], tip[11 * L + b] - gpos[2]
        miss = math.sqrt(dx * dx + dy * dy + dz * dz)
        unit = max(miss, 1e-300)
        sums[b], sums[L + b], sums[2 * L + b], sums[3 * L + b] = miss, dx / unit, dy / unit, dz / unit
        sums[4 * L + b], sums[5 * L + b], sums[6 * L + b], sums[7 * L + b], sums[8 * L + b] = 0.0, 0.0, 0.0, 0.0, 0.0
    for i in range(n):
        _lane_chords(widths, i, count, sums, state, 3 * n + 3 * i, trig)
        _lane_joint(tip, joints, widths, i, (rest, wts), sums, params[5], count)
    for b in range(count):
        for i in range(n):
            weights[start + b, i] = wts[i, b]
    _lane_caps(joints, gpos, direction, params, start, count, sums, excess)


def _lane_chords(widths, i, count, sums, state, at, trig):
    """Per box the chord ``2 sin(h / 2)`` and the bend ``h - sin h`` of joint ``i``'s half-width h into ``sums``'
    rows 9 and 10, those of the last h looked up where h equals it (as :func:`~.box_bounds.position`; in ``state`` at
    ``at``)."""
    seen, chord, bend = state[at], state[at + 1], state[at + 2]
    for b in range(count):
        h = widths[i, b]
        if h != seen:
            seen, chord, bend = h, 2.0 * cos_sin(trig, h / 2.0)[1], h - cos_sin(trig, h)[1]
        sums[9 * LANES + b], sums[10 * LANES + b] = chord, bend
    state[at], state[at + 1], state[at + 2] = seen, chord, bend


def _lane_joint(tip, joints, widths, i, rows, sums, rot_weight, count):
    """Joint ``i``'s terms of :func:`~.box_bounds.position` for the chunk's boxes (its operations in its order;
    ``rows``: ``rest`` and the weights' lanes)."""
    (rest, wts), w, L = rows, joints.shape[0] - 1, LANES  # noqa: N806
    for b in range(count):
        ax, ay, az = joints[i, b], joints[i, L + b], joints[i, 2 * L + b]
        ox, oy, oz = joints[i, 3 * L + b], joints[i, 4 * L + b], joints[i, 5 * L + b]
        px, py, pz = tip[9 * L + b] - ox, tip[10 * L + b] - oy, tip[11 * L + b] - oz
        along = px * ax + py * ay + pz * az
        reach_tcp = math.sqrt(max(px * px + py * py + pz * pz - along * along, 0.0))
        qx, qy, qz = joints[w, 3 * L + b] - ox, joints[w, 4 * L + b] - oy, joints[w, 5 * L + b] - oz
        along = qx * ax + qy * ay + qz * az
        reach_wrist = math.sqrt(max(qx * qx + qy * qy + qz * qz - along * along, 0.0))
        h, chord, before = widths[i, b], sums[9 * L + b], sums[8 * L + b]
        tail = sums[10 * L + b] + chord * chord / 2.0 + chord * before  # (the rest: box_bounds.position's order)
        rest[i, b] = tail
        sums[8 * L + b] = before + h
        sums[4 * L + b] += chord * reach_tcp
        sums[5 * L + b] += chord * reach_wrist
        jx, jy, jz = ay * pz - az * py, az * px - ax * pz, ax * py - ay * px  # the TCP's velocity per radian
        sums[6 * L + b] += abs(jx * sums[L + b] + jy * sums[2 * L + b] + jz * sums[3 * L + b]) * h
        sums[7 * L + b] += tail * reach_tcp
        wts[i, b] = reach_tcp + rot_weight


def _lane_caps(joints, gpos, direction, params, start, count, sums, excess):
    """The position bounds' excess from the sums (:func:`~.box_bounds.position`'s last lines), from ``start``."""
    slack, theta, length, w, L = params[0], params[1], params[2], joints.shape[0] - 1, LANES  # noqa: N806
    cos_theta, sin_theta = math.cos(min(theta, math.pi)), math.sin(min(theta, math.pi))
    capped = math.isfinite(slack)
    for b in range(count):
        miss = sums[b]
        out = max(miss - sums[4 * L + b] - slack, miss - sums[6 * L + b] - sums[7 * L + b] - slack)
        if capped:  # the wrist's distance from its cap {goal + length u, angle(u, direction) <= theta}
            yx, yy, yz = joints[w, 3 * L + b] - gpos[0], joints[w, 4 * L + b] - gpos[1], joints[w, 5 * L + b] - gpos[2]
            cap = math.sqrt(yx * yx + yy * yy + yz * yz)
            if length > 0.0:  # cos(max(a - theta, 0)) of the angle a = acos(c) from the direction, no arccos
                c = min(max((yx * direction[0] + yy * direction[1] + yz * direction[2]) / max(cap, 1e-300), -1.0), 1.0)
                turned = 1.0 if c >= cos_theta else c * cos_theta + math.sqrt(max(1.0 - c * c, 0.0)) * sin_theta
                cap = math.sqrt(max(cap * cap + length * length - 2.0 * cap * length * turned, 0.0))
            out = max(out, cap - sums[5 * L + b] - slack)
        excess[start + b] = out


def lane_orientation(tip, joints, widths, rest, goal, start, count, excess, centres, rows, trig):
    """:func:`~.box_bounds.orientation` of the chunk's boxes (``goal``: position, axes, ``params``; ``centres``: the
    array for the centres' misses and whether to write it; ``rows``: ``sums`` and ``state``): the trace, its
    angle's cosine, the centre's miss, the half-widths' sum and the widest joint for all at once, then the early
    outs and cached cosines box by box (:func:`_lane_turns`); whether a centre is near the goal."""
    (gpos, gaxes, params), (centre, whole), (sums, state) = goal, centres, rows
    slack, theta, near_pos, near_angle, L = params[0], params[1], params[3], params[4], LANES  # noqa: N806
    within, nearby = math.cos(min(theta, math.pi)), math.cos(min(theta + near_angle, math.pi))  # (acos falls)
    g00, g01, g02, g10, g11, g12 = gaxes[0, 0], gaxes[0, 1], gaxes[0, 2], gaxes[1, 0], gaxes[1, 1], gaxes[1, 2]
    g20, g21, g22, hits = gaxes[2, 0], gaxes[2, 1], gaxes[2, 2], 0
    for b in range(count):
        dx, dy, dz = tip[9 * L + b] - gpos[0], tip[10 * L + b] - gpos[1], tip[11 * L + b] - gpos[2]
        trace = 0.0 + (tip[b] * g00 + tip[3 * L + b] * g01 + tip[6 * L + b] * g02)  # (box_bounds.orientation's order)
        trace += tip[L + b] * g10 + tip[4 * L + b] * g11 + tip[7 * L + b] * g12
        trace += tip[2 * L + b] * g20 + tip[5 * L + b] * g21 + tip[8 * L + b] * g22
        cos_turn = min(max((trace - 1.0) / 2.0, -1.0), 1.0)  # the angle's cosine (no arccos)
        miss = math.sqrt(dx * dx + dy * dy + dz * dz)
        hits += 1 if miss <= slack + near_pos and cos_turn >= nearby else 0
        sums[b], sums[L + b], sums[2 * L + b], sums[3 * L + b] = trace, cos_turn, 0.0, miss
        sums[4 * L + b], sums[5 * L + b] = widths[0, b], 0.0  # (the widest joint's half-width and index)
    if whole:
        for b in range(count):
            centre[start + b] = sums[3 * L + b] - slack if sums[L + b] >= within else math.inf
    for i in range(widths.shape[0]):
        _lane_widest(widths, i, sums, count)
    if theta < math.pi:
        _lane_turns(tip, joints, widths, rest, (gaxes, theta), start, count, excess, sums, state, trig)
    return hits > 0


def _lane_widest(widths, i, sums, count):
    """Adds joint ``i``'s half-widths to the sums (row 2) and keeps the widest (rows 4, 5: the first on a tie)."""
    L = LANES  # noqa: N806
    for b in range(count):
        h = widths[i, b]
        sums[2 * L + b] += h
        if h > sums[4 * L + b]:
            sums[4 * L + b], sums[5 * L + b] = h, float(i)


def _lane_turns(tip, joints, widths, rest, goal, start, count, excess, sums, state, trig):
    """:func:`~.box_bounds.orientation`'s refusals box by box from the lanes' traces, cosines, sums and widest
    joints, its caches carried in ``state`` (``goal``: axes, theta)."""
    (gaxes, theta), L = goal, LANES  # noqa: N806
    least = math.cos(theta)
    at = len(state) - 7  # (the turns' caches, last in ``state``)
    seen_h, cos_h, sin_h, seen_t, cos_t = state[at], state[at + 1], state[at + 2], state[at + 3], state[at + 4]
    seen_a, cos_a = state[at + 5], state[at + 6]
    for b in range(count):
        trace, cos_turn, total = sums[b], sums[L + b], sums[2 * L + b]
        if total != seen_a:
            seen_a, cos_a = total, cos_sin(trig, min(theta + total, math.pi))[0]
        off = cos_turn < cos_a  # the angle less sum_i h_i beyond theta
        for k in range(0 if off else 3):  # per axis to first order: only where its first term is below ``least``
            tx, ty, tz = tip[k * L + b], tip[(3 + k) * L + b], tip[(6 + k) * L + b]
            gx, gy, gz = gaxes[k, 0], gaxes[k, 1], gaxes[k, 2]
            top = tx * gx + ty * gy + tz * gz
            if top < least:  # (else the terms below only add to it: this axis refuses nothing)
                cx, cy, cz = ty * gz - tz * gy, tz * gx - tx * gz, tx * gy - ty * gx  # t_k x g_k
                for i in range(widths.shape[0]):  # (orientation's sum in its order)
                    ax, ay, az = joints[i, b], joints[i, L + b], joints[i, 2 * L + b]
                    bend = rest[i, b] * math.sqrt(max(1.0 - (ax * tx + ay * ty + az * tz) ** 2, 0.0))
                    top += abs(ax * cx + ay * cy + az * cz) * widths[i, b] + bend
                off = top < least
                if off:
                    break
        h, j = sums[4 * L + b], int(sums[5 * L + b])
        if not off and total - h != seen_t:  # the least angle beyond theta + the others' sum <=> the trace below this
            seen_t, cos_t = total - h, cos_sin(trig, min(theta + total - h, math.pi))[0]
        if not off and cos_turn < cos_t:  # (else the least angle, at most the centre's, refuses nothing)
            if h != seen_h:  # (siblings share most half-widths)
                seen_h, (cos_h, sin_h) = h, cos_sin(trig, h)
            columns = (tip[b], tip[3 * L + b], tip[6 * L + b], tip[L + b], tip[4 * L + b], tip[7 * L + b],
                       tip[2 * L + b], tip[5 * L + b], tip[8 * L + b])  # fmt: skip
            off = wrist_off((joints[j, b], joints[j, L + b], joints[j, 2 * L + b]), columns, gaxes, trace,
                            (h, cos_h, sin_h), cos_t)  # fmt: skip
        if off:
            excess[start + b] = math.inf
    state[at], state[at + 1], state[at + 2], state[at + 3], state[at + 4] = seen_h, cos_h, sin_h, seen_t, cos_t
    state[at + 5], state[at + 6] = seen_a, cos_a
