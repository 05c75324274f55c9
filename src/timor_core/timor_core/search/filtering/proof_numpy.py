"""The bounds of :mod:`.reach_proof` for a batch of boxes in numpy: what a process uses until the compiled ones
(:mod:`.proof_kernel`) are worth loading, and the kinematics its tests check the chain with.

Why both: loading numba and the compiled kernels costs a process ~1.3 s, more than a short search spends on its
proofs; a long one spends ~5x less with them. The same formulas, arrays of boxes at a time here, box by box there;
``tests/test_reach_proof_boxes.py`` checks that both give the same bounds, and each against the chain's own poses.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

__all__ = ["BoxGoal", "chain_frames", "halve_boxes_numpy", "measure_boxes_numpy", "one_joint"]


@dataclass(frozen=True)
class BoxGoal:
    """What every box of a proof is measured against: the goal's position and axes (row k: axis k), the
    tolerance's slacks (m, rad, rounding allowances included), where the last joint's origin must lie seen from the
    goal (unit ``direction`` at ``length``), how close a box centre may come before the proof gives up (``near``:
    m, rad), and the weight of a joint's turning of the TCP when choosing the side to cut (``rot_weight``, m/rad)."""

    pos: np.ndarray
    axes: np.ndarray
    slack: float
    theta: float
    direction: np.ndarray
    length: float
    near: tuple[float, float]
    rot_weight: float


def chain_frames(
    rotations: np.ndarray, translations: np.ndarray, q: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """For configurations ``q`` (M, n) of ``T = A_0 Rz(q_1) A_1 ... Rz(q_n) A_n`` (``rotations`` (n + 1, 3, 3),
    ``translations`` (n + 1, 3) of the ``A_k``): the TCP's rotations (M, 3, 3) and positions (M, 3), and the joints'
    axes and origins in the world (M, n, 3); each ``A_k`` one matrix product over all M configurations at once."""
    m, n = len(q), len(rotations) - 1  # (columns of q beyond n: not used)
    cos, sin = np.cos(q), np.sin(q)
    rot = np.broadcast_to(rotations[0], (m, 3, 3))
    pos = np.broadcast_to(translations[0], (m, 3))
    axes, origins = np.empty((m, n, 3)), np.empty((m, n, 3))
    for k in range(n):
        axes[:, k], origins[:, k] = rot[:, :, 2], pos
        turned = np.empty((m, 3, 3))  # rot @ Rz(q_k): the frame's x and y columns turn, z stays
        c, s = cos[:, k, None], sin[:, k, None]
        turned[:, :, 0] = c * rot[:, :, 0] + s * rot[:, :, 1]
        turned[:, :, 1] = c * rot[:, :, 1] - s * rot[:, :, 0]
        turned[:, :, 2] = rot[:, :, 2]
        flat = turned.reshape(3 * m, 3)
        pos = pos + (flat @ translations[k + 1]).reshape(m, 3)
        rot = (flat @ rotations[k + 1]).reshape(m, 3, 3)
    return np.asarray(rot), np.asarray(pos), axes, origins


def measure_boxes_numpy(
    steps: tuple[np.ndarray, np.ndarray],
    centres: np.ndarray,
    half: np.ndarray,
    goal: BoxGoal,
    upper: np.ndarray | None = None,
) -> tuple[np.ndarray, bool, np.ndarray]:
    """:func:`.proof_kernel.measure_boxes` in numpy (the same arguments and results)."""
    rotations, translations = steps
    gpos, gaxes, slack, theta, near = goal.pos, goal.axes, goal.slack, goal.theta, goal.near
    rot, tcp, axes, origins = chain_frames(rotations, translations, centres)
    wrist = origins[:, -1]
    miss = np.linalg.norm(tcp - gpos, axis=1)
    cos_k = np.einsum("mjk,kj->mk", rot, gaxes)  # each TCP axis (rot's column k) against the goal's
    turn = np.arccos(np.clip((cos_k.sum(axis=1) - 1.0) / 2.0, -1.0, 1.0))
    found = bool(np.any((miss <= slack + near[0]) & (turn <= theta + near[1])))
    if upper is not None:
        upper[:] = np.where(turn <= theta, miss - slack, math.inf)
    # the TCP's and the wrist's distances from each joint's axis at the centre (|axis x (point - origin)|)
    points = np.stack([tcp, wrist], axis=1)[:, :, None, :] - origins[:, None, :, :]
    along = np.einsum("mpnj,mnj->mpn", points, axes)
    reach = np.sqrt(np.maximum(np.einsum("mpnj,mpnj->mpn", points, points) - along**2, 0.0))
    chord = 2.0 * np.sin(half / 2.0)
    moves = np.einsum("mn,mpn->mp", chord, reach)
    excess = miss - moves[:, 0] - slack
    before = np.cumsum(half, axis=1) - half
    rest = (half - np.sin(half)) + chord**2 / 2.0 + chord * before
    u = (tcp - gpos) / np.maximum(miss, 1e-300)[:, None]
    first = np.abs(np.einsum("mnj,mj->mn", _cross(axes, points[:, 0]), u))
    excess = np.maximum(excess, miss - (first * half).sum(axis=1) - (rest * reach[:, 0]).sum(axis=1) - slack)
    if math.isfinite(slack):
        y = wrist - gpos
        cap = np.linalg.norm(y, axis=1)
        if goal.length > 0.0:
            cos_a = np.clip((y @ goal.direction) / np.maximum(cap, 1e-300), -1.0, 1.0)
            beyond = np.maximum(np.arccos(cos_a) - theta, 0.0)
            length = goal.length
            cap = np.sqrt(np.maximum(cap**2 + length**2 - 2.0 * cap * length * np.cos(beyond), 0.0))
        excess = np.maximum(excess, cap - moves[:, 1] - slack)
    if theta < math.pi:
        frames = np.swapaxes(rot, 1, 2)  # row k: the TCP's axis k
        sines = np.sqrt(np.maximum(1.0 - np.einsum("mnj,mkj->mnk", axes, frames) ** 2, 0.0))
        grad = np.einsum("mnj,mkj->mnk", axes, _cross(frames, gaxes))
        top = cos_k + np.einsum("mnk,mn->mk", np.abs(grad), half) + np.einsum("mn,mnk->mk", rest, sines)
        turned = (turn - half.sum(axis=1) > theta) | np.any(top < math.cos(theta), axis=1)
        turned |= one_joint(rot, axes, half, gaxes, cos_k.sum(axis=1)) > theta
        excess = np.where(turned, math.inf, excess)
    return excess, found, reach[:, 0] + goal.rot_weight


def one_joint(rot: np.ndarray, axes: np.ndarray, half: np.ndarray, gaxes: np.ndarray, trace: np.ndarray) -> np.ndarray:
    """Per box, a lower bound of the angle between the TCP's rotation and the goal's over the box (``trace``: at its
    centre, ``tr(R_g^T R)``): the box's widest joint j taken exactly, the others by the metric. Turning
    joint i by d turns the TCP by |d| (a left factor of angle |d|), so the angle is at least the least angle over
    j's interval at the others' centre angles less ``sum_(i != j) h_i``; turning joint j by d about its axis ``z``
    (Rodrigues) makes the trace ``trace + Q + W sin d - Q cos d``, ``W = z . sum_k t_k x g_k``, ``Q = sum_k (z . t_k)
    (z . g_k) - trace``, whose most over |d| <= h is ``sqrt(W^2 + Q^2)`` where its peak lies within, else at an end.
    ``rot`` (M, 3, 3): column k the TCP's axis k; ``axes`` (M, n, 3) the joints'; ``gaxes``: row k the goal's."""
    rows = np.arange(len(half))
    j = np.argmax(half, axis=1)  # (the first on a tie, as the compiled loop)
    h, z = half[rows, j], axes[rows, j]
    frames = np.swapaxes(rot, 1, 2)  # row k: the TCP's axis k
    w = np.einsum("mj,mkj->m", z, _cross(frames, gaxes))
    q = np.einsum("mk,mk->m", np.einsum("mj,mkj->mk", z, frames), z @ gaxes.T) - trace
    r = np.sqrt(w * w + q * q)
    top = np.where((h >= math.pi) | (-q >= r * np.cos(h)), r, np.abs(w) * np.sin(h) - q * np.cos(h))
    return np.arccos(np.clip((trace + q + top - 1.0) / 2.0, -1.0, 1.0)) - (half.sum(axis=1) - h)


def halve_boxes_numpy(
    centres: np.ndarray, half: np.ndarray, weights: np.ndarray, times: int
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`.proof_kernel.halve_boxes` in numpy (the same arguments and results)."""
    m, n = centres.shape
    half = half.copy()
    rows = np.arange(m)
    offsets = np.zeros((m, times, n))
    for t in range(times):
        split = np.argmax(half * weights, axis=1)
        half[rows, split] /= 2.0
        offsets[rows, t, split] = half[rows, split]
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=times))).reshape(-1, times)
    children = centres[:, None, :] + np.einsum("st,mtn->msn", signs, offsets)
    return children.reshape(-1, n), np.repeat(half, len(signs), axis=0)


def _cross(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a x b`` over the last axis (broadcast), without :func:`numpy.cross`'s overhead on small arrays."""
    out = np.empty(np.broadcast_shapes(a.shape, b.shape))
    for j, (u, v) in enumerate(((1, 2), (2, 0), (0, 1))):
        out[..., j] = a[..., u] * b[..., v] - a[..., v] * b[..., u]
    return out
