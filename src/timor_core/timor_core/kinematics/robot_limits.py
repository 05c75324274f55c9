"""The joint limits of a PinRobot (position, velocity, acceleration, torque), as arrays with inf for "none".

A mixin, so ``robot.joint_limits`` reads as in the reference toolbox while robot.py stays one concept; it uses
the robot's ``model`` and ``_tree``."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["RobotLimits"]

_BIG = np.finfo(float).max


def _infinite(a: np.ndarray) -> np.ndarray:
    """Pinocchio stores 'no limit' as ±DBL_MAX; report it as ±inf."""
    return np.where(np.abs(a) >= _BIG, np.copysign(np.inf, a), a)


class RobotLimits:
    """Joint limits of a PinRobot (mixed into it; not used alone)."""

    model: Any
    _tree: Any

    @property
    def joint_limits(self) -> np.ndarray:
        """(2, dof) array of lower and upper position limits."""
        return _infinite(np.vstack((self.model.lowerPositionLimit, self.model.upperPositionLimit)))

    @property
    def velocity_limits(self) -> np.ndarray:
        """Joint velocity limits (rad/s or m/s)."""
        return _infinite(np.array(self.model.velocityLimit))

    @property
    def acceleration_limits(self) -> np.ndarray:
        """Joint acceleration limits (inf where the module set gives none)."""
        return np.array([link.joint.limits.acceleration for link in self._tree.actuated])

    @property
    def torque_limits(self) -> np.ndarray:
        """Joint torque (force) limits."""
        return _infinite(np.array(self.model.effortLimit))
