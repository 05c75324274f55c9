"""CoBRA task files: lossless round trips, frames, goals, constraints, obstacles and bad input."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import numpy as np
import pytest
from conftest import SHARED

from timor_core.errors import FormatError, InputError, MeshError, TimorError, ValidationError
from timor_core.task import At, BasePlacement, Follow, GoalOrder, JointLimits, Pause, Reach, Task

TASKS = SHARED / "data" / "cobra" / "tasks"


def shared_tasks() -> list[Path]:
    return sorted(TASKS.rglob("*.json")) if TASKS.is_dir() else []


def minimal_task() -> dict:
    eye = np.eye(4).tolist()
    return {
        "header": {"ID": "t1", "taskName": "t1", "timeStepSize": 0.01, "gravity": [0, 0, -9.81]},
        "obstacles": [
            {"ID": "box", "collision": [{"type": "box", "parameters": {"x": 0.2, "y": 0.2, "z": 0.2}, "pose": eye}]}
        ],
        "goals": [
            {
                "ID": "g1",
                "type": "at",
                "goalPose": {
                    "nominal": eye,
                    "toleranceProjection": ["x", "y", "z", "Theta_R"],
                    "tolerance": [[-0.001, 0.001]] * 3 + [[0.0, 0.5]],
                },
            }
        ],
        "constraints": [{"type": "selfCollisionFree"}],
    }


@pytest.mark.parametrize("path", shared_tasks(), ids=lambda p: p.stem)
def test_shared_tasks_round_trip_losslessly(path, tmp_path):
    original = json.loads(path.read_text())
    task = Task.from_json_file(path, missing_assets="skip")  # PTP_2 names a mesh that is absent
    assert task.id == original["header"]["ID"]
    assert task.to_json_data() == original
    out = task.to_json_file(tmp_path / "copy.json")
    again = Task.from_json_file(out, task_dir=task.base_dir, missing_assets="skip")
    assert again.to_json_data() == original


def test_shared_tasks_present_or_skip():
    if not TASKS.is_dir():
        pytest.skip(f"real CoBRA tasks not available (expected {TASKS})")
    assert len(shared_tasks()) >= 7


def test_user_study_contents():
    path = TASKS / "user_study.json"
    if not path.is_file():
        pytest.skip("../shared not available")
    task = Task.from_json_file(path)
    assert [g.id for g in task.goals] == ["g1", "g2"]
    assert all(isinstance(g, At) for g in task.goals)
    assert [o.id for o in task.obstacles] == ["box", "wall"]
    g1 = task.goals[0].goal_pose
    assert g1.tolerance.projections == ("x", "y", "z", "Theta_R")
    T = g1.world.copy()
    assert g1.valid(T)
    T[0, 3] += 0.0009
    assert g1.valid(T)
    T[0, 3] += 0.0002
    assert not g1.valid(T)


def test_ptp_tasks_goal_kinds_and_constraints():
    if not TASKS.is_dir():
        pytest.skip("../shared not available")
    ptp3 = Task.from_json_file(TASKS / "simple" / "PTP_3.json")
    order = ptp3.constraints_of(GoalOrder)[0]
    assert order.order == ["1", "2"]
    assert isinstance(ptp3.base_placement, BasePlacement)
    np.testing.assert_array_equal(ptp3.base_placement.pose.world, np.eye(4))
    assert ptp3.constraints_of(JointLimits)[0].parts == {"q", "tau"}
    pause = Task.from_json_file(TASKS / "simple" / "PTP_pause.json")
    assert isinstance(pause.goal("3"), Pause) and pause.goal("3").duration == pytest.approx(0.4)
    assert isinstance(pause.goal("1"), Reach)
    traj = Task.from_json_file(TASKS / "simple" / "traj_1.json")
    follow = traj.goals[0]
    assert isinstance(follow, Follow) and len(follow.trajectory) == 1000
    window = Task.from_json_file(TASKS / "simple" / "traj_window.json")
    shapes = [s for o in window.obstacles for g in o.collision for s in g.coal_shapes()]
    assert shapes  # the aircraft window mesh is loaded as a collision shape


def test_missing_asset_is_a_clear_error():
    path = TASKS / "simple" / "PTP_2.json"
    if not path.is_file():
        pytest.skip("../shared not available")
    with pytest.raises(MeshError) as info:
        Task.from_json_file(path)
    err = info.value
    assert err.file == str(path) and err.path == "$.obstacles[0].visual[0].parameters.file"
    assert err.value == "assets/DMU_125P.stl"
    task = Task.from_json_file(path, missing_assets="skip")  # the collision mesh exists and is used
    assert task.obstacles[0].collision[0].coal_shapes()


def test_goal_relative_to_other_frames(tmp_path):
    data = minimal_task()
    shift = np.eye(4)
    shift[:3, 3] = (1.0, 0.0, 0.0)
    data["frames"] = {"table": {"parent": "world", "transformation": shift.tolist()}}
    rel = np.eye(4)
    rel[:3, 3] = (0.0, 0.5, 0.0)
    data["goals"].append({"ID": "g2", "type": "reach", "goalPose": {"nominal": rel.tolist(), "nominalParent": "table"}})
    data["goals"].append({"ID": "g3", "type": "at", "goalPose": {"nominal": rel.tolist(), "nominalParent": "goal.g2"}})
    (tmp_path / "t1.json").write_text(json.dumps(data))
    task = Task.from_json_file(tmp_path / "t1.json")
    np.testing.assert_allclose(task.goal("g2").goal_pose.world[:3, 3], (1.0, 0.5, 0.0))
    np.testing.assert_allclose(task.goal("g3").goal_pose.world[:3, 3], (1.0, 1.0, 0.0))
    assert task.to_json_data() == data


def _bad(tmp_path, mutate, error=InputError):
    data = minimal_task()
    mutate(data)
    path = tmp_path / "t1.json"
    path.write_text(json.dumps(data))
    with pytest.raises(error) as info:
        Task.from_json_file(path)
    assert isinstance(info.value, TimorError)
    assert info.value.file == str(path)
    return info.value


def test_bad_input_names_file_path_and_value(tmp_path):
    e = _bad(tmp_path, lambda d: d["goals"][0].__setitem__("type", "teleport"), FormatError)
    assert e.path == "$.goals[0].type" and e.value == "teleport"
    e = _bad(tmp_path, lambda d: d["constraints"].append({"type": "beNice"}), FormatError)
    assert e.path == "$.constraints[1].type" and e.value == "beNice"
    e = _bad(tmp_path, lambda d: d["goals"][0]["goalPose"]["toleranceProjection"].__setitem__(0, "w"), FormatError)
    assert "toleranceProjection" in e.path and e.value == "w"
    e = _bad(tmp_path, lambda d: d["goals"][0]["goalPose"].__setitem__("nominal", [[1, 0, 0], [0, 1, 0]]), FormatError)
    assert e.path == "$.goals[0].goalPose.nominal"
    skew = np.eye(4)
    skew[0, 1] = 0.5
    e = _bad(tmp_path, lambda d: d["goals"][0]["goalPose"].__setitem__("nominal", skew.tolist()), ValidationError)
    assert e.path == "$.goals[0].goalPose.nominal"
    e = _bad(
        tmp_path, lambda d: d["goals"][0]["goalPose"]["tolerance"].__setitem__(0, [0.001, -0.001]), ValidationError
    )
    assert "tolerance" in e.path
    e = _bad(tmp_path, lambda d: d["goals"][0]["goalPose"]["tolerance"].__setitem__(3, [-0.1, 0.5]), ValidationError)
    assert "tolerance" in e.path
    e = _bad(tmp_path, lambda d: d["obstacles"][0]["collision"][0]["parameters"].__setitem__("x", -1), ValidationError)
    assert e.path == "$.obstacles[0].collision[0].parameters.x"
    e = _bad(tmp_path, lambda d: d["goals"].append(copy.deepcopy(d["goals"][0])), ValidationError)
    assert e.path == "$.goals[1].ID" and e.value == "g1"
    e = _bad(
        tmp_path,
        lambda d: d["constraints"].append({"type": "allGoalsFulfilledInOrder", "order": ["g9"]}),
        ValidationError,
    )
    assert e.path == "$.constraints[1].order[0]" and e.value == "g9"
    e = _bad(tmp_path, lambda d: d["header"].pop("ID"), FormatError)
    assert e.path == "$.header"
    e = _bad(tmp_path, lambda d: d["goals"][0]["goalPose"].__setitem__("nominalParent", "nowhere"), FormatError)
    assert e.path == "$.goals[0].goalPose.nominalParent"
    e = _bad(tmp_path, lambda d: d["header"].__setitem__("timeStepSize", 0), ValidationError)
    assert e.path == "$.header.timeStepSize"
    e = _bad(
        tmp_path,
        lambda d: d["obstacles"][0].__setitem__(
            "collision", [{"type": "mesh", "parameters": {"file": "../../etc/passwd"}}]
        ),
        MeshError,
    )
    assert e.path == "$.obstacles[0].collision[0].parameters.file"


def test_truncated_task_file(tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(minimal_task())[:100])
    with pytest.raises(FormatError) as info:
        Task.from_json_file(path)
    assert info.value.file == str(path) and "line" in str(info.value)
