"""The ``timor`` command line: module sets, URDF export, forward kinematics, tasks, per-goal feedback, demo,
the paper's experiments.

Errors in the user's input print one clear line on stderr (file, JSON path, value) and exit 2;
no traceback.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import os
import re
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from timor_core.cli.args import Parser, add_robot_arguments, json_text, resolve_robot_arguments
from timor_core.cli.args import load_db as _load_db
from timor_core.cli.args import name as _name
from timor_core.cli.args import nonnegative_float as _nonnegative_float
from timor_core.cli.args import output_folder as _output_folder
from timor_core.cli.args import positive_int as _positive_int
from timor_core.cli.args import scheduler_address as _scheduler_address
from timor_core.cli.args import seed as _seed
from timor_core.cli.args import serial_assembly as _assembly
from timor_core.cli.args import workers as _workers
from timor_core.errors import InputError, TimorError

__all__ = ["main"]


def _cmd_db_info(args: argparse.Namespace) -> int:
    db = _load_db(args.db)
    info = {
        "name": db.name,
        "source": str(db.source) if db.source else None,
        "ignore_collisions": db.ignore_collisions,
        "modules": len(db),
        "bases": [m.id for m in db.bases],
        "end_effectors": [m.id for m in db.end_effectors],
        "joints": [m.id for m in db.joints],
        "links": [m.id for m in db.links],
        "possible_connections": len(db.possible_connections) // 2,
    }
    if args.json:
        info["module_details"] = [
            {"id": m.id, "name": m.name, "dof": m.dof, "mass": m.mass, "cost": m.cost, "connectors": list(m.connectors)}
            for m in db
        ]
        print(json_text(info, indent=2))
        return 0
    print(f"module set {db.name!r} ({len(db)} modules) from {info['source']}")
    print(f"ignore_collisions: {db.ignore_collisions}; possible connections: {info['possible_connections']}")
    print(f"{'ID':<12} {'name':<22} {'dof':>3} {'mass/kg':>8} {'cost':>8}  connectors")
    for m in db:
        conns = ", ".join(f"{c.id}({c.gender},{c.type})" for c in m.connectors.values())
        print(f"{m.id:<12} {m.name:<22} {m.dof:>3} {m.mass:>8.3f} {m.cost:>8.2f}  {conns}")
    return 0


def _report_problems(args: argparse.Namespace, problems: list, ok_text: str, warnings: list | None = None) -> int:
    """Print a validation outcome (JSON with --json, else one line each); exit 1 if anything is wrong."""
    warnings = warnings or []
    if args.json:
        out = {"file": args.file, "valid": not problems, "errors": [str(e) for e in problems]}
        out["warnings"] = [str(w) for w in warnings]
        print(json_text(out, indent=2))
        return 1 if problems else 0
    for w in warnings:
        print(f"warning: {w}", file=sys.stderr)
    if problems:
        for e in problems:
            print(f"error: {e}", file=sys.stderr)
    else:
        print(ok_text + (f" ({len(warnings)} warning{'s' * (len(warnings) != 1)})" if warnings else ""))
    return 1 if problems else 0


def _cmd_db_validate(args: argparse.Namespace) -> int:
    from timor_core.model.validation import check_db_file

    path = Path(args.file)
    report = check_db_file(path / "modules.json" if path.is_dir() else path)
    warnings = [] if args.strict else report.warnings
    return _report_problems(args, report.problems(args.strict), f"{args.file}: valid", warnings)


def _cmd_urdf(args: argparse.Namespace) -> int:
    if args.ros2_control or args.plugin:
        from timor_core.cli.export import cmd_urdf_ros2_control

        return cmd_urdf_ros2_control(args)
    assembly = _assembly(args)
    text = assembly.to_urdf(
        args.name, prefix=args.prefix, mesh_uri=args.mesh_uri, package=args.package, write_to=args.output
    )
    if args.output is None:
        sys.stdout.write(text)
    else:
        print(f"wrote {args.output} ({assembly.dof} DOF, {len(text)} bytes)", file=sys.stderr)
    return 0


def _parse_q(text: str | None, dof: int, option: str = "--q") -> np.ndarray:
    """Joint values from a comma-separated option value (zeros if absent), checked for count and finiteness."""
    if text is None:
        return np.zeros(dof)
    try:
        q = np.array([float(v) for v in text.replace(" ", "").split(",") if v != ""])
    except ValueError:
        raise InputError(f"{option} must be comma-separated numbers", value=text) from None
    if q.shape != (dof,):
        raise InputError(f"{option} needs {dof} values for this {dof}-DOF robot, got {q.size}", value=text)
    if not np.all(np.isfinite(q)):
        raise InputError(f"{option} values must be finite", value=text)
    return q


def _cmd_fk(args: argparse.Namespace) -> int:
    robot = _assembly(args).robot
    q = _parse_q(args.q, robot.dof)
    out: dict = {"tcp": robot.fk(q).tolist(), "tcp_frame": robot.tcp_name}
    if args.all:
        out["frames"] = {k: v.tolist() for k, v in robot.fk(q, kind="full").items()}
    try:
        text = json.dumps(out, allow_nan=False)
    except ValueError:  # e.g. a prismatic joint at 1e308: the pose overflows
        raise InputError("--q gives a pose that is not finite (joint values too large)", value=args.q) from None
    print(text)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from timor_core.demo import run_demo

    task = None if args.no_task else "pick_and_place"
    run_demo(db_name=args.db, modules=args.modules, out_dir=Path(args.out), task=task)
    return 0


def _cmd_task_validate(args: argparse.Namespace) -> int:
    from timor_core.task.solve import check_task_file

    task, problems = check_task_file(args.file, skip_missing_assets=args.skip_missing_assets)
    if problems:
        ok = ""
    else:
        assert task is not None  # check_task_file returns a task exactly when it finds no problems
        ok = f"{args.file}: valid (task {task.id!r}: {len(task.goals)} goals, {len(task.obstacles)} obstacles)"
        unknown = sorted(k for k in task.extra if not k.startswith("_"))
        if unknown:  # kept for a lossless round trip, but no task reader uses them: often the wrong file
            hint = " (is this a module file?)" if {"bodies", "joints"} & set(unknown) else ""
            print(f"warning: {args.file}: unknown top-level keys {unknown}{hint}", file=sys.stderr)
    return _report_problems(args, problems, ok)


def _cmd_task_info(args: argparse.Namespace) -> int:
    from timor_core.task.solve import format_task_info, load_task, task_info

    info = task_info(load_task(args.file, args.skip_missing_assets))
    print(json_text(info, indent=2) if args.json else format_task_info(info))
    return 0


def _cmd_solve(args: argparse.Namespace) -> int:
    from timor_core.task.solve import assembly_cost, format_feedback, load_task, solve_feedback

    cost = assembly_cost(args.cost)
    task = load_task(args.file, args.skip_missing_assets)
    assembly = _assembly(args)
    if args.start is not None and not args.solution:
        raise InputError("--start needs --solution (it is where the planned motion starts)", value=args.start)
    if args.solution:
        from timor_core.common.fileio import output_target, refuse_overwriting_inputs

        refuse_overwriting_inputs(args.solution, args.file, option="--solution")
        output_target(args.solution)
    start = None if args.start is None else _parse_q(args.start, assembly.dof, "--start")
    result = solve_feedback(task, assembly, seed=args.seed, cost=cost)
    print(json_text(result) if args.json else format_feedback(task, assembly, result, cost.descriptor()))
    if args.solution:
        from timor_core.task.point_to_point import solve_point_to_point

        if not all(g["reached"] for g in result["goals"]):
            print("error: no solution written: not every goal is reached", file=sys.stderr)
            return 1
        solution = solve_point_to_point(task, assembly, rng=args.seed, cost_function=cost, q_start=start)
        path = solution.to_json_file(args.solution)
        verdict = (
            "valid"
            if solution.valid
            else "NOT valid: " + "; ".join(solution.goal_reason(g) for g in task.goals if not solution.achieved(g))
        )
        print(
            f"wrote {path}: {len(solution.trajectory.t)} samples, {solution.trajectory.t[-1]:.2f} s, {verdict}",
            file=sys.stderr,
        )
    return 0


def _cmd_paper_exp1(args: argparse.Namespace) -> int:
    from timor_core.paper.experiments import exp1

    result = exp1(_load_db(args.db), limit=args.limit)
    print(json_text(result.to_json()) if args.json else result.summary())
    return 0


def _cmd_paper_exp2(args: argparse.Namespace) -> int:
    from timor_core.paper.experiments import exp2
    from timor_core.task.solve import load_task

    db = _load_db(args.db)
    task = load_task(args.task, False)
    algorithms = ("constrained", "ga") if args.algorithm == "both" else (args.algorithm,)
    result = exp2(
        db,
        task,
        algorithms=algorithms,
        workers=args.workers,
        generations=args.generations,
        population=args.population,
        trials=args.trials,
        seed=args.seed,
        order=args.order,
        limit=args.limit,
        progress=not args.no_progress and not args.json,
    )
    if args.output:
        out = Path(args.output)
        out.mkdir(parents=True, exist_ok=True)
        for run in result.runs:
            if run.result is not None:  # exp2 keeps the search result of every run
                run.result.to_json_file(out / f"{run.algorithm}.json")
    print(json_text(result.to_json()) if args.json else result.summary())
    return 0 if all(run.ok for run in result.runs) else 1


def _cmd_search(args: argparse.Namespace) -> int:
    from timor_core.search import (
        Budget,
        ExhaustiveSearch,
        FilterConfig,
        GeneticSearch,
        Optimizer,
        RandomSearch,
        load_space,
    )
    from timor_core.task.solve import load_task

    db = _load_db(args.db)
    task = load_task(args.task, False)
    if not task.goals:
        raise InputError(f"the task {task.id!r} has no goals: nothing to search for", value=args.task)
    if not db.bases or not db.end_effectors:
        raise InputError(f"the module set {db.name!r} needs a base and an end effector module", value=args.db)
    config = FilterConfig(seed=args.seed)
    budget = Budget(args.budget_evals, args.budget_seconds)
    progress = not args.no_progress
    optimizer: Optimizer
    if args.algorithm == "ga":
        if args.space != "auto":
            raise InputError("--space shapes the exhaustive and random search; the GA's is set by --max-dof/--min-dof")
        if args.min_dof > args.max_dof:
            raise InputError(
                f"--min-dof ({args.min_dof}) must not exceed --max-dof ({args.max_dof})", value=args.min_dof
            )
        optimizer = GeneticSearch(
            db,
            cost=args.cost,
            max_dof=args.max_dof,
            min_dof=args.min_dof,
            generations=args.generations,
            population=args.population,
            seed=args.seed,
            trials=args.trials,
            early_stop=args.early_stop,
            filters=config,
            workers=args.workers,
            progress=progress,
        )
    elif args.algorithm == "random":
        optimizer = RandomSearch(
            load_space(args.space, db), args.cost, config, seed=args.seed, workers=args.workers, progress=progress
        )
    else:
        evaluator = None
        if args.scheduler or args.resume:
            from timor_core.search import DaskEvaluator

            checkpoint = args.checkpoint or (f"{args.output}.checkpoint.json" if args.output else None)
            evaluator = DaskEvaluator(
                None if args.scheduler in (None, "local") else args.scheduler,
                n_workers=args.workers or 2,
                checkpoint=checkpoint,
                resume=args.resume,
            )
        optimizer = ExhaustiveSearch(
            load_space(args.space, db),
            args.cost,
            config,
            workers=args.workers,
            progress=progress,
            evaluator=evaluator,
        )
    result = optimizer.optimize(task, db, budget)
    if args.output:
        result.to_json_file(args.output)
    print(result.summary())
    return 0


def _cmd_result_show(args: argparse.Namespace) -> int:
    from timor_core.search import SearchResult

    result = SearchResult.from_json_file(args.file)
    if args.json:
        print(json_text(result.to_json_data(), indent=1))
        return 0
    print(result.summary())
    for gid, g in result.best_goals.items():
        print(f"goal {gid}: {'reached' if g.success else 'NOT reached'}{'' if g.success else f' ({g.reason})'}")
    return 0


def _parser() -> argparse.ArgumentParser:
    p = Parser(prog="timor", description="Modular reconfigurable robots: modules to models.")
    p.add_argument(
        "-v", "--verbose", action="count", default=0, help="show warnings about the data (-vv: also progress details)"
    )
    sub = p.add_subparsers(dest="command", required=True)

    db = sub.add_parser("db", help="inspect and validate module sets")
    dbs = db.add_subparsers(dest="db_command", required=True)
    info = dbs.add_parser("info", help="summarise a module set (file, folder or embedded name)")
    info.add_argument("db", help="modules.json, its folder, or an embedded set name")
    info.add_argument("--json", action="store_true", help="print JSON")
    info.set_defaults(func=_cmd_db_info)
    val = dbs.add_parser("validate", help="check a modules.json; list every error with its JSON path")
    val.add_argument("file", help="modules.json or its folder")
    val.add_argument("--json", action="store_true", help="print JSON")
    val.add_argument(
        "--strict", action="store_true", help="physically impossible data the loader accepts (inertia) is an error"
    )
    val.set_defaults(func=_cmd_db_validate)

    urdf = sub.add_parser("urdf", help="write the URDF of a serial assembly")
    add_robot_arguments(urdf)
    urdf.add_argument("-o", "--output", help="output file (default: stdout); written atomically")
    urdf.add_argument("--name", type=_name, help="robot name (default: set name + assembly hash)")
    urdf.add_argument("--prefix", default="", help="prefix for every link and joint name")
    urdf.add_argument("--mesh-uri", choices=("file", "package", "relative", "path"), default="file")
    urdf.add_argument("--package", type=_name, help="package name for package:// mesh URIs (default: the set's name)")
    urdf.add_argument("--ros2-control", action="store_true", help="add a <ros2_control> block (mock hardware)")
    urdf.add_argument("--plugin", help="ros2_control hardware plugin; implies --ros2-control")
    urdf.set_defaults(func=_cmd_urdf)

    fk = sub.add_parser("fk", help="forward kinematics of a serial assembly, as JSON")
    add_robot_arguments(fk)
    fk.add_argument("--q", help="joint values, comma-separated (default: zeros)")
    fk.add_argument("--all", action="store_true", help="also print every frame")
    fk.set_defaults(func=_cmd_fk)

    demo = sub.add_parser(
        "demo", help="build a robot from the embedded set, then find, verify, plan and export a robot for a task"
    )
    demo.add_argument("--db", default="geometric_primitive_modules")
    demo.add_argument("--modules", nargs="+", default=["base", "J2", "i_45", "J2", "J2", "eef"])
    demo.add_argument("--out", type=_output_folder, default="build/demo", help="output folder")
    demo.add_argument("--no-task", action="store_true", help="skip the search and solution for the embedded task")
    demo.set_defaults(func=_cmd_demo)

    task = sub.add_parser("task", help="inspect and validate CoBRA task files")
    tasks = task.add_subparsers(dest="task_command", required=True)
    tval = tasks.add_parser("validate", help="check a task file; list every error with its JSON path")
    tinfo = tasks.add_parser("info", help="summarise a task: goals, obstacles, constraints")
    for sp in (tval, tinfo):
        sp.add_argument("file", help="task .json file")
        sp.add_argument("--json", action="store_true", help="print JSON")
        sp.add_argument("--skip-missing-assets", action="store_true", help="log and skip absent obstacle meshes")
    tval.set_defaults(func=_cmd_task_validate)
    tinfo.set_defaults(func=_cmd_task_info)

    solve = sub.add_parser("solve", help="per-goal feedback: can a serial assembly reach each goal of a task?")
    solve.add_argument("file", help="task .json file")
    solve.add_argument("--db", required=True, help="modules.json, its folder, or an embedded set name")
    solve.add_argument("--modules", nargs="+", required=True, help="module IDs of a serial chain, base first")
    solve.add_argument("--json", action="store_true", help='print {"goals": [...], "cost": ...}')
    solve.add_argument("--seed", type=_seed, default=0, help="random seed of the inverse kinematics (default 0)")
    solve.add_argument("--cost", default="mass", help="cost descriptor of assembly terms (mass, numJ, moduleCost)")
    solve.add_argument("--skip-missing-assets", action="store_true", help="log and skip absent obstacle meshes")
    solve.add_argument(
        "--solution", help="also plan collision-free motions through the goals; write the CoBRA solution JSON here"
    )
    solve.add_argument(
        "--start",
        metavar="Q",
        help="with --solution: comma-separated joint values (rad or m) the motion starts from (default: the first "
        "goal's configuration)",
    )
    solve.set_defaults(func=_cmd_solve)

    paper = sub.add_parser("paper", help="experiments of the Timor paper")
    papers = paper.add_subparsers(dest="paper_command", required=True)
    exp1 = papers.add_parser("exp1", help="URDFs of all 32,768 robots of the Science Robotics 2019 IMPROV space, timed")
    exp1.add_argument("--db", required=True, help="the IMPROV modules.json (or its folder)")
    exp1.add_argument("--json", action="store_true", help='print {"count", "seconds", "ms_per_assembly"}')
    exp1.add_argument("--limit", type=_positive_int, help="stop after the first N assemblies (quick runs)")
    exp1.set_defaults(func=_cmd_paper_exp1)
    exp2 = papers.add_parser(
        "exp2", help="lightest RobCo-like robot for the user-study task: constrained search and GA, timed and verified"
    )
    exp2.add_argument("--task", required=True, help="the user-study task (user_study.json)")
    exp2.add_argument("--db", default="robco_like", help="module set (default: the embedded robco_like)")
    exp2.add_argument("--algorithm", choices=("both", "constrained", "ga"), default="both")
    exp2.add_argument("--workers", type=_workers, help="processes (default: all cores)")
    exp2.add_argument("--generations", type=_positive_int, default=500, help="GA generations (default 500)")
    exp2.add_argument("--population", type=_positive_int, default=20, help="GA population (default 20)")
    exp2.add_argument("--trials", type=_positive_int, default=1, help="GA trials (default 1)")
    exp2.add_argument("--seed", type=_seed, default=0, help="seed of the GA and the IK (default 0)")
    exp2.add_argument("--order", choices=("space", "cost"), default="space", help="constrained search order")
    exp2.add_argument("--limit", type=_positive_int, help="constrained search: only the first N assemblies")
    exp2.add_argument("--no-progress", action="store_true", help="no progress bar")
    exp2.add_argument("--json", action="store_true", help="print the figures as JSON")
    exp2.add_argument(
        "-o", "--output", type=_output_folder, help="folder for the full search results (constrained.json, ga.json)"
    )
    exp2.set_defaults(func=_cmd_paper_exp2)

    search = sub.add_parser("search", help="search the assembly that best serves a task (exhaustive, random, GA)")
    search.add_argument("task", help="task .json file")
    search.add_argument("--db", required=True, help="modules.json, its folder, or an embedded set name")
    search.add_argument("--algorithm", choices=("exhaustive", "ga", "random"), default="exhaustive")
    search.add_argument(
        "--space",
        default="auto",
        help="search space of the exhaustive and random search: exp2, science2019, auto (by the module set), or a "
        'JSON file of SpaceOptions such as {"dof_max": 3, "modules": ["J", "L_100"], "first_is_joint": true}',
    )
    search.add_argument("--workers", type=_workers, help="processes (default: all cores)")
    search.add_argument("--budget-evals", type=_positive_int, help="stop after N evaluated assemblies")
    search.add_argument("--budget-seconds", type=_nonnegative_float, help="stop after S seconds")
    search.add_argument("--seed", type=_seed, default=0, help="seed of the search and of the IK (default 0)")
    search.add_argument("--generations", type=_positive_int, default=50, help="GA generations (default 50)")
    search.add_argument("--population", type=_positive_int, default=20, help="GA population (default 20)")
    search.add_argument("--trials", type=_positive_int, default=1, help="independent GA runs (default 1)")
    search.add_argument("--early-stop", type=_positive_int, help="GA: stop after N generations without change")
    search.add_argument("--max-dof", type=_positive_int, default=6, help="GA: most degrees of freedom (default 6)")
    search.add_argument("--min-dof", type=_positive_int, default=1, help="GA: fewest degrees of freedom (default 1)")
    search.add_argument("--cost", default="mass", help="cost descriptor of assembly terms (mass, numJ, moduleCost)")
    search.add_argument("--no-progress", action="store_true", help="no progress bar")
    search.add_argument("-o", "--output", help="write the result as JSON")
    search.add_argument(
        "--scheduler",
        type=_scheduler_address,
        help="exhaustive search on Dask distributed: tcp://host:8786, or 'local' for a LocalCluster",
    )
    search.add_argument("--checkpoint", help="Dask: write progress here (default: OUTPUT.checkpoint.json)")
    search.add_argument("--resume", help="Dask: continue from this checkpoint file")
    search.set_defaults(func=_cmd_search)

    res = sub.add_parser("result", help="inspect search results")
    ress = res.add_subparsers(dest="result_command", required=True)
    show = ress.add_parser("show", help="best assembly, cost, per-goal status and funnel of a result.json")
    show.add_argument("file", help="result .json file")
    show.add_argument("--json", action="store_true", help="print the result JSON")
    show.set_defaults(func=_cmd_result_show)
    for name in _EXTENSIONS:
        importlib.import_module(name).register(sub)
    return p


_EXTENSIONS: tuple[str, ...] = (
    "timor_core.cli.export",
    "timor_core.cli.ros",
    "timor_core.cli.view",
    "timor_core.cli.configurator",
)
"""Modules that add their own subcommands: each defines ``register(subparsers) -> None``.

Each area (ROS artefacts, ROS nodes, visualization) owns its commands in its own module and keeps this file short.
"""


_NUMBER_LIST = re.compile(r"-[0-9.]")
_VALUE_OPTIONS = ("--q", "--start")
"""Options whose value may start with a minus sign (comma-separated joint values such as -0.1,0.2)."""


def _join_negative_values(argv: list[str]) -> list[str]:
    """``--q -0.1,0.2`` -> ``--q=-0.1,0.2``: argparse would take ``-0.1,0.2`` for an option."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        token = argv[i]
        if token in _VALUE_OPTIONS and i + 1 < len(argv) and _NUMBER_LIST.match(argv[i + 1]):
            out.append(f"{token}={argv[i + 1]}")
            i += 2
            continue
        out.append(token)
        i += 1
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``timor`` console script.

    Exit codes: 0 success, 1 a check found problems, 2 bad input (one ``error:`` line naming the file, option
    or value), 3 an internal error (a bug: one line, the traceback with -v), 130 interrupted.
    """
    parser = _parser()
    args = parser.parse_args(_join_negative_values(list(sys.argv[1:] if argv is None else argv)))
    resolve_robot_arguments(args, getattr(args, "subparser", parser))
    level = (logging.ERROR, logging.WARNING, logging.INFO)[min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s: %(message)s")
    try:
        return int(args.func(args) or 0)
    except TimorError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`timor ... | head`): stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not complain either
        return 141
    except OSError as exc:  # unusable output paths and the like: say what and where, no traceback
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"error: cannot access{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return 130
    except (RecursionError, MemoryError) as exc:
        print(f"error: input too large or too deeply nested ({type(exc).__name__})", file=sys.stderr)
        return 2
    except Exception as exc:  # noqa: BLE001 — last resort: a bug must not print a traceback at a user
        if args.verbose:
            traceback.print_exc()
        print(
            f"error: internal error: {type(exc).__name__}: {exc} (run with -v for the traceback; please report it)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
