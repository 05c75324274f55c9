"""Solutions: goals achieved (and when), constraints over the whole trajectory, the report, CoBRA JSON, and
``solve_point_to_point`` on synthetic tasks (goals from the forward kinematics of random configurations, so
they are reachable) and on the real CoBRA tasks when ../shared is present.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from solution_cases import (
    BASE,
    ORDER,
    ROBCO_6DOF,
    TOLERANCE,
    blocking_task,
    entry,
    free_configurations,
    make_task,
    stationary,
    task_json,
    two_way,
    with_arrays,
)

from timor_core import FormatError, InputError, ModuleAssembly, ValidationError
from timor_core.kinematics.trajectory import Trajectory
from timor_core.task import Task
from timor_core.task.point_to_point import solve_point_to_point
from timor_core.task.solution import Solution, SolveError

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
TASKS = SHARED / "data" / "cobra" / "tasks"
IMPROV_6DOF = ["1", "21", "4", "21", "5", "23", "12"]


# one worker builds the solved solution once for all the tests here (xdist spreads a module's tests)
pytestmark = pytest.mark.xdist_group("solution")


@pytest.fixture(scope="module")
def assembly(robco) -> ModuleAssembly:
    return ModuleAssembly.from_serial_modules(robco, ROBCO_6DOF)


@pytest.fixture(scope="module")
def robot(assembly):
    return assembly.to_pin_robot(BASE)


@pytest.fixture(scope="module")
def synthetic(robot) -> dict:
    return task_json(robot)


@pytest.fixture(scope="module")
def solved(assembly, synthetic) -> Solution:
    return solve_point_to_point(make_task(synthetic), assembly, rng=1, cost_function="cyc,mass_0.5")


# -- solve_point_to_point and a valid solution -------------------------------------------------------


def test_point_to_point_solution_is_valid(solved, synthetic):
    report = solved.report()
    assert solved.valid and report["valid"], report
    assert solved.all_goals_achieved and report["all_goals_achieved"]
    assert all(c["ok"] and c["reason"] == "" for c in report["constraints"])
    assert np.allclose(solved.base_placement, BASE)
    times = [solved.goal_times[g] for g in ORDER]
    assert times == sorted(times) and times[0] == 0.0
    assert solved.goal_times["back"] == pytest.approx(solved.trajectory.duration)
    assert times[3] - times[2] == pytest.approx(0.25)
    assert np.allclose(np.diff(solved.trajectory.t), 0.01)
    for g in make_task(synthetic).goals:
        assert solved.goal_time(g.id) == solved.goal_times[g.id]
        assert solved.achieved(g) and solved.goal_reason(g) == ""
    json.dumps(report)  # JSON-serializable


def test_point_to_point_from_a_given_start(solved, assembly, synthetic):
    q0 = solved.trajectory.q[len(solved.trajectory) // 3]  # a valid configuration on the way, not at a goal
    data = copy.deepcopy(synthetic)
    data["goals"][-1].pop("returnToGoal")  # "back" now returns to the start
    sol = solve_point_to_point(make_task(data), assembly, rng=2, q_start=q0)
    assert sol.valid and sol.all_goals_achieved, sol.report()
    assert np.array_equal(sol.trajectory.q[0], q0) and np.allclose(sol.trajectory.q[-1], q0)
    assert sol.goal_times["g0"] > 0.0  # the robot moves to the first goal instead of starting there
    with pytest.raises(InputError, match="q_start"):
        solve_point_to_point(make_task(data), assembly, q_start=q0[:2])
    robot = assembly.to_pin_robot(BASE)
    samples = (robot.random_configuration(k) for k in range(200))
    bad = next(q for q in samples if robot.has_collision(q, make_task(data)))
    with pytest.raises(SolveError, match="start configuration .* is in collision"):
        solve_point_to_point(make_task(data), assembly, q_start=bad)


def test_cli_solution_from_a_given_start(solved, synthetic, tmp_path, capsys):
    from timor_core.cli.app import main

    task_file = tmp_path / "task.json"
    task_file.write_text(json.dumps(synthetic))
    q0 = solved.trajectory.q[len(solved.trajectory) // 3]
    base = ["solve", str(task_file), "--db", "robco_like", "--modules", *ROBCO_6DOF]
    out = tmp_path / "sol.json"
    assert main([*base, "--solution", str(out), "--start", ",".join(map(repr, q0.tolist()))]) == 0
    assert "valid" in capsys.readouterr().err
    sol = Solution.from_json_file(out, make_task(synthetic), "robco_like")
    assert sol.valid and np.allclose(sol.trajectory.q[0], q0)
    assert main([*base, "--start", "0,0,0,0,0,0"]) != 0  # --start without --solution
    assert "--start needs --solution" in capsys.readouterr().err
    assert main([*base, "--solution", str(tmp_path / "x.json"), "--start", "0,0"]) != 0
    assert "--start needs 6 values" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_searching_goal_times_finds_the_same_goals(solved, assembly, synthetic):
    searched = Solution(make_task(synthetic), assembly, solved.trajectory, BASE)
    assert searched.goal_times is None
    assert searched.valid and searched.all_goals_achieved
    for gid, t in solved.goal_times.items():
        assert searched.goal_time(gid) <= t + 1e-9  # the first time the goal is achieved
    assert searched.goal_time("hold") == pytest.approx(solved.goal_times["hold"])


def test_cost_of_a_solution(solved, assembly):
    assert solved.cost == pytest.approx(solved.trajectory.duration + 0.5 * assembly.mass)
    assert solved.cost_function.descriptor() == "cyc,mass_0.5"


# -- JSON ------------------------------------------------------------------------------------------


def test_json_round_trip(solved, synthetic, robco, tmp_path):
    path = solved.to_json_file(tmp_path / "out" / "solution.json")
    assert [p.name for p in path.parent.iterdir()] == ["solution.json"]  # atomic: no temp file left
    data = json.loads(path.read_text())
    for key in ("cost", "costFunction", "taskID", "version", "author", "email", "affiliation", "date"):
        assert key in data
    for key in ("computationTime", "tags", "moduleSet", "moduleOrder", "moduleConnection", "baseConnection"):
        assert key in data
    assert list(data)[:2] == ["cost", "costFunction"]
    assert data["taskID"] == "synthetic" and data["moduleSet"] == "robco_like"
    assert np.allclose(data["basePose"][0], BASE)
    assert set(data["trajectory"]) == {"t", "q", "dq", "ddq", "goal2time"}
    task = make_task(synthetic)
    back = Solution.from_json_file(path, task, robco)
    assert back.trajectory == solved.trajectory
    assert back.goal_times == solved.goal_times
    assert back.assembly.module_ids == solved.assembly.module_ids
    assert back.assembly.connections == solved.assembly.connections
    assert back.assembly.base_connector == solved.assembly.base_connector
    assert np.allclose(back.base_placement, BASE)
    assert back.cost_function == solved.cost_function
    assert back.stated_cost == pytest.approx(solved.cost)
    assert back.valid and back.all_goals_achieved
    assert Solution.from_json_file(path, {"other": task, "synthetic": task}, "robco_like").valid
    assert json.loads(back.to_json_file(tmp_path / "again.json").read_text()) == data


def test_json_header_and_extra_fields_survive(solved, synthetic, robco, tmp_path):
    data = solved.to_json_data()
    data.update({"author": ["A. Person"], "computationTime": 1.5, "notes": "hand-made", "myTool": {"v": 1}})
    data["trajectory"].pop("dq")
    data["trajectory"].pop("ddq")  # derived by finite differences when absent
    path = tmp_path / "s.json"
    path.write_text(json.dumps(data))
    back = Solution.from_json_file(path, make_task(synthetic), robco)
    assert back.header["author"] == ["A. Person"] and back.header["computationTime"] == 1.5
    assert back.to_json_data()["myTool"] == {"v": 1}
    assert back.trajectory.dq.shape == solved.trajectory.dq.shape


@pytest.mark.parametrize(
    ("mutate", "error", "where"),
    [
        (lambda d: d.pop("taskID"), FormatError, "$: missing required field 'taskID'"),
        (lambda d: d.update(taskID="another"), ValidationError, "$.taskID"),
        (lambda d: d.update(costFunction="mass,speed"), ValidationError, "$.costFunction"),
        (lambda d: d["trajectory"]["t"].__setitem__(2, 0.0), FormatError, "$.trajectory.t[2]"),
        (lambda d: d["trajectory"]["q"][1].pop(), FormatError, "$.trajectory.q[1]"),
        (lambda d: d["trajectory"]["goal2time"].update(nope=0.0), ValidationError, "$.trajectory.goal2time.nope"),
        (lambda d: d["trajectory"]["goal2time"].update(g0=99.0), ValidationError, "$.trajectory.goal2time.g0"),
        (lambda d: d["trajectory"]["goal2time"].update(g0="x"), FormatError, "$.trajectory.goal2time.g0"),
        (lambda d: d.pop("trajectory"), FormatError, "missing required field 'trajectory'"),
        (lambda d: d.update(date="yesterday"), ValidationError, "$.date"),
        (lambda d: d.update(basePose=[[[1, 0], [0, 1]]]), InputError, "$.basePose[0]"),
    ],
)
def test_bad_solution_json_names_file_and_path(solved, synthetic, robco, tmp_path, mutate, error, where):
    data = solved.to_json_data()
    mutate(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(error) as err:
        Solution.from_json_file(path, make_task(synthetic), robco)
    assert str(path) in str(err.value) and where in str(err.value)


def test_wrong_dof_and_invalid_json(solved, synthetic, robco, tmp_path):
    data = solved.to_json_data()
    data["trajectory"] = stationary(np.zeros(5)).to_json()
    path = tmp_path / "dof.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match=r"\$\.trajectory: .*5 joints, the robot has 6"):
        Solution.from_json_file(path, make_task(synthetic), robco)
    path.write_text("{")
    with pytest.raises(FormatError, match="invalid JSON"):
        Solution.from_json_file(path, make_task(synthetic), robco)


def test_position_velocity_and_torque_limits(solved, assembly, synthetic, robot):
    tr = solved.trajectory
    k = len(tr) // 2
    q = np.array(tr.q)
    q[k, 2] = robot.joint_limits[1, 2] + 0.1
    sol = Solution(make_task(synthetic), assembly, with_arrays(tr, q=q), BASE, solved.goal_times)
    r = entry(sol.report(), "joint")
    assert not sol.valid and not r["ok"] and r["time"] == pytest.approx(tr.t[k])
    assert robot.joints[2] in r["reason"] and "position" in r["reason"]

    fast = Trajectory(tr.t * 0.2, tr.q, tr.dq * 5, tr.ddq * 25)
    times = {g: t * 0.2 for g, t in solved.goal_times.items()}
    r = entry(Solution(make_task(synthetic), assembly, fast, BASE, times).report(), "joint")
    assert not r["ok"] and "velocity" in r["reason"] and "exceeds its limit 2.1" in r["reason"]

    heavy = copy.deepcopy(synthetic)
    heavy["header"]["gravity"] = [0, 0, -400.0]
    sol = Solution(make_task(heavy), assembly, tr, BASE, solved.goal_times)
    r = entry(sol.report(), "joint")
    assert not r["ok"] and "torque" in r["reason"] and r["time"] == 0.0
    assert sol.torques().shape == tr.q.shape


def test_self_collision_is_reported_with_geometries(assembly, robot):
    rng = np.random.default_rng(0)
    q = next(q for q in (robot.random_configuration(rng) for _ in range(2000)) if robot.has_self_collision(q))
    data = {
        "header": {"ID": "sc"},
        "constraints": [{"type": "selfCollisionFree"}, {"type": "collisionFree"}],
    }
    sol = Solution(make_task(data), assembly, stationary(q), BASE)
    report = sol.report()
    assert not sol.valid
    for ctype in ("selfCollisionFree", "collisionFree"):  # collisionFree includes self-collision (as the reference)
        r = entry(report, ctype)
        assert not r["ok"] and r["time"] == 0.0 and "self-collision (" in r["reason"] and " / " in r["reason"]


def test_obstacle_collision_and_safety_margin(assembly, robot):
    q = free_configurations(robot, np.random.default_rng(7), 1)[0]
    sol = Solution(make_task(blocking_task(robot, q, 0.0, None)), assembly, stationary(q), BASE)
    report = sol.report()
    assert entry(report, "selfCollisionFree")["ok"]
    r = entry(report, "collisionFree")
    assert not r["ok"] and "obstacle blocker" in r["reason"] and r["time"] == 0.0
    # move the sphere out along the tool axis until it is just clear; then only a safety margin catches it
    offset = next(
        o
        for o in np.arange(0.0, 0.6, 0.005)
        if Solution(make_task(blocking_task(robot, q, o, None)), assembly, stationary(q), BASE).valid
    )
    clear = offset + 0.005
    assert Solution(make_task(blocking_task(robot, q, clear, 0.0)), assembly, stationary(q), BASE).valid
    close = Solution(make_task(blocking_task(robot, q, clear, 0.05)), assembly, stationary(q), BASE)
    r = entry(close.report(), "collisionFree")
    assert not r["ok"] and "blocker" in r["reason"] and "safety margin 0.05" in r["reason"]


def test_base_placement_and_valid_joint_angles(solved, assembly, synthetic):
    moved = BASE.copy()
    moved[0, 3] += 0.05
    sol = Solution(make_task(synthetic), assembly, solved.trajectory, moved, solved.goal_times)
    r = entry(sol.report(), "basePlacement")
    assert not r["ok"] and "r_sph" in r["reason"] and not sol.valid
    data = copy.deepcopy(synthetic)
    data["constraints"].append({"type": "validJointAngles", "limits": [[-0.5] * 6, [0.5] * 6]})
    r = entry(
        Solution(make_task(data), assembly, solved.trajectory, BASE, solved.goal_times).report(), "validJointAngles"
    )
    assert not r["ok"] and "outside [-0.5, 0.5]" in r["reason"] and r["time"] is not None


def test_goal_order(solved, assembly, synthetic):
    data = copy.deepcopy(synthetic)
    data["constraints"][4]["order"] = ["g2", "g1"]
    sol = Solution(make_task(data), assembly, solved.trajectory, BASE, solved.goal_times)
    r = entry(sol.report(), "allGoalsFulfilledInOrder")
    assert not r["ok"] and "'g1'" in r["reason"] and "before goal 'g2'" in r["reason"]
    searched = Solution(make_task(data), assembly, solved.trajectory, BASE)
    r = entry(searched.report(), "allGoalsFulfilledInOrder")
    assert not r["ok"] and "'g1' is not achieved after goal 'g2'" in r["reason"]


def test_unknown_constraint_types_are_reported_unchecked(solved, assembly, synthetic):
    data = copy.deepcopy(synthetic)
    data["constraints"].append({"type": "goalsBySameRobot", "goals": ["g0"]})
    report = Solution(make_task(data), assembly, solved.trajectory, BASE, solved.goal_times).report()
    r = entry(report, "goalsBySameRobot")
    assert r["ok"] and r["checked"] is False and report["valid"]


def test_at_reach_and_goal_times(assembly, robot):
    tr, qa, qb = two_way(robot)
    k = int(np.argmax(np.abs(tr.dq).max(axis=1)))  # the fastest sample
    pose = {"nominal": robot.fk(tr.q[k]).tolist()}
    data = {
        "header": {"ID": "moving"},
        "goals": [{"ID": "at", "type": "at", "goalPose": pose}, {"ID": "reach", "type": "reach", "goalPose": pose}],
    }
    given = {"at": float(tr.t[k]), "reach": float(tr.t[k])}
    sol = Solution(make_task(data), assembly, tr, BASE, given)
    assert sol.achieved("at") and sol.goal_time("at") == pytest.approx(tr.t[k])
    assert not sol.achieved("reach") and "not standing still" in sol.goal_reason("reach")
    searched = Solution(make_task(data), assembly, tr, BASE)
    assert searched.goal_time("at") == pytest.approx(tr.t[k]) and not searched.achieved("reach")
    off = Solution(make_task(data), assembly, tr, BASE, {"at": float(tr.t[k]) + 0.005})
    assert not off.achieved("at") and "not a sample time" in off.goal_reason("at")
    assert not off.achieved("reach") and "no time for this goal" in off.goal_reason("reach")
    far = np.eye(4)
    far[:3, 3] = 10.0
    lost = make_task(
        {"header": {"ID": "x"}, "goals": [{"ID": "far", "type": "at", "goalPose": {"nominal": far.tolist()}}]}
    )
    reason = Solution(lost, assembly, tr, BASE).goal_reason("far")
    assert "never comes within the tolerance" in reason and "x = " in reason


def test_pause_and_return_to(assembly, robot):
    tr, qa, qb = two_way(robot)
    hold = stationary(qa, 31)
    full = Trajectory.concatenate([tr, hold])
    end = float(full.t[-1])
    data = {
        "header": {"ID": "pause"},
        "goals": [
            {"ID": "p", "type": "pause", "duration": 0.3},
            {"ID": "long", "type": "pause", "duration": 50.0},
            {"ID": "home", "type": "returnTo"},
            {"ID": "loose", "type": "returnTo", "returnToGoal": "long"},
        ],
    }
    sol = Solution(make_task(data), assembly, full, BASE)
    assert sol.goal_time("p") == pytest.approx(float(tr.t[-1]) + 0.3)
    assert not sol.achieved("long") and "before t=0" in sol.goal_reason("long")
    assert sol.goal_time("home") == pytest.approx(float(tr.t[-1]))  # back at the start configuration
    assert not sol.achieved("loose") and "'long', is not achieved" in sol.goal_reason("loose")
    mid = float(tr.t[len(tr) // 4])
    given = Solution(make_task(data), assembly, full, BASE, {"p": mid, "home": mid})
    assert "moving during the pause" in given.goal_reason("p")
    assert "from q at t=0 s" in given.goal_reason("home")
    assert Solution(make_task(data), assembly, full, BASE, {"p": end, "home": end}).achieved("home")


def test_follow(assembly, robot):
    tr, qa, qb = two_way(robot)
    poses = [{"nominal": robot.fk(q).tolist(), **TOLERANCE} for q in tr.q[10:31]]
    data = {
        "header": {"ID": "follow", "timeStepSize": 0.01},
        "goals": [{"ID": "f", "type": "follow", "trajectory": {"pose": poses}}],
    }
    sol = Solution(make_task(data), assembly, tr, BASE)
    assert sol.achieved("f") and sol.goal_time("f") == pytest.approx(tr.t[30])
    assert Solution(make_task(data), assembly, tr, BASE, {"f": float(tr.t[30])}).achieved("f")
    late = Solution(make_task(data), assembly, tr, BASE, {"f": float(tr.t[35])})
    assert not late.achieved("f") and "pose 0 of 21 missed" in late.goal_reason("f")
    early = Solution(make_task(data), assembly, tr, BASE, {"f": float(tr.t[5])})
    assert "not a sample" in early.goal_reason("f")


def test_goal_constraints(assembly, robot):
    tr, qa, qb = two_way(robot)
    pose = {"nominal": robot.fk(qb).tolist()}
    tight = {"type": "validJointAngles", "limits": [[-0.01] * 6, [0.01] * 6]}
    data = {
        "header": {"ID": "local"},
        "goals": [
            {"ID": "ok", "type": "reach", "goalPose": pose, "constraints": [{"type": "joint", "parts": ["q"]}]},
            {"ID": "bad", "type": "reach", "goalPose": pose, "constraints": [tight]},
        ],
    }
    sol = Solution(make_task(data), assembly, tr, BASE)
    assert sol.achieved("ok")
    assert not sol.achieved("bad") and "goal constraint validJointAngles fails" in sol.goal_reason("bad")


# -- the solver's limits ---------------------------------------------------------------------------


def test_solver_reports_unreachable_and_unsupported_goals(assembly, synthetic):
    data = copy.deepcopy(synthetic)
    data["goals"][1]["goalPose"]["nominal"][0][3] = 25.0
    with pytest.raises(SolveError, match="goal 'g1'.*unreachable"):
        solve_point_to_point(make_task(data), assembly, rng=0)
    pose = data["goals"][0]["goalPose"]
    follow = {"header": {"ID": "f"}, "goals": [{"ID": "f", "type": "follow", "trajectory": {"pose": [pose]}}]}
    with pytest.raises(SolveError, match="follow goals are not supported"):
        solve_point_to_point(make_task(follow), assembly, rng=0)


def test_bad_arguments(solved, assembly, synthetic):
    with pytest.raises(InputError):
        Solution(make_task(synthetic), assembly, "not a trajectory")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="goal2time.nope"):
        Solution(make_task(synthetic), assembly, solved.trajectory, BASE, {"nope": 0.0})


# -- the real CoBRA tasks ---------------------------------------------------------------------------

needs_shared = pytest.mark.skipif(not TASKS.is_dir(), reason=f"real CoBRA tasks not available (expected {TASKS})")


@needs_shared
@pytest.mark.parametrize("name", ["PTP_3", "PTP_pause"])
def test_real_tasks_solved_with_improv(improv, name, tmp_path):
    task = Task.from_json_file(TASKS / "simple" / f"{name}.json")
    assembly = ModuleAssembly.from_serial_modules(improv, IMPROV_6DOF)
    sol = solve_point_to_point(task, assembly, rng=0, cost_function="cyc,mechEnergy")
    report = sol.report()
    assert report["valid"] and report["all_goals_achieved"], report
    assert {c["type"] for c in report["constraints"]} >= {"joint", "collisionFree", "basePlacement"}
    back = Solution.from_json_file(sol.to_json_file(tmp_path / "s.json"), {task.id: task}, improv)
    assert back.valid and back.goal_times == sol.goal_times
    assert back.cost == pytest.approx(sol.cost)
