"""Subcommands of ``timor`` for visualization (registered by :mod:`timor_core.cli.app`): view, video, plot,
db show/sheet.

Everything imports :mod:`timor_core.viz` lazily, so the CLI works without the ``viz`` extra until these are used.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from timor_core.cli.args import count, port, positive_float, seed, serial_assembly
from timor_core.cli.args import load_db as _load_db
from timor_core.errors import InputError


def _robot(args: argparse.Namespace):
    return serial_assembly(args).robot


def _solution(file: str, task: str | None, db: str | None):
    """Load a CoBRA solution; the module set defaults to the solution's ``moduleSet`` entry."""
    from timor_core.common import jsonfields as jf
    from timor_core.task import Task
    from timor_core.task.solution import Solution

    data = jf.load_json_file(Path(file))
    if not db and isinstance(data, dict) and data.get("moduleSet") is not None:
        try:
            db = jf.string(data["moduleSet"], "$.moduleSet")
        except InputError as exc:  # a set's name or path: an object there was a TypeError of pathlib
            raise exc.located(file=file) from None
    if task is None or db is None:
        raise InputError("a solution needs its task (--task FILE) and module set (--db, or moduleSet in the file)")
    return Solution.from_json_data(data, Task.from_json_file(task), db, file)


def _serve(viewer) -> int:
    """Print the viewer's address and serve until Ctrl-C."""
    viewer.wait(on_ready=lambda: print(f"viewer at {viewer.url} (Ctrl-C to stop)", file=sys.stderr, flush=True))
    print("viewer stopped", file=sys.stderr)
    return 0


def _interruptible(func):
    """Run a command; Ctrl-C before the viewer serves exits with 130 and no traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return func(args)
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return 130

    return run


@_interruptible
def _cmd_view(args: argparse.Namespace) -> int:
    from timor_core.viz.viewer import Viewer, show_solution

    # load and check the input before the server starts: a bad file or module never opens a port
    if args.what == "robot":
        if not args.db or not args.modules:
            raise InputError("timor view robot needs --db and --modules")
        content = _robot(args)
    elif args.what == "task":
        from timor_core.task import Task

        content = Task.from_json_file(args.file)
    else:
        content = _solution(args.file, args.task, args.db)
    with Viewer(port=args.port, host=args.host) as viewer:
        if args.what == "robot":
            viewer.add_robot(content)
        elif args.what == "task":
            viewer.add_task(content)
        else:
            show_solution(content, viewer)
        return _serve(viewer)


def fps(text: str) -> float:
    """argparse type: frames per second, a number in (0, 240]."""
    value = positive_float(text)
    if value > 240:
        raise argparse.ArgumentTypeError(f"expected at most 240 frames per second, got {text!r}")
    return value


def _size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(v) for v in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT such as 640x480, got {text!r}") from None
    if not (16 <= w <= 4096 and 16 <= h <= 4096):
        raise argparse.ArgumentTypeError(f"size out of range (16..4096), got {text!r}")
    return w, h


@_interruptible
def _cmd_video(args: argparse.Namespace) -> int:
    from timor_core.viz.video import random_motion, robot_video, solution_video

    if args.solution:
        solution_video(_solution(args.solution, args.task, args.db), args.output, fps=args.fps, size=args.size)
    else:
        if not args.db or not args.modules:
            raise InputError("timor video needs a solution file, or --db and --modules")
        robot = _robot(args)
        robot_video(robot, random_motion(robot, args.seed), args.output, fps=args.fps, size=args.size)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


@_interruptible
def _cmd_db_show(args: argparse.Namespace) -> int:
    from timor_core.viz.catalogue import show_db
    from timor_core.viz.viewer import Viewer

    db = _load_db(args.db, None)  # positional
    with Viewer(port=args.port, host=args.host) as viewer:
        show_db(db, viewer)
        return _serve(viewer)


def _cmd_db_sheet(args: argparse.Namespace) -> int:
    from timor_core.viz.catalogue import contact_sheet

    contact_sheet(_load_db(args.db, None), args.output, cols=args.cols)
    print(f"wrote {args.output}", file=sys.stderr)
    return 0


def _results(files: list[str]):
    from timor_core.search import SearchResult

    return [SearchResult.from_json_file(f) for f in files]


def _cmd_plot(args: argparse.Namespace) -> int:
    from timor_core.viz import plots

    if args.kind == "convergence":
        plots.plot_convergence(_results(args.files), args.output)
    elif args.kind == "compare":
        plots.plot_compare(_results(args.files), args.output, labels=[Path(f).stem for f in args.files])
    elif args.kind == "funnel":
        if len(args.files) != 1:
            raise InputError("timor plot funnel takes one result file", value=args.files)
        plots.plot_funnel(_results(args.files)[0], args.output)
    else:
        if len(args.files) != 1:
            raise InputError("timor plot trajectory takes one solution file", value=args.files)
        solution = _solution(args.files[0], args.task, args.db)
        limits = plots.robot_limits(solution.robot)
        plots.plot_trajectory(solution.trajectory, args.output, tau=solution.tau, limits=limits)
    print(json.dumps({"wrote": str(args.output)}) if args.json else f"wrote {args.output}", file=sys.stderr)
    return 0


def _server_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--port", type=port, default=8080, help="port of the viewer (default 8080; 0: any free port)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0: all)")


def _db_subparsers(sub: argparse._SubParsersAction) -> argparse._SubParsersAction | None:
    """The subcommands of ``timor db``, if the main parser defines them."""
    db = sub.choices.get("db")
    actions = [a for a in getattr(db, "_actions", []) if isinstance(a, argparse._SubParsersAction)]
    return actions[0] if actions else None


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``view``, ``video``, ``plot`` and ``db show`` / ``db sheet`` (else ``catalogue show|sheet``)."""
    view = sub.add_parser("view", help="show a robot, task or solution in the browser viewer (viser)")
    view.add_argument("what", choices=("robot", "task", "solution"))
    view.add_argument("file", nargs="?", help="task or solution .json file")
    view.add_argument("--db", help="modules.json, its folder, or an embedded set name")
    view.add_argument("--modules", nargs="+", help="module IDs of a serial chain, base first")
    view.add_argument("--task", help="the task file of a solution")
    _server_args(view)
    view.set_defaults(func=_cmd_view)

    video = sub.add_parser("video", help="render an MP4 of a solution, or of a random planned motion (no screen)")
    video.add_argument("solution", nargs="?", help="CoBRA solution .json file")
    video.add_argument("-o", "--output", required=True, help="output .mp4 (written atomically)")
    video.add_argument("--task", help="the task file of the solution")
    video.add_argument("--db", help="module set (solution: default its moduleSet)")
    video.add_argument("--modules", nargs="+", help="module IDs of a serial chain, base first (no solution)")
    video.add_argument("--seed", type=seed, default=0, help="seed of the random motion (default 0)")
    video.add_argument("--fps", type=fps, default=20.0, help="frames per second (default 20)")
    video.add_argument("--size", type=_size, default=(640, 480), help="WIDTHxHEIGHT (default 640x480)")
    video.set_defaults(func=_cmd_video)

    plot = sub.add_parser("plot", help="plots of search results and solutions (PNG or SVG by the suffix)")
    plot.add_argument("kind", choices=("convergence", "funnel", "trajectory", "compare"))
    plot.add_argument("files", nargs="+", help="search result .json files (trajectory: one solution .json)")
    plot.add_argument("-o", "--output", required=True, help="output .png or .svg (written atomically)")
    plot.add_argument("--task", help="trajectory: the task file of the solution")
    plot.add_argument("--db", help="trajectory: module set (default the solution's moduleSet)")
    plot.add_argument("--json", action="store_true", help="print the output path as JSON")
    plot.set_defaults(func=_cmd_plot)

    dbs = _db_subparsers(sub)
    if dbs is None:  # no `timor db` to extend: a command of its own
        catalogue = sub.add_parser("catalogue", help="module set catalogues")
        dbs = catalogue.add_subparsers(dest="catalogue_command", required=True)
    show = dbs.add_parser("show", help="every module alone with its connector frames labelled, in the viewer")
    show.add_argument("db", help="modules.json, its folder, or an embedded set name")
    _server_args(show)
    show.set_defaults(func=_cmd_db_show)
    sheet = dbs.add_parser("sheet", help="a PNG contact sheet of every module of a set")
    sheet.add_argument("db", help="modules.json, its folder, or an embedded set name")
    sheet.add_argument("-o", "--output", required=True, help="output .png or .svg (written atomically)")
    sheet.add_argument("--cols", type=count(1, 64), default=4, help="modules per row (default 4)")
    sheet.set_defaults(func=_cmd_db_sheet)
