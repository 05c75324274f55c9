"""The ``endEffector`` constraint (TCP pose and speed bounds), evaluated on solutions, and goals that refuse
task-level constraints (issue 13 items 11 and 12)."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from solution_cases import BASE, ROBCO_6DOF, make_task, task_json

from timor_core import ModuleAssembly, ValidationError
from timor_core.task import EndEffector, Task
from timor_core.task.point_to_point import solve_point_to_point
from timor_core.task.solution import Solution

# one worker builds the planned solution once for all the tests here (xdist spreads a module's tests)
pytestmark = pytest.mark.xdist_group("end_effector_constraint")


@pytest.fixture(scope="module")
def assembly(robco) -> ModuleAssembly:
    return ModuleAssembly.from_serial_modules(robco, ROBCO_6DOF)


@pytest.fixture(scope="module")
def base_task(assembly) -> dict:
    data = task_json(assembly.to_pin_robot(BASE))
    data["constraints"] = [c for c in data["constraints"] if c["type"] != "allGoalsFulfilledInOrder"]
    return data


@pytest.fixture(scope="module")
def solution(assembly, base_task) -> Solution:
    return solve_point_to_point(make_task(base_task), assembly, rng=1)


def _tcp_speeds(solution: Solution) -> tuple[np.ndarray, np.ndarray]:
    robot = solution.robot
    tr = solution.trajectory
    twists = np.array([robot.jacobian(q) @ dq for q, dq in zip(tr.q, tr.dq)])
    return np.linalg.norm(twists[:, :3], axis=1), np.linalg.norm(twists[:, 3:], axis=1)


def _with(solution: Solution, data: dict, *constraints: dict) -> Solution:
    data = copy.deepcopy(data)
    data["constraints"] += list(constraints)
    return Solution(make_task(data), solution.assembly, solution.trajectory, solution.base_placement)


def test_speed_bounds_are_checked_on_every_sample(solution, base_task):
    v, w = _tcp_speeds(solution)
    assert v.max() > 0.05 and w.max() > 0.05  # the robot really moves
    loose = {"type": "endEffector", "v_max": float(v.max()) * 1.01, "o_max": float(w.max()) * 1.01}
    assert _with(solution, base_task, loose).valid
    tight = {"type": "endEffector", "v_max": float(v.max()) * 0.5}
    sol = _with(solution, base_task, tight)
    assert not sol.valid
    entry = next(r for r in sol.failed_constraints() if r["type"] == "endEffector")
    k = int(np.argmax(v > float(v.max()) * 0.5))
    assert entry["time"] == pytest.approx(solution.trajectory.t[k]) and "TCP speed" in entry["reason"]
    spin = {"type": "endEffector", "o_max": float(w.max()) * 0.5}
    assert "angular speed" in _with(solution, base_task, spin).failed_constraints()[0]["reason"]
    never_still = {"type": "endEffector", "v_min": 1e-3}  # the trajectory starts and stops at rest
    assert not _with(solution, base_task, never_still).valid


def test_pose_bound_and_round_trip(solution, base_task):
    T = solution.tcp_poses[0]
    zmin = float(np.min([P[2, 3] for P in solution.tcp_poses]))
    floor = {  # the TCP stays above a plane below its lowest point: a pose tolerance in z only
        "nominal": np.eye(4).tolist(),
        "toleranceProjection": ["z"],
        "tolerance": [[zmin - 0.01, 10.0]],
    }
    ok = {"type": "endEffector", "pose": floor}
    assert _with(solution, base_task, ok).valid
    above = copy.deepcopy(floor)
    above["tolerance"] = [[float(T[2, 3]) + 0.001, 10.0]]
    sol = _with(solution, base_task, {"type": "endEffector", "pose": above})
    assert not sol.valid and sol.failed_constraints()[0]["time"] == 0.0
    task = make_task({**base_task, "constraints": [*base_task["constraints"], ok]})
    constraint = next(c for c in task.constraints if isinstance(c, EndEffector))
    again = Task.from_json_data(json.loads(json.dumps(task.to_json_data())))
    assert next(c for c in again.constraints if isinstance(c, EndEffector)).to_json() == constraint.to_json()


def test_as_a_goal_constraint(solution, base_task):
    """During a goal, the constraint applies to the goal's samples only (a pause: the robot is still)."""
    data = copy.deepcopy(base_task)
    hold = next(g for g in data["goals"] if g["ID"] == "hold")
    hold["constraints"] = [{"type": "endEffector", "v_max": 1e-6, "o_max": 1e-6}]
    sol = Solution(make_task(data), solution.assembly, solution.trajectory, solution.base_placement)
    assert sol.achieved("hold"), sol.goal_reason("hold")
    data["goals"][0]["constraints"] = [{"type": "endEffector", "v_min": 1.0}]
    sol = Solution(make_task(data), solution.assembly, solution.trajectory, solution.base_placement)
    assert not sol.achieved("g0") and "TCP speed" in sol.goal_reason("g0")


@pytest.mark.parametrize(
    ("constraint", "message"),
    [
        ({"type": "endEffector", "v_min": 2.0, "v_max": 1.0}, "v_min > v_max"),
        ({"type": "endEffector", "o_max": "fast"}, "o_max"),
    ],
)
def test_bad_end_effector_constraints(base_task, constraint, message):
    data = copy.deepcopy(base_task)
    data["constraints"].append(constraint)
    with pytest.raises(Exception, match=message) as err:
        make_task(data)
    assert getattr(err.value, "path", "").startswith(f"$.constraints[{len(data['constraints']) - 1}]")


@pytest.mark.parametrize(
    "constraint",
    [
        {"type": "allGoalsFulfilledInOrder", "order": ["g0"]},
        {"type": "allGoalsFulfilled"},
        {"type": "basePlacement", "pose": {"nominal": np.eye(4).tolist()}},
        {"type": "goalsBySameRobot"},
    ],
)
def test_goals_refuse_task_level_constraints(base_task, constraint):
    data = copy.deepcopy(base_task)
    data["goals"][0]["constraints"] = [constraint]
    with pytest.raises(ValidationError, match="task-level constraint") as err:
        make_task(data)
    assert err.value.path == "$.goals[0].constraints[0].type"
