"""Tolerances of CoBRA goal poses: when does a real pose count as reaching a desired (nominal) one?

A tolerated pose in a CoBRA task reads ``{"nominal": 4x4, "toleranceProjection": [...], "tolerance": [[lo, hi],
...]}`` (optionally ``"toleranceFrame": [...]``). Every projection maps the *deviation* of the real pose ``R`` from
the desired pose ``D`` to one number; the real pose is valid iff every number lies in its closed interval.

Semantics (the same as the reference toolbox, timor-python 1.1.1):

* **Always relative to the nominal pose.** No projection describes an absolute region in space; every tolerance
  is centred on the nominal pose. The optional ``toleranceFrame`` only chooses the *axes* in which the deviation is
  expressed: ``"nominal"`` (the default — the axes of the desired pose ``D``), ``"world"``, or a named task frame
  (its world orientation; its position is irrelevant).
* **Deviation in a frame F** with world orientation ``R_F`` (``R_F = R_D`` for the nominal frame):
  position ``e = R_F^T (p_R - p_D)``, rotation ``E = R_F^T (R_R R_D^T) R_F``. In the nominal frame this is exactly
  the relative transform ``D^-1 R``: ``e = R_D^T (p_R - p_D)``, ``E = R_D^T R_R``.
* ``x``, ``y``, ``z``: the components of ``e``.
* ``r_cyl``, ``phi_cyl``: cylindrical coordinates of ``e`` about the frame's z axis, ``r_cyl = |(e_x, e_y)|``,
  ``phi_cyl = atan2(e_y, e_x)`` in ``[-pi, pi]``; on the axis (``r_cyl = 0``) ``phi_cyl = 0``, and a point on the
  negative x half-axis has ``phi = +pi`` (never ``-pi``).
* ``r_sph``, ``theta``, ``phi_sph``: spherical coordinates of ``e``: radius, polar angle from +z in ``[0, pi]``,
  azimuth (same convention as ``phi_cyl``). At the origin all three are 0; on the z axis ``phi_sph = 0``.
* ``Theta_R``: the rotation angle of ``E`` about whatever axis, in ``[0, pi]`` (independent of the frame).
* ``N_x``, ``N_y``, ``N_z``: the components of the rotation vector ``omega = log(E)`` (axis times angle, with
  ``|omega| <= pi``). So ``N_z`` bounds the part of the rotation error *about* the frame's z axis — it is **not**
  the tilt angle between the real and the desired z axes. (That is what the reference computes, whatever the
  names suggest.) At exactly ``|omega| = pi`` the sign of the axis is ambiguous; we pick the one that agrees
  with the skew-symmetric part of ``E`` when it is non-zero, else the one whose largest component is positive.
* Angle intervals do not wrap around ``±pi``: ``phi_cyl`` in ``[3, pi]`` does not include ``-3.1``.
* ``valid`` accepts values up to ``1e-12`` outside a bound (as the reference does), to absorb rounding.
* Bounds must lie in the projection's range: ``r_cyl``, ``r_sph`` >= 0; ``theta``, ``Theta_R`` in ``[0, pi]``;
  ``phi_*``, ``N_*`` in ``[-pi, pi]`` (up to ``1e-5``, so a bound written as ``3.1416`` is accepted — the reference
  is strict here). ``x``, ``y``, ``z`` and the radii's upper bounds may be infinite when built in Python (JSON
  has no infinity).

Numerically, rotation angles are computed with ``atan2`` (accurate near 0 and pi) rather than the reference's
rounded ``arccos``; the two agree to about ``1e-12`` except for angles below ~1e-7 rad, where the reference
rounds to 0.
"""

from __future__ import annotations

import abc
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.errors import FormatError, InputError, TimorError, ValidationError

__all__ = [
    "PROJECTIONS",
    "POSITION_PROJECTIONS",
    "ROTATION_PROJECTIONS",
    "VALID_SLACK",
    "Interval",
    "ToleranceFrame",
    "NOMINAL_FRAME",
    "WORLD_FRAME",
    "Tolerance",
    "ProjectionTolerance",
    "Composed",
    "tolerance_from_json",
    "residual",
    "DEFAULT_TOLERANCE",
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
_DOMAIN_SLACK = 1e-5  # how far a bound may exceed an angular range (bounds written as 3.1416 are fine)

#: Values up to this far outside an interval still count as inside (rounding), as in the reference.
VALID_SLACK = 1e-12
#: ``sample`` cuts an unbounded side of a length interval this far (metres) from its bound, or twice the largest
#: finite length bound of the tolerance if that is more.
SAMPLE_SPAN = 0.1
#: ``residual``: how far (metres) a target on the axis/apex of a violated ``phi_*``/``theta`` projection (where the
#: angle is 0 by convention, or numerically arbitrary) is moved into the region (or ``margin``, if larger).
DEGENERATE_STEP = 1e-6

_AXES = {"x": 0, "y": 1, "z": 2, "N_x": 0, "N_y": 1, "N_z": 2}
_LENGTHS = frozenset({"x", "y", "z", "r_cyl", "r_sph"})
_KEEP_NOMINAL = 0.05  # share of sampling attempts that keep the position (rotation) at its nominal value
_PURE_REJECTION = 200  # sampling attempts before rejected draws are also repaired with ``residual``


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


def _skew(w: np.ndarray) -> np.ndarray:
    return np.array([[0.0, -w[2], w[1]], [w[2], 0.0, -w[0]], [-w[1], w[0], 0.0]])


def _exp3(w: np.ndarray) -> np.ndarray:
    """Rotation matrix of a rotation vector (Rodrigues)."""
    theta = float(np.linalg.norm(w))
    K = _skew(w)
    if theta < 1e-8:
        return np.eye(3) + K + 0.5 * K @ K
    return np.eye(3) + (math.sin(theta) / theta) * K + ((1.0 - math.cos(theta)) / theta**2) * K @ K


def _log3(R: np.ndarray) -> tuple[np.ndarray, float]:
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


def _azimuth(x: float, y: float) -> float:
    """atan2(y, x) in (-pi, pi], 0 on the axis (the reference's conventions)."""
    if x == 0.0 and y == 0.0:
        return 0.0
    phi = math.atan2(y, x)
    return PI if phi == -PI else phi


def _as_pose(T: Any, name: str) -> np.ndarray:
    array = np.asarray(T, dtype=float)
    if array.shape != (4, 4):
        raise InputError(f"{name} must be a 4x4 homogeneous pose", value=array.shape)
    return array


class _Deviation:
    """The deviation of ``real`` from ``desired``, expressed in the frames the tolerances ask for (cached)."""

    def __init__(self, desired: Any, real: Any) -> None:
        D, R = _as_pose(desired, "desired"), _as_pose(real, "real")
        self.R_d, self.R_r = D[:3, :3], R[:3, :3]
        self.dp_world = R[:3, 3] - D[:3, 3]
        self.omega_nominal, self.angle = _log3(self.R_d.T @ R[:3, :3])
        self._cache: dict[ToleranceFrame, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}

    def in_frame(self, frame: ToleranceFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(world orientation of the frame, position deviation, rotation vector) in that frame."""
        hit = self._cache.get(frame)
        if hit is None:
            R_F = frame.matrix(self.R_d)
            if frame.rotation is None:
                hit = (R_F, R_F.T @ self.dp_world, self.omega_nominal)
            else:
                hit = (R_F, R_F.T @ self.dp_world, R_F.T @ (self.R_d @ self.omega_nominal))
            self._cache[frame] = hit
        return hit

    def project(self, projection: str, frame: ToleranceFrame) -> float:
        """The value of one projection."""
        if projection == "Theta_R":
            return self.angle
        _, e, omega = self.in_frame(frame)
        return _value(projection, omega if projection in ROTATION_PROJECTIONS else e)


def _value(projection: str, local: np.ndarray) -> float:
    """A projection of a position deviation or rotation vector given in the projection's frame."""
    if projection in _AXES:
        return float(local[_AXES[projection]])
    if projection == "r_cyl":
        return math.hypot(local[0], local[1])
    if projection in ("phi_cyl", "phi_sph"):
        return _azimuth(local[0], local[1])
    if projection in ("r_sph", "Theta_R"):
        return float(np.linalg.norm(local))
    if projection == "theta":
        return 0.0 if not local.any() else math.atan2(math.hypot(local[0], local[1]), local[2])
    raise AssertionError(projection)  # pragma: no cover - projections are validated on construction


# --------------------------------------------------------------------------------------------------------------------
# Tolerances
# --------------------------------------------------------------------------------------------------------------------


def _check_interval(projection: str, interval: Interval, path: str | None = None) -> None:
    """Raise ValidationError if the interval reaches outside the projection's range (naming the bound's path)."""
    lo_min, hi_max = PROJECTION_DOMAINS[projection]
    slack_low = _DOMAIN_SLACK if lo_min == -PI else 0.0  # rounded pi is fine; a negative radius or angle is not
    slack_high = _DOMAIN_SLACK if hi_max == PI else 0.0
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


class Tolerance(abc.ABC):
    """A set of projections with intervals; a real pose is valid iff every projection lies in its interval.

    All methods take the desired and the real pose as 4x4 homogeneous transforms in world coordinates.
    """

    @property
    @abc.abstractmethod
    def parts(self) -> tuple[ProjectionTolerance, ...]:
        """The single-projection tolerances this one is the conjunction of (in order)."""

    @property
    def projections(self) -> tuple[str, ...]:
        """The projection names, one per part."""
        return tuple(p.projection for p in self.parts)

    @property
    def intervals(self) -> tuple[Interval, ...]:
        """The allowed intervals, one per part."""
        return tuple(p.interval for p in self.parts)

    @property
    def frames(self) -> tuple[str, ...]:
        """The names of the frames the deviations are expressed in (CoBRA ``toleranceFrame``), one per part."""
        return tuple(p.frame.name for p in self.parts)

    def error(self, desired: np.ndarray, real: np.ndarray) -> np.ndarray:
        """The projected values of the deviation of ``real`` from ``desired``, one per projection."""
        dev = _Deviation(desired, real)
        return np.array([dev.project(p.projection, p.frame) for p in self.parts], dtype=float)

    def violation(self, desired: np.ndarray, real: np.ndarray) -> np.ndarray:
        """Per projection: 0 inside the interval, else the signed distance beyond the nearest bound."""
        values = self.error(desired, real)
        return np.array([iv.violation(v) for iv, v in zip(self.intervals, values)], dtype=float)

    def valid(self, desired: np.ndarray, real: np.ndarray) -> bool:
        """Whether every projection of the deviation lies in its interval (up to ``VALID_SLACK``)."""
        dev = _Deviation(desired, real)
        return all(p.interval.contains(dev.project(p.projection, p.frame)) for p in self.parts)

    def to_json(self) -> tuple[list[str], list[list[float]]]:
        """The CoBRA ``toleranceProjection`` and ``tolerance`` fields (``frames`` gives ``toleranceFrame``)."""
        return list(self.projections), [iv.to_json() for iv in self.intervals]

    def __and__(self, other: object) -> Composed:
        """Both tolerances at once (logical AND)."""
        if not isinstance(other, Tolerance):
            return NotImplemented
        return Composed((self, other))

    def sample(
        self, desired: np.ndarray, rng: np.random.Generator | int | None = None, max_attempts: int = 10_000
    ) -> np.ndarray:
        """A random real pose (4x4) that is valid with respect to ``desired``.

        Spread "uniformly-ish" over the tolerated region: positions uniformly in a box, cylinder sector or spherical
        sector built from the intervals (a random one of these when several projection families are constrained;
        the rest is enforced by rejection); rotations with a uniform axis and an angle uniform in the ``Theta_R``
        interval, or uniformly in the box of ``N_*`` intervals. An unbounded side of a length interval is cut
        ``SAMPLE_SPAN`` — or twice the largest finite length bound of the tolerance, if more — from the interval's
        point nearest 0 (and to a radius bound of the same frame). A family the tolerance does not mention stays at
        its nominal value (no translation without position projections, no rotation without rotation projections),
        and a few attempts keep the nominal position or rotation, which some tolerances allow and nothing else.
        Should plain rejection fail for a while (thin intersections of several projections), rejected draws are
        moved into the tolerance with ``residual`` (so these samples crowd towards the bounds).

        Raises TimorError if no valid pose is found in ``max_attempts`` draws (e.g. contradictory intervals).
        """
        D = _as_pose(desired, "desired")
        gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
        parts = self.parts
        pos_candidates = _position_proposals(parts)
        rot_candidates = _rotation_proposals(parts)
        if any(p is None for p in pos_candidates + rot_candidates):
            raise TimorError("the tolerance admits no pose: the intervals of a projection do not overlap")
        pos_proposals = [p for p in pos_candidates if p is not None]
        rot_proposals = [p for p in rot_candidates if p is not None]
        for attempt in range(max_attempts):
            T = D.copy()
            # now and then keep a family at its nominal value: some tolerances allow no other (e.g. angular position
            # projections about different axes that only meet at the nominal position)
            if pos_proposals and gen.random() >= _KEEP_NOMINAL:
                frame, draw = pos_proposals[gen.integers(len(pos_proposals))]
                e = draw(gen)
                T[:3, 3] = D[:3, 3] + frame.matrix(D[:3, :3]) @ e
            if rot_proposals and gen.random() >= _KEEP_NOMINAL:
                frame, draw = rot_proposals[gen.integers(len(rot_proposals))]
                omega = draw(gen)
                if omega is None:
                    continue
                R_F = frame.matrix(D[:3, :3])
                T[:3, :3] = R_F @ _exp3(omega) @ R_F.T @ D[:3, :3]
            if self.valid(D, T):
                return T
            if attempt >= _PURE_REJECTION:  # thin intersections: repair the draw with the IK residual
                for _ in range(3):
                    r = residual(self, D, T, margin=1e-7)
                    T = T.copy()
                    T[:3, 3] -= r[:3]
                    T[:3, :3] = _exp3(-r[3:]) @ T[:3, :3]
                    if self.valid(D, T):
                        return T
        if self.valid(D, D):
            return D.copy()
        raise TimorError(f"could not sample a pose within the tolerance in {max_attempts} attempts")


@dataclass(frozen=True)
class ProjectionTolerance(Tolerance):
    """One projection of the deviation must lie in one interval (in the given frame)."""

    projection: str
    interval: Interval
    frame: ToleranceFrame = NOMINAL_FRAME

    def __post_init__(self) -> None:
        if self.projection not in PROJECTIONS:
            raise FormatError(
                f"unknown tolerance projection (expected one of {', '.join(PROJECTIONS)})", value=self.projection
            )
        if not isinstance(self.interval, Interval):
            low, high = self.interval  # type: ignore[misc]
            object.__setattr__(self, "interval", Interval(low, high))
        _check_interval(self.projection, self.interval)

    @property
    def parts(self) -> tuple[ProjectionTolerance, ...]:
        """Just this one."""
        return (self,)


@dataclass(frozen=True, init=False)
class Composed(Tolerance):
    """Several tolerances at once: valid iff every part is valid (an empty one is always valid)."""

    tolerances: tuple[ProjectionTolerance, ...]

    def __init__(self, tolerances: Iterable[Tolerance] = ()) -> None:
        flat: list[ProjectionTolerance] = []
        for tol in tolerances:
            if not isinstance(tol, Tolerance):
                raise TypeError(f"expected a Tolerance, got {type(tol).__name__}")
            flat.extend(tol.parts)
        object.__setattr__(self, "tolerances", tuple(flat))

    @property
    def parts(self) -> tuple[ProjectionTolerance, ...]:
        """The single-projection tolerances, in order."""
        return self.tolerances


# --------------------------------------------------------------------------------------------------------------------
# Sampling proposals
# --------------------------------------------------------------------------------------------------------------------

_Proposal = tuple[ToleranceFrame, Callable[[np.random.Generator], Any]]


def _merged(
    parts: Sequence[ProjectionTolerance], names: Iterable[str], frame: ToleranceFrame | None, default: Interval
):
    """Intersection of the intervals of the given projections (in the given frame); None if empty."""
    out: Interval | None = default
    for p in parts:
        if p.projection in names and (frame is None or p.frame == frame) and out is not None:
            out = out.intersect(p.interval)
    return out


def _bounded(iv: Interval, span: float, limit: float) -> tuple[float, float]:
    """A finite sub-range of a length interval for sampling.

    An unbounded side is cut ``span`` away from the interval's point nearest 0; both sides are then limited to
    ``[-limit, limit]`` (a radius bound of the same frame), which no valid point can exceed anyway.
    """
    c = iv.clip(0.0)
    low = iv.low if math.isfinite(iv.low) else c - span
    high = iv.high if math.isfinite(iv.high) else c + span
    low, high = max(low, -limit), min(high, limit)
    return (low, high) if low <= high else (low, low)


def _off_seam(phi: float) -> float:
    """Keep a sampled azimuth 1e-13 off ±pi: at the seam rounding decides between +pi and -pi (both valid up to
    ``VALID_SLACK``, but not both for an interval at one end of the range)."""
    return min(max(phi, -PI + 1e-13), PI - 1e-13)


def _position_proposals(parts: Sequence[ProjectionTolerance]) -> list[_Proposal | None]:
    proposals: list[_Proposal | None] = []
    families = {"cart": {"x", "y", "z"}, "cyl": {"r_cyl", "phi_cyl"}, "sph": {"r_sph", "theta", "phi_sph"}}
    seen: set[tuple[ToleranceFrame, str]] = set()
    full_len = Interval(-math.inf, math.inf)
    # the length scale of the tolerance: unbounded sides are cut this far (at least SAMPLE_SPAN) from their bound
    finite = [abs(b) for p in parts if p.projection in _LENGTHS for b in (p.interval.low, p.interval.high)]
    span = max([SAMPLE_SPAN] + [2.0 * b for b in finite if math.isfinite(b)])
    for part in parts:
        if part.projection not in POSITION_PROJECTIONS:
            continue
        family = next(k for k, names in families.items() if part.projection in names)
        key = (part.frame, family)
        if key in seen:
            continue
        seen.add(key)
        frame = part.frame
        r_sph = _merged(parts, {"r_sph"}, frame, Interval(0.0, math.inf))
        r_cyl = _merged(parts, {"r_cyl"}, frame, Interval(0.0, math.inf))
        phi = _merged(parts, {"phi_cyl", "phi_sph"}, frame, Interval(-PI, PI))
        theta = _merged(parts, {"theta"}, frame, Interval(0.0, PI))
        xyz = [_merged(parts, {a}, frame, full_len) for a in ("x", "y", "z")]
        if any(iv is None for iv in (r_sph, r_cyl, phi, theta, *xyz)):
            proposals.append(None)
            continue
        limit_xy = min(r_cyl.high, r_sph.high)
        span_xy, span_z = min(span, limit_xy), min(span, r_sph.high)
        if family == "cart":
            ranges = [
                _bounded(xyz[0], span_xy, limit_xy),
                _bounded(xyz[1], span_xy, limit_xy),
                _bounded(xyz[2], span_z, r_sph.high),
            ]

            def draw_cart(g, r=ranges):
                return np.array([g.uniform(lo, hi) for lo, hi in r])

            proposals.append((frame, draw_cart))
        elif family == "cyl":
            r_lo = r_cyl.low
            r_hi = r_cyl.high if math.isfinite(r_cyl.high) else r_lo + min(span, r_sph.high)
            r_hi = max(r_lo, r_hi)
            z_range = _bounded(xyz[2], span_z, r_sph.high)

            def draw_cyl(g, r_lo=r_lo, r_hi=r_hi, phi=phi, z_range=z_range):
                r = math.sqrt(g.uniform(r_lo**2, r_hi**2))
                a = _off_seam(g.uniform(phi.low, phi.high))
                return np.array([r * math.cos(a), r * math.sin(a), g.uniform(*z_range)])

            proposals.append((frame, draw_cyl))
        else:
            r_lo = r_sph.low
            r_hi = r_sph.high if math.isfinite(r_sph.high) else r_lo + span

            def draw_sph(g, r_lo=r_lo, r_hi=r_hi, phi=phi, theta=theta):
                r = np.cbrt(g.uniform(r_lo**3, r_hi**3))
                t = math.acos(min(1.0, max(-1.0, g.uniform(math.cos(theta.high), math.cos(theta.low)))))
                t = min(max(t, theta.low), theta.high)
                a = _off_seam(g.uniform(phi.low, phi.high))
                return r * np.array([math.sin(t) * math.cos(a), math.sin(t) * math.sin(a), math.cos(t)])

            proposals.append((frame, draw_sph))
    return proposals


def _rotation_proposals(parts: Sequence[ProjectionTolerance]) -> list[_Proposal | None]:
    proposals: list[_Proposal | None] = []
    if any(p.projection == "Theta_R" for p in parts):
        angle = _merged(parts, {"Theta_R"}, None, Interval(0.0, PI))
        if angle is None:
            proposals.append(None)
        else:

            def draw_ball(g, angle=angle):
                axis = g.normal(size=3)
                axis /= np.linalg.norm(axis)
                return axis * g.uniform(angle.low, angle.high)

            proposals.append((NOMINAL_FRAME, draw_ball))
    seen: set[ToleranceFrame] = set()
    for part in parts:
        if part.projection not in ("N_x", "N_y", "N_z") or part.frame in seen:
            continue
        seen.add(part.frame)
        box = [_merged(parts, {a}, part.frame, Interval(-PI, PI)) for a in ("N_x", "N_y", "N_z")]
        if any(iv is None for iv in box):
            proposals.append(None)
            continue

        def draw_box(g, box=box):
            # components in random order, each within its interval and what is left of the ball |omega| <= pi
            # (beyond pi a rotation vector belongs to another rotation)
            omega, left = np.zeros(3), PI * PI
            for k in g.permutation(3):
                reach = math.sqrt(max(left, 0.0))
                low, high = max(box[k].low, -reach), min(box[k].high, reach)
                if low > high:
                    return None
                omega[k] = g.uniform(low, high)
                left -= omega[k] ** 2
            return omega

        proposals.append((part.frame, draw_box))
    return proposals


# --------------------------------------------------------------------------------------------------------------------
# JSON
# --------------------------------------------------------------------------------------------------------------------


def tolerance_from_json(
    projections: Any,
    intervals: Any,
    path: str = "$",
    frames: Any = None,
    resolve_frame: Callable[[str], Any] | None = None,
) -> Tolerance:
    """Build a tolerance from the CoBRA fields of the tolerated pose at JSON path ``path``.

    :param projections: the ``toleranceProjection`` list (names from ``PROJECTIONS``).
    :param intervals: the ``tolerance`` list, one ``[low, high]`` per projection.
    :param path: JSON path of the object holding these fields (used in error messages).
    :param frames: the optional ``toleranceFrame`` list (one frame name per projection); default all ``nominal``.
    :param resolve_frame: maps a frame name other than ``nominal``/``world`` to its world pose (e.g.
        ``FrameTree.in_world``); without it such names are rejected.
    :return: a ProjectionTolerance for one projection, else a Composed (empty: always valid).
    :raises FormatError: wrong types or shapes, unknown projection or frame names.
    :raises ValidationError: NaN bounds, ``low > high``, bounds outside the projection's range.
    """
    projections = jf.array(projections, f"{path}.toleranceProjection")
    intervals = jf.array(intervals, f"{path}.tolerance")
    if len(projections) != len(intervals):
        raise FormatError(
            f"expected one interval per projection ({len(projections)}), got {len(intervals)}",
            path=f"{path}.tolerance",
            value=intervals,
        )
    if frames is not None:
        frames = jf.array(frames, f"{path}.toleranceFrame")
        if len(frames) != len(projections):
            raise FormatError(
                f"expected one frame per projection ({len(projections)}), got {len(frames)}",
                path=f"{path}.toleranceFrame",
                value=frames,
            )
    parts: list[ProjectionTolerance] = []
    resolved: dict[str, ToleranceFrame] = {"nominal": NOMINAL_FRAME, "world": WORLD_FRAME}
    for i, (name, bounds) in enumerate(zip(projections, intervals)):
        ppath, ipath = f"{path}.toleranceProjection[{i}]", f"{path}.tolerance[{i}]"
        if not isinstance(name, str):
            raise FormatError("expected a projection name (string)", path=ppath, value=name)
        if name not in PROJECTIONS:
            raise FormatError(
                f"unknown tolerance projection (expected one of {', '.join(PROJECTIONS)})", path=ppath, value=name
            )
        if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
            raise FormatError("expected an interval [low, high]", path=ipath, value=bounds)
        low = jf.number(bounds[0], f"{ipath}[0]", allow_inf=True)
        high = jf.number(bounds[1], f"{ipath}[1]", allow_inf=True)
        if low > high:
            raise ValidationError("interval lower bound exceeds its upper bound", path=ipath, value=[low, high])
        interval = Interval(low, high)
        _check_interval(name, interval, ipath)
        frame = NOMINAL_FRAME
        if frames is not None:
            fpath = f"{path}.toleranceFrame[{i}]"
            frame_name = frames[i]
            if not isinstance(frame_name, str) or not frame_name:
                raise FormatError("expected a frame name (string)", path=fpath, value=frame_name)
            if frame_name not in resolved:
                if resolve_frame is None:
                    raise FormatError("unknown tolerance frame", path=fpath, value=frame_name)
                try:
                    pose = resolve_frame(frame_name)
                except (InputError, KeyError, LookupError):
                    raise FormatError("unknown tolerance frame", path=fpath, value=frame_name) from None
                resolved[frame_name] = ToleranceFrame.fixed(frame_name, pose)
            frame = resolved[frame_name]
        for earlier in parts:
            if earlier.projection == name and earlier.frame.name == frame.name:
                if interval.low > earlier.interval.high or earlier.interval.low > interval.high:
                    raise ValidationError(
                        f"projection {name!r} is constrained twice with disjoint intervals "
                        f"[{earlier.interval.low:g}, {earlier.interval.high:g}] and [{low:g}, {high:g}]: "
                        "no pose can meet this tolerance",
                        path=ipath,
                        value=[low, high],
                    )
        parts.append(ProjectionTolerance(name, interval, frame))
    return parts[0] if len(parts) == 1 else Composed(parts)


# --------------------------------------------------------------------------------------------------------------------
# IK residual
# --------------------------------------------------------------------------------------------------------------------


def _radial(vec: np.ndarray, iv: Interval, fallback: np.ndarray) -> np.ndarray:
    """Nearest point of ``vec`` with a norm in ``iv`` (along ``fallback`` if ``vec`` is 0)."""
    n = float(np.linalg.norm(vec))
    target = iv.clip(n)
    return vec * (target / n) if n > 0.0 else target * fallback


def _wedge(e: np.ndarray, iv: Interval) -> np.ndarray:
    """The nearest point of ``e`` in the closed wedge of azimuths (phi_cyl / phi_sph) ``iv`` (the axis included)."""
    rho = math.hypot(e[0], e[1])
    if rho == 0.0 or iv.contains(_azimuth(e[0], e[1])):
        return e
    phi = _azimuth(e[0], e[1])
    delta, b = min((abs(math.remainder(phi - b, 2 * PI)), b) for b in (iv.low, iv.high))
    length = rho * math.cos(delta) if delta < PI / 2 else 0.0  # on the nearest bounding half-plane, or the axis
    return np.array([length * math.cos(b), length * math.sin(b), e[2]])


def _cone(e: np.ndarray, iv: Interval) -> np.ndarray:
    """The nearest point of ``e`` in the closed cone shell of polar angles (theta) ``iv`` (the apex included)."""
    r = float(np.linalg.norm(e))
    if r == 0.0:
        return e
    theta = math.atan2(math.hypot(e[0], e[1]), e[2])
    if iv.contains(theta):
        return e
    phi = _azimuth(e[0], e[1])
    b = iv.high if theta > iv.high else iv.low
    length = r * math.cos(theta - b) if abs(theta - b) < PI / 2 else 0.0  # on the bounding cone, or the apex
    return length * np.array([math.sin(b) * math.cos(phi), math.sin(b) * math.sin(phi), math.cos(b)])


def _nearest(projection: str, iv: Interval, local: np.ndarray) -> np.ndarray:
    """The nearest point of ``local`` (a position deviation or rotation vector in the projection's frame) in the
    closure of the set the projection allows."""
    if projection in _AXES:
        out = local.copy()
        k = _AXES[projection]
        out[k] = iv.clip(out[k])
        return out
    if projection == "r_cyl":
        out = local.copy()
        out[:2] = _radial(local[:2], iv, np.array([1.0, 0.0]))
        return out
    if projection in ("r_sph", "Theta_R"):
        return _radial(local, iv, np.array([1.0, 0.0, 0.0]))
    if projection in ("phi_cyl", "phi_sph"):
        return _wedge(local, iv)
    return _cone(local, iv)


def _shrunk(projection: str, iv: Interval, margin: float) -> Interval:
    """The interval with every bound that is a real constraint (not the end of the projection's range) moved
    ``margin`` inwards (at most to the middle)."""
    if margin <= 0.0:
        return iv
    lo_min, hi_max = PROJECTION_DOMAINS[projection]
    move_low, move_high = iv.low > lo_min, iv.high < hi_max
    low = iv.low + margin if move_low else iv.low
    high = iv.high - margin if move_high else iv.high
    if low > high:  # narrower than twice the margin
        low = high = 0.5 * (iv.low + iv.high) if (move_low and move_high) else (iv.high if move_low else iv.low)
    return Interval(low, high)


# (projection name or "box", its interval or the three intervals of a box, world orientation of its frame)
_Block = tuple[str, Any, np.ndarray]


def _block_nearest(block: _Block, x: np.ndarray) -> np.ndarray:
    name, iv, R_F = block
    local = R_F.T @ x
    if name == "box":
        return R_F @ np.array([iv[k].clip(local[k]) for k in range(3)])
    return R_F @ _nearest(name, iv, local)


def _block_satisfied(block: _Block, x: np.ndarray) -> bool:
    name, iv, R_F = block
    local = R_F.T @ x
    if name == "box":
        return all(iv[k].contains(local[k]) for k in range(3))
    return iv.contains(_value(name, local))


def _feasible_point(x0: np.ndarray, blocks: list[_Block], sweeps: int, lift: float) -> np.ndarray:
    """A point near ``x0`` (world axes) satisfying all blocks, by Dykstra's alternating projections.

    Dykstra's method converges to the nearest point for convex constraints (boxes, balls, cylinders, wedges up to
    180 degrees, cones up to 90 degrees) — slowly where bounds meet at a sharp angle; for the rest (radius lower
    bounds, wider wedges and cones) it is a heuristic. Stops early once every block is satisfied. A result closer
    than ``lift`` to the axis/apex of a wedge/cone (angle ill-defined) is then moved ``lift`` into the region.
    """
    x = x0.copy()
    increments = [np.zeros(3) for _ in blocks]
    for _ in range(sweeps):
        for i, block in enumerate(blocks):
            y = x + increments[i]
            x = _block_nearest(block, y)
            increments[i] = y - x
        if all(_block_satisfied(block, x) for block in blocks):
            break
    return _off_axis(blocks, x, lift)


def _off_axis(blocks: list[_Block], x: np.ndarray, lift: float) -> np.ndarray:
    """Move a point closer than ``lift`` to the axis/apex of a restricting wedge/cone (where phi/theta are 0 by
    convention, or numerically arbitrary) ``lift`` into the middle of the region (of wedge and cone together if
    both are given in the same frame)."""
    done: list[np.ndarray] = []
    for name, _, R_F in blocks:
        if name not in ("phi_cyl", "phi_sph", "theta") or any(np.array_equal(R_F, R) for R in done):
            continue
        done.append(R_F)
        same = [(n, iv) for n, iv, R in blocks if np.array_equal(R, R_F)]
        wedge: Interval | None = Interval(-PI, PI)
        cone: Interval | None = Interval(0.0, PI)
        for n, iv in same:
            if n in ("phi_cyl", "phi_sph") and wedge is not None:
                wedge = wedge.intersect(iv)
            elif n == "theta" and cone is not None:
                cone = cone.intersect(iv)
        wedge = None if wedge == Interval(-PI, PI) else wedge
        cone = None if cone == Interval(0.0, PI) else cone
        local = R_F.T @ x
        if cone is not None and float(np.linalg.norm(local)) < lift:
            azimuth = 0.5 * (wedge.low + wedge.high) if wedge is not None else _azimuth(local[0], local[1])
            polar = 0.5 * (cone.low + cone.high)
            local = lift * np.array(
                [math.sin(polar) * math.cos(azimuth), math.sin(polar) * math.sin(azimuth), math.cos(polar)]
            )
        elif wedge is not None and math.hypot(local[0], local[1]) < lift:
            azimuth = 0.5 * (wedge.low + wedge.high)
            local[:2] = lift * np.array([math.cos(azimuth), math.sin(azimuth)])
        else:
            continue
        x = R_F @ local
    return x


def residual(
    tol: Tolerance, desired: np.ndarray, real: np.ndarray, margin: float = 0.0, sweeps: int = 1000
) -> np.ndarray:
    """The 6D pose error that the tolerance does not allow, for IK: ``[position (3), rotation (3)]`` in world axes.

    The unconstrained error is the standard world-frame one: position ``p_real - p_desired`` and the rotation vector
    ``w = log(R_real R_desired^T) = R_desired log(R_desired^T R_real)`` (world axes). This function finds the nearest
    error ``(e*, w*)`` the tolerance allows and returns the part of the error that has to go: ``p_real - p_target``
    and ``log(R_real R_target^T)`` with ``p_target = p_desired + e*``, ``R_target = exp(w*) R_desired`` — so moving
    the real pose by minus the residual (``p -= r[:3]``, ``R = exp(-r[3:]) R``) lands exactly on the target:

    * Every projection is a set in the space of position errors (``x``, ``y``, ``z``, ``r_cyl``, ``phi_cyl``,
      ``r_sph``, ``theta``, ``phi_sph``) or of rotation vectors (``N_*``, ``Theta_R``), described in its own frame
      (for the default nominal frame: the desired pose's axes); frames are rotations of world axes, so each set is
      a slab, ball shell, cylinder shell, wedge or cone in world axes too.
    * One projection: ``x``/``y``/``z``/``N_*`` — only that component's excess counts, the others are free (so
      ``N_z`` alone leaves the rotation-vector components about the frame's x and y axes free);
      ``r_cyl``/``r_sph``/``Theta_R`` — only the radial excess (``|w| -> |w| - a`` along ``w`` for ``Theta_R`` in
      ``[0, a]``); ``phi_*``/``theta`` — the offset to the nearest point of the wedge/cone.
    * Several projections: the nearest point of their intersection, by Dykstra's alternating projections (the
      ``x``/``y``/``z`` resp. ``N_*`` intervals of one frame first merged into one box; at most ``sweeps`` rounds).
      Exact for convex sets — e.g. intervals containing the nominal value 0, wedges up to 180 and cones up to 90
      degrees — and a heuristic otherwise (radius lower bounds). It stops as soon as all are satisfied (one round
      for boxes and balls); bounds that meet at a sharp angle or touch need many rounds (some ms).
    * ``phi_*``/``theta`` are 0 by convention on the axis/apex, and numerically arbitrary a rounding error away
      from it, so a target closer than ``max(margin, DEGENERATE_STEP)`` (metres) to the axis/apex of a restricting
      ``phi_*``/``theta`` interval is moved that far into the middle of the wedge/cone — conservative: a real pose
      never lands exactly on the axis.

    Inside/outside is decided exactly as in ``valid``: with ``margin = 0`` the residual is exactly zero iff the
    pose is valid (an invalid pose never gets a zero residual, even if the projections do not converge). An
    iterative IK approaches the bounds from outside, so pass a small ``margin`` (metres for lengths, radians for
    angles: every bound that is a real constraint moves that far inwards; bounds at the end of a projection's
    range, like ``Theta_R``'s 0, stay), iterate until ``valid`` (or the residual is tiny, then check ``valid``).
    Any ``margin`` keeps "zero residual implies valid".
    """
    dev = _Deviation(desired, real)
    boxes: dict[tuple[bool, ToleranceFrame], list[Interval]] = {}  # x/y/z (N_*) slabs of one frame: one box
    others: list[tuple[bool, _Block]] = []
    violated: list[tuple[bool, _Block]] = []
    for part in tol.parts:
        name = part.projection
        iv = _shrunk(name, part.interval, margin)
        is_rot = name in ROTATION_PROJECTIONS
        block = (name, iv, np.eye(3) if name == "Theta_R" else part.frame.matrix(dev.R_d))
        if name in _AXES:
            box = boxes.setdefault((is_rot, part.frame), [Interval(-math.inf, math.inf)] * 3)
            k = _AXES[name]
            box[k] = box[k].intersect(iv) or iv  # contradictory intervals: nothing is valid anyway
        else:
            others.append((is_rot, block))
        if not iv.contains(dev.project(name, part.frame)):
            violated.append((is_rot, block))
    out = np.zeros(6)
    if not violated:
        return out
    blocks = [(is_rot, ("box", ivs, frame.matrix(dev.R_d))) for (is_rot, frame), ivs in boxes.items()] + others
    pos = [block for is_rot, block in blocks if not is_rot]
    rot = [block for is_rot, block in blocks if is_rot]
    e_world, w_world = dev.dp_world, dev.R_d @ dev.omega_nominal
    if any(not is_rot for is_rot, _ in violated):
        out[:3] = e_world - _feasible_point(e_world, pos, sweeps, max(margin, DEGENERATE_STEP))
    if any(is_rot for is_rot, _ in violated):
        target = _feasible_point(w_world, rot, sweeps, 0.0)
        # the rotation (world axes) from the tolerated target orientation to the real one: applying its inverse to
        # the real orientation reaches the target exactly (for Theta_R alone this is w - target, same axis)
        out[3:] = _log3(dev.R_r @ (_exp3(target) @ dev.R_d).T)[0]
    if not out.any():  # the projections did not move: fall back to the first violated projection alone
        is_rot, block = violated[0]
        x = w_world if is_rot else e_world
        step = x - _block_nearest(block, x)
        out[3 * is_rot : 3 * is_rot + 3] = step if step.any() else VALID_SLACK
    return out


#: The default goal tolerance: 0.1 mm per axis and 0.1 degree of rotation, in the nominal frame.
DEFAULT_TOLERANCE: Composed = Composed(
    [
        ProjectionTolerance("x", Interval(-1e-4, 1e-4)),
        ProjectionTolerance("y", Interval(-1e-4, 1e-4)),
        ProjectionTolerance("z", Interval(-1e-4, 1e-4)),
        ProjectionTolerance("Theta_R", Interval(0.0, math.radians(0.1))),
    ]
)
