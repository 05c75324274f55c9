#!/usr/bin/env python3
"""Cold start, ours against the reference toolbox (timor-python 1.1.1), in fresh processes, side by side.

    python benchmarks/cold_start.py                    # both bytecode states, 7 runs each, both sides
    python benchmarks/cold_start.py --runs 3 --bytecode compiled --whole-process
    python benchmarks/cold_start.py --baseline-src /tmp/before/src/timor_core --whole-process   # before/after

With ``--baseline-src`` the other side is not the reference but timor_core from another tree (an earlier commit,
say ``git archive``d), run by the same interpreter: before/after in one run, alternating, the ratio before/after.

For each bytecode state, fresh processes alternate ours / reference (A B A B ...), and each reports, timed inside
(run.py's ``cold-robot`` worker): the import, the first DB load (IMPROV) and the first robot with its collision
pairs (``len(A.robot.collision_pairs)``). The table gives their medians, the median of the sum (what a user waits
for before the first robot: the goal of issue 25 is a sum >= 2x faster than the reference) and the whole process
timed from outside (interpreter start-up and exit included). ``--whole-process`` adds ``timor fk`` and
``timor urdf`` against the reference's equivalent scripts (``ref_cli.py fk|urdf``).

Bytecode states (``PYTHONDONTWRITEBYTECODE=1`` on this machine, so nothing is compiled as a side effect):

- ``compiled``: our package compiled (``python -m compileall``) as a ``pip install`` does; the reference as
  installed (its site-packages hold the bytecode of its modules).
- ``source``: neither library has bytecode for its own modules (their dependencies keep theirs): our package's
  ``__pycache__`` folders are removed, and the reference runs from a copy of its ``timor`` package without them
  (the copy made in a temporary folder, its data folders beside it as in site-packages). This is the state of a
  fresh editable checkout; the earlier c1-c4 figures had ours in it and the reference compiled.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run  # noqa: E402  (the shared harness: stdlib only at import time)

FIRST = ("1", "21", "4", "21", "5", "23", "12")  # the first of run.py's IMPROV assemblies
PARTS = (("import_ms", "import"), ("db_load_first_ms", "first DB load"), ("first_ms", "first robot + pairs"))


def _our_env(src: Path) -> dict:
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    env["PYTHONPATH"] = os.pathsep.join(x for x in (str(src), os.environ.get("PYTHONPATH", "")) if x)
    return env


def _set_our_bytecode(src: Path, state: str) -> None:
    """Compile our package, or remove its bytecode."""
    package = src / "timor_core"
    for cache in package.rglob("__pycache__"):
        shutil.rmtree(cache)
    if state == "compiled":
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(package)], check=True)


def _reference_source_copy(ref_python: str, into: Path) -> Path:
    """A copy of the reference's ``timor`` package without bytecode, its ``cache`` and sample robots beside it (the
    package finds them next to itself); returns the folder to put first on PYTHONPATH."""
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(subprocess.run([ref_python, "-c", code], capture_output=True, text=True, check=True).stdout.strip())
    shutil.copytree(site / "timor", into / "timor", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(site / "cache", into / "cache")
    (into / "timor_sample_robots").symlink_to(site / "timor_sample_robots")
    return into


def _ref_env(ref_python: str, state: str, tmp: Path) -> tuple[list[str], dict]:
    cmd, env = run.ref_command(ref_python)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    if state == "source":
        first = _reference_source_copy(ref_python, tmp / "ref_source")
        env["PYTHONPATH"] = os.pathsep.join(x for x in (str(first), env.get("PYTHONPATH", "")) if x)
    return cmd, env


def _timed_worker(cmd: list[str], env: dict, spec: dict) -> dict:
    """One fresh worker process: its own figures plus ``process_ms``, the whole process timed from outside."""
    t0 = time.perf_counter()
    figures, error = run.run_worker(cmd, spec, env)
    wall = (time.perf_counter() - t0) * 1e3
    if figures is None:
        raise SystemExit(f"worker failed: {' '.join(cmd)}\n{error}")
    figures["process_ms"] = wall
    figures["total_ms"] = sum(figures[k] for k, _ in PARTS)
    return figures


def _timed_process(cmd: list[str], env: dict) -> float:
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, cwd=run.REPO)
    wall = (time.perf_counter() - t0) * 1e3
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed (exit code {proc.returncode}): {proc.stderr[-800:]}")
    return wall


def _alternate(a, b, runs: int) -> tuple[list, list]:
    """``runs`` calls of each, alternating a, b, a, b ... (one warm-up pair first, not counted: disk caches)."""
    a(), b()
    out_a, out_b = [], []
    for _ in range(runs):
        out_a.append(a())
        out_b.append(b())
    return out_a, out_b


def _row(what: str, ours: list[float], ref: list[float] | None) -> dict:
    row = {"what": what, "ours_ms": statistics.median(ours), "ours_runs": ours}
    if ref:
        row |= {"ref_ms": statistics.median(ref), "ref_runs": ref}
        row["ratio"] = statistics.median(r / o for o, r in zip(ours, ref))  # pair by pair: drift cancels
    return row


def measure_state(state: str, args: argparse.Namespace, tmp: Path) -> list[dict]:
    """The rows of one bytecode state."""
    src = Path(args.ours_src).resolve()
    _set_our_bytecode(src, state)
    spec = {"mode": "cold-robot", "modules_json": str(run.IMPROV_JSON), "assemblies": [list(FIRST)]}
    ours_cmd = [sys.executable, str(HERE / "run.py"), "--worker"]
    ours = lambda: _timed_worker(ours_cmd, _our_env(src), spec)  # noqa: E731
    if args.baseline_src:  # the other side: timor_core of another tree, same interpreter and harness
        _set_our_bytecode(Path(args.baseline_src).resolve(), state)
        ref_cmd, ref_env = ours_cmd, _our_env(Path(args.baseline_src).resolve())
    else:
        ref_cmd, ref_env = _ref_env(args.ref_python, state, tmp) if args.ref_python else ([], {})
    ref = (lambda: _timed_worker(ref_cmd, ref_env, spec)) if ref_env else None  # noqa: E731
    run.log(f"[{state}] {args.runs} fresh processes per side, alternating ...")
    o, r = _alternate(ours, ref, args.runs) if ref else ([ours() for _ in range(args.runs)], None)
    rows = [_row(what, [f[k] for f in o], [f[k] for f in r] if r else None) for k, what in PARTS]
    rows.append(
        _row("import + DB load + first robot", [f["total_ms"] for f in o], [f["total_ms"] for f in r] if r else None)
    )
    rows.append(
        _row("the same, whole process", [f["process_ms"] for f in o], [f["process_ms"] for f in r] if r else None)
    )
    if args.whole_process:
        rows += _cli_rows(args, src, ref_env if ref else None)
        if args.baseline_src:
            rows += _help_rows(args, src)
    for row in rows:
        row["state"] = state
    return rows


def _cli_rows(args: argparse.Namespace, src: Path, ref_env: dict | None) -> list[dict]:
    """``timor fk`` and ``timor urdf`` (as ``python -m timor_core.cli``) against the reference's scripts."""
    rows = []
    for command in ("fk", "urdf"):
        ours_cmd = [sys.executable, "-m", "timor_core.cli", command, str(run.IMPROV_JSON), *FIRST]
        ours = lambda c=ours_cmd: _timed_process(c, _our_env(src))  # noqa: E731
        if ref_env is None:
            rows.append(_row(f"timor {command}, whole process", [ours() for _ in range(args.runs)], None))
            continue
        ref_cmd = [args.ref_python, str(HERE / "ref_cli.py"), command, str(run.IMPROV_JSON), *FIRST]
        if args.baseline_src:
            ref_cmd = ours_cmd
        ref = lambda c=ref_cmd: _timed_process(c, ref_env)  # noqa: E731
        run.log(f"timor {command}: {args.runs} whole processes per side, alternating ...")
        rows.append(_row(f"timor {command}, whole process", *_alternate(ours, ref, args.runs)))
    return rows


def _help_rows(args: argparse.Namespace, src: Path) -> list[dict]:
    """``timor --help`` and ``timor urdf --help`` as whole processes, this tree against the baseline's."""
    rows = []
    for command in (["--help"], ["urdf", "--help"]):
        cmd = [sys.executable, "-m", "timor_core.cli", *command]
        ours = lambda: _timed_process(cmd, _our_env(src))  # noqa: E731
        base = lambda: _timed_process(cmd, _our_env(Path(args.baseline_src).resolve()))  # noqa: E731
        rows.append(_row(f"timor {' '.join(command)}, whole process", *_alternate(ours, base, args.runs)))
    return rows


def print_rows(rows: list[dict], file, other: str = "ref") -> None:
    """The table; ``other`` names the other side (``ref``, or ``base`` with --baseline-src)."""
    print(f"{'state':<9} {'what':<36} {'ours ms':>9} {other + ' ms':>9} {other + '/ours':>9}", file=file)
    print("-" * 76, file=file)
    for r in rows:
        ref = f"{r['ref_ms']:9.1f}" if "ref_ms" in r else f"{'-':>9}"
        ratio = f"{r['ratio']:8.2f}x" if "ratio" in r else f"{'-':>9}"
        print(f"{r['state']:<9} {r['what']:<36} {r['ours_ms']:9.1f} {ref} {ratio}", file=file)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=7, help="fresh processes per side and figure (default 7)")
    p.add_argument("--bytecode", choices=("compiled", "source", "both"), default="both")
    p.add_argument("--whole-process", action="store_true", help="also timor fk / timor urdf as whole processes")
    p.add_argument("--ref-python", help="the reference interpreter (default: run.py's, ../refvenv/bin/python)")
    p.add_argument("--no-ref", action="store_true", help="ours only")
    p.add_argument("--ours-src", default=str(run.REPO / "src" / "timor_core"), help="folder holding timor_core")
    p.add_argument(
        "--baseline-src", help="timor_core of another tree as the other side (before/after), not the reference"
    )
    p.add_argument("--json", action="store_true", help="print every run as JSON on stdout")
    args = p.parse_args(argv)
    if not run.IMPROV_JSON.exists():
        run.log(f"SKIPPED: {run.IMPROV_JSON} not found")
        return 0
    if args.baseline_src:
        args.ref_python = None
    elif not args.no_ref:
        args.ref_python, why = run.resolve_ref_python(args.ref_python)
        if args.ref_python is None:
            run.log(f"REFERENCE NOT AVAILABLE ({why})")
    else:
        args.ref_python = None
    states = ("compiled", "source") if args.bytecode == "both" else (args.bytecode,)
    with tempfile.TemporaryDirectory(prefix="timor-cold-") as tmp:
        rows = [row for state in states for row in measure_state(state, args, Path(tmp))]
    _set_our_bytecode(Path(args.ours_src).resolve(), "compiled")  # leave the tree as a pip install would
    if args.baseline_src:
        _set_our_bytecode(Path(args.baseline_src).resolve(), "compiled")
    load = os.getloadavg()[0]
    header = f"cold start, {args.runs} fresh processes per side, alternating | {os.cpu_count()} CPUs | load {load:.1f}"
    run.log(header)
    print_rows(rows, sys.stderr, "base" if args.baseline_src else "ref")
    if args.json:
        print(json.dumps({"header": header, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
