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
from timor_core.kinematics.tolerance_base import (
    KEEP_NOMINAL,
    LENGTHS,
    NOMINAL_FRAME,
    PI,
    POSITION_PROJECTIONS,
    PROJECTIONS,
    PURE_REJECTION,
    ROTATION_PROJECTIONS,
    SAMPLE_SPAN,
    VALID_SLACK,
    WORLD_FRAME,
    Deviation,
    Interval,
    ToleranceFrame,
    as_pose,
    check_interval,
    exp3,
)
from timor_core.kinematics.tolerance_residual import residual

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
        dev = Deviation(desired, real)
        return np.array([dev.project(p.projection, p.frame) for p in self.parts], dtype=float)

    def violation(self, desired: np.ndarray, real: np.ndarray) -> np.ndarray:
        """Per projection: 0 inside the interval, else the signed distance beyond the nearest bound."""
        values = self.error(desired, real)
        return np.array([iv.violation(v) for iv, v in zip(self.intervals, values)], dtype=float)

    def valid(self, desired: np.ndarray, real: np.ndarray) -> bool:
        """Whether every projection of the deviation lies in its interval (up to ``VALID_SLACK``)."""
        dev = Deviation(desired, real)
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
        D = as_pose(desired, "desired")
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
            if pos_proposals and gen.random() >= KEEP_NOMINAL:
                frame, draw = pos_proposals[gen.integers(len(pos_proposals))]
                e = draw(gen)
                T[:3, 3] = D[:3, 3] + frame.matrix(D[:3, :3]) @ e
            if rot_proposals and gen.random() >= KEEP_NOMINAL:
                frame, draw = rot_proposals[gen.integers(len(rot_proposals))]
                omega = draw(gen)
                if omega is None:
                    continue
                R_F = frame.matrix(D[:3, :3])
                T[:3, :3] = R_F @ exp3(omega) @ R_F.T @ D[:3, :3]
            if self.valid(D, T):
                return T
            if attempt >= PURE_REJECTION:  # thin intersections: repair the draw with the IK residual
                for _ in range(3):
                    r = residual(self, D, T, margin=1e-7)
                    T = T.copy()
                    T[:3, 3] -= r[:3]
                    T[:3, :3] = exp3(-r[3:]) @ T[:3, :3]
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
        check_interval(self.projection, self.interval)

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
    finite = [abs(b) for p in parts if p.projection in LENGTHS for b in (p.interval.low, p.interval.high)]
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
        check_interval(name, interval, ipath)
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


DEFAULT_TOLERANCE: Composed = Composed(
    [
        ProjectionTolerance("x", Interval(-1e-4, 1e-4)),
        ProjectionTolerance("y", Interval(-1e-4, 1e-4)),
        ProjectionTolerance("z", Interval(-1e-4, 1e-4)),
        ProjectionTolerance("Theta_R", Interval(0.0, math.radians(0.1))),
    ]
)
