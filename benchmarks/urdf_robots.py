#!/usr/bin/env python3
"""Importing and building the robots of example-robot-data (issue 39 item 4: what test_urdf_import_robots does,
without the comparisons with Pinocchio): every URDF of the package imported (``assembly_from_urdf``, ``max_dof``
raised to 128), its robot built (``assembly.robot``: kinematics, dynamics, the collision meshes loaded and checked),
its module set read back from its JSON; then, apart, the collision model of each robot (``robot.collision``: coal's
BVH trees of its meshes, built on first use since s48). CPU seconds per phase, in one fresh process per run.

    python benchmarks/urdf_robots.py                                   # this checkout, 3 runs
    python benchmarks/urdf_robots.py --against /path/to/old/checkout --pairs 3

``--against``: the same measurement run by that checkout's ``src/timor_core`` (this script's copy), alternating
with this checkout's, each run in its own process; medians per phase, the load average beside each run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def measure() -> dict:
    """One run in this process: CPU seconds per phase over every URDF of the package that imports."""
    import logging

    from timor_core import ModuleAssembly, ModulesDB
    from timor_core.export.urdf_import.importer import assembly_from_urdf
    from timor_core.limits import override_limits

    sys.path.insert(0, str(HERE / "src" / "timor_core" / "tests"))
    from urdf_agreement import example_urdfs, robots_share

    logging.disable(logging.WARNING)  # the triangle-inequality warnings of some URDFs' inertias
    share = robots_share()
    if share is None:
        raise SystemExit("example-robot-data is not installed (pip install example-robot-data)")
    phases = dict.fromkeys(("import", "build", "json_read_back", "collision_model"), 0.0)
    robots, count = [], 0
    with override_limits(max_dof=128):
        for path in example_urdfs(share):
            start = time.process_time()
            try:
                assembly = assembly_from_urdf(path, [share.parent])
            except Exception:  # noqa: BLE001 - the URDFs the import refuses (a name missing, meshes missing)
                continue
            built = time.process_time()
            robots.append(assembly.robot)
            read = time.process_time()
            db = assembly.db
            again = ModulesDB.from_json_data(json.loads(db.to_json_string()), base_dir=db.base_dir)
            ModuleAssembly.from_serial_modules(again, [m.id for m in again])
            done = time.process_time()
            phases["import"] += built - start
            phases["build"] += read - built
            phases["json_read_back"] += done - read
            count += 1
        start = time.process_time()
        geoms = sum(robot.collision.ngeoms for robot in robots)
        phases["collision_model"] = time.process_time() - start
    return {"urdfs": count, "collision_objects": geoms, **{k: round(v, 3) for k, v in phases.items()}}


def _run(checkout: Path) -> dict:
    env = dict(os.environ, PYTHONPATH=str(checkout / "src" / "timor_core"))
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--inner"], env=env, capture_output=True,
                         text=True, check=True)  # fmt: skip
    row = json.loads(out.stdout.strip().splitlines()[-1])
    row["load"] = os.getloadavg()[0]
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", type=Path, help="another checkout to alternate with")
    parser.add_argument("--pairs", type=int, default=3, help="runs per checkout")
    parser.add_argument("--inner", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.inner:
        print(json.dumps(measure()))
        return
    trees = {"this": HERE} | ({"against": args.against.resolve()} if args.against else {})
    runs: dict[str, list[dict]] = {name: [] for name in trees}
    for _ in range(args.pairs):
        for name, checkout in reversed(trees.items()) if args.against else trees.items():
            row = _run(checkout)
            runs[name].append(row)
            print(name, json.dumps(row), flush=True)
    for name, rows in runs.items():
        keys = ("import", "build", "json_read_back", "collision_model")
        medians = {k: round(statistics.median(r[k] for r in rows), 2) for k in keys}
        print(f"{name}: medians of {len(rows)} runs (CPU s): {medians}, urdfs {rows[0]['urdfs']}")


if __name__ == "__main__":
    main()
