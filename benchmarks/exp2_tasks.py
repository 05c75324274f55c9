#!/usr/bin/env python3
"""Experiment 2's searches on tasks nobody tuned them to (issue 25, item 1): both orders, verified, per task.

    python benchmarks/exp2_tasks.py                       # every task, both orders, 2 workers
    python benchmarks/exp2_tasks.py --tasks more_goals --orders cost --workers 1
    python benchmarks/exp2_tasks.py --ga-seeds 3          # also the GA at its defaults, seeds 0..2

The tasks are ``src/timor_core/tests/data/exp2_tasks/*.json`` (robco_like, experiment 2's 177,155 assemblies):
goals moved, more goals, an obstacle in the middle, three goals in different directions, a goal 5 m away. Each
search runs as ``timor paper exp2 --task T --algorithm constrained --order O`` in a fresh process; the table gives
its seconds, evaluations, best robot, mass and the independent check, and whether both orders agree. With
``--ga-seeds N``: ``--algorithm ga`` (500 generations, population 20) for seeds 0 .. N-1, and how many trials end at
or below the constrained search's optimum. The machine's load is printed with each figure: seconds on a shared
machine are only comparable within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TASKS = REPO / "src" / "timor_core" / "tests" / "data" / "exp2_tasks"


def search(task: Path, algorithm: str, order: str, workers: int, seed: int = 0) -> dict:
    """One ``timor paper exp2`` run in a fresh process: its JSON run record (plus ``load``)."""
    cmd = [sys.executable, "-m", "timor_core.cli", "paper", "exp2", "--task", str(task), "--algorithm", algorithm]
    cmd += ["--order", order, "--workers", str(workers), "--seed", str(seed), "--no-progress", "--json"]
    env = dict(os.environ, PYTHONPATH=str(REPO / "src" / "timor_core"))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": proc.stderr.strip()[-500:]}
    run = json.loads(lines[-1])["runs"][0]
    run["load"] = os.getloadavg()[0]
    return run


def solve(task: Path, ids: list[str]) -> str:
    """``timor solve`` on the best robot, in a fresh process: which goals it reaches."""
    cmd = [sys.executable, "-m", "timor_core.cli", "solve", str(task), "--db", "robco_like", "--json", "--modules"]
    env = dict(os.environ, PYTHONPATH=str(REPO / "src" / "timor_core"))
    proc = subprocess.run([*cmd, *ids], capture_output=True, text=True, env=env, timeout=600)
    try:
        goals = json.loads(proc.stdout)["goals"]
    except (ValueError, KeyError):
        return f"exit code {proc.returncode}: {proc.stderr.strip()[-300:]}"
    reached = [g["id"] for g in goals if g["reached"]]
    return f"reaches {len(reached)} of {len(goals)} goals ({', '.join(reached)})"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="*", help="task names (default: all)")
    p.add_argument("--orders", nargs="*", default=["cost", "space"])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--ga-seeds", type=int, default=0, help="GA trials per task at the defaults (0: none)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    files = sorted(TASKS.glob("*.json"))
    if args.tasks:
        files = [f for f in files if f.stem in args.tasks]
    report: dict = {}
    for f in files:
        runs = {order: search(f, "constrained", order, args.workers) for order in args.orders}
        for order, r in runs.items():
            if "error" in r:
                print(f"{f.stem:<16} {order:<6} ERROR {r['error']}")
                continue
            ids = " ".join(r["best_ids"] or ["-"])
            mass = f"{r['best_mass']:.2f} kg" if r["best_mass"] is not None else "no robot"
            print(
                f"{f.stem:<16} {order:<6} {r['seconds']:7.1f} s {r['evaluations']:>7} evaluated  {ids}  {mass}"
                f"  verified={r['ok']}  (load {r['load']:.1f})"
            )
        masses = {r.get("best_mass") for r in runs.values() if "error" not in r}
        if len(runs) > 1:
            print(f"{'':<16} orders agree: {len(masses) == 1}")
        best = next((r["best_ids"] for r in runs.values() if r.get("best_ids")), None)
        if best:
            print(f"{'':<16} timor solve: {solve(f, best)}")
        ga = []
        optimum = next(iter(masses)) if len(masses) == 1 else None
        for seed in range(args.ga_seeds):
            g = search(f, "ga", "cost", args.workers, seed)
            ga.append(g)
            best = g.get("trial_best", [None])[0]
            hit = best is not None and optimum is not None and best <= optimum + 0.005
            print(f"{'':<16} GA seed {seed}: {g.get('seconds', 0):.1f} s, best {best} kg, hit={hit}")
        report[f.stem] = {"constrained": runs, "ga": ga}
    if args.json:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
