"""Hostile search result files (session 57): an edited or foreign ``result.json`` is refused when it is read, naming
the file and the field, so ``timor result show`` and ``timor plot`` never fail later with an internal error (exit 3:
``'str' object has no attribute 'items'`` of a funnel's reasons, ``KeyError: 'median_cost'`` of a GA point, ...)."""

from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import pytest
from hostile import assert_clean_error, run_cli_here
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_hostile_loaders import JSON_VALUES, json_paths

import timor_core
from timor_core import ModulesDB
from timor_core.errors import InputError
from timor_core.search import Evaluation, ExhaustiveSearch, GeneticSearch, SearchResult, load_space
from timor_core.search.filtering.funnel import Funnel
from timor_core.search.genetic.ga import trial_histories
from timor_core.task import Task


def _result() -> dict:
    """A GA result as ``timor search -o`` writes it: funnel, best with goals, history points, settings."""
    result = SearchResult("GeneticSearch", "user_study", "robco_like", "mass", funnel=Funnel(["assembly", "ik"]))
    data = result.to_json_data()
    data["funnel"]["filters"][0].update(entered=10, passed=4, reasons={"too long": 6})
    data["funnel"]["filters"][1].update(entered=4, passed=1, time=0.5, reasons={"g1: no IK": 3})
    data["best"] = {"ids": ["base", "J", "gripper"], "cost": 3.5, "seq": 7,
                    "goals": {"g1": {"q": [0.1], "success": True, "reason": "", "stage": "ik"}}}  # fmt: skip
    point = {"trial": 0, "generation": 1, "evaluations": 10, "time": 0.1, "best_cost": 3.5,
             "best_fitness_cost": 3.5, "median_cost": 2e6, "trial_best": 3.5}  # fmt: skip
    data["history"] = [point, {**point, "generation": 2, "evaluations": 14}]
    data["improvements"] = [{"evaluations": 10, "time": 0.1, "best_cost": 3.5, "cost": 3.5, "ids": ["base"], "seq": 7}]
    data.update(evaluations=14, valid=1, settings={"penalty": 1e6, "unreachable": []})
    return data


def _spoil(doc: dict, where: tuple, value) -> dict:
    doc = copy.deepcopy(doc)
    node = doc
    for key in where[:-1]:
        node = node[key]
    if value is KeyError:
        del node[where[-1]]
    else:
        node[where[-1]] = value
    return doc


SPOILS = [
    (("funnel", "filters", 0, "reasons"), "/etc/passwd", "$.funnel.filters[0].reasons"),
    (("funnel", "filters", 1, "reasons", "g1: no IK"), -3, "$.funnel.filters[1].reasons.g1: no IK"),
    (("funnel", "filters", 1, "name"), None, "$.funnel.filters[1].name"),
    (("funnel", "filters", 1, "name"), "assembly", "$.funnel.filters[1].name"),  # named twice
    (("funnel", "filters", 0, "entered"), 2**70, "$.funnel.filters[0].entered"),
    (("funnel", "filters", 0, "time"), [1], "$.funnel.filters[0].time"),
    (("best", "goals"), 1e308, "$.best.goals"),
    (("best", "goals", "g1"), "x", "$.best.goals.g1"),
    (("best", "goals", "g1", "success"), "no", "$.best.goals.g1.success"),
    (("best", "goals", "g1", "q"), [None], "$.best.goals.g1.q[0]"),
    (("best", "ids"), ["base", ["J"]], "$.best.ids[1]"),
    (("evaluations",), 1e308, "$.evaluations"),  # int(1e308) was an OverflowError
    (("workers",), -1, "$.workers"),
    (("optimizer",), ["GA"], "$.optimizer"),
    (("history",), {"a": 1}, "$.history"),
    (("history", 0, "median_cost"), KeyError, "$.history[0]"),  # missing: its object and the key
    (("history", 1, "generation"), "2", "$.history[1].generation"),
    (("improvements", 0, "ids"), "base", "$.improvements[0].ids"),
    (("settings", "unreachable"), 5, "$.settings.unreachable"),
    (("settings", "penalty"), -1, "$.settings.penalty"),
    (("settings",), [], "$.settings"),
]


@pytest.mark.parametrize("where, value, path", SPOILS)
def test_a_spoilt_result_is_refused_naming_file_and_field(where, value, path):
    with pytest.raises(InputError) as info:
        SearchResult.from_json_data(_spoil(_result(), where, value), file=Path("r.json"))
    assert info.value.file == "r.json" and info.value.path == path, str(info.value)


@pytest.mark.parametrize("command", [["result", "show"], ["plot", "convergence"], ["plot", "funnel"]])
@pytest.mark.parametrize("where, value, path", [SPOILS[0], SPOILS[2], SPOILS[6], SPOILS[15], SPOILS[18]])
def test_result_show_and_plot_of_a_spoilt_result_are_one_error_line(tmp_path, capsys, command, where, value, path):
    (tmp_path / "r.json").write_text(json.dumps(_spoil(_result(), where, value)))
    out = ["-o", str(tmp_path / "p.png")] if command[0] == "plot" else []
    proc = run_cli_here(capsys, [*command, str(tmp_path / "r.json"), *out])
    assert proc.returncode == 2
    assert_clean_error(proc, "r.json", path)
    assert not (tmp_path / "p.png").exists()


def test_the_unspoilt_result_shows_and_plots(tmp_path, capsys):
    (tmp_path / "r.json").write_text(json.dumps(_result()))
    assert run_cli_here(capsys, ["result", "show", str(tmp_path / "r.json")]).returncode == 0
    for kind in ("convergence", "funnel"):
        proc = run_cli_here(capsys, ["plot", kind, str(tmp_path / "r.json"), "-o", str(tmp_path / f"{kind}.png")])
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / f"{kind}.png").stat().st_size > 1000


def test_a_ga_result_of_penalty_0_reads_and_plots(robco, tmp_path, capsys):
    """GAConfig allows a penalty of 0 (0 to 1e300): the result timor writes of such a run is no hostile file."""
    task = Task.from_json_file(Path(timor_core.__file__).parent / "data" / "tasks" / "pick_and_place.json")
    ga = GeneticSearch(robco, max_dof=2, population=4, generations=2, penalty=0.0, seed=0, workers=1, progress=False)
    path = ga.optimize(task).to_json_file(tmp_path / "r.json")
    assert SearchResult.from_json_file(path).settings["penalty"] == 0.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no division by the penalty of 0
        proc = run_cli_here(capsys, ["plot", "convergence", str(path), "-o", str(tmp_path / "c.png")])
    assert proc.returncode == 0, proc.stderr


def test_a_result_of_evaluations_made_outside_a_search_reads_back(tmp_path):
    """``evaluate()`` leaves an Evaluation's ``seq`` at -1 (no search sequence); ``SearchResult.consider`` keeps it
    and ``to_json_file`` writes it (as the best's and an improvement's seq): a file timor writes reads back."""
    result = SearchResult("mine", "user_study", "robco_like", "mass", funnel=Funnel(["assembly"]))
    ev = Evaluation(ids=("base", "J", "gripper"), valid=True, cost=3.5)
    assert ev.seq == -1 and result.consider(ev)
    result.evaluations, result.improvements = 1, [{"evaluations": 1, "time": 0.1, "cost": 3.5, "seq": ev.seq}]
    back = SearchResult.from_json_file(result.to_json_file(tmp_path / "r.json"))
    assert back.best_seq == -1 and back.improvements[0]["seq"] == -1 and back.best_ids == ev.ids
    for bad in (-2, 1.0, True):  # -1 is the one negative position
        with pytest.raises(InputError, match="whole number"):
            SearchResult.from_json_data(_spoil(back.to_json_data(), ("best", "seq"), bad))


def test_a_search_over_a_nameless_module_set_reads_back(robco, tmp_path):
    """A set made from data in Python has the name "" (``ModulesDB.from_json_data``): its search's result file, which
    timor writes with ``"db": ""``, reads back."""
    db = ModulesDB.from_json_data(robco.to_json_data())
    task = Task.from_json_file(Path(timor_core.__file__).parent / "data" / "tasks" / "pick_and_place.json")
    search = ExhaustiveSearch(load_space({"dof_max": 1, "max_modules": 3}, db), "mass", workers=1, progress=False)
    path = search.optimize(task, db).to_json_file(tmp_path / "r.json")
    assert json.loads(path.read_text())["db"] == "" and SearchResult.from_json_file(path).db_name == ""


BASE = _result()
NODES = list(json_paths(BASE))[1:]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(NODES), JSON_VALUES | st.sampled_from([KeyError, 10**30, -1, 1e308]))
def test_any_spoilt_result_is_refused_naming_the_file_or_reads_into_what_show_and_plots_use(where, value):
    """The invariant: a mutated result either raises an InputError naming the file, or everything ``result show``
    and the plots read of it works (summary, goals, funnel rows, GA trials' points)."""
    try:
        result = SearchResult.from_json_data(_spoil(BASE, where, value), file=Path("r.json"))
    except InputError as exc:
        assert exc.file == "r.json"
        return
    result.summary()
    assert all(isinstance(g.success, bool) for g in result.best_goals.values())
    for trial in trial_histories(result):
        for p in trial:
            float(p["generation"]) + float(p["best_fitness_cost"]) + float(p["median_cost"])
    for p in result.history:
        float(p["evaluations"])
    assert all(result.funnel.entered[n] >= 0 and result.funnel.time[n] >= 0 for n in result.funnel.names)
