"""``timor configurator``: the browser configurator (registered by :mod:`timor_core.cli.app`)."""

from __future__ import annotations

import argparse
import sys

from timor_core.cli.args import cost as cost_type
from timor_core.cli.args import load_db, port, seed


def _cmd_configurator(args: argparse.Namespace) -> int:
    from timor_core.task.feedback import load_task
    from timor_core.viz import require

    require("viser")
    from timor_core.viz.configurator import Configurator

    db = load_db(args.db)
    task = load_task(args.task, args.skip_missing_assets) if args.task else None
    page = Configurator(db, task, port=args.port, host=args.host, design=args.modules, cost=args.cost, seed=args.seed)
    page.serve(on_ready=lambda: print(f"timor configurator at {page.url} (Ctrl-C to stop)", flush=True))
    print("configurator stopped", file=sys.stderr)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``timor configurator`` to the ``timor`` parser."""
    p = sub.add_parser("configurator", help="a web page to build a robot, check it against a task and optimize it")
    p.add_argument("--db", required=True, help="modules.json, its folder, or an embedded set name")
    p.add_argument("--task", help="task .json file (enables Check and Optimize)")
    p.add_argument("--port", type=port, default=8080, help="port of the page (default 8080; 0: any free port)")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--modules", nargs="+", help="initial serial chain, base first (default: base, joint, end effector)")
    p.add_argument(
        "--cost", default="mass", type=cost_type, help="cost of the check and the GA (mass, numJ, moduleCost)"
    )
    p.add_argument("--seed", type=seed, default=0, help="seed of the IK and the GA (default 0)")
    p.add_argument("--skip-missing-assets", action="store_true", help="log and skip absent obstacle meshes")
    p.set_defaults(func=_cmd_configurator)
