#!/usr/bin/env python3
"""The GA at experiment 2's settings on the unseen tasks and the user study, N seeds each, with a time budget per
trial: hits per task and CPU seconds per trial (issue 38, item 1: the GA at the optimum in >= 9 of 10 seeds).

    python benchmarks/ga_seeds.py --unseen 38 --seeds 10 --budget 120 --jobs 2 --json /tmp/ga38.json
    python benchmarks/ga_seeds.py --unseen 38 --tasks boundary --seeds 10     # one task
    python benchmarks/ga_seeds.py --ring "base J L_150 J L_150 J L_100 I_300 J gripper" 3  # the descent's ring

Each trial runs in a fresh process (``python -m ga_seeds --one ...``, 1 worker: the evaluations in that process)
as ``timor paper exp2 --algorithm ga`` builds its GA (500 generations, population 20, 13 genes, up to six joints,
``FilterConfig(seed=S)``, one trial), but with ``Budget(max_time=B)``: a trial still running after B seconds of
wall time ends with its best so far (``stopped == "max_time"``, counted and printed). Its best robot is checked
independently (:func:`timor_core.task.feedback.verify_goal_configurations`, no IK) and is a *hit* when it is
verified and at most the constrained search's optimum + 5 g (``OPTIMA``: ``exp2_tasks.py --unseen 38`` prints
them; the GA's space is wider, so it can be lighter). On ``unsolvable`` (no robot of the constrained space reaches
its second goal) a hit is *no* robot. CPU is the trial process's ``process_time`` of the search (imports and task
loading not counted); ``--jobs`` trials run side by side (each one process). The load is printed with each trial.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
HERE = Path(__file__).resolve().parent
OPTIMA = {  # kg, the constrained search's optimum (exp2_tasks.py --unseen 38; obstacles_4 after the collision fix)
    "user_study": 11.02,
    "turned_user_study": 11.02,
    "moved_goals": 12.98,
    "spread_goals": 13.04,
    "obstacles_3": 13.10,
    "obstacles_4": 13.88,
    "boundary": 13.46,
    "boundary_high": 11.02,
    "five_joints": 15.66,
    "unsolvable": None,
}
TOLERANCE_KG = 0.005


def one(task_file: str, seed: int, budget: float, generations: int) -> dict:
    """One GA trial in this process: its best robot, the check, CPU and wall seconds, evaluations, why it stopped."""
    from timor_core import ModulesDB
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.search import Budget, FilterConfig, GeneticSearch
    from timor_core.search.evaluation.evaluate import load_task
    from timor_core.task.feedback import verify_goal_configurations

    db = ModulesDB.from_name("robco_like")
    task = load_task(task_file)
    ga = GeneticSearch(
        db, cost="mass", n_slots=13, max_dof=6, generations=generations, population=20, seed=seed, trials=1,
        filters=FilterConfig(seed=seed), workers=1, progress=False,
    )  # fmt: skip
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "src/timor_core/timor_core"],
                           capture_output=True, text=True).stdout.strip()  # fmt: skip
    c0, t0 = time.process_time(), time.perf_counter()
    result = ga.optimize(task, db, Budget(max_time=budget))
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    verified = None
    if result.best_ids is not None:
        assembly = ModuleAssembly.from_serial_modules(db, result.best_ids)
        q = {goal_id: g.q for goal_id, g in result.best_goals.items() if g.success}
        checks = verify_goal_configurations(task, assembly, q)
        verified = len(checks) == len(task.goals) and all(c["ok"] for c in checks)
    return {
        "best_ids": list(result.best_ids) if result.best_ids is not None else None,
        "best_mass": result.best_cost,
        "verified": verified,
        "cpu": round(cpu, 2),
        "wall": round(wall, 2),
        "evaluations": result.evaluations,
        "descent_evaluations": result.settings.get("descent_evaluations"),
        "stopped": result.stopped,
        "commit": commit.stdout.strip() + ("+changes" if dirty else ""),
    }


def ring(design: list[str], radius: int, rounds: int = 2) -> None:
    """The descent's ring of ``radius`` moves around ``design`` below its cost, in one process: every admissible
    design built and then filtered (as before issue 38's change) against the moves priced first (``values``);
    CPU seconds of each and whether they hold the same designs."""
    from timor_core import ModulesDB
    from timor_core.search import GeneticSearch
    from timor_core.search.genetic.ga_local import Descent
    from timor_core.task.feedback import assembly_cost

    db = ModulesDB.from_name("robco_like")
    ga = GeneticSearch(db, cost="mass", n_slots=13, max_dof=6, progress=False, workers=1)
    cost = assembly_cost("mass")
    prices: dict[tuple[str, ...], float] = {}

    def cost_of(d: tuple[str, ...]) -> float:
        if d not in prices:
            prices[d] = cost.evaluate_serial(db, d)
        return prices[d]

    def admissible(d: tuple[str, ...]) -> bool:
        return ga.encode(d) is not None and ga.is_valid(d)

    values = {m: float(cost.evaluate_modules([db.by_id(m)]) or 0.0) for m in (*ga.joints, *ga.links)}
    start = tuple(design)
    bound = cost_of(start)
    for _ in range(rounds):
        prices.clear()
        c0 = time.process_time()
        full = Descent(ga.joints, ga.links, admissible, cost_of, lambda ds, b: []).neighbourhood(start, radius)
        old = {d for d in full if cost_of(d) < bound}
        t_old, priced_old = time.process_time() - c0, len(prices)
        prices.clear()
        c0 = time.process_time()
        descent = Descent(ga.joints, ga.links, admissible, cost_of, lambda ds, b: [], values=values)
        new = descent.neighbourhood(start, radius, bound)
        t_new = time.process_time() - c0
        print(
            f"radius {radius} around {' '.join(start)} below {bound:.2f} kg: {len(old)} designs, all built and"
            f" filtered {t_old:.2f} s CPU ({priced_old} priced), moves priced first {t_new:.2f} s CPU"
            f" ({len(prices)} priced), the same designs: {old == new}",
            flush=True,
        )


def trial(task: Path, seed: int, budget: float, generations: int) -> dict:
    """One trial in a fresh process (``--one``): its record plus the task, seed, load and hit."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--one", str(task), str(seed), str(budget)]
    cmd += ["--generations", str(generations)]
    env = dict(os.environ, PYTHONPATH=str(REPO / "src" / "timor_core"))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=budget + 600)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    r = json.loads(lines[-1]) if lines else {"error": proc.stderr.strip()[-500:]}
    r.update(task=task.stem, seed=seed, load=round(os.getloadavg()[0], 2))
    optimum = OPTIMA.get(task.stem, "unknown")
    if "error" in r or optimum == "unknown":
        r["hit"] = None
    elif optimum is None:
        r["hit"] = r["best_ids"] is None
    else:
        r["hit"] = bool(r["verified"]) and r["best_mass"] is not None and r["best_mass"] <= optimum + TOLERANCE_KG
    return r


def task_files(unseen: int) -> list[Path]:
    """The user study and the unseen tasks of seed ``unseen`` (:func:`exp2_tasks.task_files`: a temp folder, removed
    at exit)."""
    sys.path.insert(0, str(HERE))
    import exp2_tasks

    return exp2_tasks.task_files(unseen)


def _spread(values: list[float]) -> str:
    v = sorted(values)
    return f"{statistics.median(v):.1f} ({v[0]:.1f}-{v[-1]:.1f}; {len(v)})" if v else "-"


def _cpu(rs: list[dict]) -> str:
    return _spread([r["cpu"] for r in rs if "cpu" in r])


def table(records: list[dict]) -> list[str]:
    """Per task: hits, the best mass per seed, CPU seconds per trial (median, range and count) per library commit
    (trials without a recorded commit ran before it was recorded, i.e. before the ring change: "a3ffbd6"), wall
    seconds, the load average at each trial's end (range), trials ended by the budget."""
    head = "| task (optimum) | seeds | hits | best per seed (kg) | CPU s per trial (median, range; trials), by commit"
    rows = [
        head + " | wall s (median, range) | load | at the budget |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name in dict.fromkeys(r["task"] for r in records):
        rs = sorted((r for r in records if r["task"] == name), key=lambda r: r["seed"])
        hits = sum(1 for r in rs if r.get("hit"))
        masses = ", ".join("-" if r.get("best_mass") is None else f"{r['best_mass']:.2f}" for r in rs)
        commits = dict.fromkeys(r.get("commit") or "a3ffbd6" for r in rs)
        cpu = "; ".join(f"{c}: {_cpu([r for r in rs if (r.get('commit') or 'a3ffbd6') == c])}" for c in commits)
        loads = [r["load"] for r in rs if "load" in r]
        load = f"{min(loads):.1f}-{max(loads):.1f}" if loads else "-"
        budget = sum(1 for r in rs if r.get("stopped") == "max_time")
        optimum = OPTIMA.get(name)
        label = f"`{name}` ({'none' if optimum is None else f'{optimum:.2f} kg'})"
        seeds = ", ".join(str(r["seed"]) for r in rs)
        wall = _spread([r["wall"] for r in rs if "wall" in r])
        rows.append(f"| {label} | {seeds} | **{hits} of {len(rs)}** | {masses} | {cpu} | {wall} | {load} | {budget} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--one", nargs=3, metavar=("TASK", "SEED", "BUDGET"), help=argparse.SUPPRESS)
    p.add_argument("--unseen", type=int, default=38, metavar="SEED", help="unseen_tasks.py's seed (default 38)")
    p.add_argument("--tasks", nargs="*", help="task names (default: all, the user study first)")
    p.add_argument("--seeds", type=int, default=10, help="GA seeds 0 .. N-1 per task (default 10)")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--budget", type=float, default=120.0, help="wall seconds per trial (default 120)")
    p.add_argument("--generations", type=int, default=500)
    p.add_argument("--jobs", type=int, default=1, help="trials side by side (one process each)")
    p.add_argument("--json", help="write every trial's record to this file (and each as it ends to FILE + 'l')")
    p.add_argument("--ring", nargs=2, metavar=("DESIGN", "RADIUS"), help="time the descent's ring around DESIGN")
    p.add_argument("--table", nargs="+", metavar="JSONL", help="only print the table of these trial records")
    args = p.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one[0], int(args.one[1]), float(args.one[2]), args.generations)))
        return 0
    if args.ring:
        ring(args.ring[0].split(), int(args.ring[1]))
        return 0
    if args.table:
        records = [json.loads(ln) for f in args.table for ln in Path(f).read_text().splitlines() if ln.strip()]
        print("\n".join(table(records)))
        return 0
    files = task_files(args.unseen)
    if args.tasks:
        files = [f for f in files if f.stem in args.tasks]
    seeds = range(args.first_seed, args.first_seed + args.seeds)
    jobs = [(f, s) for s in seeds for f in files]  # seed by seed: a run cut short covers every task alike
    if args.json and Path(args.json + "l").is_file():  # resumed: the trials already measured are not run again
        done = {(r["task"], r["seed"]) for r in map(json.loads, Path(args.json + "l").read_text().splitlines())}
        jobs = [(f, s) for f, s in jobs if (f.stem, s) not in done]
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}", flush=True)

    def run(job: tuple[Path, int]) -> dict:
        r = trial(job[0], job[1], args.budget, args.generations)
        best = " ".join(r.get("best_ids") or ["-"])
        print(
            f"{r['task']:<18} seed {r['seed']}: hit={r['hit']} {r.get('best_mass')} kg {best} verified="
            f"{r.get('verified')} cpu {r.get('cpu')} s wall {r.get('wall')} s {r.get('evaluations')} evaluated"
            f" ({r.get('stopped')}) load {r['load']} {r.get('error', '')}",
            flush=True,
        )
        if args.json:  # one line per trial as it ends (a run cut short keeps what it measured)
            with open(args.json + "l", "a") as out:
                out.write(json.dumps(r) + "\n")
        return r

    with ThreadPoolExecutor(max(1, args.jobs)) as pool:
        records = list(pool.map(run, jobs))
    if args.json:
        records = [json.loads(ln) for ln in Path(args.json + "l").read_text().splitlines()]
    print(f"uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    print("\n".join(table(records)))
    if args.json:
        Path(args.json).write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
