#!/usr/bin/env python3
"""Experiment 2 of the Timor paper, side by side with the reference toolbox (timor-python 1.1.1) in one run.

    python benchmarks/exp2.py                    # full: both of our searches, then the sample and GA comparisons
    python benchmarks/exp2.py --quick            # 40-assembly sample, 5 GA generations, our full runs skipped
    python benchmarks/exp2.py --json > e.json    # table on stderr, JSON report on stdout

Experiment 2: the lightest robot of the RobCo-like module set (embedded ``robco_like``) for the paper's user-study
task (``../shared/data/cobra/tasks/user_study.json``), by the constrained search over 177,155 assemblies and by the
genetic algorithm (500 generations). The paper: 5.5 min and 21.9 min per GA trial (reference, i7-11700KF).

What is measured, on the same module set and task, in this run:

- **ours, full**: ``timor paper exp2 --algorithm constrained`` (space order, "lighter solution already found"
  bound, all cores) and ``--algorithm ga --generations 500`` (one trial, all cores), each in a fresh process:
  seconds, best robot and mass, and the independent check that the robot reaches both goals collision-free.
- **constrained search, per assembly**: the same uniform random sample of the space (``--sample`` assemblies,
  seeded) through each side's filter pipeline in one process, without the bound (so both sides do all the
  work an assembly can cost). Reference pipeline: its own ``default_filters(task)`` (robot creation, IK
  ignoring obstacles with max_iter 150, IK with the task with max_iter 1500) without its module-length filter,
  which needs a base constraint that the user-study task does not have (it raises AttributeError).
  Ours: ``timor_core.search.evaluate`` with the default filter chain. Ratio: reference total / ours total.
  The reference's projected full-space time is its mean per assembly times 177,155 (no bound: an upper bound).
- **GA trial**: both GAs with the same population (20), chromosome length (13 slots; the reference adds base and
  end-effector genes), fitness (mass + 1e6 per goal not reached, DOF > 6 invalid), seed, ``--ga-generations``
  generations, one process each. Ratio: reference seconds / ours.

Each side runs as a worker process: ``exp2.py --worker ours`` under this interpreter, ``exp2.py --worker ref``
under the reference interpreter (``run.resolve_ref_python``: ../refvenv) with its offline shim.
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import run  # noqa: E402  (the shared benchmark helpers; stdlib-only at import time)

TASK_JSON = run.SHARED / "data" / "cobra" / "tasks" / "user_study.json"
ROBCO_JSON = run.REPO / "src" / "timor_core" / "timor_core" / "data" / "robco_like" / "modules.json"
FULL_COUNT = 177_155
PENALTY = 1e6
MAX_DOF = 6
SLOTS = 13


# -- workers ----------------------------------------------------------------------------------------
def ours_sample(spec: dict) -> dict:
    """Our filter chain on every sampled assembly (no bound), timed per assembly."""
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.search import FilterConfig
    from timor_core.search.evaluate import evaluate, load_db, load_task
    from timor_core.task.solve import verify_goal_configurations

    task, db = load_task(spec["task"]), load_db(spec["db"])
    config = FilterConfig(seed=spec["seed"], bound=False)
    evaluate(spec["ids"][0], task, db, "mass", config)  # warm-up: caches the filter chain, as in a search
    times, valid, refuted = [], [], 0
    for ids in spec["ids"]:
        t0 = time.perf_counter()
        ev = evaluate(ids, task, db, "mass", config)
        times.append(time.perf_counter() - t0)
        valid.append(bool(ev.valid))
        if ev.valid:  # not timed: the independent check of the configurations found
            q = {goal_id: g.q for goal_id, g in ev.goals.items() if g.success}
            checks = verify_goal_configurations(task, ModuleAssembly.from_serial_modules(db, ids), q)
            refuted += not all(c["ok"] for c in checks)
    return {"times": times, "valid": valid, "valid_but_refuted": refuted}


def ours_scaling(spec: dict) -> dict:
    """Our exhaustive search over one slice of the space (mostly 5-DOF robots), with ``workers`` processes."""
    from timor_core.model.db import ModulesDB
    from timor_core.paper.experiments import exp2_space
    from timor_core.search import ExhaustiveSearch, FilterConfig
    from timor_core.search.evaluate import load_task

    space = exp2_space(ModulesDB.from_json_file(ROBCO_JSON))
    task = load_task(spec["task"])
    search = ExhaustiveSearch(
        space,
        "mass",
        FilterConfig(seed=spec["seed"], bound=False),
        workers=spec["workers"],
        progress=False,
        start=spec["start"],
        stop=spec["start"] + spec["count"],
    )
    t0 = time.perf_counter()
    result = search.optimize(task, space.db)
    return {"seconds": time.perf_counter() - t0, "evaluations": result.evaluations, "cpu": result.cpu_time}


def ref_sample(spec: dict) -> dict:
    """The reference's own default filters (less the module-length filter) on every sampled assembly."""
    ModuleAssembly, db, task, filters, run_filters = _ref_setup(spec)
    times, valid, confirmed = [], [], []
    for ids in spec["ids"]:
        t0 = time.perf_counter()
        ok, results, assembly = False, None, None
        try:
            assembly = ModuleAssembly.from_serial_modules(db, ids)
            results, ok = run_filters(filters, assembly, task)
        except Exception:  # noqa: BLE001 - an assembly the reference cannot build or check counts as invalid
            ok = False
        times.append(time.perf_counter() - t0)
        valid.append(bool(ok))
        if ok:  # not timed: does the reference's own collision check agree with its verdict at its solutions?
            robot = assembly.robot
            clean = True
            for q in results.q_goal_pose.values():
                robot.update_configuration(q)
                clean &= not robot.has_collisions(task)
            confirmed.append(bool(clean))
    return {"times": times, "valid": valid, "valid_but_colliding": confirmed.count(False)}


def ours_ga(spec: dict) -> dict:
    from timor_core.search import FilterConfig, GeneticSearch
    from timor_core.search.evaluate import load_db, load_task

    task, db = load_task(spec["task"]), load_db(spec["db"])
    ga = GeneticSearch(
        db,
        "mass",
        n_slots=SLOTS,
        max_dof=MAX_DOF,
        generations=spec["generations"],
        population=spec["population"],
        seed=spec["seed"],
        filters=FilterConfig(seed=spec["seed"]),
        workers=spec.get("workers", 1),
        progress=False,
        penalty=PENALTY,
    )
    t0 = time.perf_counter()
    result = ga.optimize(task, db)
    seconds = time.perf_counter() - t0
    return {
        "seconds": seconds,
        "evaluated": len(ga.evaluated),
        "best_ids": list(result.best_ids) if result.best_ids else None,
        "best_mass": result.best_cost,
    }


def ref_ga(spec: dict) -> dict:
    import numpy as np

    ModuleAssembly, db, task, filters, run_filters = _ref_setup(spec)  # imports the reference (offline shim)
    from timor.configuration_search.GA import GA

    n_goals = len(task.goals)
    evaluated = []

    def fitness(assembly, _ga, _idx) -> float:
        evaluated.append(1)
        try:
            if assembly.robot.dof > MAX_DOF:
                return -PENALTY * (n_goals + 1)
            results, _ = run_filters(filters, assembly, task)
            reached = sum(bool(v) for v in results.goal_ik_success.values())
            return -(assembly.mass + PENALTY * (n_goals - reached))
        except Exception:  # noqa: BLE001 - not buildable: the worst fitness
            return -PENALTY * (n_goals + 2)

    ga = GA(db, rng=np.random.default_rng(spec["seed"]))
    hp = {
        "population_size": spec["population"],
        "num_generations": spec["generations"],
        "num_genes": SLOTS + 2,
        "random_seed": spec["seed"],
    }
    t0 = time.perf_counter()
    inst = ga.optimize(fitness, hp=hp, progress_bar=False, debug_logging_frequency=None)
    seconds = time.perf_counter() - t0
    genes, value, _ = inst.best_solution()
    ids = [m for m in map(ga.all_modules.__getitem__, genes) if m != "EMPTY"]
    mass = -float(value) if value > -PENALTY else None
    return {"seconds": seconds, "evaluated": len(evaluated), "best_ids": ids if mass else None, "best_mass": mass}


def ref_urdf(spec: dict) -> dict:
    """The yardstick of the machine's speed: the reference's IDs -> URDF of a six-axis IMPROV robot, as case 1 of
    run.py measures it (the median over its 20 six-DOF assemblies of the median over ``reps`` calls), in ms."""
    import logging
    import statistics

    import ref_worker

    ref_worker._import_reference()
    from timor import ModuleAssembly, ModulesDB

    logging.getLogger("Timor").setLevel(logging.ERROR)
    db = ModulesDB.from_json_file(Path(spec["modules_json"]))
    for ids in spec["assemblies"]:  # warm-up (derived module data is cached once per DB)
        ModuleAssembly.from_serial_modules(db, ids).to_urdf()
    medians = []
    for ids in spec["assemblies"]:
        times = []
        for _ in range(spec["reps"]):
            t0 = time.perf_counter()
            ModuleAssembly.from_serial_modules(db, ids).to_urdf()
            times.append(time.perf_counter() - t0)
        medians.append(statistics.median(times))
    return {"ms": statistics.median(medians) * 1e3, "assemblies": len(medians), "reps": spec["reps"]}


def _ref_setup(spec: dict):
    import logging

    import ref_worker

    ref_worker._import_reference()
    from timor import ModuleAssembly, ModulesDB
    from timor.configuration_search.AssemblyFilter import default_filters, run_filters
    from timor.task.Task import Task

    logging.getLogger("Timor").setLevel(logging.ERROR)
    db = ModulesDB.from_json_file(Path(spec["db"]))
    task = Task.from_json_file(Path(spec["task"]))
    filters = default_filters(task)[1:]  # [0], the module-length filter, needs a base constraint
    return ModuleAssembly, db, task, filters, run_filters


WORKERS = {
    ("ours", "scaling"): ours_scaling,
    ("ours", "sample"): ours_sample,
    ("ref", "sample"): ref_sample,
    ("ours", "ga"): ours_ga,
    ("ref", "ga"): ref_ga,
    ("ref", "urdf"): ref_urdf,
}

#: the issue's yardstick: the constrained search must take < 5 s on 2 workers where the reference's IDs -> URDF
#: of a six-axis IMPROV robot takes 11.1 ms; measured here in the same run, before and after our full search
YARDSTICK_MS = 11.1
#: our full runs: (report key, algorithm, constrained search order)
FULL_RUNS = (
    ("constrained", "constrained", "cost"),
    ("constrained_space", "constrained", "space"),
    ("ga", "ga", "cost"),
)
CONSTRAINED_TARGET_S = 5.0


def worker_main(side: str) -> int:
    spec = json.loads(sys.stdin.read())
    sys.stdout.write(json.dumps(WORKERS[side, spec["mode"]](spec)) + "\n")
    return 0


# -- the driver -------------------------------------------------------------------------------------
def sample_ids(n: int, seed: int) -> list[list[str]]:
    """``n`` distinct assemblies drawn uniformly from our experiment-2 space (by index; no full list built)."""
    from timor_core.model.db import ModulesDB
    from timor_core.paper.experiments import exp2_space

    space = exp2_space(ModulesDB.from_json_file(ROBCO_JSON))
    picks = sorted(random.Random(seed).sample(range(space.count), n))
    return [list(space[i]) for i in picks]


def call(side: str, spec: dict, ref_python: str | None) -> tuple[dict | None, str]:
    if side == "ours":
        _, env = run.ours_command()
        cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "ours"]
    else:
        _, env = run.ref_command(ref_python)
        cmd = [ref_python, str(Path(__file__).resolve()), "--worker", "ref"]
    return run.run_worker(cmd, spec, env)


def ours_full(algorithm: str, generations: int, order: str = "cost") -> tuple[dict | None, str]:
    _, env = run.ours_command()
    cmd = [
        sys.executable,
        "-m",
        "timor_core.cli",
        "paper",
        "exp2",
        "--task",
        str(TASK_JSON),
        "--db",
        str(ROBCO_JSON),
    ]
    cmd += ["--algorithm", algorithm, "--generations", str(generations), "--order", order, "--json"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=str(run.REPO), timeout=run.WORKER_TIMEOUT)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        return None, f"exit code {proc.returncode}: {proc.stderr.strip()[-2000:]}"
    return json.loads(lines[-1])["runs"][0], ""


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) == 2 and argv[0] == "--worker":
        return worker_main(argv[1])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--sample", type=int, default=150, help="assemblies compared one by one (150; 0: skip)")
    p.add_argument("--ga-generations", type=int, default=20, help="generations of the GA comparison (20; 0: skip)")
    p.add_argument("--generations", type=int, default=500, help="generations of our full GA trial (default 500)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--quick", action="store_true", help="--sample 40 --ga-generations 5, no full runs")
    p.add_argument("--no-full", action="store_true", help="skip our full searches")
    p.add_argument("--scaling", type=int, default=2000, help="assemblies of the 1-vs-2-worker run (0: skip)")
    p.add_argument("--no-ref", action="store_true", help="measure our side only")
    p.add_argument("--ref-python", default=None, help="reference interpreter (default $TIMOR_REF_PYTHON or ../refvenv)")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout (the table on stderr)")
    args = p.parse_args(argv)
    if args.quick:
        args.sample, args.ga_generations, args.no_full, args.scaling = 40, 5, True, 300
    out = sys.stderr if args.json else sys.stdout
    if not TASK_JSON.is_file():
        run.log(f"SKIPPED: the user-study task is not at {TASK_JSON}; nothing measured.")
        if args.json:
            print(json.dumps({"skipped": f"task missing: {TASK_JSON}"}))
        return 0
    report: dict = {"library": run.git_state(), "errors": {}, "settings": vars(args)}
    ref_python, ref_error = (None, "--no-ref given") if args.no_ref else run.resolve_ref_python(args.ref_python)
    if ref_error:
        report["errors"]["ref"] = ref_error

    yardstick = {
        "mode": "urdf",
        "modules_json": str(run.IMPROV_JSON),
        "assemblies": [list(a) for a in run.improv_assemblies()],
        "reps": 5,
    }
    if not args.no_full:
        for key, algorithm, order in FULL_RUNS:
            if key == "constrained" and ref_python and run.IMPROV_JSON.is_file():
                run.log("[ref] IDs -> URDF of a six-axis IMPROV robot (the machine's yardstick) ...")
                fig, err = call("ref", yardstick, ref_python)
                report["ref_urdf_before"] = fig
            run.log(f"[ours] timor paper exp2 --algorithm {algorithm} --order {order} ...")
            fig, err = ours_full(algorithm, args.generations, order)
            report[f"ours_full_{key}"] = fig
            if err:
                report["errors"][f"ours_full_{key}"] = err
            if key == "constrained_space" and report.get("ref_urdf_before"):
                fig, err = call("ref", yardstick, ref_python)
                report["ref_urdf_after"] = fig

    base = {"task": str(TASK_JSON), "db": str(ROBCO_JSON), "seed": args.seed}
    sides = ["ours"] + (["ref"] if ref_python else [])
    modes = []
    if args.sample:
        modes.append(("sample", {**base, "mode": "sample", "ids": sample_ids(args.sample, args.seed)}))
    if args.ga_generations:
        modes.append(("ga", {**base, "mode": "ga", "generations": args.ga_generations, "population": 20}))
    for mode, spec in modes:
        for side in sides:
            run.log(f"[{side}] {mode} ...")
            fig, err = call(side, spec, ref_python)
            report[f"{side}_{mode}"] = fig
            if err:
                report["errors"][f"{side}_{mode}"] = err
        if mode == "ga":  # the target is on 2 cores: ours can use both, the reference's GA runs in one process
            run.log("[ours] ga, 2 workers ...")
            fig, err = call("ours", {**spec, "workers": 2}, ref_python)
            report["ours_ga_2w"] = fig
            if err:
                report["errors"]["ours_ga_2w"] = err
    for workers in (1, 2) if args.scaling else ():
        run.log(f"[ours] exhaustive search over {args.scaling} assemblies with {workers} worker(s) ...")
        spec = {**base, "mode": "scaling", "workers": workers, "start": 100_000, "count": args.scaling}
        fig, err = call("ours", spec, ref_python)
        report[f"ours_scaling_{workers}"] = fig
        if err:
            report["errors"][f"ours_scaling_{workers}"] = err
    report["summary"] = summarise(report, args)
    print_table(report, out)
    if args.json:
        print(json.dumps(report))
    return 0


def summarise(r: dict, args) -> dict:
    s: dict = {}
    o, f = r.get("ours_sample"), r.get("ref_sample")
    if o:
        s["ours_ms_per_assembly"] = sum(o["times"]) / len(o["times"]) * 1e3
        s["ours_valid_in_sample"] = sum(o["valid"])
        s["ours_valid_but_refuted"] = o.get("valid_but_refuted", 0)
    if f:
        s["ref_ms_per_assembly"] = sum(f["times"]) / len(f["times"]) * 1e3
        s["ref_valid_in_sample"] = sum(f["valid"])
        s["ref_valid_but_colliding"] = f.get("valid_but_colliding", 0)
        s["ref_projected_full_seconds"] = s["ref_ms_per_assembly"] * FULL_COUNT / 1e3
    if o and f:
        s["constrained_ratio"] = s["ref_ms_per_assembly"] / s["ours_ms_per_assembly"]
    og, fg = r.get("ours_ga"), r.get("ref_ga")
    if og and fg:
        s["ga_ratio"] = fg["seconds"] / og["seconds"]
        if r.get("ours_ga_2w"):
            s["ga_ratio_2_workers"] = fg["seconds"] / r["ours_ga_2w"]["seconds"]
        s["ref_projected_ga_500_seconds"] = fg["seconds"] / args.ga_generations * 500
    w1, w2 = r.get("ours_scaling_1"), r.get("ours_scaling_2")
    if w1 and w2:
        s["speedup_2_workers"] = w1["seconds"] / w2["seconds"]
    full = r.get("ours_full_constrained")
    sticks = [r[k]["ms"] for k in ("ref_urdf_before", "ref_urdf_after") if r.get(k)]
    if sticks:
        s["ref_urdf_ms"] = sum(sticks) / len(sticks)
        for key in ("constrained", "constrained_space"):
            if r.get(f"ours_full_{key}"):
                s[f"{key}_seconds_scaled"] = r[f"ours_full_{key}"]["seconds"] * YARDSTICK_MS / s["ref_urdf_ms"]
    if full and f:
        s["full_constrained_ratio_vs_ref_projection"] = s["ref_projected_full_seconds"] / full["seconds"]
    return s


def print_table(r: dict, out) -> None:
    s = r["summary"]

    def line(text: str) -> None:
        print(text, file=out)

    line("experiment 2: robco_like + user_study.json")
    for key, _, order in FULL_RUNS:
        fig = r.get(f"ours_full_{key}")
        if fig:
            ids = " ".join(fig["best_ids"] or ["-"])
            label = f"{key.split('_')[0]} ({order})" if key != "ga" else "ga"
            line(
                f"  ours, full {label:<18} {fig['seconds']:8.1f} s  {fig['evaluations']:>7} evaluated  best {ids}"
                f" {fig['best_mass']} kg  verified={fig['ok']}"
            )
    if "ref_urdf_ms" in s:
        line(f"    the reference's IDs -> URDF (six-axis IMPROV, run.py case 1): {s['ref_urdf_ms']:.1f} ms in this run")
    for key in ("constrained", "constrained_space"):
        if f"{key}_seconds_scaled" in s:
            fig = r[f"ours_full_{key}"]
            line(
                f"    constrained search, {fig['settings'].get('order', '?')} order: {fig['seconds']:.1f} s scale to"
                f" {s[f'{key}_seconds_scaled']:.1f} s at {YARDSTICK_MS} ms (target < {CONSTRAINED_TARGET_S:g} s on"
                f" {fig.get('workers', '?')} worker(s))"
            )
    if "ours_ms_per_assembly" in s:
        line(f"  sample of {len(r['ours_sample']['times'])} assemblies, filter pipeline without bound:")
        line(
            f"    ours {s['ours_ms_per_assembly']:9.2f} ms/assembly   valid {s['ours_valid_in_sample']}"
            f" (of which {s['ours_valid_but_refuted']} fail the independent check)"
        )
    if "ref_ms_per_assembly" in s:
        line(
            f"    ref  {s['ref_ms_per_assembly']:9.2f} ms/assembly   valid {s['ref_valid_in_sample']}"
            f" (of which {s['ref_valid_but_colliding']} collide at the reference's own solution)"
        )
        line(f"    ratio {s['constrained_ratio']:.1f}x (target >= 10x)")
        line(f"    ref projected over all {FULL_COUNT}: {s['ref_projected_full_seconds'] / 60:.1f} min")
    for label, key in (("ours", "ours_ga"), ("ours 2w", "ours_ga_2w"), ("ref", "ref_ga")):
        g = r.get(key)
        if g:
            line(
                f"  GA {label:<7} {g['seconds']:8.1f} s  {g['evaluated']:>5} fitness evaluations"
                f"  best {' '.join(g['best_ids'] or ['-'])} {g['best_mass']}"
            )
    if "ga_ratio" in s:
        both = f", 2 workers {s['ga_ratio_2_workers']:.1f}x" if "ga_ratio_2_workers" in s else ""
        line(f"    ratio, 1 worker {s['ga_ratio']:.1f}x{both} (target on 2 cores >= 5x)")
    if "speedup_2_workers" in s:
        w1, w2 = r["ours_scaling_1"], r["ours_scaling_2"]
        line(
            f"  exhaustive search, {w1['evaluations']} assemblies: 1 worker {w1['seconds']:.1f} s,"
            f" 2 workers {w2['seconds']:.1f} s: speed-up {s['speedup_2_workers']:.2f}x"
        )
    for k, v in r["errors"].items():
        line(f"  ERROR {k}: {v}")


if __name__ == "__main__":
    sys.exit(main())
