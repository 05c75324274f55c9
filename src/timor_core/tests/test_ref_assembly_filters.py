"""Compatibility suite (issue 13 item 12): the reference toolbox's tests/test_assembly_filters.py (timor-python
1.1.1) ported to timor_core's filter chain (``timor_core.search.filtering.filters``), on example-robot-data's Panda
imported as a one-module set, as the reference does with ``ModuleAssembly.from_monolithic_robot``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_ref_robot_setup import panda_paths  # noqa: F401  (fixture)

from timor_core.export.urdf_import.importer import db_from_urdf
from timor_core.search.filtering.filter_chain import FilterChain
from timor_core.search.filtering.filters import DEFAULT_FILTER_NAMES, Filter, FilterConfig, default_filters
from timor_core.task import Task

TOL = {"toleranceProjection": ["r_sph", "Theta_R"], "tolerance": [[0, 0.002], [0, 0.05]]}


@pytest.fixture(scope="module")
def panda_db(panda_paths):  # noqa: F811
    urdf, packages = panda_paths
    return db_from_urdf(urdf, [packages], tcp_link="panda_hand", module_id="panda")


@pytest.fixture(scope="module")
def poses(panda_db):
    from timor_core import ModuleAssembly

    robot = ModuleAssembly.from_serial_modules(panda_db, ["panda"]).robot
    rng = np.random.default_rng(99)
    qs = [robot.random_configuration(rng) for _ in range(30)]
    return [robot.fk(q) for q in qs if not robot.has_self_collision(q) and robot.fk(q)[2, 3] > 0.2]


def _task(poses, obstacles=(), gravity=(0.0, 0.0, -9.81)) -> Task:
    goals = [{"ID": f"g{k}", "type": "at", "goalPose": {"nominal": T.tolist(), **TOL}} for k, T in enumerate(poses)]
    return Task.from_json_data(
        {"header": {"ID": "filters", "gravity": list(gravity)}, "obstacles": list(obstacles), "goals": goals}
    )


def test_default_filters():
    """ref: test_assembly_filters.py::test_default_filters"""
    filters = default_filters()
    assert len(filters) == len(DEFAULT_FILTER_NAMES) > 0 and all(isinstance(f, Filter) for f in filters)


def test_ik_filter(panda_db, poses):
    """ref: test_assembly_filters.py::test_ik_filter and ::test_intermediate_results"""
    assert len(poses) >= 3
    chain = FilterChain(_task(poses[:3]), panda_db, "mass", FilterConfig(torques=False))
    candidate = chain(("panda",))
    assert candidate.failed_filter is None, candidate.reason
    assert len(candidate.goals) == 3 and all(g.success and g.q is not None for g in candidate.goals.values())
    far = np.eye(4)
    far[:3, 3] = (5.0, 0.0, 0.5)
    unsolvable = FilterChain(_task([far]), panda_db, "mass")(("panda",))
    assert unsolvable.failed_filter == "workspace"
    # deliberate difference: per-goal results live in the candidate's GoalIK records (no separate
    # "intermediate results" object that refuses being overwritten)


def _goal_task(goals: list[dict]) -> Task:
    return Task.from_json_data({"header": {"ID": "reach"}, "obstacles": [], "goals": goals})


def test_length_filter(panda_db, poses):
    """ref: test_assembly_filters.py::test_length_filter: goals the robot reaches pass, goals beyond its reach
    (1.05 x, random directions) and a follow goal out to 1.5 x are discarded by the reach ("workspace") filter.
    Deliberate difference: the reference bounds the reach by the sum of the module lengths and passes goals at
    0.95 x that sum; timor's nested reach bounds are tighter (a goal at 0.95 x the reach below the base is
    discarded rightly), so the 0.95 x case is checked with goals the robot does reach at their distance."""
    from timor_core import ModuleAssembly

    task = _task(poses[:1])
    assert FilterChain(task, panda_db, "mass", FilterConfig(max_modules=1))(("panda",)).failed_filter is None
    too_many = FilterChain(task, panda_db, "mass", FilterConfig(max_dof=6))(("panda",))
    assert too_many.failed_filter == "limits"
    robot = ModuleAssembly.from_serial_modules(panda_db, ["panda"]).robot
    reach = robot.reach()
    rng = np.random.default_rng(7)
    config = FilterConfig(torques=False)
    for _ in range(10):  # reachable goals (the robot's own poses) are never discarded for their distance
        T = robot.fk(robot.random_configuration(rng))
        chain = FilterChain(_goal_task([{"ID": "g", "type": "at", "goalPose": {"nominal": T.tolist()}}]), panda_db,
                            "mass", config)  # fmt: skip
        assert chain(("panda",)).failed_filter != "workspace"
    for _ in range(10):
        direction = rng.normal(size=3)
        T = np.eye(4)
        T[:3, 3] = direction / np.linalg.norm(direction) * reach * 1.05
        chain = FilterChain(_goal_task([{"ID": "g", "type": "at", "goalPose": {"nominal": T.tolist()}}]), panda_db,
                            "mass", config)  # fmt: skip
        assert chain(("panda",)).failed_filter == "workspace"
    far = np.eye(4)
    far[:3, 3] = (1.5 * reach, 0.0, 0.3)
    path = [{"nominal": (np.eye(4) * (1 - a) + far * a).tolist()} for a in np.linspace(0.2, 1, 20)]
    for p in path:  # interpolated translations; the rotation stays the identity
        p["nominal"][3] = [0.0, 0.0, 0.0, 1.0]
        p["nominal"][0][0] = p["nominal"][1][1] = p["nominal"][2][2] = 1.0
    follow = _goal_task([{"ID": "f", "type": "follow", "trajectory": {"pose": path}}])
    assert FilterChain(follow, panda_db, "mass", config)(("panda",)).failed_filter == "workspace"


def test_limits_met_filter(panda_db, poses):
    """ref: test_assembly_filters.py::test_limits_met_filter (goal configurations within validJointAngles)"""
    task = _task(poses[:1])
    data = task.to_json_data()
    data["constraints"] = [{"type": "validJointAngles", "limits": [[-0.001] * 9, [0.001] * 9]}]
    c = FilterChain(Task.from_json_data(data), panda_db, "mass", FilterConfig(retries=1))(("panda",))
    assert c.failed_filter == "joint_limits"


def test_ik_solvable_with_obstacle(panda_db, poses):
    """ref: test_assembly_filters.py::test_InverseKinematicSolvableWithObstacle: the filter chain names the obstacle
    that blocks a goal; the slow test below runs the reference's 100 random goals beside its 2 m box at (1.5, 0, 1):
    a solution found from the goal's own q is free of collisions, and where none is found that q itself collides."""
    T = poses[0]
    block = np.eye(4)
    block[:3, 3] = T[:3, 3]
    obstacle = {"ID": "block", "collision": [{"type": "box", "parameters": {"x": 0.2, "y": 0.2, "z": 0.2},
                                               "pose": block.tolist()}]}  # fmt: skip
    free = FilterChain(_task([T]), panda_db, "mass", FilterConfig(torques=False))(("panda",))
    assert free.failed_filter is None
    blocked = FilterChain(_task([T], [obstacle]), panda_db, "mass", FilterConfig(torques=False))(("panda",))
    assert blocked.failed_filter == "ik_task" and "block" in blocked.reason


@pytest.mark.slow
def test_ik_solvable_with_obstacle_100_cases(panda_db):
    """ref: test_assembly_filters.py::test_InverseKinematicSolvableWithObstacle, its 100 random cases (see above)."""
    from timor_core import ModuleAssembly

    box = np.eye(4)
    box[:3, 3] = (1.5, 0.0, 1.0)
    wall = {"ID": "box", "collision": [{"type": "box", "parameters": {"x": 2.0, "y": 2.0, "z": 2.0},
                                        "pose": box.tolist()}]}  # fmt: skip
    robot = ModuleAssembly.from_serial_modules(panda_db, ["panda"]).robot
    rng = np.random.default_rng(11)
    outcomes = {True: 0, False: 0}
    for _ in range(100):
        q_sample = robot.random_configuration(rng)
        goal = robot.fk(q_sample)
        task = _task([goal], [wall])
        q, found = robot.ik(goal, task=task, q_init=q_sample, max_n_tries=1)
        outcomes[bool(found)] += 1
        if found:  # (a collision with the box or the robot itself)
            assert not robot.has_collision(q, task) and np.allclose(robot.fk(q)[:3, 3], goal[:3, 3], atol=1e-3)
        else:
            assert robot.has_collision(q_sample, task)
    assert outcomes[True] and outcomes[False]  # both branches were checked


def test_ik_solvable_with_tau(panda_db, poses):
    """ref: test_assembly_filters.py::test_InverseKinematicSolvableWithTau; the slow test below runs 100 random goals
    under a load (gravity x 8) that makes the static torques exceed the limits in some of them: where the chain
    passes, the torques at its solution are within the limits, where the torque filter fails they are not."""
    ok = FilterChain(_task(poses[:1]), panda_db, "mass")(("panda",))
    assert ok.failed_filter is None
    heavy = FilterChain(_task(poses[:1], gravity=(0.0, 0.0, -9810.0)), panda_db, "mass", FilterConfig(retries=0))
    assert heavy(("panda",)).failed_filter == "torques"
    assert math.isfinite(ok.cost or 0.0)


@pytest.mark.slow
def test_ik_solvable_with_tau_100_cases(panda_db):
    """ref: test_assembly_filters.py::test_InverseKinematicSolvableWithTau, its 100 random cases (see above). With the
    compiled IK kernels (the ahead-of-time builds where in place): the torque filter is what this test checks, and
    nothing here is compared across processes (it took 4.3 CPU-s with the interpreted IK, ~1.3 with these,
    2026-11-29), and test_ik_kernel holds the two IKs' answers equal. The suite's default comes back after
    (conftest's _default_kernels)."""
    from timor_core import ModuleAssembly
    from timor_core.common import compiled

    compiled.use_compiled(True)
    robot = ModuleAssembly.from_serial_modules(panda_db, ["panda"]).robot
    rng = np.random.default_rng(12)
    gravity = (0.0, 0.0, -9.81 * LOAD)
    verdicts = {"passed": 0, "torques": 0}
    for _ in range(100):
        goal = robot.fk(robot.random_configuration(rng))
        candidate = FilterChain(_task([goal], gravity=gravity), panda_db, "mass", FilterConfig(retries=0))(("panda",))
        result = next(iter(candidate.goals.values()), None)
        if candidate.failed_filter is None:
            verdicts["passed"] += 1
            tau = robot.static_torque(result.q) * LOAD
            assert np.all(np.abs(tau) <= robot.torque_limits + 1e-9)
        elif candidate.failed_filter == "torques":
            verdicts["torques"] += 1
            tau = robot.static_torque(result.q) * LOAD
            assert np.any(np.abs(tau) > robot.torque_limits)
    assert verdicts["passed"] and verdicts["torques"]  # both verdicts were checked


LOAD = 8.0  # gravity times 8: the Panda's static torques exceed its limits in part of the workspace
