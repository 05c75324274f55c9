"""The cost-ordered search in shards on this machine's processes (``search/exhaustive_search/local_shards.py``): the
answer of one process (best robot, cost, position in the cost order, the goals' solutions), with 2 and 3 shards; a
shard that fails or dies ends the search with a ShardError (no hang); the time limit holds."""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

from timor_core import ModulesDB
from timor_core.search import Budget, ExhaustiveSearch, paper_exp2_space
from timor_core.search.exhaustive_search import local_shards
from timor_core.search.exhaustive_search.local_shards import ShardError
from timor_core.search.spaces.space import SerialSpace, SpaceOptions
from timor_core.task import Task

TASKS = Path(__file__).parent / "data" / "exp2_tasks"
DB = ModulesDB.from_name("robco_like")
FORK = "fork" in multiprocessing.get_all_start_methods()


def _small_space() -> SerialSpace:
    options = SpaceOptions(dof_min=3, dof_max=5, first_is_joint=True, modules=("J", "L_100", "L_150", "L_250"),
                           max_links_between_joints=1, max_links_after_last_joint=1)  # fmt: skip
    return SerialSpace(DB, options)


@pytest.mark.parametrize(("task_name", "workers"), [("obstacle_middle", 2), ("moved_goals", 2)])
def test_shards_find_the_one_process_answer(task_name, workers):
    task = Task.from_json_file(TASKS / f"{task_name}.json")
    space = _small_space() if task_name == "obstacle_middle" else paper_exp2_space(DB)
    one = ExhaustiveSearch(space, workers=1, order="cost", progress=False).optimize(task, DB)
    sharded = ExhaustiveSearch(space, workers=workers, order="cost", progress=False).optimize(task, DB)
    assert one.found and sharded.settings["shards"] == workers and sharded.workers == workers
    assert (sharded.best_ids, sharded.best_cost, sharded.best_seq) == (one.best_ids, one.best_cost, one.best_seq)
    assert sharded.best_goals == one.best_goals  # (the suite runs the interpreted kernels everywhere: same q)
    assert sharded.stopped == one.stopped == "bound" and sharded.next_seq == one.next_seq
    # every assembly before the best is evaluated by exactly one shard; a shard that ran ahead of the one that
    # finds the best has taken some after it (their cost order is the same, their speed is not)
    assert one.evaluations <= sharded.evaluations < 2 * one.evaluations + 100
    assert sum(sharded.funnel.entered.values()) >= sum(one.funnel.entered.values())


@pytest.mark.slow
@pytest.mark.skipif("forkserver" not in multiprocessing.get_all_start_methods(), reason="no forkserver here")
def test_shards_started_by_a_forkserver_find_the_same():
    """A parent with threads (a ROS node's) cannot fork: the shards then start from a fork server, their
    arguments pickled."""
    task = Task.from_json_file(TASKS / "obstacle_middle.json")
    one = ExhaustiveSearch(_small_space(), workers=1, order="cost", progress=False).optimize(task, DB)
    ctx = multiprocessing.get_context("forkserver")
    sharded = ExhaustiveSearch(_small_space(), workers=2, order="cost", progress=False, mp_context=ctx).optimize(
        task, DB
    )
    assert (sharded.best_ids, sharded.best_cost, sharded.best_seq) == (one.best_ids, one.best_cost, one.best_seq)


def _failing_shard(job, hub):
    raise RuntimeError("a filter broke")


def _dying_shard(job, hub):
    os._exit(3)


@pytest.mark.skipif(not FORK, reason="the shards must inherit the patched function (fork)")
@pytest.mark.parametrize(("run", "message"), [(_failing_shard, "a filter broke"), (_dying_shard, "without a result")])
def test_a_failing_or_dying_shard_ends_the_search_with_a_shard_error(monkeypatch, run, message):
    monkeypatch.setattr(local_shards, "run_shard", run)
    task = Task.from_json_file(TASKS / "obstacle_middle.json")
    search = ExhaustiveSearch(_small_space(), workers=2, order="cost", progress=False,
                              mp_context=multiprocessing.get_context("fork"))  # fmt: skip
    with pytest.raises(ShardError, match=message):
        search.optimize(task, DB)


def test_the_time_limit_stops_every_shard():
    task = Task.from_json_file(TASKS / "obstacle_middle.json")
    result = ExhaustiveSearch(paper_exp2_space(DB), workers=2, order="cost", progress=False).optimize(
        task, DB, Budget(max_time=0.5)
    )
    assert result.stopped == "max_time" and not result.found  # (no evaluation at all if the shards started late)
    assert result.next_seq is not None and result.next_seq <= result.evaluations + 2


def test_an_evaluation_budget_keeps_the_one_stream():
    """The first n of the cost order need the one stream: no shards."""
    task = Task.from_json_file(TASKS / "moved_goals.json")
    result = ExhaustiveSearch(paper_exp2_space(DB), workers=2, order="cost", progress=False).optimize(task, DB, 300)
    assert "shards" not in result.settings and result.evaluations == 300


def test_a_shards_walk_leaves_the_garbage_collector_as_it_found_it():
    """The walk eases the collector (what is alive frozen, young objects collected less often) and puts it back:
    the same thresholds and nothing frozen afterwards, also when the walk fails; left alone where it is off or
    something was frozen before."""
    import gc

    from timor_core.search.evaluation.batch_stream import GC_YOUNG, collector_eased

    before = gc.get_threshold()
    assert gc.isenabled() and gc.get_freeze_count() == 0
    with collector_eased():
        assert gc.get_threshold()[0] == max(before[0], GC_YOUNG) and gc.get_freeze_count() > 0
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    with pytest.raises(RuntimeError), collector_eased():
        raise RuntimeError("a failing walk")
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    gc.disable()
    try:
        with collector_eased():
            assert gc.get_threshold() == before and gc.get_freeze_count() == 0
    finally:
        gc.enable()
