"""The cost-ordered search on Dask (issue 25, goal 5): the best cost broadcast to running chunks keeps the answer
the in-process search's (ties included), at most ``in_flight`` chunks are out at once (the stream is read only as
far as the workers get), and a local cluster leaves no process behind."""

from __future__ import annotations

import json
import math
import os
import random
from itertools import count

import pytest
from hypothesis import given
from hypothesis import strategies as st

from timor_core.search.dask_cluster.dask_worker import forget_bound, publish_bound, shared_bound

# -- the broadcast bound's rule, without a cluster -----------------------------------------------------------


def test_a_broadcast_best_skips_equal_costs_only_after_its_position():
    token = "t-rule"
    try:
        assert shared_bound(token, 5, math.inf) == math.inf  # nothing published yet
        publish_bound(token, 3.0, 10)
        assert shared_bound(token, 11, math.inf) == 3.0  # later position: an equal cost cannot win the tie
        assert shared_bound(token, 9, math.inf) == math.nextafter(3.0, math.inf)  # earlier: an equal cost still wins
        assert shared_bound(token, 11, 2.0) == 2.0  # the chunk's own bound when lower
        publish_bound(token, 3.0, 20)  # no improvement: (3.0, 10) stays
        assert shared_bound(token, 15, math.inf) == 3.0
        publish_bound(token, 3.0, 4)  # the same cost earlier in the sequence: it now decides the ties
        assert shared_bound(token, 9, math.inf) == 3.0
        assert shared_bound(None, 9, math.inf) == math.inf  # no token (a GA batch): nothing shared
    finally:
        forget_bound(token)
    assert shared_bound(token, 11, math.inf) == math.inf


@given(
    costs=st.lists(st.one_of(st.none(), st.integers(1, 6)), min_size=1, max_size=40),
    chunk=st.integers(1, 6),
    seed=st.integers(0, 10_000),
)
def test_any_completion_order_with_broadcasts_gives_the_sequential_best(costs, chunk, seed):
    """Chunks run interleaved in a random order, each valid result published at once: the best (cost, position)
    is the least one, as one process evaluating in order finds it (None: an invalid assembly)."""
    token = f"t-sim-{seed}"
    rng = random.Random(seed)
    chunks = [list(range(k, min(k + chunk, len(costs)))) for k in range(0, len(costs), chunk)]
    # each chunk: its items left, its own bound (lowered within the chunk)
    running = [[c, math.inf] for c in chunks]
    found: list[tuple[int, int]] = []
    try:
        while running:
            job = rng.choice(running)
            seq = job[0].pop(0)
            b = shared_bound(token, seq, job[1])
            c = costs[seq]
            if c is not None and c < b:  # valid, and not cut by the bound
                found.append((c, seq))
                job[1] = min(job[1], c)
                publish_bound(token, c, seq)
            if not job[0]:
                running.remove(job)
    finally:
        forget_bound(token)
    valid = [(c, s) for s, c in enumerate(costs) if c is not None]
    assert min(found, default=None) == min(valid, default=None)


# -- on a local cluster ---------------------------------------------------------------------------------------

try:  # the rule above is tested without Dask; what follows needs it
    import distributed
    import psutil
except ImportError:
    distributed = psutil = None
needs_dask = pytest.mark.skipif(distributed is None, reason="the Dask route needs dask[distributed] (extra 'cluster')")

from conftest import same_best, start_forked  # noqa: E402
from test_search import FAST, known_qs, known_robot, space, task  # noqa: E402, F401  (fixtures)

from timor_core.search import DaskEvaluator, ExhaustiveSearch, SearchResult, paper_exp2_space  # noqa: E402

# one worker builds the local Dask cluster once for all the tests here (xdist spreads a module's tests)
pytestmark = pytest.mark.xdist_group("dask_search")


@pytest.fixture(scope="module")
def cluster():
    with DaskEvaluator(n_workers=2, target_chunk_time=0.05) as de:
        start_forked(de)  # workers forked (conftest.start_forked)
        yield de


@needs_dask
def test_cost_order_on_dask_finds_the_in_process_optimum(cluster, space, task, robco):  # noqa: F811
    local = ExhaustiveSearch(space, filters=FAST, workers=1, progress=False, order="cost").optimize(task, robco)
    for chunk in (1, 3, None):  # chunk sizes change which chunk finds what first, never the answer
        de = DaskEvaluator(cluster.address, chunk_size=chunk, target_chunk_time=0.05, shards=False)  # streamed
        with de:
            on_dask = ExhaustiveSearch(space, filters=FAST, progress=False, order="cost", evaluator=de).optimize(
                task, robco
            )
        same_best(on_dask, local)
        assert local.stopped == "bound" and on_dask.stopped in ("bound", "exhausted")  # a small space may be all sent
        assert on_dask.best_goals == local.best_goals
        assert de.max_in_flight <= 2 * 2
    # the space order too (its bound is broadcast as well)
    de = DaskEvaluator(cluster.address, chunk_size=4)
    with de:
        space_order = ExhaustiveSearch(space, filters=FAST, progress=False, evaluator=de).optimize(task, robco)
    same_best(space_order, ExhaustiveSearch(space, filters=FAST, workers=1, progress=False).optimize(task, robco))


@needs_dask
@pytest.mark.slow
def test_the_user_study_optimum_on_dask_equals_the_local_search(cluster, robco):
    from conftest import SHARED

    from timor_core.task.feedback import load_task

    path = SHARED / "data" / "cobra" / "tasks" / "user_study.json"
    if not path.is_file():
        pytest.skip(f"the user-study task is not in {path.parent} (../shared/data)")
    study = load_task(str(path), False)
    exp2 = paper_exp2_space(robco)
    local = ExhaustiveSearch(exp2, workers=1, progress=False, order="cost").optimize(study, robco)
    de = DaskEvaluator(cluster.address, target_chunk_time=0.05, shards=False)  # streamed (shards: the next file)
    with de:
        on_dask = ExhaustiveSearch(exp2, progress=False, order="cost", evaluator=de).optimize(study, robco)
    same_best(on_dask, local)
    assert on_dask.best_ids == ("base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper")
    assert on_dask.stopped == "bound" and on_dask.evaluations >= local.evaluations


@needs_dask
def test_the_stream_is_read_only_as_far_as_the_workers_get(cluster, space, task, robco):  # noqa: F811
    pulled = [0]

    def endless():  # the space over and over: a stream that would never end if read to its end
        for k in count():
            pulled[0] += 1
            yield k, space[k % len(space)]

    de = DaskEvaluator(cluster.address, task=task, db=robco, config=FAST, chunk_size=2, in_flight=3)
    received = 0
    with de:
        for evaluations in de.stream(endless(), stop=lambda: received >= 30):
            received += len(evaluations)
            assert pulled[0] <= received + 3 * 2  # what is out is at most the window
    assert 30 <= received <= 30 + 3 * 2 and pulled[0] == received  # what was sent came back
    assert de.max_in_flight == 3  # the window was used, never exceeded


@needs_dask
def test_a_local_cluster_leaves_no_process_behind(space, task, robco):  # noqa: F811
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    de = DaskEvaluator(n_workers=2)
    with de:
        ExhaustiveSearch(space, filters=FAST, progress=False, order="cost", evaluator=de).optimize(task, robco)
        workers = set(de.client.run(os.getpid).values())
        assert set(de.client.run(os.getpid, nanny=True).values()) == {os.getpid()}  # a LocalCluster's nannies
        assert len(workers) == 2 and workers <= {p.pid for p in me.children(recursive=True)} - before
    assert de._client is None and de._cluster is None
    left = [p for p in me.children(recursive=True) if p.pid not in before and p.status() != psutil.STATUS_ZOMBIE]
    assert left == []
    for pid in workers:
        assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


@needs_dask
def test_cli_cost_order_search_on_local_dask(space, task, tmp_path, capsys):  # noqa: F811
    """``timor search --order cost --scheduler local --workers 2``: the in-process answer, and no process left."""
    from timor_core.cli.app import main

    tfile = tmp_path / "task.json"
    tfile.write_text(json.dumps(task.to_json_data()))
    sfile = tmp_path / "space.json"
    sfile.write_text(json.dumps(space.options.to_json()))  # the small space (84 assemblies)
    me = psutil.Process()
    before = {p.pid for p in me.children(recursive=True)}
    common = ["search", str(tfile), "--db", "robco_like", "--space", str(sfile), "--order", "cost", "--no-progress"]
    assert main([*common, "--workers", "1", "-o", str(tmp_path / "local.json")]) == 0
    assert main([*common, "--scheduler", "local", "--workers", "2", "-o", str(tmp_path / "dask.json")]) == 0
    capsys.readouterr()
    local = SearchResult.from_json_file(tmp_path / "local.json")
    on_dask = SearchResult.from_json_file(tmp_path / "dask.json")
    same_best(on_dask, local)
    assert on_dask.workers == 2 and on_dask.settings["order"] == "cost" and local.stopped == "bound"
    left = [p for p in me.children(recursive=True) if p.pid not in before and p.status() != psutil.STATUS_ZOMBIE]
    assert left == []


@needs_dask
@pytest.mark.slow
def test_the_big_space_benchmark_runs(tmp_path):
    """``benchmarks/big_space.py`` end to end on small settings: its figures, the user-study optimum everywhere."""
    import subprocess
    import sys

    from conftest import REPO, SHARED

    if not (SHARED / "data" / "cobra" / "tasks" / "user_study.json").is_file():
        pytest.skip("the user-study task is not in ../shared/data")
    study = str(SHARED / "data" / "cobra" / "tasks" / "user_study.json")
    cmd = [sys.executable, str(REPO / "benchmarks" / "big_space.py"), "--sizes", "5", "6", "--rounds", "1"]
    cmd += ["--dask-size", "5", "--dask-task", study, "--route", "both", "--ceiling", "--json"]
    # (its Dask workers are forked from a fork server that loaded timor's worker code once: the benchmark's own way)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout[proc.stdout.index("{") :])
    assert [r["assemblies"] for r in report["memory"]] == [177_155, 1_948_716]
    assert all(r["best_cost"] == pytest.approx(11.02, abs=0.005) and r["stopped"] == "bound" for r in report["memory"])
    assert all(0 < r["peak_rss_mb"] < 2048 for r in report["memory"])
    dask = report["dask"]
    assert dask["same_best_everywhere"] and len(dask["runs"]["1"]) == len(dask["runs"]["2"]) == 1
    assert dask["speedup_cpu"] > 0 and 0 < dask["work_efficiency"] <= 1.5
    assert dask["route"] == "shards" and all(r["shards"] == n for n in (1, 2) for r in dask["runs"][str(n)])
    assert all(r["proofs"] >= 0 for n in (1, 2) for r in dask["runs"][str(n)])  # the family proofs made
    stream = report["dask_stream"]
    assert stream["route"] == "stream" and stream["same_best_everywhere"] and stream["runs"]["2"][0]["chunks"] > 0
    assert {tuple(r["best"]) for r in dask["runs"]["1"] + stream["runs"]["1"]} == {tuple(dask["runs"]["2"][0]["best"])}
    assert report["ceiling"]["ceiling"] > 0 and len(report["ceiling"]["walls"]["2"]) == 1
