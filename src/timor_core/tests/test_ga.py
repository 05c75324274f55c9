"""The genetic algorithm (PyGAD) over serial assemblies and the ``timor search`` / ``timor result show`` commands,
on the synthetic task of test_search (two goals a known 3-DOF robot reaches)."""

from __future__ import annotations

import json
import subprocess
import sys
import threading

import numpy as np
import pytest
from test_search import FAST, FLOOR, KNOWN, check_solution, synthetic_task

from timor_core import ModuleAssembly
from timor_core.cli.app import main
from timor_core.errors import InputError
from timor_core.search import GeneticSearch, Optimizer, SearchResult, load_space, trial_histories

MODULES = ("J", "L_100", "L_250", "I_200")  # the modules of test_search's SMALL space
SETTINGS = dict(n_slots=7, max_dof=3, population=8, generations=5, filters=FAST, workers=1, progress=False)


# one worker builds the GA run once for all the tests here (xdist spreads a module's tests)
pytestmark = pytest.mark.xdist_group("ga")


@pytest.fixture(scope="module")
def task(robco):
    robot = ModuleAssembly.from_serial_modules(robco, KNOWN).robot
    rng = np.random.default_rng(5)
    qs = []
    while len(qs) < 2:
        q = robot.random_configuration(rng)
        if not robot.has_self_collision(q) and robot.fk(q)[2, 3] > 0.15:
            qs.append(q)
    return synthetic_task([robot.fk(q) for q in qs], obstacles=[FLOOR])


def _ga(robco, **kw) -> GeneticSearch:
    return GeneticSearch(robco, **{**SETTINGS, "modules": MODULES, "seed": 0, **kw})


@pytest.fixture(scope="module")
def run(robco, task):
    # 15 generations: enough that finding the valid robot is not a matter of the seed (19 of seeds 0..19 find it)
    ga = _ga(robco, trials=2, generations=15)
    return ga, ga.optimize(task, robco)


def test_chromosomes_decode_to_valid_chains(robco):
    ga = _ga(robco)
    assert isinstance(ga, Optimizer)
    assert ga.base == "base" and ga.eef == "gripper"
    # joint slots only joints or empty, link slots only links or empty, the first slot always a joint
    assert ga.gene_space[0] == [1] and ga.gene_space[2] == [0, 1] and ga.gene_space[1] == [0, 1, 2, 3]
    genes = [1, 2, 0, 0, 1, 3, 1]  # J L_250 - - J I_200 J
    assert ga.genes_to_slots(genes) == ("J", "L_250", "", "", "J", "I_200", "J")
    assert ga.decode(genes) == KNOWN and ga.is_valid(KNOWN)
    assert ga.decode([1, 0, 0, 0, 0, 0, 0]) == ("base", "J", "gripper")
    assert not ga.is_valid(("base", "L_100", "gripper"))  # no joint
    assert not ga.is_valid(("base", "J", "J", "J", "J", "gripper"))  # 4 > max_dof
    rng = np.random.default_rng(0)
    for _ in range(50):
        genes = ga.random_chromosome(rng)
        assert all(int(g) in space for g, space in zip(genes, ga.gene_space))
        assert ga.is_valid(ga.decode(genes))


def test_invalid_chromosomes_are_never_evaluated_and_the_cache_counts_hits(robco, task):
    ga = _ga(robco, min_dof=3, generations=6)  # crossover makes chains of fewer than 3 DOF: invalid
    result = ga.optimize(task, robco)
    assert ga.evaluated and all(ga.is_valid(ids) for ids in ga.evaluated)
    assert len(set(ga.evaluated)) == len(ga.evaluated) == result.evaluations  # each assembly evaluated once
    assert ga.cache_hits > 0 and result.settings["cache_hits"] == ga.cache_hits
    assert ga.invalid > 0 and result.settings["invalid"] == ga.invalid
    assert result.funnel.total == result.evaluations


def test_same_seed_same_result(robco, task, run):
    ga, first = run
    again = _ga(robco, trials=2, generations=15).optimize(task, robco)
    assert (again.best_ids, again.best_cost, again.evaluations) == (first.best_ids, first.best_cost, first.evaluations)
    strip = [{k: v for k, v in p.items() if k != "time"} for p in first.history]
    assert strip == [{k: v for k, v in p.items() if k != "time"} for p in again.history]


def test_best_is_valid_and_reaches_every_goal(robco, task, run):
    _, result = run
    assert result.found and result.optimizer == "GeneticSearch"
    assert result.best_ids[0] == "base" and result.best_ids[-1] == "gripper"
    assert result.best_cost == pytest.approx(ModuleAssembly.from_serial_modules(robco, result.best_ids).robot.mass)
    assert all(g.success for g in result.best_goals.values()) and set(result.best_goals) == {"g0", "g1"}
    check_solution(robco, result.best_ids, result.best_q, task)


def test_two_trials_two_histories_and_json_round_trip(run, tmp_path):
    _, result = run
    hist = trial_histories(result)
    assert len(hist) == 2
    for h in hist:
        assert [p["generation"] for p in h] == list(range(1, len(h) + 1))
        assert all(p["best_fitness_cost"] <= p["median_cost"] for p in h)
    back = SearchResult.from_json_file(result.to_json_file(tmp_path / "r.json"))
    assert back.best_ids == result.best_ids and trial_histories(back) == hist


def test_budget_and_bad_input(robco, task):
    ga = _ga(robco, generations=20)
    result = ga.optimize(task, robco, budget=10)
    assert result.evaluations <= 10 and result.stopped == "max_evaluations"
    with pytest.raises(InputError):
        _ga(robco, min_dof=4)
    with pytest.raises(InputError):
        _ga(robco, base="gripper")
    with pytest.raises(InputError):
        GeneticSearch(robco, modules=("nope",))


def test_elitism_keeps_the_best_and_is_checked(robco, task):
    """More elitism carries more of the best into each generation: fewer new robots to evaluate per generation."""
    evaluated = {1: 0, 4: 0}
    for seed in range(4):  # a tendency, so summed over a few seeds rather than one
        for elitism in evaluated:
            ga = _ga(robco, generations=8, elitism=elitism, seed=seed)
            result = ga.optimize(task, robco)
            assert result.settings["elitism"] == elitism
            evaluated[elitism] += len(ga.evaluated)
    assert evaluated[4] < evaluated[1]
    for bad in (-1, 10**6, 1.5, True):
        with pytest.raises(InputError, match="elitism"):
            _ga(robco, elitism=bad)


def test_early_stop(robco, task):
    result = _ga(robco, generations=40, early_stop=2).optimize(task, robco)
    assert len(trial_histories(result)[0]) < 40


SEEDED = ("base", "J", "L_100", "J", "I_200", "gripper")  # not a chromosome the random draw of seed 0 gives


def test_encode_inverts_decode(robco):
    ga = _ga(robco)
    rng = np.random.default_rng(1)
    for _ in range(50):
        ids = ga.decode(ga.random_chromosome(rng))
        genes = ga.encode(ids)
        assert genes is not None and ga.decode(genes) == ids
        assert all(int(g) in space for g, space in zip(genes, ga.gene_space))
    assert list(ga.encode(KNOWN)) == [1, 2, 1, 3, 1, 0, 0]  # J L_250 J I_200 J, the empty slots last
    assert ga.encode(("base", "J", "J", "gripper")).tolist() == [1, 0, 1, 0, 0, 0, 0]  # the link slot between empty
    assert ga.encode(("base", "L_100", "J", "gripper")) is None  # the first slot holds a joint
    assert ga.encode(("base", "J")) is None  # no end effector
    assert ga.encode(("base", "L_150", "gripper")) is None  # not among the GA's modules
    assert ga.encode(("base", *("J",) * 5, "gripper")) is None  # more joints than joint slots


def test_initial_designs_are_evaluated_first(robco, task, caplog):
    with caplog.at_level("WARNING", logger="timor_core.search.genetic.ga"):
        ga = _ga(robco, generations=1, initial=[SEEDED, ("base", "L_100", "J", "gripper")])
    assert ga.initial == (SEEDED,) and "cannot be encoded" in caplog.text
    result = ga.optimize(task, robco)
    assert SEEDED in ga.evaluated[: ga.population] and result.settings["initial"] == [list(SEEDED)]
    plain = _ga(robco, generations=1)
    plain.optimize(task, robco)
    assert SEEDED not in plain.evaluated[: plain.population]


def test_on_batch_reports_growing_evaluations(robco, task):
    seen = []
    result = _ga(robco, on_batch=lambda r, trial: seen.append((r.evaluations, trial)), trials=2).optimize(task, robco)
    counts = [n for n, _ in seen]
    assert len(seen) >= 2 and counts[0] > 0 and counts == sorted(counts) and counts[-1] == result.evaluations
    assert {t for _, t in seen} == {0, 1} and [t for _, t in seen] == sorted(t for _, t in seen)


def test_stop_from_on_batch_cancels_early(robco, task, run):
    stop = threading.Event()
    calls = []

    def on_batch(result, trial):
        calls.append(result.evaluations)
        if len(calls) == 2:
            stop.set()

    ga = _ga(robco, trials=2, on_batch=on_batch, stop=stop)
    result = ga.optimize(task, robco)
    assert result.stopped == "canceled" and len(calls) == 2
    assert result.evaluations == calls[-1] < run[1].evaluations
    assert len(trial_histories(result)) == 1 and len(result.history) == 1  # the generation evaluated before the stop
    stop = threading.Event()
    stop.set()
    result = _ga(robco, stop=stop).optimize(task, robco)
    assert result.stopped == "canceled" and result.evaluations == 0 and not result.history


def test_a_failing_on_batch_does_not_end_the_search(robco, task, run, caplog):
    def on_batch(result, trial):
        raise RuntimeError("broken page")

    with caplog.at_level("ERROR", logger="timor_core.search.genetic.ga"):
        result = _ga(robco, trials=2, generations=15, on_batch=on_batch).optimize(task, robco)
    assert "broken page" in caplog.text and result.stopped == "exhausted"
    assert (result.best_ids, result.evaluations) == (run[1].best_ids, run[1].evaluations)


def _write_task(task, path):
    path.write_text(json.dumps(task.to_json_data()))
    return path


def test_cli_search_ga_and_result_show(task, tmp_path, capsys):
    tfile = _write_task(task, tmp_path / "task.json")
    out = tmp_path / "result.json"
    argv = ["search", str(tfile), "--db", "robco_like", "--algorithm", "ga", "--workers", "1", "--seed", "2"]
    argv += ["--generations", "3", "--population", "6", "--max-dof", "3", "--no-progress", "-o", str(out)]
    assert main(argv) == 0
    assert "GeneticSearch" in capsys.readouterr().out
    assert SearchResult.from_json_file(out).settings["max_dof"] == 3
    assert main(["result", "show", str(out)]) == 0
    text = capsys.readouterr().out
    assert "GeneticSearch" in text
    assert main(["result", "show", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["optimizer"] == "GeneticSearch"


def test_cli_search_exhaustive_with_budget(task, tmp_path, capsys):
    tfile = _write_task(task, tmp_path / "task.json")
    argv = ["search", str(tfile), "--db", "robco_like", "--workers", "1", "--budget-evals", "5", "--no-progress"]
    assert main(argv) == 0
    assert "ExhaustiveSearch" in capsys.readouterr().out


def test_cli_search_in_a_space_of_your_own(task, robco, tmp_path, capsys):
    tfile = _write_task(task, tmp_path / "task.json")
    space = tmp_path / "space.json"
    options = {"dof_max": 2, "modules": ["J", "L_100", "L_150"], "first_is_joint": True}
    options.update(max_links_between_joints=1, max_links_after_last_joint=1)
    space.write_text(json.dumps(options))
    out = tmp_path / "result.json"
    argv = ["search", str(tfile), "--db", "robco_like", "--workers", "1", "--space", str(space), "--no-progress"]
    assert main([*argv, "-o", str(out)]) == 0
    result = SearchResult.from_json_file(out)
    # J + tail, J + gap + J + tail, where gap and tail are each nothing, L_100 or L_150: 3 + 9 = 12 assemblies
    assert result.space is not None and result.space["count"] == len(load_space(space, robco)) == 12
    # none of them reaches as far as the task's farthest goal: proven before any is evaluated (issue 25)
    assert result.stopped == "unreachable" and result.evaluations == 0, result.summary()
    assert "no assembly of the space reaches farther than" in result.settings["unreachable"][0]
    assert set(result.best_ids or ()) <= {"base", "J", "L_100", "L_150", "gripper"}
    # bad options name the file and the option; a GA with a space is refused
    space.write_text(json.dumps({"dof_max": 2, "modulez": ["J"]}))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "space.json" in err and "$.modulez" in err and "Traceback" not in err
    space.write_text(json.dumps({"dof_min": 3, "dof_max": 2}))
    assert main(argv) == 2
    assert "dof_min (3) is larger than dof_max (2)" in capsys.readouterr().err
    assert main([*argv[:-3], "--space", "nowhere", "--no-progress"]) == 2
    assert "unknown search space" in capsys.readouterr().err
    assert main([*argv[:-1], "--algorithm", "ga", "--no-progress"]) == 2
    assert "--space shapes the exhaustive and random search" in capsys.readouterr().err


def test_cli_bad_input(task, tmp_path, capsys):
    tfile = _write_task(task, tmp_path / "task.json")
    base = ["search", str(tfile), "--db", "robco_like", "--algorithm", "ga", "--no-progress"]
    assert main([*base, "--min-dof", "4", "--max-dof", "3"]) == 2
    assert "min-dof" in capsys.readouterr().err
    empty = task.to_json_data()
    empty["goals"] = []
    (tmp_path / "empty.json").write_text(json.dumps(empty))
    assert main(["search", str(tmp_path / "empty.json"), "--db", "robco_like", "--no-progress"]) == 2
    assert "no goals" in capsys.readouterr().err
    assert main(["result", "show", str(tmp_path / "missing.json")]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_cli_subprocess(task, tmp_path):
    tfile = _write_task(task, tmp_path / "task.json")
    out = tmp_path / "r.json"
    argv = ["search", str(tfile), "--db", "robco_like", "--algorithm", "ga", "--workers", "1"]
    argv += ["--generations", "1", "--population", "4", "--max-dof", "2", "--no-progress", "-o", str(out)]
    run = subprocess.run([sys.executable, "-m", "timor_core.cli", *argv], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    run = subprocess.run(
        [sys.executable, "-m", "timor_core.cli", "result", "show", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0 and "GeneticSearch" in run.stdout
