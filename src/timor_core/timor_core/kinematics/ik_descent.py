"""The inner loops of the IK: one descent from a start configuration, by damped least squares on the projected
pose error (Levenberg–Marquardt, the default) or by scipy's bounded least squares; and the joint mask."""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dposv as _dposv

from timor_core.common import compiled
from timor_core.errors import InputError
from timor_core.kinematics import ik_kernel
from timor_core.kinematics.ik_config import IKConfig

__all__ = [
    "CONVERGED",
    "LWA",
    "compiled_route",
    "crossable_mask",
    "free_joints",
    "kernel_arguments",
    "lm_descend",
    "none_frozen",
    "route_of",
    "scipy_descend",
    "spd_solve",
]

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
CONVERGED = 1e-18
"""Squared residual treated as zero (1e-9: rounding, far inside the 1e-7 margin)."""

_EYE = np.eye(6)  # read only
_ALL_FREE: dict[int, np.ndarray] = {}
PinRobot = Any  # timor_core.kinematics.robot.PinRobot (it imports the IK)


def spd_solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with A x = b for a symmetric positive definite A (LAPACK dposv: 5x less overhead than np.linalg.solve on
    the 6x6 systems of every IK iteration); falls back to np.linalg.solve if A is not positive definite."""
    _, x, info = _dposv(A, b)
    return x if info == 0 else np.linalg.solve(A, b)


def free_joints(mask: Any, dof: int, q_init: np.ndarray | None) -> np.ndarray:
    """The joints the solver may move (all without a mask: a shared read-only array); a mask that freezes joints
    needs q_init."""
    if mask is None:
        free = _ALL_FREE.get(dof)
        if free is None:
            free = _ALL_FREE[dof] = np.ones(dof, dtype=bool)
            free.flags.writeable = False
        return free
    free = np.asarray(mask)
    if free.shape != (dof,) or free.dtype != bool:
        raise InputError(f"joint_mask must be {dof} booleans", value=np.asarray(mask).tolist())
    if not free.all() and q_init is None:
        raise InputError("a joint_mask that freezes joints needs q_init (the frozen joints keep its values)")
    return free


def lm_descend(robot: PinRobot, fid: int, desired: np.ndarray, project: Any, q: np.ndarray, free: np.ndarray,
                config: IKConfig, terms: Any = None,
                params: np.ndarray | None = None) -> tuple[np.ndarray, float, np.ndarray, int, bool]:  # fmt: skip
    """One Levenberg–Marquardt descent from q: (q, squared residual, TCP pose, iterations, cut short by a limit).

    Written for few numpy operations per iteration (they, not Pinocchio, dominate the time of a 6x6 step): one
    Pinocchio call evaluates a trial step and gives its Jacobian; J J^T is reused while a step is refused; the
    joint-limit logic (:class:`_LimitGuard`) only runs while a joint sits at a limit. ``terms``:
    ``project.lm_terms(desired)`` if the caller has it already, ``params`` its ``lm_params``. Once the process
    runs compiled kernels (:mod:`timor_core.common.compiled`), a serial chain of revolute joints descends in
    :mod:`.ik_kernel` (the same steps); the time of the interpreted loop counts towards loading them.
    """
    model, data = robot.model, robot.data
    if model.nv == 0:  # nothing to move (Pinocchio's Jacobians of an empty model crash): the pose is what it is
        pin.forwardKinematics(model, data, q)
        T = pin.updateFramePlacement(model, data, fid).homogeneous
        r = project.weighted(desired, T)[0]
        return q, float(r @ r), T, 1, False
    params = project.lm_params(desired) if params is None else params
    chain = ik_kernel.kernel_chain(model, fid) if params is not None else None
    if chain is not None:
        jit = ik_kernel.ready()
        if jit is not None:
            crossable = _crossable(model, config.max_step)
            return ik_kernel.descend(
                jit, chain, params, q, model.lowerPositionLimit, model.upperPositionLimit,
                np.zeros(model.nv, dtype=bool) if crossable is None else crossable, ~free, _settings(config),
            )  # fmt: skip
    terms = project.lm_terms(desired) if terms is None else terms
    frozen = ~free if not free.all() else None
    steps = _lm_steps if chain is None else functools.partial(compiled.charged, _lm_steps)
    q, cost, iterations, cut, current = steps(model, data, fid, terms, frozen, q, config)
    if not current:  # data holds a refused trial: back to q
        pin.forwardKinematics(model, data, q)
        pin.updateFramePlacement(model, data, fid)
    return q, cost, data.oMf[fid].homogeneous, iterations, cut


def kernel_arguments(model: pin.Model, config: IKConfig) -> tuple[np.ndarray, np.ndarray]:
    """What the compiled descents take besides the chain and the goal: the joints that may cross the narrow gap
    between their limits, and the descent's settings."""
    crossable = _crossable(model, config.max_step)
    return (np.zeros(model.nv, dtype=bool) if crossable is None else crossable), _settings(config)


_NONE_FROZEN: dict[int, np.ndarray] = {}


def none_frozen(dof: int) -> np.ndarray:
    """``dof`` times False: no joint frozen (shared, never written)."""
    frozen = _NONE_FROZEN.get(dof)
    if frozen is None:
        frozen = _NONE_FROZEN[dof] = np.zeros(dof, dtype=bool)
    return frozen


_ROUTES: dict[tuple[int, int, int, int], tuple[Any, Any, Any, ik_kernel.Route | None]] = {}


def compiled_route(robot: PinRobot, fid: int, config: IKConfig, project: Any) -> ik_kernel.Route | None:
    """The compiled tries' arguments for a robot, frame, config and tolerance (None where the kernels do not handle
    them). Kept per model (a robot's own), frame, config and projector (held, so their ids stay theirs; the robot
    itself is not held)."""
    model = robot.model
    key = (id(model), fid, id(config), id(project))
    seen = _ROUTES.get(key)
    if seen is not None and seen[0] is model and seen[1] is config and seen[2] is project:
        return seen[3]
    route = None
    chain = ik_kernel.kernel_chain(model, fid) if config.method == "jacobian" and model.nv > 0 else None
    if chain is not None:
        crossable = kernel_arguments(model, config)[0]
        route = route_of(chain, (model.lowerPositionLimit, model.upperPositionLimit), crossable, robot.sample_box,
                         config, project)  # fmt: skip
    if len(_ROUTES) > 64:
        _ROUTES.clear()
    _ROUTES[key] = (model, config, project, route)
    return route


def route_of(chain: ik_kernel.KernelChain, limits: tuple[np.ndarray, np.ndarray], crossable: np.ndarray,
             sample_box: tuple[np.ndarray, np.ndarray], config: IKConfig, project: Any) -> ik_kernel.Route:  # fmt: skip
    """The compiled tries' arguments for a chain, its position limits (lower, upper), the joints that may cross the
    gap between theirs, the random starts' box (low ends, widths), a config and a tolerance's projector."""
    real = functools.partial(np.ascontiguousarray, dtype=float)  # the ahead-built kernels take C arrays only
    return ik_kernel.Route(chain, real(limits[0]), real(limits[1]), np.ascontiguousarray(crossable, dtype=bool),
                           real(_settings(config)), _limits(config), real(project.valid_bounds()),
                           real(sample_box[0]), real(sample_box[1]), config.start_candidates)  # fmt: skip


def _limits(config: IKConfig) -> np.ndarray:
    """The give-up rule's settings as the compiled tries take them."""
    c = config
    values = [c.plateau_tries, c.plateau_ratio, c.plateau_residual, c.far_plateau_tries, c.far_residual]
    return np.array(values, dtype=float)


_SETTINGS: dict[int, tuple[Any, np.ndarray]] = {}


def _settings(config: IKConfig) -> np.ndarray:
    """The descent's settings as the compiled kernel takes them (kept per config: configs are immutable)."""
    seen = _SETTINGS.get(id(config))
    if seen is None or seen[0] is not config:
        c = config
        values = [c.max_iter, c.damping, c.max_step, c.stall_window, c.stall_ratio, c.limit_patience, c.limit_wraps]
        if len(_SETTINGS) > 256:
            _SETTINGS.clear()
        seen = _SETTINGS[id(config)] = (config, np.array([*values, CONVERGED], dtype=float))
    return seen[1]


def _lm_steps(model: pin.Model, data: Any, fid: int, terms: Any, frozen: np.ndarray | None, q: np.ndarray,
              config: IKConfig) -> tuple[np.ndarray, float, int, bool, bool]:  # fmt: skip
    """The steps of :func:`lm_descend`: (q, squared residual, iterations, cut short by a limit, data holds q)."""
    lo, hi, eye, nv = model.lowerPositionLimit, model.upperPositionLimit, _EYE, model.nv
    lam, max_step, stall_window, stall_ratio = config.damping, config.max_step, config.stall_window, config.stall_ratio
    jacobian, oMf, minimum, maximum = pin.computeFrameJacobian, data.oMf, np.minimum, np.maximum
    guard = _LimitGuard(model, config)
    r, cost, J, JJt = _linearized(model, data, fid, q, terms, frozen)
    at_limit = bool(((q <= lo) | (q >= hi)).any())
    stall_ref, stall_count, iterations = cost, 0, 0
    current = True  # data holds the kinematics of q (not of a refused trial)
    for _ in range(config.max_iter):
        iterations += 1
        if cost <= CONVERGED:
            break
        stall_count += 1
        if stall_count == stall_window:  # too little progress: restart elsewhere
            if cost > stall_ratio * stall_ref:
                break
            stall_ref, stall_count = cost, 0
        step = J.T @ spd_solve(JJt + lam * eye, r)
        if at_limit:
            step, jumped = guard.step(q, step, J, lam, r)
            if step is None and jumped is None:  # the way to the goal leads through a limit: restart elsewhere
                return q, cost, iterations, True, current
            if jumped is not None:  # crossed the narrow gap to a joint's other limit: start over from there
                q = jumped
                r, cost, J, JJt = _linearized(model, data, fid, q, terms, frozen)
                current, lam = True, config.damping
                stall_ref, stall_count = cost, 0
                continue
        s = step.tolist()
        big = max(max(s), -min(s))
        if big > max_step:
            step *= max_step / big
        q_new = q - step
        q_clip = minimum(maximum(q_new, lo), hi)  # infinite limits clip nothing
        clipped = q_clip.tolist() != q_new.tolist()
        Jf = jacobian(model, data, q_clip, fid, LWA).reshape(6, nv)
        r_new, cost_new, column = terms(oMf[fid])
        if cost_new < cost:
            q, r, cost, current = q_clip, r_new, cost_new, True
            J = Jf * column  # as _masked does, inline: once per accepted step
            if frozen is not None:
                J[:, frozen] = 0.0
            JJt = J @ J.T
            at_limit = clipped or (at_limit and bool(((q <= lo) | (q >= hi)).any()))
            if not at_limit:
                guard.blocked_steps = 0
            lam = max(lam * 0.3, 1e-9)
        else:
            current = False
            lam *= 10.0
            if lam > 1e3:
                break
    return q, cost, iterations, False, current


def _linearized(model: pin.Model, data: Any, fid: int, q: np.ndarray, terms: Any,
                frozen: np.ndarray | None) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:  # fmt: skip
    """At q: the weighted residual, its squared norm, the masked weighted Jacobian and J J^T (data then holds q)."""
    Jf = pin.computeFrameJacobian(model, data, q, fid, LWA).reshape(6, model.nv)  # (6,) for one joint
    r, cost, column = terms(data.oMf[fid])
    J, JJt = _masked(Jf, column, frozen)
    return r, cost, J, JJt


def _masked(Jf: np.ndarray, column: Any, frozen: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """The weighted Jacobian with the frozen joints' columns zero, and J J^T."""
    J = Jf * column
    if frozen is not None:
        J[:, frozen] = 0.0
    return J, J @ J.T


class _LimitGuard:
    """The joint-limit logic of one descent, run only while a joint sits at a limit. Most tries that fail do so
    against a limit: a revolute joint whose limits leave a narrow gap in the full turn jumps to its other limit
    (physically a small turn, ``limit_wraps`` times per try), and a try whose steps a limit keeps blocking for
    ``limit_patience`` steps ends (a fresh start is cheaper than sliding along it)."""

    def __init__(self, model: pin.Model, config: IKConfig) -> None:
        self.lo, self.hi = model.lowerPositionLimit, model.upperPositionLimit
        self.crossable = _crossable(model, config.max_step)
        self.wraps = config.limit_wraps if self.crossable is not None else 0
        self.patience, self.blocked_steps = config.limit_patience, 0

    def step(self, q: np.ndarray, step: np.ndarray, J: np.ndarray, lam: float,
             r: np.ndarray) -> tuple[np.ndarray | None, np.ndarray | None]:  # fmt: skip
        """(the step, None) to take; (None, the q across a gap) to jump to; (None, None): give up the try."""
        lo, hi = self.lo, self.hi
        blocked = ((q <= lo) & (step > 0)) | ((q >= hi) & (step < 0))  # never true for infinite limits
        if not blocked.any():
            self.blocked_steps = 0
            return step, None
        # joints at a limit that the step pushes further out take no part
        jump = blocked & self.crossable if self.wraps else None
        if jump is not None and jump.any():  # cross the narrow gap to the joint's other limit
            self.wraps -= 1
            q = q.copy()
            q[jump] = np.where(q[jump] >= hi[jump], lo[jump], hi[jump])
            self.blocked_steps = 0
            return None, q
        self.blocked_steps += 1
        if self.blocked_steps == self.patience:
            return None, None
        Jb = J.copy()
        Jb[:, blocked] = 0.0
        return Jb.T @ spd_solve(Jb @ Jb.T + lam * _EYE, r), None


_NO_LIMIT = 1e300  # Pinocchio stores "no limit" as ±DBL_MAX
_CROSSABLE: dict[tuple[int, float], tuple[Any, np.ndarray | None]] = {}


def _crossable(model: pin.Model, max_step: float) -> np.ndarray | None:
    """The revolute joints whose limits leave a gap of at most ``max_step`` (rad) in the full turn: one at a limit
    is physically that close to its other limit (None if there are none). Kept per model (it holds the model)."""
    key = (id(model), max_step)
    seen = _CROSSABLE.get(key)
    if seen is not None and seen[0] is model:
        return seen[1]
    mask = np.zeros(model.nv, dtype=bool)
    lo, hi = model.lowerPositionLimit, model.upperPositionLimit
    for joint in model.joints[1:]:
        name = joint.shortname()
        if joint.nq == joint.nv == 1 and name.startswith(("JointModelR", "JointModelRevolute")) and "RUB" not in name:
            mask[joint.idx_v] = _gap_crossable(float(lo[joint.idx_q]), float(hi[joint.idx_q]), max_step)
    if len(_CROSSABLE) > 256:
        _CROSSABLE.clear()
    _CROSSABLE[key] = (model, mask if model.nq == model.nv and mask.any() else None)
    return _CROSSABLE[key][1]


def _gap_crossable(low: float, high: float, max_step: float) -> bool:
    """A revolute joint's limits leave a gap of at most ``max_step`` (rad) in the full turn."""
    limited = max(abs(low), abs(high)) < _NO_LIMIT  # a continuous joint's ±DBL_MAX: no gap (no overflow)
    return limited and 2.0 * math.pi - (high - low) <= max_step


def crossable_mask(lower: np.ndarray, upper: np.ndarray, max_step: float) -> np.ndarray:
    """What :func:`kernel_arguments` gives as the crossable joints of a chain of revolute joints (x/y/z or skew
    axes, bounded) with these position limits."""
    return np.array([_gap_crossable(float(lo), float(hi), max_step) for lo, hi in zip(lower, upper)], dtype=bool)


def scipy_descend(robot: PinRobot, fid: int, desired: np.ndarray, project: Any, q: np.ndarray, free: np.ndarray,
                   config: IKConfig) -> tuple[np.ndarray, float, np.ndarray, int, bool]:  # fmt: skip
    """One descent with scipy's bounded least squares (trust region reflective) over the free joints (as
    ``lm_descend``; never cut short)."""
    from scipy.optimize import least_squares

    model, data = robot.model, robot.data
    big = 1e300
    lo = np.where(model.lowerPositionLimit > -big, model.lowerPositionLimit, -np.inf)[free]
    hi = np.where(model.upperPositionLimit < big, model.upperPositionLimit, np.inf)[free]
    x0 = np.clip(q[free], lo, hi)
    full = q.copy()

    def residual(x: np.ndarray) -> np.ndarray:
        full[free] = x
        pin.forwardKinematics(model, data, full)
        return project(desired, pin.updateFramePlacement(model, data, fid).homogeneous)[0]

    result = least_squares(residual, x0, bounds=(lo, hi), max_nfev=config.max_iter * 4, xtol=1e-12, ftol=1e-12)
    q = q.copy()
    q[free] = result.x
    pin.forwardKinematics(model, data, q)
    T = pin.updateFramePlacement(model, data, fid).homogeneous
    r = project(desired, T)[0]
    return q, float(r @ r), T, int(result.nfev), False
