"""The compiled bounds on the boxes a proof measures: the children of halved boxes, which share most joint angles
and half-widths (``proof_kernel._poses``/``_position`` and ``sweep_bound._collisions`` keep each joint's last
angle's cosine and sine and last half-width's terms instead of computing them again; the collision bound also
leaves out an obstacle box a ball cannot reach into). Property tests over random robots of both embedded sets,
base placements and boxes of joint angles: a batch of sibling boxes gets, box by box, exactly what each box gets
measured alone (no term kept from the box before), and what the numpy bounds give."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import anywhere_configuration
from hypothesis import given, settings
from hypothesis import strategies as st
from proof_robots import ROBOTS, assembly_of
from scipy.spatial.transform import Rotation

from timor_core.kinematics.tolerance import tolerance_from_json
from timor_core.search.filtering.proof_kernel import halve_boxes, use_compiled
from timor_core.search.filtering.reach_proof import box_excess, chain_poses, pose_chain
from timor_core.search.filtering.sweep_proof import arm_sweep, certain_collision, certain_collision_numpy
from timor_core.search.filtering.sweep_proof import obstacle_boxes as task_obstacle_boxes
from timor_core.task import Task

TOLERANCES = {
    "exp2": tolerance_from_json(["x", "y", "z", "Theta_R"], [[-1e-3, 1e-3]] * 3 + [[0.0, math.pi / 4]]),
    "position only": tolerance_from_json(["x", "y", "z"], [[-1e-3, 1e-3]] * 3),
}


@pytest.fixture(scope="module", autouse=True)
def _default_bounds():
    """The tests below choose the numpy or the compiled bounds; the rest of the suite gets the default rule."""
    yield
    use_compiled(None)


def _siblings(rng: np.random.Generator, n: int, width: float, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A few random boxes of joint angles, each halved twice then twice more (as a proof's levels cut them): runs of
    children that share most angles and half-widths, and boxes of other parents between them."""
    centres, half = rng.uniform(-np.pi, np.pi, (6, n)), rng.uniform(0.0, width, (6, n))
    centres, half = halve_boxes(centres, half, weights, 2)
    return halve_boxes(centres, half, weights, 2)


@settings(max_examples=40, deadline=None)
@given(**ROBOTS, width=st.sampled_from([0.05, 0.5, math.pi]), tolerance=st.sampled_from(sorted(TOLERANCES)))
def test_sibling_boxes_get_the_bounds_each_gets_alone(name, pick, seed, spread, width, tolerance):
    """The reach bound of a batch of sibling boxes equals, to the last digit, that of each box measured alone, and
    the numpy bound up to rounding (the same boxes refused by orientation)."""
    rng = np.random.default_rng(seed)
    assembly, _ = assembly_of(name, pick, rng, spread)
    chain = pose_chain(assembly.robot)
    if chain is None:
        return
    n = chain.dof
    centres, half = _siblings(rng, n, width, chain.radii + 0.01)
    at = chain_poses(chain, centres[:1] + rng.uniform(-0.01, 0.01, (1, n)))
    goal = np.eye(4)
    goal[:3, :3] = at.frames[0].T @ Rotation.from_rotvec(rng.normal(size=3) * 0.1).as_matrix()
    goal[:3, 3] = at.tcp[0] + rng.normal(size=3) * rng.choice([0.001, 0.05, 0.3])
    use_compiled(True)
    tol = TOLERANCES[tolerance]
    batch = box_excess(chain, goal, tol, centres, half)
    alone = np.concatenate([box_excess(chain, goal, tol, centres[b : b + 1], half[b : b + 1])
                            for b in range(len(half))])  # fmt: skip
    assert np.array_equal(batch, alone), (assembly.module_ids, np.flatnonzero(batch != alone))
    use_compiled(False)
    want = box_excess(chain, goal, tol, centres, half)
    assert np.array_equal(np.isinf(batch), np.isinf(want))
    finite = np.isfinite(want)
    assert np.allclose(batch[finite], want[finite], rtol=0, atol=1e-6)


def _obstacles_around(robot, rng: np.random.Generator) -> Task:
    """A task with four obstacle boxes (random sides 2-60 cm, turned) centred near the arm's joints and TCP at a
    random configuration: balls of the arm inside them, near them and far from them."""
    q = anywhere_configuration(robot, rng)
    robot.fk(q)
    points = [robot.data.oMi[j].translation.copy() for j in range(1, robot.model.njoints)]
    points.append(robot.fk(q)[:3, 3])
    obstacles = []
    for k in range(4):
        pose = np.eye(4)
        pose[:3, :3] = Rotation.random(random_state=int(rng.integers(2**31))).as_matrix()
        pose[:3, 3] = points[int(rng.integers(len(points)))] + rng.normal(scale=0.08, size=3)
        sides = dict(zip("xyz", map(float, rng.uniform(0.02, 0.6, 3)), strict=True))
        obstacles.append({"ID": f"box{k}", "collision": [{"type": "box", "parameters": sides, "pose": pose.tolist()}]})
    goal = {"ID": "g", "type": "at", "goalPose": {"nominal": np.eye(4).tolist()}}
    return Task.from_json_data({"header": {"ID": "siblings"}, "obstacles": obstacles, "goals": [goal]})


@settings(max_examples=40, deadline=None)
@given(**ROBOTS, width=st.sampled_from([0.01, 0.1, 0.5]), margin=st.sampled_from([0.0, 0.02]))
def test_sibling_boxes_get_the_collision_verdicts_each_gets_alone(name, pick, seed, spread, width, margin):
    """The collision bound (compiled) of a batch of sibling boxes gives each box the verdict it gets alone and the
    numpy bound's, with obstacle boxes around the arm (the compiled bound leaves out the obstacles a ball cannot
    reach into; the numpy bound measures every one)."""
    rng = np.random.default_rng(seed)
    assembly, _ = assembly_of(name, pick, rng, spread)
    robot = assembly.robot
    sweep = arm_sweep(robot)
    if sweep is None:
        return
    obstacles = task_obstacle_boxes(_obstacles_around(robot, rng))
    centres, half = _siblings(rng, sweep.chain.dof, width, sweep.chain.radii + 0.01)
    use_compiled(True)
    batch = certain_collision(sweep, obstacles, centres, half, margin)
    alone = np.concatenate([certain_collision(sweep, obstacles, centres[b : b + 1], half[b : b + 1], margin)
                            for b in range(len(half))])  # fmt: skip
    want = certain_collision_numpy(sweep, obstacles, centres, half, margin)
    assert np.array_equal(batch, alone), (assembly.module_ids, np.flatnonzero(batch != alone))
    assert np.array_equal(batch, want), (assembly.module_ids, np.flatnonzero(batch != want))


def test_the_examples_hold_colliding_and_free_sibling_boxes():
    """The collision property above is not vacuous: on fixed draws, sibling batches hold boxes called colliding and
    boxes not, and balls far from some obstacle boxes (the ones the compiled bound leaves out)."""
    colliding, free = 0, 0
    for seed in range(12):
        rng = np.random.default_rng(seed)
        assembly, _ = assembly_of("robco_like", float(rng.uniform()), rng, 0.0)
        sweep = arm_sweep(assembly.robot)
        if sweep is None:
            continue
        obstacles = task_obstacle_boxes(_obstacles_around(assembly.robot, rng))
        centres, half = _siblings(rng, sweep.chain.dof, 0.1, sweep.chain.radii + 0.01)
        use_compiled(True)
        verdicts = certain_collision(sweep, obstacles, centres, half)
        colliding, free = colliding + int(verdicts.sum()), free + int((~verdicts).sum())
    assert colliding > 20 and free > 20, (colliding, free)
