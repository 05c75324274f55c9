"""Trajectories (timor_core.kinematics.trajectory): time parametrization of a path (known profiles, infinite
limits, and a property test that the result respects the limits and follows the path), interpolation,
concatenation and CoBRA JSON with errors that name the path."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core.errors import FormatError, InputError
from timor_core.kinematics.trajectory import Trajectory, effective_acceleration_limits, time_parametrize

# -- time parametrization --------------------------------------------------------------------------


def test_time_parametrize_known_profiles():
    # triangle: distance 1, v 1, a 1 -> 2 s, peak velocity 1
    tr = time_parametrize([[0.0], [1.0]], [1.0], [1.0], dt=0.01)
    assert tr.duration == pytest.approx(2.0)
    assert np.max(tr.dq) == pytest.approx(1.0, abs=1e-9)
    assert tr.q[-1, 0] == 1.0 and tr.dq[-1, 0] == 0.0 and tr.ddq[-1, 0] == 0.0
    # trapezoid: distance 4 -> 1 s ramps, 3 s cruise
    tr = time_parametrize([[0.0], [-4.0]], [1.0], [1.0], dt=0.01)
    assert tr.duration == pytest.approx(5.0)
    assert tr.at(2.5)[0][0] == pytest.approx(-2.0)
    assert tr.at(2.5)[1][0] == pytest.approx(-1.0)
    assert tr.at(0.5)[0][0] == pytest.approx(-0.125)
    # synchronized joints: the slower joint sets the pace, the other follows the line
    tr = time_parametrize([[0.0, 0.0], [4.0, 1.0]], [1.0, 1.0], [1.0, 1.0], dt=0.01)
    assert tr.duration == pytest.approx(5.0)
    assert np.allclose(tr.q[:, 1] * 4, tr.q[:, 0])
    # a single waypoint or repeated waypoints
    tr = time_parametrize([[1.0, 2.0]], [1.0, 1.0], [1.0, 1.0])
    assert len(tr) == 1 and tr.duration == 0.0
    tr = time_parametrize([[0.0], [0.0], [1.0], [1.0]], [1.0], [1.0])
    assert tr.duration == pytest.approx(2.0)


def test_time_parametrize_infinite_limits():
    dt = 0.01
    tr = time_parametrize([[0.0], [1.0]], [2.0], [np.inf], dt=dt)
    assert np.max(np.abs(tr.ddq)) <= 2.0 / dt * (1 + 1e-9)
    assert tr.duration == pytest.approx(0.5 + dt, abs=dt)  # nearly bang-bang in velocity
    assert np.array_equal(effective_acceleration_limits([2.0, 1.0], [np.inf, 3.0], dt), [200.0, 3.0])
    tr = time_parametrize([[0.0, 0.0], [1.0, 1.0]], [np.inf, 1.0], [1.0, 1.0], dt=dt)  # inf velocity is fine
    assert tr.duration == pytest.approx(2.0)
    with pytest.raises(InputError, match="neither"):
        time_parametrize([[0.0], [1.0]], [np.inf], [np.inf])
    with pytest.raises(InputError):
        time_parametrize([[0.0], [1.0]], [0.0], [1.0])
    with pytest.raises(InputError):
        time_parametrize([[0.0], [1.0]], [1.0, 1.0], [1.0])
    with pytest.raises(InputError):
        time_parametrize([[0.0], [np.nan]], [1.0], [1.0])
    with pytest.raises(InputError):
        time_parametrize([[0.0], [1.0]], [1.0], [1.0], dt=0.0)


@st.composite
def timing_problems(draw):
    dof = draw(st.integers(1, 4))
    m = draw(st.integers(1, 6))
    coord = st.floats(-3.0, 3.0, allow_nan=False)
    path = np.array(draw(st.lists(st.lists(coord, min_size=dof, max_size=dof), min_size=m, max_size=m)))
    if m > 2 and draw(st.booleans()):
        path[1] = path[0]  # a repeated waypoint
    if dof > 1 and draw(st.booleans()):
        path[:, 0] = path[0, 0]  # a joint that never moves
    v = np.array(draw(st.lists(st.floats(0.2, 10.0), min_size=dof, max_size=dof)))
    a = np.array(draw(st.lists(st.one_of(st.floats(0.2, 100.0), st.just(math.inf)), min_size=dof, max_size=dof)))
    dt = draw(st.sampled_from([0.001, 0.004, 0.01, 0.05]))
    return path, v, a, dt


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(timing_problems())
def test_time_parametrize_respects_limits_and_follows_the_path(problem):
    path, v, a, dt = problem
    tr = time_parametrize(path, v, a, dt)
    a_eff = effective_acceleration_limits(v, a, dt)
    tol = 1 + 1e-9
    # uniform grid ending exactly at the last waypoint, at rest at both ends
    assert tr.t[0] == 0.0
    assert np.allclose(np.diff(tr.t), dt, rtol=0, atol=1e-12 * max(1.0, tr.duration))
    assert np.array_equal(tr.q[0], path[0]) and np.array_equal(tr.q[-1], path[-1])
    assert np.all(tr.dq[0] == 0) and np.all(tr.dq[-1] == 0)
    # limits, on the samples and between them
    assert np.all(np.abs(tr.dq) <= v * tol)
    assert np.all(np.abs(tr.ddq) <= a_eff * tol)
    if len(tr) > 1:
        dq_fd = np.diff(tr.q, axis=0) / dt
        ddq_fd = np.diff(tr.dq, axis=0) / dt
        assert np.all(np.abs(dq_fd) <= v * tol + 1e-12)
        assert np.all(np.abs(ddq_fd) <= a_eff * tol + 1e-9)
        # q and dq agree: the trapezoid rule on a velocity with bounded slope
        trap = np.diff(tr.q, axis=0) - 0.5 * (tr.dq[1:] + tr.dq[:-1]) * dt
        assert np.all(np.abs(trap) <= a_eff * dt * dt / 4 + 1e-9)
    # every waypoint is a sample, in order, and the motion between two waypoints stays on their segment
    idx = []
    start = 0
    for w in path:
        hits = np.flatnonzero(np.all(tr.q[start:] == w, axis=1))
        assert hits.size, f"waypoint {w} not passed"
        idx.append(start + int(hits[0]))
        start = idx[-1]
    for k in range(len(path) - 1):
        seg = tr.q[idx[k] : idx[k + 1] + 1]
        d = path[k + 1] - path[k]
        if not np.any(d):
            continue
        j = int(np.argmax(np.abs(d)))
        s = (seg[:, j] - path[k, j]) / d[j]
        assert np.all(s >= -1e-9) and np.all(s <= 1 + 1e-9)
        assert np.allclose(seg, path[k] + s[:, None] * d, atol=1e-9)
        assert np.all(np.diff(s) >= -1e-12)  # never backwards
    # no slower than per-segment minimum time plus rounding to whole samples
    bound = 0.0
    for k in range(len(path) - 1):
        d = np.abs(path[k + 1] - path[k])
        if not np.any(d):
            continue
        m = d > 0
        V, A = np.min(v[m] / d[m]), np.min(a_eff[m] / d[m])
        bound += 2 / math.sqrt(A) if V >= math.sqrt(A) else 1 / V + V / A  # V*V may overflow for tiny steps
        bound += dt
    assert tr.duration <= bound + 1e-9


# -- Trajectory ------------------------------------------------------------------------------------


def sample_trajectory() -> Trajectory:
    return time_parametrize([[0.0, 0.0], [1.0, -0.5], [1.5, 0.5]], [1.0, 2.0], [3.0, 4.0], dt=0.05)


def test_trajectory_basics_and_interpolation():
    tr = sample_trajectory()
    assert tr.dof == 2 and len(tr) == tr.t.size and tr.duration == tr.t[-1]
    with pytest.raises(ValueError):
        tr.q[0, 0] = 5.0  # read-only
    q, dq, ddq = tr.at(tr.t[7])
    assert np.allclose(q, tr.q[7]) and np.allclose(dq, tr.dq[7]) and np.allclose(ddq, tr.ddq[7])
    Q, _, _ = tr.at([-1.0, tr.duration + 1.0])
    assert np.array_equal(Q, [tr.q[0], tr.q[-1]])
    assert time_parametrize([[0.0, 0.0], [1.0, -0.5], [1.5, 0.5]], [1.0, 2.0], [3.0, 4.0], dt=0.05) == tr
    # positions between samples are exact for the piecewise-quadratic motion of a trapezoid
    # (distance 4, v = a = 1: accelerate for 1 s, cruise 3 s, brake 1 s; samples every 0.1 s)
    trap = time_parametrize([[0.0], [4.0]], [1.0], [1.0], dt=0.1)
    for t, q, dq in [
        (0.55, 0.5 * 0.55**2, 0.55),
        (0.95, 0.5 * 0.95**2, 0.95),
        (2.55, 2.05, 1.0),
        (4.75, 3.96875, 0.25),
    ]:
        assert trap.at(t)[0][0] == pytest.approx(q, abs=1e-12)
        assert trap.at(t)[1][0] == pytest.approx(dq, abs=1e-12)

    r = tr.resample(0.013)
    assert r.duration == tr.duration
    assert np.allclose(np.diff(r.t)[:-1], 0.013)
    assert 0 < np.diff(r.t)[-1] <= 0.013 + 1e-12
    assert np.array_equal(r.q[-1], tr.q[-1]) and np.array_equal(r.q[0], tr.q[0])
    assert np.all(np.abs(r.dq) <= np.abs(tr.dq).max(axis=0) + 1e-12)


def test_trajectory_concatenate():
    a = time_parametrize([[0.0], [1.0]], [1.0], [1.0], dt=0.1)
    b = time_parametrize([[1.0], [0.0]], [1.0], [1.0], dt=0.1)
    ab = Trajectory.concatenate([a, b])
    assert len(ab) == len(a) + len(b) - 1
    assert ab.duration == pytest.approx(a.duration + b.duration)
    assert np.all(np.diff(ab.t) > 0)
    assert np.array_equal(ab.q[-1], [0.0])
    with pytest.raises(InputError, match="does not start at the position"):
        Trajectory.concatenate([a, a])
    with pytest.raises(InputError):
        Trajectory.concatenate([])


def test_trajectory_json_round_trip():
    tr = sample_trajectory()
    back = Trajectory.from_json(json.loads(json.dumps(tr.to_json())))
    assert back == tr
    assert set(tr.to_json()) == {"t", "q", "dq", "ddq"}
    single = Trajectory.from_json({"t": [0], "q": [[1, 2]], "dq": [[0, 0]], "ddq": [[0, 0]]})
    assert single.dof == 2 and single.duration == 0.0


def _good() -> dict:
    return {"t": [0.0, 0.5, 1.0], "q": [[0, 0], [1, 1], [2, 2]], "dq": [[0, 0]] * 3, "ddq": [[0, 0]] * 3}


def _with(**changes) -> dict:
    d = _good()
    d.update(changes)
    return d


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ([1, 2], "$"),
        ({k: v for k, v in _good().items() if k != "dq"}, "$"),
        (_with(t="0 1 2"), "$.t"),
        (_with(t=[0.0, True, 1.0]), "$.t[1]"),
        (_with(t=[]), "$.t"),
        (_with(t=[0.0, 0.5, 0.5]), "$.t[2]"),
        (_with(t=[0.0, 0.7, 0.5]), "$.t[2]"),
        (_with(t=[0.1, 0.5, 1.0]), "$.t[0]"),
        (_with(t=[0.0, float("nan"), 1.0]), "$.t[1]"),
        (_with(q=[[0, 0], [1, 1]]), "$.q"),
        (_with(q=[[0, 0], [1], [2, 2]]), "$.q[1]"),
        (_with(q=[[0, 0], [1, "1"], [2, 2]]), "$.q[1][1]"),
        (_with(q=[0, 1, 2]), "$.q[0]"),
        (_with(dq=[[0, 0, 0]] * 3), "$.dq"),
        (_with(ddq=[[0, 0], [0, float("inf")], [0, 0]]), "$.ddq[1][1]"),
        (_with(dq=[[0, 0], [float("nan"), 0], [0, 0]]), "$.dq[1][0]"),
    ],
)
def test_trajectory_bad_json_raises_format_error_with_path(data, path):
    with pytest.raises(FormatError) as info:
        Trajectory.from_json(data)
    assert info.value.path == path
    assert path in str(info.value)


def test_trajectory_json_path_prefix_and_constructor_checks():
    with pytest.raises(FormatError) as info:
        Trajectory.from_json(_with(t=[0.0, 0.7, 0.5]), path="$.tasks[0].trajectory")
    assert info.value.path == "$.tasks[0].trajectory.t[2]"
    with pytest.raises(FormatError, match="strictly increasing"):
        Trajectory(np.array([0.0, 0.0]), np.zeros((2, 1)), np.zeros((2, 1)), np.zeros((2, 1)))
    with pytest.raises(FormatError):
        Trajectory(np.array([0.0, 1.0]), np.zeros((3, 1)), np.zeros((2, 1)), np.zeros((2, 1)))
    flat = Trajectory(np.array([0.0, 1.0]), np.zeros(2), np.zeros(2), np.zeros(2))
    assert flat.q.shape == (2, 1)
