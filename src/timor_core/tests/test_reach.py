"""Nested reach bounds (kinematics.reach): never exclude a position some configuration reaches (property test
over random robots of every embedded module set and random configurations, joint limits included or not), and
exclude positions the distance from the base alone cannot."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import anywhere_configuration, random_placement, reach_test_spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core import ModuleAssembly
from timor_core.kinematics.ik import outside_workspace
from timor_core.kinematics.reach import position_slack, reach_chain, reach_gap
from timor_core.kinematics.tolerance import tolerance_from_json

DBS, SPACES = reach_test_spaces()


@settings(max_examples=80, deadline=None)
@given(
    name=st.sampled_from(sorted(DBS)),
    pick=st.floats(0, 1, exclude_max=True),
    seed=st.integers(0, 2**31),
    spread=st.sampled_from([0.0, 0.2, 3.0]),
)
def test_a_reached_position_is_never_excluded(name, pick, seed, spread):
    """Wherever the base is placed (issue 25: the reach bound measured joint 1 from the world's origin, so a base
    moved 0.18 m down refused goals the robot reaches): neither bound the search and the IK use refuses a pose."""
    space = SPACES[name]
    ids = space[int(pick * space.count)]
    rng = np.random.default_rng(seed)
    placement = random_placement(rng, spread) if spread else None
    robot = ModuleAssembly.from_serial_modules(DBS[name], ids, base_placement=placement).robot
    for _ in range(20):
        q = anywhere_configuration(robot, rng)
        pose = robot.fk(q)
        assert reach_gap(robot, robot.tcp, pose[:3, 3]) == 0.0, (ids, q.tolist())
        assert outside_workspace(robot, robot.tcp, pose, None) == 0.0, (ids, q.tolist(), placement)


def test_the_chain_keeps_the_leading_revolute_joints():
    db = DBS["geometric_primitive_modules"]
    robot = ModuleAssembly.from_serial_modules(db, ("base", "J1", "l_30", "P1", "i_30", "J2", "eef")).robot
    chain = reach_chain(robot, robot.tcp)
    assert len(chain.radii) == 1  # the prismatic joint ends it
    assert np.allclose(np.linalg.norm(chain.axes, axis=1), 1.0)
    assert reach_chain(robot, robot.tcp) is chain  # cached


def test_nested_bounds_exclude_what_the_base_distance_cannot():
    """A 3-joint robco arm: a point next to the base, within its reach bound, that the arm cannot fold to."""
    db = DBS["robco_like"]
    robot = ModuleAssembly.from_serial_modules(db, ("base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper")).robot
    chain = reach_chain(robot, robot.tcp)
    assert len(chain.radii) == 3 and np.all(np.diff(chain.radii) < 0)
    tol = tolerance_from_json(["x", "y", "z"], [[-0.001, 0.001]] * 3)
    excluded = 0
    rng = np.random.default_rng(0)
    for _ in range(300):
        p = rng.uniform(-1, 1, 3) * robot.reach()
        pose = np.eye(4)
        pose[:3, 3] = p
        if outside_workspace(robot, robot.tcp, pose, tol) == 0.0 and reach_gap(robot, robot.tcp, p, 0.0017) > 0:
            excluded += 1
            # the IK agrees: nothing gets there
            from timor_core.kinematics.pose import ToleratedPose

            assert not robot.ik(ToleratedPose(pose, tol), rng=1, ignore_self_collision=True)[1]
            if excluded >= 5:
                break
    assert excluded >= 5


@pytest.mark.parametrize(
    ("projections", "intervals", "slack"),
    [
        (["x", "y", "z"], [[-0.001, 0.001], [-0.002, 0.0], [0.0, 0.002]], 0.003),
        (["r_sph"], [[0.0, 0.004]], 0.004),
        (["r_cyl", "z"], [[0.0, 0.003], [-0.004, 0.0]], 0.005),
        (["Theta_R"], [[0.0, 0.5]], float("inf")),
    ],
)
def test_position_slack(projections, intervals, slack):
    assert position_slack(tolerance_from_json(projections, intervals)) == pytest.approx(slack)
