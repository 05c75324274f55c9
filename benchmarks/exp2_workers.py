#!/usr/bin/env python3
"""The worker processes of ``exp2.py`` (one per side and mode): our side under this interpreter, the reference's
under its own (``run.resolve_ref_python``) with its offline shim. Read ``exp2.py``'s docstring for what each
measures and how both sides are kept alike (warm-up, task, filters, bound, process count)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import run  # noqa: E402  (the shared benchmark helpers; stdlib-only at import time)

ROBCO_JSON = run.REPO / "src" / "timor_core" / "timor_core" / "data" / "robco_like" / "modules.json"
PENALTY = 1e6
MAX_DOF = 6
SLOTS = 13
PROBE = ["base", "J", "gripper"]  # a robot of the set, to see whether the reference's length filter takes the task


def ours_sample(spec: dict) -> dict:
    """Our filter chain on every sampled assembly (no bound), timed per assembly."""
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.search import FilterConfig
    from timor_core.search.evaluation.evaluate import evaluate, load_db, load_task
    from timor_core.task.feedback import verify_goal_configurations

    task, db = load_task(spec.get("sample_task", spec["task"])), load_db(spec["db"])
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
    from timor_core.search.evaluation.evaluate import load_task

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
    """The reference's own default filters on every sampled assembly (its length filter included if it accepts the
    task), after one untimed warm-up as on our side."""
    ModuleAssembly, db, task, filters, run_filters, length_filter = _ref_setup(spec)
    try:  # warm-up (imports, caches), not timed, as on our side
        run_filters(filters, ModuleAssembly.from_serial_modules(db, spec["ids"][0]), task)
    except Exception:  # noqa: BLE001 - the warm-up assembly may be one the reference cannot check
        pass
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
    return {
        "times": times,
        "valid": valid,
        "valid_but_colliding": confirmed.count(False),
        "length_filter": length_filter,
        "warm_up": True,
    }


def ours_ga(spec: dict) -> dict:
    from timor_core.search import FilterConfig, GeneticSearch
    from timor_core.search.evaluation.evaluate import load_db, load_task

    task, db = load_task(spec.get("sample_task", spec["task"])), load_db(spec["db"])
    ga = GeneticSearch(
        db,
        "mass",
        n_slots=SLOTS,
        max_dof=MAX_DOF,
        generations=spec["generations"],
        population=spec["population"],
        seed=spec["seed"],
        filters=FilterConfig(seed=spec["seed"], bound=spec.get("bound", False)),  # no bound: the reference's work
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

    ModuleAssembly, db, task, filters, run_filters, _ = _ref_setup(spec)  # imports the reference (offline shim)
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
    task = Task.from_json_file(Path(spec.get("sample_task", spec["task"])))
    filters = list(default_filters(task))
    length_filter = True
    try:  # [0], the module-length filter, needs a base constraint: does it take this task?
        run_filters(filters[:1], ModuleAssembly.from_serial_modules(db, PROBE), task)
    except (AttributeError, ValueError):  # no base constraint; or a base tolerance it cannot size (ValueError for
        filters, length_filter = filters[1:], False  # the user study's composed one, 1.1.1's _get_task_required_length)
    return ModuleAssembly, db, task, filters, run_filters, length_filter


WORKERS = {
    ("ours", "scaling"): ours_scaling,
    ("ours", "sample"): ours_sample,
    ("ref", "sample"): ref_sample,
    ("ours", "ga"): ours_ga,
    ("ref", "ga"): ref_ga,
    ("ref", "urdf"): ref_urdf,
}


def worker_main(side: str) -> int:
    spec = json.loads(sys.stdin.read())
    sys.stdout.write(json.dumps(WORKERS[side, spec["mode"]](spec)) + "\n")
    return 0
