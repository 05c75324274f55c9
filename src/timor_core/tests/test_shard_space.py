"""The local shards take their parent's compiled search space (``shard_worker.keep_space``) instead of compiling it
again each (s55-share)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from timor_core import ModulesDB
from timor_core.search import ExhaustiveSearch, FilterConfig
from timor_core.search.evaluation.evaluate import DBRef, TaskRef
from timor_core.search.evaluation.parallel import WorkerSpec
from timor_core.search.exhaustive_search import shard_worker
from timor_core.search.spaces.space import SerialSpace, SpaceOptions
from timor_core.task import Task

TASKS = Path(__file__).parent / "data" / "exp2_tasks"
DB = ModulesDB.from_name("robco_like")


def _space(dof_max: int = 5) -> SerialSpace:
    options = SpaceOptions(dof_min=3, dof_max=dof_max, first_is_joint=True, modules=("J", "L_100", "L_150", "L_250"),
                           max_links_between_joints=1, max_links_after_last_joint=1)  # fmt: skip
    return SerialSpace(DB, options)


def test_a_kept_space_is_the_one_the_shards_look_up():
    task = Task.from_json_file(TASKS / "obstacle_middle.json")
    spec = WorkerSpec(DBRef.of(DB), TaskRef.of(task), "mass", FilterConfig())
    space, other = _space(), _space(dof_max=4)
    shard_worker.keep_space(spec, space)
    assert shard_worker.shard_space(spec, space.options.canonical_json()) is space
    made = shard_worker.shard_space(spec, other.options.canonical_json())  # (other options: compiled, as before)
    assert made is not other and made.fingerprint == other.fingerprint and made.count == other.count


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(), reason="no fork here")
def test_forked_shards_compile_no_space_and_find_the_one_process_answer(monkeypatch):
    """A shard that compiled a space would fail (the constructor below, inherited by the fork): the search ends with
    the one-process answer, so every shard walked its parent's space."""
    task = Task.from_json_file(TASKS / "obstacle_middle.json")
    one = ExhaustiveSearch(_space(), workers=1, order="cost", progress=False).optimize(task, DB)
    shard_worker._SPACES.clear()

    def compiled(*args, **kwargs):
        raise AssertionError("a shard compiled the search space")

    monkeypatch.setattr(shard_worker, "SerialSpace", compiled)
    ctx = multiprocessing.get_context("fork")
    sharded = ExhaustiveSearch(_space(), workers=2, order="cost", progress=False, mp_context=ctx).optimize(task, DB)
    assert one.found and sharded.settings["shards"] == 2
    assert (sharded.best_ids, sharded.best_cost, sharded.best_seq) == (one.best_ids, one.best_cost, one.best_seq)
