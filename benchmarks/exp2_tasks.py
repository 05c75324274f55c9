#!/usr/bin/env python3
"""Experiment 2's searches on tasks nobody tuned them to (issue 25, item 1): both orders, verified, per task.

    python benchmarks/exp2_tasks.py                       # every task, both orders, 2 workers
    python benchmarks/exp2_tasks.py --tasks more_goals --orders cost --workers 1
    python benchmarks/exp2_tasks.py --ga-seeds 3          # also the GA at its defaults, seeds 0..2
    python benchmarks/exp2_tasks.py --tasks user_study moved_goals --orders cost --library /tmp/old/src/timor_core
    python benchmarks/exp2_tasks.py --unseen 38 --no-ref  # the generated unseen tasks (unseen_tasks.py) + user_study
    python benchmarks/exp2_tasks.py --unseen 38 --rounds 3 --tasks user_study five_joints --library OLD/src/timor_core

``user_study`` (``../shared/data/cobra/tasks/user_study.json``) may be named too. ``--library DIR`` also runs every
search with the timor_core package in DIR (e.g. an older commit's ``src/timor_core``, from ``git archive``),
interleaved with ours: before/after figures under the same load. Unless ``--no-ref``, the reference's IDs -> URDF
of a six-axis IMPROV robot (the machine's yardstick, as ``exp2.py`` measures it) is taken before and after each
task, and every time is also given scaled to the reference's baseline machine (x 11.1 ms / the mean yardstick).

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
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TASKS = REPO / "src" / "timor_core" / "tests" / "data" / "exp2_tasks"
USER_STUDY = REPO.parent / "shared" / "data" / "cobra" / "tasks" / "user_study.json"
YARDSTICK_MS = 11.1  # the reference's IDs -> URDF on its baseline machine (exp2.py)


def search(task: Path, algorithm: str, order: str, workers: int, seed: int = 0, library: str | None = None) -> dict:
    """One ``timor paper exp2`` run in a fresh process: its JSON run record (plus ``load``)."""
    cmd = [sys.executable, "-m", "timor_core.cli", "paper", "exp2", "--task", str(task), "--algorithm", algorithm]
    cmd += ["--order", order, "--workers", str(workers), "--seed", str(seed), "--no-progress", "--json"]
    env = dict(os.environ, PYTHONPATH=library or str(REPO / "src" / "timor_core"))
    t0, before = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    process_seconds = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # the process and its workers (waited for), imports included
    process_cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return {"error": proc.stderr.strip()[-500:]}
    run = json.loads(lines[-1])["runs"][0]
    run["load"] = os.getloadavg()[0]
    run["process_seconds"] = process_seconds
    run["process_cpu"] = process_cpu
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


def yardstick(ref_python: str | None) -> float | None:
    """The reference's IDs -> URDF of a six-axis IMPROV robot now (ms; median as exp2.py takes it), or None."""
    if ref_python is None:
        return None
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import exp2
    import run

    spec = {"mode": "urdf", "modules_json": str(run.IMPROV_JSON), "reps": 5}
    spec["assemblies"] = [list(a) for a in run.improv_assemblies()]
    fig, _ = exp2.call("ref", spec, ref_python)
    return None if not fig or not fig.get("ms") else round(float(fig["ms"]), 2)


def task_files(unseen: int | None) -> list[Path]:
    """The task files: the user study first, then exp2_tasks/*.json or the unseen tasks of seed ``unseen``."""
    if unseen is None:
        tasks = sorted(TASKS.glob("*.json"))
    else:
        import atexit
        import shutil
        import tempfile

        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import unseen_tasks

        folder = Path(tempfile.mkdtemp(prefix=f"unseen{unseen}-"))
        atexit.register(shutil.rmtree, folder, True)  # (the searches read the files until the end)
        tasks = unseen_tasks.write(unseen, folder)
    return ([USER_STUDY] if USER_STUDY.is_file() else []) + tasks


def ratios(report: dict, reference: str = "user_study") -> None:
    """Each task's seconds over the reference task's in the same run, per order."""
    base = report.get(reference, {}).get("constrained", {})
    for name, entry in report.items():
        cells = []
        for order, r in entry["constrained"].items():
            ref = base.get(order, {}).get("seconds")
            if "seconds" in r and ref:
                cells.append(f"{order} {r['seconds'] / ref:.2f}x")
        print(f"{name:<18} / {reference}: {', '.join(cells)}")


def rounds(files: list[Path], orders: list[str], workers: int, n: int, library: str | None = None) -> dict:
    """Every task in every order, ``n`` rounds one after the other (the user study in each): per task and order,
    the runs' seconds, and each round's ratio to the user study's time in the same round. With ``library`` (an
    older ``src/timor_core``) each search also runs with it right after ours, as the tasks ``NAME (before)``."""
    libraries = [("", None)] + ([(" (before)", library)] if library else [])
    out: dict = {f.stem + tag: {o: [] for o in orders} for f in files for tag, _ in libraries}
    for k in range(n):
        for f in files:
            for order in orders:
                for tag, lib in libraries:
                    r = search(f, "constrained", order, workers, 0, lib)
                    out[f.stem + tag][order].append(r)
                    secs = r.get("seconds", float("nan"))
                    best = " ".join(r.get("best_ids") or ["-"])
                    line = f"round {k} {f.stem + tag:<27} {order:<5} {secs:7.2f} s"
                    line += f"  {r.get('evaluations', '-'):>7} evaluated  {best}  {r.get('best_mass')}"
                    line += f"  process {r.get('process_seconds', 0):.1f} s, CPU {r.get('process_cpu', 0):.1f} s"
                    line += f"  load {r.get('load', 0):.1f}"
                    print(line, flush=True)
    return out


def summary(out: dict, reference: str = "user_study") -> dict:
    """Per task and order: median seconds, the median of the per-round ratios to the reference, the optimum."""
    table: dict = {}
    for name, per_order in out.items():
        for order, runs in per_order.items():
            ref = out.get(reference, {}).get(order, [{}] * len(runs))  # (no reference named: no ratios)
            ratios = [
                r["seconds"] / q["seconds"]
                for r, q in zip(runs, ref, strict=True)
                if "seconds" in r and q.get("seconds")
            ]
            secs = [r["seconds"] for r in runs if "seconds" in r]
            cpu = [r["process_cpu"] / q["process_cpu"] for r, q in zip(runs, ref, strict=True) if q.get("process_cpu")]
            masses = sorted({r.get("best_mass") for r in runs}, key=str)
            table[(name, order)] = {"median_s": statistics.median(secs) if secs else None, "runs_s": secs,
                                    "ratio": statistics.median(ratios) if ratios else None, "ratios": ratios,
                                    "masses": masses, "best_ids": runs[0].get("best_ids"),
                                    "evaluations": [r.get("evaluations") for r in runs],
                                    "process_s": [round(r.get("process_seconds", 0), 2) for r in runs],
                                    "process_cpu": [round(r.get("process_cpu", 0), 2) for r in runs],
                                    "cpu_ratio": statistics.median(cpu) if cpu else None}  # fmt: skip
    return table


def print_summary(table: dict, files: list[Path], check: bool = True) -> None:
    """The table for the README: per task, both orders' median seconds and ratios, the optimum, solve's check
    (``check``: ``timor solve`` on it)."""
    orders = sorted({o for _, o in table}, key=lambda o: o != "cost")
    for f in files:
        cells = []
        for o in orders:
            t = table[(f.stem, o)]
            ratio = "-" if t["ratio"] is None else f"{t['ratio']:.2f}x"
            cpu = "-" if t["cpu_ratio"] is None else f"{t['cpu_ratio']:.2f}x"
            cells.append(f"{o} {t['median_s']:.2f} s ({', '.join(f'{s:.2f}' for s in t['runs_s'])}) ratio {ratio}"
                         f"; process CPU {statistics.median(t['process_cpu']):.2f} s, ratio {cpu}")  # fmt: skip
        t0 = table[(f.stem, orders[0])]
        agree = len({m for o in orders for m in table[(f.stem, o)]["masses"]}) == 1
        ids = t0["best_ids"]
        check = (solve(f, ids) if check else "-") if ids else "no robot"
        print(f"| {f.stem} | {' | '.join(cells)} | {t0['masses']} agree={agree} | {' '.join(ids or ['-'])} | {check} |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tasks", nargs="*", help="task names (default: all)")
    p.add_argument("--library", help="also run every search with the timor_core package in this folder (before)")
    p.add_argument("--no-ref", action="store_true", help="no yardstick (no scaled seconds)")
    p.add_argument("--orders", nargs="*", default=["cost", "space"])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--ga-seeds", type=int, default=0, help="GA trials per task at the defaults (0: none)")
    p.add_argument("--unseen", type=int, metavar="SEED", help="the tasks unseen_tasks.py generates from SEED instead")
    p.add_argument("--rounds", type=int, default=0, help="N rounds of every task and order, medians and ratios")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    files = task_files(args.unseen)
    if args.tasks:
        files = [f for f in files if f.stem in args.tasks]
    if args.rounds:
        print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
        out = rounds(files, args.orders, args.workers, args.rounds, args.library)
        print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
        table = summary(out)
        print_summary(table, files)
        if args.library:  # the older library's ratios, to its own user study runs
            before = {name[: -len(" (before)")]: v for name, v in out.items() if name.endswith(" (before)")}
            print("before (--library):")
            print_summary(summary(before), files, check=False)
        if args.json:
            print(json.dumps({f"{k[0]} {k[1]}": v for k, v in table.items()}))
        return 0
    if args.tasks:
        files = [f for f in files if f.stem in args.tasks]
    ref_python = None
    if not args.no_ref:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import run

        ref_python, _ = run.resolve_ref_python(None)
    report: dict = {}
    libraries = [("ours", None)] + ([("before", args.library)] if args.library else [])
    for f in files:
        before_ms = yardstick(ref_python)
        runs = {}
        for order in args.orders:
            for name, lib in libraries:
                runs[order if name == "ours" else f"{order} ({name})"] = search(
                    f, "constrained", order, args.workers, 0, lib
                )
        after_ms = yardstick(ref_python)
        known = [v for v in (before_ms, after_ms) if v]
        scale = YARDSTICK_MS / (sum(known) / len(known)) if known else None
        if known:
            print(f"{f.stem:<16} yardstick (reference IDs -> URDF): {before_ms} ms before, {after_ms} ms after")
        for order, r in runs.items():
            if "error" in r:
                print(f"{f.stem:<16} {order:<6} ERROR {r['error']}")
                continue
            r["scaled_seconds"] = None if scale is None else r["seconds"] * scale
            ids = " ".join(r["best_ids"] or ["-"])
            mass = f"{r['best_mass']:.2f} kg" if r["best_mass"] is not None else "no robot"
            scaled = "" if scale is None else f" ({r['scaled_seconds']:.1f} s scaled)"
            print(
                f"{f.stem:<16} {order:<6} {r['seconds']:7.2f} s{scaled} {r['evaluations']:>7} evaluated  {ids}  {mass}"
                f"  verified={r['ok']}  (load {r['load']:.1f})"
            )
        masses = {r.get("best_mass") for r in runs.values() if "error" not in r}
        if len(runs) > 1:
            print(f"{'':<16} all runs agree: {len(masses) == 1}")
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
        report[f.stem] = {"constrained": runs, "ga": ga, "yardstick_ms": [before_ms, after_ms]}
    ratios(report)
    if args.json:
        print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
