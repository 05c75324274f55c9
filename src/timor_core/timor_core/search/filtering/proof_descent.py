"""The descent of :func:`.proof_kernel.reach_witness`: from a configuration towards one putting a chain's TCP within a
goal's slacks, damped least squares over the chain ``T = A_0 Rz(q_1) A_1 ... Rz(q_n) A_n`` (compiled by numba, or
built ahead of time with the proofs' other kernels, :mod:`.proof_aot`).

Why its own file: element by element (no array made in its loops: array expressions made ~30 small arrays a step, most
of its time; the same operations in the same order, the same configurations found) it no longer fits beside the
bounds.
"""

from __future__ import annotations

import math
import types
from typing import Any

import numpy as np

__all__ = ["DAMPING", "ROT_FRACTION", "ROT_WEIGHT_DESCENT", "calling_compiled", "descend", "descent_error",
           "descent_step"]  # fmt: skip

DAMPING = 1e-5  # m^2: the descent's damping (J^T J of these arms ~1e-2-1 m^2)
ROT_WEIGHT_DESCENT = 0.1  # m per rad: the rotation error's weight in a descent step
ROT_FRACTION = 1.0  # a descent turns the TCP while it is more than this fraction of the goal's rotation slack off


def calling_compiled(jit: Any) -> Any:
    """:func:`descend` as a function calling ``jit``'s compilations (numba's ``njit(...)``) of its helpers: numba
    compiles a kernel only where what it calls is compiled too (numba's kernels or a build ahead of time)."""
    names = {helper.__name__: jit(helper) for helper in (descent_error, descent_step)}
    return types.FunctionType(descend.__code__, {**descend.__globals__, **names}, descend.__name__)


def descend(rot_steps, trans_steps, starts, gpos, gaxes, slack, theta, iterations, found):
    """True where a descent from one of ``starts`` (K, n) reaches a configuration (put in ``found``) whose TCP is within
    ``slack`` of ``gpos`` and ``theta`` of the goal's rotation (``gaxes``: row k axis k): damped least-squares steps
    ``(J^T J + DAMPING I) dq = J^T e`` on the position and, while the TCP turns more than ``ROT_FRACTION theta`` from
    the goal, ``ROT_WEIGHT_DESCENT`` times the rotation error ``sum_k t_k x g_k / 2`` (compiled by numba; element by
    element, no array made in the loops: array expressions made ~30 small arrays a step, most of its time)."""
    k_starts, n = starts.shape
    q, rot, turned, a, b = np.empty(n), np.empty((3, 3)), np.empty((3, 3)), np.empty((n, n)), np.empty(n)
    pos, origins, jac, e = np.empty(3), np.empty((n, 3)), np.empty((n, 6)), np.empty(6)
    for s in range(k_starts):
        for k in range(n):
            q[k] = starts[s, k]
        for it in range(iterations + 1):
            turn = descent_error(rot_steps, trans_steps, q, gpos, gaxes, rot, turned, pos, origins, jac, e)
            if math.sqrt(e[0] ** 2 + e[1] ** 2 + e[2] ** 2) <= slack and turn <= theta:
                for k in range(n):
                    found[k] = q[k]
                return True
            if it == iterations:
                break
            descent_step(ROT_WEIGHT_DESCENT if turn > ROT_FRACTION * theta else 0.0, pos, origins, jac, e, a, b)
            for k in range(n):
                q[k] += b[k]
    return False


def descent_error(rot_steps, trans_steps, q, gpos, gaxes, rot, turned, pos, origins, jac, e):
    """The TCP's pose at ``q`` (``pos``, ``rot``; the joints' ``origins``, their axes in ``jac[:, 3:]``), its error
    ``e`` (the miss, then ``sum_k t_k x g_k / 2``) and, returned, its rotation angle from the goal (compiled by
    numba)."""
    n = len(q)
    for r in range(3):
        pos[r] = trans_steps[0, r]
        for col in range(3):
            rot[r, col] = rot_steps[0, r, col]
    for k in range(n):
        c, sn = math.cos(q[k]), math.sin(q[k])
        for r in range(3):
            origins[k, r] = pos[r]  # joint k's origin and axis
            jac[k, 3 + r] = rot[r, 2]
            turned[r, 0] = c * rot[r, 0] + sn * rot[r, 1]
            turned[r, 1] = c * rot[r, 1] - sn * rot[r, 0]
            turned[r, 2] = rot[r, 2]
        for r in range(3):
            for col in range(3):
                pos[r] += turned[r, col] * trans_steps[k + 1, col]
                rot[r, col] = (turned[r, 0] * rot_steps[k + 1, 0, col] + turned[r, 1] * rot_steps[k + 1, 1, col]
                               + turned[r, 2] * rot_steps[k + 1, 2, col])  # fmt: skip
    for r in range(3):
        e[r] = gpos[r] - pos[r]
    e[3], e[4], e[5], trace = 0.0, 0.0, 0.0, 0.0
    for k in range(3):  # t_k x g_k / 2 (column k of rot, row k of gaxes), and the trace of R_g^T R
        t0, t1, t2, g0, g1, g2 = rot[0, k], rot[1, k], rot[2, k], gaxes[k, 0], gaxes[k, 1], gaxes[k, 2]
        trace += t0 * g0 + t1 * g1 + t2 * g2
        e[3] += (t1 * g2 - t2 * g1) / 2
        e[4] += (t2 * g0 - t0 * g2) / 2
        e[5] += (t0 * g1 - t1 * g0) / 2
    return math.acos(min(max((trace - 1.0) / 2.0, -1.0), 1.0))


def descent_step(w, pos, origins, jac, e, a, b):
    """The damped least-squares step ``b`` for the error ``e``, its rotation part weighted by ``w`` (``jac``'s rows:
    axis_k x (TCP - origin_k), then w axis_k; compiled by numba)."""
    n = len(b)
    for r in range(3, 6):
        e[r] *= w
    for k in range(n):
        z0, z1, z2 = jac[k, 3], jac[k, 4], jac[k, 5]
        d0, d1, d2 = pos[0] - origins[k, 0], pos[1] - origins[k, 1], pos[2] - origins[k, 2]
        jac[k, 0], jac[k, 1], jac[k, 2] = z1 * d2 - z2 * d1, z2 * d0 - z0 * d2, z0 * d1 - z1 * d0
        for r in range(3, 6):
            jac[k, r] *= w
    for i in range(n):
        acc = 0.0
        for r in range(6):
            acc += jac[i, r] * e[r]
        b[i] = acc
        for j in range(n):
            acc = 0.0
            for r in range(6):
                acc += jac[i, r] * jac[j, r]
            a[i, j] = acc + (DAMPING if i == j else 0.0)
    for i in range(n):  # Gaussian elimination (a is positive definite), then back substitution into b
        for j in range(i + 1, n):
            f = a[j, i] / a[i, i]
            for c in range(i, n):
                a[j, c] -= f * a[i, c]
            b[j] -= f * b[i]
    for i in range(n - 1, -1, -1):
        acc = 0.0
        for c in range(i + 1, n):
            acc += a[i, c] * b[c]
        b[i] = (b[i] - acc) / a[i, i]
