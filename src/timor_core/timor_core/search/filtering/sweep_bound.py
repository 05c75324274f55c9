"""The bound of :mod:`.sweep_proof` per box of joint angles: whether a ball of the arm's body lies inside an obstacle
box at every configuration of a box (see that module's docstring), in numpy, then compiled (numba) once the process
runs its compiled kernels (:mod:`timor_core.common.compiled`); and the data it works on: the obstacle boxes and the
balls of the arm's body."""

from __future__ import annotations

import functools
import math
import types
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.common import compiled
from timor_core.common.jit_cache import keyed
from timor_core.search.filtering.box_bounds import cos_sin, trig_table
from timor_core.search.filtering.proof_chain import PoseChain
from timor_core.search.filtering.proof_kernel import AHEAD, ahead_kernel

__all__ = ["ArmSweep", "HELPERS", "ObstacleBoxes", "PENETRATION", "certain_collision", "certain_collision_numpy",
           "fixed_collision", "py_kernels"]  # fmt: skip

PENETRATION = 1e-3  # m: a refused box puts a ball of the arm at least this deep into an obstacle (coal's verdict
# near contact is not to be relied on; 1 mm deep it is, tests/test_collision_contact.py)
EPS = 1e-8  # m: rounding
SKIP_EPS = 1e-9  # m: a ball is measured against an obstacle box unless it is this much beyond reaching into it


@dataclass(frozen=True)
class ObstacleBoxes:
    """The task's obstacle boxes in the world: centres (B, 3), rotations (B, 3, 3) (columns: the box's axes) and
    half sides (B, 3)."""

    centres: np.ndarray
    rotations: np.ndarray
    half: np.ndarray

    def __len__(self) -> int:
        return len(self.centres)

    @functools.cached_property
    def staged(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``centres``, ``rotations``, ``half`` as the kernels take them (C-contiguous float64), made once."""
        centres, rotations, half = _contiguous(self.centres, self.rotations, self.half)
        return centres, rotations, half

    def signed_distance(self, points: np.ndarray) -> np.ndarray:
        """The signed distance (m, < 0 inside) of every point (..., 3) from every box: (..., B)."""
        local = np.einsum("...j,bjk->...bk", points, self.rotations) - np.einsum(
            "bj,bjk->bk", self.centres, self.rotations
        )
        d = np.abs(local) - self.half
        outside = np.sqrt((np.maximum(d, 0.0) ** 2).sum(axis=-1))
        return outside + np.minimum(d.max(axis=-1), 0.0)


@dataclass(frozen=True)
class ArmSweep:
    """A revolute chain (:class:`~.reach_proof.PoseChain`, joints on one line merged) and the balls of its body:
    ``points`` (P, 3) in the frame of joint ``links[p]`` (the chain's joint frames at q = 0, z the axis, as
    :attr:`PoseChain.steps` makes them), radii ``rho`` (P,); ``fixed`` (F, 3) and ``fixed_rho`` (F,): balls of the
    body before the first joint, in the world; ``groups`` (robot joints,): the chain's joint each of the robot's
    joints is merged into, ``signs``: +1 where its axis points the same way as that one's, else -1 (the chain's
    angle of a group is the sum of its joints' angles, each times its sign)."""

    chain: PoseChain
    points: np.ndarray
    links: np.ndarray
    rho: np.ndarray
    fixed: np.ndarray
    fixed_rho: np.ndarray
    groups: np.ndarray
    signs: np.ndarray

    @functools.cached_property
    def staged(self) -> tuple[np.ndarray, ...]:
        """What the kernels take of the chain and its balls, made once (C-contiguous): the chain's rotation and
        translation steps, ``points``, ``links`` (int64) and ``rho``."""
        rotations, translations = self.chain.steps
        arrays = _contiguous(rotations, translations, self.points)
        return (*arrays, np.ascontiguousarray(self.links, dtype=np.int64), *_contiguous(self.rho))

    def need(self, margin: float) -> np.ndarray:
        """How deep into an obstacle box (m, less than 0: the signed distance) each ball's centre must lie for the
        ball to reach ``PENETRATION`` into it, or within ``margin`` of it (rounding allowed for)."""
        return self.staged[4] + margin - PENETRATION - EPS  # (the order of certain_collision_numpy's sum)


def _contiguous(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    return tuple(np.ascontiguousarray(a, dtype=np.float64) for a in arrays)


def _link_frames(sweep: ArmSweep, q: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For configurations ``q`` (M, n): the joint frames' rotations after each joint's turn (M, n, 3, 3), the
    joints' origins (M, n, 3) and axes (M, n, 3) in the world."""
    rotations, translations = sweep.chain.steps
    m, n = len(q), sweep.chain.dof
    cos, sin = np.cos(q), np.sin(q)
    rot = np.broadcast_to(rotations[0], (m, 3, 3))
    pos = np.broadcast_to(translations[0], (m, 3))
    frames, origins = np.empty((m, n, 3, 3)), np.empty((m, n, 3))
    for k in range(n):
        origins[:, k] = pos
        turned = frames[:, k]
        c, s = cos[:, k, None], sin[:, k, None]
        turned[:, :, 0] = c * rot[:, :, 0] + s * rot[:, :, 1]
        turned[:, :, 1] = c * rot[:, :, 1] - s * rot[:, :, 0]
        turned[:, :, 2] = rot[:, :, 2]
        if k + 1 < n:
            flat = turned.reshape(3 * m, 3)
            pos = pos + (flat @ translations[k + 1]).reshape(m, 3)
            rot = (flat @ rotations[k + 1]).reshape(m, 3, 3)
    return frames, origins, frames[:, :, :, 2]


def certain_collision(
    sweep: ArmSweep, obstacles: ObstacleBoxes, centres: np.ndarray, half: np.ndarray, margin: float = 0.0
) -> np.ndarray:
    """Per box of joint angles (``centres``, ``half`` (M, n)): True where a ball of the arm's body lies at least
    ``PENETRATION`` inside an obstacle box (or within ``margin`` of it, less that) at every configuration of it
    (built ahead of time with the reach proofs' kernels, :mod:`.proof_aot`, and run from the first proof where it
    is; else compiled once the process runs its compiled kernels, :mod:`timor_core.common.compiled`)."""
    m = len(centres)
    if not len(obstacles) or not len(sweep.points):
        return np.zeros(m, dtype=bool)
    kernel = ahead_kernel("collisions") or compiled.loaded_or_none(_kernel, "the sweep proofs")
    if kernel is None:
        return compiled.charged(certain_collision_numpy, sweep, obstacles, centres, half, margin)
    rotations, translations, points, links, _ = sweep.staged
    out = np.zeros(m, dtype=np.bool_)
    centres, half = _contiguous(centres, half)
    kernel(rotations, translations, centres, half, points, links, sweep.need(margin), *obstacles.staged, out,
           trig_table())  # fmt: skip
    return out


def certain_collision_numpy(
    sweep: ArmSweep, obstacles: ObstacleBoxes, centres: np.ndarray, half: np.ndarray, margin: float = 0.0
) -> np.ndarray:
    """:func:`certain_collision` in numpy (the same verdicts)."""
    m = len(centres)
    if not len(obstacles) or not len(sweep.points):
        return np.zeros(m, dtype=bool)
    frames, origins, axes = _link_frames(sweep, centres)
    links = sweep.links
    # the points in the world at the box centres (M, P, 3)
    world = np.einsum("mpij,pj->mpi", frames[:, links], sweep.points) + origins[:, links]
    # each point's distance from each joint's axis at the centre, counted for the joints before its link (M, P, n)
    rel = world[:, :, None, :] - origins[:, None, :, :]
    along = np.einsum("mpnj,mnj->mpn", rel, axes)
    dist = np.sqrt(np.maximum(np.einsum("mpnj,mpnj->mpn", rel, rel) - along**2, 0.0))
    upto = np.arange(sweep.chain.dof)[None, :] <= links[:, None]  # (P, n)
    chord = 2.0 * np.sin(np.minimum(half, math.pi) / 2.0)  # (M, n)
    moves = np.einsum("mpn,mn->mp", dist * upto[None], chord)
    sd = obstacles.signed_distance(world)  # (M, P, B)
    need = (sweep.rho + margin - PENETRATION - EPS)[None, :, None]
    return np.any(sd + moves[:, :, None] < need, axis=(1, 2))


HELPERS = ("_link_hulls", "_cull", "_near", "_inside")
"""The functions :func:`_collisions` calls."""


def py_kernels(jit: Any = None) -> dict[str, Any]:
    """The kernel as a Python function by name (``proof_kernel.OTHER_KERNELS``): what numba compiles, now or ahead
    of time (:mod:`.proof_aot`); with ``jit`` (numba's compiler) one calling ``jit``'s compilations of its
    :data:`HELPERS` and of :func:`~.box_bounds.cos_sin` (numba compiles a kernel only where what it calls is compiled
    too), named by the kernels' sources (:func:`~timor_core.common.jit_cache.keyed`: numba's cache checks only this
    file, and ``cos_sin`` is compiled into it)."""
    if jit is None:
        return {"collisions": _collisions}
    names = {**_collisions.__globals__, **{name: jit(globals()[name]) for name in HELPERS}, "cos_sin": jit(cos_sin)}
    kernel = types.FunctionType(_collisions.__code__, names, _collisions.__name__)
    return {"collisions": keyed(kernel, AHEAD.sources)}


@functools.cache
def _kernel() -> Any:
    """The compiled :func:`_collisions`."""
    import numba  # noqa: PLC0415 (on the first proof that wants it: see timor_core.common.compiled)

    jit = numba.njit(cache=True, fastmath=False, nogil=True)
    kernel = jit(py_kernels(jit)["collisions"])
    compiled.mark_loaded()
    return kernel


def _collisions(rot_steps, trans_steps, centres, half, points, links, need, ob_c, ob_r, ob_h, out, trig):
    """:func:`certain_collision` box by box (compiled by numba): ``out[b]`` True where a ball is inside (the angles'
    cosines and sines from ``trig``, :func:`~.box_bounds.cos_sin`)."""
    m, n = centres.shape
    frames, origins = np.empty((n, 3, 3)), np.empty((n, 3))
    rot, pos, chord = np.empty((3, 3)), np.empty(3), np.empty(n)
    w, local = np.empty(3), np.empty(3)
    radius = np.sqrt((ob_h * ob_h).sum(axis=1)) + SKIP_EPS  # the obstacles' circumradii (and rounding): a ball
    seen, widths, cosines, sines = np.full(n, np.nan), np.full(n, np.nan), np.empty(n), np.empty(n)  # centre farther
    hull, culled = _link_hulls(points, links, need, n), np.zeros(n, dtype=np.bool_)  # than need - moves + it from a
    for b in range(m):  # box's centre does not reach need - moves into it
        pos[:], rot[:, :] = trans_steps[0], rot_steps[0]
        for k in range(n):  # (sibling boxes share most angles and half-widths: their terms are kept per joint)
            if half[b, k] != widths[k]:
                widths[k], chord[k] = half[b, k], 2.0 * cos_sin(trig, min(half[b, k], math.pi) / 2.0)[1]
            if centres[b, k] != seen[k]:
                seen[k], (cosines[k], sines[k]) = centres[b, k], cos_sin(trig, centres[b, k])
            c, s = cosines[k], sines[k]
            for r in range(3):
                origins[k, r] = pos[r]
                frames[k, r, 0] = c * rot[r, 0] + s * rot[r, 1]
                frames[k, r, 1] = c * rot[r, 1] - s * rot[r, 0]
                frames[k, r, 2] = rot[r, 2]
            if k + 1 < n:
                for r in range(3):
                    for col in range(3):
                        pos[r] += frames[k, r, col] * trans_steps[k + 1, col]
                        rot[r, col] = (frames[k, r, 0] * rot_steps[k + 1, 0, col]
                                       + frames[k, r, 1] * rot_steps[k + 1, 1, col]
                                       + frames[k, r, 2] * rot_steps[k + 1, 2, col])  # fmt: skip
        _cull(frames, origins, hull, ob_c, radius, culled, w)
        for p in range(len(links)):
            k = links[p]
            if culled[k]:
                continue  # (every obstacle is beyond the reach of every ball of its link: see _link_hulls)
            for r in range(3):
                w[r] = origins[k, r] + frames[k, r, 0] * points[p, 0] + frames[k, r, 1] * points[p, 1]
                w[r] += frames[k, r, 2] * points[p, 2]
            if not _near(w, need[p], ob_c, radius):
                continue  # (beyond need + radius from every obstacle: the first test below fails whatever moves is)
            moves = 0.0
            for i in range(k + 1):
                dx, dy, dz = w[0] - origins[i, 0], w[1] - origins[i, 1], w[2] - origins[i, 2]
                along = dx * frames[i, 0, 2] + dy * frames[i, 1, 2] + dz * frames[i, 2, 2]
                moves += chord[i] * math.sqrt(max(dx * dx + dy * dy + dz * dz - along * along, 0.0))
            if _inside(w, need[p], moves, ob_c, ob_r, ob_h, radius, local):
                out[b] = True
                break


def _inside(w, need, moves, ob_c, ob_r, ob_h, radius, local):
    """Whether a ball at ``w`` that moves up to ``moves`` lies ``need`` deep in an obstacle box wherever it moves
    (its signed distance + ``moves`` < ``need``)."""
    for o in range(len(ob_c)):
        far = need - moves + radius[o]
        dx, dy, dz = w[0] - ob_c[o, 0], w[1] - ob_c[o, 1], w[2] - ob_c[o, 2]
        if far <= 0.0 or dx * dx + dy * dy + dz * dz > far * far:
            continue  # (sd >= |w - c| - radius, and sd >= -radius inside: sd + moves >= need)
        outside, inside = 0.0, -math.inf
        for j in range(3):
            local[j] = 0.0
            for r in range(3):
                local[j] += (w[r] - ob_c[o, r]) * ob_r[o, r, j]
            d = abs(local[j]) - ob_h[o, j]
            outside += max(d, 0.0) ** 2
            inside = max(inside, d)
        if math.sqrt(outside) + min(inside, 0.0) + moves < need:
            return True
    return False


def _near(w, need, ob_c, radius):
    """Whether the point ``w`` lies within ``need + radius[o]`` of some obstacle's centre (moves >= 0: where not,
    :func:`_collisions`' first test skips the ball for every obstacle, and its moves need not be summed)."""
    for o in range(len(ob_c)):
        far = need + radius[o]
        dx, dy, dz = w[0] - ob_c[o, 0], w[1] - ob_c[o, 1], w[2] - ob_c[o, 2]
        if far > 0.0 and dx * dx + dy * dy + dz * dz <= far * far:
            return True
    return False


def _link_hulls(points, links, need, n):
    """Per link (n, 5): the centroid of its balls' centres (its frame), their largest distance from it, and their
    largest ``need`` (-inf: no ball). A ball's centre lies within that distance of the centroid wherever the link
    is, so where the centroid is farther than ``need + radius + distance`` from every obstacle's centre, no ball of
    the link passes :func:`_collisions`' first test: the link is skipped, the verdicts the same."""
    hull, count = np.zeros((n, 5)), np.zeros(n)
    hull[:, 4] = -math.inf
    for p in range(len(links)):
        k = links[p]
        count[k] += 1.0
        for r in range(3):
            hull[k, r] += points[p, r]
        hull[k, 4] = max(hull[k, 4], need[p])
    for k in range(n):
        for r in range(3):
            hull[k, r] /= max(count[k], 1.0)
    for p in range(len(links)):
        k = links[p]
        dx, dy, dz = points[p, 0] - hull[k, 0], points[p, 1] - hull[k, 1], points[p, 2] - hull[k, 2]
        hull[k, 3] = max(hull[k, 3], math.sqrt(dx * dx + dy * dy + dz * dz))
    return hull


def _cull(frames, origins, hull, ob_c, radius, culled, w):
    """``culled[k]`` True where link k's balls (``hull``: :func:`_link_hulls`) are all beyond reaching into every
    obstacle at this box's centre (``frames``, ``origins``), whatever the box's moves (``SKIP_EPS``: rounding)."""
    for k in range(len(culled)):
        culled[k] = True
        if hull[k, 4] == -math.inf:
            continue
        for r in range(3):
            w[r] = origins[k, r] + frames[k, r, 0] * hull[k, 0] + frames[k, r, 1] * hull[k, 1]
            w[r] += frames[k, r, 2] * hull[k, 2]
        for o in range(len(ob_c)):
            far = hull[k, 4] + radius[o] + hull[k, 3] + SKIP_EPS
            dx, dy, dz = w[0] - ob_c[o, 0], w[1] - ob_c[o, 1], w[2] - ob_c[o, 2]
            if far > 0.0 and dx * dx + dy * dy + dz * dz <= far * far:
                culled[k] = False
                break


def fixed_collision(sweep: ArmSweep, obstacles: ObstacleBoxes, margin: float = 0.0) -> bool:
    """True if a ball of the body before the first joint lies at least ``PENETRATION`` inside an obstacle box (or
    within ``margin`` of it, less that): every configuration collides."""
    if not len(obstacles) or not len(sweep.fixed):
        return False
    sd = obstacles.signed_distance(sweep.fixed)
    return bool(np.any(sd < (sweep.fixed_rho + margin - PENETRATION - EPS)[:, None]))
