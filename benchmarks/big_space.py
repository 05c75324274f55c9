#!/usr/bin/env python3
"""The cost-ordered constrained search of a big space in bounded memory, and on a local Dask cluster (issue 25, 5).

    python benchmarks/big_space.py                  # memory per space size, then Dask 1 vs 2 workers, 5 rounds
    python benchmarks/big_space.py --rounds 3 --sizes 6 8 --chunk-times 0.02 0.05 0.5 --json

The space is experiment 2's rules on robco_like (a joint after the base, at most one link between two joints and
after the last) with up to ``dof_max`` joints: 5 -> 177,155 assemblies, 6 -> 1.9·10^6, 7 -> 2.1·10^7,
8 -> 2.4·10^8. The task is the user study (``../shared/data/cobra/tasks/user_study.json``; ``--task`` for
another); the Dask comparison's is ``obstacle_middle`` (``src/timor_core/tests/data/exp2_tasks``; ``--dask-task``).
The search is ``timor search TASK --order cost --space SPACE.json``: cheapest first, streamed
(``search/spaces/cost_order.py``), stopping when nothing cheaper than the best valid robot is left. It stops after a
bounded number of evaluations: the assemblies lighter than the optimum, the same in every space size here (no
robot of more than five joints is lighter than 11.02 kg), so memory can only grow with the space if some part of
the search held the space. No evaluation budget and no time limit is set.

1. Memory: each size in a fresh process (``workers=1``, in-process evaluation): peak RSS (``ru_maxrss``), user CPU,
   wall time, evaluations and the best robot.
2. Dask: ``LocalCluster(n_workers=N, threads_per_worker=1)`` for N = 1 and 2 (alternating, ``--rounds`` each, a
   fresh cluster per run, its workers loaded with the module set, task, filter chain and the compiled proof bounds
   (where compiled kernels are allowed) before the clock starts; the workers are forked from a fork server that
   loaded timor's worker code and kernels once, ``dask_connect.forked_workers``: what is timed starts after that,
   and a spawned worker loading them itself cost ~0.8 CPU-s, the benchmark's clusters ~5 CPU-s at small sizes),
   times the same search of the largest size on it. Besides
   the wall time (the machine is shared: other jobs take CPU), the workers' user CPU (``getrusage`` in each worker
   before and after) gives a speed-up that load does not distort: the 1-worker run's CPU over the 2-worker run's
   busiest worker (what the wall time would be with a core each), and the work efficiency (1-worker CPU over the
   2-worker CPU summed: what speculative evaluation and overhead cost). ``uptime``'s load is printed per run.
3. ``--chunk-times``: the chunk size sweep behind the default ``target_chunk_time`` (2 workers, one run each).
4. ``--decide TASK ...`` (issue 38, 2): each task decided (optimum found and proven, or proven empty) on the
   ``--decide-space`` (default :data:`DECIDE_SPACE`, 2.2·10^8 assemblies of up to seven joints), each run in a fresh
   process: in-process on 1 and 2 workers (``--decide-workers``; 2: the cost order's local shards) and on a local
   Dask cluster of 2 workers (started and loaded before the clock, as in 2.). Wall time, CPU of the process and its
   workers, peak RSS of the process and of its largest worker, evaluations, why it stopped, the best.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TASK = REPO.parent / "shared" / "data" / "cobra" / "tasks" / "user_study.json"
#: the Dask comparison's task: 40,103 evaluations (~17 s of CPU on a quiet machine) before the bound stops the
#: search. The user study (1,234, ~0.7 s) and, since the family certificates, moved_goals (~2 s) and more_goals
#: (~6 s) are short enough for a cluster's fixed costs per search (starting the shards, passing the best on, the
#: last shard's stop) to show in the ratio (see benchmarks/README.md); a cluster is for the long searches
DASK_TASK = REPO / "src" / "timor_core" / "tests" / "data" / "exp2_tasks" / "obstacle_middle.json"
SIZES = {5: 177_155, 6: 1_948_716, 7: 21_435_887, 8: 235_794_768}
#: the decided space: experiment 2's rules with up to seven joints and up to two links after the last joint
#: (216,307,587 assemblies); ``--decide-space`` takes another as JSON options
DECIDE_SPACE = {"dof_max": 7, "first_is_joint": True, "max_links_between_joints": 1, "max_links_after_last_joint": 2}


def space_options(dof_max: int) -> dict:
    """Experiment 2's space rules with up to ``dof_max`` joints."""
    return {"dof_max": dof_max, "first_is_joint": True, "max_links_between_joints": 1, "max_links_after_last_joint": 1}


def load() -> float:
    return os.getloadavg()[0]


# -- 1. memory, one fresh process per size ------------------------------------------------------------------
def child(task: str, dof_max: int, ready: Callable[[], None] | None = None) -> dict:
    """Run the search in this (fresh) process; its figures as a dict (``ready``: called once loaded, before the
    clock starts; it returns when the search may start, so that concurrent children search at the same time)."""
    from timor_core import ModulesDB
    from timor_core.search import ExhaustiveSearch, FilterConfig, load_space
    from timor_core.task.feedback import load_task

    db = ModulesDB.from_name("robco_like")
    space = load_space(space_options(dof_max), db)
    if ready is not None:
        ready()
    t0 = time.perf_counter()
    result = ExhaustiveSearch(space, "mass", FilterConfig(), workers=1, progress=False, order="cost").optimize(
        load_task(task, False), db
    )
    wall = time.perf_counter() - t0
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "dof_max": dof_max,
        "assemblies": len(space),
        "evaluations": result.evaluations,
        "stopped": result.stopped,
        "best": list(result.best_ids) if result.found else None,
        "best_cost": result.best_cost,
        "wall_s": wall,
        "user_cpu_s": usage.ru_utime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
    }


def memory(task: str, sizes: list[int]) -> list[dict]:
    out = []
    for d in sizes:
        cmd = [sys.executable, __file__, "--child", str(d), "--task", task]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
        if proc.returncode != 0:
            raise SystemExit(f"the search of the dof_max={d} space failed:\n{proc.stderr[-2000:]}")
        row = json.loads(proc.stdout.strip().splitlines()[-1])
        row["load"] = load()
        out.append(row)
        print(
            f"  {row['assemblies']:>12,} assemblies (dof_max {d}): peak RSS {row['peak_rss_mb']:.0f} MB, "
            f"{row['evaluations']} evaluated ({row['stopped']}), {row['wall_s']:.1f} s wall, "
            f"{row['user_cpu_s']:.1f} s user CPU, best {row['best_cost']:.2f} kg, load {row['load']:.1f}",
            file=sys.stderr,
        )
    return out


def _ceiling_child(task: str, dof_max: int, conn: Any) -> None:
    """One process of the ceiling run: once loaded it says ``ready`` and waits for ``go``; then sends its figures."""

    def ready() -> None:
        conn.send("ready")
        conn.recv()

    conn.send(child(task, dof_max, ready))


def ceiling(task: str, dof_max: int, rounds: int) -> dict:
    """What two cores give here: the Dask comparison's search in-process, in 1 and in 2 processes at once (each
    the whole search), alternating. ``2 * wall(1) / wall(2)`` is the most 2 workers could gain over 1 at this load
    (shared caches, other jobs, the hypervisor), with no Dask at all. The processes come from this process's fork
    server (forked with timor loaded where the Dask part ran first: ``forked_workers``; each was a fresh interpreter
    importing timor, ~1 CPU-s, before its clock started), else are spawned."""
    methods = multiprocessing.get_all_start_methods()
    ctx = multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")
    walls: dict[int, list[float]] = {1: [], 2: []}
    for k in range(rounds):
        for n in (1, 2) if k % 2 == 0 else (2, 1):
            pipes = [ctx.Pipe() for _ in range(n)]
            procs = [ctx.Process(target=_ceiling_child, args=(task, dof_max, theirs)) for _, theirs in pipes]
            for proc in procs:
                proc.start()
            for ours, _ in pipes:  # every child loaded (each used to wait 8 s: idle time on a quiet machine)
                said = ours.recv() if ours.poll(600) else None
                if said != "ready":
                    raise SystemExit(f"a child of the ceiling run did not get ready: {said!r}")
            for ours, _ in pipes:  # then all start their clocks together
                ours.send("go")
            rows = [ours.recv() for ours, _ in pipes]
            for proc in procs:
                proc.join()
            walls[n].append(max(r["wall_s"] for r in rows))
            print(f"  in-process x{n} at once: {walls[n][-1]:.2f} s, load {load():.1f}", file=sys.stderr)
    w1, w2 = statistics.median(walls[1]), statistics.median(walls[2])
    print(f"  ceiling of 2 processes over 1: {2 * w1 / w2:.2f}x (medians {w1:.2f} / {w2:.2f} s)", file=sys.stderr)
    return {"walls": walls, "ceiling": 2 * w1 / w2, "load": load()}


# -- 2. Dask, 1 vs 2 workers -------------------------------------------------------------------------------
def _worker_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _worker_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def dask_run(de, space, task, db) -> dict:
    """One cost-ordered search on the evaluator's cluster: wall time, worker CPU, evaluations, best."""
    from timor_core.search import ExhaustiveSearch
    from timor_core.search.dask_cluster.dask_worker import proofs_made

    before = de.client.run(_worker_cpu)
    proofs_before = de.client.run(proofs_made)
    mine = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    result = ExhaustiveSearch(space, "mass", progress=False, order="cost", evaluator=de).optimize(task, db)
    wall = time.perf_counter() - t0
    after = de.client.run(_worker_cpu)
    proofs = de.client.run(proofs_made)
    mine_after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = sorted(after[w] - before.get(w, 0.0) for w in after)
    return {
        "wall_s": wall,
        "worker_cpu_s": cpu,
        "proofs": sum(proofs.values()) - sum(proofs_before.values()),  # the family filter's, over the workers
        "client_cpu_s": (mine_after.ru_utime + mine_after.ru_stime) - (mine.ru_utime + mine.ru_stime),
        "evaluations": result.evaluations,
        "chunks": de.checkpoint_data()["chunks"],  # streamed route: tasks sent; sharded: 0 (one task per shard)
        "shards": result.settings.get("shards", 0),
        "best": list(result.best_ids) if result.found else None,
        "best_cost": result.best_cost,
        "best_seq": result.best_seq,
        "load": load(),
    }


def _warm(spec, options: str) -> bool:
    from timor_core.common import compiled
    from timor_core.search.dask_cluster.dask_worker import worker_evaluator
    from timor_core.search.exhaustive_search.shard_worker import shard_space
    from timor_core.search.filtering.proof_kernel import load_compiled

    if compiled.allowed():  # not where TIMOR_COMPILED=0 (the test suite's runs): the worker would never run them
        load_compiled()  # a long-lived worker's compiled proof bounds (~1.3 s to load; a search alone loads them late)
    worker_evaluator(spec)
    shard_space(spec, options)  # the sharded route's space, compiled once per worker (as the client's is here)
    return True


def dask_compare(task_path: str, dof_max: int, rounds: int, chunk_time: float, shards: bool = True) -> dict:
    """``rounds`` searches per worker count, alternating; one cluster alive at a time (a local cluster's scheduler
    and nannies live in this process: an idle second cluster would add its heartbeats to the client CPU)."""
    from timor_core import ModulesDB
    from timor_core.search import DaskEvaluator, DBRef, FilterConfig, TaskRef, load_space
    from timor_core.search.dask_cluster.dask_connect import forked_workers
    from timor_core.search.evaluation.parallel import WorkerSpec
    from timor_core.search.exhaustive_search.shards import WORKER_PRELOAD
    from timor_core.task.feedback import load_task

    db = ModulesDB.from_name("robco_like")
    space = load_space(space_options(dof_max), db)
    task = load_task(task_path, False)
    # the search's own filter settings (the exhaustive search turns the family proofs on): its evaluator is built
    spec = WorkerSpec(DBRef.of(db), TaskRef.of(task), "mass", FilterConfig(family_proof=True))
    runs: dict[int, list[dict]] = {1: [], 2: []}
    worker_rss: dict[int, float] = {1: 0.0, 2: 0.0}
    for k in range(rounds):
        for n in (1, 2) if k % 2 == 0 else (2, 1):
            with DaskEvaluator(n_workers=n, target_chunk_time=chunk_time, shards=shards) as de:
                with forked_workers(WORKER_PRELOAD):  # workers forked with timor loaded (see the module's 2.)
                    de.start()
                de.client.run(_warm, spec, space.options.canonical_json())  # loaded in every worker before the clock
                run = dask_run(de, space, task, db)
                worker_rss[n] = max(worker_rss[n], *de.client.run(_worker_rss_mb).values())
            runs[n].append(run)
            tasks = f"{run['shards']} shard(s)" if run["shards"] else f"{run['chunks']} chunks"
            print(
                f"  dask {n} worker(s): {run['wall_s']:.2f} s, {run['evaluations']} evaluated, worker CPU "
                f"{'/'.join(f'{c:.2f}' for c in run['worker_cpu_s'])} s, client + scheduler CPU "
                f"{run['client_cpu_s']:.2f} s ({tasks}), {run['proofs']} proofs,"
                f" best {run['best_cost']:.2f} kg, load {run['load']:.1f}",
                file=sys.stderr,
            )
    return {**summarize(runs, worker_rss, chunk_time), "route": "shards" if shards else "stream"}


def summarize(runs: dict[int, list[dict]], worker_rss: dict[int, float], chunk_time: float) -> dict:
    wall = {n: statistics.median(r["wall_s"] for r in rs) for n, rs in runs.items()}
    cpu1 = statistics.median(sum(r["worker_cpu_s"]) for r in runs[1])
    busiest2 = statistics.median(max(r["worker_cpu_s"]) for r in runs[2])
    total2 = statistics.median(sum(r["worker_cpu_s"]) for r in runs[2])
    evals = {n: statistics.median(r["evaluations"] for r in rs) for n, rs in runs.items()}
    bests = {tuple(r["best"] or ()) for rs in runs.values() for r in rs}
    return {
        "chunk_time_s": chunk_time,
        "runs": runs,
        "wall_median_s": wall,
        "speedup_wall": wall[1] / wall[2],
        "speedup_per_round": [a["wall_s"] / b["wall_s"] for a, b in zip(runs[1], runs[2])],
        "client_cpu_median_s": {n: statistics.median(r["client_cpu_s"] for r in rs) for n, rs in runs.items()},
        "speedup_cpu": cpu1 / busiest2,
        "work_efficiency": cpu1 / total2,
        "cpu_per_evaluation_ms": {
            1: 1e3 * cpu1 / evals[1],
            2: 1e3 * total2 / evals[2],
        },
        "evaluations_median": evals,
        "same_best_everywhere": len(bests) == 1,
        "worker_peak_rss_mb": worker_rss,
        "load_range": [
            min(r["load"] for rs in runs.values() for r in rs),
            max(r["load"] for rs in runs.values() for r in rs),
        ],
    }


# -- 4. deciding a big space, 1 and 2 workers, locally and on Dask ----------------------------------------------
def decide_child(task_path: str, options: dict, workers: int, dask: bool) -> dict:
    """Decide ``task_path`` on the space ``options`` in this (fresh) process; its figures as a dict."""
    from timor_core import ModulesDB
    from timor_core.search import DaskEvaluator, DBRef, ExhaustiveSearch, FilterConfig, TaskRef, load_space
    from timor_core.search.dask_cluster.dask_connect import forked_workers
    from timor_core.search.evaluation.parallel import WorkerSpec
    from timor_core.search.exhaustive_search.shards import WORKER_PRELOAD
    from timor_core.task.feedback import load_task

    db = ModulesDB.from_name("robco_like")
    space, task = load_space(options, db), load_task(task_path, False)
    search = ExhaustiveSearch(space, "mass", FilterConfig(), workers=workers, progress=False, order="cost")
    de, worker_cpu, worker_rss = None, 0.0, 0.0
    if dask:
        de = DaskEvaluator(n_workers=workers).__enter__()
        with forked_workers(WORKER_PRELOAD):
            de.start()
        spec = WorkerSpec(DBRef.of(db), TaskRef.of(task), "mass", FilterConfig(family_proof=True))
        de.client.run(_warm, spec, space.options.canonical_json())
        search = ExhaustiveSearch(space, "mass", FilterConfig(), progress=False, order="cost", evaluator=de)
        worker_cpu = -sum(de.client.run(_worker_cpu).values())
    cpu0 = _worker_cpu()
    t0 = time.perf_counter()
    result = search.optimize(task, db)
    wall = time.perf_counter() - t0
    cpu = _worker_cpu() - cpu0
    if de is not None:
        worker_cpu += sum(de.client.run(_worker_cpu).values())
        worker_rss = max(de.client.run(_worker_rss_mb).values())
        de.__exit__(None, None, None)
    else:
        children = resource.getrusage(resource.RUSAGE_CHILDREN)
        worker_cpu, worker_rss = children.ru_utime + children.ru_stime, children.ru_maxrss / 1024
    return {
        "task": Path(task_path).stem,
        "route": "dask" if dask else "local",
        "workers": workers,
        "assemblies": len(space),
        "evaluations": result.evaluations,
        "stopped": result.stopped,
        "best": list(result.best_ids) if result.found else None,
        "best_cost": result.best_cost,
        "wall_s": wall,
        "cpu_s": cpu,  # this process (with 1 worker: the whole search; else the client)
        "worker_cpu_s": worker_cpu,  # the worker processes together (local shards or Dask workers)
        "peak_rss_mb": _worker_rss_mb(),
        "worker_peak_rss_mb": worker_rss,
    }


def decide(tasks: list[str], options: dict, workers: list[int], dask: bool) -> list[dict]:
    """Each task on each route, each run in a fresh process; rows of :func:`decide_child` with the load."""
    out = []
    for task in tasks:
        for n, on_dask in [(n, False) for n in workers] + ([(2, True)] if dask else []):
            cmd = [sys.executable, __file__, "--decide-child", task, json.dumps(options), str(n), str(int(on_dask))]
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=3600)
            if proc.returncode != 0:
                raise SystemExit(f"deciding {task} failed:\n{proc.stderr[-2000:]}")
            row = json.loads(proc.stdout.strip().splitlines()[-1]) | {"load": load()}
            out.append(row)
            best = "none" if row["best_cost"] is None else f"{row['best_cost']:.2f} kg"
            print(
                f"  {row['task']}, {row['route']} {n} worker(s): {row['wall_s']:.1f} s wall, {row['stopped']},"
                f" {row['evaluations']:,} evaluated, best {best}; CPU {row['cpu_s']:.1f} s + workers"
                f" {row['worker_cpu_s']:.1f} s; peak RSS {row['peak_rss_mb']:.0f} MB, worker"
                f" {row['worker_peak_rss_mb']:.0f} MB; load {row['load']:.1f}",
                file=sys.stderr,
            )
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--task", default=str(TASK), help="task file (default: the user study)")
    p.add_argument("--dask-task", default=str(DASK_TASK), help="task of the Dask comparison (default: obstacle_middle)")
    p.add_argument("--sizes", type=int, nargs="*", default=[6, 7, 8], help="dof_max of the spaces (default 6 7 8)")
    p.add_argument("--rounds", type=int, default=5, help="Dask runs per worker count (default 5)")
    p.add_argument("--dask-size", type=int, default=8, help="dof_max of the Dask search's space (default 8)")
    p.add_argument(
        "--chunk-time", type=float, default=None, help="Dask target seconds per chunk (default: the evaluator's)"
    )
    p.add_argument("--chunk-times", type=float, nargs="*", default=[], help="sweep these target chunk times first")
    p.add_argument(
        "--route",
        choices=["shards", "stream", "both"],
        default="shards",
        help="Dask: one shard of the cost order per worker (default), streamed from the client in chunks, or both",
    )
    p.add_argument("--no-memory", action="store_true", help="skip the memory part")
    p.add_argument("--no-dask", action="store_true", help="skip the Dask part")
    p.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    p.add_argument("--decide", nargs="*", default=[], help="decide these tasks on the --decide-space (part 4)")
    p.add_argument("--decide-space", type=json.loads, default=DECIDE_SPACE, help="space options as JSON")
    p.add_argument("--decide-workers", type=int, nargs="*", default=[1, 2], help="local worker counts (default 1 2)")
    p.add_argument("--decide-dask", action="store_true", help="also decide on a local Dask cluster of 2 workers")
    p.add_argument("--decide-child", nargs=4, help=argparse.SUPPRESS)
    p.add_argument("--child", type=int, help=argparse.SUPPRESS)
    p.add_argument(
        "--ceiling", action="store_true", help="also time 1 and 2 concurrent in-process searches (the machine's limit)"
    )
    args = p.parse_args(argv)
    if args.child is not None:
        print(json.dumps(child(args.task, args.child)))
        return 0
    if args.decide_child is not None:
        task, options, n, on_dask = args.decide_child
        print(json.dumps(decide_child(task, json.loads(options), int(n), bool(int(on_dask)))))
        return 0
    if args.decide:
        report = {"uptime_start": load(), "space": args.decide_space}
        report["decide"] = decide(args.decide, args.decide_space, args.decide_workers, args.decide_dask)
        report["uptime_end"] = load()
        if args.json:
            print(json.dumps(report, indent=1, default=str))
        return 0
    if not Path(args.task).is_file():
        print(f"task file not found: {args.task} (needs ../shared/data)", file=sys.stderr)
        return 2
    report: dict = {"uptime_start": load()}
    print(f"big space: {Path(args.task).name}, load {report['uptime_start']:.1f}", file=sys.stderr)
    if not args.no_memory:
        report["memory"] = memory(args.task, args.sizes)
        peak = max(r["peak_rss_mb"] for r in report["memory"])
        print(f"  peak RSS at most {peak:.0f} MB (target < 2048 MB): {'met' if peak < 2048 else 'NOT met'}",
              file=sys.stderr)  # fmt: skip
    if not args.no_dask:
        from timor_core.search import DaskEvaluator

        report["sweep"] = []
        for ct in args.chunk_times:
            print(f"chunk time {ct} s:", file=sys.stderr)
            report["sweep"].append(dask_compare(args.dask_task, args.dask_size, 1, ct, shards=False))
        chunk_time = args.chunk_time if args.chunk_time is not None else DaskEvaluator().target_chunk_time
        size = SIZES.get(args.dask_size, 0)
        for route in ("shards", "stream") if args.route == "both" else (args.route,):
            print(f"Dask ({route}), {Path(args.dask_task).name}, {size:,} assemblies:", file=sys.stderr)
            s = report["dask" if route == "shards" or args.route == "stream" else "dask_stream"] = dask_compare(
                args.dask_task, args.dask_size, args.rounds, chunk_time, route == "shards"
            )
            _print_summary(s)
    if args.ceiling:
        report["ceiling"] = ceiling(args.dask_task, args.dask_size, args.rounds)
    report["uptime_end"] = load()
    if args.json:
        print(json.dumps(report, indent=1, default=str))
    return 0


def _print_summary(s: dict) -> None:
    print(
        f"  median wall 1 worker {s['wall_median_s'][1]:.2f} s, 2 workers {s['wall_median_s'][2]:.2f} s: "
        f"speed-up {s['speedup_wall']:.2f}x (per round {', '.join(f'{x:.2f}' for x in s['speedup_per_round'])};"
        f" load {s['load_range'][0]:.1f}-{s['load_range'][1]:.1f}); client + scheduler CPU "
        f"{s['client_cpu_median_s'][1]:.2f} / {s['client_cpu_median_s'][2]:.2f} s; from worker"
        f" CPU {s['speedup_cpu']:.2f}x, work efficiency {s['work_efficiency']:.2f}; CPU per evaluation "
        f"{s['cpu_per_evaluation_ms'][1]:.2f} / {s['cpu_per_evaluation_ms'][2]:.2f} ms; same best: "
        f"{s['same_best_everywhere']}; target >= 1.8x: {'met' if s['speedup_wall'] >= 1.8 else 'NOT met'} (wall)",
        file=sys.stderr,
    )


if __name__ == "__main__":
    sys.exit(main())
