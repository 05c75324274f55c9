"""Motion planning (RRT-Connect, shortcutting); the trajectories' timing, interpolation and JSON: test_trajectory.py.

The toy problems live in a 2-D joint space with box-shaped forbidden regions. The planner sees the boxes
padded by the check resolution, so every point of an edge it accepts (checked at that resolution) is
provably outside the true box; the tests re-check the edges against the true box ten times finer.
"""

from __future__ import annotations

import time
import warnings

import numpy as np
import pinocchio as pin
import pytest

from timor_core.errors import InputError
from timor_core.kinematics.planning import PlannerConfig, edge_valid, path_length, plan, rrt_connect, shortcut
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB

RES = 0.02
LO = np.array([-2.0, -2.0])
HI = np.array([2.0, 2.0])
START = np.array([-1.0, 1.0])
GOAL = np.array([1.0, 1.0])
#: a wall between start and goal with a gap at the bottom (y < -1.5)
WALL = (np.array([-0.2, -1.5]), np.array([0.2, 2.0]))
#: a square ring around GOAL: the goal cannot be reached
RING_OUTER = (np.array([0.5, 0.5]), np.array([1.5, 1.5]))
RING_INNER = (np.array([0.8, 0.8]), np.array([1.2, 1.2]))


def in_box(q: np.ndarray, box: tuple[np.ndarray, np.ndarray], pad: float = 0.0) -> bool:
    return bool(np.all(q >= box[0] - pad) and np.all(q <= box[1] + pad))


def in_bounds(q: np.ndarray) -> bool:
    return bool(np.all(q >= LO) and np.all(q <= HI))


def wall_valid(pad: float):
    return lambda q: in_bounds(q) and not in_box(q, WALL, pad)


def ring_valid(pad: float):
    return lambda q: in_bounds(q) and not (in_box(q, RING_OUTER, pad) and not in_box(q, RING_INNER, -pad))


def assert_edges_valid(path: np.ndarray, is_valid, resolution: float) -> None:
    for k in range(len(path) - 1):
        assert edge_valid(path[k], path[k + 1], is_valid, resolution), f"edge {k} is invalid"


# -- edge_valid ------------------------------------------------------------------------------------


def test_edge_valid_checks_b_not_a_at_the_resolution():
    a, b = np.array([0.0, 0.0]), np.array([1.0, -0.35])
    seen = []

    def record(q):
        seen.append(np.array(q))
        return True

    assert edge_valid(a, b, record, 0.1)
    pts = np.array(seen)
    assert not any(np.array_equal(p, a) for p in pts)
    assert any(np.array_equal(p, b) for p in pts)
    order = np.argsort(pts[:, 0])
    gaps = np.abs(np.diff(np.vstack((a, pts[order])), axis=0)).max(axis=1)
    assert gaps.max() <= 0.1 + 1e-12
    assert len(pts) == 10
    # a invalid but everything else fine: still valid (a is not checked); b invalid: not valid
    assert edge_valid(a, b, lambda q: not np.array_equal(q, a), 0.1)
    assert not edge_valid(a, b, lambda q: not np.array_equal(q, b), 0.1)
    # a thin obstacle in the middle is found
    assert not edge_valid(a, b, lambda q: not (0.49 <= q[0] <= 0.51), 0.02)


# -- RRT-Connect and shortcutting on toy problems --------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rrt_connect_finds_a_valid_path_around_a_wall(seed):
    valid = wall_valid(RES)
    assert not edge_valid(START, GOAL, valid, RES)  # the straight line is blocked
    path = rrt_connect(START, GOAL, valid, LO, HI, rng=seed)
    assert path is not None
    assert path.shape[1] == 2 and len(path) >= 3
    assert np.array_equal(path[0], START) and np.array_equal(path[-1], GOAL)
    steps = np.linalg.norm(np.diff(path, axis=0), axis=1)
    assert steps.max() <= PlannerConfig().step + 1e-12
    assert all(valid(q) for q in path)
    assert_edges_valid(path, wall_valid(0.0), RES / 10)  # the true obstacle, densely

    short = shortcut(path, valid, np.random.default_rng(seed), 100, RES)
    assert np.array_equal(short[0], START) and np.array_equal(short[-1], GOAL)
    assert path_length(short) <= path_length(path)
    # close to the shortest way: around the padded wall's two lower corners
    corners = np.array([WALL[0] - RES, [WALL[1][0] + RES, WALL[0][1] - RES]])
    optimum = path_length(np.vstack((START, corners, GOAL)))
    assert path_length(short) < 1.1 * optimum
    assert_edges_valid(short, wall_valid(0.0), RES / 10)


def test_rrt_connect_is_deterministic_for_a_seed():
    valid = wall_valid(RES)
    p1 = rrt_connect(START, GOAL, valid, LO, HI, rng=7)
    p2 = rrt_connect(START, GOAL, valid, LO, HI, rng=np.random.default_rng(7))
    p3 = rrt_connect(START, GOAL, valid, LO, HI, rng=8)
    assert np.array_equal(p1, p2)
    assert p1.shape != p3.shape or not np.array_equal(p1, p3)  # another seed, another path
    s1 = shortcut(p1, valid, 3, 50, RES)
    s2 = shortcut(p2, valid, 3, 50, RES)
    assert np.array_equal(s1, s2)


def test_rrt_connect_straight_line_when_free():
    path = rrt_connect(START, np.array([-1.0, -1.0]), wall_valid(RES), LO, HI, rng=0)
    assert np.array_equal(path, [START, [-1.0, -1.0]])


def test_rrt_connect_gives_up_on_an_enclosed_goal():
    valid = ring_valid(RES)
    assert valid(START) and valid(GOAL)
    assert rrt_connect(START, GOAL, valid, LO, HI, rng=0, config=PlannerConfig(max_iterations=300)) is None
    # the time limit stops the search too
    t0 = time.monotonic()
    config = PlannerConfig(max_iterations=10**7, time_limit=0.2)
    assert rrt_connect(START, GOAL, valid, LO, HI, rng=0, config=config) is None
    assert time.monotonic() - t0 < 2.0


@pytest.mark.parametrize("seed", range(5))
def test_shortcut_never_lengthens_and_keeps_validity(seed):
    rng = np.random.default_rng(seed)
    valid = wall_valid(RES)
    # a random valid zig-zag path on the left of the wall, then through the gap
    pts = [START]
    while len(pts) < 12:
        q = rng.uniform([-2.0, -2.0], [-0.3, 2.0])
        if edge_valid(pts[-1], q, valid, RES):
            pts.append(q)
    pts += [np.array([-0.5, -1.8]), np.array([0.5, -1.8]), GOAL]
    path = np.array(pts)
    assert_edges_valid(path, valid, RES)
    out = shortcut(path, valid, rng, 30, RES)
    assert path_length(out) <= path_length(path)
    assert np.array_equal(out[0], path[0]) and np.array_equal(out[-1], path[-1])
    assert_edges_valid(out, wall_valid(0.0), RES / 10)
    # no shortcut iterations: only the greedy pass; still never longer
    greedy = shortcut(path, valid, rng, 0, RES)
    assert path_length(greedy) <= path_length(path)
    # in free space everything collapses to the straight line
    free = shortcut(path, lambda q: True, rng, 10, RES)
    assert np.array_equal(free, [path[0], path[-1]])
    # the random shortcuts add waypoints inside edges; the final greedy pass leaves none it could drop, so the
    # timing (which stops at every waypoint) stops only where the path must turn
    for k in range(1, len(out) - 1):
        assert not edge_valid(out[k - 1], out[k + 1], valid, RES), f"waypoint {k} of {len(out)} is removable"


def test_planner_config_is_validated():
    with pytest.raises(InputError):
        PlannerConfig(step=0)
    with pytest.raises(InputError):
        PlannerConfig(goal_bias=1.5)
    with pytest.raises(InputError):
        PlannerConfig(max_iterations=-1)
    with pytest.raises(InputError):
        rrt_connect(START, [1.0, 2.0, 3.0], wall_valid(RES), LO, HI)


# -- the real robot --------------------------------------------------------------------------------

MARGIN_RES = 0.005  # rad, check resolution on the robot


@pytest.fixture(scope="module")
def robot():
    db = ModulesDB.from_name("geometric_primitive_modules")
    return ModuleAssembly.from_serial_modules(db, ("base", "J2", "i_45", "J2", "i_45", "J2", "eef")).robot


def self_collision_checker(robot, margin: float):
    """An independent self-collision check (own GeometryData, no GJK warm start) with a safety margin (m)."""
    robot.collision_pairs  # noqa: B018 (sets the robot's collision pairs up)
    data = pin.GeometryData(robot.collision)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for req in data.collisionRequests:
            req.security_margin = margin
            req.enable_cached_gjk_guess = False
    lo, hi = robot.joint_limits

    def is_valid(q) -> bool:
        q = np.asarray(q, dtype=float)
        if np.any(q < lo) or np.any(q > hi):
            return False
        return not pin.computeCollisions(robot.model, robot.data, robot.collision, data, q, True)

    return is_valid


def colliding_pair(robot, valid, true_valid):
    """Two seeded random configurations, valid for the planner, whose straight connection self-collides.

    Self-collisions of this robot need the second joint near its limit, so that joint is drawn from there.
    """
    for seed in range(200):
        rng = np.random.default_rng(seed)
        a, b = robot.random_configuration(rng), robot.random_configuration(rng)
        a[1], b[1] = rng.uniform(2.5, 2.9, 2)
        if valid(a) and valid(b) and not edge_valid(a, b, true_valid, MARGIN_RES):
            return seed, a, b
    raise AssertionError("no start/goal pair with a self-colliding straight line found")


def test_plan_avoids_self_collision_on_a_real_robot(robot):
    # Between two configurations checked MARGIN_RES apart (max-norm), a point of the robot moves by at most
    # MARGIN_RES / 2 * (sum over joints of its distance to the joint axis); two bodies approach by at most
    # twice that. Bounding each distance by the robot's length (plus its thickest part) gives a margin
    # that makes the discretely checked edges collision-free everywhere.
    length = float(np.linalg.norm(robot.fk(np.zeros(robot.dof))[:3, 3])) + 0.1
    margin = MARGIN_RES * robot.dof * length
    valid = self_collision_checker(robot, margin)
    true_valid = self_collision_checker(robot, 0.0)
    seed, a, b = colliding_pair(robot, valid, true_valid)
    config = PlannerConfig(check_resolution=MARGIN_RES)
    traj = plan(robot, a, b, is_valid=valid, rng=seed, config=config)
    assert traj is not None
    assert np.array_equal(traj.q[0], a) and np.array_equal(traj.q[-1], b)
    assert np.all(traj.dq[-1] == 0) and np.all(traj.dq[0] == 0)
    fine = traj.resample(0.001)
    assert np.max(np.abs(np.diff(fine.q, axis=0))) < MARGIN_RES
    assert all(true_valid(q) for q in fine.q)
    lo, hi = robot.joint_limits
    assert np.all(fine.q >= lo) and np.all(fine.q <= hi)
    tol = 1 + 1e-9
    assert np.all(np.abs(traj.dq) <= robot.velocity_limits * tol)
    assert np.all(np.abs(traj.ddq) <= robot.acceleration_limits * tol)
    assert np.all(np.abs(np.diff(traj.q, axis=0)) / np.diff(traj.t)[:, None] <= robot.velocity_limits * tol)
    assert np.all(np.abs(np.diff(traj.dq, axis=0)) / np.diff(traj.t)[:, None] <= robot.acceleration_limits * tol)


def test_plan_with_the_default_validity(robot):
    lo, hi = robot.joint_limits
    a = np.array([0.3, 2.75, 0.0])
    b = np.array([2.9, 2.75, 0.0])  # the straight line between them self-collides (q1 near 1.5..2.4)
    assert not robot.has_self_collision(a) and not robot.has_self_collision(b)
    assert robot.has_self_collision(np.array([2.0, 2.75, 0.0]))
    # timor's own RRT-Connect, seeded by rng: OMPL's random generator is seeded once per process, so after another
    # test used OMPL the path (and whether a sample between two checked points grazes) depended on the test order
    traj = plan(robot, a, b, rng=1, dt=0.02, config=PlannerConfig(planner="timor"))
    assert traj is not None
    assert np.array_equal(traj.q[0], a) and np.array_equal(traj.q[-1], b)
    assert np.all(traj.q >= lo) and np.all(traj.q <= hi)
    assert not any(robot.has_self_collision(q) for q in traj.q)
    assert np.all(np.abs(traj.dq) <= robot.velocity_limits * (1 + 1e-9))
    assert np.allclose(np.diff(traj.t), 0.02)


def test_plan_rejects_invalid_start_and_goal(robot):
    free = np.zeros(robot.dof)
    colliding = np.array([2.0, 2.75, 0.0])
    outside = np.array([0.0, 3.0, 0.0])
    with pytest.raises(InputError, match="start configuration is in self-collision"):
        plan(robot, colliding, free)
    with pytest.raises(InputError, match="goal configuration is outside the joint limits"):
        plan(robot, free, outside)
    with pytest.raises(InputError, match="goal configuration is not valid"):
        plan(robot, free, free + 0.1, is_valid=lambda q: q[0] < 0.05)
    with pytest.raises(InputError, match="start configuration must have 3 entries"):
        plan(robot, [0.0, 0.0], free)
    with pytest.raises(InputError, match="must be finite"):
        plan(robot, free, [0.0, np.nan, 0.0])
