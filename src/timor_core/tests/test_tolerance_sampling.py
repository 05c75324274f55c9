"""Goal-pose tolerances (timor_core.kinematics.tolerance): sampling valid poses, validity and violation of composed
tolerances (property tests), the default tolerance, and JSON with typed errors naming the path."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation
from tolerance_cases import PI, RANGE, feasible, frames, pose, poses

from timor_core.errors import FormatError, InputError, TimorError, ValidationError
from timor_core.kinematics.tolerance import (
    DEFAULT_TOLERANCE,
    PROJECTIONS,
    Composed,
    Interval,
    ProjectionTolerance,
    Tolerance,
    tolerance_from_json,
)

# ------------------------------------------------------------------------------------------------------- strategies


def bounds(projection: str, lo_min: float = -1.0, hi_max: float = 1.0):
    """Intervals [low, high] inside the projection's range (lengths within ±1 m, sometimes unbounded)."""
    lo, hi = RANGE[projection]
    if math.isinf(hi):
        lo = max(lo, lo_min)
        ends = st.floats(lo, hi_max) | st.just(math.inf) | (st.just(-math.inf) if lo < 0 else st.just(lo))
    else:
        ends = st.floats(lo, hi)
    return st.tuples(ends, ends).map(sorted).map(tuple).filter(lambda b: b[0] < math.inf and b[1] > -math.inf)


@st.composite
def single(draw, names=PROJECTIONS):
    name = draw(st.sampled_from(names))
    low, high = draw(bounds(name))
    return ProjectionTolerance(name, Interval(low, high), draw(frames))


def is_rigid(T: np.ndarray) -> bool:
    R = T[:3, :3]
    return (
        np.allclose(R.T @ R, np.eye(3), atol=1e-9) and np.isclose(np.linalg.det(R), 1) and (T[3] == [0, 0, 0, 1]).all()
    )


# --------------------------------------------------------------------------------------------------------- sampling


@settings(max_examples=300, deadline=None)
@given(tol=single(), desired=poses, seed=st.integers(0, 2**32 - 1))
def test_sample_is_valid_single_projection(tol, desired, seed):
    T = tol.sample(desired, np.random.default_rng(seed))
    assert is_rigid(T)
    assert tol.valid(desired, T), (tol, tol.error(desired, T))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=feasible(), seed=st.integers(0, 2**32 - 1))
def test_sample_is_valid_composed(case, seed):
    desired, tol = case
    T = tol.sample(desired, seed)
    assert is_rigid(T)
    assert tol.valid(desired, T), (tol, tol.error(desired, T))


def test_sample_spreads_over_the_tolerance():
    tol = tolerance_from_json(["x", "y", "z", "Theta_R"], [[-1e-3, 1e-3]] * 3 + [[0, PI / 4]])
    desired = pose([0.1, 0.2, 0.3, 1, 1, 1])
    rng = np.random.default_rng(0)
    errors = np.array([tol.error(desired, tol.sample(desired, rng)) for _ in range(400)])
    assert errors[:, :3].min() < -0.8e-3 and errors[:, :3].max() > 0.8e-3
    assert errors[:, 3].max() > 0.7 and errors[:, 3].min() < 0.1


def test_sample_defaults_leave_unconstrained_families_at_nominal():
    desired = pose([0.1, 0.2, 0.3, 1, 1, 1])
    T = tolerance_from_json(["Theta_R"], [[0.1, 0.2]]).sample(desired, 1)
    np.testing.assert_array_equal(T[:3, 3], desired[:3, 3])
    T = tolerance_from_json(["r_sph"], [[0.1, 0.2]]).sample(desired, 1)
    np.testing.assert_array_equal(T[:3, :3], desired[:3, :3])


def test_sample_of_contradictory_tolerance_raises():
    # one projection twice with disjoint intervals is refused when read (issue 12: it was "valid")
    with pytest.raises(ValidationError, match="disjoint"):
        tolerance_from_json(["x", "x"], [[0.1, 0.2], [0.3, 0.4]])
    overlapping = tolerance_from_json(["x", "x"], [[0.1, 0.3], [0.2, 0.4]])  # the intersection [0.2, 0.3]
    assert 0.2 <= overlapping.sample(np.eye(4), 0)[0, 3] <= 0.3
    tol = tolerance_from_json(["r_sph", "x"], [[0, 0.1], [0.3, 0.4]])
    with pytest.raises(TimorError):
        tol.sample(np.eye(4), 0, max_attempts=200)


# ---------------------------------------------------------------------------------------------- validity invariants


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(PROJECTIONS), data=st.data(), desired=poses, frame=frames)
def test_zero_deviation_lies_in_every_interval_containing_zero(name, data, desired, frame):
    low, high = data.draw(bounds(name))
    assume(low <= 0 <= high)
    tol = ProjectionTolerance(name, Interval(low, high), frame)
    assert tol.error(desired, desired)[0] == 0
    assert tol.valid(desired, desired)
    assert tol.violation(desired, desired)[0] == 0


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(single(), min_size=1, max_size=4), desired=poses, offset=poses)
def test_composed_validity_is_the_and_of_its_parts(parts, desired, offset):
    real = desired @ pose([*(Rotation.from_matrix(offset[:3, :3]).as_rotvec() / 2), *(offset[:3, 3] / 4)])
    composed = Composed(parts)
    assert composed.valid(desired, real) == all(p.valid(desired, real) for p in parts)
    both = parts[0] & composed
    assert isinstance(both, Composed)
    unique = [p for i, p in enumerate([parts[0], *parts]) if p not in [parts[0], *parts][:i]]
    assert both.parts == tuple(unique)  # a part given twice is kept once
    assert both.valid(desired, real) == composed.valid(desired, real)
    np.testing.assert_array_equal(composed.error(desired, real), [p.error(desired, real)[0] for p in composed.parts])


@settings(max_examples=200, deadline=None)
@given(tol=single(), desired=poses, offset=poses)
def test_violation_is_zero_inside_and_the_distance_beyond_the_bound_outside(tol, desired, offset):
    real = desired @ offset
    value = tol.error(desired, real)[0]
    v = tol.violation(desired, real)[0]
    iv = tol.interval
    if iv.low <= value <= iv.high:
        assert v == 0
    else:
        assert v == pytest.approx(value - iv.high if value > iv.high else value - iv.low)
        assert not tol.valid(desired, real) or abs(v) <= 1e-12


def test_empty_composed_is_always_valid_and_and_rejects_other_types():
    assert Composed().valid(np.eye(4), pose([1, 2, 3, 4, 5, 6]))
    with pytest.raises(TypeError):
        _ = DEFAULT_TOLERANCE & 3


def test_default_tolerance():
    assert DEFAULT_TOLERANCE.projections == ("x", "y", "z", "Theta_R")
    assert DEFAULT_TOLERANCE.intervals[:3] == (Interval(-1e-4, 1e-4),) * 3
    assert DEFAULT_TOLERANCE.intervals[3] == Interval(0, math.radians(0.1))
    desired = pose([0.3, 0.2, 0.1, 0.5, 0.5, 0.5])
    assert DEFAULT_TOLERANCE.valid(desired, desired @ pose([0, math.radians(0.09), 0, 0.9e-4, -0.9e-4, 0]))
    assert not DEFAULT_TOLERANCE.valid(desired, desired @ pose([0, math.radians(0.11), 0, 0, 0, 0]))
    assert not DEFAULT_TOLERANCE.valid(desired, desired @ pose([0, 0, 0, 0, 0, 1.1e-4]))


# ------------------------------------------------------------------------------------------------------------- JSON


@pytest.mark.parametrize("name", PROJECTIONS)
def test_json_round_trip_of_every_projection(name):
    lo, hi = RANGE[name]
    interval = [max(lo, -0.25), min(hi, 0.5)] if name not in ("Theta_R", "theta") else [0.125, 0.5]
    tol = tolerance_from_json([name], [interval], "$.goals[0].goal")
    assert isinstance(tol, ProjectionTolerance) and tol.projection == name
    projections, intervals = tol.to_json()
    assert (projections, intervals) == ([name], [interval])
    again = json.loads(json.dumps({"toleranceProjection": projections, "tolerance": intervals}))
    assert tolerance_from_json(again["toleranceProjection"], again["tolerance"]) == tol


def test_json_round_trip_composed():
    projections = ["x", "y", "z", "r_sph", "theta", "N_z", "Theta_R"]
    intervals = [[-1e-3, 1e-3], [-2e-3, 0], [0, 5e-3], [0, 0.01], [0, 1.5], [-0.2, 0.1], [0, 0.5]]
    tol = tolerance_from_json(projections, intervals)
    assert isinstance(tol, Composed) and isinstance(tol, Tolerance)
    assert tol.to_json() == (projections, intervals)
    assert tolerance_from_json(*tol.to_json()) == tol
    assert tol.frames == ("nominal",) * 7
    assert tolerance_from_json([], []) == Composed()


@pytest.mark.parametrize(
    ("projections", "intervals", "error", "path", "value"),
    [
        (["x", "rho"], [[0, 1], [0, 1]], FormatError, "$.g.toleranceProjection[1]", "rho"),
        ([3], [[0, 1]], FormatError, "$.g.toleranceProjection[0]", 3),
        (["x"], [[0, 1, 2]], FormatError, "$.g.tolerance[0]", [0, 1, 2]),
        (["x"], [0.1], FormatError, "$.g.tolerance[0]", 0.1),
        (["x"], [["a", 1]], FormatError, "$.g.tolerance[0][0]", "a"),
        (["x"], [[0, True]], FormatError, "$.g.tolerance[0][1]", True),
        (["x", "y"], [[0, 1]], FormatError, "$.g.tolerance", [[0, 1]]),
        ("x", [[0, 1]], FormatError, "$.g.toleranceProjection", "x"),
        (["x"], {"x": [0, 1]}, FormatError, "$.g.tolerance", {"x": [0, 1]}),
        (["y"], [[0.2, 0.1]], ValidationError, "$.g.tolerance[0]", [0.2, 0.1]),
        (["z"], [[math.nan, 0.1]], ValidationError, "$.g.tolerance[0][0]", math.nan),
        (["r_cyl"], [[-0.1, 0.1]], ValidationError, "$.g.tolerance[0][0]", -0.1),
        (["r_sph"], [[-0.1, 0.1]], ValidationError, "$.g.tolerance[0][0]", -0.1),
        (["Theta_R"], [[-0.1, 0.1]], ValidationError, "$.g.tolerance[0][0]", -0.1),
        (["Theta_R"], [[0, 4]], ValidationError, "$.g.tolerance[0][1]", 4),
        (["theta"], [[-0.5, 1]], ValidationError, "$.g.tolerance[0][0]", -0.5),
        (["phi_cyl"], [[-4, 1]], ValidationError, "$.g.tolerance[0][0]", -4),
        (["N_y"], [[0, math.inf]], ValidationError, "$.g.tolerance[0][1]", math.inf),
    ],
)
def test_bad_json_raises_typed_errors_naming_the_path(projections, intervals, error, path, value):
    with pytest.raises(error) as info:
        tolerance_from_json(projections, intervals, "$.g")
    assert info.value.path == path
    if isinstance(value, float) and math.isnan(value):
        assert math.isnan(info.value.value)
    else:
        assert info.value.value == value
    assert path in str(info.value)
    assert isinstance(info.value, InputError) and isinstance(info.value, ValueError)


def test_bad_frames_raise_typed_errors():
    with pytest.raises(FormatError) as info:
        tolerance_from_json(["x", "y"], [[0, 1], [0, 1]], "$.g", frames=["nominal", "table"])
    assert info.value.path == "$.g.toleranceFrame[1]" and info.value.value == "table"
    with pytest.raises(FormatError) as info:
        tolerance_from_json(["x", "y"], [[0, 1], [0, 1]], "$.g", frames=["nominal"])
    assert info.value.path == "$.g.toleranceFrame"
    with pytest.raises(FormatError) as info:
        tolerance_from_json(["x"], [[0, 1]], "$.g", frames=["nope"], resolve_frame={}.__getitem__)
    assert info.value.path == "$.g.toleranceFrame[0]"


def test_direct_construction_validates():
    with pytest.raises(ValidationError):
        Interval(1.0, 0.0)
    with pytest.raises(ValidationError):
        Interval(math.nan, 0.0)
    with pytest.raises(ValidationError):
        Interval(math.inf, math.inf)
    with pytest.raises(FormatError):
        ProjectionTolerance("w", Interval(0, 1))
    with pytest.raises(ValidationError):
        ProjectionTolerance("r_cyl", Interval(-1, 1))
    assert ProjectionTolerance("x", (0, 1)).interval == Interval(0.0, 1.0)
    assert ProjectionTolerance("Theta_R", Interval(0, 3.1416)).interval.high == 3.1416  # rounded pi is accepted
    assert ProjectionTolerance("x", Interval(-math.inf, math.inf)).valid(np.eye(4), pose([0, 0, 0, 1e9, 0, 0]))
    with pytest.raises(InputError):
        ProjectionTolerance("x", (0, 1)).valid(np.eye(3), np.eye(4))
