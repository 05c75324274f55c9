#!/usr/bin/env python3
"""Instructions of one cost-order shard's parts under callgrind, two library trees (issue 38 item 1).

    python benchmarks/shard_instructions.py --before OLD/src/timor_core /tmp/unseen38/five_joints.json ...

Why: on this shared 2-core machine the CPU seconds of the look-up (~0.15 s) swing by 20-30 % with the load; the
instructions valgrind counts do not (the same to 0.1 % run to run, ``PYTHONHASHSEED=0``). Each task's shard
(``run_shard(shards=1)`` in one process with a quiet hub, as ``tests/test_local_shards.py`` runs one) runs under
``valgrind --tool=callgrind`` for both trees; the parts are told apart by calling them through C functions that
nothing else in a search calls: the whole shard through ``itertools.takewhile``, the batched look-up
(``BatchLookup.refused``) through ``itertools.starmap``, each full evaluation (``_Walk.step``: the filter chain, its
proofs and IK) through ``itertools.dropwhile``; ``callgrind_annotate --inclusive=yes`` gives each one's instructions.
The per-assembly path is the shard less the full evaluations: the look-up, the walk and the shard's loop and counts.
Needs valgrind; takes ~1-2 minutes a run. Prints millions of instructions per tree and task.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r"""
import itertools, sys
from timor_core import ModulesDB
from timor_core.search import FilterConfig, paper_exp2_space
from timor_core.search.dask_cluster.dask_worker import worker_evaluator
from timor_core.search.evaluation.parallel import DBRef, TaskRef, WorkerSpec
from timor_core.search.exhaustive_search import shard_worker as SW
from timor_core.search.filtering import batch_decide as BD
from timor_core.task import Task
class Hub:
    def best(self): return None
    def found(self, state): pass
    def progress(self, state): pass
    def link(self, proofs): return None
refused, step = BD.BatchLookup.refused, SW._Walk.step
BD.BatchLookup.refused = lambda self, items, bound: next(itertools.starmap(refused, [(self, items, bound)]))
def stepped(self, *a):
    out = []
    list(itertools.dropwhile(lambda _: out.append(step(self, *a)), [0]))
    return out[0]
SW._Walk.step = stepped
task, db = Task.from_json_file(sys.argv[1]), ModulesDB.from_name("robco_like")
space = paper_exp2_space(db)
spec = WorkerSpec(DBRef.of(db), TaskRef.of(task), "mass", FilterConfig(family_proof=True))
job = SW.ShardJob(spec, space.options.canonical_json(), 0, 1, "token", "topic", fingerprint=space.fingerprint)
worker_evaluator(spec)
out = []
list(itertools.takewhile(lambda _: out.append(SW.run_shard(job, Hub())), [0]))
print("taken", out[0]["taken"])
"""
PARTS = {"takewhile_next": "shard", "starmap_next": "look-up", "dropwhile_next": "evaluations"}


def count(library: str, task: str, folder: Path) -> dict[str, float]:
    """Millions of instructions of the shard's parts (:data:`PARTS`) for ``task`` with ``library``."""
    env = dict(os.environ, PYTHONPATH=library, TIMOR_COMPILED="1", PYTHONHASHSEED="0")
    out = folder / "callgrind.%p"
    cmd = ["valgrind", "--tool=callgrind", "--trace-children=yes", f"--callgrind-out-file={out}"]
    subprocess.run([*cmd, sys.executable, "-c", CHILD, task], env=env, check=True, capture_output=True)
    biggest = max(folder.glob("callgrind.*"), key=lambda p: p.stat().st_size)
    text = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(biggest)], capture_output=True, text=True)
    found: dict[str, float] = {}
    for line in text.stdout.splitlines():
        m = re.match(r"\s*([\d,]+)\s.*?(\w+_next)\b", line)
        if m and m.group(2) in PARTS and PARTS[m.group(2)] not in found:
            found[PARTS[m.group(2)]] = int(m.group(1).replace(",", "")) / 1e6
    for f in folder.glob("callgrind.*"):
        f.unlink()
    found["per-assembly path"] = found.get("shard", 0.0) - found.get("evaluations", 0.0)
    return found


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tasks", nargs="+", help="task files")
    p.add_argument("--before", required=True, help="the other src/timor_core")
    args = p.parse_args()
    trees = {"before": args.before, "after": str(Path(__file__).resolve().parent.parent / "src" / "timor_core")}
    for task in args.tasks:
        for name, library in trees.items():
            with tempfile.TemporaryDirectory(prefix="shard-instructions-") as folder:
                found = count(library, task, Path(folder))
            parts = "  ".join(f"{k} {v:,.0f} M" for k, v in found.items())
            print(f"{Path(task).stem:14s} {name:6s} {parts}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
