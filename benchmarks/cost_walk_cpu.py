#!/usr/bin/env python3
"""CPU of the cost order's walk alone, two library trees in alternation (issue 38 item 1: the walk's own cost).

    python benchmarks/cost_walk_cpu.py --before /work/main/src/timor_core --take 40103 --rounds 3
    python benchmarks/cost_walk_cpu.py --before OLD/src/timor_core --take 20000 --shard 0/2

Takes the first ``--take`` assemblies of experiment 2's space (robco_like, 177,155 assemblies; ``five_joints``'
optimum is the 40,103rd in cost order) from ``by_cost_indexed(space, "mass")`` and drops them, timing CPU seconds
(``time.process_time``) of 5 takes in one fresh process per tree, round and collector mode: ``on`` (Python's
defaults) and ``eased`` (frozen, the youngest generation collected every 20,000 allocations: what both search routes
do during a walk, ``batch_stream.collector_eased``). Prints every process's median, then per tree and mode the
median over the rounds, and ``/proc/loadavg``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

CHILD = r"""
import gc, itertools, statistics, sys, time
from timor_core import ModulesDB
from timor_core.search import SerialSpace, paper_exp2_options
from timor_core.search.spaces.cost_order import by_cost_indexed
take, shard, mode = int(sys.argv[1]), sys.argv[2], sys.argv[3]
shard = tuple(map(int, shard.split("/"))) if shard else None
space = SerialSpace(ModulesDB.from_name("robco_like"), paper_exp2_options())
if mode == "eased":
    gc.freeze()
    gc.set_threshold(20_000, 10, 10)
times = []
for _ in range(5):
    t = time.process_time()
    sum(1 for _ in itertools.islice(by_cost_indexed(space, "mass", shard=shard), take))
    times.append(time.process_time() - t)
print(statistics.median(times))
"""


def one(library: str, take: int, shard: str, mode: str) -> float:
    """The median CPU seconds of 5 takes in a fresh process on ``library``."""
    env = dict(os.environ, PYTHONPATH=library)
    cmd = ["nice", "-n", "5", sys.executable, "-c", CHILD, str(take), shard, mode]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--before", required=True, help="the other tree's src/timor_core")
    p.add_argument("--take", type=int, default=40_103)
    p.add_argument("--shard", default="", help="r/k: shard r of k (default: the whole stream)")
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    trees = {"after": str(Path(__file__).resolve().parents[1] / "src" / "timor_core"), "before": a.before}
    runs: dict[tuple[str, str], list[float]] = {}
    for k in range(a.rounds):
        for mode in ("on", "eased"):
            for name in list(trees) if k % 2 == 0 else list(trees)[::-1]:
                secs = one(trees[name], a.take, a.shard, mode)
                runs.setdefault((name, mode), []).append(secs)
                print(f"round {k} {name:6} gc {mode:5} {secs * 1e3:6.1f} ms", flush=True)
    for (name, mode), v in sorted(runs.items()):
        each = ", ".join(f"{x * 1e3:.1f}" for x in v)
        print(f"{name:6} gc {mode:5} median {statistics.median(v) * 1e3:6.1f} ms ({each}); "
              f"{statistics.median(v) / a.take * 1e6:.2f} us an assembly")  # fmt: skip
    print("load", Path("/proc/loadavg").read_text().strip())


if __name__ == "__main__":
    main()
