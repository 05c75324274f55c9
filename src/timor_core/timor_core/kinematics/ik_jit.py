"""The numba kernels of :mod:`.ik_kernel` (imported by it only once a process runs compiled kernels: importing this
module imports numba and compiles, or loads from numba's cache, every kernel below): a serial chain's frame pose and
Jacobian, the damped least-squares step, the descent and its limits' guard. The goal's residual they take (and the
``params`` of a goal) is :mod:`.ik_jit_residual`'s.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numba
import numpy as np

from timor_core.common.jit_cache import keyed
from timor_core.kinematics import ik_jit_residual
from timor_core.kinematics.ik_jit_residual import log3, terms

__all__ = ["SOURCES", "best_start", "descend", "forward", "frame_pose", "jacobian", "linearize", "log3", "terms"]

_jit = numba.njit(cache=True, fastmath=False, nogil=True)
# the descent's helpers inlined (numba IR): a call of a compiled function counts references of each array it is
# given (atomic, a third of the tries' CPU in `perf`); inlined, the same operations run without them
_inline = numba.njit(cache=True, fastmath=False, nogil=True, inline="always")

SOURCES = (Path(__file__).resolve(), Path(ik_jit_residual.__file__).resolve())
"""The files of the descents' kernels: the name of every kernel that calls into another of them ends in their
digest (:func:`_across`), as the tries' kernels of :mod:`.ik_jit_tries` do."""


def _across(function: Any) -> Any:
    """``function`` named by :data:`SOURCES`' text (:func:`~timor_core.common.jit_cache.keyed`): it calls the
    residual's kernels (:mod:`.ik_jit_residual`), which numba compiles into its machine code while its cache checks
    only this file."""
    return keyed(function, SOURCES)


@_inline
def forward(placements, kinds, axes, tool, moving, q, T, J, work):
    """``T`` (4, 4) the frame's pose at ``q`` and ``J`` (6, n) its Jacobian in world axes at the frame's origin
    (Pinocchio's LOCAL_WORLD_ALIGNED), one joint after the other; ``work`` (n, 2, 3) scratch: the joints' origins
    and axes in the world."""
    frame_pose(placements, kinds, axes, tool, moving, q, T, work)
    jacobian(moving, T, J, work)


@_inline
def frame_pose(placements, kinds, axes, tool, moving, q, T, work):
    """:func:`forward`'s pose ``T`` alone, and in ``work`` the joints' origins and axes in the world that
    :func:`jacobian` takes (the same operations in the same order: the same values)."""
    R, A, M = np.eye(3), np.empty((3, 3)), np.empty((3, 3))
    p0, p1, p2 = 0.0, 0.0, 0.0
    for k in range(moving):
        P = placements[k]
        n0 = p0 + R[0, 0] * P[0, 3] + R[0, 1] * P[1, 3] + R[0, 2] * P[2, 3]
        n1 = p1 + R[1, 0] * P[0, 3] + R[1, 1] * P[1, 3] + R[1, 2] * P[2, 3]
        n2 = p2 + R[2, 0] * P[0, 3] + R[2, 1] * P[1, 3] + R[2, 2] * P[2, 3]
        p0, p1, p2 = n0, n1, n2
        for r in range(3):
            for c in range(3):
                A[r, c] = R[r, 0] * P[0, c] + R[r, 1] * P[1, c] + R[r, 2] * P[2, c]
        _joint_rotation(kinds[k], axes[k], q[k], M)
        for r in range(3):
            for c in range(3):
                R[r, c] = A[r, 0] * M[0, c] + A[r, 1] * M[1, c] + A[r, 2] * M[2, c]
            work[k, 1, r] = A[r, 0] * axes[k, 0] + A[r, 1] * axes[k, 1] + A[r, 2] * axes[k, 2]
        work[k, 0, 0], work[k, 0, 1], work[k, 0, 2] = p0, p1, p2
    T[0, 3] = p0 + R[0, 0] * tool[0, 3] + R[0, 1] * tool[1, 3] + R[0, 2] * tool[2, 3]
    T[1, 3] = p1 + R[1, 0] * tool[0, 3] + R[1, 1] * tool[1, 3] + R[1, 2] * tool[2, 3]
    T[2, 3] = p2 + R[2, 0] * tool[0, 3] + R[2, 1] * tool[1, 3] + R[2, 2] * tool[2, 3]
    for r in range(3):
        for c in range(3):
            T[r, c] = R[r, 0] * tool[0, c] + R[r, 1] * tool[1, c] + R[r, 2] * tool[2, c]
    T[3, 0], T[3, 1], T[3, 2], T[3, 3] = 0.0, 0.0, 0.0, 1.0


@_inline
def jacobian(moving, T, J, work):
    """:func:`forward`'s Jacobian ``J`` (6, n) from the pose ``T`` and the ``work`` :func:`frame_pose` left."""
    for k in range(J.shape[1]):
        if k >= moving:
            for r in range(6):
                J[r, k] = 0.0
            continue
        wx, wy, wz = work[k, 1, 0], work[k, 1, 1], work[k, 1, 2]
        dx, dy, dz = T[0, 3] - work[k, 0, 0], T[1, 3] - work[k, 0, 1], T[2, 3] - work[k, 0, 2]
        J[0, k], J[1, k], J[2, k] = wy * dz - wz * dy, wz * dx - wx * dz, wx * dy - wy * dx
        J[3, k], J[4, k], J[5, k] = wx, wy, wz


@_inline
def _joint_rotation(kind, axis, angle, M):
    """``M`` the rotation of a revolute joint about its axis (x, y, z or ``axis``) by ``angle``, as Pinocchio's."""
    c, s = math.cos(angle), math.sin(angle)
    if kind == 2:
        M[0, 0], M[0, 1], M[0, 2] = c, -s, 0.0
        M[1, 0], M[1, 1], M[1, 2] = s, c, 0.0
        M[2, 0], M[2, 1], M[2, 2] = 0.0, 0.0, 1.0
    elif kind == 0:
        M[0, 0], M[0, 1], M[0, 2] = 1.0, 0.0, 0.0
        M[1, 0], M[1, 1], M[1, 2] = 0.0, c, -s
        M[2, 0], M[2, 1], M[2, 2] = 0.0, s, c
    elif kind == 1:
        M[0, 0], M[0, 1], M[0, 2] = c, 0.0, s
        M[1, 0], M[1, 1], M[1, 2] = 0.0, 1.0, 0.0
        M[2, 0], M[2, 1], M[2, 2] = -s, 0.0, c
    else:
        x, y, z = axis[0], axis[1], axis[2]
        t = 1.0 - c
        M[0, 0], M[0, 1], M[0, 2] = c + t * x * x, t * x * y - s * z, t * x * z + s * y
        M[1, 0], M[1, 1], M[1, 2] = t * x * y + s * z, c + t * y * y, t * y * z - s * x
        M[2, 0], M[2, 1], M[2, 2] = t * x * z - s * y, t * y * z + s * x, c + t * z * z


@_inline
def _solve_step(J, JJt, lam, r, step):
    """``step`` = J^T (J J^T + lam I)^-1 r, by Cholesky (as LAPACK's dposv; a general solve if it fails)."""
    L = JJt.copy()
    for k in range(6):
        L[k, k] += lam
    y = np.empty(6)
    if not _cholesky_solve(L, r, y):  # not positive definite (rounding): Gaussian elimination
        L = JJt.copy()
        for k in range(6):
            L[k, k] += lam
        _gauss_solve(L, r, y)
    for j in range(J.shape[1]):
        s = 0.0
        for k in range(6):
            s += J[k, j] * y[k]
        step[j] = s


@_inline
def _cholesky_solve(L, b, y):
    """``y`` = L^-1 b for the symmetric positive definite ``L`` (6, 6), factorised in place; False if it is not."""
    for j in range(6):
        d = L[j, j]
        for k in range(j):
            d -= L[j, k] * L[j, k]
        if not d > 0.0:
            return False
        d = math.sqrt(d)
        L[j, j] = d
        for i in range(j + 1, 6):
            s = L[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            L[i, j] = s / d
    for i in range(6):  # L z = b
        s = b[i]
        for k in range(i):
            s -= L[i, k] * y[k]
        y[i] = s / L[i, i]
    for i in range(5, -1, -1):  # L^T y = z
        s = y[i]
        for k in range(i + 1, 6):
            s -= L[k, i] * y[k]
        y[i] = s / L[i, i]
    return True


@_jit
def _gauss_solve(A, b, y):
    """``y`` = A^-1 b by Gaussian elimination with partial pivoting (``A`` (6, 6) overwritten)."""
    c = b.copy()
    for j in range(6):
        p = j
        for i in range(j + 1, 6):
            if abs(A[i, j]) > abs(A[p, j]):
                p = i
        for k in range(6):
            A[j, k], A[p, k] = A[p, k], A[j, k]
        c[j], c[p] = c[p], c[j]
        for i in range(j + 1, 6):
            f = A[i, j] / A[j, j]
            for k in range(j, 6):
                A[i, k] -= f * A[j, k]
            c[i] -= f * c[j]
    for i in range(5, -1, -1):
        s = c[i]
        for k in range(i + 1, 6):
            s -= A[i, k] * y[k]
        y[i] = s / A[i, i]


@_inline
def _gram(J, JJt):
    """``JJt`` = J J^T (6, 6): each entry below the diagonal is the one above it (the same products, commuted, added
    in the same order: the same value)."""
    for a in range(6):
        for b in range(a, 6):
            s = 0.0
            for k in range(J.shape[1]):
                s += J[a, k] * J[b, k]
            JJt[a, b] = s
            JJt[b, a] = s


@_inline
@_across
def linearize(chain, q, params, frozen, T, r, J, JJt, scratch):
    """At ``q``: the pose ``T``, the residual ``r``, the weighted Jacobian ``J`` with the frozen joints' columns
    zero, and J J^T; returns the squared residual."""
    cost, bits = _pose_terms(chain, q, params, T, r, scratch)
    _linear(chain[4], params[25], frozen, T, J, JJt, scratch[0], bits)
    return cost


@_inline
@_across
def _pose_terms(chain, q, params, T, r, scratch):
    """:func:`linearize`'s pose ``T`` and residual ``r`` at ``q``: (squared residual, the non-zero components' bits);
    ``scratch[0]`` then holds what :func:`_linear` takes."""
    frame_pose(chain[0], chain[1], chain[2], chain[3], chain[4], q, T, scratch[0])
    return terms(T, params, r, scratch[1])


@_inline
def _linear(moving, angle_weight, frozen, T, J, JJt, work, bits):
    """:func:`linearize`'s weighted Jacobian ``J`` and J J^T, after :func:`_pose_terms` at the same q."""
    jacobian(moving, T, J, work)
    _weigh(J, bits, angle_weight, frozen)
    _gram(J, JJt)


@_inline
def _weigh(J, bits, angle_weight, frozen):
    """Rows of the residual's zero components zero, the angle rows weighted, the frozen joints' columns zero."""
    for a in range(6):
        weight = (1.0 if a < 3 else angle_weight) if (bits >> a) & 1 else 0.0
        for k in range(J.shape[1]):
            J[a, k] = 0.0 if frozen[k] else J[a, k] * weight


@_jit
@_across
def descend(chain, lo, hi, crossable, frozen, q0, params, settings, q_out, T_out):
    """One descent from ``q0`` (``ik_descent._lm_steps``'s steps): ``q_out`` and its pose ``T_out``; returns (squared
    residual, iterations, cut short by a limit). ``settings``: max_iter, damping, max_step, stall_window, stall_ratio,
    limit_patience, limit_wraps, the squared residual taken as zero."""
    n = q0.shape[0]
    max_iter, lam, max_step, stall_window = int(settings[0]), settings[1], settings[2], int(settings[3])
    stall_ratio, patience, converged = settings[4], int(settings[5]), settings[7]
    wraps = int(settings[6]) if crossable.any() else 0
    scratch = (np.empty((n, 2, 3)), np.empty((3, 3)))
    q, T, r, J, JJt = q0.copy(), T_out, np.empty(6), np.empty((6, n)), np.empty((6, 6))
    qt, Tt, rt, Jt, JJtt = np.empty(n), np.empty((4, 4)), np.empty(6), np.empty((6, n)), np.empty((6, 6))
    step = np.empty(n)
    cost = linearize(chain, q, params, frozen, T, r, J, JJt, scratch)
    at_limit = _at_limit(q, lo, hi)
    stall_ref, stall_count, iterations, blocked_steps, cut = cost, 0, 0, 0, False
    for _ in range(max_iter):
        iterations += 1
        if cost <= converged:
            break
        stall_count += 1
        if stall_count == stall_window:  # too little progress: restart elsewhere
            if cost > stall_ratio * stall_ref:
                break
            stall_ref, stall_count = cost, 0
        _solve_step(J, JJt, lam, r, step)
        if at_limit:
            action, blocked_steps, wraps = _guard(q, step, J, lam, r, lo, hi, crossable, wraps, blocked_steps, patience)
            if action == 2:  # the way to the goal leads through a limit: restart elsewhere
                cut = True
                break
            if action == 1:  # crossed the narrow gap to a joint's other limit: start over from there
                cost = linearize(chain, q, params, frozen, T, r, J, JJt, scratch)
                lam, stall_ref, stall_count = settings[1], cost, 0
                continue
        big = 0.0
        for k in range(n):
            big = max(big, abs(step[k]))
        scale = max_step / big if big > max_step else 1.0
        clipped = False
        for k in range(n):
            new = q[k] - step[k] * scale if scale != 1.0 else q[k] - step[k]
            qt[k] = min(max(new, lo[k]), hi[k])
            clipped = clipped or qt[k] != new
        cost_new, bits = _pose_terms(chain, qt, params, Tt, rt, scratch)
        if cost_new < cost:  # (the trial's Jacobian only for a step taken)
            _linear(chain[4], params[25], frozen, Tt, Jt, JJtt, scratch[0], bits)
            q, qt, T, Tt, r, rt, J, Jt, JJt, JJtt = qt, q, Tt, T, rt, r, Jt, J, JJtt, JJt
            cost = cost_new
            at_limit = clipped or (at_limit and _at_limit(q, lo, hi))
            if not at_limit:
                blocked_steps = 0
            lam = max(lam * 0.3, 1e-9)
        else:
            lam *= 10.0
            if lam > 1e3:
                break
    q_out[:] = q
    T_out[:, :] = T
    return cost, iterations, cut


@_inline
def _at_limit(q, lo, hi):
    for k in range(q.shape[0]):
        if q[k] <= lo[k] or q[k] >= hi[k]:
            return True
    return False


@_jit
def _guard(q, step, J, lam, r, lo, hi, crossable, wraps, blocked_steps, patience):
    """``ik_descent._LimitGuard.step`` in place: returns (0: take ``step``, 1: ``q`` moved across a joint's narrow
    gap, 2: give up the try; blocked steps and wraps left)."""
    n = q.shape[0]
    blocked = np.zeros(n, dtype=np.bool_)
    jump = False
    for k in range(n):
        blocked[k] = (q[k] <= lo[k] and step[k] > 0.0) or (q[k] >= hi[k] and step[k] < 0.0)
        jump = jump or (wraps > 0 and blocked[k] and crossable[k])
    if not blocked.any():
        return 0, 0, wraps
    if jump:  # cross the narrow gap to the joint's other limit
        for k in range(n):
            if blocked[k] and crossable[k]:
                q[k] = lo[k] if q[k] >= hi[k] else hi[k]
        return 1, 0, wraps - 1
    blocked_steps += 1
    if blocked_steps == patience:
        return 2, blocked_steps, wraps
    Jb = J.copy()
    for k in range(n):
        if blocked[k]:
            for a in range(6):
                Jb[a, k] = 0.0
    JbJbt = np.empty((6, 6))
    _gram(Jb, JbJbt)
    _solve_step(Jb, JbJbt, lam, r, step)
    return 0, blocked_steps, wraps


@_jit
@_across
def best_start(chain, candidates, params):
    """The index of the candidate configuration whose pose has the least squared residual (the first on a tie)."""
    n = candidates.shape[1]
    T, r, scratch = np.empty((4, 4)), np.empty(6), (np.empty((n, 2, 3)), np.empty((3, 3)))
    best, best_cost = 0, math.inf
    for i in range(candidates.shape[0]):
        cost = _pose_terms(chain, candidates[i], params, T, r, scratch)[0]  # (no Jacobian: the pose alone)
        if cost < best_cost:
            best, best_cost = i, cost
    return best
