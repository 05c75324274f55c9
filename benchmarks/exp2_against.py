"""``exp2.py --against CHECKOUT``: experiment 2's constrained search run by two checkouts of timor, alternating, each
run a fresh process measured from outside (issue 39 item 2: the one sharded search, before/after in one run).

    python benchmarks/exp2.py --against /path/to/old/checkout                  # 3 rounds, both orders, 1 and 2 workers
    python benchmarks/exp2.py --against OLD --rounds 5 --routes local dask --json > a.json

Per round, for every (task, route, order, workers), the other checkout and this one one after the other, the one to
go first swapping every round (so a load that drifts during a pair falls on both sides alike). Each run is a fresh
interpreter with the checkout's ``src/timor_core`` on ``PYTHONPATH``:

- route ``local``: ``timor paper exp2 --task T --algorithm constrained --order O --workers W --no-progress --json``
  (the cost order with W > 1 runs as shards on local processes; W = 1 and the space order do not use shards);
- route ``dask``: ``timor search T --db robco_like --space exp2 --order O --workers W --scheduler local
  --no-progress -o result.json`` (a ``LocalCluster`` of W workers started inside the run; the cost order runs as
  one shard per worker, the space order streamed in chunks).

Figures per run: the search's own seconds (as printed by the command; the Dask route's includes starting the
cluster), the whole process's wall and CPU seconds (user + sys of the process and the children it waited for: the
rise of ``getrusage(RUSAGE_CHILDREN)``), the 1-minute load average at its start, the evaluations and the best robot
(both checkouts must agree); on the Dask route also the CPU seconds the search's evaluations took on the workers, as
its result reports them (``cpu_time``: without the cluster's own start and upkeep).
On a shared machine the CPU seconds are the steadier figure; the summary gives medians and the median of the
per-round ratios before/after (> 1: this checkout faster).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
TASKS = {"user_study": HERE.parent.parent / "shared" / "data" / "cobra" / "tasks" / "user_study.json"}
TASK_DIR = HERE.parent / "src" / "timor_core" / "tests" / "data" / "exp2_tasks"
RUN_TIMEOUT = 1800


def task_path(name: str) -> Path:
    """A task by name: the user study, or one of tests/data/exp2_tasks (e.g. ``obstacle_middle``), or a file."""
    if name in TASKS:
        return TASKS[name]
    return TASK_DIR / f"{name}.json" if (TASK_DIR / f"{name}.json").is_file() else Path(name)


def command(route: str, task: Path, order: str, workers: int, out: Path) -> list[str]:
    """The command line of one run (see the module docstring)."""
    cli = [sys.executable, "-m", "timor_core.cli"]
    if route == "local":
        return cli + ["paper", "exp2", "--task", str(task), "--algorithm", "constrained", "--order", order,
                      "--workers", str(workers), "--no-progress", "--json"]  # fmt: skip
    return cli + ["search", str(task), "--db", "robco_like", "--space", "exp2", "--order", order, "--workers",
                  str(workers), "--scheduler", "local", "--no-progress", "-o", str(out)]  # fmt: skip


def parse(route: str, stdout: str, out: Path) -> dict:
    """The search's seconds, evaluations and best robot from the run's JSON (stdout or the result file)."""
    if route == "local":
        run = json.loads([ln for ln in stdout.splitlines() if ln.startswith("{")][-1])["runs"][0]
        return {"search_s": run["seconds"], "evaluations": run["evaluations"], "best_ids": run["best_ids"],
                "best_cost": run["best_mass"]}  # fmt: skip
    data = json.loads(out.read_text())
    best = data.get("best") or {}
    return {"search_s": data["wall_time"], "evaluations": data["evaluations"], "best_ids": best.get("ids"),
            "best_cost": best.get("cost"), "shards_cpu_s": data.get("cpu_time")}  # fmt: skip


def one_run(checkout: Path, route: str, task: Path, order: str, workers: int, folder: Path) -> dict:
    """One search by ``checkout``'s library in a fresh process, measured from outside."""
    out = folder / "result.json"
    out.unlink(missing_ok=True)
    env = dict(os.environ, PYTHONPATH=str(checkout / "src" / "timor_core"))
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(command(route, task, order, workers, out), env=env, cwd=str(folder),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        stdout, stderr = proc.communicate(timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate()
    wall = time.perf_counter() - start
    row = {"checkout": str(checkout), "route": route, "task": task.stem, "order": order, "workers": workers,
           "load_1min": round(load, 2), "wall_s": round(wall, 2), "status": proc.returncode}  # fmt: skip
    if proc.returncode != 0:
        return {**row, "error": stderr.strip()[-1500:]}
    return {**row, **parse(route, stdout, out)}


def children_cpu() -> float:
    """User + sys seconds of every child process this process has waited for so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_run(checkout: Path, route: str, task: Path, order: str, workers: int, folder: Path) -> dict:
    """:func:`one_run` with the whole process's CPU seconds (it and the children it waited for)."""
    cpu0 = children_cpu()
    row = one_run(checkout, route, task, order, workers, folder)
    row["cpu_s"] = round(children_cpu() - cpu0, 2)
    return row


def compare(against: Path, tasks: list[str], routes: list[str], orders: list[str], workers: list[int],
            rounds: int) -> list[dict]:  # fmt: skip
    """Every configuration ``rounds`` times, the two checkouts alternating (who goes first swaps every round)."""
    here = HERE.parent
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="exp2_against_") as tmp:
        for r in range(rounds):
            pair = (against.resolve(), here) if r % 2 == 0 else (here, against.resolve())
            for name in tasks:
                for route in routes:
                    for order in orders:
                        for w in workers:
                            for checkout in pair:
                                row = timed_run(checkout, route, task_path(name), order, w, Path(tmp))
                                rows.append({**row, "round": r, "side": "after" if checkout == here else "before"})
                                print(line(rows[-1]), file=sys.stderr, flush=True)
    return rows


def line(r: dict) -> str:
    """One run's line."""
    head = f"[{r['side']:<6}] {r['task']} {r['route']} {r['order']:<5} {r['workers']}w:"
    if r.get("error"):
        return f"{head} FAILED (status {r['status']}): {r['error'][-300:]}"
    return (f"{head} search {r['search_s']:7.2f} s, whole {r['wall_s']:7.2f} s wall {r['cpu_s']:7.2f} s CPU, "
            f"{r['evaluations']} evaluated, best {r['best_cost']}{_shards_cpu(r)} (load {r['load_1min']})")  # fmt: skip


def _shards_cpu(r: dict) -> str:
    """The workers' CPU seconds of a Dask run's evaluations, if reported."""
    return f", workers' CPU {r['shards_cpu_s']:.2f} s" if r.get("shards_cpu_s") is not None else ""


def summary(rows: list[dict]) -> list[dict]:
    """Per configuration: medians of each side and the median of the per-round ratios before/after."""
    out = []
    keys = sorted({(r["task"], r["route"], r["order"], r["workers"]) for r in rows}, key=str)
    for key in keys:
        runs = [r for r in rows if (r["task"], r["route"], r["order"], r["workers"]) == key and not r.get("error")]
        side = {s: [r for r in runs if r["side"] == s] for s in ("before", "after")}
        if not side["before"] or not side["after"]:
            continue
        pairs = [(b, a) for b in side["before"] for a in side["after"] if a["round"] == b["round"]]
        s = {"task": key[0], "route": key[1], "order": key[2], "workers": key[3], "rounds": len(pairs)}
        figs = ["search_s", "wall_s", "cpu_s"] + (["shards_cpu_s"] if all(r.get("shards_cpu_s") for r in runs) else [])
        for fig in figs:
            for name, group in side.items():
                s[f"{name}_{fig}"] = statistics.median(r[fig] for r in group)
                s[f"{name}_{fig}_range"] = (min(r[fig] for r in group), max(r[fig] for r in group))
            s[f"ratio_{fig}"] = statistics.median(b[fig] / a[fig] for b, a in pairs if a[fig] > 0)
        s["same_best"] = len({(tuple(r["best_ids"] or ()), r["best_cost"]) for r in runs}) == 1
        s["load_range"] = (min(r["load_1min"] for r in runs), max(r["load_1min"] for r in runs))
        out.append(s)
    return out


def table(sums: list[dict]) -> str:
    """The summary as a Markdown table."""
    rows = ["| task, route, order, workers | search s before / after (ratio) | CPU s before / after (ratio) | "
            "whole wall s before / after | CPU s range before; after | same best | load |",
            "| --- | --- | --- | --- | --- | --- | --- |"]  # fmt: skip
    for s in sums:
        cb, ca = s["before_cpu_s_range"], s["after_cpu_s_range"]
        rows.append(
            f"| {s['task']}, {s['route']}, {s['order']}, {s['workers']} | {s['before_search_s']:.2f} / "
            f"{s['after_search_s']:.2f} ({s['ratio_search_s']:.2f}x) | {s['before_cpu_s']:.2f} / {s['after_cpu_s']:.2f}"
            f" ({s['ratio_cpu_s']:.2f}x) | {s['before_wall_s']:.2f} / {s['after_wall_s']:.2f} | {cb[0]:.2f}-{cb[1]:.2f}"
            f"; {ca[0]:.2f}-{ca[1]:.2f} | {s['same_best']} | {s['load_range'][0]:.1f}-{s['load_range'][1]:.1f} |"
        )
    return "\n".join(rows)


def main_against(args) -> int:
    """The ``--against`` mode of exp2.py."""
    rows = compare(args.against, args.tasks, args.routes, args.orders, args.workers, args.rounds)
    sums = summary(rows)
    out = sys.stderr if args.json else sys.stdout
    print(table(sums), file=out)
    for s in sums:
        if "ratio_shards_cpu_s" in s:
            print(f"{s['task']}, {s['route']}, {s['order']}, {s['workers']}: workers' CPU of the evaluations "
                  f"{s['before_shards_cpu_s']:.2f} / {s['after_shards_cpu_s']:.2f} s ({s['ratio_shards_cpu_s']:.2f}x)",
                  file=out)  # fmt: skip
    if args.json:
        print(json.dumps({"runs": rows, "summary": sums}))
    return 0 if all(not r.get("error") for r in rows) else 1
