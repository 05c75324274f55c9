"""The cost-ordered search in shards on this machine's processes (``search/exhaustive_search/local_shards.py``): the
answer of one process (best robot, cost, position in the cost order, the goals' solutions), with 2 and 3 shards; a
shard that fails or dies ends the search with a ShardError (no hang); the time limit holds."""

from __future__ import annotations

import math
import multiprocessing
import os
import queue
import sys
import threading
from concurrent.futures import Future
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core import ModulesDB
from timor_core.search import Budget, ExhaustiveSearch, FilterConfig, paper_exp2_space
from timor_core.search.dask_cluster import dask_worker
from timor_core.search.evaluation.evaluate import DBRef, TaskRef
from timor_core.search.evaluation.parallel import WorkerSpec, default_context
from timor_core.search.exhaustive_search import local_shards, shard_mail
from timor_core.search.exhaustive_search.local_shards import ShardError
from timor_core.search.exhaustive_search.shard_worker import ShardJob, ShardState, decidable, run_shard
from timor_core.search.filtering import cover_kernel, cut_kernel
from timor_core.search.filtering.family_proof import FamilyProofs, Lesson
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


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork is the start method on Linux only")
def test_a_search_leaves_no_thread_behind_so_the_next_one_forks_its_shards_too():
    """The parent's puts on the shards' queues (waking its watcher and pump) started feeder threads that outlived the
    search; the next search of the process then saw threads and started its shards by a forkserver (10x slower)."""
    local_shards.settle()
    task = Task.from_json_file(TASKS / "obstacle_middle.json")
    before = threading.enumerate()
    for _ in range(2):
        result = ExhaustiveSearch(_small_space(), workers=2, order="cost", progress=False).optimize(task, DB)
        assert result.found and result.settings["shards"] == 2
        local_shards.settle()  # (what the next search does first: its threads end within WAKE s)
        assert threading.enumerate() == before
        assert default_context().get_start_method() == ("fork" if len(before) == 1 else "forkserver")


def test_the_time_limit_stops_every_shard():
    """(The limit well below the whole search with 2 workers: at 0.5 s the search had ended first, by the
    bound, in 1 of 3 runs under load.)"""
    task = Task.from_json_file(TASKS / "obstacle_middle.json")
    result = ExhaustiveSearch(paper_exp2_space(DB), workers=2, order="cost", progress=False).optimize(
        task, DB, Budget(max_time=0.15)
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


def test_what_a_walk_leaves_alive_is_not_scanned_by_the_next_young_collection():
    """After the walk what it left alive (a search's kept heads, answers, frontier: here 20,000 lists) is in the
    oldest generation: the next allocations do not start a collection of the youngest generation, which would scan
    them all (~0.03 s on ``five_joints``) just before they are dropped; the young count starts from 0. Fails where
    the walk's objects are left young (20,000 > Python's threshold of 700: the first allocation collects)."""
    import gc

    from timor_core.search.evaluation.batch_stream import collector_eased

    assert gc.isenabled() and gc.get_freeze_count() == 0
    young: list[dict] = []
    seen = lambda phase, info: phase == "start" and young.append(info)  # noqa: E731
    kept: list[list[int]] = []
    try:
        with collector_eased():
            kept.extend([i] for i in range(20_000))
            gc.callbacks.append(seen)
        more = [[i] for i in range(100)]
    finally:
        gc.callbacks.remove(seen)
    assert not young and gc.get_count()[0] <= len(more) + 10, (young, gc.get_count())
    assert len(kept) == 20_000 and gc.get_freeze_count() == 0


@settings(max_examples=200, deadline=None)
@given(
    keys=st.lists(st.tuples(st.integers(0, 6), st.integers(0, 40)), max_size=30, unique=True),
    at=st.integers(0, 30),
    limit=st.sampled_from([1.5, 3.0, 4.0, math.inf]),
    best=st.none() | st.tuples(st.integers(0, 6).map(float), st.integers(0, 40)),
)
def test_the_batched_look_up_takes_what_comes_before_the_best_and_the_limit(keys, at, limit, best):
    """``decidable``: of a batch in ``(cost, position)`` order, from ``at`` on, those cheaper than the limit and
    before the best known (the best itself and its equals in cost at later positions are not); a prefix."""
    batch = [(float(c), i, ("J", str(i))) for c, i in sorted(keys)]
    want = [b for b in batch[at:] if b[0] < limit and (best is None or (b[0], b[1]) < best)]
    assert decidable(batch, at, limit, best) == want


class _Hub:
    """A shard's hub with a fixed best (as if another shard had found it), nothing shared."""

    def __init__(self, best: tuple[float, int] | None) -> None:
        self.fixed, self.found_states = best, []

    def best(self) -> tuple[float, int] | None:
        return self.fixed

    def found(self, state) -> None:
        self.found_states.append(state)

    def progress(self, state) -> None:
        pass

    def link(self, proofs):
        return None


def test_a_shard_behind_the_best_decides_what_comes_before_it_in_batches(monkeypatch):
    """A shard still walking what comes before the best another shard found takes the batched certificate look-up as
    before any best was known: the same candidates, counts and answers, as many decided in batches (it took them one
    at a time, at 3-4x the cost each)."""
    task = Task.from_json_file(TASKS / "obstacle_middle.json")
    space = paper_exp2_space(DB)
    spec = WorkerSpec(DBRef.of(DB), TaskRef.of(task), "mass", FilterConfig(family_proof=True))
    job = ShardJob(spec, space.options.canonical_json(), 0, 2, "token", "topic", fingerprint=space.fingerprint)
    runs = []
    for hub in (_Hub(None), None):
        monkeypatch.setattr(dask_worker, "_EVALUATORS", {})  # (a fresh evaluator: no certificates from the last run)
        if hub is None:  # the best that shard found alone, known from the start
            hub = _Hub((runs[0][0].best.cost, runs[0][0].best.seq))
        state = ShardState.from_json(run_shard(job, hub))
        runs.append((state, list(dask_worker.worker_evaluator(spec).lookup.counts), hub))
    (alone, alone_counts, _), (behind, behind_counts, hub) = runs
    assert alone.stopped == behind.stopped == "found" and hub.found_states
    assert (behind.best.ids, behind.best.seq) == (alone.best.ids, alone.best.seq)
    assert (behind.taken, behind.evaluations) == (alone.taken, alone.evaluations)
    for f in ("entered", "passed", "reasons"):  # (not the seconds)
        assert getattr(behind.funnel, f) == getattr(alone.funnel, f)
    assert behind_counts == alone_counts and behind_counts[0] > alone.taken // 2  # most decided in batches


def _linked(limit: int | None = None) -> tuple:
    """Two shards' hubs, proofs and links on this process's mailboxes (``limit``: the bytes in flight per pipe)."""
    ctx = multiprocessing.get_context()
    mail, best = shard_mail.Mailboxes.make(ctx, 2), ctx.Array("d", [math.inf, math.inf])
    if limit is not None:
        mail.limit = limit
    hubs = [local_shards.LocalHub(r, best, mail, ctx.Queue()) for r in range(2)]
    proofs = [FamilyProofs([], 1), FamilyProofs([], 1)]
    return mail, proofs, [hub.link(p) for hub, p in zip(hubs, proofs, strict=True)]


def test_a_shards_certificates_reach_the_others_right_after_its_proof():
    """The local link sends what a proof taught at once (not every 50 ms), counted only once it is in the pipe, and
    the other takes each message exactly once, without waiting."""
    mail, proofs, links = _linked()
    family = (b"r1", b"r2")
    for n in range(1, 4):  # three proofs in a row, each shared at once
        proofs[0].lessons.append(Lesson(0, family, np.full((2, 3), float(n)), 0.1))
        links[0].exchange()
        assert mail.sent[1] == n and mail.sent[2] == 0  # counted as sent from shard 0 to shard 1, at once
        links[1].exchange()  # (in the pipe: taken at the next look)
        assert proofs[1].certificates[0, family].size == n and links[1].taken[0] == n
        assert mail.taken_bytes[1] == mail.sent_bytes[1]
    links[1].exchange()  # nothing more came: nothing taken, no wait
    assert proofs[1].certificates[0, family].size == 3 and links[1].taken[0] == 3
    for link in links:
        link.close()
    mail.close()


def test_a_shard_whose_reader_stopped_never_blocks_and_the_rest_arrives_in_order():
    """A sender keeps at most the pipe's limit in flight: with its reader gone (an ended shard) it goes on without
    blocking (what does not fit waits, the oldest beyond MAX_PENDING dropped); once read, every lesson kept
    arrives, in order."""
    mail, proofs, links = _linked(limit=3000)
    family = (b"r1", b"r2")
    for n in range(300):  # ~30 kB of lessons into a 3 kB limit, the reader not reading: a write would block
        proofs[0].lessons.append(Lesson(0, family, np.full((2, 3), float(n)), 0.1))
        links[0].exchange()
        assert mail.sent_bytes[1] - mail.taken_bytes[1] <= mail.limit
    assert 0 < mail.sent[1] and 0 < len(links[0].pending[1]) < 300  # some in the pipe, the rest waiting
    for _ in range(1000):  # (bounded: a sender that never sends again fails here, it does not spin)
        if not links[0].pending[1]:
            break
        links[1].exchange()
        links[0].exchange()
    assert not links[0].pending[1]
    links[1].exchange()
    got = proofs[1].certificates[0, family]
    assert got.size == 300 and got.points[:300, 0, 0].tolist() == [float(n) for n in range(300)]
    for link in links:
        link.close()
    mail.close()


def test_a_link_makes_its_proofs_keep_what_they_learn_from_its_start():
    """A mail link sends what its shard's proofs learn after it is made, whoever made it (not only after a first
    ``share``): a proof learnt right after ``MailLink(...)`` reaches the other shard; what was kept before stays."""
    mail, _, _ = _linked()
    fresh = FamilyProofs([], 1)
    link = shard_mail.MailLink(fresh, 0, mail)
    assert fresh.lessons == []
    fresh.lessons.append(Lesson(0, (b"r1",), np.full((1, 3), 1.0), 0.1))
    link.exchange()
    assert mail.sent[1] == 1
    kept = FamilyProofs([], 1)
    kept.share()
    kept.lessons.append(Lesson(0, (b"r1",), np.full((1, 3), 2.0), 0.1))
    shard_mail.MailLink(kept, 0, mail)
    assert len(kept.lessons) == 1  # (not dropped by the link's start)
    mail.close()


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 5),
            st.lists(st.binary(min_size=0, max_size=40), min_size=1, max_size=6),
            st.floats(allow_nan=False, allow_infinity=True, width=64),
            st.floats(allow_nan=False, width=64),
        ),
        max_size=9,
    )
)
def test_lessons_go_through_the_pipes_bit_for_bit(rows):
    """``packed``/``unpacked`` (marshal, not pickle): every lesson comes back with its goal, rotation keys, translations
    and margin to the last bit (-0.0, infinities, NaNs and subnormals included) and its translations' shape."""
    with np.errstate(all="ignore"):  # (infinities and NaNs made on purpose)
        lessons = [
            Lesson(goal, tuple(rot), np.arange(3 * len(rot), dtype=float).reshape(-1, 3) * value + value, margin)
            for goal, rot, value, margin in rows
        ]
    back = shard_mail.unpacked(shard_mail.packed(lessons))
    assert len(back) == len(lessons)
    for a, b in zip(lessons, back, strict=True):
        assert (a.goal, a.rotations, a.margin.hex()) == (b.goal, b.rotations, b.margin.hex())
        assert b.translations.shape == a.translations.shape and b.translations.dtype == np.float64
        assert b.translations.tobytes() == a.translations.tobytes()


def test_a_closing_shard_sends_what_it_learnt_and_learns_nothing_more():
    """``close``: the lessons a shard's proofs learnt since its last exchange go out; what the other sent meanwhile is
    not learnt (its walk has ended: learning it only cost CPU)."""
    mail, proofs, links = _linked()
    family = (b"r1", b"r2")
    proofs[1].lessons.append(Lesson(0, family, np.full((2, 3), 2.0), 0.1))
    links[1].exchange()  # (shard 1 sent one)
    proofs[0].lessons.append(Lesson(0, family, np.full((2, 3), 1.0), 0.1))
    links[0].close()
    assert mail.sent[1] == 1  # shard 0's lesson sent at its close
    assert (0, family) not in proofs[0].certificates and links[0].taken[1] == 0  # shard 1's not learnt
    links[1].exchange()
    assert proofs[1].certificates[0, family].size == 1 and links[1].taken[0] == 1
    links[1].close()
    mail.close()


def test_the_parent_loads_what_every_forked_shard_would_load():
    """``warm``: the evaluator the shards find in their cache, the robot building and the kernels, loaded before the
    shards fork (each loaded them itself, ~14 ms of start-up)."""
    task = Task.from_json_file(TASKS / "moved_goals.json")
    spec = WorkerSpec(DBRef.of(DB), TaskRef.of(task), "mass", FilterConfig(family_proof=True))
    for kernels in (cover_kernel.AHEAD, cut_kernel.AHEAD):
        kernels.forget()
    evaluator = local_shards.warm(spec)
    assert evaluator is dask_worker.worker_evaluator(spec)
    assert {"timor_core.kinematics.build", "timor_core.kinematics.collision"} <= set(sys.modules)
    assert cover_kernel.AHEAD.looked and cut_kernel.AHEAD.looked  # (the look-up's kernels: looked for once, here)


def test_the_best_is_reported_with_the_tail_its_rank_needs_not_the_whole():
    """``found_report``: the finding shard's report carries its tail from the last key cheaper than its best (was:
    all of it, up to 16,384 keys, ~0.1 s to write and read on the search's critical path); the best's rank from the
    reports is the one from the whole tails; the state itself keeps its tail for the final trim."""
    from timor_core.search.evaluation.evaluate import Evaluation
    from timor_core.search.exhaustive_search.shards import rank_from_tails

    keys = [(float(c), i) for c, i in sorted((k // 3, (k * 7919) % 30011) for k in range(12_000))]
    mine, other = keys[0::2], keys[1::2]
    at = 4_000  # the finder's best: its 4,001st key
    best = Evaluation(("base", "J", "gripper"), True, mine[at][0], seq=mine[at][1])
    finder = ShardState(0, taken=at + 1, evaluations=at + 1, valid=1, best=best, stopped="found", tail=mine[: at + 1])
    runner = ShardState(1, taken=len(other), evaluations=len(other), stopped="bound", tail=list(other))
    report = finder.found_report()
    assert len(report.tail) < 10 and report.tail[-1] == mine[at] and report.tail[0] < (best.cost, -1)
    assert finder.tail == mine[: at + 1]  # (kept whole)
    rank = rank_from_tails([report, runner], best.seq)
    assert rank == rank_from_tails([finder, runner], best.seq) == sum(1 for k in keys if k < mine[at])
    assert len(report.text()) < len(finder.text()) // 100


class _Arriving:
    """A results queue whose item arrives just after a read found it empty (the race seen in CI): the first read
    raises Empty, the next gives the item; once empty again the watcher is told to stop."""

    def __init__(self, pool, item) -> None:
        self.pool, self.reads = pool, [queue.Empty(), item]

    def get(self, timeout=None):
        if not self.reads:
            self.pool.closed = True
            raise queue.Empty
        read = self.reads.pop(0)
        if isinstance(read, BaseException):
            raise read
        return read


def test_a_failed_shards_traceback_is_reported_though_it_arrives_after_its_process_ended():
    """The watcher sees the process ended after a read found the queue empty, and the traceback the process put
    before it ended is there by then: the search's error is the shard's traceback, not "ended without a result"."""
    pool = local_shards.ShardProcesses.__new__(local_shards.ShardProcesses)
    pool.closed, pool.procs, pool.futures = False, [SimpleNamespace(exitcode=1)], [Future()]
    pool.results = _Arriving(pool, (0, False, "Traceback ...\nRuntimeError: a filter broke"))
    pool._watch()
    with pytest.raises(ShardError, match="shard 0 failed:\nTraceback ...\nRuntimeError: a filter broke"):
        pool.futures[0].result(timeout=0)
    ended = local_shards.ShardProcesses.__new__(local_shards.ShardProcesses)  # nothing put: reported as such
    ended.closed, ended.procs, ended.futures = False, [SimpleNamespace(exitcode=3)], [Future()]
    ended.results = _Arriving(ended, None)
    ended.results.reads = [queue.Empty()]
    ended._watch()
    with pytest.raises(ShardError, match="the process of shard 0 ended without a result"):
        ended.futures[0].result(timeout=0)
