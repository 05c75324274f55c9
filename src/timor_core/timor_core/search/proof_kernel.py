"""The bounds of :mod:`.reach_proof` for a batch of boxes of joint angles, compiled (numba), one box at a time.

Why: a proof evaluates a few hundred boxes per level over 3-5 joints; written with numpy (:mod:`.proof_numpy`),
each level takes ~25 array calls on arrays that small, and the calls' overhead, not the arithmetic, was most of a
search on tasks like ``obstacle_middle`` (1,158 proofs). The same formulas, box by box in compiled loops, take the
arithmetic's time: 600 of its proofs 7.8 -> 1.1 s of CPU, the same decisions, boxes and margins.

Loading numba and these kernels (from numba's cache beside this file, compiled there on first use) costs a
process ~1.3 s, more than a short search spends on all its proofs. So a process runs the numpy bounds until they
have taken ``LOAD_AFTER`` seconds, then loads the compiled ones (the ski-rental rule: never more than about twice
the better choice's time). Importing timor_core never loads numba.
"""

from __future__ import annotations

import functools
import math
import time
from typing import Any

import numpy as np

from timor_core.search.proof_numpy import halve_boxes_numpy, measure_boxes_numpy

__all__ = ["LOAD_AFTER", "halve_boxes", "load_compiled", "measure_boxes", "use_compiled"]

LOAD_AFTER = 1.0  # s of numpy bounds in one process, then the compiled ones (~1.3 s to load)


class _Switch:
    """Which bounds this process runs: the time spent in the numpy ones so far, and a test's choice."""

    spent = 0.0
    forced: bool | None = None


def use_compiled(choice: bool | None) -> None:
    """Run the compiled bounds (True) or the numpy ones (False) from now on, in this process; None: the rule of the
    module docstring (for the tests that check both)."""
    _Switch.forced = choice


def load_compiled() -> None:
    """Load numba and the compiled bounds now (~1.3 s), so that this process runs them from its first proof: for
    long-lived workers (a Dask cluster's) that will run many searches."""
    _kernels()  # from now on this process runs the compiled bounds; a first call of each loads its machine code
    centres, half = np.zeros((1, 1)), np.ones((1, 1))
    steps, at = np.tile(np.eye(3), (2, 1, 1)), np.zeros((2, 3))
    measure_boxes(steps, at, centres, half, (np.ones(3), np.eye(3), 0.0, 0.0, np.ones(3), 0.0), (0.0, 0.0), 0.0)
    halve_boxes(centres, half, np.ones(1), 1)


def _compiled() -> tuple[Any, Any] | None:
    """The compiled kernels if this process runs them (loading them if it is time), else None."""
    if _Switch.forced is False:
        return None
    if _Switch.forced or _Switch.spent >= LOAD_AFTER or _kernels.cache_info().currsize:
        return _kernels()
    return None


def measure_boxes(
    rotations: np.ndarray,
    translations: np.ndarray,
    centres: np.ndarray,
    half: np.ndarray,
    goal: tuple[np.ndarray, np.ndarray, float, float, np.ndarray, float],
    near: tuple[float, float],
    rot_weight: float,
) -> tuple[np.ndarray, bool, np.ndarray]:
    """Per box (``centres``, ``half`` (M, n)) of the chain ``T = A_0 Rz(q_1) A_1 ... Rz(q_n) A_n`` (``rotations``
    (n + 1, 3, 3) and ``translations`` (n + 1, 3) of the ``A_k``): by how much no configuration in it puts the TCP
    within the slack of ``goal`` = (position, axes as rows, position slack, rotation slack, wrist direction, wrist
    distance) (inf: not at the goal's orientation; <= 0: maybe); whether a box centre is within ``near`` (m, rad)
    of the goal; per box and joint the TCP's distance from the joint's axis at the centre plus ``rot_weight``."""
    kernels = _compiled()
    if kernels is None:
        start = time.perf_counter()
        out = measure_boxes_numpy(rotations, translations, centres, half, goal, near, rot_weight)
        _Switch.spent += time.perf_counter() - start
        return out
    pos, axes, slack, theta, direction, length = goal
    excess = np.empty(len(centres))
    weights = np.empty(centres.shape)
    found = kernels[0](
        np.ascontiguousarray(rotations, dtype=np.float64),
        np.ascontiguousarray(translations, dtype=np.float64),
        np.ascontiguousarray(centres, dtype=np.float64),
        np.ascontiguousarray(half, dtype=np.float64),
        np.ascontiguousarray(pos, dtype=np.float64),
        np.ascontiguousarray(axes, dtype=np.float64),
        float(slack),
        float(theta),
        np.ascontiguousarray(direction, dtype=np.float64),
        float(length),
        float(near[0]),
        float(near[1]),
        float(rot_weight),
        excess,
        weights,
    )
    return excess, bool(found), weights


def halve_boxes(
    centres: np.ndarray, half: np.ndarray, weights: np.ndarray, times: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every box (``centres``, ``half`` (M, n)) cut in two ``times`` times, each time across its widest side
    (half-width times ``weights``: (M, n), or (n,) for all; the first such side on a tie): the ``2**times``
    children of each box in turn, the first cut's lower half first."""
    kernels = _compiled()
    if kernels is None:
        start = time.perf_counter()
        out = halve_boxes_numpy(centres, half, weights, times)
        _Switch.spent += time.perf_counter() - start
        return out
    m, n = centres.shape
    weights = np.ascontiguousarray(np.atleast_2d(weights), dtype=np.float64)
    children = np.empty((m << times, n))
    child_half = np.empty((m << times, n))
    kernels[1](
        np.ascontiguousarray(centres, dtype=np.float64), np.ascontiguousarray(half, dtype=np.float64), weights,
        times, children, child_half,
    )  # fmt: skip
    return children, child_half


@functools.cache
def _kernels() -> tuple[Any, Any]:
    import numba  # noqa: PLC0415 (on the first proof only: see the module docstring)

    compile_ = numba.njit(cache=True, fastmath=False, nogil=True)
    return compile_(_boxes), compile_(_halves)


def _halves(centres, half, weights, times, children, child_half):
    """Fills ``children`` and ``child_half`` (compiled by numba; see :func:`halve_boxes`)."""
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


def _boxes(rot_steps, trans_steps, centres, half, gpos, gaxes, slack, theta, direction, length, near_pos, near_angle,
           rot_weight, excess, weights):  # fmt: skip
    """Fills ``excess`` and ``weights``; returns whether a box centre is near the goal (compiled by numba: plain
    loops over the boxes, joints and coordinates)."""
    m, n = centres.shape
    origins = np.empty((n, 3))
    jaxes = np.empty((n, 3))
    rot = np.empty((3, 3))
    turned = np.empty((3, 3))
    nxt = np.empty((3, 3))
    pos = np.empty(3)
    chord = np.empty(n)
    rest = np.empty(n)
    reach_tcp = np.empty(n)
    reach_wrist = np.empty(n)
    finite_slack = math.isfinite(slack)
    cos_theta = math.cos(theta)
    found = False
    for b in range(m):
        # the chain's pose at the box's centre, one joint frame after the other
        for r in range(3):
            pos[r] = trans_steps[0, r]
            for col in range(3):
                rot[r, col] = rot_steps[0, r, col]
        for k in range(n):
            for r in range(3):
                jaxes[k, r] = rot[r, 2]
                origins[k, r] = pos[r]
            c, s = math.cos(centres[b, k]), math.sin(centres[b, k])
            for r in range(3):
                turned[r, 0] = c * rot[r, 0] + s * rot[r, 1]
                turned[r, 1] = c * rot[r, 1] - s * rot[r, 0]
                turned[r, 2] = rot[r, 2]
            for r in range(3):
                pos[r] += (
                    turned[r, 0] * trans_steps[k + 1, 0]
                    + turned[r, 1] * trans_steps[k + 1, 1]
                    + (turned[r, 2] * trans_steps[k + 1, 2])
                )
                for col in range(3):
                    nxt[r, col] = (
                        turned[r, 0] * rot_steps[k + 1, 0, col]
                        + turned[r, 1] * rot_steps[k + 1, 1, col]
                        + turned[r, 2] * rot_steps[k + 1, 2, col]
                    )
            for r in range(3):
                for col in range(3):
                    rot[r, col] = nxt[r, col]
        # the miss and the TCP's axes (rot's columns) against the goal's
        dx, dy, dz = pos[0] - gpos[0], pos[1] - gpos[1], pos[2] - gpos[2]
        miss = math.sqrt(dx * dx + dy * dy + dz * dz)
        trace = 0.0
        for k in range(3):
            trace += rot[0, k] * gaxes[k, 0] + rot[1, k] * gaxes[k, 1] + rot[2, k] * gaxes[k, 2]
        turn = math.acos(min(max((trace - 1.0) / 2.0, -1.0), 1.0))
        if miss <= slack + near_pos and turn <= theta + near_angle:
            found = True
        # each joint: its distance from the TCP and from the wrist, the chord, the rest beyond first order
        wx, wy, wz = origins[n - 1, 0], origins[n - 1, 1], origins[n - 1, 2]
        ux, uy, uz = dx / max(miss, 1e-300), dy / max(miss, 1e-300), dz / max(miss, 1e-300)
        moves_tcp, moves_wrist, first, second, before = 0.0, 0.0, 0.0, 0.0, 0.0
        for i in range(n):
            ax, ay, az = jaxes[i, 0], jaxes[i, 1], jaxes[i, 2]
            px, py, pz = pos[0] - origins[i, 0], pos[1] - origins[i, 1], pos[2] - origins[i, 2]
            along = px * ax + py * ay + pz * az
            reach_tcp[i] = math.sqrt(max(px * px + py * py + pz * pz - along * along, 0.0))
            qx, qy, qz = wx - origins[i, 0], wy - origins[i, 1], wz - origins[i, 2]
            along = qx * ax + qy * ay + qz * az
            reach_wrist[i] = math.sqrt(max(qx * qx + qy * qy + qz * qz - along * along, 0.0))
            h = half[b, i]
            chord[i] = 2.0 * math.sin(h / 2.0)
            rest[i] = (h - math.sin(h)) + chord[i] * chord[i] / 2.0 + chord[i] * before
            before += h
            moves_tcp += chord[i] * reach_tcp[i]
            moves_wrist += chord[i] * reach_wrist[i]
            # the TCP's velocity per radian of joint i (axis x (tcp - origin)) along the miss's direction
            jx, jy, jz = ay * pz - az * py, az * px - ax * pz, ax * py - ay * px
            first += abs(jx * ux + jy * uy + jz * uz) * h
            second += rest[i] * reach_tcp[i]
            weights[b, i] = reach_tcp[i] + rot_weight
        out = max(miss - moves_tcp - slack, miss - first - second - slack)
        if finite_slack:
            # the wrist's distance from the cap {goal + length u: |u| = 1, angle(u, direction) <= theta}
            yx, yy, yz = wx - gpos[0], wy - gpos[1], wz - gpos[2]
            cap = math.sqrt(yx * yx + yy * yy + yz * yz)
            if length > 0.0:
                cos_a = (yx * direction[0] + yy * direction[1] + yz * direction[2]) / max(cap, 1e-300)
                beyond = max(math.acos(min(max(cos_a, -1.0), 1.0)) - theta, 0.0)
                cap = math.sqrt(max(cap * cap + length * length - 2.0 * cap * length * math.cos(beyond), 0.0))
            out = max(out, cap - moves_wrist - slack)
        if theta < math.pi:
            off = turn - before > theta
            for k in range(3):
                if off:
                    break
                tx, ty, tz = rot[0, k], rot[1, k], rot[2, k]
                gx, gy, gz = gaxes[k, 0], gaxes[k, 1], gaxes[k, 2]
                top = tx * gx + ty * gy + tz * gz
                cx, cy, cz = ty * gz - tz * gy, tz * gx - tx * gz, tx * gy - ty * gx  # t_k x g_k
                for i in range(n):
                    ax, ay, az = jaxes[i, 0], jaxes[i, 1], jaxes[i, 2]
                    cos_i = ax * tx + ay * ty + az * tz
                    top += abs(ax * cx + ay * cy + az * cz) * half[b, i]
                    top += rest[i] * math.sqrt(max(1.0 - cos_i * cos_i, 0.0))
                off = top < cos_theta
            if off:
                out = math.inf
        excess[b] = out
    return found
