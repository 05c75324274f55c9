"""The ``timor`` command line: module sets, URDF export, forward kinematics, tasks, per-goal feedback, demo
(search, results and the paper's experiments are in ``timor_core.cli.search``).

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

from timor_core.cli.args import (
    Parser,
    add_mesh_arguments,
    add_robot_arguments,
    embedded_db,
    json_text,
    refuse_outputs_over_inputs,
    refuse_unwritable_outputs,
    relative_mesh_warnings,
    resolve_robot_arguments,
)
from timor_core.cli.args import cost as cost_type
from timor_core.cli.args import load_db as _load_db
from timor_core.cli.args import name as _name
from timor_core.cli.args import output_folder as _output_folder
from timor_core.cli.args import seed as _seed
from timor_core.cli.args import serial_assembly as _assembly
from timor_core.cli.export import cmd_urdf_ros2_control
from timor_core.common import compiled
from timor_core.errors import InputError, TimorError, one_line
from timor_core.limits import check_environment

__all__ = ["main"]


def _cmd_db_info(args: argparse.Namespace) -> int:
    db = _load_db(args.db, None)  # positional
    info = {
        "name": db.name,
        "source": str(db.source) if db.source else None,
        "ignore_collisions": db.ignore_collisions,
        "modules": len(db),
        "bases": [m.id for m in db.bases],
        "end_effectors": [m.id for m in db.end_effectors],
        "joints": [m.id for m in db.joints],
        "links": [m.id for m in db.links],
        "possible_connections": db.possible_connection_count // 2,
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
        print(f"warning: {one_line(str(w))}", file=sys.stderr)
    if problems:
        for e in problems:
            print(f"error: {one_line(str(e))}", file=sys.stderr)
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
        return cmd_urdf_ros2_control(args)
    assembly = _assembly(args)
    with relative_mesh_warnings():
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

    embedded_db(args.db)  # the demo runs on an embedded set: a misspelt --db is named as the option's
    task = None if args.no_task else "pick_and_place"
    run_demo(db_name=args.db, modules=args.modules, out_dir=Path(args.out), task=task)
    return 0


def _cmd_task_validate(args: argparse.Namespace) -> int:
    from timor_core.task.feedback import check_task_file
    from timor_core.task.unknown_fields import unknown_fields

    task, problems = check_task_file(args.file, skip_missing_assets=args.skip_missing_assets)
    warnings: list[str] = []
    if problems:
        ok = ""
    else:
        assert task is not None  # check_task_file returns a task exactly when it finds no problems
        ok = f"{args.file}: valid (task {task.id!r}: {len(task.goals)} goals, {len(task.obstacles)} obstacles)"
        unknown = sorted(k for k in task.extra if not k.startswith("_"))
        if unknown:  # kept for a lossless round trip, but no task reader uses them: often the wrong file
            hint = " (is this a module file?)" if {"bodies", "joints"} & set(unknown) else ""
            warnings.append(f"{args.file}: unknown top-level keys {unknown}{hint}")
        warnings += [f"{args.file}: {line}" for line in unknown_fields(task)]  # a typo reads as the field left out
    if args.strict:  # as db validate --strict: a warning fails the file
        return _report_problems(args, [*map(str, problems), *warnings], ok)
    return _report_problems(args, problems, ok, warnings)


def _cmd_task_info(args: argparse.Namespace) -> int:
    from timor_core.task.feedback import format_task_info, load_task, task_info

    info = task_info(load_task(args.file, args.skip_missing_assets))
    print(json_text(info, indent=2) if args.json else format_task_info(info))
    return 0


def _cmd_solve(args: argparse.Namespace) -> int:
    from timor_core.task.feedback import assembly_cost, format_feedback, load_task, solve_feedback

    cost = assembly_cost(args.cost)
    task = load_task(args.file, args.skip_missing_assets)
    assembly = _assembly(args)
    if args.start is not None and not args.solution:
        raise InputError("--start needs --solution (it is where the planned motion starts)", value=args.start)
    if args.solution:
        from timor_core.common.fileio import output_target

        output_target(args.solution)  # an input is refused before any command runs (refuse_outputs_over_inputs)
    start = None if args.start is None else _parse_q(args.start, assembly.dof, "--start")
    result = solve_feedback(task, assembly, seed=args.seed, cost=cost)
    print(json_text(result) if args.json else format_feedback(task, assembly, result, cost.descriptor()))
    if args.solution:
        from timor_core.task.point_to_point import solve_point_to_point

        if not all(g["reached"] for g in result["goals"]):
            print("error: no solution written: not every goal is reached", file=sys.stderr)
            return 1
        from timor_core.kinematics.planning import PlannerConfig

        solution = solve_point_to_point(
            task, assembly, rng=args.seed, cost_function=cost, q_start=start,
            planner_config=PlannerConfig(planner=args.planner),
        )  # fmt: skip
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


def _parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The parser for ``argv``: with other packages' subcommands (``cli.plugins``) unless ``argv`` runs one of
    timor's own, for which looking up the installed packages' entry points costs about 40 ms for nothing."""
    p, sub = _commands(plugins=False)
    command = next((a for a in argv if not a.startswith("-")), None)  # the top level's only options are flags
    return p if command in sub.choices else _commands(plugins=True)[0]


def _commands(plugins: bool) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction]:
    p = Parser(prog="timor", description="Modular reconfigurable robots: modules to models.")
    p.add_argument(
        "-v", "--verbose", action="count", default=0, help="show warnings about the data (-vv: also progress details)"
    )
    sub = p.add_subparsers(dest="command", required=True)
    _add_db_commands(sub)
    _add_robot_commands(sub)
    _add_task_commands(sub)
    for name in _EXTENSIONS:
        if plugins or name != "timor_core.cli.plugins":
            importlib.import_module(name).register(sub)
    return p, sub


def _add_db_commands(sub: argparse._SubParsersAction) -> None:
    """``timor db info`` and ``timor db validate``."""
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
        "--strict", action="store_true", help="warnings are errors: impossible inertia, fields no reader uses"
    )
    val.set_defaults(func=_cmd_db_validate)


def _add_robot_commands(sub: argparse._SubParsersAction) -> None:
    """``timor urdf``, ``timor fk`` and ``timor demo``."""
    urdf = sub.add_parser("urdf", help="write the URDF of a serial assembly")
    add_robot_arguments(urdf)
    urdf.add_argument("-o", "--output", help="output file (default: stdout); written atomically")
    urdf.add_argument("--name", type=_name, help="robot name (default: set name + assembly hash)")
    urdf.add_argument("--prefix", default="", help="prefix for every link and joint name")
    add_mesh_arguments(urdf)
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


def _add_task_commands(sub: argparse._SubParsersAction) -> None:
    """``timor task validate|info`` and ``timor solve``."""
    task = sub.add_parser("task", help="inspect and validate CoBRA task files")
    tasks = task.add_subparsers(dest="task_command", required=True)
    tval = tasks.add_parser("validate", help="check a task file; list every error with its JSON path")
    tinfo = tasks.add_parser("info", help="summarise a task: goals, obstacles, constraints")
    for sp in (tval, tinfo):
        sp.add_argument("file", help="task .json file")
        sp.add_argument("--json", action="store_true", help="print JSON")
        sp.add_argument("--skip-missing-assets", action="store_true", help="log and skip absent obstacle meshes")
    tval.add_argument("--strict", action="store_true", help="warnings are errors: fields no reader uses")
    tval.set_defaults(func=_cmd_task_validate)
    tinfo.set_defaults(func=_cmd_task_info)

    solve = sub.add_parser("solve", help="per-goal feedback: can a serial assembly reach each goal of a task?")
    solve.add_argument("file", help="task .json file")
    solve.add_argument("--db", required=True, help="modules.json, its folder, or an embedded set name")
    solve.add_argument("--modules", nargs="+", required=True, help="module IDs of a serial chain, base first")
    solve.add_argument("--json", action="store_true", help='print {"goals": [...], "cost": ...}')
    solve.add_argument("--seed", type=_seed, default=0, help="random seed of the inverse kinematics (default 0)")
    solve.add_argument(
        "--cost", default="mass", type=cost_type, help="cost descriptor of assembly terms (mass, numJ, moduleCost)"
    )
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
    solve.add_argument(
        "--planner",
        choices=("RRTConnect", "RRTstar", "BITstar", "PRM", "timor"),
        default="RRTConnect",
        help="with --solution: motion planner, OMPL's by name or timor's own RRT-Connect (default RRTConnect)",
    )
    solve.set_defaults(func=_cmd_solve, file_outputs=("solution",))


_EXTENSIONS: tuple[str, ...] = (
    "timor_core.cli.search",
    "timor_core.cli.export",
    "timor_core.cli.hardware",
    "timor_core.cli.plugins",
    "timor_core.cli.view",
    "timor_core.cli.configurator",
    "timor_core.cli.importer",
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
    try:  # the environment first, as the options would be: one error line, exit 2
        check_environment()
        compiled.check_environment()
    except TimorError as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    argv = _join_negative_values(list(sys.argv[1:] if argv is None else argv))
    parser = _parser(argv)
    args = parser.parse_args(argv)
    resolve_robot_arguments(args, getattr(args, "subparser", parser))
    level = (logging.ERROR, logging.WARNING, logging.INFO)[min(args.verbose, 2)]
    logging.basicConfig(level=level, format="%(levelname)s: %(message)s")
    try:
        refuse_outputs_over_inputs(args)
        refuse_unwritable_outputs(args)
        return int(args.func(args) or 0)
    except TimorError as exc:
        print(f"error: {one_line(str(exc))}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`timor ... | head`): stop quietly, as Unix tools do
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so the interpreter's final flush does not complain either
        return 141
    except OSError as exc:  # unusable output paths and the like: say what and where, no traceback
        where = f" {exc.filename}" if getattr(exc, "filename", None) else ""
        print(f"error: cannot access{one_line(where)}: {exc.strerror or exc}", file=sys.stderr)
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
            f"error: internal error: {type(exc).__name__}: {one_line(str(exc))} (run with -v for the traceback; "
            "please report it)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())
