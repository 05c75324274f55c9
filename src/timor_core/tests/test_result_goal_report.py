"""``timor result show`` and ``SearchResult.goal_report`` list every goal of the task in task order, pause and
returnTo goals too (session 56's walk: only the pose goals were shown, so the embedded ``pick_and_place``'s
``grasp`` pause and ``home`` return were missing), each with what the result says of it."""

from __future__ import annotations

import json

import pytest

from timor_core.cli.app import main
from timor_core.search import SearchResult
from timor_core.search.filtering.filters import GoalIK
from timor_core.task import Task


def _result(task: Task) -> SearchResult:
    """A result of a search of ``task`` that found an assembly reaching its pose goals (by hand: no search)."""
    from timor_core.search.evaluation.result import task_goal_records

    result = SearchResult("ExhaustiveSearch", task.id, "robco_like", "mass", task_goals=task_goal_records(task))
    result.best_ids, result.best_cost, result.best_seq = ("base", "J", "gripper"), 1.5, 0
    result.best_goals = {"pick": GoalIK([0.1, 0.2], True, "", "ik"), "place": GoalIK([0.3, -0.4], True, "", "ik")}
    return result


def test_result_show_lists_every_goal_of_the_task_in_order(tmp_path, capsys):
    task = Task.from_name("pick_and_place")
    assert [g.type_name for g in task.goals] == ["at", "pause", "at", "returnTo"]
    path = _result(task).to_json_file(tmp_path / "r.json")
    assert main(["result", "show", str(path)]) == 0
    goals = [line for line in capsys.readouterr().out.splitlines() if line.startswith("goal ")]
    assert goals == [
        "goal pick: reached q = [0.1000, 0.2000]",
        "goal grasp: reached (pause 0.3 s: stand still)",
        "goal place: reached q = [0.3000, -0.4000]",
        "goal home: reached (returns to the start configuration)",
    ]


def test_a_return_to_a_goal_has_its_configuration_and_the_report_survives_the_file(tmp_path):
    data = Task.from_name("pick_and_place").to_json_data()
    data["goals"][3]["returnToGoal"] = "pick"
    task = Task.from_json_data(data)
    back = SearchResult.from_json_file(_result(task).to_json_file(tmp_path / "r.json"))
    report = back.goal_report()
    assert [(e["id"], e["type"], e["reached"]) for e in report] == [
        ("pick", "at", True),
        ("grasp", "pause", True),
        ("place", "at", True),
        ("home", "returnTo", True),
    ]
    assert report[3]["q"] == [0.1, 0.2] and report[3]["reason"] == "returns to goal 'pick'"
    no_best = SearchResult("ExhaustiveSearch", task.id, "robco_like", "mass")
    assert no_best.goal_report() == []  # nothing found: nothing to say per goal


def test_a_search_keeps_the_task_goals_and_an_older_result_shows_its_pose_goals(tmp_path, capsys):
    """The optimizers record the task's goals; a result file written before (no ``task_goals``) still shows."""
    task = tmp_path / "task.json"
    task.write_text(json.dumps(Task.from_name("pick_and_place").to_json_data()))
    out = tmp_path / "r.json"
    argv = ["search", str(task), "--db", "robco_like", "--order", "cost", "--workers", "1", "--no-progress"]
    assert main([*argv, "-o", str(out)]) == 0
    written = json.loads(out.read_text())
    assert [g["id"] for g in written["task_goals"]] == ["pick", "grasp", "place", "home"]
    capsys.readouterr()
    assert main(["result", "show", str(out)]) == 0
    shown = [line.split(":")[0] for line in capsys.readouterr().out.splitlines() if line.startswith("goal ")]
    assert shown == ["goal pick", "goal grasp", "goal place", "goal home"]
    del written["task_goals"]
    out.write_text(json.dumps(written))
    assert main(["result", "show", str(out)]) == 0
    text = capsys.readouterr().out
    assert [line.split(":")[0] for line in text.splitlines() if line.startswith("goal ")] == ["goal pick", "goal place"]
    assert "pose goals only" in text


def test_a_result_file_writes_back_byte_for_byte_with_and_without_task_goals(tmp_path):
    """write -> read -> write is the same file; a file written before results kept the task's goals (no
    ``task_goals``) writes back without the field (it gained ``"task_goals": null``)."""
    data = Task.from_name("pick_and_place").to_json_data()
    data["goals"][3]["returnToGoal"] = "pick"
    for result in (_result(Task.from_json_data(data)), SearchResult("ExhaustiveSearch", "t", "robco_like", "mass")):
        first = result.to_json_file(tmp_path / "first.json")
        again = SearchResult.from_json_file(first).to_json_file(tmp_path / "again.json")
        assert first.read_bytes() == again.read_bytes()
    older = json.loads(first.read_text())
    assert "task_goals" not in older


def test_a_checkpoint_evaluation_names_its_malformed_field():
    """``Evaluation.from_json`` (a dask checkpoint's best) named a malformed value nowhere (a bare ValueError)."""
    from timor_core.errors import FormatError
    from timor_core.search.evaluation.evaluate import Evaluation

    good = {"ids": ["base", "J"], "valid": True, "cost": 1.0, "goals": {"g1": {"q": [0.1], "success": True}}}
    assert Evaluation.from_json(good, "$.best").cost == 1.0
    for spoil, path in (
        ({"cost": "x"}, "$.best.cost"),
        ({"ids": {"a": 1}}, "$.best.ids"),
        ({"timings": [0.1, "slow"]}, "$.best.timings[1]"),
        ({"goals": {"g1": {"q": [None], "success": True}}}, "$.best.goals.g1.q[0]"),
    ):
        with pytest.raises(FormatError) as info:
            Evaluation.from_json({**good, **spoil}, "$.best")
        assert info.value.path == path, (spoil, info.value)


def test_a_sharded_checkpoints_shard_state_names_its_malformed_field_by_its_path():
    """A sharded search's checkpoint resumes its shards from ``$.states[i]``: a malformed best evaluation there was
    named ``$.cost`` (the reader's default path: another field of the file) or a bare KeyError for a missing count."""
    from timor_core.errors import FormatError
    from timor_core.search.exhaustive_search.shard_worker import ShardState

    best = {"ids": ["base", "J"], "valid": True, "cost": 1.0, "seq": 4}
    state = {"index": 1, "taken": 3, "evaluations": 3, "valid": 1, "best": best, "funnel": {"filters": []}}
    assert ShardState.from_json(state, "$.states[1]").best.cost == 1.0
    for spoil, path, message in (
        ({"best": {**best, "cost": "x"}}, "$.states[1].best.cost", "expected a number"),
        ({"funnel": {"filters": 3}}, "$.states[1].funnel.filters", "expected a JSON array"),
        ({"taken": None}, "$.states[1].taken", "expected an integer"),
    ):
        with pytest.raises(FormatError) as info:
            ShardState.from_json({**state, **spoil}, "$.states[1]")
        assert (info.value.path, info.value.message) == (path, message), spoil
    with pytest.raises(FormatError, match="missing required field 'taken'") as info:
        ShardState.from_json({k: v for k, v in state.items() if k != "taken"}, "$.states[1]")
    assert info.value.path == "$.states[1]"


def test_a_goal_id_with_a_line_break_is_shown_on_one_line(tmp_path, capsys):
    """A goal ID is a task's string: a newline in it broke ``result show``'s line per goal in two (s57-review's
    list); it is escaped as the ``error:`` lines escape it."""
    data = Task.from_name("pick_and_place").to_json_data()
    data["goals"][0]["ID"] = "pick\nnow"
    data = json.loads(json.dumps(data).replace('"pick"', '"pick\\nnow"'))  # (the goal order names it too)
    task = Task.from_json_data(data)
    result = _result(task)
    result.best_goals["pick\nnow"] = result.best_goals.pop("pick")
    path = result.to_json_file(tmp_path / "r.json")
    assert main(["result", "show", str(path)]) == 0
    goals = [line for line in capsys.readouterr().out.splitlines() if line.startswith("goal ")]
    assert goals[0] == "goal pick\\nnow: reached q = [0.1000, 0.2000]" and len(goals) == 4, goals
