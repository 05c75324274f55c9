"""The inner loops of the IK: one descent from a start configuration, by damped least squares on the projected
pose error (Levenberg–Marquardt, the default) or by scipy's bounded least squares; and the joint mask."""

from __future__ import annotations

from typing import Any

import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dposv as _dposv

from timor_core.errors import InputError

__all__ = ["CONVERGED", "LWA", "free_joints", "lm_descend", "scipy_descend", "spd_solve"]

LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
CONVERGED = 1e-18
"""Squared residual treated as zero (1e-9: rounding, far inside the 1e-7 margin)."""

PinRobot = Any  # timor_core.kinematics.robot.PinRobot (it imports the IK)
IKConfig = Any  # timor_core.kinematics.ik.IKConfig (it imports this module)


def spd_solve(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """x with A x = b for a symmetric positive definite A (LAPACK dposv: 5x less overhead than np.linalg.solve on
    the 6x6 systems of every IK iteration); falls back to np.linalg.solve if A is not positive definite."""
    _, x, info = _dposv(A, b)
    return x if info == 0 else np.linalg.solve(A, b)


def free_joints(mask: Any, dof: int, q_init: np.ndarray | None) -> np.ndarray:
    """The joints the solver may move (all without a mask); a mask that freezes joints needs q_init."""
    if mask is None:
        return np.ones(dof, dtype=bool)
    free = np.asarray(mask)
    if free.shape != (dof,) or free.dtype != bool:
        raise InputError(f"joint_mask must be {dof} booleans", value=np.asarray(mask).tolist())
    if not free.all() and q_init is None:
        raise InputError("a joint_mask that freezes joints needs q_init (the frozen joints keep its values)")
    return free


def lm_descend(robot: PinRobot, fid: int, desired: np.ndarray, project: Any, q: np.ndarray, free: np.ndarray,
                config: IKConfig) -> tuple[np.ndarray, float, np.ndarray, int]:  # fmt: skip
    """One Levenberg–Marquardt descent from q: (q, squared residual, TCP pose, iterations)."""
    model, data = robot.model, robot.data
    lo, hi = model.lowerPositionLimit, model.upperPositionLimit
    n = robot.dof
    eye = np.eye(6)
    frozen = ~free
    lam = config.damping
    pin.forwardKinematics(model, data, q)
    T = pin.updateFramePlacement(model, data, fid).homogeneous
    r, G = project(desired, T)
    cost = float(r @ r)
    stall_ref, stall_count = cost, 0
    iterations = 0
    for _ in range(config.max_iter):
        iterations += 1
        if cost <= CONVERGED:
            break
        stall_count += 1
        if stall_count == config.stall_window:  # too little progress: restart elsewhere
            if cost > config.stall_ratio * stall_ref:
                break
            stall_ref, stall_count = cost, 0
        J = G @ pin.computeFrameJacobian(model, data, q, fid, LWA).reshape(6, n)  # (6,) for one joint
        if frozen.any():
            J[:, frozen] = 0.0
        step = J.T @ spd_solve(J @ J.T + lam * eye, r)
        blocked = ((q <= lo) & (step > 0)) | ((q >= hi) & (step < 0))  # never true for infinite limits
        if blocked.any():  # joints at a limit that the step pushes further out take no part
            J[:, blocked] = 0.0
            step = J.T @ spd_solve(J @ J.T + lam * eye, r)
        big = np.abs(step).max()
        if big > config.max_step:
            step *= config.max_step / big
        q_new = np.minimum(np.maximum(q - step, lo), hi)  # infinite limits clip nothing
        pin.forwardKinematics(model, data, q_new)
        T_new = pin.updateFramePlacement(model, data, fid).homogeneous
        r_new, G_new = project(desired, T_new)
        cost_new = float(r_new @ r_new)
        if cost_new < cost:
            q, r, G, cost, T = q_new, r_new, G_new, cost_new, T_new
            lam = max(lam * 0.3, 1e-9)
        else:
            lam *= 10.0
            if lam > 1e3:
                break
    return q, cost, T, iterations


def scipy_descend(robot: PinRobot, fid: int, desired: np.ndarray, project: Any, q: np.ndarray, free: np.ndarray,
                   config: IKConfig) -> tuple[np.ndarray, float, np.ndarray, int]:  # fmt: skip
    """One descent with scipy's bounded least squares (trust region reflective) over the free joints."""
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
    return q, float(r @ r), T, int(result.nfev)
