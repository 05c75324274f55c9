"""Motion planning (RRT-Connect, shortcutting) and trajectories (timing, interpolation, JSON).

The toy problems live in a 2-D joint space with box-shaped forbidden regions. The planner sees the boxes
padded by the check resolution, so every point of an edge it accepts (checked at that resolution) is
provably outside the true box; the tests re-check the edges against the true box ten times finer.
"""

from __future__ import annotations

import json
import math
import time
import warnings

import numpy as np
import pinocchio as pin
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core.errors import FormatError, InputError
from timor_core.kinematics.planning import PlannerConfig, edge_valid, path_length, plan, rrt_connect, shortcut
from timor_core.kinematics.trajectory import Trajectory, effective_acceleration_limits, time_parametrize
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


# -- time parametrization --------------------------------------------------------------------------


def test_time_parametrize_known_profiles():
    # triangle: distance 1, v 1, a 1 -> 2 s, peak velocity 1
    tr = time_parametrize([[0.0], [1.0]], [1.0], [1.0], dt=0.01)
    assert tr.duration == pytest.approx(2.0)
    assert np.max(tr.dq) == pytest.approx(1.0, abs=1e-9)
    assert tr.q[-1, 0] == 1.0 and tr.dq[-1, 0] == 0.0 and tr.ddq[-1, 0] == 0.0
    # trapezoid: distance 4 -> 1 s ramps, 3 s cruise
    tr = time_parametrize([[0.0], [-4.0]], [1.0], [1.0], dt=0.01)
    assert tr.duration == pytest.approx(5.0)
    assert tr.at(2.5)[0][0] == pytest.approx(-2.0)
    assert tr.at(2.5)[1][0] == pytest.approx(-1.0)
    assert tr.at(0.5)[0][0] == pytest.approx(-0.125)
    # synchronized joints: the slower joint sets the pace, the other follows the line
    tr = time_parametrize([[0.0, 0.0], [4.0, 1.0]], [1.0, 1.0], [1.0, 1.0], dt=0.01)
    assert tr.duration == pytest.approx(5.0)
    assert np.allclose(tr.q[:, 1] * 4, tr.q[:, 0])
    # a single waypoint or repeated waypoints
    tr = time_parametrize([[1.0, 2.0]], [1.0, 1.0], [1.0, 1.0])
    assert len(tr) == 1 and tr.duration == 0.0
    tr = time_parametrize([[0.0], [0.0], [1.0], [1.0]], [1.0], [1.0])
    assert tr.duration == pytest.approx(2.0)


def test_time_parametrize_infinite_limits():
    dt = 0.01
    tr = time_parametrize([[0.0], [1.0]], [2.0], [np.inf], dt=dt)
    assert np.max(np.abs(tr.ddq)) <= 2.0 / dt * (1 + 1e-9)
    assert tr.duration == pytest.approx(0.5 + dt, abs=dt)  # nearly bang-bang in velocity
    assert np.array_equal(effective_acceleration_limits([2.0, 1.0], [np.inf, 3.0], dt), [200.0, 3.0])
    tr = time_parametrize([[0.0, 0.0], [1.0, 1.0]], [np.inf, 1.0], [1.0, 1.0], dt=dt)  # inf velocity is fine
    assert tr.duration == pytest.approx(2.0)
    with pytest.raises(InputError, match="neither"):
        time_parametrize([[0.0], [1.0]], [np.inf], [np.inf])
    with pytest.raises(InputError):
        time_parametrize([[0.0], [1.0]], [0.0], [1.0])
    with pytest.raises(InputError):
        time_parametrize([[0.0], [1.0]], [1.0, 1.0], [1.0])
    with pytest.raises(InputError):
        time_parametrize([[0.0], [np.nan]], [1.0], [1.0])
    with pytest.raises(InputError):
        time_parametrize([[0.0], [1.0]], [1.0], [1.0], dt=0.0)


@st.composite
def timing_problems(draw):
    dof = draw(st.integers(1, 4))
    m = draw(st.integers(1, 6))
    coord = st.floats(-3.0, 3.0, allow_nan=False)
    path = np.array(draw(st.lists(st.lists(coord, min_size=dof, max_size=dof), min_size=m, max_size=m)))
    if m > 2 and draw(st.booleans()):
        path[1] = path[0]  # a repeated waypoint
    if dof > 1 and draw(st.booleans()):
        path[:, 0] = path[0, 0]  # a joint that never moves
    v = np.array(draw(st.lists(st.floats(0.2, 10.0), min_size=dof, max_size=dof)))
    a = np.array(draw(st.lists(st.one_of(st.floats(0.2, 100.0), st.just(math.inf)), min_size=dof, max_size=dof)))
    dt = draw(st.sampled_from([0.001, 0.004, 0.01, 0.05]))
    return path, v, a, dt


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(timing_problems())
def test_time_parametrize_respects_limits_and_follows_the_path(problem):
    path, v, a, dt = problem
    tr = time_parametrize(path, v, a, dt)
    a_eff = effective_acceleration_limits(v, a, dt)
    tol = 1 + 1e-9
    # uniform grid ending exactly at the last waypoint, at rest at both ends
    assert tr.t[0] == 0.0
    assert np.allclose(np.diff(tr.t), dt, rtol=0, atol=1e-12 * max(1.0, tr.duration))
    assert np.array_equal(tr.q[0], path[0]) and np.array_equal(tr.q[-1], path[-1])
    assert np.all(tr.dq[0] == 0) and np.all(tr.dq[-1] == 0)
    # limits, on the samples and between them
    assert np.all(np.abs(tr.dq) <= v * tol)
    assert np.all(np.abs(tr.ddq) <= a_eff * tol)
    if len(tr) > 1:
        dq_fd = np.diff(tr.q, axis=0) / dt
        ddq_fd = np.diff(tr.dq, axis=0) / dt
        assert np.all(np.abs(dq_fd) <= v * tol + 1e-12)
        assert np.all(np.abs(ddq_fd) <= a_eff * tol + 1e-9)
        # q and dq agree: the trapezoid rule on a velocity with bounded slope
        trap = np.diff(tr.q, axis=0) - 0.5 * (tr.dq[1:] + tr.dq[:-1]) * dt
        assert np.all(np.abs(trap) <= a_eff * dt * dt / 4 + 1e-9)
    # every waypoint is a sample, in order, and the motion between two waypoints stays on their segment
    idx = []
    start = 0
    for w in path:
        hits = np.flatnonzero(np.all(tr.q[start:] == w, axis=1))
        assert hits.size, f"waypoint {w} not passed"
        idx.append(start + int(hits[0]))
        start = idx[-1]
    for k in range(len(path) - 1):
        seg = tr.q[idx[k] : idx[k + 1] + 1]
        d = path[k + 1] - path[k]
        if not np.any(d):
            continue
        j = int(np.argmax(np.abs(d)))
        s = (seg[:, j] - path[k, j]) / d[j]
        assert np.all(s >= -1e-9) and np.all(s <= 1 + 1e-9)
        assert np.allclose(seg, path[k] + s[:, None] * d, atol=1e-9)
        assert np.all(np.diff(s) >= -1e-12)  # never backwards
    # no slower than per-segment minimum time plus rounding to whole samples
    bound = 0.0
    for k in range(len(path) - 1):
        d = np.abs(path[k + 1] - path[k])
        if not np.any(d):
            continue
        m = d > 0
        V, A = np.min(v[m] / d[m]), np.min(a_eff[m] / d[m])
        bound += 2 / math.sqrt(A) if V >= math.sqrt(A) else 1 / V + V / A  # V*V may overflow for tiny steps
        bound += dt
    assert tr.duration <= bound + 1e-9


# -- Trajectory ------------------------------------------------------------------------------------


def sample_trajectory() -> Trajectory:
    return time_parametrize([[0.0, 0.0], [1.0, -0.5], [1.5, 0.5]], [1.0, 2.0], [3.0, 4.0], dt=0.05)


def test_trajectory_basics_and_interpolation():
    tr = sample_trajectory()
    assert tr.dof == 2 and len(tr) == tr.t.size and tr.duration == tr.t[-1]
    with pytest.raises(ValueError):
        tr.q[0, 0] = 5.0  # read-only
    q, dq, ddq = tr.at(tr.t[7])
    assert np.allclose(q, tr.q[7]) and np.allclose(dq, tr.dq[7]) and np.allclose(ddq, tr.ddq[7])
    Q, _, _ = tr.at([-1.0, tr.duration + 1.0])
    assert np.array_equal(Q, [tr.q[0], tr.q[-1]])
    assert time_parametrize([[0.0, 0.0], [1.0, -0.5], [1.5, 0.5]], [1.0, 2.0], [3.0, 4.0], dt=0.05) == tr
    # positions between samples are exact for the piecewise-quadratic motion of a trapezoid
    # (distance 4, v = a = 1: accelerate for 1 s, cruise 3 s, brake 1 s; samples every 0.1 s)
    trap = time_parametrize([[0.0], [4.0]], [1.0], [1.0], dt=0.1)
    for t, q, dq in [
        (0.55, 0.5 * 0.55**2, 0.55),
        (0.95, 0.5 * 0.95**2, 0.95),
        (2.55, 2.05, 1.0),
        (4.75, 3.96875, 0.25),
    ]:
        assert trap.at(t)[0][0] == pytest.approx(q, abs=1e-12)
        assert trap.at(t)[1][0] == pytest.approx(dq, abs=1e-12)

    r = tr.resample(0.013)
    assert r.duration == tr.duration
    assert np.allclose(np.diff(r.t)[:-1], 0.013)
    assert 0 < np.diff(r.t)[-1] <= 0.013 + 1e-12
    assert np.array_equal(r.q[-1], tr.q[-1]) and np.array_equal(r.q[0], tr.q[0])
    assert np.all(np.abs(r.dq) <= np.abs(tr.dq).max(axis=0) + 1e-12)


def test_trajectory_concatenate():
    a = time_parametrize([[0.0], [1.0]], [1.0], [1.0], dt=0.1)
    b = time_parametrize([[1.0], [0.0]], [1.0], [1.0], dt=0.1)
    ab = Trajectory.concatenate([a, b])
    assert len(ab) == len(a) + len(b) - 1
    assert ab.duration == pytest.approx(a.duration + b.duration)
    assert np.all(np.diff(ab.t) > 0)
    assert np.array_equal(ab.q[-1], [0.0])
    with pytest.raises(InputError, match="does not start at the position"):
        Trajectory.concatenate([a, a])
    with pytest.raises(InputError):
        Trajectory.concatenate([])


def test_trajectory_json_round_trip():
    tr = sample_trajectory()
    back = Trajectory.from_json(json.loads(json.dumps(tr.to_json())))
    assert back == tr
    assert set(tr.to_json()) == {"t", "q", "dq", "ddq"}
    single = Trajectory.from_json({"t": [0], "q": [[1, 2]], "dq": [[0, 0]], "ddq": [[0, 0]]})
    assert single.dof == 2 and single.duration == 0.0


def _good() -> dict:
    return {"t": [0.0, 0.5, 1.0], "q": [[0, 0], [1, 1], [2, 2]], "dq": [[0, 0]] * 3, "ddq": [[0, 0]] * 3}


def _with(**changes) -> dict:
    d = _good()
    d.update(changes)
    return d


@pytest.mark.parametrize(
    ("data", "path"),
    [
        ([1, 2], "$"),
        ({k: v for k, v in _good().items() if k != "dq"}, "$"),
        (_with(t="0 1 2"), "$.t"),
        (_with(t=[0.0, True, 1.0]), "$.t[1]"),
        (_with(t=[]), "$.t"),
        (_with(t=[0.0, 0.5, 0.5]), "$.t[2]"),
        (_with(t=[0.0, 0.7, 0.5]), "$.t[2]"),
        (_with(t=[0.1, 0.5, 1.0]), "$.t[0]"),
        (_with(t=[0.0, float("nan"), 1.0]), "$.t[1]"),
        (_with(q=[[0, 0], [1, 1]]), "$.q"),
        (_with(q=[[0, 0], [1], [2, 2]]), "$.q[1]"),
        (_with(q=[[0, 0], [1, "1"], [2, 2]]), "$.q[1][1]"),
        (_with(q=[0, 1, 2]), "$.q[0]"),
        (_with(dq=[[0, 0, 0]] * 3), "$.dq"),
        (_with(ddq=[[0, 0], [0, float("inf")], [0, 0]]), "$.ddq[1][1]"),
        (_with(dq=[[0, 0], [float("nan"), 0], [0, 0]]), "$.dq[1][0]"),
    ],
)
def test_trajectory_bad_json_raises_format_error_with_path(data, path):
    with pytest.raises(FormatError) as info:
        Trajectory.from_json(data)
    assert info.value.path == path
    assert path in str(info.value)


def test_trajectory_json_path_prefix_and_constructor_checks():
    with pytest.raises(FormatError) as info:
        Trajectory.from_json(_with(t=[0.0, 0.7, 0.5]), path="$.tasks[0].trajectory")
    assert info.value.path == "$.tasks[0].trajectory.t[2]"
    with pytest.raises(FormatError, match="strictly increasing"):
        Trajectory(np.array([0.0, 0.0]), np.zeros((2, 1)), np.zeros((2, 1)), np.zeros((2, 1)))
    with pytest.raises(FormatError):
        Trajectory(np.array([0.0, 1.0]), np.zeros((3, 1)), np.zeros((2, 1)), np.zeros((2, 1)))
    flat = Trajectory(np.array([0.0, 1.0]), np.zeros(2), np.zeros(2), np.zeros(2))
    assert flat.q.shape == (2, 1)
