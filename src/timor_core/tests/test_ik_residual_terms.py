"""The IK loop's fast parts: its scalar residual (Projector.lm_terms) agrees with the reference form
(Projector.weighted), the batched random starts are the same numbers as one draw at a time, and crossing the gap
between a joint's limits keeps solutions valid."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest

from timor_core import ModuleAssembly, ModulesDB
from timor_core.kinematics.ik_residual import projector
from timor_core.kinematics.tolerance import Composed, ProjectionTolerance, tolerance_from_json

TOLERANCES = {
    "sphere and cone": Composed([ProjectionTolerance("r_sph", (0.0, 0.01)), ProjectionTolerance("Theta_R", (0, 0.1))]),
    "shell and ring": Composed([ProjectionTolerance("r_sph", (0.02, 0.05)), ProjectionTolerance("Theta_R", (0.1, 1))]),
    "sphere only": ProjectionTolerance("r_sph", (0.0, 0.03)),
    "cone only": ProjectionTolerance("Theta_R", (0.0, 0.2)),
    "box and cone": tolerance_from_json(["x", "y", "z", "Theta_R"], [[-0.001, 0.001]] * 3 + [[0.0, math.pi / 4]]),
}


@pytest.mark.parametrize("name", sorted(TOLERANCES))
def test_lm_terms_match_weighted(name):
    project = projector(TOLERANCES[name], 1e-7)
    pin.seed(3)  # SE3.Random draws from Pinocchio's generator: unseeded, it depends on test order (a rare pose failed)
    rng = np.random.default_rng(3)
    for _ in range(200):
        desired, real = (pin.SE3.Random() for _ in range(2))
        if rng.random() < 0.6:  # near the goal too, where bounds switch components on and off
            real = desired * pin.exp6(pin.Motion(rng.normal(0.0, rng.choice([0.02, 0.0008]), 6)))
        r, cost, column = project.lm_terms(desired.homogeneous)(real)
        r_ref, g_ref = project.weighted(desired.homogeneous, real.homogeneous)
        np.testing.assert_allclose(r, r_ref, atol=1e-12)
        assert cost == pytest.approx(float(r_ref @ r_ref), rel=1e-12, abs=1e-15)
        np.testing.assert_array_equal(column[:, 0], g_ref)


def test_batched_random_configurations_are_the_single_draws():
    db = ModulesDB.from_name("geometric_primitive_modules")
    robot = ModuleAssembly.from_serial_modules(db, ("base", "J1", "J2", "i_30", "J2", "eef")).robot
    batch = robot.random_configuration(np.random.default_rng(5), 4)
    rng = np.random.default_rng(5)
    np.testing.assert_array_equal(batch, [robot.random_configuration(rng) for _ in range(4)])
    assert all(robot.within_limits(q) for q in batch)


@pytest.mark.parametrize("wraps", [0, 1, 3])
def test_crossing_the_limit_gap_keeps_solutions_within_limits(wraps):
    """Joints limited to +-166 deg leave a 28 deg gap: a try may cross it (limit_wraps), the result stays valid."""
    from timor_core.kinematics.ik import IKConfig

    db = ModulesDB.from_name("geometric_primitive_modules")
    modules = ("base", "J1", "J2", "i_30", "J2", "i_30", "J1", "J2", "J1", "eef")
    robot = ModuleAssembly.from_serial_modules(db, modules).robot
    rng = np.random.default_rng(2)
    tol = TOLERANCES["sphere and cone"]
    for k in range(15):
        T = robot.fk(robot.random_configuration(rng))
        result = robot.ik(T, tol, rng=k, config=IKConfig(limit_wraps=wraps), details=True, ignore_self_collision=True)
        assert result.success and robot.within_limits(result.q)
        assert tol.valid(T, robot.fk(result.q))
