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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.errors import FormatError, InputError, TimorError, ValidationError, short_repr
from timor_core.kinematics.tolerance_base import (
    KEEP_NOMINAL,
    NOMINAL_FRAME,
    POSITION_PROJECTIONS,
    PROJECTIONS,
    PURE_REJECTION,
    ROTATION_PROJECTIONS,
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
from timor_core.kinematics.tolerance_sampling import position_proposals, rotation_proposals

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
    "ToleranceTypeError",
]


class ToleranceTypeError(TimorError, TypeError):
    """Something that is not a Tolerance where tolerances are combined (still a TypeError for old callers)."""


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

    def __eq__(self, other: object) -> bool:
        """The same projections with the same intervals in the same frames, in any order (a one-part Composed
        equals its part)."""
        if not isinstance(other, Tolerance):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())

    def _key(self) -> frozenset:
        return frozenset((p.projection, p.interval, p.frame) for p in self.parts)

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
        pos_candidates = position_proposals(parts)
        rot_candidates = rotation_proposals(parts)
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


@dataclass(frozen=True, eq=False)
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


@dataclass(frozen=True, init=False, eq=False)
class Composed(Tolerance):
    """Several tolerances at once: valid iff every part is valid (an empty one is always valid).

    A part given twice (same projection, interval and frame) is kept once, so ``t & t`` is ``t``.
    """

    tolerances: tuple[ProjectionTolerance, ...]

    def __init__(self, tolerances: Iterable[Tolerance] = ()) -> None:
        flat: list[ProjectionTolerance] = []
        for tol in tolerances:
            if not isinstance(tol, Tolerance):
                raise ToleranceTypeError(f"Composed takes tolerances, got a {type(tol).__name__}: {short_repr(tol)}")
            for part in tol.parts:
                if not any(part._key() == seen._key() for seen in flat):
                    flat.append(part)
        object.__setattr__(self, "tolerances", tuple(flat))

    @property
    def parts(self) -> tuple[ProjectionTolerance, ...]:
        """The single-projection tolerances, in order."""
        return self.tolerances


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
        ipath = f"{path}.tolerance[{i}]"
        interval = _projection_interval(name, bounds, f"{path}.toleranceProjection[{i}]", ipath)
        frame = NOMINAL_FRAME
        if frames is not None:
            frame = _tolerance_frame(frames[i], f"{path}.toleranceFrame[{i}]", resolved, resolve_frame)
        part = ProjectionTolerance(name, interval, frame)
        _refuse_disjoint(parts, part, ipath)
        parts.append(part)
    return parts[0] if len(parts) == 1 else Composed(parts)


def _projection_interval(name: Any, bounds: Any, ppath: str, ipath: str) -> Interval:
    """The checked interval of projection ``name`` (JSON paths of the name and of the interval)."""
    if not isinstance(name, str):
        raise FormatError("expected a projection name (string)", path=ppath, value=name)
    if name not in PROJECTIONS:
        raise FormatError(f"unknown tolerance projection (expected one of {', '.join(PROJECTIONS)})", path=ppath,
                          value=name)  # fmt: skip
    if not isinstance(bounds, (list, tuple)) or len(bounds) != 2:
        raise FormatError("expected an interval [low, high]", path=ipath, value=bounds)
    low = jf.number(bounds[0], f"{ipath}[0]", allow_inf=True)
    high = jf.number(bounds[1], f"{ipath}[1]", allow_inf=True)
    if low > high:
        raise ValidationError("interval lower bound exceeds its upper bound", path=ipath, value=[low, high])
    try:
        interval = Interval(low, high)
    except ValidationError as exc:  # [inf, inf] from Python: no finite value; say where
        raise ValidationError(exc.message, path=ipath, value=[low, high]) from None
    check_interval(name, interval, ipath)
    return interval


def _tolerance_frame(frame_name: Any, fpath: str, resolved: dict[str, ToleranceFrame],
                     resolve_frame: Callable[[str], Any] | None) -> ToleranceFrame:  # fmt: skip
    """The frame a ``toleranceFrame`` entry names (``resolved``: the frames met so far, by name; grows)."""
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
    return resolved[frame_name]


def _refuse_disjoint(parts: list[ProjectionTolerance], new: ProjectionTolerance, ipath: str) -> None:
    """A projection constrained twice in one frame with disjoint intervals: no pose meets it."""
    name, interval = new.projection, new.interval
    for earlier in parts:
        if earlier.projection == name and earlier.frame.name == new.frame.name:
            if interval.low > earlier.interval.high or earlier.interval.low > interval.high:
                raise ValidationError(
                    f"projection {name!r} is constrained twice with disjoint intervals "
                    f"[{earlier.interval.low:g}, {earlier.interval.high:g}] and [{interval.low:g}, {interval.high:g}]: "
                    "no pose can meet this tolerance",
                    path=ipath,
                    value=[interval.low, interval.high],
                )


DEFAULT_TOLERANCE: Composed = Composed(
    [
        ProjectionTolerance("x", Interval(-1e-4, 1e-4)),
        ProjectionTolerance("y", Interval(-1e-4, 1e-4)),
        ProjectionTolerance("z", Interval(-1e-4, 1e-4)),
        ProjectionTolerance("Theta_R", Interval(0.0, math.radians(0.1))),
    ]
)
