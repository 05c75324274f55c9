"""The IK residual of a tolerance: the part of a pose error the tolerance does not allow, as the nearest
allowed error (alternating projections onto slabs, shells, wedges and cones)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from timor_core.kinematics.tolerance_base import (
    AXES,
    DEGENERATE_STEP,
    PI,
    PROJECTION_DOMAINS,
    ROTATION_PROJECTIONS,
    VALID_SLACK,
    Deviation,
    Interval,
    ToleranceFrame,
    exp3,
    log3,
    projection_value,
)
from timor_core.kinematics.tolerance_base import (
    azimuth as azimuth_of,
)

__all__ = ["residual"]

Tolerance = Any  # a timor_core.kinematics.tolerance.Tolerance (it imports this module)


# --------------------------------------------------------------------------------------------------------------------
# IK residual
# --------------------------------------------------------------------------------------------------------------------


def _norm(vec: np.ndarray) -> float:
    """``np.linalg.norm`` of a 1-D float vector, to the last bit (it is ``sqrt(vec @ vec)``), without its overhead."""
    return math.sqrt(vec.dot(vec))


def _radial(vec: np.ndarray, iv: Interval, fallback: np.ndarray) -> np.ndarray:
    """Nearest point of ``vec`` with a norm in ``iv`` (along ``fallback`` if ``vec`` is 0)."""
    n = _norm(vec)
    target = iv.clip(n)
    return vec * (target / n) if n > 0.0 else target * fallback


def _wedge(e: np.ndarray, iv: Interval) -> np.ndarray:
    """The nearest point of ``e`` in the closed wedge of azimuths (phi_cyl / phi_sph) ``iv`` (the axis included)."""
    e0, e1 = float(e[0]), float(e[1])
    rho = math.hypot(e0, e1)
    if rho == 0.0:
        return e
    phi = azimuth_of(e0, e1)
    if iv.contains(phi):
        return e
    delta, b = min((abs(math.remainder(phi - b, 2 * PI)), b) for b in (iv.low, iv.high))
    length = rho * math.cos(delta) if delta < PI / 2 else 0.0  # on the nearest bounding half-plane, or the axis
    return np.array([length * math.cos(b), length * math.sin(b), e[2]])


def _cone(e: np.ndarray, iv: Interval) -> np.ndarray:
    """The nearest point of ``e`` in the closed cone shell of polar angles (theta) ``iv`` (the apex included)."""
    r = _norm(e)
    if r == 0.0:
        return e
    e0, e1 = float(e[0]), float(e[1])
    theta = math.atan2(math.hypot(e0, e1), e[2])
    if iv.contains(theta):
        return e
    phi = azimuth_of(e0, e1)
    b = iv.high if theta > iv.high else iv.low
    length = r * math.cos(theta - b) if abs(theta - b) < PI / 2 else 0.0  # on the bounding cone, or the apex
    return length * np.array([math.sin(b) * math.cos(phi), math.sin(b) * math.sin(phi), math.cos(b)])


_X_AXIS2, _X_AXIS3 = np.array([1.0, 0.0]), np.array([1.0, 0.0, 0.0])


def _nearest(projection: str, iv: Interval, local: np.ndarray) -> np.ndarray:
    """The nearest point of ``local`` (a position deviation or rotation vector in the projection's frame) in the
    closure of the set the projection allows."""
    if projection in AXES:
        out = local.copy()
        k = AXES[projection]
        out[k] = iv.clip(out[k])
        return out
    if projection == "r_cyl":
        out = local.copy()
        out[:2] = _radial(local[:2], iv, _X_AXIS2)
        return out
    if projection in ("r_sph", "Theta_R"):
        return _radial(local, iv, _X_AXIS3)
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


class _Box:
    """The x/y/z (N_*) intervals of one frame, clipped and tested all three at once: the same numbers as
    ``Interval.clip`` (``min(max(v, low), high)``) and ``Interval.contains`` one by one, on plain floats."""

    __slots__ = ("intervals", "bounds", "slack_bounds")

    def __init__(self, intervals: list[Interval]) -> None:
        self.intervals = tuple(intervals)
        self.bounds = tuple((iv.low, iv.high) for iv in intervals)
        self.slack_bounds = tuple((iv.low - VALID_SLACK, iv.high + VALID_SLACK) for iv in intervals)

    def __getitem__(self, k: int) -> Interval:
        return self.intervals[k]

    def clip(self, local: np.ndarray) -> np.ndarray:
        """``[iv.clip(v) for iv, v in zip(intervals, local)]`` (``max`` keeps ``v`` unless ``low > v``, ``min``
        keeps that unless ``high`` is less)."""
        out = []
        for v, (low, high) in zip(local.tolist(), self.bounds):
            at_least = low if low > v else v
            out.append(high if high < at_least else at_least)
        return np.array(out)

    def contains(self, local: np.ndarray) -> bool:
        """``all(iv.contains(v) ...)``: ``low - VALID_SLACK <= v <= high + VALID_SLACK``."""
        for v, (low, high) in zip(local.tolist(), self.slack_bounds):
            if not low <= v <= high:
                return False
        return True


# (projection name or "box", its interval or a box's intervals, world orientation of its frame)
_Block = tuple[str, Any, np.ndarray]


def _block_nearest(block: _Block, x: np.ndarray) -> np.ndarray:
    name, iv, R_F = block
    local = R_F.T @ x
    if name == "box":
        return R_F @ iv.clip(local)
    return R_F @ _nearest(name, iv, local)


def _block_satisfied(block: _Block, x: np.ndarray) -> bool:
    name, iv, R_F = block
    local = R_F.T @ x
    if name == "box":
        return iv.contains(local)
    return iv.contains(projection_value(name, local))


def _feasible_point(x0: np.ndarray, blocks: list[_Block], sweeps: int, lift: float) -> np.ndarray:
    """A point near ``x0`` (world axes) satisfying all blocks, by Dykstra's alternating projections.

    Dykstra's method converges to the nearest point for convex constraints (boxes, balls, cylinders, wedges up to
    180 degrees, cones up to 90 degrees) — slowly where bounds meet at a sharp angle; for the rest (radius lower
    bounds, wider wedges and cones) it is a heuristic. Stops early once every block is satisfied. Where it does not
    converge, its state (the point and the increments) often repeats exactly after a few sweeps: a sweep is a
    function of that state alone, so the point after all ``sweeps`` is then read off the cycle, the same to the last
    bit as sweeping on (~half the sweeps of such cases). A result closer than ``lift`` to the axis/apex of a
    wedge/cone (angle ill-defined) is then moved ``lift`` into the region.
    """
    x = x0.copy()
    increments = [np.zeros(3) for _ in blocks]
    order = range(len(blocks))
    seen: dict[bytes, int] = {}  # the state after each sweep -> that sweep's index
    points: list[np.ndarray] = []  # the point after each sweep
    for done in range(sweeps):
        for i in order:
            y = x + increments[i]
            x = _block_nearest(blocks[i], y)
            increments[i] = y - x
        for block in blocks:
            if not _block_satisfied(block, x):
                break
        else:
            break
        state = b"".join([x.tobytes(), *[v.tobytes() for v in increments]])
        first = seen.setdefault(state, done)
        if first != done:  # the state of sweep ``first`` again: sweeps first+1 .. done repeat from here on
            x = points[first + (sweeps - 1 - first) % (done - first)]
            break
        points.append(x)
    return _off_axis(blocks, x, lift)


def _off_axis(blocks: list[_Block], x: np.ndarray, lift: float) -> np.ndarray:
    """Move a point closer than ``lift`` to the axis/apex of a restricting wedge/cone (where phi/theta are 0 by
    convention, or numerically arbitrary) ``lift`` into the middle of the region (of wedge and cone together if
    both are given in the same frame; a point near the wedge's axis but not the apex stays inside the cone)."""
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
            azimuth = 0.5 * (wedge.low + wedge.high) if wedge is not None else azimuth_of(local[0], local[1])
            polar = 0.5 * (cone.low + cone.high)
            local = lift * np.array(
                [math.sin(polar) * math.cos(azimuth), math.sin(polar) * math.sin(azimuth), math.cos(polar)]
            )
        elif wedge is not None and math.hypot(local[0], local[1]) < lift:
            local = _beside_axis(local, lift, 0.5 * (wedge.low + wedge.high), cone)
        else:
            continue
        x = R_F @ local
    return x


def _beside_axis(local: np.ndarray, lift: float, azimuth: float, cone: Interval | None) -> np.ndarray:
    """``local`` (closer than ``lift`` to the axis of a wedge, at least ``lift`` from the apex) moved ``lift`` off
    the axis towards ``azimuth``; if that leaves the cone of polar angles ``cone`` given in the same frame (a narrow
    cone about the axis), turned about the apex onto the cone's nearest bound instead (same distance, that azimuth)."""
    out = local.copy()
    out[:2] = lift * np.array([math.cos(azimuth), math.sin(azimuth)])
    if cone is None:
        return out
    polar = projection_value("theta", out)
    if cone.contains(polar):
        return out
    polar, r = cone.clip(polar), _norm(local)
    return r * np.array([math.sin(polar) * math.cos(azimuth), math.sin(polar) * math.sin(azimuth), math.cos(polar)])


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
    dev = Deviation(desired, real)
    blocks, violated = _blocks(tol, dev, margin)
    out = np.zeros(6)
    if not violated:
        return out
    pos = [block for is_rot, block in blocks if not is_rot]
    rot = [block for is_rot, block in blocks if is_rot]
    e_world, w_world = dev.dp_world, dev.R_d @ dev.omega_nominal
    if any(not is_rot for is_rot, _ in violated):
        out[:3] = e_world - _feasible_point(e_world, pos, sweeps, max(margin, DEGENERATE_STEP))
    if any(is_rot for is_rot, _ in violated):
        target = _feasible_point(w_world, rot, sweeps, 0.0)
        # the rotation (world axes) from the tolerated target orientation to the real one: applying its inverse to
        # the real orientation reaches the target exactly (for Theta_R alone this is w - target, same axis)
        out[3:] = log3(dev.R_r @ (exp3(target) @ dev.R_d).T)[0]
    if not out.any():  # the projections did not move: fall back to the first violated projection alone
        is_rot, block = violated[0]
        x = w_world if is_rot else e_world
        step = x - _block_nearest(block, x)
        out[3 * is_rot : 3 * is_rot + 3] = step if step.any() else VALID_SLACK
    return out


_Tagged = tuple[bool, _Block]  # (a rotation set?, the set)


def _blocks(tol: Tolerance, dev: Deviation, margin: float) -> tuple[list[_Tagged], list[_Tagged]]:
    """The tolerance's sets in world axes (the x/y/z resp. N_* slabs of one frame merged into one box), each
    bound moved ``margin`` inwards, and the projections' sets the deviation violates."""
    boxes: dict[tuple[bool, ToleranceFrame], list[Interval]] = {}  # x/y/z (N_*) slabs of one frame: one box
    others: list[_Tagged] = []
    violated: list[_Tagged] = []
    for part in tol.parts:
        name = part.projection
        iv = _shrunk(name, part.interval, margin)
        is_rot = name in ROTATION_PROJECTIONS
        block = (name, iv, np.eye(3) if name == "Theta_R" else part.frame.matrix(dev.R_d))
        if name in AXES:
            box = boxes.setdefault((is_rot, part.frame), [Interval(-math.inf, math.inf)] * 3)
            k = AXES[name]
            box[k] = box[k].intersect(iv) or iv  # contradictory intervals: nothing is valid anyway
        else:
            others.append((is_rot, block))
        if not iv.contains(dev.project(name, part.frame)):
            violated.append((is_rot, block))
    merged: list[_Tagged] = [
        (is_rot, ("box", _Box(ivs), frame.matrix(dev.R_d))) for (is_rot, frame), ivs in boxes.items()
    ]
    return merged + others, violated


#: The default goal tolerance: 0.1 mm per axis and 0.1 degree of rotation, in the nominal frame.
