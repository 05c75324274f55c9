"""Homogeneous 4×4 transforms: the few operations the model needs, on plain numpy arrays."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

__all__ = [
    "IDENTITY",
    "ROT_X_PI",
    "rot_x",
    "rot_y",
    "rot_z",
    "translation",
    "inv",
    "rpy",
    "from_rpy",
    "readonly",
    "is_rigid",
]


def readonly(array: np.ndarray) -> np.ndarray:
    """Mark an array read-only, so that cached transforms cannot be modified by accident."""
    array.flags.writeable = False
    return array


def rot_x(angle: float) -> np.ndarray:
    """A homogeneous rotation about x."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[1, 0, 0, 0], [0, c, -s, 0], [0, s, c, 0], [0, 0, 0, 1]], dtype=float)


def rot_y(angle: float) -> np.ndarray:
    """A homogeneous rotation about y."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, 0, s, 0], [0, 1, 0, 0], [-s, 0, c, 0], [0, 0, 0, 1]], dtype=float)


def rot_z(angle: float) -> np.ndarray:
    """A homogeneous rotation about z."""
    c, s = math.cos(angle), math.sin(angle)
    return np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=float)


def translation(xyz: Sequence[float]) -> np.ndarray:
    """A homogeneous pure translation."""
    out = np.eye(4)
    out[:3, 3] = xyz
    return out


IDENTITY = readonly(np.eye(4))
#: Rotation by π about x, exactly: how two connected connector frames relate (CoBRA convention).
ROT_X_PI = readonly(np.diag([1.0, -1.0, -1.0, 1.0]))


def inv(T: np.ndarray) -> np.ndarray:
    """Inverse of a rigid transform (no general matrix inverse needed)."""
    out = np.eye(4)
    R = T[:3, :3]
    out[:3, :3] = R.T
    out[:3, 3] = -R.T @ T[:3, 3]
    return out


def rpy(R: np.ndarray) -> tuple[float, float, float]:
    """Roll-pitch-yaw (URDF convention, R = Rz(y) Ry(p) Rx(r)) of a rotation matrix."""
    r20 = float(R[2, 0])
    if abs(r20) < 1.0 - 1e-12:
        pitch = -math.asin(r20)
        roll = math.atan2(float(R[2, 1]), float(R[2, 2]))
        yaw = math.atan2(float(R[1, 0]), float(R[0, 0]))
    else:  # gimbal lock: choose roll = 0
        pitch = math.copysign(math.pi / 2, -r20)
        roll = 0.0
        yaw = math.atan2(-float(R[0, 1]), float(R[1, 1]))
    return roll, pitch, yaw


def from_rpy(roll: float, pitch: float, yaw: float, xyz: Sequence[float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    """The homogeneous transform of a URDF origin (xyz, rpy)."""
    T = rot_z(yaw) @ rot_y(pitch) @ rot_x(roll)
    T[:3, 3] = xyz
    return T


def is_rigid(T: np.ndarray, tol: float = 1e-6) -> bool:
    """True if T is a 4×4 homogeneous transform with an orthonormal, right-handed rotation."""
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        return False
    if not np.allclose(T[3], (0.0, 0.0, 0.0, 1.0), atol=tol):
        return False
    R = T[:3, :3]
    return bool(np.allclose(R.T @ R, np.eye(3), atol=tol) and abs(np.linalg.det(R) - 1.0) < tol)
