"""The exhaustive search on Dask distributed (a local cluster of 2 worker processes on the loopback interface):
the same best as in-process, surviving a killed worker, checkpoint and resume, fast failure on a bad address."""

from __future__ import annotations

import json
import math
import os
import signal
import socket
import time

import pytest

pytest.importorskip("distributed")

from conftest import same_best, start_forked  # noqa: E402
from test_search import FAST, known_qs, known_robot, space, task  # noqa: E402, F401  (fixtures)

from timor_core.errors import InputError  # noqa: E402
from timor_core.search import (  # noqa: E402
    Budget,
    ClusterError,
    DaskEvaluator,
    Evaluator,
    ExhaustiveSearch,
    SearchResult,
)
from timor_core.search.dask_cluster.dask_connect import forked_workers  # noqa: E402
from timor_core.search.exhaustive_search.shards import WORKER_PRELOAD  # noqa: E402

# one worker starts the Dask cluster and runs the reference search once for the tests here (xdist spreads them)
pytestmark = pytest.mark.xdist_group("cluster")


@pytest.fixture(scope="module")
def reference(space, task, robco) -> SearchResult:  # noqa: F811
    return ExhaustiveSearch(space, cost="mass", filters=FAST, workers=1, progress=False).optimize(task, robco)


@pytest.fixture(scope="module")
def cluster():
    """A local cluster of 2 workers, closed at the end of the module even when a test fails."""
    with DaskEvaluator(n_workers=2) as de:
        start_forked(de)  # workers forked (conftest.start_forked)
        yield de


def test_dask_search_matches_the_in_process_search(cluster, reference, space, task, robco):  # noqa: F811
    assert cluster.address.startswith("tcp://127.0.0.1:")
    result = ExhaustiveSearch(space, filters=FAST, progress=False, evaluator=cluster).optimize(task, robco)
    same_best(result, reference)
    assert result.best_goals == reference.best_goals
    assert result.evaluations == len(space) and result.stopped == "exhausted" and result.next_seq == len(space)
    assert result.workers == 2 and cluster.client is not None  # the search did not close the shared cluster
    # the batch interface: per-assembly verdicts as in this process
    batch = [space[i] for i in range(0, len(space), 7)]
    cluster.bind(task, robco, "mass", FAST)
    local = Evaluator(task, robco, "mass", FAST)
    for k, (ids, ev) in enumerate(zip(batch, cluster.evaluate_batch(batch))):
        ref = local(ids, seq=k)
        assert ev.ids == ids and (ev.valid, ev.failed_filter, ev.goals) == (ref.valid, ref.failed_filter, ref.goals)


def test_a_killed_worker_is_replaced_and_its_chunks_rerun(cluster, reference, space, task, robco):  # noqa: F811
    de = DaskEvaluator(cluster.address, task=task, db=robco, config=FAST, chunk_size=2)
    best = SearchResult("dask", task.id, robco.name, "mass")
    seqs: list[int] = []
    killed = None

    def bound() -> float:
        return math.inf if best.best_cost is None else best.best_cost

    # the nanny's replacement is forked from the fork server of the module's cluster (conftest.start_forked), not
    # spawned: a fresh interpreter loading distributed and timor cost ~1.5 CPU-s; how it starts is not what is tested
    with de, forked_workers(WORKER_PRELOAD):
        for evaluations in de.stream(((k, ids) for k, ids in enumerate(space)), bound):
            for ev in evaluations:
                seqs.append(ev.seq)
                best.consider(ev)
            if killed is None:  # the first results are in: kill a worker that has work
                pids = de.client.run(os.getpid)
                processing = de.client.processing()
                killed = next((a for a in pids if processing.get(a)), next(iter(pids)))
                at_kill = len(seqs)
                os.kill(pids[killed], signal.SIGKILL)
        assert killed is not None and at_kill < len(space)  # killed mid-run
        de.client.wait_for_workers(2, timeout=30)  # the nanny restarts the process
        assert pids[killed] not in de.client.run(os.getpid).values()
    assert sorted(seqs) == list(range(len(space)))  # everything, exactly once
    same_best(best, reference)


def test_checkpoint_and_resume_cover_the_space_once(cluster, reference, space, task, robco, tmp_path):  # noqa: F811
    ckpt = tmp_path / "run.ckpt.json"
    first_de = DaskEvaluator(cluster.address, chunk_size=8, checkpoint=ckpt, checkpoint_every=2)
    first = ExhaustiveSearch(space, filters=FAST, progress=False, evaluator=first_de).optimize(task, robco, Budget(24))
    assert first.stopped == "max_evaluations" and first.evaluations == 24 and first.next_seq == 24
    saved = json.loads(ckpt.read_text())
    assert saved["done"] == [[0, 24]] and saved["evaluations"] == 24 and saved["chunks"] == 3

    rest_de = DaskEvaluator(cluster.address, chunk_size=8, resume=ckpt)
    rest = ExhaustiveSearch(space, filters=FAST, progress=False, evaluator=rest_de).optimize(task, robco)
    assert rest.stopped == "exhausted" and rest.evaluations == len(space) and rest.next_seq == len(space)
    assert rest_de._chunks - 3 == math.ceil((len(space) - 24) / 8)  # only the missing chunks were run
    assert rest.funnel.entered[rest.funnel.names[0]] == len(space)
    same_best(rest, reference)
    saved = json.loads(ckpt.read_text())
    assert saved["done"] == [[0, len(space)]] and saved["evaluations"] == len(space)

    # a checkpoint of the second half (its best lies after the positions still to do) resumes to the same best
    tail = tmp_path / "tail.ckpt.json"
    start = len(space) // 2
    tail_de = DaskEvaluator(cluster.address, chunk_size=8, checkpoint=tail)
    ExhaustiveSearch(space, filters=FAST, progress=False, start=start, evaluator=tail_de).optimize(task, robco)
    assert json.loads(tail.read_text())["done"] == [[start, len(space)]]
    head_de = DaskEvaluator(cluster.address, chunk_size=8, resume=tail)
    whole = ExhaustiveSearch(space, filters=FAST, progress=False, evaluator=head_de).optimize(task, robco)
    assert whole.evaluations == len(space) and whole.stopped == "exhausted"
    same_best(whole, reference)


def test_an_unreachable_scheduler_fails_fast_with_a_clear_error(space, task, robco):  # noqa: F811
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the socket is: nobody listens there
    t0 = time.perf_counter()
    de = DaskEvaluator(f"dask://127.0.0.1:{port}", connect_timeout=1.5)
    with pytest.raises(ClusterError, match="cannot reach the Dask scheduler") as info:
        ExhaustiveSearch(space, filters=FAST, progress=False, evaluator=de).optimize(task, robco)
    assert isinstance(info.value, InputError)
    assert time.perf_counter() - t0 < 10


def test_cli_search_on_a_local_dask_cluster_with_checkpoint(task, tmp_path, capsys):  # noqa: F811
    from timor_core.cli.app import main
    from timor_core.search import SearchResult

    tfile = tmp_path / "task.json"
    tfile.write_text(json.dumps(task.to_json_data()))
    out = tmp_path / "result.json"
    argv = ["search", str(tfile), "--db", "robco_like", "--scheduler", "local", "--workers", "2"]
    argv += ["--budget-evals", "12", "--no-progress", "-o", str(out)]
    assert main(argv) == 0
    assert "ExhaustiveSearch" in capsys.readouterr().out
    result = SearchResult.from_json_file(out)
    assert result.evaluations == 12
    checkpoint = json.loads((tmp_path / "result.json.checkpoint.json").read_text())
    assert checkpoint["evaluations"] == 12
    # an unreachable scheduler: one clear line, exit 2
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    bad = ["search", str(tfile), "--db", "robco_like", "--scheduler", f"tcp://127.0.0.1:{port}", "--no-progress"]
    assert main(bad) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "Traceback" not in err
