#!/usr/bin/env python3
"""CPU of cost-ordered searches, two library trees in alternation (issue 38 item 1: the look-up's batches).

    python benchmarks/cost_order_cpu.py --before /work/main/src/timor_core --workers 1 --rounds 3 \\
        /tmp/unseen38/five_joints.json /tmp/unseen38/obstacles_4.json ../shared/data/cobra/tasks/user_study.json

Each search runs ``ExhaustiveSearch(order="cost")`` on experiment 2's space in a fresh process (``nice -n 5``,
``TIMOR_COMPILED=1``), with this checkout's ``src/timor_core`` ("after") and ``--before``'s, one right after the
other, the order swapped every round. Timed: the search alone (not the imports, the module set or the space), as
the process's CPU seconds plus those of its waited-for children (the local shards with 2+ workers), and its wall
seconds; with one worker also the batched certificate look-up's CPU (``BatchLookup.refused``, timed in the process)
per assembly it refused. Prints every run, then per task and tree the medians and the evaluation counts seen.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
from timor_core.search.filtering import batch_decide
look = [0.0, 0]  # the batched look-up's CPU seconds and the assemblies it refused (1 worker: in this process)
refused = batch_decide.BatchLookup.refused
def timed(self, items, bound):
    t = time.process_time(); r = refused(self, items, bound); look[0] += time.process_time() - t; look[1] += r[0]
    return r
batch_decide.BatchLookup.refused = timed
from timor_core import ModulesDB
from timor_core.search import paper_exp2_space
from timor_core.search.exhaustive_search.exhaustive import ExhaustiveSearch
from timor_core.task import Task
task = Task.from_json_file(sys.argv[1]); db = ModulesDB.from_name("robco_like"); space = paper_exp2_space(db)
search = ExhaustiveSearch(space, cost="mass", workers=int(sys.argv[2]), progress=False, order="cost")
ch0 = resource.getrusage(resource.RUSAGE_CHILDREN); c0, w0 = time.process_time(), time.perf_counter()
r = search.optimize(task, db)
c1, w1 = time.process_time(), time.perf_counter(); ch1 = resource.getrusage(resource.RUSAGE_CHILDREN)
kids = ch1.ru_utime + ch1.ru_stime - ch0.ru_utime - ch0.ru_stime
print(json.dumps({"cpu": c1 - c0 + kids, "wall": w1 - w0, "evaluations": r.evaluations, "cost": r.best_cost,
                  "lookup": look[0], "looked": look[1]}))
"""


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tasks", nargs="+", help="task files")
    p.add_argument("--before", required=True, help="the other src/timor_core")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    out: dict = {}
    for k, task, name, r in alternated(args.tasks, args.before, args.rounds, CHILD, str(args.workers)):
        out.setdefault((task, name), []).append(r)
        print(f"{k} {task} {name} cpu {r['cpu']:.2f} s wall {r['wall']:.2f} s", end=" ")
        load = os.getloadavg()[0]
        print(f"{r['evaluations']} evaluated, look-up {_per(r):.2f} us/assembly, load {load:.1f}", flush=True)
    for (task, name), runs in sorted(out.items()):
        cpu, wall = (statistics.median(r[key] for r in runs) for key in ("cpu", "wall"))
        counts = sorted({r["evaluations"] for r in runs})
        look = statistics.median(_per(r) for r in runs)
        print(f"{task:14} {name:6} median CPU {cpu:.2f} s, wall {wall:.2f} s, look-up {look:.2f} us/assembly", end="")
        print(f" ({statistics.median(r['lookup'] for r in runs):.3f} s), evaluations {counts}")
    return 0


def alternated(tasks: list[str], before: str, rounds: int, child: str, *args: str) -> Iterator[tuple]:
    """Per round, task and tree (this checkout's ``src/timor_core`` "after" and ``before``, one right after the
    other, the order swapped every round): the round, the task's name, the tree's and the JSON the ``child`` script
    printed last (run as ``python -c child TASK *args`` in a fresh process, ``nice -n 5``, ``TIMOR_COMPILED=1``)."""
    trees = [("before", before), ("after", str(Path(__file__).resolve().parent.parent / "src" / "timor_core"))]
    for k in range(rounds):
        for task in tasks:
            for name, path in trees if k % 2 == 0 else trees[::-1]:
                env = dict(os.environ, PYTHONPATH=path, TIMOR_COMPILED="1")
                cmd = ["nice", "-n", "5", sys.executable, "-c", child, task, *args]
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900, check=True)
                yield k, Path(task).stem, name, json.loads(proc.stdout.strip().splitlines()[-1])


def _per(run: dict) -> float:
    """The look-up's microseconds per assembly it refused (0 where it refused none: 2+ workers, in the shards)."""
    return 1e6 * run["lookup"] / run["looked"] if run["looked"] else 0.0


if __name__ == "__main__":
    raise SystemExit(main())
