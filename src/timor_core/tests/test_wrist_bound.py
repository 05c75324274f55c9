"""The wrist bound (search.wrist_bound): never refuses a goal some configuration reaches (property test over random
robots of two embedded module sets, random base placements, configurations anywhere and goals anywhere within four
kinds of tolerance of the reached pose), its cap grid covers the cap it stands for, and it refuses what it should:
light arms the proofs refuse on the unseen tasks."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import anywhere_configuration, random_placement, reach_test_spaces
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reach_proof import TOLERANCES, _within

from timor_core import ModuleAssembly
from timor_core.search.quick_reach import quick_chain
from timor_core.search.reach_proof import ANGLE_EPS, pose_chain, pose_proof, rotation_slack
from timor_core.search.wrist_bound import cap_samples, wrist_excess

DBS, SPACES = reach_test_spaces()


def _theta(name: str) -> float:
    return rotation_slack(TOLERANCES[name]) + ANGLE_EPS


@settings(max_examples=80, deadline=None)
@given(
    name=st.sampled_from(sorted(DBS)),
    pick=st.floats(0, 1, exclude_max=True),
    seed=st.integers(0, 2**31),
    spread=st.sampled_from([0.0, 0.2, 3.0]),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
)
def test_a_reached_pose_is_never_refused(name, pick, seed, spread, tolerance):
    """Whatever the robot, its base placement, the configuration and the goal within the tolerance of the pose it
    reaches: the wrist bound does not refuse it, from the built robot's chain or from the modules'."""
    space = SPACES[name]
    ids = space[int(pick * space.count)]
    rng = np.random.default_rng(seed)
    placement = random_placement(rng, spread) if spread else None
    assembly = ModuleAssembly.from_serial_modules(DBS[name], ids, base_placement=placement)
    robot = assembly.robot
    chains = [pose_chain(robot)]
    quick = quick_chain(assembly, placement)
    if quick is not None:
        chains.append(quick.poses())
    for _ in range(10):
        goal = _within(robot.fk(anywhere_configuration(robot, rng)), tolerance, rng)
        for chain in chains:
            if chain is not None:
                excess = wrist_excess(chain, goal, TOLERANCES[tolerance], _theta(tolerance))
                assert excess <= 0.0, (ids, placement, tolerance, excess)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31), theta=st.floats(0.0, math.pi), length=st.floats(0.0, 0.5))
def test_every_point_of_the_cap_is_within_delta_of_a_sample(seed, theta, length):
    """The covering radius the bound subtracts holds: random points of the cap (any axis, width, radius) lie within
    ``delta`` of the grid, measured in the cylindrical coordinates the bound uses."""
    rng = np.random.default_rng(seed)
    goal = np.eye(4)
    goal[:3, :3] = np.linalg.qr(rng.normal(size=(3, 3)))[0] * np.array([1.0, 1.0, 1.0])
    if np.linalg.det(goal[:3, :3]) < 0:
        goal[:3, 0] *= -1
    goal[:3, 3] = rng.normal(size=3)
    offset = rng.normal(size=3)
    offset *= length / np.linalg.norm(offset)
    origin, axis = rng.normal(size=3), rng.normal(size=3)
    axis /= np.linalg.norm(axis)
    samples = cap_samples(goal, offset, theta, origin, axis)
    m = goal[:3, :3] @ offset / max(length, 1e-300)
    for _ in range(300):
        v = rng.normal(size=3)
        v -= (v @ m) * m
        v /= max(np.linalg.norm(v), 1e-300)
        phi = rng.uniform(0.0, theta)
        point = goal[:3, 3] + length * (math.cos(phi) * m + math.sin(phi) * v)
        rel = point - origin
        z = rel @ axis
        rho = np.linalg.norm(rel - z * axis)
        nearest = np.sqrt(np.min((samples.rho - rho) ** 2 + (samples.z - z) ** 2))
        assert nearest <= samples.delta + 1e-9


def test_it_refuses_what_a_proof_refuses_on_a_far_goal():
    """A short three-joint arm and a goal 0.6 m away, pointing back at the base: out of reach, and the bound says
    so without a box (the branch and bound agrees)."""
    robot = ModuleAssembly.from_serial_modules(DBS["robco_like"], ("base", "J", "L_100", "J", "J", "gripper")).robot
    chain = pose_chain(robot)
    goal = np.eye(4)
    goal[:3, 3] = (0.45, 0.0, 0.2)
    excess = wrist_excess(chain, goal, TOLERANCES["exp2"], _theta("exp2"))
    assert excess > 0.0
    assert pose_proof(chain, goal, TOLERANCES["exp2"]) is not None


@pytest.mark.parametrize("tolerance", sorted(TOLERANCES))
def test_a_goal_at_the_arms_own_pose_is_not_refused(tolerance):
    robot = ModuleAssembly.from_serial_modules(
        DBS["robco_like"], ("base", "J", "L_200", "J", "L_100", "J", "gripper")
    ).robot
    chain = pose_chain(robot)
    for q in np.random.default_rng(1).uniform(-3, 3, (20, robot.dof)):
        assert wrist_excess(chain, robot.fk(q), TOLERANCES[tolerance], _theta(tolerance)) <= 0.0
