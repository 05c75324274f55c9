"""Hostile solution files (session 57): a solution's ``moduleSet`` that is not a string, and trajectory numbers so
large that no plot axis or difference of them stays finite, are refused naming the file and the field; before,
``timor plot trajectory`` (and ``view``, ``video``) ended in an internal error (exit 3)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hostile import assert_clean_error, run_cli_here

from timor_core import ModuleAssembly, ModulesDB
from timor_core.errors import FormatError
from timor_core.kinematics.trajectory import MAX_TRAJECTORY_VALUE, Trajectory

TASK = "user_study"


@pytest.fixture(scope="module")
def solved(tmp_path_factory):
    """A task and the solution ``timor solve --solution`` writes for it (robco_like)."""
    from timor_core.cli.app import main

    folder = tmp_path_factory.mktemp("solved")
    modules = ["base", "J", "J", "J", "L_100", "J", "L_200", "J", "L_100", "gripper"]
    robot = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), modules).robot
    tcp = robot.fk(np.array([0.3, 0.5, 0.6, -0.4, 0.2])).tolist()  # a pose the robot reaches
    task = {"header": {"ID": TASK}, "goals": [{"ID": "g1", "type": "at", "goalPose": {"nominal": tcp}}]}
    (folder / "task.json").write_text(json.dumps(task))
    args = ["solve", str(folder / "task.json"), "--db", "robco_like", "--modules", *modules]
    assert main([*args, "--solution", str(folder / "sol.json")]) == 0
    return folder, json.loads((folder / "sol.json").read_text())


def _plot(capsys, folder, data):
    (folder / "bad.json").write_text(json.dumps(data))
    out = folder / "t.png"
    out.unlink(missing_ok=True)
    args = ["plot", "trajectory", str(folder / "bad.json"), "--task", str(folder / "task.json"), "-o", str(out)]
    return run_cli_here(capsys, args), out


@pytest.mark.parametrize("value", [{}, ["robco_like"], 7.5, True])
def test_a_module_set_that_is_not_a_name_is_refused_naming_the_solution_and_field(solved, capsys, value):
    folder, data = solved
    proc, out = _plot(capsys, folder, {**data, "moduleSet": value})
    assert proc.returncode == 2
    assert_clean_error(proc, "bad.json", "$.moduleSet")
    assert not out.exists()


@pytest.mark.parametrize("field", ["q", "dq", "ddq"])
@pytest.mark.parametrize("value", [-1e308, 1e300, 2e9])
def test_trajectory_values_beyond_the_bound_are_refused_naming_the_sample(solved, capsys, field, value):
    folder, data = solved
    spoilt = json.loads(json.dumps(data))
    spoilt["trajectory"][field][0][2] = value
    proc, out = _plot(capsys, folder, spoilt)
    assert proc.returncode == 2
    assert_clean_error(proc, "bad.json", f"$.trajectory.{field}[0][2]", "magnitude at most 1e+09")
    assert not out.exists()


def test_the_unspoilt_solution_plots(solved, capsys):
    folder, data = solved
    proc, out = _plot(capsys, folder, data)
    assert proc.returncode == 0, proc.stderr
    assert out.stat().st_size > 1000


def test_the_bound_holds_for_trajectories_made_in_python_too():
    t = np.linspace(0.0, 1.0, 3)
    q = np.zeros((3, 2))
    Trajectory(t, q, q, q + MAX_TRAJECTORY_VALUE)  # at the bound: kept
    with pytest.raises(FormatError, match="magnitude at most"):
        Trajectory(t, q, q, q + 2 * MAX_TRAJECTORY_VALUE)
    with pytest.raises(FormatError, match="finite"):
        Trajectory(t, q + np.nan, q, q)
