#!/usr/bin/env python3
"""URDF import at scale (issue 24 item 7): a made-up chain of N links (one revolute joint in 5,000, so 20 DOF at
100,000 links, within max_dof; the rest fixed; every joint about y), imported by ``db_from_urdf`` and its
kinematic tree built, each size in a fresh process so the peak memory is that size's own.

    python benchmarks/urdf_import.py                      # 1,000 / 10,000 / 100,000 links
    python benchmarks/urdf_import.py --links 1000 100000 --json
    python benchmarks/urdf_import.py --links 100000 --against /path/to/old/checkout --pairs 3
    python benchmarks/urdf_import.py --cli --links 100000 --against /path/to/old/checkout --pairs 3
    python benchmarks/urdf_import.py --cli --distinct --links 100000 --against /path/to/old/checkout --pairs 3

``--cli``: what a user runs, ``timor import chain.urdf -o out/modules.json`` (the URDF file written beforehand),
as a whole process measured from outside: interpreter start, import, the module set written; wall and CPU seconds
and peak resident memory, with the load average beside it. The chain repeats one origin and one inertia, as
generated files do; ``--distinct`` gives every joint its own origin and every link its own mass and inertia (the
importer and the writer remember repeated origins and matrices: this is the case where they cannot).

``--against``: the same sizes run by another checkout's copy of this script (its ``src/timor_core``), alternating
with this checkout's, each in its own process; per run also the whole process measured from outside (interpreter
start, text, import, tree, the printed result): wall and CPU seconds and peak resident memory, with the load
average beside it.

Per size: seconds to import (parse, checks, module set) and to build the assembly's tree, wall and CPU (on a shared
machine the CPU time is the steadier figure), the peak resident memory of the process (MB) and wall microseconds per
link; linear means the time per link stays flat.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def chain_urdf(n: int, distinct: bool = False) -> str:
    """A URDF chain of ``n`` links with unit inertia; joint k is revolute every 5000th, else fixed. Every joint has
    the same origin, every link the same inertia; ``distinct``: each its own (full-precision numbers, no two alike)."""
    inertial = '<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>'
    if distinct:
        inertial = inertial.replace('"1"/><inertia ixx="1"', '"{m!r}"/><inertia ixx="{i!r}"')
    links = "".join(f'<link name="l{k}">{inertial.format(m=1 + k / 3e5, i=1 + k / 7e5)}</link>' for k in range(n))
    origin = '<origin xyz="0 0 {z!r}" rpy="0 {p!r} 0"/>' if distinct else '<origin xyz="0 0 0.01" rpy="0 0.1 0"/>'
    joints = "".join(
        f'<joint name="j{k}" type="{"revolute" if k % 5000 == 0 else "fixed"}"><parent link="l{k}"/>'
        f'<child link="l{k + 1}"/>{origin.format(z=0.01 + k / 3e9, p=0.1 + k / 7e8)}<axis xyz="0 1 0"/>'
        '<limit lower="-1" upper="1" effort="1" velocity="1"/></joint>'
        for k in range(n - 1)
    )
    return f'<robot name="chain">{links}{joints}</robot>'


def measure(n: int) -> dict:
    """Import one chain of ``n`` links in this process."""
    from timor_core import ModuleAssembly
    from timor_core.export.urdf_import.importer import db_from_urdf
    from timor_core.limits import limits, override_limits

    text = chain_urdf(n)
    start, cpu = time.perf_counter(), time.process_time()
    with override_limits(max_urdf_links=max(n, limits().max_urdf_links)):  # a bigger chain: the limit raised to it
        db = db_from_urdf(text)
    imported, cpu_imported = time.perf_counter(), time.process_time()
    tree = ModuleAssembly.from_serial_modules(db, ["chain"]).tree()
    built, cpu_built = time.perf_counter(), time.process_time()
    assert len(tree.links) == n
    return {
        "links": n,
        "import_s": round(imported - start, 3),
        "tree_s": round(built - imported, 3),
        "import_cpu_s": round(cpu_imported - cpu, 3),  # CPU time: what a loaded shared machine still tells
        "tree_cpu_s": round(cpu_built - cpu_imported, 3),
        "us_per_link": round((built - start) / n * 1e6, 1),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024,
    }


def whole(checkout: Path, n: int) -> dict:
    """One size in a fresh process of ``checkout``'s script and library, measured from outside as well."""
    env = dict(os.environ, PYTHONPATH=str(checkout / "src" / "timor_core"))
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, str(checkout / "benchmarks" / "urdf_import.py"), "--one", str(n)],
                            env=env, stdout=subprocess.PIPE, text=True)  # fmt: skip
    out = proc.stdout.read() if proc.stdout else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{checkout}: --one {n} failed (status {status})")
    row = json.loads(out)
    row.update(
        checkout=str(checkout),
        load_1min=round(load, 2),
        whole_wall_s=round(wall, 2),
        whole_cpu_s=round(usage.ru_utime + usage.ru_stime, 2),
        whole_peak_mb=usage.ru_maxrss // 1024,
    )
    return row


def whole_cli(checkout: Path, n: int, folder: Path, distinct: bool = False) -> dict:
    """``timor import`` of the ``n``-link chain by ``checkout``'s library, a whole process measured from outside."""
    urdf, out = folder / f"chain{n}{'-distinct' if distinct else ''}.urdf", folder / "out" / "modules.json"
    if not urdf.exists():
        urdf.write_text(chain_urdf(n, distinct))
    env = dict(os.environ, PYTHONPATH=str(checkout / "src" / "timor_core"), TIMOR_MAX_URDF_LINKS=str(max(n, 100_000)))
    load = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "timor_core.cli", "import", str(urdf), "-o", str(out)], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    err = proc.stderr.read() if proc.stderr else ""
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{checkout}: timor import of {n} links failed (status {status}): {err[-500:]}")
    return {
        "links": n,
        "distinct": distinct,
        "checkout": str(checkout),
        "load_1min": round(load, 2),
        "whole_wall_s": round(wall, 2),
        "whole_cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
        "whole_peak_mb": usage.ru_maxrss // 1024,
        "written_mb": round(out.stat().st_size / 1e6, 1),
    }


def compare(sizes: list[int], against: Path | None, pairs: int, cli: bool, distinct: bool = False) -> list[dict]:
    """Each size ``pairs`` times, the other checkout (if any) and this one alternating (other first)."""
    here = Path(__file__).resolve().parents[1]
    checkouts = (against.resolve(), here) if against else (here,)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="urdf_import_") as tmp:
        for n in sizes:
            for _ in range(pairs):
                for checkout in checkouts:
                    rows.append(whole_cli(checkout, n, Path(tmp), distinct) if cli else whole(checkout, n))
                    _report(rows[-1])
    return rows


def _report(r: dict) -> None:
    """One run's line on stderr."""
    if "import_cpu_s" not in r:
        print(f"{r['checkout']}: timor import, {r['links']} links{' (distinct)' if r['distinct'] else ''}: "
              f"{r['whole_wall_s']} s wall, {r['whole_cpu_s']} s "
              f"CPU, peak {r['whole_peak_mb']} MB, wrote {r['written_mb']} MB (load {r['load_1min']})",
              file=sys.stderr)  # fmt: skip
    else:
        print(f"{r['checkout']}: {r['links']} links: import CPU {r['import_cpu_s']} s, tree CPU {r['tree_cpu_s']} s; "
              f"whole process {r['whole_wall_s']} s wall, {r['whole_cpu_s']} s CPU, peak {r['whole_peak_mb']} "
              f"MB (load {r['load_1min']})", file=sys.stderr)  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--links", type=int, nargs="+", default=[1000, 10_000, 100_000])
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--against", type=Path, help="another checkout to run side by side (alternating)")
    parser.add_argument("--pairs", type=int, default=3, help="runs per size and checkout with --against or --cli")
    parser.add_argument("--cli", action="store_true", help="the whole `timor import` command, measured from outside")
    parser.add_argument("--distinct", action="store_true", help="with --cli: no two origins or inertias alike")
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # the worker: one size in this process
    args = parser.parse_args()
    if args.one:
        print(json.dumps(measure(args.one)))
        return
    if args.against or args.cli:
        if args.distinct and not args.cli:
            parser.error("--distinct needs --cli")
        rows = compare(args.links, args.against, args.pairs, args.cli, args.distinct)
        if args.json:
            print(json.dumps(rows, indent=2))
        return
    rows = []
    for n in args.links:
        out = subprocess.run([sys.executable, __file__, "--one", str(n)], capture_output=True, text=True, check=True)
        rows.append(json.loads(out.stdout))
        if not args.json:
            r = rows[-1]
            print(f"{r['links']:>8} links: import {r['import_s']:6.2f} s (CPU {r['import_cpu_s']:6.2f} s), tree "
                  f"{r['tree_s']:6.2f} s (CPU {r['tree_cpu_s']:6.2f} s), {r['us_per_link']:6.1f} us/link, "
                  f"peak {r['peak_rss_mb']} MB", file=sys.stderr)  # fmt: skip
    if args.json:
        print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
