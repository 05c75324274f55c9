"""The reference toolbox's (timor-python 1.1.1) names on a PinRobot, for scripts moving over.

A mixin: ``robot.joint_velocity_limits``, ``q_in_joint_limits(q)``, ``tau_in_torque_limits(tau)``,
``update_configuration(q)``, ``has_collisions(task)``, ``friction(dq)`` and ``motor_inertias(ddq)`` read as they
did there; ``set_base_placement`` and ``move`` are refused naming how a robot gets its base placement. timor's
robot keeps one current
configuration (``robot.q``, what ``fk()`` and the other calls use without a q) but no velocity or acceleration, so
``update_configuration`` with ``dq`` / ``ddq`` is refused naming the calls that take them.
"""

from __future__ import annotations

from typing import Any, NoReturn

import numpy as np

from timor_core.errors import InputError
from timor_core.kinematics.dynamics import friction_torques

__all__ = ["RobotCompat", "refuse_placement_change", "refuse_task_as_q"]


def refuse_task_as_q(q: Any, call: str) -> None:
    """A task passed where the configuration goes (the reference's ``collisions(task)`` order): an InputError
    naming timor's order instead of 'configuration must be N numbers'."""
    if hasattr(q, "obstacles") and hasattr(q, "goals"):
        raise InputError(
            f"robot.{call}(q, task, margin) takes the configuration first (timor-python's "
            f"robot.{call}(task, safety_margin) used the configuration set before): pass robot.q or a q",
            value=type(q).__name__,
        )


def refuse_placement_change(call: str) -> NoReturn:
    """timor-python's in-place base placement calls: an InputError naming how a timor robot gets its placement."""
    raise InputError(
        f"robot.{call} is not supported: a robot's base placement is set when it is built, "
        "assembly.to_pin_robot(base_placement=T) or ModuleAssembly.from_serial_modules(db, ids, base_placement=T)"
        " (timor-python changed the robot in place)",
        value=call,
    )


class RobotCompat:
    """timor-python's names on a PinRobot (mixed into it; not used alone)."""

    q: np.ndarray
    model: Any

    @property
    def velocity_limits(self) -> np.ndarray:  # provided by RobotLimits
        raise NotImplementedError

    @property
    def acceleration_limits(self) -> np.ndarray:  # provided by RobotLimits
        raise NotImplementedError

    @property
    def torque_limits(self) -> np.ndarray:  # provided by RobotLimits
        raise NotImplementedError

    def within_limits(self, q=None) -> bool:  # provided by PinRobot
        raise NotImplementedError

    def has_collision(self, q=None, task=None, margin: float = 0.0) -> bool:  # provided by RobotCollisions
        raise NotImplementedError

    def _check_vector(self, v, name: str) -> np.ndarray:  # provided by PinRobot
        raise NotImplementedError

    @property
    def joint_velocity_limits(self) -> np.ndarray:
        """timor-python's name of :attr:`velocity_limits`."""
        return self.velocity_limits

    @property
    def joint_acceleration_limits(self) -> np.ndarray:
        """timor-python's name of :attr:`acceleration_limits`."""
        return self.acceleration_limits

    @property
    def joint_torque_limits(self) -> np.ndarray:
        """timor-python's name of :attr:`torque_limits`."""
        return self.torque_limits

    def friction(self, dq) -> np.ndarray:
        """Joint friction torques at velocities dq: Coulomb (sign(dq)·f_c) plus viscous (d·dq), the term
        ``id(..., friction=True)`` adds (timor-python smooths the sign: sin(atan(100·dq)))."""
        return friction_torques(self.model, self._check_vector(dq, "dq"))

    def motor_inertias(self, ddq) -> np.ndarray:
        """Torques accelerating the rotors at ddq (motorInertia·gearRatio²·ddq), in ``id`` unless
        ``motor_inertia=False``."""
        return self.model.armature * self._check_vector(ddq, "ddq")

    def q_in_joint_limits(self, q) -> bool:
        """True if q is within the position limits (timor-python's name of :meth:`within_limits`)."""
        return self.within_limits(q)

    def tau_in_torque_limits(self, tau) -> bool:
        """True if every |tau| is within the (symmetric) torque limits, as in timor-python."""
        tau = self._check_vector(tau, "tau")
        return bool(np.all(np.abs(tau) <= self.torque_limits))

    def update_configuration(self, q, dq=None, ddq=None) -> None:
        """Set the current configuration ``robot.q`` (timor-python's call); velocities and accelerations are not
        kept: pass them to the call that needs them (``id(q, dq, ddq)``, ``tcp_velocity(q, dq)``, ...)."""
        if dq is not None or ddq is not None:
            raise InputError(
                "timor's robot keeps no velocity or acceleration: pass dq / ddq to the call that uses them "
                "(robot.id(q, dq, ddq), robot.fd(tau, q, dq), robot.tcp_velocity(q, dq), "
                "robot.tcp_acceleration(q, dq, ddq))",
                value="dq" if dq is not None else "ddq",
            )
        self.q = q

    def has_collisions(self, task=None, safety_margin: float = 0.0) -> bool:
        """timor-python's call: self-collision or collision with the task's obstacles at the current ``robot.q``
        (:meth:`has_collision` takes the configuration)."""
        return self.has_collision(self.q, task, safety_margin)

    def set_base_placement(self, placement) -> NoReturn:
        """Refused: a timor robot's base placement is fixed when it is built (its collision and IK caches use it)."""
        refuse_placement_change("set_base_placement")

    def move(self, displacement) -> NoReturn:
        """Refused as :meth:`set_base_placement`: build the robot at ``displacement @ robot.placement`` instead."""
        refuse_placement_change("move")
