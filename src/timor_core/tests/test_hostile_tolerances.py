"""Hostile goal tolerances (session 57): a finite length bound so large that its square overflows (an ``x``, ``y``,
``z`` tolerance of 1e308) is refused naming the task and the bound; before, ``timor solve`` ended in an internal
error (``OverflowError: Numerical result out of range`` of the IK's reach check, exit 3)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hostile import assert_clean_error, run_cli_here
from hypothesis import example, given, settings
from hypothesis import strategies as st

from timor_core.errors import ValidationError
from timor_core.kinematics.reach import position_slack, workspace_gap
from timor_core.kinematics.tolerance import tolerance_from_json
from timor_core.kinematics.tolerance_base import MAX_TOLERANCE_LENGTH

NOMINAL = [[0.0, 0.0, 1.0, 0.45], [0.0, 1.0, 0.0, 0.4], [-1.0, 0.0, 0.0, 0.65], [0.0, 0.0, 0.0, 1.0]]


def _task(tolerance: list[list[float]], projections=("x", "y", "z")) -> dict:
    pose = {"nominal": NOMINAL, "toleranceProjection": list(projections), "tolerance": tolerance}
    return {"header": {"ID": "t"}, "goals": [{"ID": "g1", "type": "at", "goalPose": pose}]}


@pytest.mark.parametrize("bound", [1e308, 1e200, 1.5e9])
def test_timor_solve_refuses_a_huge_length_bound_naming_task_and_bound(tmp_path, capsys, bound):
    (tmp_path / "task.json").write_text(json.dumps(_task([[-0.01, 0.01], [-0.01, 0.01], [-1.0, bound]])))
    args = ["solve", str(tmp_path / "task.json"), "--db", "robco_like", "--modules", "base", "J", "L_100", "gripper"]
    proc = run_cli_here(capsys, args)
    assert proc.returncode == 2
    assert_clean_error(proc, "task.json", "$.goals[0].goalPose.tolerance[2][1]", "at most 1e+09")
    assert "write 1e+09 for a one-sided bound" in proc.stderr  # JSON has no infinity: say what to write


def test_a_one_sided_bound_of_1e9_is_kept_and_solves(tmp_path, capsys):
    """What the refusal tells to write: ``z`` from -1 m up, with no practical upper bound, reaches the IK."""
    (tmp_path / "task.json").write_text(json.dumps(_task([[-0.01, 0.01], [-0.01, 0.01], [-1.0, 1e9]])))
    args = ["solve", str(tmp_path / "task.json"), "--db", "robco_like", "--modules", "base", "J", "L_100", "gripper"]
    proc = run_cli_here(capsys, args)
    assert proc.returncode in (0, 1) and "goal g1" in proc.stdout, proc.stderr


@pytest.mark.parametrize("projection", ["x", "y", "z", "r_cyl", "r_sph"])
def test_every_length_projection_is_bounded_and_infinity_still_means_no_bound(projection):
    low = 0.0 if projection.startswith("r_") else -MAX_TOLERANCE_LENGTH
    tolerance_from_json([projection], [[low, MAX_TOLERANCE_LENGTH]])  # at the bound: kept
    with pytest.raises(ValidationError, match="at most 1e\\+09") as info:
        tolerance_from_json([projection], [[low, 2 * MAX_TOLERANCE_LENGTH]])
    assert info.value.path == "$.tolerance[0][1]"
    unbounded = tolerance_from_json([projection], [[low, math.inf]])  # Python callers: infinity is no bound
    assert position_slack(unbounded) == math.inf


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.floats(allow_nan=False), st.floats(allow_nan=False)), min_size=3, max_size=3))
@example([(0.0, 0.0), (0.0, 0.0), (math.inf, math.inf)])  # no finite value: refused without a path before
def test_any_xyz_bounds_are_refused_or_give_a_reach_check_without_overflow(bounds):
    intervals = [sorted(b) for b in bounds]
    try:
        tolerance = tolerance_from_json(["x", "y", "z"], intervals)
    except ValidationError as exc:
        assert exc.path is not None and exc.path.startswith("$.tolerance[")
        return
    slack = position_slack(tolerance)
    assert slack >= 0.0
    assert workspace_gap([0.0, 0.0, 0.0], 1.0, np.array(NOMINAL), tolerance) >= 0.0
