"""The dynamics half of PinRobot: inverse and forward dynamics, gravity torques, the mass matrix, TCP velocity
and acceleration, manipulability. A mixin, so ``robot.id(q, dq, ddq)`` reads as in the reference toolbox while
this file stays one concept; it uses the robot's ``model``, ``data``, ``check_q``, ``_check_vector``, ``dof``,
``tcp``, ``frame_id`` and ``jacobian``."""

from __future__ import annotations

from typing import Any

import numpy as np
import pinocchio as pin

from timor_core.errors import TimorError

__all__ = ["RobotDynamics", "DynamicsError", "friction_torques"]


class DynamicsError(TimorError, ValueError):
    """The dynamics are not defined: e.g. a moving link with no mass or inertia at or rigidly below it (and no
    rotor inertia) makes the mass matrix singular; the message names its joints."""


def friction_torques(model: Any, dq: np.ndarray) -> np.ndarray:
    """The module set's joint friction at velocities ``dq``: Coulomb (sign(dq)·f_c) plus viscous (d·dq), what
    ``id``/``fd`` add with ``friction=True`` (and ``robot.friction(dq)`` gives)."""
    return model.friction * np.sign(dq) + model.damping * dq


class RobotDynamics:
    """Dynamics of a PinRobot (mixed into it; not used alone)."""

    model: Any
    data: Any
    dof: Any
    tcp: Any
    joints: Any

    def check_q(self, q) -> np.ndarray:  # provided by PinRobot
        raise NotImplementedError

    def _check_vector(self, v, name: str) -> np.ndarray:  # provided by PinRobot
        raise NotImplementedError

    def frame_id(self, frame) -> int:  # provided by PinRobot
        raise NotImplementedError

    def jacobian(self, q=None, frame=None, reference: str = "world_aligned") -> np.ndarray:  # provided by PinRobot
        raise NotImplementedError

    def id(self, q=None, dq=None, ddq=None, motor_inertia: bool = True, friction: bool = False) -> np.ndarray:
        """Inverse dynamics: joint torques for q, dq, ddq (rigid bodies, plus rotor inertia by default).

        ``friction`` adds Coulomb (sign(dq)·f_c) and viscous (d·dq) friction of the module set.
        """
        q = self.check_q(q)
        dq = np.zeros(self.dof) if dq is None else self._check_vector(dq, "dq")
        ddq = np.zeros(self.dof) if ddq is None else self._check_vector(ddq, "ddq")
        tau = pin.rnea(self.model, self.data, q, dq, ddq).copy()  # includes the armature (rotor inertia) term
        if not motor_inertia:
            tau -= self.model.armature * ddq
        if friction:
            tau += friction_torques(self.model, dq)
        return tau

    def fd(self, tau, q=None, dq=None, motor_inertia: bool = True, friction: bool = False) -> np.ndarray:
        """Forward dynamics: joint accelerations for torques ``tau`` at q, dq (no external forces).

        The inverse of :meth:`id` with the same flags: rotor inertia by default, friction on request.
        """
        q = self.check_q(q)
        dq = np.zeros(self.dof) if dq is None else self._check_vector(dq, "dq")
        tau = self._check_vector(tau, "tau")
        M = self.mass_matrix(q)
        if not motor_inertia:
            M = M - np.diag(self.model.armature)
        bias = pin.rnea(self.model, self.data, q, dq, np.zeros(self.dof))  # Coriolis, centrifugal, gravity
        if friction:
            bias = bias + friction_torques(self.model, dq)
        try:
            return np.linalg.solve(M, tau - bias)
        except np.linalg.LinAlgError:
            idle = [name for name, m in zip(self.joints, np.diag(M)) if m <= 0.0]
            raise DynamicsError(
                f"forward dynamics: the mass matrix is singular at q={np.round(q, 6).tolist()}; joints moving no mass "
                f"or inertia (give the link mass, or the joint rotor inertia): {idle or 'none alone'}"
            ) from None

    def tcp_velocity(self, q=None, dq=None, frame: str | None = None) -> np.ndarray:
        """The spatial velocity [v; ω] (world-aligned, at the frame's origin) of the TCP (or a frame) at q, dq."""
        dq = np.zeros(self.dof) if dq is None else self._check_vector(dq, "dq")
        return self.jacobian(q, frame) @ dq

    def tcp_acceleration(self, q=None, dq=None, ddq=None, frame: str | None = None) -> np.ndarray:
        """The classical acceleration [a; α] (world-aligned) of the TCP (or a frame) at q, dq, ddq."""
        q = self.check_q(q)
        dq = np.zeros(self.dof) if dq is None else self._check_vector(dq, "dq")
        ddq = np.zeros(self.dof) if ddq is None else self._check_vector(ddq, "ddq")
        fid = self.tcp if frame is None else self.frame_id(frame)
        pin.forwardKinematics(self.model, self.data, q, dq, ddq)
        a = pin.getFrameClassicalAcceleration(self.model, self.data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
        return np.asarray(a.vector, dtype=float).copy()

    def manipulability_index(self, q=None) -> float:
        """Yoshikawa's manipulability sqrt(det(J Jᵀ)) of the TCP Jacobian (0 for fewer than 6 DOF or at a
        singularity; independent of the frame the Jacobian is expressed in)."""
        J = self.jacobian(q)
        return float(np.sqrt(max(np.linalg.det(J @ J.T), 0.0)))

    def static_torque(self, q=None) -> np.ndarray:
        """Torques that hold the robot still at q against gravity."""
        q = self.check_q(q)
        return pin.computeGeneralizedGravity(self.model, self.data, q).copy()

    def mass_matrix(self, q=None) -> np.ndarray:
        """Joint-space inertia matrix M(q) (with rotor inertia)."""
        q = self.check_q(q)
        M = pin.crba(self.model, self.data, q)
        M = np.triu(M) + np.triu(M, 1).T
        return M
