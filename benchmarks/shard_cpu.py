#!/usr/bin/env python3
# ruff: noqa: E501, E731
"""Search CPU per task, before/after, 1 and 2 workers (shard_timeline.py with TL_CPU=1), alternated, medians.

    python benchmarks/shard_cpu.py user_study,five_joints,obstacles_4 3 OLD/src/timor_core UNSEEN_DIR

UNSEEN_DIR: what ``benchmarks/unseen_tasks.py --seed 38 -o DIR`` wrote. Prints per task the one-process search's
CPU, the busiest shard's (the critical path where the cores are free), all of the 2-worker search's, the proofs and
the evaluations.
"""

import os
import re
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
LIBS = {"before": sys.argv[3], "after": str(HERE.parent / "src" / "timor_core")}
UNSEEN = Path(sys.argv[4])
USER_STUDY = HERE.parent.parent / "shared" / "data" / "cobra" / "tasks" / "user_study.json"
tasks, rounds = sys.argv[1].split(","), int(sys.argv[2])
out = {}
print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip(), flush=True)
for r in range(rounds):
    for t in tasks:
        path = str(USER_STUDY if t == "user_study" else UNSEEN / f"{t}.json")
        for w in (1, 2):
            for lib, lp in LIBS.items():
                env = dict(os.environ, PYTHONPATH=lp, TIMOR_COMPILED="1", TL_CPU="1")
                p = subprocess.run(
                    [sys.executable, str(HERE / "shard_timeline.py"), path, str(w)],
                    capture_output=True,
                    text=True,
                    env=env,
                    timeout=600,
                )
                s = p.stdout
                head = re.search(r"parent cpu ([\d.]+) evals (\d+)", s)
                parent, evals = float(head.group(1)), int(head.group(2))
                if w == 1:
                    shards = [parent]
                    proofs = int(re.search(r"proofs (\d+) certs", s).group(1))
                else:
                    shards = [float(x) for x in re.findall(r"end [-\d.]+s \(cpu ([\d.]+)\)\s*$", s, re.M)]
                    proofs = sum(int(x) for x in re.findall(r" proofs (\d+) overrun", s))
                d = {
                    "max": max(shards),
                    "sum": sum(shards) + (parent if w == 2 else 0),
                    "evals": evals,
                    "proofs": proofs,
                    "parent": parent,
                }
                out.setdefault((t, lib, w), []).append(d)
                print(f"r{r} {t} {lib} w={w} {d} load {os.getloadavg()[0]:.1f}", flush=True)
print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
med = lambda xs: statistics.median(xs)
for t in tasks:
    for lib in LIBS:
        one = out[(t, lib, 1)]
        two = out[(t, lib, 2)]
        print(
            f"| {t} | {lib} | {med([d['max'] for d in one]):.2f} | {med([d['max'] for d in two]):.2f} "
            f"({med([d['max'] for d in two]) / med([d['max'] for d in one]):.2f}x) | {med([d['sum'] for d in two]):.2f} "
            f"| {med([d['parent'] for d in two]):.3f} | {sorted(d['proofs'] for d in one)} / {sorted(d['proofs'] for d in two)} "
            f"| {sorted(d['evals'] for d in two)} |"
        )
