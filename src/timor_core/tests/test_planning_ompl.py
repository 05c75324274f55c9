"""OMPL's planners over timor's model (issue 17): every planner by name finds valid paths around a wall in the toy
joint space and on a real robot, through the same plan() API and `timor solve --planner`."""

from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("ompl")

from test_planning import GOAL, HI, LO, RES, START, WALL, assert_edges_valid, ring_valid, wall_valid  # noqa: E402

from timor_core.errors import InputError  # noqa: E402
from timor_core.kinematics.ompl_planning import OMPL_PLANNERS, ompl_path  # noqa: E402
from timor_core.kinematics.planning import PlannerConfig, joint_path, plan  # noqa: E402
from timor_core.model.assembly import ModuleAssembly  # noqa: E402
from timor_core.model.db import ModulesDB  # noqa: E402


@pytest.mark.parametrize("planner", OMPL_PLANNERS)
def test_every_ompl_planner_goes_around_the_wall(planner):
    # up to 3 s of wall time (0.3 s was too little for RRTstar on a loaded CI machine); the anytime planners stop at
    # their first exact solution (they used to shorten it for the whole 3 s: ~3.5 CPU-s each for RRTstar and BITstar)
    path = ompl_path(START, GOAL, wall_valid(RES), LO, HI, planner=planner, time_limit=3.0, check_resolution=RES,
                     seed=1, first_solution=True)  # fmt: skip
    assert path is not None
    assert np.array_equal(path[0], START) and np.array_equal(path[-1], GOAL)
    assert_edges_valid(path, wall_valid(0.0), RES / 10)  # re-checked against the true wall, ten times finer
    assert any(q[1] < WALL[0][1] for q in path)  # through the gap at the bottom


@pytest.mark.parametrize("planner", ["RRTstar", "BITstar"])
def test_first_solution_ends_an_anytime_planner_before_its_time_limit(planner):
    """Without ``first_solution`` these planners shorten their path until the time limit; with it they return
    their first exact solution, a valid path around the wall, long before (a planner that ran out its limit takes
    at least the limit)."""
    start = time.monotonic()
    path = ompl_path(START, GOAL, wall_valid(RES), LO, HI, planner=planner, time_limit=30.0, check_resolution=RES,
                     first_solution=True)  # fmt: skip
    assert time.monotonic() - start < 30.0
    assert path is not None and np.array_equal(path[0], START) and np.array_equal(path[-1], GOAL)
    assert_edges_valid(path, wall_valid(0.0), RES / 10)


def test_an_enclosed_goal_gives_none_within_the_budget():
    assert ompl_path(START, GOAL, ring_valid(RES), LO, HI, planner="RRTConnect", time_limit=0.2) is None


def test_planner_names_are_checked():
    with pytest.raises(InputError, match="unknown planner"):
        PlannerConfig(planner="RRT*")
    with pytest.raises(InputError, match="unknown OMPL planner"):
        ompl_path(START, GOAL, wall_valid(RES), LO, HI, planner="nosuch")


@pytest.mark.parametrize("planner", ["timor", "RRTConnect", "BITstar"])
def test_joint_path_with_each_planner_then_shortcut(planner):
    config = PlannerConfig(planner=planner, time_limit=0.5)
    path = joint_path(START, GOAL, wall_valid(RES), LO, HI, rng=3, config=config)
    assert path is not None
    assert_edges_valid(path, wall_valid(0.0), RES / 10)


def test_plan_on_a_real_robot_with_ompl():
    arm = ["base", "J", "L_250", "J", "L_150", "J", "gripper"]
    robot = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), arm).robot
    rng = np.random.default_rng(0)
    qs = []
    while len(qs) < 2:
        q = robot.random_configuration(rng)
        if not robot.has_self_collision(q):
            qs.append(q)
    traj = plan(robot, qs[0], qs[1], rng=0, config=PlannerConfig(planner="RRTConnect", time_limit=2.0))
    assert traj is not None
    assert np.allclose(traj.q[0], qs[0]) and np.allclose(traj.q[-1], qs[1])
    assert not any(robot.has_self_collision(q) for q in traj.q)
