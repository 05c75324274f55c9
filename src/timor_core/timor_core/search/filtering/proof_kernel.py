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
numba's kernels' results to the last digit (``tests/test_proof_aot.py``). The kernels themselves are
:mod:`.box_bounds`'.
"""

from __future__ import annotations

import functools
import itertools
import math
import types
from pathlib import Path
from typing import Any

import numpy as np

from timor_core.common import compiled
from timor_core.common.ahead import AheadKernels
from timor_core.common.compiled import use_compiled
from timor_core.common.jit_cache import keyed
from timor_core.kinematics import ik_kernel
from timor_core.search.filtering import box_bounds, box_lanes
from timor_core.search.filtering.box_bounds import trig_table
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
    "distance_steps",
    "ahead_kernel",
    "ahead_path",
    "forget_ahead",
    "halve_boxes",
    "inlining",
    "lane_kernels",
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
AHEAD_SOURCES = ("proof_kernel.py", "box_bounds.py", "box_lanes.py", "proof_descent.py", "proof_aot.py",
                 "sweep_bound.py", "proof_fused.py", "sweep_fused.py")  # fmt: skip
"""The files whose text names the ahead-built module: a change of any builds (and loads) another one."""
KERNEL_NAMES = ("poses", "position", "orientation", "halves")
"""The kernels in the order :func:`_compiled` gives them."""
OTHER_KERNELS = ("collisions", "descend", "fused_proof", "fused_sweep", "distance_steps")
"""The other kernels built into the same module, by :func:`ahead_kernel`: the sweep proof's bound
(:mod:`.sweep_bound`), the descent of :func:`reach_witness`, a proof's levels (:mod:`.proof_fused`), a sweep
proof's (:mod:`.sweep_fused`) and the distances between a family's certificates (:func:`distance_steps`)."""
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


def py_kernels(jit: Any = None) -> dict[str, Any]:
    """The kernels as Python functions by name (:data:`KERNEL_NAMES`, :mod:`.box_bounds`): what numba compiles, now
    or ahead of time; with ``jit`` (numba's compiler) ones calling its compilation of
    :func:`~.box_bounds.cos_sin` (numba compiles a kernel only where what it calls is compiled too)."""
    kernels: tuple[Any, ...] = (box_bounds.poses, box_bounds.position, box_bounds.orientation, box_bounds.halves)
    if jit is not None:
        names = {**box_bounds.__dict__, "cos_sin": jit(box_bounds.cos_sin)}
        names["wrist_off"] = jit(types.FunctionType(box_bounds.wrist_off.__code__, names, "wrist_off"))
        kernels = tuple(types.FunctionType(k.__code__, names, k.__name__) for k in kernels)
    return dict(zip(KERNEL_NAMES, kernels, strict=True))


def inlining() -> Any:
    """numba's compiler for helpers inlined into their callers (``inline="always"``, numba's own IR): a call of a
    compiled helper takes and drops a reference to each array it is given (two atomic operations an array), and
    :func:`~.box_lanes.measure_lanes` calls ~20 per chunk of boxes, most chunks a few boxes (the widening's
    children): inlined, the recorded proofs of a search ~6 % less CPU, the same code otherwise (the same values)."""
    import numba  # noqa: PLC0415 (only once the process compiles its kernels)

    return numba.njit(inline="always", fastmath=False, nogil=True)


def lane_kernels(jit: Any = None) -> dict[str, Any]:
    """:mod:`.box_lanes`' :func:`~.box_lanes.measure_lanes` by name, as :func:`py_kernels`: with ``jit`` (numba's
    compiler), one with the helpers there inlined by numba (:func:`inlining`; the caller's to compile), calling its
    compilations of :func:`~.box_bounds.cos_sin` and ``wrist_off`` (inlined too: no faster, LLVM inlines them)."""
    if jit is None:
        return {"measure_lanes": box_lanes.measure_lanes}
    inline = inlining()
    names = {**box_lanes.__dict__, "cos_sin": jit(box_bounds.cos_sin), "wrist_off": jit(box_bounds.wrist_off)}
    for name in box_lanes.LANE_HELPERS:  # (named by the kernels' sources: they call box_bounds.py's cos_sin)
        names[name] = keyed(types.FunctionType(getattr(box_lanes, name).__code__, names, name), AHEAD.sources)
        if name != "measure_lanes":  # (the last, the caller's to compile)
            names[name] = inline(names[name])
    return {"measure_lanes": names["measure_lanes"]}


def other_kernels(compiled_helpers: bool = False) -> dict[str, Any]:
    """This module's kernels among :data:`OTHER_KERNELS` as Python functions by name (built ahead of time with the
    others); with ``compiled_helpers`` the helpers they call are numba's kernels (numba compiles a kernel only where
    what it calls is compiled too: for a build, or numba's compilation)."""
    if not compiled_helpers:
        return {"descend": descend, "distance_steps": distance_steps}
    import numba  # noqa: PLC0415 (only once the process compiles its kernels)

    return {"descend": calling_compiled(numba.njit(cache=True, fastmath=False, nogil=True)),
            "distance_steps": distance_steps}  # fmt: skip


def distance_steps(points: np.ndarray, size: int, t: np.ndarray, top: float, step: float, out: np.ndarray) -> int:
    """The distances ``sum_g |p_g - t_g|`` from ``t`` (gaps, 3) to the first ``size`` rows of ``points`` (m, gaps, 3)
    that are below ``top``, in steps of ``step`` rounded up (``ceil(d / step)``), put in ``out`` in row order; how
    many. Each distance is numpy's ``np.sqrt(((points - t) ** 2).sum(axis=2)).sum(axis=1)`` to the last bit for fewer
    than 8 gaps (the same operations in the same order: numpy adds fewer than 8 terms one after the other), so a
    caller compiled or not gets the same steps (:class:`~.widening.Distances`, ``tests/test_widening.py``)."""
    count, gaps = 0, t.shape[0]
    for k in range(size):
        d = 0.0
        for g in range(gaps):
            dx, dy, dz = points[k, g, 0] - t[g, 0], points[k, g, 1] - t[g, 1], points[k, g, 2] - t[g, 2]
            d += math.sqrt((dx * dx + dy * dy) + dz * dz)  # (0.0 + the first: the first, bit for bit)
        if d < top:
            out[count] = math.ceil(d / step)
            count += 1
    return count


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
    trig = trig_table()
    poses(*(np.ascontiguousarray(a, dtype=np.float64) for a in steps), centres, tcp, rot, origins, jaxes, trig)
    direction = np.ascontiguousarray(goal.direction, dtype=np.float64)
    position(tcp, origins, jaxes, half, gpos, slack, direction, float(goal.length), theta, float(goal.rot_weight),
             excess, weights, rest, trig)  # fmt: skip
    centre = upper if upper is not None else np.empty(0)
    found = orientation(tcp, rot, jaxes, half, rest, gpos, gaxes, slack, theta, *map(float, goal.near), excess, centre,
                        trig)  # fmt: skip
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
    kernels[0](rotations, translations, centres, tcp, rot, origins, jaxes, trig_table())
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
    kernels = tuple(compile_(kernel) for kernel in py_kernels(compile_).values())
    compiled.mark_loaded()
    return kernels  # type: ignore[return-value]  # (poses, position, orientation, halving)
