"""The proof that a goal is out of reach at its orientation (search.reach_proof): never refuses a pose some
configuration reaches (property test over random robots of two embedded module sets, random base placements,
configurations anywhere and goals anywhere within a tolerance of the reached pose), agrees with Pinocchio, and
refuses what the IK would fail on anyway (the search's verdicts do not change)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from conftest import anywhere_configuration, random_placement
from hypothesis import given, settings
from hypothesis import strategies as st
from reach_cases import BOX_CASES, DBS, SPACES, TOLERANCES, within
from scipy.spatial.transform import Rotation

from timor_core import ModuleAssembly
from timor_core.kinematics.reach import position_slack
from timor_core.search.filtering import reach_proof
from timor_core.search.filtering.proof_kernel import halve_boxes, reach_witness, use_compiled
from timor_core.search.filtering.proof_numpy import BoxGoal
from timor_core.search.filtering.quick_reach import quick_chain
from timor_core.search.filtering.reach_proof import (
    box_excess,
    chain_poses,
    pose_chain,
    pose_proof,
    rotation_slack,
    unreachable_pose,
)

TASKS = Path(__file__).parent / "data" / "exp2_tasks"


@pytest.fixture(scope="module", autouse=True)
def _default_bounds():
    """The tests below choose the numpy or the compiled bounds; the rest of the suite gets the default rule."""
    yield
    use_compiled(None)


PLANAR = ("base", "J", "L_150", "J", "J", "J", "gripper")  # a turntable and three joints on one line


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(DBS)),
    pick=st.floats(0, 1, exclude_max=True),
    seed=st.integers(0, 2**31),
    spread=st.sampled_from([0.0, 0.2, 3.0]),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
    compiled=st.booleans(),
)
def test_a_reached_pose_is_never_refused(name, pick, seed, spread, tolerance, compiled):
    """Whatever the robot, its base placement, the configuration and the goal within the tolerance of the pose it
    reaches: no proof, from the built robot or from the modules alone (with the numpy and the compiled bounds)."""
    use_compiled(compiled)
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
    for _ in range(8):
        pose = robot.fk(anywhere_configuration(robot, rng))
        goal = within(pose, tolerance, rng)
        for chain in chains:
            if chain is not None:
                assert unreachable_pose(chain, goal, TOLERANCES[tolerance]) is None, (ids, placement, tolerance)


@pytest.mark.parametrize("ids", [("base", "J", "L_200", "J", "L_100", "J", "L_100", "J", "gripper"),
                                 ("base", "J", "I_150", "L_150", "J", "gripper")])  # fmt: skip
def test_the_chain_gives_pinocchios_poses(ids):
    db = DBS["robco_like"]
    rng = np.random.default_rng(3)
    robot = ModuleAssembly.from_serial_modules(db, ids, base_placement=random_placement(rng, 0.5)).robot
    chain = pose_chain(robot)
    assert chain is not None and chain.dof == robot.dof  # no two joints on one line here
    q = rng.uniform(-np.pi, np.pi, (5, robot.dof))
    at = chain_poses(chain, q)
    for k in range(len(q)):
        pose = robot.fk(q[k])
        assert np.allclose(at.frames[k].T, pose[:3, :3], atol=1e-12)
        assert np.allclose(at.tcp[k], pose[:3, 3], atol=1e-12)


def test_joints_on_one_line_are_merged():
    """``J J J`` in robco_like: three joints on one axis line; the proof searches one of them."""
    robot = ModuleAssembly.from_serial_modules(DBS["robco_like"], PLANAR).robot
    chain = pose_chain(robot)
    assert robot.dof == 4 and chain is not None and chain.dof == 2


def test_a_tool_that_can_never_point_down_is_proven_so():
    """``base J L_150 J J J gripper``: joints 2-4 turn about the tool's own axis, which stays horizontal; a goal
    pointing the tool down within 45 degrees is out of reach (the IK fails on it, and the distance bounds allow it)."""
    robot = ModuleAssembly.from_serial_modules(DBS["robco_like"], PLANAR).robot
    goal = np.diag([1.0, -1.0, -1.0, 1.0])
    goal[:3, 3] = [0.35, -0.3, 0.25]
    tol = TOLERANCES["exp2"]
    assert unreachable_pose(pose_chain(robot), goal, tol) is not None
    result = robot.ik(goal, tolerance=tol, rng=np.random.default_rng(0), ignore_self_collision=True, details=True)
    assert not result.success
    goal = robot.fk(np.array([-0.7, 0.4, -1.1, 0.3]))  # a pose it reaches: not refused
    assert unreachable_pose(pose_chain(robot), goal, tol) is None


def test_the_search_verdicts_do_not_change():
    """The first assemblies of the cost order on a new task that the proof refuses: the IK fails on every one of
    them without the proof (``proof_budget=0``), and the valid ones stay valid."""
    from timor_core.search import FilterChain, FilterConfig, paper_exp2_space
    from timor_core.search.spaces.cost_order import by_cost
    from timor_core.task import Task

    db = DBS["robco_like"]
    task = Task.from_json_data(json.loads((TASKS / "moved_goals.json").read_text()))
    proof = FilterChain(task, db, "mass", FilterConfig())
    plain = FilterChain(task, db, "mass", FilterConfig(proof_budget=0))
    refused = 0
    for k, (_, ids) in enumerate(by_cost(paper_exp2_space(db), "mass")):
        if k >= 400 or refused >= 25:
            break
        a = proof(ids)
        if a.reason_key.endswith("no configuration reaches it"):
            refused += 1
            b = plain(ids)
            assert b.failed_filter is not None and b.failed_filter != "workspace", (ids, b.reason)
    assert refused >= 25
    optimum = ("base", "J", "L_200", "J", "L_100", "J", "L_100", "J", "gripper")
    assert proof(optimum).failed_filter is None and plain(optimum).failed_filter is None


def _witness_case(name: str, pick: float, seed: int, miss: float, tolerance: str):
    """A random robot's chain (None if it has none) and a goal: within the tolerance of a pose it reaches (``miss``
    0), or that pose's goal moved ``miss`` (m) away in a random direction."""
    space = SPACES[name]
    rng = np.random.default_rng(seed)
    ids = space[int(pick * space.count)]
    robot = ModuleAssembly.from_serial_modules(DBS[name], ids, base_placement=random_placement(rng, 0.2)).robot
    goal = within(robot.fk(anywhere_configuration(robot, rng)), tolerance, rng)
    shift = rng.normal(size=3)
    goal[:3, 3] += shift / np.linalg.norm(shift) * miss
    return pose_chain(robot), goal


WITNESS_CASES = {
    "name": st.sampled_from(sorted(DBS)),
    "pick": st.floats(0, 1, exclude_max=True),
    "seed": st.integers(0, 2**31),
    "tolerance": st.sampled_from(sorted(TOLERANCES)),
}  # the robot, its placement and configuration, the goal's tolerance (:func:`_witness_case`)


@settings(max_examples=60, deadline=None)
@given(**WITNESS_CASES, miss=st.sampled_from([0.0, 0.0, 0.003, 0.02, 0.1]))
def test_a_witness_puts_the_tcp_within_the_slacks(name, pick, seed, miss, tolerance):
    """reach_witness (the compiled descent a proof stops at, undecided): the configuration it gives puts the chain's
    TCP within the tolerance's position slack of the goal and its rotation within the tolerance's angle (checked with
    the chain's own poses), on reachable goals and goals moved off them."""
    use_compiled(True)
    chain, goal = _witness_case(name, pick, seed, miss, tolerance)
    if chain is None:
        return
    tol = TOLERANCES[tolerance]
    target = BoxGoal(goal[:3, 3], goal[:3, :3].T, position_slack(tol), rotation_slack(tol), np.zeros(3), 0.0,
                     (0.0, 0.0), 0.0)  # fmt: skip
    centres, _ = halve_boxes(np.zeros((1, chain.dof)), np.full((1, chain.dof), math.pi), chain.radii + 0.01, 8)
    q = reach_witness(chain.steps, centres, target)
    if q is None:
        return
    at = chain_poses(chain, q[None])
    assert np.linalg.norm(at.tcp[0] - goal[:3, 3]) <= position_slack(tol)
    assert Rotation.from_matrix(at.frames[0] @ goal[:3, :3]).magnitude() <= rotation_slack(tol)


@settings(max_examples=60, deadline=None)
@given(**WITNESS_CASES, miss=st.sampled_from([0.0, 0.006, 0.02, 0.05, 0.2]))
def test_the_witness_decides_no_proof_otherwise(name, pick, seed, miss, tolerance):
    """A proof that stops at a witness gives what it gives without looking for one (undecided, or proven over the
    same boxes with the same margin), on reachable goals and goals moved 6 mm-20 cm off them."""
    use_compiled(True)
    chain, goal = _witness_case(name, pick, seed, miss, tolerance)
    if chain is None:
        return
    tol = TOLERANCES[tolerance]
    with_witness = pose_proof(chain, goal, tol, widen=0.15)
    levels, reach_proof.WITNESS_LEVELS = reach_proof.WITNESS_LEVELS, 0
    try:
        without = pose_proof(chain, goal, tol, widen=0.15)
    finally:
        reach_proof.WITNESS_LEVELS = levels
    assert with_witness == without, (miss, tolerance)


def test_a_witness_is_found_where_the_goal_is_reached():
    """On goals within the tolerance of poses the arms reach, the descent finds a witness for most (it is what makes
    the proofs of reachable goals stop early) and never where a proof refuses the goal."""
    use_compiled(True)
    found = tried = 0
    for seed in range(40):
        chain, goal = _witness_case("robco_like", (seed * 0.137) % 1.0, seed, 0.0, "exp2")
        if chain is None:
            continue
        tol = TOLERANCES["exp2"]
        target = BoxGoal(goal[:3, 3], goal[:3, :3].T, position_slack(tol), rotation_slack(tol), np.zeros(3), 0.0,
                         (0.0, 0.0), 0.0)  # fmt: skip
        centres, _ = halve_boxes(np.zeros((1, chain.dof)), np.full((1, chain.dof), math.pi), chain.radii + 0.01, 8)
        tried += 1
        found += reach_witness(chain.steps, centres, target) is not None
    assert tried >= 30 and found >= 0.8 * tried, (found, tried)


@settings(max_examples=60, deadline=None)
@BOX_CASES
def test_a_centres_miss_caps_what_its_box_can_spare(name, pick, seed, width, tolerance, compiled):
    """What the widening stops by (``upper`` of :func:`box_excess`, numpy and compiled): per box the centre's miss
    less the slack where the centre's rotation is within the tolerance's angle, else inf, as the chain's own poses
    give it; and no box is refused with more to spare than that (a proof's margin never exceeds a measured centre's
    value, so a level above it is out of reach)."""
    use_compiled(compiled)
    space = SPACES[name]
    rng = np.random.default_rng(seed)
    chain = pose_chain(ModuleAssembly.from_serial_modules(DBS[name], space[int(pick * space.count)]).robot)
    if chain is None:
        return
    n, tol = chain.dof, TOLERANCES[tolerance]
    centres, half = rng.uniform(-np.pi, np.pi, (32, n)), rng.uniform(0, width, (32, n))
    at = chain_poses(chain, centres)
    k = rng.integers(len(centres))  # a goal near one centre, turned by about the tolerance's angle
    goal = np.eye(4)
    goal[:3, :3] = at.frames[k].T @ Rotation.from_rotvec(rng.normal(size=3) * 0.3).as_matrix()
    goal[:3, 3] = at.tcp[k] + rng.normal(size=3) * rng.choice([0.001, 0.05, 0.3])
    upper = np.empty(len(centres))
    excess = box_excess(chain, goal, tol, centres, half, upper)
    turned = Rotation.from_matrix(np.einsum("mkj,jl->mkl", at.frames, goal[:3, :3])).magnitude()
    slack = position_slack(tol) + reach_proof.EPS
    want = np.where(turned <= rotation_slack(tol) + reach_proof.ANGLE_EPS,
                    np.linalg.norm(at.tcp - goal[:3, 3], axis=1) - slack, math.inf)  # fmt: skip
    edge = np.abs(turned - rotation_slack(tol) - reach_proof.ANGLE_EPS) < 1e-7  # (arccos's rounding)
    assert np.array_equal(np.isinf(upper[~edge]), np.isinf(want[~edge]))
    finite = np.isfinite(upper) & np.isfinite(want)
    assert np.allclose(upper[finite], want[finite], rtol=0, atol=1e-9)
    assert np.all(excess <= upper + 1e-9)


def test_goal_terms_are_named_and_made_once_per_goal_value():
    """``goal_terms``: a :class:`GoalTerms` whose fields are the goal's position, axes (rows) and rotation in C order
    and the slacks plus their allowances; the same object for the same goal values and tolerance, a new one for a
    goal moved in place."""
    tol = TOLERANCES["exp2"]
    goal = np.eye(4)
    goal[:3, :3] = Rotation.from_rotvec([0.3, -0.2, 0.5]).as_matrix()
    goal[:3, 3] = [0.4, -0.1, 0.3]
    terms = reach_proof.goal_terms(goal, tol)
    assert isinstance(terms, reach_proof.GoalTerms) and terms.tolerance is tol
    assert np.array_equal(terms.pos, goal[:3, 3]) and np.array_equal(terms.turn, goal[:3, :3])
    assert np.array_equal(terms.axes, goal[:3, :3].T) and terms.axes.flags.c_contiguous
    assert terms.slack == position_slack(tol) + reach_proof.EPS
    assert terms.theta == rotation_slack(tol) + reach_proof.ANGLE_EPS
    assert reach_proof.goal_terms(goal.copy(), tol) is terms
    goal[0, 3] += 0.1
    moved = reach_proof.goal_terms(goal, tol)
    assert moved is not terms and moved.pos[0] == terms.pos[0] + 0.1
