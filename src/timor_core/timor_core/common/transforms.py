"""Homogeneous 4×4 transforms: the few operations the model needs, on plain numpy arrays."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from timor_core.errors import InputError

__all__ = [
    "IDENTITY",
    "ROT_X_PI",
    "rot_x",
    "rot_y",
    "rot_z",
    "translation",
    "inv",
    "rpy",
    "quaternion_xyzw",
    "from_rpy",
    "readonly",
    "is_rigid",
    "interpolate_poses",
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


def quaternion_xyzw(R: np.ndarray) -> tuple[float, float, float, float]:
    """The unit quaternion (x, y, z, w; w >= 0) of a rotation matrix, as ROS messages carry it (Shepperd's method)."""
    m = np.asarray(R, dtype=float)[:3, :3]
    trace = float(m[0, 0] + m[1, 1] + m[2, 2])
    if trace > 0.0:
        s = 2.0 * math.sqrt(trace + 1.0)
        q = (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s, 0.25 * s
    else:
        i = int(np.argmax(np.diag(m)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(max(1.0 + m[i, i] - m[j, j] - m[k, k], 0.0))
        v = [0.0, 0.0, 0.0]
        v[i] = 0.25 * s
        v[j] = (m[j, i] + m[i, j]) / s
        v[k] = (m[k, i] + m[i, k]) / s
        q = v[0], v[1], v[2], (m[k, j] - m[j, k]) / s
    x, y, z, w = (float(c) for c in q)
    norm = math.sqrt(x * x + y * y + z * z + w * w)
    sign = -1.0 if w < 0 else 1.0
    return sign * x / norm, sign * y / norm, sign * z / norm, sign * w / norm


def from_rpy(roll: float, pitch: float, yaw: float, xyz: Sequence[float] = (0.0, 0.0, 0.0)) -> np.ndarray:
    """The homogeneous transform of a URDF origin (xyz, rpy)."""
    T = rot_z(yaw) @ rot_y(pitch) @ rot_x(roll)
    T[:3, 3] = xyz
    return T


def is_rigid(T: np.ndarray, tol: float = 1e-6) -> bool:
    """True if T is a 4×4 homogeneous transform with an orthonormal, right-handed rotation."""
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        return False
    # np.allclose(a, b, atol=tol) for finite arrays, written out: allclose costs ~20 us a call, and a module set's
    # first load checks every pose in it (rtol 1e-5 as allclose's default)
    if not np.all(np.abs(T[3] - _LAST_ROW) <= tol + 1e-5 * _LAST_ROW):
        return False
    R = T[:3, :3]
    return bool(np.all(np.abs(R.T @ R - _EYE3) <= tol + 1e-5 * _EYE3) and abs(np.linalg.det(R) - 1.0) < tol)


_LAST_ROW = np.array([0.0, 0.0, 0.0, 1.0])
_EYE3 = np.eye(3)


def interpolate_poses(T_start: np.ndarray, T_end: np.ndarray, steps: int) -> np.ndarray:
    """``steps`` poses from ``T_start`` to ``T_end`` (both included): positions on the straight line, rotations
    along the shortest arc (SLERP), at evenly spaced fractions. Returns an (steps, 4, 4) array."""
    import pinocchio as pin

    steps = int(steps)
    if steps < 2:
        raise InputError("interpolate_poses needs at least 2 steps", value=steps)
    A, B = np.asarray(T_start, dtype=float), np.asarray(T_end, dtype=float)
    w = pin.log3(A[:3, :3].T @ B[:3, :3])
    out = np.repeat(np.eye(4)[None], steps, axis=0)
    for k, a in enumerate(np.linspace(0.0, 1.0, steps)):
        out[k, :3, :3] = A[:3, :3] @ pin.exp3(a * w)
        out[k, :3, 3] = (1 - a) * A[:3, 3] + a * B[:3, 3]
    out[-1] = B
    return out
