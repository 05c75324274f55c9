"""The goal's residual of the IK's compiled descents (:mod:`.ik_jit`): :func:`terms` at a pose, and Pinocchio's log3
that its angle takes, compiled with numba as ``ik_residual``'s sphere_cone / box_cone closures compute them
(imported with :mod:`.ik_jit`, once a process runs compiled kernels).

``params`` of a goal (:meth:`.ik_residual.Projector.lm_params`): [0:3] its position, [3:12] its rotation (row by
row), [12:15] / [15:18] the x/y/z box's low / high bounds in its frame, [18:20] r_sph's and [20:22] Theta_R's
bounds, [22] 0 for a sphere/cone goal (residual in world axes), 1 for a box/cone goal, [23] r_sph given,
[24] Theta_R given, [25] the angle weight.
"""

from __future__ import annotations

import math

import numba
import numpy as np

__all__ = ["log3", "terms"]

_jit = numba.njit(cache=True, fastmath=False, nogil=True)
_inline = numba.njit(cache=True, fastmath=False, nogil=True, inline="always")  # (as :mod:`.ik_jit`'s helpers)
_EPS = 2.220446049250313e-16
_PREC = _EPS ** (1.0 / 3.0)  # Pinocchio's TaylorSeriesExpansion<double>::precision<2>()


@_inline
def log3(R, out):
    """``out`` (3,) Pinocchio's log3 of the rotation ``R`` (its formulas: renormalised, the Taylor branch near 0,
    the axis from the diagonal near pi)."""
    Rn = np.empty((3, 3))  # Pinocchio's renormalize_rotation_matrix: columns 0, 1 normed, 2 = 0 x 1, 0 = 1 x 2
    n0 = math.sqrt(R[0, 0] ** 2 + R[1, 0] ** 2 + R[2, 0] ** 2)
    n1 = math.sqrt(R[0, 1] ** 2 + R[1, 1] ** 2 + R[2, 1] ** 2)
    for r in range(3):
        Rn[r, 0], Rn[r, 1] = R[r, 0] / n0, R[r, 1] / n1
    Rn[0, 2] = Rn[1, 0] * Rn[2, 1] - Rn[2, 0] * Rn[1, 1]
    Rn[1, 2] = Rn[2, 0] * Rn[0, 1] - Rn[0, 0] * Rn[2, 1]
    Rn[2, 2] = Rn[0, 0] * Rn[1, 1] - Rn[1, 0] * Rn[0, 1]
    Rn[0, 0] = Rn[1, 1] * Rn[2, 2] - Rn[2, 1] * Rn[1, 2]
    Rn[1, 0] = Rn[2, 1] * Rn[0, 2] - Rn[0, 1] * Rn[2, 2]
    Rn[2, 0] = Rn[0, 1] * Rn[1, 2] - Rn[1, 1] * Rn[0, 2]
    tr = Rn[0, 0] + Rn[1, 1] + Rn[2, 2]
    cos_value = (tr - 1.0) / 2.0
    if cos_value < -1.0 + _PREC:
        _log3_near_pi(Rn, tr, out)
        return
    acos_expansion = math.sqrt(2.0 * (1.0 - cos_value) + _EPS * _EPS)
    if tr <= 3.0 - _PREC:
        theta = math.acos(cos_value) if tr >= -1.0 + _PREC else math.pi - acos_expansion
    else:
        theta = acos_expansion
    a0, a1, a2 = 0.5 * (Rn[2, 1] - Rn[1, 2]), 0.5 * (Rn[0, 2] - Rn[2, 0]), 0.5 * (Rn[1, 0] - Rn[0, 1])
    sq = a0 * a0 + a1 * a1 + a2 * a2
    t = theta / math.sin(theta) if theta >= _PREC else 1.0 + sq / 6.0 + sq * sq * 3.0 / 40.0
    out[0], out[1], out[2] = t * a0, t * a1, t * a2


@_jit
def _log3_near_pi(Rn, tr, out):
    """log3 of a rotation by nearly pi: the axis from the largest of ``2 R_ii - tr + 1`` (as Pinocchio)."""
    v0, v1, v2 = 2.0 * Rn[0, 0] - tr + 1.0, 2.0 * Rn[1, 1] - tr + 1.0, 2.0 * Rn[2, 2] - tr + 1.0
    if v0 >= v1:
        i0, val = (0, v0) if v0 >= v2 else (2, v2)
    else:
        i0, val = (1, v1) if v1 >= v2 else (2, v2)
    i1, i2 = (i0 + 1) % 3, (i0 + 2) % 3
    s = math.sqrt(val + _EPS + _EPS * _EPS) * (1.0 if Rn[i2, i1] >= Rn[i1, i2] else -1.0)
    axis = np.empty(3)
    axis[i0] = s / 2.0
    axis[i1] = 1.0 / (2.0 * s) * (Rn[i1, i0] + Rn[i0, i1])
    axis[i2] = 1.0 / (2.0 * s) * (Rn[i2, i0] + Rn[i0, i2])
    w = 1.0 / (2.0 * s) * (Rn[i2, i1] - Rn[i1, i2])
    norm = math.sqrt(axis[0] ** 2 + axis[1] ** 2 + axis[2] ** 2)
    angle = 2.0 * math.atan2(norm, w)
    for k in range(3):
        out[k] = angle * axis[k] / norm


@_inline
def terms(T, params, r, rot_work):
    """The goal's weighted residual ``r`` (6,) at the pose ``T``; returns its squared norm and which of its six
    components are non-zero (bit k: component k), as ``ik_residual``'s sphere_cone / box_cone closures."""
    x, y, z = T[0, 3] - params[0], T[1, 3] - params[1], T[2, 3] - params[2]
    box = params[22] != 0.0
    factor = 0.0
    if not box:
        dist = math.sqrt(x * x + y * y + z * z)
        s_lo, s_hi = params[18], params[19]
        factor = 1.0 - s_hi / dist if dist > s_hi else (1.0 - s_lo / dist if 0.0 < dist < s_lo else 0.0)
        x, y, z = x * factor, y * factor, z * factor
    else:
        x, y, z = _box_residual(x, y, z, params)
    u = v = w = 0.0
    if params[24] != 0.0:
        for row in range(3):  # R R_d^T
            for col in range(3):
                rot_work[row, col] = T[row, 0] * params[3 + 3 * col] + T[row, 1] * params[4 + 3 * col] + \
                    T[row, 2] * params[5 + 3 * col]  # fmt: skip
        out = np.empty(3)
        log3(rot_work, out)
        u, v, w = out[0], out[1], out[2]
        th = math.sqrt(u * u + v * v + w * w)
        t_lo, t_hi = params[20], params[21]
        target = t_hi if th > t_hi else (t_lo if th < t_lo else th)
        k = (1.0 - target / th) * params[25] if th != target and th > 0.0 else 0.0
        u, v, w = u * k, v * k, w * k
    r[0], r[1], r[2], r[3], r[4], r[5] = x, y, z, u, v, w
    cost = x * x + y * y + z * z + u * u + v * v + w * w
    if box:
        bits = (x != 0.0) | (y != 0.0) << 1 | (z != 0.0) << 2 | (u != 0.0) << 3 | (v != 0.0) << 4 | (w != 0.0) << 5
    elif u != 0.0 or v != 0.0 or w != 0.0:
        bits = 63 if factor != 0.0 else 56
    else:
        bits = 7 if factor != 0.0 else 0
    return cost, bits


@_inline
def _box_residual(x, y, z, params):
    """The position residual of a box goal (and r_sph with it) in world axes, from the error ``x, y, z``."""
    a, b, c, d, e, f, g, h, i = params[3], params[4], params[5], params[6], params[7], params[8], params[9], \
        params[10], params[11]  # fmt: skip
    ex, ey, ez = a * x + d * y + g * z, b * x + e * y + h * z, c * x + f * y + i * z  # in the nominal frame
    lx, ly, lz, hx, hy, hz = params[12], params[13], params[14], params[15], params[16], params[17]
    bx = ex - lx if ex < lx else (ex - hx if ex > hx else 0.0)
    by = ey - ly if ey < ly else (ey - hy if ey > hy else 0.0)
    bz = ez - lz if ez < lz else (ez - hz if ez > hz else 0.0)
    if params[23] != 0.0:
        s_lo, s_hi = params[18], params[19]
        rad = math.sqrt(ex * ex + ey * ey + ez * ez)
        target = s_lo if rad < s_lo else (s_hi if rad > s_hi else rad)
        if rad != target and rad > 0.0:  # per axis, the larger of the box's and the sphere's residual
            k = 1.0 - target / rad
            bx = ex * k if abs(ex * k) > abs(bx) else bx
            by = ey * k if abs(ey * k) > abs(by) else by
            bz = ez * k if abs(ez * k) > abs(bz) else bz
    return a * bx + b * by + c * bz, d * bx + e * by + f * bz, g * bx + h * by + i * bz
