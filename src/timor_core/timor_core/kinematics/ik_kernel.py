"""The IK's Levenberg–Marquardt descents (:mod:`.ik_descent`) compiled with numba, for serial chains of revolute joints.

Why: one iteration of the interpreted descent costs ~30 µs, nearly all of it the interpreter's overhead around a
6x6 solve, and the search's task-aware IK runs thousands of tries that fail against an obstacle (``obstacle_middle``:
27 arms x 150 tries, a third of that search). Compiled, an iteration costs a microsecond or two.

The same steps as the interpreted loop (damping, step bound, stall window, the joint-limit guard with its wraps and
patience) on the same residual as :mod:`.ik_residual` (goals of r_sph/Theta_R, and of x/y/z boxes with them), with
Pinocchio's kinematics replaced by the chain's own product of joint placements: results agree with the interpreted
loop to rounding (where a step's acceptance is a near tie, a descent may go on elsewhere). Where the kernels are built
ahead of time (:mod:`.ik_aot`: a compiled extension module for the sources as they are, in ``AHEAD_FOLDER``), a process
runs that from its first IK call: it loads in ~0.4 ms without numba and gives the numba kernels' results to the last
digit. Else a process loads the numba kernels by the rule of :mod:`timor_core.common.compiled` (~0.45 s of CPU with a
warm cache: numba's import and first dispatch), with the reach proofs' kernels.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from timor_core.common import compiled
from timor_core.common.ahead import AheadKernels

__all__ = [
    "AHEAD",
    "AHEAD_FOLDER",
    "AHEAD_SOURCES",
    "LARGEST_BATCH",
    "KernelChain",
    "Kernels",
    "Route",
    "Tries",
    "ahead",
    "ahead_path",
    "chain_pose",
    "descend",
    "forget_ahead",
    "jit_kernels",
    "kernel_chain",
    "kernels",
    "load",
    "ready",
    "start_index",
    "tries_kernels",
]

logger = logging.getLogger(__name__)
_AXES = {"JointModelRX": 0, "JointModelRY": 1, "JointModelRZ": 2, "JointModelRevoluteUnaligned": 3}


@dataclass(frozen=True)
class KernelChain:
    """A serial chain of revolute joints as the kernels take it: ``placements`` (n, 4, 4) joint k's placement in
    joint k-1's frame (the first: in the world), ``kinds`` (n,) 0/1/2 for an x/y/z axis, 3 for ``axes`` (n, 3);
    ``tool`` (4, 4) the frame's placement in joint ``moving - 1``'s (the joints after it do not move it)."""

    placements: np.ndarray
    kinds: np.ndarray
    axes: np.ndarray
    tool: np.ndarray
    moving: int


_CHAINS: dict[tuple[int, int], tuple[Any, KernelChain | None]] = {}


def kernel_chain(model: Any, fid: int) -> KernelChain | None:
    """The chain of a Pinocchio model up to frame ``fid``, or None if the joints up to it are not a serial chain of
    one-DOF revolute joints (then the interpreted descent runs). Kept per model and frame (it holds the model)."""
    key = (id(model), fid)
    seen = _CHAINS.get(key)
    if seen is not None and seen[0] is model:
        return seen[1]
    chain = _chain_of(model, fid)
    if len(_CHAINS) > 256:
        _CHAINS.clear()
    _CHAINS[key] = (model, chain)
    return chain


def _chain_of(model: Any, fid: int) -> KernelChain | None:
    """The joints up to the frame's must be revolute, each the child of the one before; joints after it (a
    gripper's fingers, say: they do not move the frame) may be any one-DOF joints, their Jacobian columns zero."""
    n = model.njoints - 1
    frame = model.frames[fid]
    moving = int(frame.parentJoint)
    if n < 1 or model.nq != n or model.nv != n or moving < 1:
        return None
    kinds, axes = np.full(n, 2, dtype=np.int64), np.tile(np.eye(3)[2], (n, 1))
    for k, joint in enumerate(model.joints[1:]):
        if joint.idx_q != k or joint.nq != 1 or joint.nv != 1:
            return None
        if k >= moving:  # does not move the frame
            continue
        kind = _AXES.get(joint.shortname())
        if kind is None or model.parents[k + 1] != k:
            return None
        kinds[k] = kind
        axes[k] = np.asarray(joint.extract().axis, dtype=float) if kind == 3 else np.eye(3)[kind]
    placements = np.array([model.jointPlacements[k].homogeneous for k in range(1, n + 1)])
    tool = np.ascontiguousarray(frame.placement.homogeneous, dtype=float)  # C order: the ahead-built kernels' layout
    return KernelChain(placements, kinds, np.ascontiguousarray(axes), tool, moving)


def chain_pose(chain: KernelChain, q: np.ndarray) -> np.ndarray:
    """The chain's frame's pose (4, 4) at ``q``, in numpy (the kernels' and Pinocchio's to rounding)."""
    T, axes, angles = np.eye(4), chain.axes.tolist(), np.asarray(q, dtype=float).tolist()
    for k in range(chain.moving):  # (Python floats: the same IEEE products as numpy's scalars, ~3x faster)
        (x, y, z), angle = axes[k], angles[k]
        c, s = math.cos(angle), math.sin(angle)
        t = 1.0 - c
        M = np.array([[c + t * x * x, t * x * y - s * z, t * x * z + s * y, 0.0],
                      [t * x * y + s * z, c + t * y * y, t * y * z - s * x, 0.0],
                      [t * x * z - s * y, t * y * z + s * x, c + t * z * z, 0.0],
                      [0.0, 0.0, 0.0, 1.0]])  # fmt: skip
        T = T @ chain.placements[k] @ M
    return T @ chain.tool


@dataclass(frozen=True)
class Kernels:
    """The compiled kernels a process runs: numba's (:mod:`.ik_jit`, :mod:`.ik_jit_tries`) or the same ones built
    ahead of time (:mod:`.ik_aot`, ``ahead`` True; they take C-contiguous float64/bool arrays only)."""

    descend: Callable[..., Any]
    best_start: Callable[..., Any]
    run_tries: Callable[..., Any]
    plateau_stop: Callable[..., Any]
    ahead: bool = False


AHEAD_FOLDER = Path(__file__).resolve().parent / "__pycache__"
"""Where :mod:`.ik_aot` puts the kernels it builds and :func:`ahead` looks for them (numba's cache is there too)."""
AHEAD_SOURCES = ("ik_jit.py", "ik_jit_residual.py", "ik_jit_tries.py", "ik_aot.py")
"""The files whose text names the ahead-built module: a change of any builds (and loads) another one."""
AHEAD: AheadKernels[Kernels] = AheadKernels(
    "ik_aot",
    "IK kernels",
    [Path(__file__).resolve().parent / name for name in AHEAD_SOURCES],
    lambda: AHEAD_FOLDER,
    ("descend", "best_start", "run_tries", "plateau_stop"),
    lambda module: Kernels(module.descend, module.best_start, module.run_tries, module.plateau_stop, True),
)
"""The IK's kernels built ahead of time (:mod:`.ik_aot`): where, and loaded once (:mod:`timor_core.common.ahead`)."""
ahead_path = AHEAD.path
ahead = AHEAD.get
forget_ahead = AHEAD.forget


@functools.cache
def kernels() -> Any:
    """The compiled kernels (:mod:`.ik_jit`; numba and the kernels loaded on the first call)."""
    from timor_core.kinematics import ik_jit  # noqa: PLC0415 (loaded by the rule of timor_core.common.compiled)

    tries_kernels()
    compiled.mark_loaded()
    return ik_jit


@functools.cache
def tries_kernels() -> Any:
    """The compiled tries in a row (:mod:`.ik_jit_tries`), loaded with :func:`kernels`."""
    from timor_core.kinematics import ik_jit_tries  # noqa: PLC0415 (as ik_jit)

    return ik_jit_tries


@functools.cache
def jit_kernels() -> Kernels:
    """numba's kernels (:func:`kernels` and :func:`tries_kernels`; numba loaded on the first call) as one set."""
    jit, tries = kernels(), tries_kernels()
    return Kernels(jit.descend, jit.best_start, tries.run_tries, tries.plateau_stop)


def ready() -> Kernels | None:
    """The compiled kernels if this process runs them now, else None: the ahead-built ones wherever compiled kernels
    are allowed and they are there, else numba's by the rule (loading them if it is time)."""
    if compiled.allowed():
        built = ahead()
        if built is not None:
            return built
    if compiled.loaded_or_none(kernels, "the IK descents") is None:
        return None
    return jit_kernels()


def load() -> None:
    """Load numba and the compiled descents now, and run each once (for long-lived workers)."""
    jit = kernels()
    chain = KernelChain(np.eye(4)[None], np.array([2]), np.array([[0.0, 0.0, 1.0]]), np.eye(4), 1)
    params = np.zeros(26)
    params[18:22] = -math.inf, math.inf, -math.inf, math.inf
    params[3:12] = np.eye(3).reshape(9)
    descend(jit, chain, params, np.zeros(1), np.full(1, -1.0), np.ones(1), np.zeros(1, bool), np.zeros(1, bool),
            np.array([60, 3e-3, 1.0, 5, 0.5, 3, 1, 1e-18]))  # fmt: skip
    jit.best_start(_tuple(chain), np.zeros((2, 1)), params)
    limits, none = np.array([20, 0.9, 0.01, 5, 0.2]), np.zeros(1, bool)
    route = Route(chain, np.full(1, -1.0), np.ones(1), none, np.array([60, 3e-3, 1.0, 5, 0.5, 3, 1, 1e-18]), limits,
                  np.array([1.0, 0.0, 1.0, 0.0, 1.0, 1.0]), np.full(1, -1.0), np.full(1, 2.0), 2)  # fmt: skip
    Tries(route, params, none, np.zeros(1), None, np.random.default_rng(0), 2, jit_kernels()).next_found()


Descent = tuple[np.ndarray, float, np.ndarray, int, bool]


def descend(jit: Any, chain: KernelChain, params: np.ndarray, q: np.ndarray, lower: np.ndarray, upper: np.ndarray,
            crossable: np.ndarray, frozen: np.ndarray, settings: np.ndarray) -> Descent:  # fmt: skip
    """One compiled descent from ``q``: (q, squared residual, the frame's pose, iterations, cut short by a limit)."""
    q_out, T = np.empty(len(q)), np.empty((4, 4))
    real = functools.partial(np.ascontiguousarray, dtype=float)  # the ahead-built kernels take C arrays only
    flags = functools.partial(np.ascontiguousarray, dtype=bool)
    cost, iterations, cut = jit.descend(_tuple(chain), real(lower), real(upper), flags(crossable), flags(frozen),
                                        real(q), real(params), real(settings), q_out, T)  # fmt: skip
    return q_out, float(cost), T, int(iterations), bool(cut)


def start_index(jit: Any, chain: KernelChain, candidates: np.ndarray, params: np.ndarray) -> int:
    """Of the candidate configurations (k, n), the one whose pose is nearest the goal (least squared residual)."""
    candidates, params = np.ascontiguousarray(candidates, dtype=float), np.ascontiguousarray(params, dtype=float)
    return int(jit.best_start(_tuple(chain), candidates, params))


def _tuple(chain: KernelChain) -> tuple[Any, ...]:
    return chain.placements, chain.kinds, chain.axes, chain.tool, chain.moving


_EMPTY = np.empty(0)
LARGEST_BATCH = 16
"""Most tries one call of the compiled tries runs (more: fewer calls into the kernel, more draws to take back)."""


@dataclass(frozen=True)
class Route:
    """What the compiled tries of one robot, frame, IKConfig and tolerance take besides the goal: the chain, the
    joint limits, the joints that may cross the gap between their limits, the descent's and the give-up rule's
    settings, the tolerance test (``Projector.valid_bounds``) and the random starts' box and count."""

    chain: KernelChain
    lower: np.ndarray
    upper: np.ndarray
    crossable: np.ndarray
    settings: np.ndarray
    limits: np.ndarray
    bounds: np.ndarray
    sample_lo: np.ndarray
    sample_span: np.ndarray
    candidates: int


class Tries:
    """An IK call's tries run by the compiled kernels (:mod:`.ik_jit_tries`) in batches of 1, 2, 4, ... tries (at
    most ``LARGEST_BATCH``), each try's random candidates drawn by one ``rng.random`` per batch: the same numbers, in
    the same order, as the interpreted loop's draw per try, and the generator put back to just after the draws the
    tries used (a batch that ends early re-draws only those), so the generator ends where that loop leaves it."""

    def __init__(self, route: Route, params: np.ndarray, frozen: np.ndarray, first: np.ndarray | None,
                 fixed: np.ndarray | None, rng: np.random.Generator, max_tries: int,
                 kernels: Kernels) -> None:  # fmt: skip
        n = len(route.lower)
        self.kernel, self.plateau_stop = kernels.run_tries, kernels.plateau_stop
        r = route  # its arrays C-contiguous (compiled_route), as the ahead-built kernels need
        params, frozen = np.ascontiguousarray(params, dtype=float), np.ascontiguousarray(frozen, dtype=bool)
        self.fixed = (_tuple(r.chain), r.lower, r.upper, r.crossable, frozen, params, r.settings, r.limits, r.bounds,
                      r.sample_lo, r.sample_span)  # fmt: skip
        self.checked = r.bounds[0] != 0.0  # the kernel checks a converged try against the tolerance
        self.first = _EMPTY if first is None else np.ascontiguousarray(first, dtype=float)
        self.hold = _EMPTY if fixed is None else np.ascontiguousarray(fixed, dtype=float)
        self.shape = (r.candidates, n)
        self.rng, self.max_tries, self.batch, self.largest_batch = rng, max_tries, 1, LARGEST_BATCH
        self.state = np.array([math.inf, 0.0, 0.0, math.inf])  # plateau reference, counts, best squared residual
        self.best_q, self.q, self.T = np.zeros(n), np.empty(n), np.empty((4, 4))
        self.tries = self.iterations = 0
        self.done = False

    @property
    def best_res(self) -> float:
        """The least squared residual of the tries so far (inf before the first)."""
        return float(self.state[3])

    def next_found(self) -> bool:
        """Run tries until one converges within the tolerance (True: its ``q`` and pose ``T``), or the tries run
        out or the give-up rule stops them (False)."""
        while not self.done and self.tries < self.max_tries:
            size = min(self.batch, self.max_tries - self.tries, self.largest_batch)
            self.batch = size * 2
            use_first = 1 if self.tries == 0 and len(self.first) else 0
            m = size - use_first
            generator = self.rng.bit_generator
            saved = generator.state if size > 1 else None
            draws = self.rng.random((m, *self.shape))
            status, used, iterations = self.kernel(*self.fixed, self.first if use_first else _EMPTY, self.hold, draws,
                                                   self.state, self.best_q, self.q, self.T)  # fmt: skip
            self.tries += used
            self.iterations += iterations
            if used - use_first < m and saved is not None:  # back to just after the draws the tries used
                generator.state = saved
                self.rng.random((used - use_first, *self.shape))
            if status == 2:
                self.done = True
            elif status == 1:
                return True
        return False

    def refused(self) -> None:
        """The last converged try does not meet the tolerance: it counts as a failed try for the give-up rule."""
        if self.plateau_stop(self.state, self.fixed[7], False):
            self.done = True
