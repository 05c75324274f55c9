"""Proposal distributions for sampling poses inside a tolerance (``Tolerance.sample``).

Each proposal draws a deviation of one family of projections in one frame: a position in a box, cylinder sector
or spherical sector, or a rotation vector in a ball or box, built from the intersected intervals of the parts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

import numpy as np

from timor_core.kinematics.tolerance_base import (
    LENGTHS,
    NOMINAL_FRAME,
    PI,
    POSITION_PROJECTIONS,
    SAMPLE_SPAN,
    Interval,
    ToleranceFrame,
)

__all__ = ["Part", "Proposal", "position_proposals", "rotation_proposals"]


class Part(Protocol):
    """One projection of a tolerance with its interval and frame (a ``ProjectionTolerance``)."""

    @property
    def projection(self) -> str: ...

    @property
    def interval(self) -> Interval: ...

    @property
    def frame(self) -> ToleranceFrame: ...


#: A frame and a draw of a deviation in it (a position, or a rotation vector; None if the draw failed).
Proposal = tuple[ToleranceFrame, Callable[[np.random.Generator], Any]]


def _merged(parts: Sequence[Part], names: Iterable[str], frame: ToleranceFrame | None, default: Interval):
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


def position_proposals(parts: Sequence[Part]) -> list[Proposal | None]:
    proposals: list[Proposal | None] = []
    families = {"cart": {"x", "y", "z"}, "cyl": {"r_cyl", "phi_cyl"}, "sph": {"r_sph", "theta", "phi_sph"}}
    seen: set[tuple[ToleranceFrame, str]] = set()
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
        proposals.append(_position_proposal(parts, part.frame, family, span))
    return proposals


def _position_proposal(parts: Sequence[Part], frame: ToleranceFrame, family: str, span: float) -> Proposal | None:
    """The sampler of one family (``cart``, ``cyl``, ``sph``) of position projections in one frame, drawing within
    every position interval of that frame (None if they contradict each other)."""
    full_len = Interval(-math.inf, math.inf)
    r_sph = _merged(parts, {"r_sph"}, frame, Interval(0.0, math.inf))
    r_cyl = _merged(parts, {"r_cyl"}, frame, Interval(0.0, math.inf))
    phi = _merged(parts, {"phi_cyl", "phi_sph"}, frame, Interval(-PI, PI))
    theta = _merged(parts, {"theta"}, frame, Interval(0.0, PI))
    xyz = [_merged(parts, {a}, frame, full_len) for a in ("x", "y", "z")]
    if r_sph is None or r_cyl is None or phi is None or theta is None or any(iv is None for iv in xyz):
        return None
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

        return frame, draw_cart
    elif family == "cyl":
        r_lo = r_cyl.low
        r_hi = r_cyl.high if math.isfinite(r_cyl.high) else r_lo + min(span, r_sph.high)
        r_hi = max(r_lo, r_hi)
        z_range = _bounded(xyz[2], span_z, r_sph.high)

        def draw_cyl(g, r_lo=r_lo, r_hi=r_hi, phi=phi, z_range=z_range):
            r = math.sqrt(g.uniform(r_lo**2, r_hi**2))
            a = _off_seam(g.uniform(phi.low, phi.high))
            return np.array([r * math.cos(a), r * math.sin(a), g.uniform(*z_range)])

        return frame, draw_cyl
    else:
        r_lo = r_sph.low
        r_hi = r_sph.high if math.isfinite(r_sph.high) else r_lo + span

        def draw_sph(g, r_lo=r_lo, r_hi=r_hi, phi=phi, theta=theta):
            r = np.cbrt(g.uniform(r_lo**3, r_hi**3))
            t = math.acos(min(1.0, max(-1.0, g.uniform(math.cos(theta.high), math.cos(theta.low)))))
            t = min(max(t, theta.low), theta.high)
            a = _off_seam(g.uniform(phi.low, phi.high))
            return r * np.array([math.sin(t) * math.cos(a), math.sin(t) * math.sin(a), math.cos(t)])

        return frame, draw_sph


def rotation_proposals(parts: Sequence[Part]) -> list[Proposal | None]:
    proposals: list[Proposal | None] = []
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
