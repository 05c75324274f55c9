"""The ground of pose tolerances: projection names and ranges, intervals, tolerance frames, and the deviation
of a real pose from a desired one in a frame (see :mod:`timor_core.kinematics.tolerance` for the semantics)."""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.errors import FormatError, InputError, ValidationError

__all__ = [
    "PI",
    "PROJECTIONS",
    "POSITION_PROJECTIONS",
    "ROTATION_PROJECTIONS",
    "PROJECTION_DOMAINS",
    "MAX_TOLERANCE_LENGTH",
    "DOMAIN_SLACK",
    "VALID_SLACK",
    "SAMPLE_SPAN",
    "DEGENERATE_STEP",
    "AXES",
    "LENGTHS",
    "KEEP_NOMINAL",
    "PURE_REJECTION",
    "Interval",
    "ToleranceFrame",
    "NOMINAL_FRAME",
    "WORLD_FRAME",
    "skew",
    "exp3",
    "log3",
    "azimuth",
    "as_pose",
    "Deviation",
    "projection_value",
    "check_interval",
]

PI = math.pi
#: Every projection name of the CoBRA format, in a fixed order.
PROJECTIONS: tuple[str, ...] = (
    "x",
    "y",
    "z",
    "r_cyl",
    "phi_cyl",
    "r_sph",
    "theta",
    "phi_sph",
    "N_x",
    "N_y",
    "N_z",
    "Theta_R",
)
POSITION_PROJECTIONS: frozenset[str] = frozenset(PROJECTIONS[:8])
ROTATION_PROJECTIONS: frozenset[str] = frozenset(PROJECTIONS[8:])

#: The range of values each projection can take; interval bounds must lie within it.
MAX_TOLERANCE_LENGTH = 1e9
"""Largest finite bound of a length projection (m): far beyond any workspace, small enough that no sum of squares of
bounds overflows (an ``x``, ``y``, ``z`` tolerance of 1e308 made the IK's reach check raise OverflowError)."""

PROJECTION_DOMAINS: dict[str, tuple[float, float]] = {
    "x": (-math.inf, math.inf),
    "y": (-math.inf, math.inf),
    "z": (-math.inf, math.inf),
    "r_cyl": (0.0, math.inf),
    "phi_cyl": (-PI, PI),
    "r_sph": (0.0, math.inf),
    "theta": (0.0, PI),
    "phi_sph": (-PI, PI),
    "N_x": (-PI, PI),
    "N_y": (-PI, PI),
    "N_z": (-PI, PI),
    "Theta_R": (0.0, PI),
}
DOMAIN_SLACK = 1e-5  # how far a bound may exceed an angular range (bounds written as 3.1416 are fine)

#: Values up to this far outside an interval still count as inside (rounding), as in the reference.
VALID_SLACK = 1e-12
#: ``sample`` cuts an unbounded side of a length interval this far (metres) from its bound, or twice the largest
#: finite length bound of the tolerance if that is more.
SAMPLE_SPAN = 0.1
#: ``residual``: how far (metres) a target on the axis/apex of a violated ``phi_*``/``theta`` projection (where the
#: angle is 0 by convention, or numerically arbitrary) is moved into the region (or ``margin``, if larger).
DEGENERATE_STEP = 1e-6

AXES = {"x": 0, "y": 1, "z": 2, "N_x": 0, "N_y": 1, "N_z": 2}
LENGTHS = frozenset({"x", "y", "z", "r_cyl", "r_sph"})
KEEP_NOMINAL = 0.05  # share of sampling attempts that keep the position (rotation) at its nominal value
PURE_REJECTION = 200  # sampling attempts before rejected draws are also repaired with ``residual``


# --------------------------------------------------------------------------------------------------------------------
# Intervals and frames
# --------------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Interval:
    """A closed interval ``[low, high]`` of allowed projection values; bounds may be ±inf, never NaN."""

    low: float
    high: float

    def __post_init__(self) -> None:
        for name in ("low", "high"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
                raise FormatError(f"interval {name} bound must be a number", value=value)
            if math.isnan(value):
                raise ValidationError(f"interval {name} bound is NaN", value=value)
            object.__setattr__(self, name, float(value))
        if self.low > self.high:
            raise ValidationError("interval lower bound exceeds its upper bound", value=[self.low, self.high])
        if self.low == math.inf or self.high == -math.inf:
            raise ValidationError("interval contains no finite value", value=[self.low, self.high])

    def contains(self, value: float, slack: float = VALID_SLACK) -> bool:
        """Whether ``value`` lies in the interval, allowing ``slack`` outside either bound."""
        return self.low - slack <= value <= self.high + slack

    def clip(self, value: float) -> float:
        """The point of the interval nearest to ``value``."""
        return min(max(value, self.low), self.high)

    def violation(self, value: float) -> float:
        """0 inside; else the signed distance beyond the nearest bound (``value - high`` > 0 or ``value - low`` < 0)."""
        return value - self.clip(value)

    def intersect(self, other: Interval) -> Interval | None:
        """The common part of two intervals, or None if they do not overlap."""
        low, high = max(self.low, other.low), min(self.high, other.high)
        return Interval(low, high) if low <= high else None

    def to_json(self) -> list[float]:
        """``[low, high]``."""
        return [self.low, self.high]


@dataclass(frozen=True)
class ToleranceFrame:
    """The axes in which a deviation is expressed: the nominal pose's (``rotation is None``) or a fixed orientation.

    ``rotation`` is the world orientation of the frame (3x3, row-major tuples) for ``world`` and named frames.
    """

    name: str = "nominal"
    rotation: tuple[tuple[float, float, float], ...] | None = None

    @classmethod
    def fixed(cls, name: str, pose: Any) -> ToleranceFrame:
        """A frame with a fixed world orientation, taken from a 4x4 pose or a 3x3 rotation."""
        array = np.asarray(pose, dtype=float)
        if array.shape not in ((4, 4), (3, 3)) or not np.all(np.isfinite(array)):
            raise InputError("a tolerance frame needs a finite 4x4 pose or 3x3 rotation", value=name)
        R = array[:3, :3]
        return cls(name, tuple((float(row[0]), float(row[1]), float(row[2])) for row in R))

    def matrix(self, desired_rotation: np.ndarray) -> np.ndarray:
        """The world orientation of this frame, given the desired pose's rotation."""
        return desired_rotation if self.rotation is None else np.array(self.rotation)


NOMINAL_FRAME = ToleranceFrame("nominal")
WORLD_FRAME = ToleranceFrame("world", ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)))


# --------------------------------------------------------------------------------------------------------------------
# Rotation helpers
# --------------------------------------------------------------------------------------------------------------------


def skew(w: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def exp3(w: np.ndarray) -> np.ndarray:
    """Rotation matrix of a rotation vector (Rodrigues)."""
    theta = float(np.linalg.norm(w))
    K = skew(w)
    if theta < 1e-8:
        return np.eye(3) + K + 0.5 * K @ K
    return np.eye(3) + (math.sin(theta) / theta) * K + ((1.0 - math.cos(theta)) / theta**2) * K @ K


def log3(R: np.ndarray) -> tuple[np.ndarray, float]:
    """Rotation vector ``omega`` (``|omega|`` in [0, pi]) of a rotation matrix, and its angle."""
    v = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])  # 2 sin(theta) * axis
    c = min(1.0, max(-1.0, (R[0, 0] + R[1, 1] + R[2, 2] - 1.0) / 2.0))
    s = float(np.linalg.norm(v)) / 2.0
    theta = math.atan2(s, c)
    if c > -0.5:  # theta < 2pi/3: the skew part determines the axis well
        factor = 0.5 * (1.0 + theta * theta / 6.0) if s < 1e-8 else theta / (2.0 * s)
        return factor * v, theta
    # Near pi: the symmetric part gives axis * axis^T = (sym(R) - c I) / (1 - c); the skew part gives the sign.
    A = ((R + R.T) / 2.0 - c * np.eye(3)) / (1.0 - c)
    k = int(np.argmax(np.diag(A)))
    axis = A[:, k] / math.sqrt(max(A[k, k], 1e-300))
    axis /= np.linalg.norm(axis)
    d = float(axis @ v)
    if d < 0 or (d == 0 and axis[int(np.argmax(np.abs(axis)))] < 0):
        axis = -axis
    return theta * axis, theta


def azimuth(x: float, y: float) -> float:
    """atan2(y, x) in (-pi, pi], 0 on the axis (the reference's conventions)."""
    if x == 0.0 and y == 0.0:
        return 0.0
    phi = math.atan2(y, x)
    return PI if phi == -PI else phi


def as_pose(T: Any, name: str) -> np.ndarray:
    array = np.asarray(T, dtype=float)
    if array.shape != (4, 4):
        raise InputError(f"{name} must be a 4x4 homogeneous pose", value=array.shape)
    return array


class Deviation:
    """The deviation of ``real`` from ``desired``, expressed in the frames the tolerances ask for (cached).

    The rotation part (a matrix logarithm) is computed on first use: position-only tolerances never need it."""

    def __init__(self, desired: Any, real: Any) -> None:
        D, R = as_pose(desired, "desired"), as_pose(real, "real")
        self.R_d, self.R_r = D[:3, :3], R[:3, :3]
        self.dp_world = R[:3, 3] - D[:3, 3]
        self._cache: dict[ToleranceFrame, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
        self._positions: dict[ToleranceFrame, np.ndarray] = {}

    @functools.cached_property
    def _rotation(self) -> tuple[np.ndarray, float]:
        """``log3`` of the deviation's rotation, computed once, on first use."""
        return log3(self.R_d.T @ self.R_r)

    @property
    def omega_nominal(self) -> np.ndarray:
        """The rotation vector of the deviation in the nominal (desired) frame."""
        return self._rotation[0]

    @property
    def angle(self) -> float:
        """The rotation angle of the deviation (rad, in [0, pi])."""
        return self._rotation[1]

    def in_frame(self, frame: ToleranceFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(world orientation of the frame, position deviation, rotation vector) in that frame."""
        hit = self._cache.get(frame)
        if hit is None:
            R_F = frame.matrix(self.R_d)
            if frame.rotation is None:
                hit = (R_F, self.position(frame), self.omega_nominal)
            else:
                hit = (R_F, self.position(frame), R_F.T @ (self.R_d @ self.omega_nominal))
            self._cache[frame] = hit
        return hit

    def position(self, frame: ToleranceFrame) -> np.ndarray:
        """The position deviation in that frame."""
        hit = self._positions.get(frame)
        if hit is None:
            hit = self._positions[frame] = frame.matrix(self.R_d).T @ self.dp_world
        return hit

    def project(self, projection: str, frame: ToleranceFrame) -> float:
        """The value of one projection."""
        if projection == "Theta_R":
            return self.angle
        if projection in ROTATION_PROJECTIONS:
            return projection_value(projection, self.in_frame(frame)[2])
        return projection_value(projection, self.position(frame))


def projection_value(projection: str, local: np.ndarray) -> float:
    """A projection of a position deviation or rotation vector given in the projection's frame."""
    if projection in AXES:
        return float(local[AXES[projection]])
    if projection == "r_cyl":
        return math.hypot(local[0], local[1])
    if projection in ("phi_cyl", "phi_sph"):
        return azimuth(local[0], local[1])
    if projection in ("r_sph", "Theta_R"):
        return math.sqrt(local.dot(local))  # np.linalg.norm's own arithmetic, without its overhead (IK residual)
    if projection == "theta":
        return 0.0 if not local.any() else math.atan2(math.hypot(local[0], local[1]), local[2])
    raise AssertionError(projection)  # pragma: no cover - projections are validated on construction


# --------------------------------------------------------------------------------------------------------------------
# Tolerances
# --------------------------------------------------------------------------------------------------------------------


def check_interval(projection: str, interval: Interval, path: str | None = None) -> None:
    """Raise ValidationError if the interval reaches outside the projection's range (naming the bound's path)."""
    lo_min, hi_max = PROJECTION_DOMAINS[projection]
    slack_low = DOMAIN_SLACK if lo_min == -PI else 0.0  # rounded pi is fine; a negative radius or angle is not
    slack_high = DOMAIN_SLACK if hi_max == PI else 0.0
    where = (lambda i: f"{path}[{i}]") if path else (lambda i: None)
    if interval.low < lo_min - slack_low:
        raise ValidationError(
            f"lower bound of '{projection}' must be >= {lo_min:g} (values below are meaningless)",
            path=where(0),
            value=interval.low,
        )
    if interval.high > hi_max + slack_high:
        raise ValidationError(
            f"upper bound of '{projection}' must be <= {hi_max:g}", path=where(1), value=interval.high
        )
    for i, bound in enumerate((interval.low, interval.high)):
        if math.isfinite(bound) and abs(bound) > MAX_TOLERANCE_LENGTH:  # infinity: no bound (Python callers)
            raise ValidationError(
                f"a finite bound of '{projection}' must be at most {MAX_TOLERANCE_LENGTH:g} m in magnitude (write "
                f"{MAX_TOLERANCE_LENGTH:g} for a one-sided bound, or leave the projection out for no bound)",
                path=where(i),
                value=bound,
            )
