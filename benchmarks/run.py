#!/usr/bin/env python3
"""Benchmark timor_core against the reference toolbox (timor-python 1.1.1), side by side in one run.

Usage::

    python benchmarks/run.py                 # full run (both sides), table on stdout
    python benchmarks/run.py --quick         # fewer assemblies and repetitions
    python benchmarks/run.py --json > b.json # table on stderr, JSON on stdout
    python benchmarks/run.py --no-ref        # our figures only

Our side runs in a subprocess of this interpreter (``run.py --worker``), the reference side in a
subprocess of the reference venv's interpreter (``ref_worker.py``); both read the same spec (module
set, assembly list, repetitions) from stdin, measure with the same harness (``measure`` below) and
print their figures as JSON. Separate processes keep imports, caches and peak RSS apart.

This file must stay importable by the reference's Python (3.11, no timor_core): only the standard
library at module level; numpy and timor_core are imported inside the functions that need them.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
IMPROV_JSON = SHARED / "data" / "cobra" / "modules" / "IMPROV" / "modules.json"
SHIM_DIR = SHARED / "bench-ref"
DEFAULT_REF_VENV = REPO.parent / "refvenv"
REF_REQUIREMENT = "timor-python==1.1.1"
WORKER_TIMEOUT = 1800  # seconds, per worker process

# -- the IMPROV assemblies ---------------------------------------------------------------------------
# base, PB21 (2 DOF), 1-3 links, PB21, 1-3 links, PB23 (2 DOF), 0-1 extension, L3 (end effector).
BASE, PB21, PB23, EEF = "1", "21", "23", "12"
LINKS = ("4", "5", "14", "15", "6", "7", "8")  # L1, L2, L8, L9, L4, L5, L6
EXTENSIONS = ("14", "15")  # L8, L9
EXAMPLE = ("1", "21", "4", "21", "5", "23", "12")
N_ASSEMBLIES = 20
N_ASSEMBLIES_QUICK = 6


def improv_assemblies(n: int = N_ASSEMBLIES, seed: int = 2019) -> list[tuple[str, ...]]:
    """``n`` distinct six-DOF IMPROV chains, the same on every machine and Python (seeded ``random``)."""
    rng = random.Random(seed)
    out = [EXAMPLE]
    while len(out) < n:
        seg1 = [rng.choice(LINKS) for _ in range(rng.randint(1, 3))]
        seg2 = [rng.choice(LINKS) for _ in range(rng.randint(1, 3))]
        ext = [rng.choice(EXTENSIONS)] if rng.random() < 0.5 else []
        ids = (BASE, PB21, *seg1, PB21, *seg2, PB23, *ext, EEF)
        if ids not in out:
            out.append(ids)
    return out


# -- the measuring harness (runs inside each worker process) -----------------------------------------
def _now() -> float:
    return time.perf_counter()


def _ms(t0: float) -> float:
    return (time.perf_counter() - t0) * 1e3


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far (ru_maxrss is KiB on Linux, bytes on macOS)."""
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r / (1024 * 1024) if sys.platform == "darwin" else r / 1024


def measure(ad, spec: dict) -> dict:
    """Time one side (adapter ``ad``) on the spec; return JSON-ready figures.

    ``spec['mode']``: ``main`` (everything below), ``cold-urdf`` / ``cold-robot`` (a fresh process:
    DB load, then the very first URDF / robot with collision pairs), or ``urdf-all`` (build the URDF
    of every assembly once; for whole-process timing).
    """
    import numpy as np

    mode = spec.get("mode", "main")
    path = spec["modules_json"]
    ids_list = [tuple(a) for a in spec["assemblies"]]
    out: dict = {
        "side": ad.name,
        "version": ad.version,
        "python": platform.python_version(),
        "mode": mode,
        "import_ms": ad.import_ms,
        "rss_after_import_mb": peak_rss_mb(),
    }
    t0 = _now()
    db = ad.load_db(path)
    out["db_load_first_ms"] = _ms(t0)

    if mode == "urdf-all":
        out["urdf_chars"] = sum(len(ad.urdf(ad.assembly(db, ids))) for ids in ids_list)
        return out
    if mode == "cold-urdf":
        t0 = _now()
        ad.urdf(ad.assembly(db, ids_list[0]))
        out["first_ms"] = _ms(t0)
        return out
    if mode == "cold-robot":
        t0 = _now()
        ad.pairs(ad.robot(ad.assembly(db, ids_list[0])))
        out["first_ms"] = _ms(t0)
        return out
    if mode != "main":
        raise ValueError(f"unknown mode {mode!r}")

    reps = int(spec["reps"])

    # DB load: a fresh DB from the file each time
    loads = []
    for _ in range(reps):
        gc.collect()
        t0 = _now()
        ad.load_db(path)
        loads.append(_ms(t0))
    out["db_load_ms"] = statistics.median(loads)

    # warm-up: every assembly once, both paths; derived module data is cached per DB by design
    keep = []
    info = []
    for ids in ids_list:
        urdf = ad.urdf(ad.assembly(db, ids))
        robot = ad.robot(ad.assembly(db, ids))
        npairs = ad.pairs(robot)
        keep.append((urdf, robot))
        info.append(
            {
                "ids": list(ids),
                "dof": ad.dof(robot),
                "ngeoms": ad.ngeoms(robot),
                "npairs": npairs,
                "urdf_chars": len(urdf),
            }
        )
    out["assemblies"] = info
    out["rss_after_build_mb"] = peak_rss_mb()

    # assembly paths, every assembly every repetition; median over repetitions per assembly
    n = len(ids_list)
    t_urdf: list[list[float]] = [[] for _ in range(n)]
    t_robot: list[list[float]] = [[] for _ in range(n)]
    t_robot_pairs: list[list[float]] = [[] for _ in range(n)]
    for _ in range(reps):
        gc.collect()
        for k, ids in enumerate(ids_list):
            t0 = _now()
            ad.urdf(ad.assembly(db, ids))
            t_urdf[k].append(_ms(t0))
            t0 = _now()
            robot = ad.robot(ad.assembly(db, ids))
            t1 = _now()
            ad.pairs(robot)
            t2 = _now()
            t_robot[k].append((t1 - t0) * 1e3)
            t_robot_pairs[k].append((t2 - t0) * 1e3)
    for key, samples in (("urdf", t_urdf), ("robot", t_robot), ("robot_pairs", t_robot_pairs)):
        per = [statistics.median(s) for s in samples]
        out[f"{key}_ms_per_assembly"] = per
        out[f"{key}_ms"] = statistics.median(per)

    # per-call figures on one robot (the first assembly) at random configurations within the limits
    robot = keep[0][1]
    lo, hi = (np.asarray(x, dtype=float) for x in ad.limits(robot))
    lo = np.where(np.isfinite(lo) & (lo > -1e300), lo, -np.pi)
    hi = np.where(np.isfinite(hi) & (hi < 1e300), hi, np.pi)
    rng = np.random.default_rng(int(spec.get("seed", 7)))
    qs = [rng.uniform(lo, hi) for _ in range(int(spec.get("n_q", 200)))]
    out["tcp_positions"] = [[float(x) for x in ad.tcp_position(robot, q)] for q in qs[:10]]
    out["collision_flags"] = "".join("1" if ad.self_collision(robot, q) else "0" for q in qs)
    for key, fn, calls in (
        ("fk", ad.fk, int(spec["fk_calls"])),
        ("self_collision", ad.self_collision, int(spec["collision_calls"])),
    ):
        per_call = []
        nq = len(qs)
        for _ in range(reps):
            gc.collect()
            t0 = _now()
            for i in range(calls):
                fn(robot, qs[i % nq])
            per_call.append((time.perf_counter() - t0) * 1e6 / calls)
        out[f"{key}_us"] = statistics.median(per_call)
    out["rss_end_mb"] = peak_rss_mb()
    return out


def worker_main(adapter_factory, argv: list[str] | None = None) -> int:
    """Entry point of a worker: ``--urdf-all`` (standalone job), else a JSON spec on stdin."""
    p = argparse.ArgumentParser(description="benchmark worker (spec as JSON on stdin, figures as JSON on stdout)")
    p.add_argument("--urdf-all", action="store_true", help="build the URDF of all 20 IMPROV assemblies and exit")
    p.add_argument("--modules-json", default=str(IMPROV_JSON))
    args, _ = p.parse_known_args(argv)
    if args.urdf_all:
        spec = {"mode": "urdf-all", "modules_json": args.modules_json, "assemblies": improv_assemblies()}
    else:
        spec = json.loads(sys.stdin.read())
    out = measure(adapter_factory(), spec)
    sys.stdout.write(json.dumps(out) + "\n")
    return 0


class OursAdapter:
    """timor_core through its public API."""

    name = "ours"

    def __init__(self) -> None:
        t0 = _now()
        import timor_core

        self.import_ms = _ms(t0)
        self.tc = timor_core
        self.version = timor_core.__version__

    def load_db(self, path):
        return self.tc.ModulesDB.from_json_file(path)

    def assembly(self, db, ids):
        return self.tc.ModuleAssembly.from_serial_modules(db, ids)

    def urdf(self, A) -> str:
        return A.to_urdf()

    def robot(self, A):
        return A.robot

    def pairs(self, robot) -> int:
        return len(robot.collision_pairs)

    def limits(self, robot):
        jl = robot.joint_limits
        return jl[0], jl[1]

    def fk(self, robot, q):
        return robot.fk(q)

    def tcp_position(self, robot, q):
        return robot.fk(q)[:3, 3]

    def self_collision(self, robot, q) -> bool:
        return bool(robot.has_self_collision(q))

    def ngeoms(self, robot) -> int:
        return int(robot.collision.ngeoms)

    def dof(self, robot) -> int:
        return int(robot.dof)


# -- the driver --------------------------------------------------------------------------------------
def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_worker(cmd: list[str], spec: dict, env: dict | None = None) -> tuple[dict | None, str]:
    """Run a worker; return (figures, error text)."""
    try:
        proc = subprocess.run(
            cmd,
            input=json.dumps(spec),
            capture_output=True,
            text=True,
            env=env,
            cwd=str(REPO),
            timeout=WORKER_TIMEOUT,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = "\n".join(proc.stderr.strip().splitlines()[-15:])
        return None, f"exit code {proc.returncode}\n{tail}"
    return json.loads(lines[-1]), ""


def ours_command() -> tuple[list[str], dict]:
    env = dict(os.environ)
    src = str(REPO / "src" / "timor_core")
    env["PYTHONPATH"] = os.pathsep.join(x for x in (src, env.get("PYTHONPATH", "")) if x)
    return [sys.executable, str(Path(__file__).resolve()), "--worker"], env


def ref_command(ref_python: str) -> tuple[list[str], dict]:
    env = dict(os.environ)
    env.pop("PYTHONHOME", None)
    extra = [str(SHIM_DIR)] if SHIM_DIR.is_dir() else []
    env["PYTHONPATH"] = os.pathsep.join(x for x in (*extra, env.get("PYTHONPATH", "")) if x)
    return [ref_python, str(Path(__file__).resolve().parent / "ref_worker.py")], env


def resolve_ref_python(arg: str | None) -> tuple[str | None, str]:
    """The reference interpreter; create ../refvenv with timor-python 1.1.1 if the default is missing."""
    explicit = arg or os.environ.get("TIMOR_REF_PYTHON")
    if explicit:
        if Path(explicit).exists():
            return explicit, ""
        return None, f"reference interpreter {explicit} does not exist"
    py = DEFAULT_REF_VENV / "bin" / "python"
    if py.exists():
        return str(py), ""
    base = "python3" if sys.platform != "win32" else sys.executable
    log(f"creating the reference venv {DEFAULT_REF_VENV} with {REF_REQUIREMENT} (first run only) ...")
    for cmd in (
        [base, "-m", "venv", str(DEFAULT_REF_VENV)],
        [str(py), "-m", "pip", "install", "-q", REF_REQUIREMENT],
    ):
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return None, f"{' '.join(cmd)} failed: {exc}"
        if proc.returncode != 0:
            tail = "\n".join(proc.stderr.strip().splitlines()[-8:])
            return None, f"{' '.join(cmd)} failed (exit code {proc.returncode}):\n{tail}"
    return str(py), ""


def _fmt(x: float | None) -> str:
    if x is None:
        return "-"
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}" if x < 1 else f"{x:.2f}"


def _median_of(runs: list[dict], key: str) -> float | None:
    vals = [r[key] for r in runs if r and key in r]
    return statistics.median(vals) if vals else None


CASES = (
    # id, name, unit, key, target (ref/ours), source ('main' or 'cold-*')
    ("1", "ids -> URDF string", "ms/assembly", "urdf_ms", 20.0, "main"),
    ("2a", "ids -> robot (.robot)", "ms/assembly", "robot_ms", 10.0, "main"),
    ("2b", "ids -> robot + collision pairs", "ms/assembly", "robot_pairs_ms", 10.0, "main"),
    ("3a", "FK (TCP pose) at a random q", "us/call", "fk_us", None, "main"),
    ("3b", "self-collision check at a random q", "us/call", "self_collision_us", None, "main"),
    ("4", "DB load (IMPROV modules.json)", "ms", "db_load_ms", None, "main"),
    ("5", "peak RSS after building all robots", "MB", "rss_after_build_mb", None, "main"),
    ("5b", "peak RSS after import (baseline)", "MB", "rss_after_import_mb", None, "main"),
    ("c1", "cold: import", "ms", "import_ms", None, "cold-urdf"),
    ("c2", "cold: first DB load", "ms", "db_load_first_ms", None, "cold-urdf"),
    ("c3", "cold: first ids -> URDF (after DB load)", "ms", "first_ms", None, "cold-urdf"),
    ("c4", "cold: first ids -> robot + pairs (after DB load)", "ms", "first_ms", None, "cold-robot"),
)


def build_report(ours: dict, ref: dict) -> list[dict]:
    """One row per case from the two sides' figures ({'main': {...}, 'cold-urdf': [...], ...})."""
    rows = []
    for cid, name, unit, key, target, source in CASES:

        def get(side, source=source, key=key):
            if source == "main":
                m = side.get("main")
                return m.get(key) if m else None
            return _median_of(side.get(source, []), key)

        o, r = get(ours), get(ref)
        ratio = r / o if (o and r) else None
        met = None if (target is None or ratio is None) else ratio >= target
        rows.append(
            {"id": cid, "name": name, "unit": unit, "ours": o, "ref": r, "ratio": ratio, "target": target, "met": met}
        )
    return rows


def print_table(rows: list[dict], file) -> None:
    head = f"{'case':<4} {'what':<49} {'unit':<12} {'ours':>9} {'reference':>10} {'ref/ours':>9}  target"
    print(head, file=file)
    print("-" * len(head) + "--------", file=file)
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.1f}x"
        if r["target"] is None:
            status = ""
        elif r["met"] is None:
            status = f">= {r['target']:g}x  (not measured)"
        else:
            status = f">= {r['target']:g}x  " + ("met" if r["met"] else "MISSED")
        ours, ref = _fmt(r["ours"]), _fmt(r["ref"])
        print(f"{r['id']:<4} {r['name']:<49} {r['unit']:<12} {ours:>9} {ref:>10} {ratio:>9}  {status}", file=file)


def consistency(ours_main: dict | None, ref_main: dict | None) -> dict:
    """Do both sides build the same robots? (DOF, TCP poses, self-collision verdicts at the same q)."""
    if not ours_main or not ref_main:
        return {}
    out: dict = {}
    od = [a["dof"] for a in ours_main["assemblies"]]
    rd = [a["dof"] for a in ref_main["assemblies"]]
    out["dof_equal"] = od == rd
    diffs = [
        max(abs(a - b) for a, b in zip(p, q))
        for p, q in zip(ours_main.get("tcp_positions", []), ref_main.get("tcp_positions", []))
    ]
    out["tcp_position_max_diff_m"] = max(diffs) if diffs else None
    fo, fr = ours_main.get("collision_flags", ""), ref_main.get("collision_flags", "")
    if fo and len(fo) == len(fr):
        out["collision_verdicts_agree"] = sum(a == b for a, b in zip(fo, fr)) / len(fo)
        out["collision_fraction_ours"] = fo.count("1") / len(fo)
        out["collision_fraction_ref"] = fr.count("1") / len(fr)
    a0o, a0r = ours_main["assemblies"][0], ref_main["assemblies"][0]
    out["first_robot_geoms_pairs_ours"] = [a0o["ngeoms"], a0o["npairs"]]
    out["first_robot_geoms_pairs_ref"] = [a0r["ngeoms"], a0r["npairs"]]
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in ("--worker", "--urdf-all"):
        return worker_main(OursAdapter, argv if argv[0] == "--urdf-all" else argv[1:])

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--reps", type=int, default=None, help="repetitions per measurement (default 7, --quick 2)")
    p.add_argument("--quick", action="store_true", help=f"{N_ASSEMBLIES_QUICK} assemblies, fewer repetitions")
    p.add_argument("--json", action="store_true", help="print the figures as JSON on stdout (the table on stderr)")
    p.add_argument("--ref-python", default=None, help="reference interpreter (default $TIMOR_REF_PYTHON or ../refvenv)")
    p.add_argument("--no-ref", action="store_true", help="measure our side only")
    p.add_argument("--cold-runs", type=int, default=None, help="fresh processes per cold figure (default 3, quick 1)")
    args = p.parse_args(argv)

    table_out = sys.stderr if args.json else sys.stdout
    if not IMPROV_JSON.is_file():
        log(f"SKIPPED: the IMPROV module set is not at {IMPROV_JSON}; all benchmark cases use it, nothing measured.")
        if args.json:
            print(json.dumps({"skipped": f"IMPROV module set missing: {IMPROV_JSON}", "cases": []}))
        return 0

    reps = args.reps or (2 if args.quick else 7)
    cold_runs = args.cold_runs or (1 if args.quick else 3)
    assemblies = improv_assemblies(N_ASSEMBLIES_QUICK if args.quick else N_ASSEMBLIES)
    spec = {
        "modules_json": str(IMPROV_JSON),
        "assemblies": [list(a) for a in assemblies],
        "reps": reps,
        "fk_calls": 1000 if args.quick else 5000,
        "collision_calls": 500 if args.quick else 2000,
        "n_q": 200,
        "seed": 7,
    }

    ref_python, ref_error = (None, "--no-ref given") if args.no_ref else resolve_ref_python(args.ref_python)
    if ref_python:  # can it import the reference at all?
        cmd, env = ref_command(ref_python)
        probe = subprocess.run(cmd + ["--probe"], capture_output=True, text=True, env=env, cwd=str(REPO), timeout=600)
        if probe.returncode != 0:
            tail = "\n".join(probe.stderr.strip().splitlines()[-8:])
            ref_python, ref_error = (
                None,
                f"{ref_python} cannot import timor-python (install it with: {ref_python} -m pip install"
                f" {REF_REQUIREMENT}):\n{tail}",
            )
    if not ref_python:
        log("=" * 78)
        log(f"REFERENCE NOT AVAILABLE ({ref_error}); reporting our figures only.")
        log("=" * 78)

    sides = {"ours": ours_command()}
    if ref_python:
        sides["ref"] = ref_command(ref_python)
    results: dict = {name: {"main": None, "cold-urdf": [], "cold-robot": []} for name in sides}
    errors: dict = {}

    for i in range(cold_runs):
        for mode in ("cold-urdf", "cold-robot"):
            for name, (cmd, env) in sides.items():
                log(f"[{name}] {mode} run {i + 1}/{cold_runs} ...")
                fig, err = run_worker(cmd, {**spec, "mode": mode}, env)
                if fig:
                    results[name][mode].append(fig)
                else:
                    errors[f"{name} {mode}"] = err
    for name, (cmd, env) in sides.items():
        log(f"[{name}] main: {len(assemblies)} assemblies x {reps} repetitions ...")
        fig, err = run_worker(cmd, {**spec, "mode": "main"}, env)
        results[name]["main"] = fig
        if err:
            errors[f"{name} main"] = err

    for what, err in errors.items():
        log(f"\nERROR in worker '{what}': {err}")

    rows = build_report(results["ours"], results.get("ref", {}))
    checks = consistency(results["ours"]["main"], results.get("ref", {}).get("main"))
    ours_main, ref_main = results["ours"]["main"], results.get("ref", {}).get("main")
    print(file=table_out)
    print(
        f"timor_core {ours_main['version'] if ours_main else '?'} (Python {platform.python_version()})"
        f" vs timor-python {ref_main['version'] if ref_main else '(not measured)'}"
        f" | {len(assemblies)} six-DOF IMPROV assemblies, {reps} reps, median per assembly"
        f" | {os.cpu_count()} CPUs",
        file=table_out,
    )
    print_table(rows, table_out)
    missed = [r for r in rows if r["met"] is False]
    print(file=table_out)
    for r in missed:
        print(f"MISSED: case {r['id']} {r['name']}: ratio {r['ratio']:.1f}x < target {r['target']:g}x", file=table_out)
    if not ref_main:
        print("(no reference figures: ratios and targets not evaluated)", file=table_out)
    if checks:
        print(
            "checks: DOF equal: {dof_equal}; TCP position max |ours - ref| over 10 q: {tcp:.2e} m;"
            " self-collision verdicts agree on {agree:.0%} of {n} q (in collision: ours {co:.0%}, ref {cr:.0%});"
            " first robot collision geometries/pairs: ours {go}, ref {gr}".format(
                dof_equal=checks["dof_equal"],
                tcp=checks["tcp_position_max_diff_m"] or 0.0,
                agree=checks.get("collision_verdicts_agree", float("nan")),
                n=spec["n_q"],
                co=checks.get("collision_fraction_ours", float("nan")),
                cr=checks.get("collision_fraction_ref", float("nan")),
                go="/".join(map(str, checks["first_robot_geoms_pairs_ours"])),
                gr="/".join(map(str, checks["first_robot_geoms_pairs_ref"])),
            ),
            file=table_out,
        )

    if args.json:
        report = {
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "command": " ".join([Path(sys.executable).name, "benchmarks/run.py", *argv]),
            "reps": reps,
            "cold_runs": cold_runs,
            "assemblies": [list(a) for a in assemblies],
            "reference_python": ref_python,
            "reference_error": None if ref_python else ref_error,
            "cases": rows,
            "missed": [r["id"] for r in missed],
            "checks": checks,
            "errors": errors,
            "raw": results,
        }
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
