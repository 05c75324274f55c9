"""The residual the IK drives to zero: a tolerance's projected pose error as a 6D vector ([position; rotation] in
world axes, zero exactly where the pose is within the tolerance), with the weights of its Jacobian rows."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pinocchio as pin

from timor_core.kinematics.tolerance_base import PROJECTION_DOMAINS, VALID_SLACK
from timor_core.kinematics.tolerance_residual import residual

__all__ = ["ANGLE_WEIGHT", "Projector", "projector", "pose_residual"]

ANGLE_WEIGHT = 0.3  # metres per radian when position and angle residuals are mixed


# projections the closed-form residual handles, with their value ranges (bounds at a range's end stay put)
_FAST = {name: PROJECTION_DOMAINS[name] for name in ("x", "y", "z", "r_sph", "Theta_R", "N_x", "N_y", "N_z")}
_WEIGHTS = np.array([1.0, 1.0, 1.0, ANGLE_WEIGHT, ANGLE_WEIGHT, ANGLE_WEIGHT])
_PATTERNS = tuple(
    _WEIGHTS[:, None] * np.array([(bits >> k) & 1 for k in range(6)], float)[:, None] for bits in range(64)
)
"""Row weights by which of the six components are non-zero (bit k: component k), as ``weighted`` gives them."""
Terms = Callable[[pin.SE3], tuple[np.ndarray, float, np.ndarray]]


def _shrunk(name: str, low: float, high: float, margin: float) -> tuple[float, float]:
    """Move real bounds ``margin`` inwards (bounds at the end of a projection's range stay)."""
    r_lo, r_hi = _FAST[name]
    lo = low + margin if low > r_lo else low
    hi = high - margin if high < r_hi else high
    if lo > hi:
        lo = hi = 0.5 * (low + high)
    return lo, hi


class Projector:
    """The 6D residual ([position; rotation] in world axes, zero exactly where the pose is within the
    tolerance's (slightly shrunk) bounds) and its Jacobian w.r.t. a world twist of the real pose.

    Tolerances made of x/y/z/r_sph/Theta_R/N_* in the nominal frame (nearly all goals) use a vectorised
    closed form; anything else uses the tolerance module's general residual.
    """

    def __init__(self, tolerance: Any, margin: float) -> None:
        self.tolerance = tolerance
        self.margin = margin
        parts = getattr(tolerance, "parts", ())
        fast = all(p.projection in _FAST for p in parts) and all(f == "nominal" for f in tolerance.frames)
        self.fast = bool(fast)
        self.rot_box = False
        if self.fast:
            lo, hi = np.full(3, -math.inf), np.full(3, math.inf)
            rlo, rhi = np.full(3, -math.inf), np.full(3, math.inf)
            self.sph = self.theta = None
            for p in parts:
                b = _shrunk(p.projection, p.interval.low, p.interval.high, margin)
                name = p.projection
                if name in ("x", "y", "z"):
                    a = "xyz".index(name)
                    lo[a], hi[a] = max(lo[a], b[0]), min(hi[a], b[1])
                elif name.startswith("N_"):
                    a = "xyz".index(name[-1])
                    rlo[a], rhi[a] = max(rlo[a], b[0]), min(rhi[a], b[1])
                elif name == "r_sph":
                    self.sph = b
                else:
                    self.theta = b
            self.box = (lo, hi, rlo, rhi)
            self.rot_box = bool(np.isfinite(rlo).any() or np.isfinite(rhi).any())
        else:
            self.residual = residual
        has_box = self.fast and bool(np.isfinite(self.box[0]).any() or np.isfinite(self.box[1]).any())
        self.sphere_cone = self.fast and not has_box and not self.rot_box
        self.sph_bounds = self.theta_bounds = None
        if self.sphere_cone:  # the real bounds (intersected), for valid()
            for p in parts:
                bounds = (p.interval.low, p.interval.high)
                if p.projection == "r_sph":
                    old = self.sph_bounds or (-math.inf, math.inf)
                    self.sph_bounds = (max(old[0], bounds[0]), min(old[1], bounds[1]))
                else:
                    old = self.theta_bounds or (-math.inf, math.inf)
                    self.theta_bounds = (max(old[0], bounds[0]), min(old[1], bounds[1]))

    def __call__(self, desired: np.ndarray, real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(residual, G): G scales the rows of a world twist Jacobian; rows of satisfied components vanish."""
        r, g = self.weighted(desired, real)
        return r, np.diag(g)

    def valid(self, desired: np.ndarray, real: np.ndarray) -> bool:
        """Whether ``real`` meets the tolerance: the residual with the unshrunk bounds is zero, up to the slack of
        ``Tolerance.valid`` (closed form for r_sph/Theta_R goals; else the tolerance's own check)."""
        if not self.sphere_cone:
            return bool(self.tolerance.valid(desired, real))
        if self.sph_bounds is not None:
            e = real[:3, 3] - desired[:3, 3]
            d = math.sqrt(e @ e)
            if not self.sph_bounds[0] - VALID_SLACK <= d <= self.sph_bounds[1] + VALID_SLACK:
                return False
        if self.theta_bounds is not None:
            w = pin.log3(real[:3, :3] @ desired[:3, :3].T)
            th = math.sqrt(w @ w)
            if not self.theta_bounds[0] - VALID_SLACK <= th <= self.theta_bounds[1] + VALID_SLACK:
                return False
        return True

    def valid_bounds(self) -> np.ndarray:
        """``valid``'s test as the compiled tries take it: [1, r_sph's bounds, Theta_R's bounds (each widened by the
        slack; ±inf where not given), 1 if Theta_R is given] for r_sph/Theta_R goals, [0, ...] (not theirs) else."""
        if not self.sphere_cone:
            return np.zeros(6)
        sph = self.sph_bounds if self.sph_bounds is not None else (-math.inf, math.inf)
        theta = self.theta_bounds if self.theta_bounds is not None else (-math.inf, math.inf)
        return np.array([1.0, sph[0] - VALID_SLACK, sph[1] + VALID_SLACK, theta[0] - VALID_SLACK,
                         theta[1] + VALID_SLACK, float(self.theta_bounds is not None)])  # fmt: skip

    def weighted(self, desired: np.ndarray, real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(residual, g): g is the diagonal of G, the weights of the components not yet satisfied."""
        if self.sphere_cone:
            return self._sphere_cone(desired, real)
        if self.fast:
            r = self._fast(desired, real)
        else:
            r = self.residual(self.tolerance, desired, real, self.margin) * _WEIGHTS
        return r, _WEIGHTS * (r != 0.0)

    def lm_terms(self, desired: np.ndarray) -> Terms:
        """For one goal, the function the IK loop calls per step: a TCP placement -> (residual, its squared norm,
        the row weights as a (6, 1) column). The same residual as ``weighted``; for goals of x/y/z/r_sph/Theta_R
        in scalar arithmetic (a handful of numpy calls per step instead of a dozen: they dominate its time)."""
        if self.sphere_cone:
            return _sphere_cone_terms(desired, self.sph, self.theta)
        if self.fast and not self.rot_box:
            return _box_terms(desired, self.box[:2], self.sph, self.theta)

        def general(M: pin.SE3) -> tuple[np.ndarray, float, np.ndarray]:
            r, g = self.weighted(desired, M.homogeneous)
            return r, float(r @ r), g[:, None]

        return general

    def lm_params(self, desired: np.ndarray) -> np.ndarray | None:
        """For one goal, what the compiled descents (:mod:`.ik_jit`) take for the residual of ``lm_terms`` (the
        layout is in that module's docstring); None for goals they do not handle (only the interpreted loop)."""
        template = self.__dict__.get("_lm_template")
        if template is None:
            template = self._lm_template = self._lm_static()
        if template.size == 0:
            return None
        out = template.copy()
        out[0:3], out[3:12] = desired[:3, 3], desired[:3, :3].reshape(9)
        return out

    def _lm_static(self) -> np.ndarray:
        """The parts of ``lm_params`` that do not depend on the goal (empty where the kernels do not handle it)."""
        if not self.sphere_cone and not (self.fast and not self.rot_box):
            return np.empty(0)
        out = np.zeros(26)
        if not self.sphere_cone:
            out[12:15], out[15:18], out[22] = self.box[0], self.box[1], 1.0
        out[18:20] = self.sph if self.sph is not None else (-math.inf, math.inf)
        out[20:22] = self.theta if self.theta is not None else (-math.inf, math.inf)
        out[23], out[24], out[25] = self.sph is not None, self.theta is not None, ANGLE_WEIGHT
        return out

    def _sphere_cone(self, desired: np.ndarray, real: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """r_sph and/or Theta_R only (most goals): the same residual as ``_fast``, computed in world axes (the
        distance and the angle do not depend on the frame) with a handful of operations."""
        out = np.zeros(6)
        g = np.zeros(6)
        sph, theta = self.sph, self.theta
        if sph is not None:
            e = real[:3, 3] - desired[:3, 3]
            d = math.sqrt(e @ e)
            if d > sph[1]:
                out[:3] = e * (1.0 - sph[1] / d)
                g[:3] = 1.0
            elif d < sph[0]:
                if d > 0.0:
                    out[:3] = e * (1.0 - sph[0] / d)
                    g[:3] = 1.0
        if theta is not None:
            w = pin.log3(real[:3, :3] @ desired[:3, :3].T)  # the rotation error in world axes
            th = math.sqrt(w @ w)
            target = theta[1] if th > theta[1] else (theta[0] if th < theta[0] else th)
            if th != target and th > 0.0:
                out[3:] = w * ((1.0 - target / th) * ANGLE_WEIGHT)
                g[3:] = ANGLE_WEIGHT
        return out, g

    def _fast(self, desired: np.ndarray, real: np.ndarray) -> np.ndarray:
        """The weighted residual in closed form (few, small numpy operations: this runs in every IK step)."""
        Rd = desired[:3, :3]
        e = (real[:3, 3] - desired[:3, 3]) @ Rd  # the position error in the nominal frame
        lo, hi, rlo, rhi = self.box
        pos = e - np.minimum(np.maximum(e, lo), hi)
        if self.sph is not None:
            r = math.sqrt(e @ e)
            target = min(max(r, self.sph[0]), self.sph[1])
            if r != target and r > 0.0:
                pos = _maxabs(pos, e * (1.0 - target / r))
        out = np.zeros(6)
        out[:3] = Rd @ pos
        if self.theta is not None or self.rot_box:
            w = pin.log3(Rd.T @ real[:3, :3])
            rot = w - np.minimum(np.maximum(w, rlo), rhi) if self.rot_box else None
            if self.theta is not None:
                th = math.sqrt(w @ w)
                target = min(max(th, self.theta[0]), self.theta[1])
                if th != target and th > 0.0:
                    cone = w * (1.0 - target / th)
                    rot = cone if rot is None else _maxabs(rot, cone)
            if rot is not None:
                out[3:] = (Rd @ rot) * ANGLE_WEIGHT
        return out


Bounds = tuple[float, float] | None


def _sphere_cone_terms(desired: np.ndarray, sph: Bounds, theta: Bounds) -> Terms:
    """``Projector.lm_terms`` of r_sph/Theta_R goals: distance and angle in world axes (as ``_sphere_cone``)."""
    px, py, pz = desired[:3, 3].tolist()
    RdT = np.ascontiguousarray(desired[:3, :3].T)
    s_lo, s_hi = sph if sph is not None else (-math.inf, math.inf)
    t_lo, t_hi = theta if theta is not None else (-math.inf, math.inf)
    rotation = theta is not None
    both, position, turn, neither = _PATTERNS[63], _PATTERNS[7], _PATTERNS[56], _PATTERNS[0]
    log3, array, sqrt = pin.log3, np.array, math.sqrt

    def sphere_cone(M: pin.SE3) -> tuple[np.ndarray, float, np.ndarray]:
        x, y, z = M.translation.tolist()
        x, y, z = x - px, y - py, z - pz
        d = sqrt(x * x + y * y + z * z)
        f = 1.0 - s_hi / d if d > s_hi else (1.0 - s_lo / d if 0.0 < d < s_lo else 0.0)
        x, y, z = x * f, y * f, z * f
        u = v = w = 0.0
        if rotation:
            u, v, w = log3(M.rotation @ RdT).tolist()  # the rotation error in world axes
            th = sqrt(u * u + v * v + w * w)
            target = t_hi if th > t_hi else (t_lo if th < t_lo else th)
            h = (1.0 - target / th) * ANGLE_WEIGHT if th != target and th > 0.0 else 0.0
            u, v, w = u * h, v * h, w * h
        cost = x * x + y * y + z * z + u * u + v * v + w * w
        column = (both if f != 0.0 else turn) if u or v or w else (position if f != 0.0 else neither)
        return array((x, y, z, u, v, w)), cost, column

    return sphere_cone


def _box_terms(desired: np.ndarray, box: tuple[np.ndarray, np.ndarray], sph: Bounds, theta: Bounds) -> Terms:
    """``Projector.lm_terms`` of goals with an x/y/z box (and r_sph, Theta_R) in the nominal frame (as ``_fast``;
    the cone's residual in world axes: R_d log(R_d^T R) = log(R R_d^T))."""
    px, py, pz = desired[:3, 3].tolist()
    (a, b, c), (d, e, f), (g, h, i) = desired[:3, :3].tolist()
    RdT = np.ascontiguousarray(desired[:3, :3].T)
    (lx, ly, lz), (hx, hy, hz) = box[0].tolist(), box[1].tolist()
    s_lo, s_hi = sph if sph is not None else (-math.inf, math.inf)
    t_lo, t_hi = theta if theta is not None else (-math.inf, math.inf)
    sphere, rotation = sph is not None, theta is not None
    log3, array, sqrt = pin.log3, np.array, math.sqrt

    def box_cone(M: pin.SE3) -> tuple[np.ndarray, float, np.ndarray]:
        x, y, z = M.translation.tolist()
        x, y, z = x - px, y - py, z - pz
        ex, ey, ez = a * x + d * y + g * z, b * x + e * y + h * z, c * x + f * y + i * z  # in the nominal frame
        bx = ex - lx if ex < lx else (ex - hx if ex > hx else 0.0)
        by = ey - ly if ey < ly else (ey - hy if ey > hy else 0.0)
        bz = ez - lz if ez < lz else (ez - hz if ez > hz else 0.0)
        if sphere:
            r = sqrt(ex * ex + ey * ey + ez * ez)
            target = s_lo if r < s_lo else (s_hi if r > s_hi else r)
            if r != target and r > 0.0:  # per axis, the larger of the box's and the sphere's residual
                k = 1.0 - target / r
                bx, by, bz = (v if abs(v) > abs(o) else o for v, o in ((ex * k, bx), (ey * k, by), (ez * k, bz)))
        x, y, z = a * bx + b * by + c * bz, d * bx + e * by + f * bz, g * bx + h * by + i * bz  # back to world axes
        u = v = w = 0.0
        if rotation:
            u, v, w = log3(M.rotation @ RdT).tolist()
            th = sqrt(u * u + v * v + w * w)
            target = t_hi if th > t_hi else (t_lo if th < t_lo else th)
            k = (1.0 - target / th) * ANGLE_WEIGHT if th != target and th > 0.0 else 0.0
            u, v, w = u * k, v * k, w * k
        cost = x * x + y * y + z * z + u * u + v * v + w * w
        bits = (x != 0.0) | (y != 0.0) << 1 | (z != 0.0) << 2 | (u != 0.0) << 3 | (v != 0.0) << 4 | (w != 0.0) << 5
        return array((x, y, z, u, v, w)), cost, _PATTERNS[bits]

    return box_cone


_PROJECTORS: dict[tuple[Any, float], Projector] = {}
_BY_ID: dict[int, tuple[Any, float, Projector]] = {}  # the same tolerance object again: no hashing (it is not free)


def projector(tolerance: Any, margin: float) -> Projector:
    """The projector of a tolerance, built once per (tolerance, margin): tolerances are immutable and hashable."""
    seen = _BY_ID.get(id(tolerance))
    if seen is not None and seen[0] is tolerance and seen[1] == margin:  # it holds the object: the id is not reused
        return seen[2]
    found = _projector(tolerance, margin)
    if len(_BY_ID) > 256:
        _BY_ID.clear()
    _BY_ID[id(tolerance)] = (tolerance, margin, found)
    return found


def _projector(tolerance: Any, margin: float) -> Projector:
    try:
        key = (tolerance, margin)
        found = _PROJECTORS.get(key)
    except TypeError:  # an unhashable tolerance-like object
        return Projector(tolerance, margin)
    if found is None:
        if len(_PROJECTORS) > 1024:
            _PROJECTORS.clear()
        found = _PROJECTORS[key] = Projector(tolerance, margin)
    return found


def _maxabs(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Component-wise, the entry of larger magnitude (combining never cancels)."""
    return np.where(np.abs(b) > np.abs(a), b, a)


def pose_residual(tolerance: Any, desired: np.ndarray, real: np.ndarray) -> np.ndarray:
    """The weighted projected error the IK drives to zero (zero where the tolerance is satisfied)."""
    return Projector(tolerance, 0.0)(desired, real)[0]
