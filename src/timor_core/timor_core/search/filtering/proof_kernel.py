"""The bounds of :mod:`.reach_proof` for a batch of boxes of joint angles, compiled (numba), one box at a time.

Why: a proof evaluates a few hundred boxes per level over 3-5 joints; written with numpy (:mod:`.proof_numpy`),
each level takes ~25 array calls on arrays that small, and the calls' overhead, not the arithmetic, was most of a
search on tasks like ``obstacle_middle`` (1,158 proofs). The same formulas, box by box in compiled loops, take the
arithmetic's time: 600 of its proofs 7.8 -> 1.1 s of CPU, the same decisions, boxes and margins.

Loading numba and the kernels costs a process ~0.5 s, more than a short search spends on all its proofs: the numpy
bounds run until they (with the IK's interpreted descents) have taken half a second, then the compiled ones load
(:mod:`timor_core.common.compiled`, the ski-rental rule). Importing timor_core never loads numba. Where the
kernels are built ahead of time (:mod:`.proof_aot`: an extension module for the sources as they are, in
``AHEAD_FOLDER``), a process runs that from its first proof: it loads in under a millisecond without numba and gives
numba's kernels' results to the last digit (``tests/test_proof_aot.py``).
"""

from __future__ import annotations

import functools
import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np

from timor_core.common import compiled
from timor_core.common.ahead import AheadKernels
from timor_core.common.compiled import use_compiled
from timor_core.kinematics import ik_kernel
from timor_core.search.filtering.proof_descent import ROT_FRACTION, calling_compiled, descend
from timor_core.search.filtering.proof_numpy import BoxGoal, halve_boxes_numpy, measure_boxes_numpy

__all__ = [
    "AHEAD",
    "AHEAD_FOLDER",
    "AHEAD_SOURCES",
    "KERNEL_NAMES",
    "OTHER_KERNELS",
    "ROT_SCORE",
    "WITNESS_ANGLE_EPS",
    "WITNESS_EPS",
    "WITNESS_STARTS",
    "WITNESS_STEPS",
    "ahead",
    "ahead_kernel",
    "ahead_path",
    "forget_ahead",
    "halve_boxes",
    "load_compiled",
    "measure_boxes",
    "other_kernels",
    "py_kernels",
    "reach_witness",
    "use_compiled",
    "witness_from",
]

AHEAD_FOLDER = Path(__file__).resolve().parent / "__pycache__"
"""Where :mod:`.proof_aot` puts the kernels it builds and :func:`ahead` looks for them (numba's cache is there too)."""
AHEAD_SOURCES = ("proof_kernel.py", "proof_descent.py", "proof_aot.py", "sweep_bound.py", "proof_fused.py",
                 "sweep_fused.py")  # fmt: skip
"""The files whose text names the ahead-built module: a change of any builds (and loads) another one."""
KERNEL_NAMES = ("poses", "position", "orientation", "halves")
"""The kernels in the order :func:`_compiled` gives them."""
OTHER_KERNELS = ("collisions", "descend", "fused_proof", "fused_sweep")
"""The other kernels built into the same module, by :func:`ahead_kernel`: the sweep proof's bound
(:mod:`.sweep_bound`), the descent of :func:`reach_witness`, a proof's levels (:mod:`.proof_fused`) and a sweep
proof's (:mod:`.sweep_fused`)."""
WITNESS_STARTS, WITNESS_STEPS = 4, 12  # box centres nearest the goal descended from, steps each


def load_compiled() -> None:
    """Load numba, the compiled bounds and the IK's compiled descents now (~1.5 s), so that this process runs them
    from its first proof: for long-lived workers (a Dask cluster's) that will run many searches."""
    ik_kernel.load()  # and the IK's compiled descents
    _kernels()  # from now on this process runs the compiled bounds; a first call of each loads its machine code
    centres, half = np.zeros((1, 1)), np.ones((1, 1))
    goal = BoxGoal(np.ones(3), np.eye(3), 0.0, 0.0, np.ones(3), 0.0, (0.0, 0.0), 0.0)
    measure_boxes((np.tile(np.eye(3), (2, 1, 1)), np.zeros((2, 3))), centres, half, goal, np.empty(1))
    halve_boxes(centres, half, np.ones(1), 1)


AHEAD: AheadKernels[tuple[Any, Any, Any, Any, Any]] = AheadKernels(
    "proof_aot",
    "reach proofs' kernels",
    [Path(__file__).resolve().parent / name for name in AHEAD_SOURCES],
    lambda: AHEAD_FOLDER,
    KERNEL_NAMES + OTHER_KERNELS,
    lambda module: (module.poses, module.position, module.orientation, module.halves, module),
)
"""The reach proofs' kernels built ahead of time (:mod:`.proof_aot`; poses, position bounds, orientation bounds,
halving, and the module for :data:`OTHER_KERNELS`): where, and loaded once (:mod:`timor_core.common.ahead`)."""
ahead_path = AHEAD.path
forget_ahead = AHEAD.forget


def ahead() -> tuple[Any, Any, Any, Any] | None:
    """The kernels built ahead of time for the sources as they are (poses, position bounds, orientation bounds,
    halving), loaded on the first call, or None where none are built (or they do not load: one warning)."""
    kernels = AHEAD.get()
    return None if kernels is None else kernels[:4]


def ahead_kernel(name: str) -> Any:
    """One of :data:`OTHER_KERNELS` built ahead of time, where this process may run compiled kernels and they are
    built (as :func:`ahead`), else None."""
    kernels = AHEAD.get() if compiled.allowed() else None
    return None if kernels is None else getattr(kernels[4], name)


def py_kernels() -> dict[str, Any]:
    """The kernels as Python functions by name (:data:`KERNEL_NAMES`): what numba compiles, now or ahead of time."""
    return dict(zip(KERNEL_NAMES, (_poses, _position, _orientation, _halves), strict=True))


def other_kernels(compiled_helpers: bool = False) -> dict[str, Any]:
    """This module's kernels among :data:`OTHER_KERNELS` as Python functions by name (built ahead of time with the
    others); with ``compiled_helpers`` the helpers they call are numba's kernels (numba compiles a kernel only where
    what it calls is compiled too: for a build, or numba's compilation)."""
    if not compiled_helpers:
        return {"descend": descend}
    import numba  # noqa: PLC0415 (only once the process compiles its kernels)

    return {"descend": calling_compiled(numba.njit(cache=True, fastmath=False, nogil=True))}


def _compiled() -> tuple[Any, Any, Any, Any] | None:
    """The compiled kernels if this process runs them: the ahead-built ones wherever compiled kernels are allowed
    and they are there, else numba's by the rule (loading them if it is time), else None."""
    built = ahead() if compiled.allowed() else None
    return built if built is not None else compiled.loaded_or_none(_kernels, "the reach proofs")


def measure_boxes(
    steps: tuple[np.ndarray, np.ndarray],
    centres: np.ndarray,
    half: np.ndarray,
    goal: BoxGoal,
    upper: np.ndarray | None = None,
) -> tuple[np.ndarray, bool, np.ndarray]:
    """Per box (``centres``, ``half`` (M, n)) of the chain ``T = A_0 Rz(q_1) A_1 ... Rz(q_n) A_n`` (``steps``: the
    rotations (n + 1, 3, 3) and translations (n + 1, 3) of the ``A_k``): by how much no configuration in it puts the
    TCP within the slack of ``goal`` (inf: not at the goal's orientation; <= 0: maybe); whether a box centre is
    within ``goal.near`` of the goal; per box and joint the TCP's distance from the joint's axis at the centre plus
    ``goal.rot_weight``. ``upper`` (M,), where given, gets per box the centre's miss less the slack where the
    centre is within the goal's rotation slack, else inf: no sound bound refuses a box holding that centre with more
    to spare (what :func:`~.reach_proof.pose_proof`'s widening can still gain)."""
    kernels = _compiled()
    if kernels is None:
        return compiled.charged(measure_boxes_numpy, steps, centres, half, goal, upper)
    m, n = centres.shape
    tcp, rot, origins, jaxes = np.empty((m, 3)), np.empty((m, 3, 3)), np.empty((m, n, 3)), np.empty((m, n, 3))
    excess, weights, rest = np.empty(m), np.empty((m, n)), np.empty((m, n))
    centres, half = np.ascontiguousarray(centres, dtype=np.float64), np.ascontiguousarray(half, dtype=np.float64)
    gpos, gaxes = np.ascontiguousarray(goal.pos, dtype=np.float64), np.ascontiguousarray(goal.axes, dtype=np.float64)
    slack, theta = float(goal.slack), float(goal.theta)
    poses, position, orientation, _ = kernels
    poses(*(np.ascontiguousarray(a, dtype=np.float64) for a in steps), centres, tcp, rot, origins, jaxes)
    direction = np.ascontiguousarray(goal.direction, dtype=np.float64)
    position(tcp, origins, jaxes, half, gpos, slack, direction, float(goal.length), theta, float(goal.rot_weight),
             excess, weights, rest)  # fmt: skip
    centre = upper if upper is not None else np.empty(0)
    found = orientation(tcp, rot, jaxes, half, rest, gpos, gaxes, slack, theta, *map(float, goal.near), excess, centre)
    return excess, bool(found), weights


def halve_boxes(
    centres: np.ndarray, half: np.ndarray, weights: np.ndarray, times: int
) -> tuple[np.ndarray, np.ndarray]:
    """Every box (``centres``, ``half`` (M, n)) cut in two ``times`` times, each time across its widest side
    (half-width times ``weights``: (M, n), or (n,) for all; the first such side on a tie): the ``2**times``
    children of each box in turn, the first cut's lower half first."""
    kernels = _compiled()
    if kernels is None:
        return compiled.charged(halve_boxes_numpy, centres, half, weights, times)
    m, n = centres.shape
    weights = np.ascontiguousarray(np.atleast_2d(weights), dtype=np.float64)
    children = np.empty((m << times, n))
    child_half = np.empty((m << times, n))
    kernels[3](
        np.ascontiguousarray(centres, dtype=np.float64), np.ascontiguousarray(half, dtype=np.float64), weights,
        times, children, child_half,
    )  # fmt: skip
    return children, child_half


def reach_witness(steps: tuple[np.ndarray, np.ndarray], centres: np.ndarray, goal: BoxGoal) -> np.ndarray | None:
    """A configuration (n,) that puts the TCP within ``goal.slack`` and ``goal.theta`` of the goal, less the rounding
    allowances, found by a descent (:func:`~.proof_descent.descend`) from the :data:`WITNESS_STARTS` box centres
    (``centres`` (M, n)) nearest the goal; None if none is found. Where one is found no proof can refuse the goal
    (the box holding it is never refused: the bounds are sound), so a proof can stop there, undecided, as it would
    have later. None where the compiled kernels do not run: it only saves time."""
    kernel = ahead_kernel("descend") or compiled.loaded_or_none(_descend_kernel, "the reach proofs")
    if kernel is None or not len(centres):
        return None
    rotations, translations = (np.ascontiguousarray(a, dtype=np.float64) for a in steps)
    centres = np.ascontiguousarray(centres, dtype=np.float64)
    m, n = centres.shape
    tcp, rot, origins, jaxes = np.empty((m, 3)), np.empty((m, 3, 3)), np.empty((m, n, 3)), np.empty((m, n, 3))
    kernels = _compiled()
    if kernels is None:
        return None
    kernels[0](rotations, translations, centres, tcp, rot, origins, jaxes)
    trace = np.zeros(m)  # (term by term, in the order of proof_fused's loop: the same scores to the last bit)
    for j, k in itertools.product(range(3), range(3)):
        trace += rot[:, j, k] * goal.axes[k, j]
    turn = np.arccos(np.clip((trace - 1.0) / 2.0, -1.0, 1.0))
    score = np.linalg.norm(tcp - goal.pos, axis=1) + ROT_SCORE * np.maximum(turn - ROT_FRACTION * goal.theta, 0.0)
    starts = centres[np.argsort(score, kind="stable")[:WITNESS_STARTS]]  # (stable: ties in task order, as compiled)
    gpos, gaxes = (np.ascontiguousarray(a, dtype=np.float64) for a in (goal.pos, goal.axes))
    slack, theta = float(goal.slack) - WITNESS_EPS, float(goal.theta) - WITNESS_ANGLE_EPS
    found = np.empty(n)
    return found if kernel(rotations, translations, starts, gpos, gaxes, slack, theta, WITNESS_STEPS, found) else None


def witness_from(
    steps: tuple[np.ndarray, np.ndarray],
    configurations: np.ndarray,
    pos: np.ndarray,
    axes: np.ndarray,
    slack: float,
    theta: float,
) -> np.ndarray | None:
    """A configuration (n,) reached by a descent of :func:`reach_witness` (its steps, its test) from one of
    ``configurations`` (K, n) whose TCP is within ``slack`` of ``pos`` and ``theta`` of the goal's rotation
    (``axes``: row k its axis k), less its allowances; None if none is, or where the compiled kernels do not run."""
    kernel = ahead_kernel("descend") or compiled.loaded_or_none(_descend_kernel, "the reach proofs")
    if kernel is None or not len(configurations):
        return None
    rotations, translations = (np.ascontiguousarray(a, dtype=np.float64) for a in steps)
    starts = np.ascontiguousarray(configurations, dtype=np.float64)
    gpos, gaxes = np.ascontiguousarray(pos, dtype=np.float64), np.ascontiguousarray(axes, dtype=np.float64)
    found = np.empty(starts.shape[1])
    reached = kernel(rotations, translations, starts, gpos, gaxes, slack - WITNESS_EPS, theta - WITNESS_ANGLE_EPS,
                     WITNESS_STEPS, found)  # fmt: skip
    return found if reached else None


ROT_SCORE = 0.1  # m per rad beyond ROT_FRACTION of the rotation slack, added to a centre's miss (descents' starts)
WITNESS_EPS, WITNESS_ANGLE_EPS = 1e-7, 1e-5  # m, rad: a witness lies this far inside the slacks (rounding)


@functools.cache
def _descend_kernel() -> Any:
    """The compiled :func:`~.proof_descent.descend` (numba's, where none is built ahead of time)."""
    import numba  # noqa: PLC0415 (only once the process runs its compiled kernels)

    kernel = numba.njit(cache=True, fastmath=False, nogil=True)(other_kernels(compiled_helpers=True)["descend"])
    compiled.mark_loaded()
    return kernel


@functools.cache
def _kernels() -> tuple[Any, Any, Any, Any]:
    """The compiled poses, position bounds, orientation bounds and halving."""
    import numba  # noqa: PLC0415 (on the first proof only: see the module docstring)

    compile_ = numba.njit(cache=True, fastmath=False, nogil=True)
    kernels = tuple(compile_(kernel) for kernel in py_kernels().values())
    compiled.mark_loaded()
    return kernels  # type: ignore[return-value]  # (poses, position, orientation, halving)


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


def _poses(rot_steps, trans_steps, centres, tcp, rot, origins, jaxes):
    """Per box centre: the TCP's position ``tcp`` (M, 3) and rotation ``rot`` (M, 3, 3), the joints' ``origins`` and
    axes ``jaxes`` (M, n, 3) in the world, one joint frame after the other (compiled by numba). The frames up to the
    first joint whose angle differs from the box before's are that box's (the same values: siblings share most)."""
    m, n = centres.shape
    turned, at_rot, at_tcp = np.empty((3, 3)), np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))  # frames before joint k
    seen, cosines, sines = np.full(n, np.nan), np.empty(n), np.empty(n)  # per joint the last angle's ...
    other, other_cos, other_sin = np.full(n, np.nan), np.empty(n), np.empty(n)  # ... and the one before (siblings)
    for r in range(3):
        at_tcp[0, r] = trans_steps[0, r]
        for col in range(3):
            at_rot[0, r, col] = rot_steps[0, r, col]
    for b in range(m):
        same = 0
        while b > 0 and same < n and centres[b, same] == centres[b - 1, same]:
            same += 1
        for k in range(n):
            if k < same:  # (the box before's frame, the same arithmetic on the same angles)
                for r in range(3):
                    jaxes[b, k, r], origins[b, k, r] = jaxes[b - 1, k, r], origins[b - 1, k, r]
                continue
            if centres[b, k] != seen[k]:  # (a box's siblings take one of two angles per joint: both kept)
                angle, cos_k, sin_k = centres[b, k], other_cos[k], other_sin[k]
                if angle != other[k]:
                    cos_k, sin_k = math.cos(angle), math.sin(angle)
                other[k], other_cos[k], other_sin[k] = seen[k], cosines[k], sines[k]
                seen[k], cosines[k], sines[k] = angle, cos_k, sin_k
            c, s = cosines[k], sines[k]
            for r in range(3):
                jaxes[b, k, r], origins[b, k, r] = at_rot[k, r, 2], at_tcp[k, r]
                turned[r, 0] = c * at_rot[k, r, 0] + s * at_rot[k, r, 1]
                turned[r, 1] = c * at_rot[k, r, 1] - s * at_rot[k, r, 0]
                turned[r, 2] = at_rot[k, r, 2]
            for r in range(3):
                moved = at_tcp[k, r]
                for col in range(3):
                    moved += turned[r, col] * trans_steps[k + 1, col]
                    at_rot[k + 1, r, col] = (
                        turned[r, 0] * rot_steps[k + 1, 0, col]
                        + turned[r, 1] * rot_steps[k + 1, 1, col]
                        + turned[r, 2] * rot_steps[k + 1, 2, col]
                    )
                at_tcp[k + 1, r] = moved
        for r in range(3):
            tcp[b, r] = at_tcp[n, r]
            for col in range(3):
                rot[b, r, col] = at_rot[n, r, col]


def _position(tcp, origins, jaxes, half, gpos, slack, direction, length, theta, rot_weight, excess, weights, rest):
    """Per box: ``excess`` by the position bounds (the sequential chords, first order plus ``rest``, the wrist's
    cap), ``weights`` (the TCP's distance from each joint's axis plus ``rot_weight``) and ``rest`` (M, n), the
    second-order rest per unit distance (compiled by numba)."""
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
                seen[i], chords[i], bends[i] = h, 2.0 * math.sin(h / 2.0), h - math.sin(h)
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


def _orientation(tcp, rot, jaxes, half, rest, gpos, gaxes, slack, theta, near_pos, near_angle, excess, centre):
    """Per box: ``excess`` set to inf where the orientation bounds refuse it (the angle less ``sum_i h_i``; per axis
    to first order; :func:`~.proof_numpy.one_joint`), and where ``centre`` has a place per box, the centre's miss less
    ``slack`` if it is within ``theta`` of the goal's rotation, else inf; returns whether a box centre is within
    ``near_pos``, ``near_angle`` of the goal (compiled by numba). Angles by their cosines: no arccos per box."""
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
            seen_a, cos_a = total, math.cos(min(theta + total, math.pi))
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
            seen_t, cos_t = total - h, math.cos(min(theta + total - h, math.pi))
        if not off and cos_turn < cos_t:  # (else the least angle, at most the centre's, refuses nothing)
            ax, ay, az, w, q = jaxes[b, j, 0], jaxes[b, j, 1], jaxes[b, j, 2], 0.0, -trace
            for k in range(3):
                tx, ty, tz = rot[b, 0, k], rot[b, 1, k], rot[b, 2, k]
                gx, gy, gz = gaxes[k, 0], gaxes[k, 1], gaxes[k, 2]
                w += ax * (ty * gz - tz * gy) + ay * (tz * gx - tx * gz) + az * (tx * gy - ty * gx)
                q += (ax * tx + ay * ty + az * tz) * (ax * gx + ay * gy + az * gz)
            if h != seen_h:  # (siblings share most half-widths)
                seen_h, cos_h, sin_h = h, math.cos(h), math.sin(h)
            r = math.sqrt(w * w + q * q)  # the most of W sin d - Q cos d: r where its peak lies within |d| <= h
            top = r if h >= math.pi or -q >= r * cos_h else abs(w) * sin_h - q * cos_h
            off = (trace + q + top - 1.0) / 2.0 < cos_t
        if off:
            excess[b] = math.inf
    return found
