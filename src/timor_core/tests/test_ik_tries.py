"""The IK's tries compiled in batches (``kinematics/ik_jit_tries.py``, ``ik_kernel.Tries``, issue 38): a batch runs
the same tries as one try at a time (the same q, tries, iterations and random generator state after the call), the
generator ends where the interpreted loop leaves it, joint masks, starts and custom costs behave as there; arms
with joints after the TCP's (the Panda's fingers) run compiled; and the reach bound refuses no pose an arm reaches,
wherever it stands, while it refuses goals beyond it without an iteration."""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin
import pytest
from conftest import anywhere_configuration, random_placement
from hypothesis import given, settings
from hypothesis import strategies as st
from urdf_agreement import robots_share

from timor_core import ModuleAssembly, ModulesDB, PinRobot
from timor_core.common import compiled
from timor_core.kinematics import ik_kernel
from timor_core.kinematics.ik import IKConfig, outside_workspace
from timor_core.kinematics.ik_descent import LWA
from timor_core.kinematics.ik_residual import projector
from timor_core.kinematics.tolerance import tolerance_from_json

TOLERANCES = {
    "sphere_cone": tolerance_from_json(["r_sph", "Theta_R"], [[0.0, 0.001], [0.0, math.radians(1.0)]]),
    "box_cone": tolerance_from_json(["x", "y", "z", "Theta_R"], [[-0.001, 0.001]] * 3 + [[0.0, math.pi / 4]]),
}
ARMS = {
    "ur5": "ur_description/urdf/ur5_robot.urdf",
    "panda": "panda_description/urdf/panda.urdf",
    "xarm7": "xarm_description/urdf/xarm7.urdf",
}


@pytest.fixture(autouse=True)
def _rule_after():
    yield
    compiled.use_compiled(None)


def _arm(name: str, placement: np.ndarray | None = None) -> PinRobot:
    share = robots_share()
    if share is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    return PinRobot.from_urdf(share / "robots" / ARMS[name], share.parent, base_placement=placement)


_IMPORTED: dict[str, ModuleAssembly] = {}


def _placed_arm(name: str, placement: np.ndarray | None) -> PinRobot:
    """The arm's robot at ``placement``, built anew from its URDF's one-module assembly imported once per process
    (what ``PinRobot.from_urdf(..., base_placement=placement)`` builds: test_placed_arms_are_from_urdfs holds the two
    equal); importing the URDF again per hypothesis example cost ~25 ms of its ~55."""
    if name not in _IMPORTED:
        _IMPORTED[name] = _arm(name).assembly
    return _IMPORTED[name].to_pin_robot(base_placement=placement)


_ROBOTS: dict[str, PinRobot] = {}


def _robot(name: str) -> PinRobot:
    if name not in _ROBOTS:
        if name == "robco":
            ids = ["base", "J", "L_100", "J", "L_150", "J", "L_100", "J", "L_100", "J", "gripper"]
            _ROBOTS[name] = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ids).robot
        else:
            _ROBOTS[name] = _arm(name)
    return _ROBOTS[name]


def _call(robot: PinRobot, goal: np.ndarray, tolerance, seed: int, **options) -> tuple:
    """One IK call from a generator of ``seed``: (its result, the generator's next number after it)."""
    rng = np.random.default_rng(seed)
    result = robot.ik(goal, tolerance=tolerance, rng=rng, ignore_self_collision=True, details=True, **options)
    return result, float(rng.random())


def _goal(robot: PinRobot, rng: np.random.Generator, kind: int) -> np.ndarray:
    """A reachable goal (kind 0), one moved off by ~0.2 m (1: often out of reach) or turned far (2)."""
    goal = robot.fk(robot.random_configuration(rng)).copy()
    if kind == 1:
        goal[:3, 3] += rng.normal(size=3) * 0.2
    elif kind == 2:
        goal[:3, :3] = goal[:3, :3] @ pin.exp3(rng.normal(size=3))
    return goal


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(["robco", "ur5", "panda"]),
    tol=st.sampled_from(sorted(TOLERANCES)),
    seed=st.integers(0, 2**31),
    kind=st.sampled_from([0, 0, 1, 2]),
)
def test_batches_run_what_single_tries_run(name, tol, seed, kind):
    """Batches of up to 16 tries against one try per kernel call: the same q, tries, iterations, residual and
    generator state after the call (a batch that ends early takes its unused draws back)."""
    robot = _robot(name)
    goal = _goal(robot, np.random.default_rng(seed), kind)
    compiled.use_compiled(True)
    batched = _call(robot, goal, TOLERANCES[tol], seed)
    old = ik_kernel.LARGEST_BATCH
    try:
        ik_kernel.LARGEST_BATCH = 1
        single = _call(robot, goal, TOLERANCES[tol], seed)
    finally:
        ik_kernel.LARGEST_BATCH = old
    (a, next_a), (b, next_b) = batched, single
    assert (a.success, a.tries, a.iterations, a.residual) == (b.success, b.tries, b.iterations, b.residual)
    np.testing.assert_array_equal(a.q, b.q)
    assert next_a == next_b


@pytest.mark.parametrize("name", ["robco", "ur5", "panda"])
def test_compiled_tries_leave_the_generator_where_the_interpreted_loop_does(name):
    """Where both took the same number of tries, the generator's next number after the call is the same: the
    compiled tries draw exactly what the interpreted loop draws. Every compiled solution is within the tolerance."""
    robot, tolerance = _robot(name), TOLERANCES["sphere_cone"]
    rng = np.random.default_rng(4)
    compared = 0
    for i in range(20):
        goal = _goal(robot, rng, i % 3)
        runs = []
        for mode in (False, True):
            compiled.use_compiled(mode)
            runs.append(_call(robot, goal, tolerance, i))
        (slow, next_slow), (fast, next_fast) = runs
        assert slow.success == fast.success, i
        if fast.success:
            assert tolerance.valid(goal, robot.fk(fast.q)), i
        if slow.tries == fast.tries:
            compared += 1
            assert next_slow == next_fast, i
    assert compared >= 15


def test_compiled_tries_keep_frozen_joints_start_at_q_init_and_rank_by_cost():
    robot, tolerance = _robot("ur5"), TOLERANCES["sphere_cone"]
    rng = np.random.default_rng(8)
    compiled.use_compiled(True)
    q_goal = robot.random_configuration(rng)
    goal = robot.fk(q_goal)
    q_init = robot.random_configuration(rng)
    q_init[0] = q_goal[0]
    mask = np.array([False, True, True, True, True, True])
    result = robot.ik(goal, tolerance=tolerance, q_init=q_init, joint_mask=mask, rng=1, details=True,
                      ignore_self_collision=True)  # fmt: skip
    assert result.success and result.q[0] == q_init[0] and tolerance.valid(goal, robot.fk(result.q))
    started = robot.ik(goal, tolerance=tolerance, q_init=q_goal, rng=1, details=True, ignore_self_collision=True)
    assert started.success and started.tries == 1 and started.iterations == 1  # converged where it started
    np.testing.assert_allclose(started.q, q_goal, rtol=0, atol=0)

    def cost(_robot, q, _desired):
        return float(abs(q[0]))

    best = robot.ik(goal, tolerance=tolerance, rng=2, config=IKConfig(solutions=4), ik_cost_function=cost,
                    ignore_self_collision=True, details=True)  # fmt: skip
    first = robot.ik(goal, tolerance=tolerance, rng=2, ignore_self_collision=True, details=True)
    assert best.success and tolerance.valid(goal, robot.fk(best.q)) and abs(best.q[0]) <= abs(first.q[0])


def test_an_arm_with_joints_after_the_tcp_runs_compiled():
    """The Panda's fingers come after its hand: the chain up to the TCP is compiled, the fingers' columns zero,
    pose and Jacobian equal to Pinocchio's."""
    robot = _arm("panda")
    model, fid = robot.model, robot.tcp
    chain = ik_kernel.kernel_chain(model, fid)
    assert chain is not None and chain.moving == 7 and model.nv == 9
    jit = ik_kernel.kernels()
    data, rng = model.createData(), np.random.default_rng(2)
    T, J, work = np.empty((4, 4)), np.empty((6, model.nv)), np.empty((model.nv, 2, 3))
    for _ in range(30):
        q = robot.random_configuration(rng)
        jit.forward(chain.placements, chain.kinds, chain.axes, chain.tool, chain.moving, q, T, J, work)
        want = pin.computeFrameJacobian(model, data, q, fid, LWA)
        np.testing.assert_allclose(T, data.oMf[fid].homogeneous, rtol=0, atol=1e-12)
        np.testing.assert_allclose(J, want, rtol=0, atol=1e-12)
        assert not J[:, 7:].any()


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(sorted(ARMS)), seed=st.integers(0, 2**31), spread=st.sampled_from([0.0, 0.5, 3.0]))
def test_the_reach_bound_refuses_no_pose_an_arm_reaches(name, seed, spread):
    """Random configurations (beyond the limits too) of example-robot-data's arms, the base anywhere: the bound the
    IK refuses goals with never refuses their poses, and the IK never calls them unreachable."""
    rng = np.random.default_rng(seed)
    robot = _placed_arm(name, random_placement(rng, spread) if spread else None)
    for _ in range(10):
        pose = robot.fk(anywhere_configuration(robot, rng))
        assert outside_workspace(robot, robot.tcp, pose, None) == 0.0, (name, seed)
        assert outside_workspace(robot, robot.tcp, pose, TOLERANCES["sphere_cone"]) == 0.0, (name, seed)
    result = robot.ik(pose, tolerance=TOLERANCES["sphere_cone"], rng=0, max_n_tries=2, details=True)
    assert not result.reason.startswith("unreachable"), result.reason


@pytest.mark.parametrize("name", sorted(ARMS))
def test_placed_arms_are_from_urdfs(name):
    """:func:`_placed_arm` (the reach bound's property test) builds what ``PinRobot.from_urdf`` builds at the same
    placement: the same placement, model and TCP pose at random configurations."""
    placement = random_placement(np.random.default_rng(5), 3.0)
    share = robots_share()
    if share is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    direct = PinRobot.from_urdf(share / "robots" / ARMS[name], share.parent, base_placement=placement)
    placed = _placed_arm(name, placement)
    np.testing.assert_array_equal(placed.placement, placement)
    np.testing.assert_array_equal(direct.placement, placed.placement)
    assert (direct.dof, direct.tcp_name, direct.joints) == (placed.dof, placed.tcp_name, placed.joints)
    rng = np.random.default_rng(6)
    for _ in range(5):
        q = direct.random_configuration(rng)
        np.testing.assert_array_equal(placed.fk(q), direct.fk(q))


@pytest.mark.parametrize("name", sorted(ARMS))
def test_goals_beyond_the_reach_bound_are_refused_without_iterating(name):
    robot = _arm(name)
    rng = np.random.default_rng(3)
    base = robot.placement[:3, 3]
    for mode in (False, True):
        compiled.use_compiled(mode)
        for _ in range(5):
            goal = robot.fk(robot.random_configuration(rng)).copy()
            ray = goal[:3, 3] - base
            goal[:3, 3] = base + ray / np.linalg.norm(ray) * robot.reach() * rng.uniform(1.01, 2.0)
            result = robot.ik(goal, tolerance=TOLERANCES["sphere_cone"], rng=0, details=True)
            assert not result.success and result.reason.startswith("unreachable") and result.iterations == 0


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    sph=st.sampled_from([None, (0.0, 0.001), (0.002, 0.004)]),
    theta=st.sampled_from([None, (0.0, math.radians(1.0)), (0.1, 0.3), (0.0, math.pi)]),
)
def test_the_kernels_tolerance_test_is_valids(seed, sph, theta):
    """``ik_jit_tries.within`` (a converged try's check inside the kernel) = ``Projector.valid``, on poses spread
    around the bounds of r_sph/Theta_R tolerances."""
    if sph is None and theta is None:
        return
    names, intervals = [], []
    for name, bounds in (("r_sph", sph), ("Theta_R", theta)):
        if bounds is not None:
            names.append(name)
            intervals.append(list(bounds))
    project = projector(tolerance_from_json(names, intervals), 1e-7)
    within = ik_kernel.tries_kernels().within
    bounds = project.valid_bounds()
    rng = np.random.default_rng(seed)
    for _ in range(20):
        desired = np.eye(4)
        desired[:3, :3], desired[:3, 3] = pin.exp3(rng.normal(size=3)), rng.normal(size=3)
        real = desired.copy()
        axis = rng.normal(size=3)
        angle = rng.choice([rng.uniform(0, 0.4), math.radians(1.0) * rng.uniform(0.98, 1.02), 0.1, 0.3])
        real[:3, :3] = pin.exp3(axis / np.linalg.norm(axis) * angle) @ desired[:3, :3]
        offset = rng.normal(size=3)
        real[:3, 3] += offset / np.linalg.norm(offset) * rng.choice([0.0, 0.001, 0.002, 0.004, rng.uniform(0, 0.005)])
        assert within(real, project.lm_params(desired), bounds) == project.valid(desired, real)
