"""The timing of one straight segment of a joint path (for :func:`timor_core.kinematics.trajectory.time_parametrize`):
the fastest trapezoidal or triangular profile of its path parameter within per-joint velocity and acceleration
limits, stretched to whole time steps, and its samples."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.errors import InputError

__all__ = ["SegmentTiming", "checked_path", "segment_timing"]


def checked_path(path: Any, dt: Any) -> tuple[np.ndarray, float]:
    """The waypoints as an (M, dof) array and dt as a float, both checked."""
    P = np.array(path, dtype=float)
    if P.ndim == 1:
        P = P.reshape(1, -1)
    if P.ndim != 2 or P.shape[0] < 1 or P.shape[1] < 1:
        raise InputError("path must be an (M, dof) array of waypoints with M >= 1", value=np.shape(path))
    if not np.all(np.isfinite(P)):
        raise InputError("path waypoints must be finite", value=P.tolist())
    dt = float(dt)
    if not (math.isfinite(dt) and dt > 0):
        raise InputError("dt must be a positive finite number", value=dt)
    return P, dt


@dataclass(frozen=True)
class SegmentTiming:
    """The timed motion along path segment k (waypoint k to k + 1), in its path parameter s in [0, 1]: ``samples``
    time steps, a ``peak`` velocity, an acceleration ``A`` and the ``ramp`` time of speeding up and braking."""

    k: int
    delta: np.ndarray  # waypoint k + 1 minus waypoint k
    samples: int
    peak: float
    A: float
    ramp: float

    def sample(self, P: np.ndarray, dt: float, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray) -> None:
        """Write the segment's samples (its first ``samples`` rows of q, dq, ddq)."""
        n, A, ramp, peak, delta = self.samples, self.A, self.ramp, self.peak, self.delta
        T = n * dt
        tau = np.arange(n, dtype=float) * dt
        rest = T - tau
        accel = tau < ramp
        brake = rest <= ramp
        cruise = ~accel & ~brake
        s = np.where(accel, 0.5 * A * tau * tau, 0.5 * A * ramp * ramp + peak * (tau - ramp))
        sd = np.where(accel, A * tau, peak)
        sdd = np.where(accel, A, 0.0)
        sd = np.where(brake, A * rest, sd)
        sdd = np.where(brake, -A, np.where(cruise, 0.0, sdd))
        left = 0.5 * A * rest * rest  # remaining path parameter while braking (precise near the end)
        qs = np.where(brake[:, None], P[self.k + 1] - left[:, None] * delta, P[self.k] + s[:, None] * delta)
        qs[0] = P[self.k]
        q[:n] = qs
        dq[:n] = sd[:, None] * delta
        ddq[:n] = sdd[:, None] * delta


def segment_timing(P: np.ndarray, k: int, v: np.ndarray, a: np.ndarray, dt: float) -> SegmentTiming | None:
    """The fastest timing of segment k within the limits, stretched to whole samples (None: no motion)."""
    delta = P[k + 1] - P[k]
    moving = delta != 0
    if not np.any(moving):
        return None
    span = np.abs(delta[moving])
    with np.errstate(over="ignore"):  # a tiny segment may overflow the ratios to inf: capped below
        V = float(np.min(v[moving] / span))  # max d/dt of the path parameter s in [0, 1]
        A = float(np.min(a[moving] / span))  # max d²/dt² of s
    A = min(A, 1e300)  # a tiny segment can overflow the ratio; any finite bound is as good
    if V * V >= A:  # triangular: accelerate to the middle, then brake
        T = 2.0 / math.sqrt(A)
        n = max(1, math.ceil(T / dt * (1 - 1e-12)))
        Tn = n * dt  # stretched to whole samples: the triangle of this duration is slower still
        return SegmentTiming(k, delta, n, 2.0 / Tn, 4.0 / (Tn * Tn), 0.5 * Tn)
    ramp = V / A
    T = 1.0 / V + ramp
    n = max(1, math.ceil(T / dt * (1 - 1e-12)))
    scale = n * dt / T  # stretch time by this factor (>= 1 up to the rounding tolerance above)
    return SegmentTiming(k, delta, n, V / scale, A / (scale * scale), ramp * scale)
