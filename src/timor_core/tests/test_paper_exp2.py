"""Experiment 2 of the Timor paper: paper.exp2, `timor paper exp2`, and the independent check of found robots.

Needs the user-study task from ../shared; the embedded robco_like set provides the modules.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from timor_core.cli.app import main
from timor_core.errors import InputError
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB
from timor_core.paper.experiments import EXP2_COUNT, exp2, exp2_space
from timor_core.task.feedback import goal_feedback, load_task, verify_goal_configurations

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
TASK = SHARED / "data" / "cobra" / "tasks" / "user_study.json"

pytestmark = pytest.mark.skipif(not TASK.is_file(), reason=f"user-study task not available (expected {TASK})")

BEST = ("base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper")  # the lightest robot (11.02 kg)


@pytest.fixture(scope="module")
def task():
    return load_task(TASK)


def test_space_count(robco):
    assert exp2_space(robco).count == EXP2_COUNT == 177_155


def test_verify_accepts_a_real_solution_and_rejects_a_wrong_one(robco, task):
    assembly = ModuleAssembly.from_serial_modules(robco, BEST)
    found = {g["id"]: g["q"] for g in goal_feedback(task, assembly) if g["reached"]}
    assert set(found) == {"g1", "g2"}
    checks = verify_goal_configurations(task, assembly, found)
    assert [c["ok"] for c in checks] == [True, True]
    # the configurations swapped: each TCP is then far from its goal
    swapped = verify_goal_configurations(task, assembly, {"g1": found["g2"], "g2": found["g1"]})
    assert not any(c["ok"] for c in swapped)
    assert all("outside the goal tolerance" in c["reason"] for c in swapped)
    missing = verify_goal_configurations(task, assembly, {"g1": found["g1"]})
    assert missing[1] == {**missing[1], "ok": False, "reason": "no configuration given"}


def test_verify_names_the_obstacle_hit(robco, task):
    assembly = ModuleAssembly.from_serial_modules(robco, BEST)
    rng = np.random.default_rng(3)
    robot = assembly.to_pin_robot()
    for _ in range(200):  # find a configuration that hits an obstacle
        q = robot.random_configuration(rng)
        if any(c.kind == "obstacle" for c in robot.collisions(q, task)):
            break
    else:
        pytest.fail("no colliding configuration found")
    (check,) = [c for c in verify_goal_configurations(task, assembly, {"g1": q}) if c["id"] == "g1"]
    assert not check["ok"] and check["collisions"]
    assert "collides with obstacle" in check["collisions"][0]


def test_constrained_cost_order_finds_the_lightest_robot_verified(robco, task):
    result = exp2(robco, task, algorithms=("constrained",), order="cost", workers=1)
    (run,) = result.runs
    assert run.best_ids == BEST and run.best_mass == pytest.approx(11.02)
    assert run.ok and len(run.verified) == 2
    data = json.loads(json.dumps(result.to_json()))
    assert data["count"] == EXP2_COUNT and data["runs"][0]["ok"] is True


def test_ga_short_run_is_reproducible(robco, task):
    a = exp2(robco, task, algorithms=("ga",), generations=3, population=8, workers=1, seed=5).runs[0]
    b = exp2(robco, task, algorithms=("ga",), generations=3, population=8, workers=1, seed=5).runs[0]
    assert (a.best_ids, a.best_mass, a.evaluations) == (b.best_ids, b.best_mass, b.evaluations)
    assert a.evaluations > 0
    if a.best_ids is not None:  # whatever it found must check out independently
        assert a.ok


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"algorithms": ("annealing",)}, "algorithms"),
        ({"order": "random"}, "order"),
        ({"limit": 0}, "limit"),
    ],
)
def test_bad_arguments(robco, task, kwargs, needle):
    with pytest.raises(InputError, match=needle):
        exp2(robco, task, **kwargs)


def test_db_without_end_effector(robco_json_without_eef, task):
    with pytest.raises(InputError, match="end effector"):
        exp2(robco_json_without_eef, task)


@pytest.fixture
def robco_json_without_eef(robco, tmp_path) -> ModulesDB:
    src = Path(robco.source) if Path(robco.source).is_file() else Path(robco.source) / "modules.json"
    data = json.loads(src.read_text())
    data["modules"] = [m for m in data["modules"] if m["header"]["ID"] != "gripper"]
    (tmp_path / "modules.json").write_text(json.dumps(data))
    return ModulesDB.from_json_file(tmp_path / "modules.json")


def test_cli_limit_json(capsys, tmp_path):
    code = main(
        ["paper", "exp2", "--task", str(TASK), "--algorithm", "constrained", "--limit", "30", "--workers", "1"]
        + ["--json", "-o", str(tmp_path / "out")]
    )
    data = json.loads(capsys.readouterr().out)
    (run,) = data["runs"]
    assert run["evaluations"] == 30 and run["algorithm"] == "constrained"
    assert code == (0 if run["ok"] else 1)
    saved = json.loads((tmp_path / "out" / "constrained.json").read_text())
    assert saved["evaluations"] == 30


def test_cli_task_without_goals(capsys, tmp_path):
    data = json.loads(TASK.read_text())
    data["goals"] = []
    path = tmp_path / "no_goals.json"
    path.write_text(json.dumps(data))
    assert main(["paper", "exp2", "--task", str(path)]) == 2
    assert "no goals" in capsys.readouterr().err


def test_ga_verdicts_do_not_depend_on_the_number_of_workers(robco, task):
    """Seeded with the lightest robot, the GA has a valid bound from its first generation on; every assembly of a
    generation must still get the same verdict (and fitness) on 1 and on 2 workers."""
    from timor_core.search import FilterConfig, GeneticSearch

    runs = []
    for workers in (1, 2):
        ga = GeneticSearch(
            robco,
            "mass",
            generations=12,
            population=16,
            seed=3,
            filters=FilterConfig(seed=3),
            workers=workers,
            progress=False,
            initial=[BEST],
        )
        result = ga.optimize(task, robco)
        verdicts = {ids: (ev.valid, ev.failed_filter) for ids, ev in ga.cache.items()}
        history = [{k: v for k, v in point.items() if k != "time"} for point in result.history]
        runs.append((ga.evaluated, verdicts, result.best_ids, result.best_cost, history))
    assert runs[0][2] == BEST
    assert runs[0] == runs[1]


def test_ga_skips_robots_that_cannot_beat_the_best(robco, task):
    """With the bound, robots no lighter than the best valid one are scored without IK; without it, never."""
    from timor_core.search import FilterConfig, GeneticSearch

    skipped = {}
    for bound in (True, False):
        ga = GeneticSearch(
            robco,
            "mass",
            generations=6,
            population=16,
            seed=3,
            filters=FilterConfig(seed=3, bound=bound),
            workers=1,
            progress=False,
            initial=[BEST],
        )
        result = ga.optimize(task, robco)
        assert result.best_ids == BEST
        skipped[bound] = [ev for ev in ga.cache.values() if ev.failed_filter == "bound"]
    assert skipped[True] and not skipped[False]
    assert all(ev.cost >= 11.02 and not ev.goals for ev in skipped[True])


def test_ga_bound_is_per_trial(robco, task):
    """Trial 0 finds the optimum at once (seeded); trial 1 still starts without a bound, as an independent run."""
    from timor_core.search import FilterConfig, GeneticSearch

    skips: list[tuple[int, int]] = []  # (trial, bound skips so far) after each generation's batch

    def on_batch(result, trial):
        skips.append((trial, result.funnel.failed("bound")))

    ga = GeneticSearch(
        robco,
        "mass",
        generations=4,
        population=16,
        seed=3,
        trials=2,
        filters=FilterConfig(seed=3),
        workers=1,
        progress=False,
        initial=[BEST],
        on_batch=on_batch,
    )
    assert ga.optimize(task, robco).best_ids == BEST
    first_of_trial_1 = next(k for k, (trial, _) in enumerate(skips) if trial == 1)
    assert skips[first_of_trial_1 - 1][1] > 0  # trial 0 skipped robots heavier than the optimum
    assert skips[first_of_trial_1][1] == skips[first_of_trial_1 - 1][1]  # trial 1's first generation skipped none


@pytest.mark.slow
def test_ga_reaches_the_optimum_where_the_operators_alone_stall(robco, task):
    """Seed 2 stalls at 11.32 kg (J I_150 L_150 J L_150 J L_100, two moves from the optimum) without the local
    descent (measured over 500 generations); with it (the default) the trial reaches the 11.02 kg optimum, verified
    independently. 150 generations: it reaches it at generation 101, and a run of fewer generations is the same run
    cut short (its generations equal the first ones of 500 to the evaluation count; 2026-11-29): the paper's 350 more
    (~45 % of the test's time) do not change its best."""
    (run,) = exp2(robco, task, algorithms=("ga",), workers=1, seed=2, generations=150).runs
    assert run.best_ids == BEST and run.best_mass == pytest.approx(11.02)
    assert run.ok and len(run.verified) == 2
    assert run.result.settings["descent_evaluations"] > 0


def test_a_ga_trial_at_or_below_the_optimum_is_a_hit(monkeypatch):
    """Issue 25: a trial that found a lighter robot (the GA's space is wider) counted as a miss."""
    from timor_core.paper.experiments import Exp2Run

    run = Exp2Run("ga", 1.0, 10, 1, None, None, (), {})
    monkeypatch.setattr(Exp2Run, "trial_best", property(lambda self: (13.64, 13.94, 13.943, 13.96, None)))
    assert run.hits(13.94) == 3  # lighter, equal, within 5 g of rounding; heavier and none are misses
