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

Valgrind does not run AVX-512 (SIGILL on the first such instruction), and the kernels built ahead of time for this
machine's CPU use it where the CPU has it; so each tree's kernels for any x86-64 CPU (``proof_aot --generic``) are
copied from the tree where it has them, else built (~1 minute a tree), into a temporary folder this script owns, and
the shard loads them from there and nothing else (:data:`PRELUDE`). Without valgrind, or where a tree's generic
kernels cannot be had, it refuses with one line saying what to do, before running anything.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PRELUDE = r"""
from pathlib import Path
from timor_core.kinematics import ik_kernel
from timor_core.search.filtering import cover_kernel, cut_kernel, proof_kernel
SETS = (proof_kernel.AHEAD, cover_kernel.AHEAD, cut_kernel.AHEAD, ik_kernel.AHEAD)
def generic_only(folder, sets):
    proof_kernel.AHEAD_FOLDER = ik_kernel.AHEAD_FOLDER = Path(folder)  # (cover's and cut's folder is the proofs')
    wrong = []
    for kernels in sets:
        kernels.forget()
        mine, generic = kernels.path(), kernels.path(generic=True)
        if mine != generic and mine.is_file():
            wrong.append(f"{mine.name} is built for this CPU")
        elif not generic.is_file():
            wrong.append(f"no build of the {kernels.what} for any CPU ({generic.name})")
        elif kernels.get() is None:
            wrong.append(f"{generic.name} does not load")
    if wrong:
        raise SystemExit("shard_instructions: " + "; ".join(wrong))
"""
"""Run first in the shard's process: its kernel sets (:data:`SETS`) load from ``folder``'s builds for any CPU and from
nothing else (``generic_only``): a build for this CPU there, a missing one or one that does not load stops it."""

GENERIC = r"""
import shutil, sys
from pathlib import Path
from timor_core.kinematics import ik_aot, ik_kernel
from timor_core.search.filtering import cover_kernel, cut_kernel, proof_aot, proof_kernel
folder = Path(sys.argv[1])
for kernels in (proof_kernel.AHEAD, cover_kernel.AHEAD, cut_kernel.AHEAD, ik_kernel.AHEAD):
    own = kernels.path(generic=True)  # the tree's own build for any CPU, where made: copied, not built again
    if own.is_file():
        shutil.copy2(own, folder / own.name)
proof_aot.build(folder, generic=True)
ik_aot.build(folder, generic=True)
"""
"""Run with a tree's ``PYTHONPATH``: its four kernel sets for any CPU in ``sys.argv[1]``."""

HOW = "PYTHONPATH={tree} python -m timor_core.search.filtering.proof_aot --generic --with-ik"

CHILD = (
    PRELUDE
    + r"""
import itertools, os, sys
generic_only(os.environ["SHARD_KERNELS"], SETS)
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
)
PARTS = {"takewhile_next": "shard", "starmap_next": "look-up", "dropwhile_next": "evaluations"}


def refusal() -> str | None:
    """Why this machine cannot count (no valgrind or callgrind_annotate on PATH), or None."""
    missing = [tool for tool in ("valgrind", "callgrind_annotate") if shutil.which(tool) is None]
    return f"needs {' and '.join(missing)} on PATH (Debian/Ubuntu: apt-get install valgrind)" if missing else None


def generic_kernels(library: str, folder: Path) -> str | None:
    """Put ``library``'s kernels for any CPU into ``folder`` (:data:`GENERIC`); None, or why not and what to do."""
    folder.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=library)
    run = subprocess.run([sys.executable, "-c", GENERIC, str(folder)], env=env, capture_output=True, text=True)
    if run.returncode == 0:
        return None
    why = (run.stderr.strip().splitlines() or ["no message"])[-1]
    return (f"the kernels of {library} for any CPU (valgrind runs no AVX-512) could not be built into {folder}: {why}; "
            f"build them in the tree ({HOW.format(tree=library)}) and run again")  # fmt: skip


def count(library: str, task: str, folder: Path, kernels: Path) -> dict[str, float]:
    """Millions of instructions of the shard's parts (:data:`PARTS`) for ``task`` with ``library``, its kernels the
    builds for any CPU in ``kernels``."""
    env = dict(os.environ, PYTHONPATH=library, TIMOR_COMPILED="1", PYTHONHASHSEED="0", SHARD_KERNELS=str(kernels))
    env.pop("TIMOR_AHEAD", None)  # (``0`` would ignore every build)
    out = folder / "callgrind.%p"
    cmd = ["valgrind", "--tool=callgrind", "--trace-children=yes", f"--callgrind-out-file={out}"]
    run = subprocess.run([*cmd, sys.executable, "-c", CHILD, task], env=env, capture_output=True, text=True)
    if run.returncode:
        tail = "\n".join(run.stderr.strip().splitlines()[-5:])
        raise SystemExit(f"shard_instructions: the shard of {task} with {library} failed under valgrind:\n{tail}")
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


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tasks", nargs="+", help="task files")
    p.add_argument("--before", required=True, help="the other src/timor_core")
    args = p.parse_args(argv)
    trees = {"before": args.before, "after": str(Path(__file__).resolve().parent.parent / "src" / "timor_core")}
    why = refusal()
    if why:
        print(f"shard_instructions: {why}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="shard-instructions-") as owned:
        kernels = {name: Path(owned) / "kernels" / name for name in trees}
        for name, library in trees.items():
            print(f"kernels for any CPU of {name} into {kernels[name]} ...", flush=True)
            why = generic_kernels(library, kernels[name])
            if why:
                print(f"shard_instructions: {why}", file=sys.stderr)
                return 2
        for task in args.tasks:
            for name, library in trees.items():
                with tempfile.TemporaryDirectory(prefix="callgrind-", dir=owned) as folder:
                    found = count(library, task, Path(folder), kernels[name])
                parts = "  ".join(f"{k} {v:,.0f} M" for k, v in found.items())
                print(f"{Path(task).stem:14s} {name:6s} {parts}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
