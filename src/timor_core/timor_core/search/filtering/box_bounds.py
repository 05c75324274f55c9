"""The bounds of :mod:`.reach_proof` per box of joint angles, box by box (compiled by numba, now or ahead of time:
:mod:`.proof_kernel`, :mod:`.proof_aot`): the poses at the box centres, the position and orientation bounds, the
halving; and the table of cosines and sines they (and :mod:`.sweep_bound`'s bound) take their angles' from.

Why the table: a search's boxes come from halving the whole turn, so their centres and half-widths are few values
(~1,750 centres on ``obstacles_4``, 1.6 M joint frames computed), but each box took its own ``sin``/``cos`` calls
(849 k of ``sincos`` in a search's poses, ~18 ns each). Kept per argument in a table of :data:`TRIG_SLOTS`, they are
computed once: every value is ``math.cos(x)``/``math.sin(x)`` of exactly its argument, so the bounds are the same to
the last bit (``tests/test_box_bounds.py``), and a search's proofs take 15-20 % less CPU, its sweep proofs ~13 %
(with the poses' frames in registers; benchmarks/README.md, s52-simd).
"""

from __future__ import annotations

import math
import threading

import numpy as np

__all__ = ["TRIG_SLOTS", "cos_sin", "halves", "orientation", "poses", "position", "trig_table", "wrist_off"]

TRIG_SLOTS = 4096  # the table's slots (x, cos x, sin x): 96 kB, more than the distinct arguments of a search
_SCALE = 2.0**20 / math.pi  # an argument's slot hashes its multiple of pi / 2**20 (boxes' angles are such sums)
_LOCAL = threading.local()


def trig_table() -> np.ndarray:
    """This thread's table for :func:`cos_sin` ((:data:`TRIG_SLOTS`, 3): argument, cosine, sine; NaN: empty),
    made on its first call and kept: the kernels run without the GIL, so threads do not share one (a slot written
    by two at once could pair one's argument with the other's values)."""
    table = getattr(_LOCAL, "table", None)
    if table is None:
        table = _LOCAL.table = np.full((TRIG_SLOTS, 3), np.nan)
    return table


def cos_sin(table, x):
    """``math.cos(x), math.sin(x)``, from ``table`` (:func:`trig_table`) where x's slot holds x (put there else):
    the same values to the last bit. An argument far from any angle (or NaN) is computed, never kept; a zero is
    not kept either (0.0 == -0.0: the slot would give one's sine for the other's)."""
    if x == 0.0:
        return 1.0, x  # (cos(+-0) = 1, sin(+-0) = +-0, exactly)
    if not abs(x) < 1e3:
        return math.cos(x), math.sin(x)
    slot = (((int(x * _SCALE) & 0xFFFFFF) * 2654435761) >> 32) & (TRIG_SLOTS - 1)  # (no overflow: 24 + 32 bits)
    if table[slot, 0] != x:
        table[slot, 0], table[slot, 1], table[slot, 2] = x, math.cos(x), math.sin(x)
    return table[slot, 1], table[slot, 2]


def halves(centres, half, weights, times, children, child_half):
    """Fills ``children`` and ``child_half`` (compiled by numba; see :func:`~.proof_kernel.halve_boxes`)."""
    m, n = centres.shape
    h = np.empty(n)
    offsets = np.zeros((times, n))
    per_box = weights.shape[0] > 1
    for b in range(m):
        w = b if per_box else 0
        for i in range(n):
            h[i] = half[b, i]
        offsets[:, :] = 0.0
        for t in range(times):
            split, widest = 0, h[0] * weights[w, 0]
            for i in range(1, n):
                if h[i] * weights[w, i] > widest:
                    split, widest = i, h[i] * weights[w, i]
            h[split] /= 2.0
            offsets[t, split] = h[split]
        for s in range(1 << times):
            row = (b << times) + s
            for i in range(n):
                step = 0.0
                for t in range(times):  # the bit of cut t, the first cut's the highest: -1 (0) or +1 (1)
                    sign = 1.0 if (s >> (times - 1 - t)) & 1 else -1.0
                    step += sign * offsets[t, i]
                children[row, i] = centres[b, i] + step
                child_half[row, i] = h[i]


def poses(rot_steps, trans_steps, centres, tcp, rot, origins, jaxes, trig):
    """Per box centre: the TCP's position ``tcp`` (M, 3) and rotation ``rot`` (M, 3, 3), the joints' ``origins`` and
    axes ``jaxes`` (M, n, 3) in the world, one joint frame after the other (compiled by numba; the angles' cosines
    and sines from ``trig``, :func:`cos_sin`). The frames up to the first joint whose angle differs from the box
    before's are that box's (the same values: siblings share most). A frame's entries are scalars, not a small
    array's: the same arithmetic in the same order, ~10 % less time (LLVM keeps them in registers)."""
    m, n = centres.shape
    at_rot, at_tcp = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))  # the frames before joint k
    seen, cosines, sines = np.full(n, np.nan), np.empty(n), np.empty(n)  # per joint the last angle's
    at_tcp[0, :], at_rot[0, :, :] = trans_steps[0], rot_steps[0]
    for b in range(m):
        same = 0
        while b > 0 and same < n and centres[b, same] == centres[b - 1, same]:
            same += 1
        for k in range(same):  # (the box before's frame, the same arithmetic on the same angles)
            for r in range(3):
                jaxes[b, k, r], origins[b, k, r] = jaxes[b - 1, k, r], origins[b - 1, k, r]
        for k in range(same, n):
            if centres[b, k] != seen[k]:
                seen[k] = centres[b, k]
                cosines[k], sines[k] = cos_sin(trig, seen[k])
            c, s = cosines[k], sines[k]
            a00, a01, a02 = at_rot[k, 0, 0], at_rot[k, 0, 1], at_rot[k, 0, 2]
            a10, a11, a12 = at_rot[k, 1, 0], at_rot[k, 1, 1], at_rot[k, 1, 2]
            a20, a21, a22 = at_rot[k, 2, 0], at_rot[k, 2, 1], at_rot[k, 2, 2]
            p0, p1, p2 = at_tcp[k, 0], at_tcp[k, 1], at_tcp[k, 2]
            jaxes[b, k, 0], jaxes[b, k, 1], jaxes[b, k, 2] = a02, a12, a22
            origins[b, k, 0], origins[b, k, 1], origins[b, k, 2] = p0, p1, p2
            t00, t01, t10 = c * a00 + s * a01, c * a01 - s * a00, c * a10 + s * a11  # the frame turned by the angle
            t11, t20, t21 = c * a11 - s * a10, c * a20 + s * a21, c * a21 - s * a20
            x0, x1, x2 = trans_steps[k + 1, 0], trans_steps[k + 1, 1], trans_steps[k + 1, 2]
            at_tcp[k + 1, 0] = p0 + t00 * x0 + t01 * x1 + a02 * x2
            at_tcp[k + 1, 1] = p1 + t10 * x0 + t11 * x1 + a12 * x2
            at_tcp[k + 1, 2] = p2 + t20 * x0 + t21 * x1 + a22 * x2
            for col in range(3):
                r0, r1, r2 = rot_steps[k + 1, 0, col], rot_steps[k + 1, 1, col], rot_steps[k + 1, 2, col]
                at_rot[k + 1, 0, col] = t00 * r0 + t01 * r1 + a02 * r2
                at_rot[k + 1, 1, col] = t10 * r0 + t11 * r1 + a12 * r2
                at_rot[k + 1, 2, col] = t20 * r0 + t21 * r1 + a22 * r2
        for r in range(3):  # (element by element: a row's slice costs numba an array each)
            tcp[b, r] = at_tcp[n, r]
            for col in range(3):
                rot[b, r, col] = at_rot[n, r, col]


def position(tcp, origins, jaxes, half, gpos, slack, direction, length, theta, rot_weight, excess, weights, rest,
             trig):  # fmt: skip
    """Per box: ``excess`` by the position bounds (the sequential chords, first order plus ``rest``, the wrist's
    cap), ``weights`` (the TCP's distance from each joint's axis plus ``rot_weight``) and ``rest`` (M, n), the
    second-order rest per unit distance (compiled by numba; sines from ``trig``, :func:`cos_sin`)."""
    m, n = half.shape
    seen, chords, bends = np.full(n, -1.0), np.empty(n), np.empty(n)  # per joint the last half-width's terms
    cos_theta, sin_theta = math.cos(min(theta, math.pi)), math.sin(min(theta, math.pi))
    for b in range(m):
        dx, dy, dz = tcp[b, 0] - gpos[0], tcp[b, 1] - gpos[1], tcp[b, 2] - gpos[2]
        miss = math.sqrt(dx * dx + dy * dy + dz * dz)
        unit = max(miss, 1e-300)
        ux, uy, uz = dx / unit, dy / unit, dz / unit
        wx, wy, wz = origins[b, n - 1, 0], origins[b, n - 1, 1], origins[b, n - 1, 2]
        moves_tcp, moves_wrist, first, second, before = 0.0, 0.0, 0.0, 0.0, 0.0
        for i in range(n):
            ax, ay, az = jaxes[b, i, 0], jaxes[b, i, 1], jaxes[b, i, 2]
            px, py, pz = tcp[b, 0] - origins[b, i, 0], tcp[b, 1] - origins[b, i, 1], tcp[b, 2] - origins[b, i, 2]
            along = px * ax + py * ay + pz * az
            reach_tcp = math.sqrt(max(px * px + py * py + pz * pz - along * along, 0.0))
            qx, qy, qz = wx - origins[b, i, 0], wy - origins[b, i, 1], wz - origins[b, i, 2]
            along = qx * ax + qy * ay + qz * az
            reach_wrist = math.sqrt(max(qx * qx + qy * qy + qz * qz - along * along, 0.0))
            h = half[b, i]
            if h != seen[i]:  # (sibling boxes share most half-widths: the same terms, not computed again)
                seen[i], chords[i], bends[i] = h, 2.0 * cos_sin(trig, h / 2.0)[1], h - cos_sin(trig, h)[1]
            chord = chords[i]
            rest[b, i] = bends[i] + chord * chord / 2.0 + chord * before
            before += h
            moves_tcp += chord * reach_tcp
            moves_wrist += chord * reach_wrist
            jx, jy, jz = ay * pz - az * py, az * px - ax * pz, ax * py - ay * px  # the TCP's velocity per radian
            first += abs(jx * ux + jy * uy + jz * uz) * h
            second += rest[b, i] * reach_tcp
            weights[b, i] = reach_tcp + rot_weight
        out = max(miss - moves_tcp - slack, miss - first - second - slack)
        if math.isfinite(slack):  # the wrist's distance from its cap {goal + length u, angle(u, direction) <= theta}
            yx, yy, yz = wx - gpos[0], wy - gpos[1], wz - gpos[2]
            cap = math.sqrt(yx * yx + yy * yy + yz * yz)
            if length > 0.0:  # cos(max(a - theta, 0)) of the angle a = acos(c) from ``direction``, no arccos
                c = min(max((yx * direction[0] + yy * direction[1] + yz * direction[2]) / max(cap, 1e-300), -1.0), 1.0)
                turned = 1.0 if c >= cos_theta else c * cos_theta + math.sqrt(max(1.0 - c * c, 0.0)) * sin_theta
                cap = math.sqrt(max(cap * cap + length * length - 2.0 * cap * length * turned, 0.0))
            out = max(out, cap - moves_wrist - slack)
        excess[b] = out


def orientation(tcp, rot, jaxes, half, rest, gpos, gaxes, slack, theta, near_pos, near_angle, excess, centre, trig):
    """Per box: ``excess`` set to inf where the orientation bounds refuse it (the angle less ``sum_i h_i``; per axis
    to first order; :func:`~.proof_numpy.one_joint`), and where ``centre`` has a place per box, the centre's miss less
    ``slack`` if it is within ``theta`` of the goal's rotation, else inf; returns whether a box centre is within
    ``near_pos``, ``near_angle`` of the goal (compiled by numba; ``trig``: :func:`cos_sin`'s). By cosines: no arccos."""
    m, n = half.shape
    found, least, centres = False, math.cos(theta), len(centre) == m
    within, nearby = math.cos(min(theta, math.pi)), math.cos(min(theta + near_angle, math.pi))  # (acos falls)
    seen_h, cos_h, sin_h, seen_t, cos_t, seen_a, cos_a = -1.0, 1.0, 0.0, -1.0, 1.0, -1.0, 1.0  # (the last h's, sums')
    for b in range(m):
        dx, dy, dz = tcp[b, 0] - gpos[0], tcp[b, 1] - gpos[1], tcp[b, 2] - gpos[2]
        trace, total, j = 0.0, 0.0, 0
        for k in range(3):
            trace += rot[b, 0, k] * gaxes[k, 0] + rot[b, 1, k] * gaxes[k, 1] + rot[b, 2, k] * gaxes[k, 2]
        for i in range(n):
            total += half[b, i]
            if half[b, i] > half[b, j]:  # (j: the widest joint, the first on a tie)
                j = i
        cos_turn = min(max((trace - 1.0) / 2.0, -1.0), 1.0)  # the angle's cosine (no arccos: see the docstring)
        miss = math.sqrt(dx * dx + dy * dy + dz * dz)
        found = found or (miss <= slack + near_pos and cos_turn >= nearby)
        if centres:
            centre[b] = miss - slack if cos_turn >= within else math.inf
        if theta >= math.pi:
            continue
        if total != seen_a:
            seen_a, cos_a = total, cos_sin(trig, min(theta + total, math.pi))[0]
        off = cos_turn < cos_a  # the angle less sum_i h_i beyond theta
        for k in range(3):
            if off:
                break
            tx, ty, tz = rot[b, 0, k], rot[b, 1, k], rot[b, 2, k]
            gx, gy, gz = gaxes[k, 0], gaxes[k, 1], gaxes[k, 2]
            top = tx * gx + ty * gy + tz * gz
            if top >= least:  # the terms below only add to it: this axis refuses nothing (not summed)
                continue
            cx, cy, cz = ty * gz - tz * gy, tz * gx - tx * gz, tx * gy - ty * gx  # t_k x g_k
            for i in range(n):
                ax, ay, az = jaxes[b, i, 0], jaxes[b, i, 1], jaxes[b, i, 2]
                cos_i = ax * tx + ay * ty + az * tz
                top += abs(ax * cx + ay * cy + az * cz) * half[b, i] + rest[b, i] * math.sqrt(max(1.0 - cos_i**2, 0.0))
            off = top < least
        h = half[b, j]
        if not off and total - h != seen_t:  # the least angle beyond theta + the others' sum <=> the trace below this
            seen_t, cos_t = total - h, cos_sin(trig, min(theta + total - h, math.pi))[0]
        if not off and cos_turn < cos_t:  # (else the least angle, at most the centre's, refuses nothing)
            if h != seen_h:  # (siblings share most half-widths)
                seen_h, (cos_h, sin_h) = h, cos_sin(trig, h)
            columns = (rot[b, 0, 0], rot[b, 1, 0], rot[b, 2, 0], rot[b, 0, 1], rot[b, 1, 1], rot[b, 2, 1], rot[b, 0, 2],
                       rot[b, 1, 2], rot[b, 2, 2])  # fmt: skip
            off = wrist_off((jaxes[b, j, 0], jaxes[b, j, 1], jaxes[b, j, 2]), columns, gaxes, trace, (h, cos_h, sin_h),
                            cos_t)  # fmt: skip
        if off:
            excess[b] = math.inf
    return found


def wrist_off(axis, columns, gaxes, trace, turn, cos_t):
    """:func:`orientation`'s last test: whether the least angle from the goal's rotation over the widest joint's
    turn (``axis``; ``turn``: its half-width h, cos h, sin h) is beyond the bound whose cosine is ``cos_t``, the TCP's
    rotation given by its ``columns`` (x, y, z of each column in turn) and ``trace``."""
    (ax, ay, az), (h, cos_h, sin_h), w, q = axis, turn, 0.0, -trace
    for k in range(3):
        tx, ty, tz = columns[3 * k], columns[3 * k + 1], columns[3 * k + 2]
        gx, gy, gz = gaxes[k, 0], gaxes[k, 1], gaxes[k, 2]
        w += ax * (ty * gz - tz * gy) + ay * (tz * gx - tx * gz) + az * (tx * gy - ty * gx)
        q += (ax * tx + ay * ty + az * tz) * (ax * gx + ay * gy + az * gz)
    r = math.sqrt(w * w + q * q)  # the most of W sin d - Q cos d: r where its peak lies within |d| <= h
    top = r if h >= math.pi or -q >= r * cos_h else abs(w) * sin_h - q * cos_h
    return (trace + q + top - 1.0) / 2.0 < cos_t
