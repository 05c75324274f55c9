"""Goal-pose tolerances (timor_core.kinematics.tolerance): projections by hand and against the reference toolbox's
values (sampling, validity and JSON: test_tolerance_sampling.py; the IK residual: test_tolerance_residual.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from tolerance_cases import PI, full, pose, values

from timor_core.kinematics.tolerance import (
    NOMINAL_FRAME,
    PROJECTIONS,
    WORLD_FRAME,
    Composed,
    Interval,
    ToleranceFrame,
    tolerance_from_json,
)

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
USER_STUDY = SHARED / "data" / "cobra" / "tasks" / "user_study.json"


ALL = Composed(full(p) for p in PROJECTIONS)


# ---------------------------------------------------------------------------------------------- hand-computed values


def test_projection_names():
    assert set(PROJECTIONS) == {
        *("x", "y", "z", "r_cyl", "phi_cyl", "r_sph", "theta", "phi_sph", "N_x", "N_y", "N_z", "Theta_R")
    }
    assert len(PROJECTIONS) == 12


def test_translation_projections_by_hand():
    v = values(np.eye(4), pose([0, 0, 0, 0.3, 0.4, 0]))
    assert v["x"] == pytest.approx(0.3) and v["y"] == pytest.approx(0.4) and v["z"] == 0
    assert v["r_cyl"] == pytest.approx(0.5)
    assert v["phi_cyl"] == pytest.approx(math.atan2(0.4, 0.3))
    assert v["r_sph"] == pytest.approx(0.5)
    assert v["theta"] == pytest.approx(PI / 2)
    assert v["phi_sph"] == pytest.approx(math.atan2(0.4, 0.3))
    assert v["Theta_R"] == 0 and v["N_x"] == v["N_y"] == v["N_z"] == 0


def test_spherical_by_hand():
    v = values(np.eye(4), pose([0, 0, 0, 0, -1, 1]))
    assert v["r_sph"] == pytest.approx(math.sqrt(2))
    assert v["theta"] == pytest.approx(PI / 4)
    assert v["phi_sph"] == pytest.approx(-PI / 2)
    assert v["r_cyl"] == pytest.approx(1.0) and v["z"] == pytest.approx(1.0)


def test_conventions_at_singular_points():
    origin = values(np.eye(4), np.eye(4))
    assert all(value == 0 for value in origin.values())
    on_z = values(np.eye(4), pose([0, 0, 0, 0, 0, -2]))  # on the axis: phi = 0, theta = pi
    assert on_z["phi_cyl"] == 0 and on_z["phi_sph"] == 0 and on_z["theta"] == pytest.approx(PI)
    neg_x = values(np.eye(4), pose([0, 0, 0, -1, -0.0, 0]))  # the -x half axis has phi = +pi, never -pi
    assert neg_x["phi_cyl"] == pytest.approx(PI) and neg_x["phi_sph"] == pytest.approx(PI)


def test_rotation_angle_about_an_oblique_axis():
    axis = np.array([1.0, 1.0, 0.0]) / math.sqrt(2)
    v = values(np.eye(4), pose([*(axis * PI / 6), 0, 0, 0]))
    assert v["Theta_R"] == pytest.approx(PI / 6)
    # N_* are the components of the rotation vector (axis * angle), as in the reference
    assert v["N_x"] == pytest.approx(PI / 6 / math.sqrt(2))
    assert v["N_y"] == pytest.approx(PI / 6 / math.sqrt(2))
    assert v["N_z"] == pytest.approx(0.0, abs=1e-15)
    assert v["r_sph"] == 0


def test_n_projections_are_rotation_vector_components_not_tilt_angles():
    tilt = values(np.eye(4), pose([math.radians(10), 0, 0, 0, 0, 0]))  # z axis tilted by 10 deg (about x)
    assert tilt["N_x"] == pytest.approx(math.radians(10))
    assert tilt["N_z"] == pytest.approx(0.0)
    spin = values(np.eye(4), pose([0, 0, math.radians(10), 0, 0, 0]))  # rotation about z by 10 deg
    assert spin["N_z"] == pytest.approx(math.radians(10))
    assert spin["Theta_R"] == pytest.approx(math.radians(10))


def test_rotation_angle_near_pi_and_zero():
    assert values(np.eye(4), pose([0, PI - 1e-9, 0, 0, 0, 0]))["Theta_R"] == pytest.approx(PI - 1e-9, abs=1e-12)
    assert values(np.eye(4), pose([1e-9, 0, 0, 0, 0, 0]))["Theta_R"] == pytest.approx(1e-9, rel=1e-6)
    near_pi = values(np.eye(4), pose([0, 0, -(PI - 1e-7), 0, 0, 0]))
    assert near_pi["N_z"] == pytest.approx(-(PI - 1e-7), abs=1e-9)


def test_error_is_expressed_in_the_nominal_frame_by_default():
    desired = pose([0, 0, PI / 2, 1, 2, 3])  # desired x axis = world y
    real = desired.copy()
    real[:3, 3] += [0.1, 0, 0]  # moved along world x = desired -y
    nominal = values(desired, real)
    assert nominal["x"] == pytest.approx(0) and nominal["y"] == pytest.approx(-0.1)
    world = values(desired, real, WORLD_FRAME)
    assert world["x"] == pytest.approx(0.1) and world["y"] == pytest.approx(0)
    # a rotation about the desired x axis is a rotation about world y
    real = desired @ pose([0.2, 0, 0, 0, 0, 0])
    assert values(desired, real)["N_x"] == pytest.approx(0.2)
    assert values(desired, real, WORLD_FRAME)["N_y"] == pytest.approx(0.2)
    assert values(desired, real, WORLD_FRAME)["Theta_R"] == pytest.approx(0.2)


def test_tolerance_is_relative_to_the_nominal_pose():
    tol = tolerance_from_json(["x", "y", "z"], [[-0.01, 0.01]] * 3)
    far = pose([0.3, -1, 2, 5, -7, 9])
    assert tol.valid(far, far @ pose([0, 0, 0, 0.005, 0, -0.005]))
    assert not tol.valid(far, np.eye(4))


# ------------------------------------------------------------------------------------------------- reference values
# Produced by the reference toolbox (timor-python 1.1.1) in its own venv, run offline via
# /work/shared/bench-ref/timor_offline.py: for each (desired, real) pair (rotation vector + translation, poses built
# with scipy's Rotation.from_rotvec), every projection was read from ``Tolerance.ToleranceBase.from_projection(p,
# full_range, frame)._projection(frame.rotate_to_this_frame(desired.inv @ real, desired))`` — exactly what its
# ``valid`` compares with the intervals — for the NOMINAL frame, the WORLD frame and a named frame (child of world at
# REFERENCE_NAMED_FRAME). Random pairs from numpy's default_rng(20240611), rounded to 6 decimals; case 0 is by hand.
# (desired rotvec+xyz, real rotvec+xyz, projections in PROJECTIONS order for the nominal, world and named frame)
# The table is tests/data/tolerance_reference.json ("cases"; "named_frame"; "validity": (desired, real, valid for
# the user-study tolerance, for r_sph+Theta_R, for N_z)).
REFERENCE = json.loads((Path(__file__).parent / "data" / "tolerance_reference.json").read_text(encoding="utf-8"))
REFERENCE_CASES = REFERENCE["cases"]
REFERENCE_NAMED_FRAME = REFERENCE["named_frame"]
REFERENCE_VALIDITY = REFERENCE["validity"]


@pytest.mark.parametrize("case", range(len(REFERENCE_CASES)))
def test_projections_agree_with_reference(case):
    desired, real, in_nominal, in_world, in_named = REFERENCE_CASES[case]
    D, R = pose(desired), pose(real)
    named = ToleranceFrame.fixed("f", pose(REFERENCE_NAMED_FRAME))
    for frame, expected in ((NOMINAL_FRAME, in_nominal), (WORLD_FRAME, in_world), (named, in_named)):
        got = Composed(full(p, frame) for p in PROJECTIONS).error(D, R)
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9, err_msg=f"frame {frame.name}")


@pytest.mark.parametrize("case", range(len(REFERENCE_VALIDITY)))
def test_validity_agrees_with_reference(case):
    desired, real, user_study, sph, n_z = REFERENCE_VALIDITY[case]
    D, R = pose(desired), pose(real)
    assert (
        tolerance_from_json(["x", "y", "z", "Theta_R"], [[-1e-3, 1e-3]] * 3 + [[0, PI / 4]]).valid(D, R) is user_study
    )
    assert tolerance_from_json(["r_sph", "Theta_R"], [[0, 0.01], [0, 0.1]]).valid(D, R) is sph
    assert tolerance_from_json(["N_z"], [[-0.2, 0.2]]).valid(D, R) is n_z


def test_named_frame_from_json():
    frame_pose = pose(REFERENCE_NAMED_FRAME)
    tol = tolerance_from_json(
        ["x", "N_z", "Theta_R"],
        [[-1, 1], [-3, 3], [0, 3]],
        frames=["f", "world", "nominal"],
        resolve_frame={"f": frame_pose}.__getitem__,
    )
    assert tol.frames == ("f", "world", "nominal")
    desired, real, _, in_world, in_named = REFERENCE_CASES[1]
    got = tol.error(pose(desired), pose(real))
    np.testing.assert_allclose(got, [in_named[0], in_world[10], in_world[11]], atol=1e-9)


def test_user_study_tolerance_parses():
    if not USER_STUDY.is_file():
        pytest.skip(f"CoBRA reference data not available (expected {USER_STUDY}); it lives in ../shared")
    task = json.loads(USER_STUDY.read_text())
    goals = [g for g in task["goals"] if "toleranceProjection" in g.get("goalPose", {})]
    assert goals
    for i, goal in enumerate(goals):
        spec = goal["goalPose"]
        tol = tolerance_from_json(spec["toleranceProjection"], spec["tolerance"], f"$.goals[{i}].goalPose")
        assert tol.projections == ("x", "y", "z", "Theta_R")
        assert tol.intervals[:3] == (Interval(-1e-3, 1e-3),) * 3
        assert tol.intervals[3].low == 0 and tol.intervals[3].high == pytest.approx(PI / 4)
        nominal = np.array(spec["nominal"], dtype=float)
        assert tol.valid(nominal, nominal @ pose([0, 0, math.radians(44), 0.9e-3, 0, 0]))
        assert not tol.valid(nominal, nominal @ pose([0, 0, math.radians(46), 0, 0, 0]))
        assert tol.valid(nominal, tol.sample(nominal, i))
