"""Joint-space trajectories and their time parametrization along piecewise-linear paths.

A :class:`Trajectory` holds positions, velocities and accelerations sampled at strictly increasing
times starting at 0. :func:`time_parametrize` turns a list of joint-space waypoints into a trajectory
that follows the straight segments between them exactly, within per-joint velocity and acceleration
limits.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.errors import FormatError, InputError
from timor_core.kinematics.segment_timing import checked_path, segment_timing
from timor_core.limits import check_count

__all__ = ["Trajectory", "time_parametrize", "MAX_TRAJECTORY_VALUE"]

_FIELDS = ("t", "q", "dq", "ddq")
MAX_TRAJECTORY_VALUE = 1e9
"""Largest magnitude of a trajectory's time, position, velocity or acceleration (s, rad or m, per s, per s²): far
beyond any robot, small enough that no difference, sum or plot axis of them overflows (a solution's ``ddq`` of
-1e308 made ``timor plot trajectory`` fail with an OverflowError)."""


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float)  # always a copy
    a.flags.writeable = False
    return a


def _check_arrays(t: np.ndarray, q: np.ndarray, dq: np.ndarray, ddq: np.ndarray, path: str | None) -> None:
    """Raise FormatError (naming the JSON path below ``path``) unless the arrays form a valid trajectory."""

    def where(field: str, index: tuple[int, ...] = ()) -> str | None:
        if path is None:
            return None
        return f"{path}.{field}" + "".join(f"[{i}]" for i in index)

    if t.ndim != 1 or t.size == 0:
        raise FormatError("expected a non-empty list of times", path=where("t"), value=t.tolist())
    n = t.size
    dof = q.shape[1] if q.ndim == 2 else None
    for name, a in (("q", q), ("dq", dq), ("ddq", ddq)):
        if a.ndim != 2 or a.shape[0] != n or a.shape[1] != dof:
            expected = f"{n}x{dof}" if dof is not None else f"{n} rows of equal length"
            raise FormatError(
                f"expected a {expected} array (one row per time, one column per joint), got shape {a.shape}",
                path=where(name),
            )
    for name, a in zip(_FIELDS, (t, q, dq, ddq)):
        bad = np.argwhere(~(np.abs(a) <= MAX_TRAJECTORY_VALUE))  # NaN too
        if bad.size:
            idx = tuple(int(i) for i in bad[0])
            why = (
                "expected a finite number"
                if not np.isfinite(a[idx])
                else f"expected a number of magnitude at most {MAX_TRAJECTORY_VALUE:g}"
            )
            raise FormatError(why, path=where(name, idx), value=float(a[idx]))
    if t[0] != 0.0:
        raise FormatError("the first time must be 0", path=where("t", (0,)), value=float(t[0]))
    steps = np.diff(t)
    if np.any(steps <= 0):
        i = int(np.argmax(steps <= 0)) + 1
        raise FormatError(
            f"times must be strictly increasing (t[{i}] = {t[i]!r} <= t[{i - 1}] = {t[i - 1]!r})",
            path=where("t", (i,)),
            value=float(t[i]),
        )


def _parse_array(value: Any, path: str, ndim: int) -> np.ndarray:
    """A nested JSON list of numbers as a float array of the given rank (no NaN check; that comes later)."""
    if ndim == 1:
        if not isinstance(value, list):
            raise FormatError("expected a list of numbers", path=path, value=value)
        out = np.empty(len(value))
        for i, v in enumerate(value):
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise FormatError("expected a number", path=f"{path}[{i}]", value=v)
            try:
                out[i] = float(v)
            except OverflowError:
                raise FormatError("number too large", path=f"{path}[{i}]", value=v) from None
        return out
    if not isinstance(value, list):
        raise FormatError("expected a list of rows (lists of numbers)", path=path, value=value)
    rows = [_parse_array(row, f"{path}[{i}]", 1) for i, row in enumerate(value)]
    if not rows:
        return np.empty((0, 0))
    width = len(rows[0])
    for i, row in enumerate(rows):
        if len(row) != width:
            raise FormatError(
                f"all rows must have the same length ({width} like row 0), row {i} has {len(row)}",
                path=f"{path}[{i}]",
                value=row.tolist(),
            )
    return np.vstack(rows) if width else np.empty((len(rows), 0))


@dataclass(frozen=True, eq=False)
class Trajectory:
    """A joint-space trajectory sampled at times ``t``.

    ``t`` is (N,) strictly increasing with ``t[0] == 0``; ``q``, ``dq`` and ``ddq`` are (N, dof) positions,
    velocities and accelerations. The arrays are read-only copies. Invalid arrays raise
    :class:`~timor_core.errors.FormatError`.
    """

    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray

    def __post_init__(self) -> None:
        arrays = [_readonly(getattr(self, name)) for name in _FIELDS]
        t, q, dq, ddq = arrays
        if t.ndim == 1 and q.ndim == 1 and q.size == t.size:  # 1-dof trajectory given as flat arrays
            q, dq, ddq = (a.reshape(-1, 1) if a.ndim == 1 else a for a in (q, dq, ddq))
        _check_arrays(t, q, dq, ddq, None)
        for name, a in zip(_FIELDS, (t, q, dq, ddq)):
            a.flags.writeable = False
            object.__setattr__(self, name, a)

    # -- description -------------------------------------------------------------------------------
    @property
    def duration(self) -> float:
        """Time of the last sample (s)."""
        return float(self.t[-1])

    @property
    def dof(self) -> int:
        """Number of joints."""
        return int(self.q.shape[1])

    def __len__(self) -> int:
        return int(self.t.size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Trajectory):
            return NotImplemented
        return all(np.array_equal(getattr(self, f), getattr(other, f)) for f in _FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __deepcopy__(self, memo: dict) -> Trajectory:
        """A copy with its own read-only arrays (a plain deepcopy would make them writeable)."""
        return Trajectory(self.t.copy(), self.q.copy(), self.dq.copy(), self.ddq.copy())

    def __repr__(self) -> str:
        return f"Trajectory(dof={self.dof}, samples={len(self)}, duration={self.duration:.4g} s)"

    # -- conveniences (as the reference's Trajectory offers them) -----------------------------------
    @classmethod
    def from_positions(cls, t, q) -> Trajectory:
        """A trajectory from positions alone: ``t`` the sample times (or one number, the time step) and ``q``
        (N, dof) or (N,) positions; velocities and accelerations by central differences (np.gradient)."""
        Q = np.asarray(q, dtype=float)
        if Q.ndim == 1:
            Q = Q.reshape(-1, 1)
        if np.ndim(t) == 0:
            step = float(t)
            if not (math.isfinite(step) and step > 0):
                raise InputError("the time step must be a positive finite number", value=t)
            times = np.arange(Q.shape[0], dtype=float) * step
        else:
            times = np.asarray(t, dtype=float)
        if times.shape != (Q.shape[0],):
            raise InputError(f"{Q.shape[0]} positions need {Q.shape[0]} times", value=np.shape(t))
        if Q.shape[0] < 2:
            dq = np.zeros_like(Q)
            return cls(times, Q, dq, dq.copy())
        if np.any(np.diff(times) <= 0):
            raise FormatError("sample times must be strictly increasing", value=times.tolist()[:10])
        dq = np.gradient(Q, times, axis=0)
        return cls(times, Q, dq, np.gradient(dq, times, axis=0))

    @classmethod
    def stationary(cls, duration: float, q, dt: float | None = None) -> Trajectory:
        """Rest at ``q`` for ``duration`` seconds: samples 0 and ``duration``, or every ``dt`` seconds up to the
        first multiple of ``dt`` not shorter than ``duration``; velocities and accelerations are zero."""
        duration = float(duration)
        if not (math.isfinite(duration) and duration >= 0):
            raise InputError("duration must be a finite number >= 0", value=duration)
        q = np.asarray(q, dtype=float).reshape(-1)
        if dt is None:
            t = np.array([0.0, duration]) if duration > 0 else np.zeros(1)
        else:
            dt = float(dt)
            if not (math.isfinite(dt) and dt > 0):
                raise InputError("dt must be a positive finite number", value=dt)
            n = math.ceil(duration / dt * (1 - 1e-12))
            check_count(n + 1, "max_trajectory_samples", f"resting {duration:.6g} s every {dt:g} s")
            t = np.arange(n + 1, dtype=float) * dt
        Q = np.repeat(q[None], t.size, axis=0)
        return cls(t, Q, np.zeros_like(Q), np.zeros_like(Q))

    def sample_index(self, time: float, tol: float = 1e-9) -> int:
        """The index of the sample at ``time`` (within ``tol``); InputError if no sample falls there."""
        i = int(np.argmin(np.abs(self.t - float(time))))
        if abs(self.t[i] - float(time)) > tol:
            raise InputError(f"no sample at t={float(time):.6g} s (nearest: {self.t[i]:.6g} s)", value=time)
        return i

    def tcp_poses(self, robot) -> np.ndarray:
        """The TCP pose (4x4) of ``robot`` at every sample: an (N, 4, 4) array."""
        return np.array([robot.fk(q) for q in self.q])

    def __add__(self, other: Trajectory) -> Trajectory:
        """``a + b`` plays b after a (see :meth:`concatenate`)."""
        if not isinstance(other, Trajectory):
            return NotImplemented
        return Trajectory.concatenate([self, other])

    def __getitem__(self, item: int | slice) -> Trajectory:
        """Samples ``item`` (an index or a slice with step 1) as a trajectory whose time starts at 0."""
        if isinstance(item, (int, np.integer)):
            item = slice(int(item), int(item) + 1 if item != -1 else None)
        if not isinstance(item, slice) or item.step not in (None, 1):
            raise InputError("index a trajectory with an integer or a slice of step 1", value=item)
        t = self.t[item]
        if t.size == 0:
            raise InputError("the slice selects no sample", value=item)
        return Trajectory(t - t[0], self.q[item], self.dq[item], self.ddq[item])

    # -- evaluation --------------------------------------------------------------------------------
    def at(self, time) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Interpolated ``(q, dq, ddq)`` at ``time`` (a scalar or an array of times).

        Positions use cubic Hermite interpolation with the sampled velocities (exact for piecewise
        quadratic motion such as :func:`time_parametrize` produces, and it keeps straight-line
        segments straight); velocities and accelerations are interpolated linearly, so they never
        exceed the sampled extremes. Times outside ``[0, duration]`` are clamped (the trajectory rests
        at its ends).
        """
        times = np.asarray(time, dtype=float)
        scalar = times.ndim == 0
        times = np.clip(np.atleast_1d(times).reshape(-1), 0.0, self.duration)
        if np.any(np.isnan(times)):
            raise InputError("time must not be NaN", value=time)
        t = self.t
        if t.size == 1:
            q, dq, ddq = (np.repeat(a, times.size, axis=0) for a in (self.q, self.dq, self.ddq))
        else:
            i = np.clip(np.searchsorted(t, times, side="right") - 1, 0, t.size - 2)
            h = (t[i + 1] - t[i])[:, None]
            u = ((times - t[i]) / h[:, 0])[:, None]
            q0, q1 = self.q[i], self.q[i + 1]
            v0, v1 = self.dq[i], self.dq[i + 1]
            u2, u3 = u * u, u * u * u
            q = (2 * u3 - 3 * u2 + 1) * q0 + (u3 - 2 * u2 + u) * h * v0 + (-2 * u3 + 3 * u2) * q1 + (u3 - u2) * h * v1
            exact_end = u[:, 0] == 1.0
            q[exact_end] = q1[exact_end]
            dq = (1 - u) * v0 + u * v1
            ddq = (1 - u) * self.ddq[i] + u * self.ddq[i + 1]
        if scalar:
            return q[0], dq[0], ddq[0]
        return q, dq, ddq

    def resample(self, dt: float) -> Trajectory:
        """The trajectory sampled every ``dt`` seconds from 0, plus the exact end time."""
        dt = float(dt)
        if not (math.isfinite(dt) and dt > 0):
            raise InputError("dt must be a positive finite number", value=dt)
        duration = self.duration
        n = math.ceil(duration / dt * (1 - 1e-12))  # number of steps; the last one may be shorter
        check_count(n + 1, "max_trajectory_samples", f"resampling {duration:.6g} s every {dt:g} s")
        times = np.arange(n + 1, dtype=float) * dt
        times[-1] = duration
        if n >= 1 and times[-1] <= times[-2]:  # rounding put the last regular sample on the end
            times = np.delete(times, -2)
        q, dq, ddq = self.at(times)
        q[0], dq[0], ddq[0] = self.q[0], self.dq[0], self.ddq[0]
        q[-1], dq[-1], ddq[-1] = self.q[-1], self.dq[-1], self.ddq[-1]
        return Trajectory(times, q, dq, ddq)

    # -- JSON --------------------------------------------------------------------------------------
    def to_json(self) -> dict:
        """``{"t": [...], "q": [[...], ...], "dq": ..., "ddq": ...}`` (plain lists, JSON-serializable)."""
        return {name: getattr(self, name).tolist() for name in _FIELDS}

    @classmethod
    def from_json(cls, d: Any, path: str = "$") -> Trajectory:
        """Read :meth:`to_json` output; bad data raises FormatError naming the JSON path below ``path``."""
        if not isinstance(d, dict):
            raise FormatError("expected a JSON object with fields t, q, dq, ddq", path=path, value=d)
        arrays = []
        for name in _FIELDS:
            if name not in d:
                raise FormatError(f"missing required field '{name}'", path=path)
            arrays.append(_parse_array(d[name], f"{path}.{name}", 1 if name == "t" else 2))
        t, q, dq, ddq = arrays
        _check_arrays(t, q, dq, ddq, path)
        return cls(t, q, dq, ddq)

    # -- composition -------------------------------------------------------------------------------
    @staticmethod
    def concatenate(trajs: Sequence[Trajectory], tol: float = 1e-9) -> Trajectory:
        """Play trajectories one after another.

        Each trajectory must start where the previous one ends (positions and velocities equal within
        ``tol``); its first sample is then dropped and its times are shifted by the previous end time.
        """
        trajs = list(trajs)
        if not trajs:
            raise InputError("nothing to concatenate (empty list of trajectories)")
        for k, tr in enumerate(trajs):
            if not isinstance(tr, Trajectory):
                raise InputError(f"item {k} is not a Trajectory", value=tr)
            if tr.dof != trajs[0].dof:
                raise InputError(f"trajectory {k} has {tr.dof} joints, trajectory 0 has {trajs[0].dof}")
        ts, qs, dqs, ddqs = [trajs[0].t], [trajs[0].q], [trajs[0].dq], [trajs[0].ddq]
        offset = trajs[0].duration
        for k in range(1, len(trajs)):
            prev, tr = trajs[k - 1], trajs[k]
            for name, a, b in (("position", prev.q[-1], tr.q[0]), ("velocity", prev.dq[-1], tr.dq[0])):
                if not np.allclose(a, b, rtol=0.0, atol=tol):
                    raise InputError(
                        f"trajectory {k} does not start at the {name} where trajectory {k - 1} ends "
                        f"({b.tolist()} != {a.tolist()})"
                    )
            ts.append(tr.t[1:] + offset)
            qs.append(tr.q[1:])
            dqs.append(tr.dq[1:])
            ddqs.append(tr.ddq[1:])
            offset += tr.duration
        return Trajectory(np.concatenate(ts), np.vstack(qs), np.vstack(dqs), np.vstack(ddqs))


# -- time parametrization --------------------------------------------------------------------------


def _limits(value, dof: int, name: str) -> np.ndarray:
    a = np.asarray(value, dtype=float).reshape(-1)
    if a.shape == (1,) and dof != 1:
        a = np.full(dof, a[0])
    if a.shape != (dof,):
        raise InputError(f"{name} must have {dof} entries (one per joint)", value=np.asarray(value).tolist())
    if np.any(np.isnan(a)) or np.any(a <= 0):
        raise InputError(f"{name} must be positive (inf for 'no limit')", value=a.tolist())
    return a


def effective_acceleration_limits(v_max, a_max, dt: float) -> np.ndarray:
    """The acceleration limits :func:`time_parametrize` uses: ``a_max``, with ``v_max / dt`` where it is infinite.

    An infinite acceleration limit is replaced by the acceleration that reaches full speed within one
    sample period — the fastest change a trajectory sampled at ``dt`` can represent.
    """
    v = np.asarray(v_max, dtype=float)
    a = np.asarray(a_max, dtype=float)
    return np.where(np.isinf(a), v / dt, a)


def time_parametrize(path, v_max, a_max, dt: float = 0.01) -> Trajectory:
    """Time a piecewise-linear joint path within per-joint velocity and acceleration limits.

    ``path`` is an (M, dof) array of waypoints. The motion follows each straight segment and stops at
    every waypoint: per segment, all joints share one trapezoidal (or, for short segments, triangular)
    velocity profile along the segment, with the largest cruise velocity and acceleration that keep
    every joint within ``v_max`` and ``a_max``. Each segment's duration is then rounded up to a whole
    number of samples (slowing it down uniformly, which only lowers velocities and accelerations), so
    the result is sampled on the uniform grid ``t = k * dt``, every waypoint is a sample, and the last
    sample is exactly the last waypoint at the exact end time.

    Infinite acceleration limits are treated as ``v_max / dt`` (see :func:`effective_acceleration_limits`);
    infinite velocity limits are allowed where the acceleration limit is finite. A joint with neither
    limit finite raises :class:`~timor_core.errors.InputError`. Consecutive duplicate waypoints are
    skipped. The sampled accelerations are right-continuous (the sample at a switch holds the
    acceleration of the phase that starts there; the last sample holds 0).
    """
    P, dt = checked_path(path, dt)
    dof = P.shape[1]
    v = _limits(v_max, dof, "v_max")
    a = _limits(a_max, dof, "a_max")
    both = np.isinf(v) & np.isinf(a)
    if np.any(both):
        raise InputError(
            f"joint(s) {np.flatnonzero(both).tolist()} have neither a finite velocity nor acceleration limit"
        )
    a = effective_acceleration_limits(v, a, dt)
    segments = [s for k in range(P.shape[0] - 1) if (s := segment_timing(P, k, v, a, dt)) is not None]
    total = sum(s.samples for s in segments)
    check_count(total + 1, "max_trajectory_samples", f"a timed motion of {total * dt:.6g} s at a time step of {dt:g} s")
    t = np.arange(total + 1, dtype=float) * dt
    q = np.empty((total + 1, dof))
    dq = np.zeros((total + 1, dof))
    ddq = np.zeros((total + 1, dof))
    i0 = 0
    for segment in segments:
        segment.sample(P, dt, q[i0:], dq[i0:], ddq[i0:])
        i0 += segment.samples
    q[-1] = P[-1]
    return Trajectory(t, q, dq, ddq)
