"""The cost-ordered search in shards, one per Dask worker, each walking its own part of the cost order (issue 25,
goal 5): the shards' streams interleave to the whole cost order, the stop rule keeps the least (cost, position)
whatever the timing, and on a cluster the answer (assembly, cost, position in the cost order) is the in-process
search's, also after a resume and with a worker killed mid-run."""

from __future__ import annotations

import heapq
import json
import math
import os
import random
import signal
import threading
import time
import uuid
from unittest import mock

import pytest
from conftest import same_best, start_forked  # noqa: E402
from hypothesis import example, given, settings
from hypothesis import strategies as st
from test_search import FAST, known_qs, known_robot, space, task  # noqa: F401  (fixtures)

from timor_core.search import ExhaustiveSearch, paper_exp2_space
from timor_core.search.dask_cluster.dask_connect import forked_workers
from timor_core.search.dask_cluster.dask_worker import forget_bound, publish_bound, shared_best, shared_bound
from timor_core.search.evaluation.evaluate import DBRef, TaskRef
from timor_core.search.evaluation.parallel import WorkerSpec
from timor_core.search.exhaustive_search.shard_worker import ShardJob, ShardState, run_shard
from timor_core.search.exhaustive_search.shards import SHARD_ROUTE, WORKER_PRELOAD, cost_rank, rank_from_tails
from timor_core.search.spaces import cost_order
from timor_core.search.spaces.cost_order import by_cost, by_cost_indexed

# -- without a cluster ----------------------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(
    k=st.integers(1, 5),
    start=st.integers(0, 40),
    length=st.integers(0, 60),
    prefixes=st.sampled_from([1, 2, 5, cost_order.SPLIT_PREFIXES]),
)
def test_the_shards_interleave_to_the_whole_cost_order(space, k, start, length, prefixes):  # noqa: F811
    """Every position is in exactly one shard, and merging the shards' streams by (cost, position) gives the whole
    stream: what the in-process search walks. ``prefixes`` moves the split (the length of the module sequences
    whose subtrees the shards own) from the first modules to beyond the longest chain (each position by itself)."""
    stop = min(len(space), start + length)
    whole = list(by_cost_indexed(space, "mass", start, stop))
    with mock.patch.object(cost_order, "SPLIT_PREFIXES", prefixes):
        shards = [list(by_cost_indexed(space, "mass", start, stop, shard=(r, k))) for r in range(k)]
    assert sorted(i for s in shards for _, i, _ in s) == list(range(start, stop)) if start < stop else True
    assert list(heapq.merge(*shards)) == whole
    assert [(p, ids) for p, _, ids in whole] == [(p, tuple(ids)) for p, ids in by_cost(space, "mass", start, stop)]


def test_a_shard_walks_only_its_subtrees(space):  # noqa: F811
    """With the split within the chains, a shard's positions come in runs (whole subtrees), not one by one."""
    trans = space._auto.trans
    with mock.patch.object(cost_order, "SPLIT_PREFIXES", 2):
        depth = cost_order.split_depth(trans, 2)
        first = sorted(i for _, i, _ in by_cost_indexed(space, "mass", shard=(0, 2)))
    runs = 1 + sum(b != a + 1 for a, b in zip(first, first[1:]))
    assert depth >= 1 and 0 < len(first) < len(space) and runs < len(first) / 2


@given(
    shards=st.lists(
        st.lists(st.tuples(st.integers(1, 6), st.booleans()), max_size=12), min_size=1, max_size=4
    ),  # per shard: (cost, valid) of its candidates
    seed=st.integers(0, 10_000),
)
def test_any_interleaving_of_shards_gives_the_sequential_best(shards, seed):
    """The shard loop's rule (stop at the first valid one, or when the next candidate does not come before the
    shared best) in a random interleaving: the least (cost, position) of the valid ones, as one process walking
    the merged order finds it."""
    token = f"t-shards-{seed}-{uuid.uuid4().hex}"
    rng = random.Random(seed)
    k = len(shards)
    # positions: candidate j of shard r is position j * k + r; each shard's list sorted by (cost, position)
    streams = [sorted((c, j * k + r, v) for j, (c, v) in enumerate(s)) for r, s in enumerate(shards)]
    running = [list(s) for s in streams]
    found = []
    try:
        while any(running):
            r = rng.choice([r for r, s in enumerate(running) if s])
            cost, pos, valid = running[r][0]
            best = shared_best(token)
            if best is not None and (cost, pos) > best:
                running[r] = []  # stopped by the shared best
                continue
            running[r].pop(0)
            if valid and cost < shared_bound(token, pos, math.inf):
                found.append((cost, pos))
                publish_bound(token, cost, pos)
                running[r] = []  # a shard's first valid candidate is its optimum
    finally:
        forget_bound(token)
    merged = sorted(x for s in streams for x in s)
    assert min(found, default=None) == next(((c, p) for c, p, v in merged if v), None)


def test_shards_run_here_find_the_in_process_optimum(space, task, robco):  # noqa: F811
    """``run_shard`` itself (in this process, one shard after the other, sharing the best as the workers do):
    the in-process search's best, for 1, 2 and 3 shards; a resumed shard skips what it had taken."""
    local = ExhaustiveSearch(space, filters=FAST, workers=1, progress=False, order="cost").optimize(task, robco)
    assert local.found
    spec = WorkerSpec(DBRef.of(robco), TaskRef.of(task), "mass", FAST)
    options = space.options.canonical_json()
    for k in (1, 2, 3):
        token = uuid.uuid4().hex
        try:
            states = [
                ShardState.from_json(
                    run_shard(ShardJob(spec, options, r, k, token, "t", fingerprint=space.fingerprint))
                )
                for r in range(k)
            ]
        finally:
            forget_bound(token)
        best = min((s.best for s in states if s.best is not None), key=lambda ev: ev.rank)
        assert (best.ids, best.cost) == (local.best_ids, local.best_cost)
        assert cost_rank(space, "mass", 0, len(space), None, best.seq) == local.best_seq
        assert rank_from_tails(states, best.seq) == local.best_seq  # from the shards' last keys, no walk
        assert sum(s.taken for s in states) == sum(s.evaluations for s in states) >= local.best_seq + 1 - k
    # a shard stopped by a bound, then resumed: it continues after what it had taken
    first = ShardState.from_json(run_shard(ShardJob(spec, options, 0, 2, "t0", "t", bound=local.best_cost - 0.5)))
    assert first.stopped == "bound" and first.best is None and first.taken > 0
    again = ShardState.from_json(run_shard(ShardJob(spec, options, 0, 2, "t1", "t", resume=first.text())))
    assert again.taken > first.taken and again.evaluations == again.taken
    whole = ShardState.from_json(run_shard(ShardJob(spec, options, 0, 2, "t2", "t")))
    assert (again.taken, again.best.seq if again.best else None) == (
        whole.taken,
        whole.best.seq if whole.best else None,
    )


def test_the_rank_from_the_shards_tails_or_none_when_they_do_not_reach_back():
    a = ShardState(0, taken=5, tail=[(1.0, 3), (2.0, 0), (2.0, 6), (3.0, 9)])  # its first taken key is not in the tail
    b = ShardState(1, taken=2, tail=[(1.5, 4), (2.0, 7)])
    assert rank_from_tails([a, b], 6) == (5 - 2) + 1  # a: 3 keys before (2.0, 6); b: (1.5, 4) only
    assert rank_from_tails([a, b], 0) == (5 - 3) + 1
    assert rank_from_tails([a, b], 42) is None  # the best is in no tail
    late = ShardState(1, taken=9, tail=[(2.5, 1), (2.6, 5)])  # all after the best, and keys before them unknown
    assert rank_from_tails([a, late], 6) is None


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 4), st.booleans(), st.integers(0, 1)), min_size=1, max_size=40),
)
@example([(1, False, 0), (2, False, 1), (3, True, 0), (3, False, 1), (3, True, 1)])  # shard 1 passed the best by 2
def test_the_rank_from_tails_trimmed_at_each_shards_own_best(picks):
    """Each shard ends at its first valid assembly and trims its tail knowing only its own best (the other's came
    too late); the rank counted from the tails is the true one, or None (the walk then counts it). Two bests of equal
    cost (ties: dense in wide spaces) must not need the walk: a 2·10¹³ space's more_goals walked 272,000
    assemblies in the client, 5 s of CPU."""
    keys = sorted({(float(c), i) for i, (c, _, _) in enumerate(picks)})
    valid = {i for i, (_, v, _) in enumerate(picks) if v}
    states = []
    for r in (0, 1):
        mine = [k for k in keys if picks[k[1]][2] == r]
        taken = []
        for k in mine:
            taken.append(k)
            if k[1] in valid:
                break
        state = ShardState(r, taken=len(taken), tail=list(taken))
        own = taken[-1] if taken and taken[-1][1] in valid else None
        state.trim_tail(own)
        states.append((state, own))
    bests = [own for _, own in states if own is not None]
    if not bests:
        return
    best = min(bests)
    rank = rank_from_tails([s for s, _ in states], best[1])
    truth = sum(
        1
        for s, _ in states
        for k in keys
        if picks[k[1]][2] == s.index and k < best and k in _taken(s, keys, picks, valid)
    )
    assert rank is None or rank == truth
    if len(bests) == 2 and bests[0][0] == bests[1][0]:
        assert rank == truth


def _taken(state, keys, picks, valid):
    out = set()
    for k in keys:
        if picks[k[1]][2] != state.index:
            continue
        out.add(k)
        if k[1] in valid:
            break
    return out


def test_a_shard_refuses_a_space_that_is_not_the_clients(space, task, robco):  # noqa: F811
    from timor_core.search.spaces.rules import SearchSpaceError

    spec = WorkerSpec(DBRef.of(robco), TaskRef.of(task), "mass", FAST)
    job = ShardJob(spec, space.options.canonical_json(), 0, 1, "t", "t", fingerprint="not-this-space")
    with pytest.raises(SearchSpaceError, match="not the client's"):
        run_shard(job)


# -- on a local cluster ---------------------------------------------------------------------------------------

try:
    import distributed
    import psutil
except ImportError:
    distributed = psutil = None
needs_dask = pytest.mark.skipif(distributed is None, reason="the Dask route needs dask[distributed] (extra 'cluster')")

if distributed is not None:
    from timor_core.search import DaskEvaluator


# one worker builds the local Dask cluster once for all the tests here (xdist spreads a module's tests)
pytestmark = pytest.mark.xdist_group("dask_search_shards")


@pytest.fixture(scope="module")
def cluster():
    with DaskEvaluator(n_workers=2) as de:
        start_forked(de)  # workers forked (conftest.start_forked)
        yield de


@needs_dask
def test_sharded_search_on_dask_equals_the_in_process_search(cluster, space, task, robco):  # noqa: F811
    local = ExhaustiveSearch(space, filters=FAST, workers=1, progress=False, order="cost").optimize(task, robco)
    de = DaskEvaluator(cluster.address, report_every=0.05)
    with de:
        on_dask = ExhaustiveSearch(space, filters=FAST, progress=False, order="cost", evaluator=de).optimize(
            task, robco
        )
    same_best(on_dask, local)
    assert on_dask.best_goals == local.best_goals
    assert on_dask.settings["shards"] == 2 and on_dask.workers == 2 and de.max_in_flight == 0  # no chunk was sent
    assert on_dask.stopped in ("bound", "exhausted") and on_dask.next_seq == local.best_seq + 1
    assert on_dask.funnel.entered[on_dask.funnel.names[0]] == on_dask.evaluations >= local.best_seq + 1 - 2
    assert on_dask.improvements[-1]["seq"] == local.best_seq
    # the same search streamed from the client in chunks (shards=False): the same answer
    de = DaskEvaluator(cluster.address, chunk_size=3, shards=False)
    with de:
        streamed = ExhaustiveSearch(space, filters=FAST, progress=False, order="cost", evaluator=de).optimize(
            task, robco
        )
    same_best(streamed, local)
    assert "shards" not in streamed.settings and de.max_in_flight > 0


@needs_dask
def test_a_resumed_sharded_search_continues_each_shard(cluster, space, task, robco, tmp_path):  # noqa: F811
    """A checkpoint of shards stopped part-way (here by a bound below the optimum) resumes to the in-process best;
    the shards skip what they had taken (their counts carry over, nothing is evaluated twice)."""
    local = ExhaustiveSearch(space, filters=FAST, workers=1, progress=False, order="cost").optimize(task, robco)
    ckpt = tmp_path / "shards.ckpt.json"
    de = DaskEvaluator(cluster.address, checkpoint=ckpt)
    low = ExhaustiveSearch(space, filters=FAST, progress=False, order="cost", bound=local.best_cost - 0.5, evaluator=de)
    first = low.optimize(task, robco)
    assert not first.found and first.stopped == "bound"
    saved = json.loads(ckpt.read_text())
    assert saved["route"] == SHARD_ROUTE and saved["shards"] == 2 and len(saved["states"]) == 2
    taken = [s["taken"] for s in saved["states"]]
    assert sum(taken) == first.evaluations > 0
    de = DaskEvaluator(cluster.address, resume=ckpt)
    assert de.resumed_route == SHARD_ROUTE
    rest = ExhaustiveSearch(space, filters=FAST, progress=False, order="cost", evaluator=de).optimize(task, robco)
    same_best(rest, local)
    saved = json.loads(ckpt.read_text())
    assert all(s["taken"] >= t for s, t in zip(saved["states"], taken))
    assert rest.evaluations == sum(s["taken"] for s in saved["states"])  # the first run's included, once
    # the streamed route refuses the sharded checkpoint with a clear error
    from timor_core.search import ClusterError

    de = DaskEvaluator(cluster.address, resume=ckpt)
    with pytest.raises(ClusterError, match="sharded cost-order"):
        ExhaustiveSearch(space, filters=FAST, progress=False, evaluator=de).optimize(task, robco)
    # a checkpoint of another search is refused
    other = tmp_path / "other.ckpt.json"
    other.write_text(json.dumps({**saved, "start": 5}))
    with pytest.raises(ClusterError, match="start differs"):
        ExhaustiveSearch(
            space, filters=FAST, progress=False, order="cost", evaluator=DaskEvaluator(cluster.address, resume=other)
        ).optimize(task, robco)


def _exp2_case(name: str, robco):
    from conftest import SHARED

    from timor_core.task.feedback import load_task

    here = os.path.dirname(__file__)
    path = (
        SHARED / "data" / "cobra" / "tasks" / "user_study.json"
        if name == "user_study"
        else os.path.join(here, "data", "exp2_tasks", f"{name}.json")
    )
    if not os.path.isfile(path):
        pytest.skip(f"{path} is not there (../shared/data)")
    return load_task(str(path), False), paper_exp2_space(robco)


@pytest.fixture(scope="module")
def in_process(robco):
    """The in-process search's answer to an exp2 case, searched once per module (two tests compare with
    moved_goals': the search on Dask here and the one where a worker is killed)."""
    answers: dict = {}

    def answer(name: str):
        if name not in answers:
            study, exp2 = _exp2_case(name, robco)
            answers[name] = ExhaustiveSearch(exp2, workers=1, progress=False, order="cost").optimize(study, robco)
        return answers[name]

    return answer


@needs_dask
@pytest.mark.slow
@pytest.mark.parametrize("name", ["user_study", "moved_goals", "more_goals"])
def test_exp2_tasks_sharded_on_dask_equal_the_in_process_search(cluster, robco, in_process, name):
    """Also where the workers share their family certificates (search.shard_share; more_goals: hundreds of proofs
    in each shard): each worker sent some, and the other took some in while its shard ran."""
    from timor_core.search.exhaustive_search.shard_share import link_counts

    study, exp2 = _exp2_case(name, robco)
    local = in_process(name)
    de = DaskEvaluator(cluster.address)
    before = cluster.client.run(link_counts)
    with de:
        on_dask = ExhaustiveSearch(exp2, progress=False, order="cost", evaluator=de).optimize(study, robco)
    same_best(on_dask, local)
    assert on_dask.stopped == "bound" and on_dask.settings["shards"] == 2
    if name == "more_goals":
        after = cluster.client.run(link_counts)
        for w in after:
            assert after[w]["sent"] > before[w]["sent"], (w, before, after)
        assert sum(after[w]["received"] - before[w]["received"] for w in after) > 0, (before, after)


@needs_dask
@pytest.mark.slow
def test_a_worker_killed_mid_shard_changes_nothing_in_the_answer(cluster, robco, in_process):
    """A worker of the module's cluster is killed while the shards run: its shard runs again (on the other worker
    or the one the nanny starts), and the answer is still the in-process search's. (The module's last test: a
    cluster of its own cost two more worker starts, ~1.8 CPU-s.)"""
    study, exp2 = _exp2_case("moved_goals", robco)
    local = in_process("moved_goals")
    out: dict = {}
    # a replacement the nanny starts while this block runs is forked from the fork server of the module's cluster
    # (conftest.start_forked), not spawned (a fresh interpreter loading distributed and timor: ~1.5 CPU-s)
    with DaskEvaluator(cluster.address, report_every=0.2) as de, forked_workers(WORKER_PRELOAD):
        de.start()

        def search() -> None:
            try:
                out["result"] = ExhaustiveSearch(exp2, progress=False, order="cost", evaluator=de).optimize(
                    study, robco
                )
            except BaseException as exc:  # noqa: BLE001 - reported below
                out["error"] = exc

        thread = threading.Thread(target=search)
        thread.start()
        killed = None
        for _ in range(600):
            processing = de.client.processing()
            busy = [w for w, keys in processing.items() if any("timor-shard" in str(k) for k in keys)]
            if len(busy) == 2:
                time.sleep(0.5)  # well into the shards
                pids = de.client.run(os.getpid)
                killed = pids[busy[0]]
                os.kill(killed, signal.SIGKILL)
                break
            time.sleep(0.01)
        thread.join(timeout=300)
        assert not thread.is_alive()
        assert killed is not None, "the shards never ran on both workers"
        assert "error" not in out, out.get("error")
        # the search can end before the scheduler has dropped the killed worker: a broadcast to it then fails
        # (CommClosedError, seen in a clean-clone CI run), so only the workers that answer are asked
        alive = de.client.run(os.getpid, on_error="ignore")
        assert alive and killed not in alive.values(), (killed, alive)
    same_best(out["result"], local)
