"""The task command line: ``timor task validate``, ``timor task info`` and ``timor solve`` (per-goal feedback).

``solve`` is the feedback loop of the Timor paper's user study; it is run once through a real subprocess on the
study's task with a six-DOF IMPROV assembly. Every answer it gives is checked against the models: a goal
reported reached has a configuration that meets the goal's tolerance without collisions.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from timor_core import ModuleAssembly, ModulesDB
from timor_core.cli.app import main
from timor_core.task import Task
from timor_core.task.feedback import check_task_file, goal_feedback, solve_feedback, task_base_placement, task_info

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
TASKS = SHARED / "data" / "cobra" / "tasks"
IMPROV = SHARED / "data" / "cobra" / "modules" / "IMPROV" / "modules.json"
USER_STUDY = TASKS / "user_study.json"
PTP_2 = TASKS / "simple" / "PTP_2.json"
IMPROV_6DOF = ["1", "21", "4", "21", "5", "23", "12"]
#: a robco_like arm that reaches both goals of the user study
ROBCO_6DOF = ["base", "J", "L_250", "J", "L_100", "J", "L_100", "J", "L_100", "J", "L_100", "J", "gripper"]

needs_shared = pytest.mark.skipif(not TASKS.is_dir(), reason=f"real CoBRA tasks not available (expected {TASKS})")


def run(capsys, *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:  # an option refused by argparse itself (--cost is checked while parsing)
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def check_feedback(result: dict, task: Task, assembly: ModuleAssembly) -> None:
    """The exact JSON layout, and every 'reached' backed by a configuration that really reaches the goal."""
    assert set(result) == {"goals", "cost"}
    assert [g["id"] for g in result["goals"]] == [g.id for g in task.goals]
    robot = assembly.to_pin_robot(task_base_placement(task))
    for entry, goal in zip(result["goals"], task.goals):
        assert set(entry) == {"id", "reached", "q", "reason"}
        assert isinstance(entry["reached"], bool) and isinstance(entry["reason"], str)
        if entry["reached"] and goal.type_name in ("at", "reach"):
            q = np.array(entry["q"])
            assert q.shape == (robot.dof,)
            assert goal.goal_pose.valid(robot.fk(q))
            assert not robot.has_collision(q, task)
        if not entry["reached"]:
            assert entry["q"] is None and entry["reason"]


def bad_task(tmp_path: Path) -> Path:
    path = tmp_path / "bad.json"
    eye = np.eye(4).tolist()
    path.write_text(
        json.dumps(
            {
                "header": {"ID": "bad", "timeStepSize": -1},
                "obstacles": [{"ID": "o", "collision": [{"type": "box", "parameters": {"x": 1}, "pose": eye[:3]}]}],
                "goals": [
                    {"ID": "g", "type": "teleport"},
                    {
                        "ID": "h",
                        "type": "at",
                        "goalPose": {"nominal": eye, "toleranceProjection": ["x"], "tolerance": [[1, -1]]},
                    },
                ],
                "constraints": [{"type": "joint", "parts": ["qq"]}],
            }
        )
    )
    return path


def small_task(tmp_path: Path, robot) -> Path:
    """A self-made task (no ../shared needed): one reachable goal, one out of reach, a pause, a return."""
    rng = np.random.default_rng(2)
    q = next(q for q in (robot.random_configuration(rng) for _ in range(1000)) if not robot.has_self_collision(q))
    reachable = robot.fk(q).tolist()
    far = np.eye(4)
    far[:3, 3] = [4.0, 0.0, 1.0]
    tol = {"toleranceProjection": ["r_sph", "Theta_R"], "tolerance": [[0, 0.002], [0, 0.1]]}
    data = {
        "header": {"ID": "small", "taskName": "small task"},
        "obstacles": [],
        "goals": [
            {"ID": "near", "type": "reach", "goalPose": {"nominal": reachable, **tol}},
            {"ID": "far", "type": "at", "goalPose": {"nominal": far.tolist(), **tol}},
            {"ID": "wait", "type": "pause", "duration": 1.5},
            {"ID": "again", "type": "returnTo", "returnToGoal": "near"},
        ],
        "constraints": [{"type": "joint", "parts": ["q", "tau"]}, {"type": "selfCollisionFree"}],
    }
    path = tmp_path / "small.json"
    path.write_text(json.dumps(data))
    return path


@pytest.fixture(scope="module")
def robco_assembly(robco) -> ModuleAssembly:
    return ModuleAssembly.from_serial_modules(robco, ROBCO_6DOF)


# -- task validate / info ------------------------------------------------------------------------------


def test_validate_lists_every_error(tmp_path, capsys):
    path = bad_task(tmp_path)
    code, out, err = run(capsys, "task", "validate", str(path))
    assert code == 1 and out == ""
    lines = err.strip().splitlines()
    expected = [
        "$.header.timeStepSize",
        "$.obstacles[0].collision[0]",
        "$.goals[0].type",
        "$.goals[1].goalPose.tolerance[0]",
        "$.constraints[0].parts[0]",
    ]
    assert len(lines) == len(expected)
    for line, where in zip(lines, expected):
        assert line.startswith(f"error: {path}: {where}")
    code, out, _ = run(capsys, "task", "validate", str(path), "--json")
    report = json.loads(out)
    assert code == 1 and report["valid"] is False and len(report["errors"]) == len(expected)
    task, errors = check_task_file(path)
    assert task is None and len(errors) == len(expected)


def test_validate_and_info_of_a_good_task(tmp_path, capsys, robco_assembly):
    path = small_task(tmp_path, robco_assembly.robot)
    code, out, err = run(capsys, "task", "validate", str(path))
    assert code == 0 and "valid" in out and "'small'" in out and "warning" not in err
    # a module file is no task: it parses (a task needs only a header), but its keys are flagged
    module = {"header": {"ID": "m1"}, "bodies": [], "joints": []}
    (tmp_path / "module.json").write_text(json.dumps(module))
    code, out, err = run(capsys, "task", "validate", str(tmp_path / "module.json"))
    assert code == 0 and "unknown top-level keys ['bodies', 'joints'] (is this a module file?)" in err
    code, out, _ = run(capsys, "task", "info", str(path), "--json")
    info = json.loads(out)
    assert code == 0 and info["id"] == "small" and info["name"] == "small task"
    assert [(g["id"], g["type"]) for g in info["goals"]] == [
        ("near", "reach"),
        ("far", "at"),
        ("wait", "pause"),
        ("again", "returnTo"),
    ]
    assert info["goals"][1]["position"] == [4.0, 0.0, 1.0]
    assert info["goals"][1]["tolerance"]["projections"] == ["r_sph", "Theta_R"]
    assert info["goals"][2]["duration"] == 1.5 and info["goals"][3]["return_to"] == "near"
    assert [c["type"] for c in info["constraints"]] == ["joint", "selfCollisionFree"]
    code, out, _ = run(capsys, "task", "info", str(path))
    assert code == 0 and "near: reach at [" in out and "far: at at [4, 0, 1]" in out


def test_missing_and_broken_files(tmp_path, capsys):
    nope = str(tmp_path / "nope.json")
    for args in (
        ("task", "validate", nope),
        ("task", "info", nope),
        ("solve", nope, "--db", "robco_like", "--modules", "base"),
    ):
        code, _, err = run(capsys, *args)
        assert code != 0 and "nope.json" in err and "not found" in err
    broken = tmp_path / "broken.json"
    broken.write_text('{"header": {"ID": "x"},')
    code, _, err = run(capsys, "task", "validate", str(broken))
    assert code == 1 and "invalid JSON" in err


# -- solve --------------------------------------------------------------------------------------------


def test_solve_feedback_on_a_self_made_task(tmp_path, capsys, robco_assembly):
    path = small_task(tmp_path, robco_assembly.robot)
    code, out, err = run(
        capsys, "solve", str(path), "--db", "robco_like", "--modules", *ROBCO_6DOF, "--json", "--seed", "3"
    )
    assert code == 0, err
    result = json.loads(out)
    task = Task.from_json_file(path)
    check_feedback(result, task, robco_assembly)
    by_id = {g["id"]: g for g in result["goals"]}
    assert by_id["near"]["reached"] and not by_id["far"]["reached"]
    assert "unreachable" in by_id["far"]["reason"] and "outside the robot's workspace" in by_id["far"]["reason"]
    assert by_id["wait"]["reached"] and by_id["again"]["reached"] and by_id["again"]["q"] == by_id["near"]["q"]
    assert result["cost"] == pytest.approx(robco_assembly.mass)
    # deterministic for a seed; the text form says the same
    assert (
        json.loads(
            run(capsys, "solve", str(path), "--db", "robco_like", "--modules", *ROBCO_6DOF, "--json", "--seed", "3")[1]
        )
        == result
    )
    code, out, _ = run(
        capsys, "solve", str(path), "--db", "robco_like", "--modules", *ROBCO_6DOF, "--cost", "mass,numJ_2"
    )
    assert code == 0 and "goal far: NOT reached: unreachable" in out and "goal near: reached q = [" in out
    assert "3 of 4 goal(s) reached; cost (mass,numJ_2.0): " + f"{robco_assembly.mass + 12:.6g}" in out


def test_solve_rejects_bad_costs_and_modules(tmp_path, capsys, robco_assembly):
    path = small_task(tmp_path, robco_assembly.robot)
    base = ("solve", str(path), "--db", "robco_like", "--modules", *ROBCO_6DOF)
    code, _, err = run(capsys, *base, "--cost", "mass,cyc")
    assert code == 2 and "cyc" in err and "trajectory" in err
    code, _, err = run(capsys, *base, "--cost", "mass,weight_2")
    assert code == 2 and "'weight_2'" in err
    code, _, err = run(capsys, "solve", str(path), "--db", "robco_like", "--modules", "base", "J", "nope")
    assert code == 2 and "'nope'" in err


def test_torque_limits_are_checked_when_the_task_limits_tau(tmp_path, robco_assembly):
    path = small_task(tmp_path, robco_assembly.robot)
    data = json.loads(path.read_text())
    data["header"]["gravity"] = [0, 0, -2000.0]  # nothing can hold itself in this gravity
    task = Task.from_json_data(data)
    near = goal_feedback(task, robco_assembly, seed=3)[0]
    assert not near["reached"] and "torque limit of joint" in near["reason"]
    data["constraints"] = []  # no torque limit in the task: reachable again
    assert goal_feedback(Task.from_json_data(data), robco_assembly, seed=3)[0]["reached"]


# -- the real data ------------------------------------------------------------------------------------


@needs_shared
def test_missing_mesh_asset_is_an_error_unless_skipped(capsys):
    code, _, err = run(capsys, "task", "validate", str(PTP_2))
    assert code == 1 and "assets/DMU_125P.stl" in err and "$.obstacles[0]" in err
    code, out, _ = run(capsys, "task", "validate", str(PTP_2), "--skip-missing-assets")
    assert code == 0 and "valid" in out
    code, _, err = run(capsys, "task", "info", str(PTP_2))
    assert code == 2 and "DMU_125P.stl" in err
    code, out, _ = run(capsys, "task", "info", str(PTP_2), "--json", "--skip-missing-assets")
    info = json.loads(out)
    assert code == 0 and [g["type"] for g in info["goals"]] == ["reach", "reach", "reach"]
    code, _, err = run(capsys, "solve", str(PTP_2), "--db", "robco_like", "--modules", *ROBCO_6DOF)
    assert code == 2 and "DMU_125P.stl" in err


@needs_shared
def test_info_of_the_user_study(capsys):
    code, out, _ = run(capsys, "task", "info", str(USER_STUDY), "--json")
    info = json.loads(out)
    assert code == 0 and info["id"] == "user_study"
    assert [(g["id"], g["type"], g["position"]) for g in info["goals"]] == [
        ("g1", "at", [-0.5, 0.1, 0.4]),
        ("g2", "at", [0.45, 0.4, 0.65]),
    ]
    assert [o["id"] for o in info["obstacles"]] == ["box", "wall"]
    assert info["constraints"] == []
    assert task_info(Task.from_json_file(USER_STUDY)) == info


@needs_shared
def test_user_study_feedback_improv_subprocess(improv):
    """The user-study loop through a real process: exit 0, no traceback, exactly the documented JSON."""
    cmd = [sys.executable, "-m", "timor_core.cli", "solve", str(USER_STUDY), "--db", str(IMPROV), "--modules"]
    proc = subprocess.run([*cmd, *IMPROV_6DOF, "--json"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    result = json.loads(proc.stdout)
    task = Task.from_json_file(USER_STUDY)
    assembly = ModuleAssembly.from_serial_modules(improv, IMPROV_6DOF)
    check_feedback(result, task, assembly)
    assert result["cost"] == pytest.approx(assembly.mass)
    assert any(g["reached"] for g in result["goals"])
    for g in result["goals"]:
        if not g["reached"]:  # the study's feedback: unreachable, or which obstacle is in the way
            assert "unreachable" in g["reason"] or "collision with obstacle" in g["reason"]


@needs_shared
def test_user_study_feedback_robco(capsys, robco_assembly):
    code, out, err = run(capsys, "solve", str(USER_STUDY), "--db", "robco_like", "--modules", *ROBCO_6DOF, "--json")
    assert code == 0, err
    result = json.loads(out)
    check_feedback(result, Task.from_json_file(USER_STUDY), robco_assembly)
    assert all(g["reached"] for g in result["goals"])
    same = solve_feedback(Task.from_json_file(USER_STUDY), robco_assembly, seed=0)
    assert same == result


def test_existing_commands_still_work(capsys):
    code, out, _ = run(capsys, "db", "info", "robco_like", "--json")
    assert code == 0 and json.loads(out)["name"] == "robco_like"
    db = ModulesDB.from_name("geometric_primitive_modules")
    assert db.name == "geometric_primitive_modules"
    code, out, _ = run(capsys, "fk", "geometric_primitive_modules", "base", "J2", "eef", "--q", "0.1")
    assert code == 0 and len(json.loads(out)["tcp"]) == 4


def test_embedded_tasks_load_and_unknown_names_list_the_known_ones():
    from timor_core.errors import InputError
    from timor_core.task import Task, embedded_task_names

    assert "pick_and_place" in embedded_task_names()
    task = Task.from_name("pick_and_place")
    assert task.id == "pick_and_place" and len(task.goals) == 4 and len(task.obstacles) == 2
    with pytest.raises(InputError, match="no embedded task named 'nope'; available: pick_and_place"):
        Task.from_name("nope")
