#!/usr/bin/env python3
"""Benchmark timor_core against the reference toolbox (timor-python 1.1.1), side by side in one run.

Usage::

    python benchmarks/run.py                 # full run (both sides), table on stdout
    python benchmarks/run.py --quick         # fewer assemblies and repetitions
    python benchmarks/run.py --json > b.json # table on stderr, JSON on stdout
    python benchmarks/run.py --no-ref        # our figures only
    python benchmarks/run.py --only ik,collision   # only some groups (main, cold, collision, ik)

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
import math
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
    DB load, then the very first URDF / robot with collision pairs), ``collision`` (self-collision
    checks on the first assembly, ``measure_collision``), ``ik-goals`` / ``ik`` (make the IK goals /
    solve them, ``make_ik_goals`` / ``measure_ik``), or ``urdf-all`` (build the URDF of every assembly
    once; for whole-process timing).
    """
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
    # cold paths: collect first, so that a full collection of what the import and the DB load allocated (up to
    # ~0.2 s for the reference) does not land in the timed region by chance (it did, depending on allocation counts)
    if mode == "cold-urdf":
        gc.collect()
        t0 = _now()
        ad.urdf(ad.assembly(db, ids_list[0]))
        out["first_ms"] = _ms(t0)
        return out
    if mode == "cold-robot":
        gc.collect()
        t0 = _now()
        ad.pairs(ad.robot(ad.assembly(db, ids_list[0])))
        out["first_ms"] = _ms(t0)
        return out
    if mode == "collision":
        return measure_collision(ad, db, spec, out)
    if mode == "ik-goals":
        return make_ik_goals(ad, db, spec, out)
    if mode == "ik":
        return measure_ik(ad, db, spec, out)
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

    # per-call FK on one robot (the first assembly) at random configurations within the limits
    # (self-collision checks: measure_collision, its own mode)
    robot = keep[0][1]
    qs = random_qs(ad, robot, int(spec.get("n_q", 200)), int(spec.get("seed", 7)))
    out["tcp_positions"] = [[float(x) for x in ad.tcp_position(robot, q)] for q in qs[:10]]
    out["fk_us"] = per_call_us(ad.fk, robot, qs, int(spec["fk_calls"]), reps)
    out["rss_end_mb"] = peak_rss_mb()
    return out


def random_qs(ad, robot, n: int, seed: int) -> list:
    """``n`` configurations drawn uniformly within the joint limits ([-pi, pi] where unlimited); the same
    on both sides (numpy's PCG64 stream does not depend on the numpy version)."""
    import numpy as np

    lo, hi = sampling_limits(ad, robot)
    rng = np.random.default_rng(seed)
    return [rng.uniform(lo, hi) for _ in range(n)]


def sampling_limits(ad, robot):
    """The joint limits as two arrays, [-pi, pi] where a joint has none."""
    import numpy as np

    lo, hi = (np.asarray(x, dtype=float) for x in ad.limits(robot))
    lo = np.where(np.isfinite(lo) & (lo > -1e300), lo, -np.pi)
    hi = np.where(np.isfinite(hi) & (hi < 1e300), hi, np.pi)
    return lo, hi


def per_call_us(fn, robot, qs: list, calls: int, reps: int, cpu: list | None = None) -> float:
    """µs per ``fn(robot, q)``, cycling over ``qs``; median over ``reps`` runs of ``calls`` calls.

    If ``cpu`` is a list, the median of the same runs in CPU time of this process is appended to it (less
    sensitive to other jobs on a shared machine than the wall-clock figure).
    """
    per_call, per_call_cpu = [], []
    nq = len(qs)
    for _ in range(reps):
        gc.collect()
        c0 = time.process_time()
        t0 = _now()
        for i in range(calls):
            fn(robot, qs[i % nq])
        per_call.append((time.perf_counter() - t0) * 1e6 / calls)
        per_call_cpu.append((time.process_time() - c0) * 1e6 / calls)
    if cpu is not None:
        cpu.append(statistics.median(per_call_cpu))
    return statistics.median(per_call)


def _robot_of(ad, db, ids) -> object:
    """The robot of an assembly with its collision pairs built (untimed set-up)."""
    robot = ad.robot(ad.assembly(db, tuple(ids)))
    ad.pairs(robot)
    return robot


def measure_collision(ad, db, spec: dict, out: dict) -> dict:
    """Self-collision checks of one robot (``spec['collision_assembly']``) at random configurations.

    ``self_collision_us``: cycling over ``n_q`` random q within the limits (about 30 % of them in
    collision, where a check may stop at the first colliding pair); ``self_collision_free_us``: only
    the q this side finds collision-free (every pair has to be checked: the common case in planning).
    """
    ids = spec.get("collision_assembly") or spec["assemblies"][0]
    reps, calls = int(spec["reps"]), int(spec["collision_calls"])
    robot = _robot_of(ad, db, ids)
    qs = random_qs(ad, robot, int(spec.get("n_q", 200)), int(spec.get("seed", 7)))
    flags = [ad.self_collision(robot, q) for q in qs]
    free = [q for q, hit in zip(qs, flags) if not hit]
    out["collision_assembly"] = list(ids)
    out["ngeoms"], out["npairs"] = ad.ngeoms(robot), ad.pairs(robot)
    out["collision_flags"] = "".join("1" if hit else "0" for hit in flags)
    cpu: list = []
    out["self_collision_us"] = per_call_us(ad.self_collision, robot, qs, calls, reps, cpu)
    out["self_collision_free_us"] = per_call_us(ad.self_collision, robot, free, calls, reps, cpu) if free else None
    out["self_collision_cpu_us"] = cpu[0]
    out["self_collision_free_cpu_us"] = cpu[1] if free else None
    out["n_free_q"] = len(free)
    return out


# -- inverse kinematics --------------------------------------------------------------------------------
#: The goal tolerance of the user study: position ±1 mm in x, y, z (nominal frame), rotation up to 45°.
IK_PROJECTIONS = ["x", "y", "z", "Theta_R"]
IK_INTERVALS = [[-0.001, 0.001], [-0.001, 0.001], [-0.001, 0.001], [0.0, 0.7853981633974483]]
IK_SLACK = 1e-12  # rounding allowance at the bounds (both libraries allow the same)


def make_ik_goals(ad, db, spec: dict, out: dict) -> dict:
    """``ik_goals`` reachable goals for the robot ``spec['ik_assembly']``: the TCP poses of random
    configurations within the limits (seeded ``ik_seed``) that this side finds free of self-collision."""
    import numpy as np

    robot = _robot_of(ad, db, spec["ik_assembly"])
    n, seed = int(spec["ik_goals"]), int(spec["ik_seed"])
    goals, drawn = [], 0
    rng = np.random.default_rng(seed)
    lo, hi = sampling_limits(ad, robot)
    while len(goals) < n:
        q = rng.uniform(lo, hi)
        drawn += 1
        if ad.self_collision(robot, q):
            continue
        goals.append({"q": [float(x) for x in q], "T": np.asarray(ad.tcp_pose(robot, q)).tolist()})
    out["goals"] = goals
    out["drawn"] = drawn
    return out


def ik_pose_check(T_goal, T_real, intervals=IK_INTERVALS) -> tuple[bool, float, float]:
    """The tolerance checked with plain numpy, independently of both libraries: position deviation in the
    goal's axes within the x/y/z intervals and rotation angle within the Theta_R interval.
    Returns (valid, largest position deviation in m, rotation angle in rad)."""
    import numpy as np

    D, R = np.asarray(T_goal, dtype=float), np.asarray(T_real, dtype=float)
    e = D[:3, :3].T @ (R[:3, 3] - D[:3, 3])
    E = D[:3, :3].T @ R[:3, :3]
    s = np.linalg.norm([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]]) / 2
    c = (np.trace(E) - 1) / 2
    angle = float(np.arctan2(s, c))
    ok = all(lo - IK_SLACK <= v <= hi + IK_SLACK for v, (lo, hi) in zip(e, intervals[:3]))
    ok = ok and intervals[3][0] - IK_SLACK <= angle <= intervals[3][1] + IK_SLACK
    return bool(ok), float(np.abs(e).max()), angle


def measure_ik(ad, db, spec: dict, out: dict) -> dict:
    """IK calls on the goals (``spec['goals']``), each side with its default settings (both reject
    self-colliding solutions by default), each call seeded with the goal's index.

    ``ik_reps`` passes over all goals; every call is deterministic (same seed, same work), so the time per
    goal is the median over the passes (filters out load spikes of a shared machine), and the passes must
    return the same q (``ik_deterministic``). A call counts as a success only if the library says so
    **and** the returned q reaches the goal (the library's own tolerance check and ``ik_pose_check``), lies
    within the joint limits and is free of self-collision (this side's check). Building the goal object
    (ours: a 4x4 array and one tolerance for all goals; the reference: a ToleratedPose per goal) is not
    timed.
    """
    import numpy as np

    robot = _robot_of(ad, db, spec["ik_assembly"])
    goals = spec["goals"]
    reps = max(1, int(spec.get("ik_reps", 1)))
    lo, hi = (np.asarray(x, dtype=float) for x in ad.limits(robot))
    objs = [ad.ik_goal(g["T"], IK_PROJECTIONS, IK_INTERVALS) for g in goals]
    # consistency of the goals on this side: FK of the source q and its self-collision verdict
    out["goal_fk_max_diff"] = max(
        float(np.abs(np.asarray(ad.tcp_pose(robot, np.asarray(g["q"]))) - np.asarray(g["T"])).max()) for g in goals
    )
    out["goal_sources_in_collision"] = sum(bool(ad.self_collision(robot, np.asarray(g["q"]))) for g in goals)
    ad.ik(robot, objs[0], 10**6)  # warm-up (lazy set-up such as collision checkers), untimed
    n = len(goals)
    times: list[list[float]] = [[] for _ in range(n)]
    cpu_times: list[list[float]] = [[] for _ in range(n)]
    first: list = [None] * n
    deterministic = True
    for _ in range(reps):
        gc.collect()
        for k, obj in enumerate(objs):
            c0 = time.process_time()
            t0 = _now()
            q, ok = ad.ik(robot, obj, k)
            times[k].append(_ms(t0))
            cpu_times[k].append((time.process_time() - c0) * 1e3)
            q = np.array(q, dtype=float)
            if first[k] is None:
                first[k] = (q, bool(ok))
            elif bool(ok) != first[k][1] or not np.array_equal(q, first[k][0]):
                deterministic = False
    claimed, success = 0, 0
    rejected = {"pose (library check)": 0, "pose (plain check)": 0, "joint limits": 0, "self-collision": 0}
    worst = [0.0, 0.0]
    for g, obj, (q, ok) in zip(goals, objs, first):
        if not ok:
            continue
        claimed += 1
        lib_ok = bool(ad.ik_valid(robot, obj, q))
        plain_ok, dpos, angle = ik_pose_check(g["T"], ad.tcp_pose(robot, q))
        in_limits = bool(np.all(q >= lo - 1e-9) and np.all(q <= hi + 1e-9))
        free = not ad.self_collision(robot, q)
        worst = [max(worst[0], dpos), max(worst[1], angle)]
        for key, good in (
            ("pose (library check)", lib_ok),
            ("pose (plain check)", plain_ok),
            ("joint limits", in_limits),
            ("self-collision", free),
        ):
            rejected[key] += not good
        success += lib_ok and plain_ok and in_limits and free
    per_goal = [statistics.median(t) for t in times]
    out["ik_assembly"] = list(spec["ik_assembly"])
    out["ik_settings"] = ad.ik_settings
    out["ik_n"] = n
    out["ik_reps"] = reps
    out["ik_deterministic"] = deterministic
    out["ik_claimed"] = claimed
    out["ik_success"] = success
    out["ik_success_pct"] = 100.0 * success / n
    out["ik_rejected"] = rejected
    out["ik_worst_position_m"], out["ik_worst_angle_rad"] = worst
    out["ik_ms"] = per_goal
    out["ik_ms_all_passes"] = times
    out["ik_q"] = [[float(x) for x in q] for q, _ in first]
    out["ik_ok"] = [ok for _, ok in first]
    out["ik_median_ms"] = float(np.median(per_goal))
    out["ik_p90_ms"] = float(np.percentile(per_goal, 90))
    out["ik_mean_ms"] = float(np.mean(per_goal))
    out["ik_cpu_ms"] = [statistics.median(t) for t in cpu_times]
    out["ik_cpu_median_ms"] = float(np.median(out["ik_cpu_ms"]))
    out["ik_cpu_p90_ms"] = float(np.percentile(out["ik_cpu_ms"], 90))
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

    def tcp_pose(self, robot, q):
        return robot.fk(q)

    # inverse kinematics: defaults (50 tries x 60 LM iterations, self-collision rejected)
    ik_settings = "robot.ik(T, tolerance=tol, rng=k): defaults, self-colliding solutions rejected"

    def ik_goal(self, T, projections, intervals):
        import numpy as np

        key = (tuple(projections), tuple(map(tuple, intervals)))
        if getattr(self, "_tol_key", None) != key:
            from timor_core.kinematics.tolerance import tolerance_from_json

            self._tol_key, self._tol = key, tolerance_from_json(list(projections), [list(iv) for iv in intervals])
        return np.asarray(T, dtype=float), self._tol

    def ik(self, robot, goal, seed):
        T, tol = goal
        return robot.ik(T, tolerance=tol, rng=seed)

    def ik_valid(self, robot, goal, q) -> bool:
        T, tol = goal
        return tol.valid(T, robot.fk(q))

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
        [str(py), "-m", "pip", "install", "-q", REF_REQUIREMENT, "tqdm"],  # its GA imports tqdm, undeclared
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


def merge_rounds(mode: str, figs: list[dict]) -> dict | None:
    """One side's figures of several worker runs (rounds) of a mode: medians over the rounds.

    collision: the per-call figures; ik: the time per goal (then median / p90 / mean over the goals), and
    whether every round returned the same q and verdict for every goal (each call is seeded).
    """
    if not figs:
        return None
    out = dict(figs[0])
    out["rounds"] = len(figs)
    if len(figs) == 1:
        return out
    if mode == "collision":
        for key in (
            "self_collision_us",
            "self_collision_free_us",
            "self_collision_cpu_us",
            "self_collision_free_cpu_us",
        ):
            vals = [f[key] for f in figs if f.get(key) is not None]
            out[f"{key}_rounds"] = vals
            out[key] = statistics.median(vals) if vals else None
    elif mode == "ik":
        per_goal = [statistics.median(ts) for ts in zip(*(f["ik_ms"] for f in figs))]
        out["ik_ms"] = per_goal
        out["ik_ms_rounds"] = [f["ik_ms"] for f in figs]
        out["ik_median_ms"] = statistics.median(per_goal)
        out["ik_p90_ms"] = _percentile(per_goal, 90)
        out["ik_mean_ms"] = statistics.fmean(per_goal)
        out["ik_median_ms_rounds"] = [f["ik_median_ms"] for f in figs]
        cpu = [statistics.median(ts) for ts in zip(*(f["ik_cpu_ms"] for f in figs))]
        out["ik_cpu_ms"] = cpu
        out["ik_cpu_median_ms"] = statistics.median(cpu)
        out["ik_cpu_p90_ms"] = _percentile(cpu, 90)
        out["ik_cpu_median_ms_rounds"] = [f["ik_cpu_median_ms"] for f in figs]
        out["ik_deterministic"] = all(f["ik_deterministic"] for f in figs) and all(
            f["ik_q"] == figs[0]["ik_q"] and f["ik_ok"] == figs[0]["ik_ok"] for f in figs
        )
        out["ik_success_rounds"] = [f["ik_success"] for f in figs]
    return out


def _percentile(values: list[float], pct: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), standard library only."""
    xs = sorted(values)
    pos = (len(xs) - 1) * pct / 100
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


GROUPS = ("main", "cold", "collision", "ik")

CASES = (
    # id, name, unit, key, target, source (the worker mode it comes from), group (for --only)
    # target: None, ("ratio", x) (reference/ours >= x) or ("ours_min", x) (our figure >= x; no ratio shown)
    ("1", "ids -> URDF string", "ms/assembly", "urdf_ms", ("ratio", 20.0), "main", "main"),
    ("2a", "ids -> robot (.robot)", "ms/assembly", "robot_ms", ("ratio", 10.0), "main", "main"),
    ("2b", "ids -> robot + collision pairs", "ms/assembly", "robot_pairs_ms", ("ratio", 10.0), "main", "main"),
    ("3a", "FK (TCP pose) at a random q", "us/call", "fk_us", None, "main", "main"),
    (
        "3b",
        "self-collision check at a random q",
        "us/call",
        "self_collision_us",
        ("ratio", 3.0),
        "collision",
        "collision",
    ),
    (
        "3c",
        "self-collision check, collision-free q only",
        "us/call",
        "self_collision_free_us",
        ("ratio", 3.0),
        "collision",
        "collision",
    ),
    ("4", "DB load (IMPROV modules.json)", "ms", "db_load_ms", None, "main", "main"),
    ("5", "peak RSS after building all robots", "MB", "rss_after_build_mb", None, "main", "main"),
    ("5b", "peak RSS after import (baseline)", "MB", "rss_after_import_mb", None, "main", "main"),
    ("i1", "IK success (+-1 mm, Theta_R <= 45 deg), verified", "%", "ik_success_pct", ("ours_min", 99.0), "ik", "ik"),
    ("i2", "IK time per call, median", "ms/call", "ik_median_ms", ("ratio", 5.0), "ik", "ik"),
    ("i3", "IK time per call, 90th percentile", "ms/call", "ik_p90_ms", None, "ik", "ik"),
    ("c1", "cold: import", "ms", "import_ms", None, "cold-urdf", "cold"),
    ("c2", "cold: first DB load", "ms", "db_load_first_ms", None, "cold-urdf", "cold"),
    ("c3", "cold: first ids -> URDF (after DB load)", "ms", "first_ms", None, "cold-urdf", "cold"),
    ("c4", "cold: first ids -> robot + pairs (after DB load)", "ms", "first_ms", None, "cold-robot", "cold"),
)
SINGLE_RUN_MODES = ("main", "collision", "ik")  # one worker run each; the cold modes are lists of runs


def build_report(ours: dict, ref: dict, groups=GROUPS) -> list[dict]:
    """One row per case of the selected groups, from both sides' figures ({'main': {...}, 'cold-urdf': [...], ...})."""
    rows = []
    for cid, name, unit, key, target, source, group in CASES:
        if group not in groups:
            continue

        def get(side, source=source, key=key):
            if source in SINGLE_RUN_MODES:
                m = side.get(source)
                return m.get(key) if m else None
            return _median_of(side.get(source, []), key)

        o, r = get(ours), get(ref)
        kind, value = target if target else (None, None)
        ratio = r / o if (o and r and kind != "ours_min") else None
        if kind == "ratio":
            met = None if ratio is None else ratio >= value
        elif kind == "ours_min":
            met = None if o is None else o >= value
        else:
            met = None
        rows.append(
            {
                "id": cid,
                "name": name,
                "unit": unit,
                "ours": o,
                "ref": r,
                "ratio": ratio,
                "target": value,
                "target_kind": kind,
                "met": met,
            }
        )
    return rows


def _target_text(r: dict) -> str:
    if r["target_kind"] is None:
        return ""
    text = f">= {r['target']:g}x" if r["target_kind"] == "ratio" else f"ours >= {r['target']:g}"
    if r["met"] is None:
        return f"{text}  (not measured)"
    return f"{text}  " + ("met" if r["met"] else "MISSED")


def print_table(rows: list[dict], file) -> None:
    head = f"{'case':<4} {'what':<49} {'unit':<12} {'ours':>9} {'reference':>10} {'ref/ours':>9}  target"
    print(head, file=file)
    print("-" * len(head) + "--------", file=file)
    for r in rows:
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:.1f}x"
        ours, ref = _fmt(r["ours"]), _fmt(r["ref"])
        print(
            f"{r['id']:<4} {r['name']:<49} {r['unit']:<12} {ours:>9} {ref:>10} {ratio:>9}  {_target_text(r)}", file=file
        )


def _missed_text(r: dict) -> str:
    if r["target_kind"] == "ours_min":
        return f"MISSED: case {r['id']} {r['name']}: ours {_fmt(r['ours'])} < target {r['target']:g} {r['unit']}"
    return f"MISSED: case {r['id']} {r['name']}: ratio {r['ratio']:.2f}x < target {r['target']:g}x"


def consistency(ours: dict, ref: dict) -> dict:
    """Do both sides build the same robots? (DOF, TCP poses, self-collision verdicts at the same q; IK goals.)"""
    out: dict = {}
    om, rm = ours.get("main"), ref.get("main")
    if om and rm:
        od = [a["dof"] for a in om["assemblies"]]
        rd = [a["dof"] for a in rm["assemblies"]]
        out["dof_equal"] = od == rd
        diffs = [
            max(abs(a - b) for a, b in zip(p, q))
            for p, q in zip(om.get("tcp_positions", []), rm.get("tcp_positions", []))
        ]
        out["tcp_position_max_diff_m"] = max(diffs) if diffs else None
        a0o, a0r = om["assemblies"][0], rm["assemblies"][0]
        out["first_robot_geoms_pairs_ours"] = [a0o["ngeoms"], a0o["npairs"]]
        out["first_robot_geoms_pairs_ref"] = [a0r["ngeoms"], a0r["npairs"]]
    oc, rc = ours.get("collision"), ref.get("collision")
    if oc and rc:
        fo, fr = oc.get("collision_flags", ""), rc.get("collision_flags", "")
        if fo and len(fo) == len(fr):
            out["collision_verdicts_agree"] = sum(a == b for a, b in zip(fo, fr)) / len(fo)
            out["collision_fraction_ours"] = fo.count("1") / len(fo)
            out["collision_fraction_ref"] = fr.count("1") / len(fr)
            out["collision_n_q"] = len(fo)
        out["first_robot_geoms_pairs_ours"] = [oc["ngeoms"], oc["npairs"]]
        out["first_robot_geoms_pairs_ref"] = [rc["ngeoms"], rc["npairs"]]
    oi, ri = ours.get("ik"), ref.get("ik")
    if oi and ri:
        out["ik_goal_sources_in_collision_ref"] = ri["goal_sources_in_collision"]
        out["ik_goal_fk_max_diff_ref"] = ri["goal_fk_max_diff"]
    return out


def _checks_text(checks: dict) -> list[str]:
    lines = []
    if "dof_equal" in checks:
        lines.append(
            f"checks: DOF equal: {checks['dof_equal']}; TCP position max |ours - ref| over 10 q:"
            f" {checks['tcp_position_max_diff_m'] or 0.0:.2e} m"
        )
    if "collision_verdicts_agree" in checks:
        lines.append(
            "checks: self-collision verdicts agree on {agree:.0%} of {n} q (in collision: ours {co:.0%}, ref {cr:.0%});"
            " first robot collision geometries/pairs: ours {go}, ref {gr}".format(
                agree=checks["collision_verdicts_agree"],
                n=checks["collision_n_q"],
                co=checks["collision_fraction_ours"],
                cr=checks["collision_fraction_ref"],
                go="/".join(map(str, checks["first_robot_geoms_pairs_ours"])),
                gr="/".join(map(str, checks["first_robot_geoms_pairs_ref"])),
            )
        )
    return lines


def _rounds_text(ours: dict, ref: dict) -> list[str]:
    """The per-round figures behind the merged collision / IK medians (to see the spread of a noisy machine)."""

    def fmt(fig, key):
        vals = (fig or {}).get(f"{key}_rounds")
        return "/".join(_fmt(v) for v in vals) if vals else "-"

    lines = []
    for mode, cases in (
        ("collision", (("3b", "self_collision_us"), ("3c", "self_collision_free_us"))),
        ("ik", (("i2", "ik_median_ms"),)),
    ):
        o, r = ours.get(mode), ref.get(mode)
        if (o or {}).get("rounds", 1) > 1 or (r or {}).get("rounds", 1) > 1:
            parts = [f"{cid} ours {fmt(o, key)}, ref {fmt(r, key)}" for cid, key in cases]
            lines.append(f"per round ({mode}): " + "; ".join(parts))
    return lines


def _cpu_text(ours: dict, ref: dict) -> list[str]:
    """The collision and IK figures in CPU time of the worker (a check on wall-clock figures of a busy machine)."""
    parts = []
    for cid, mode, key, unit in (
        ("3b", "collision", "self_collision_cpu_us", "us"),
        ("3c", "collision", "self_collision_free_cpu_us", "us"),
        ("i2", "ik", "ik_cpu_median_ms", "ms"),
        ("i3", "ik", "ik_cpu_p90_ms", "ms"),
    ):
        o, r = (ours.get(mode) or {}).get(key), (ref.get(mode) or {}).get(key)
        if o is None:
            continue
        ratio = f" = {r / o:.1f}x" if (o and r) else ""
        parts.append(f"{cid} ours {_fmt(o)} {unit}, ref {_fmt(r)} {unit}{ratio}")
    return ["in CPU time of the worker process: " + "; ".join(parts)] if parts else []


def _ik_text(
    goals_fig: dict | None, spec: dict, rounds: int, ours: dict | None, ref: dict | None, checks: dict
) -> list[str]:
    if not goals_fig:
        return []
    n = len(goals_fig["goals"])
    lines = [
        f"IK: {n} goals for {'-'.join(spec['ik_assembly'])}: TCP poses of random collision-free q (seed"
        f" {spec['ik_seed']}, {goals_fig['drawn']} q drawn); each call seeded with the goal's index; time per goal:"
        f" median of {rounds} round(s) x {spec['ik_reps']} pass(es)"
    ]
    if "ik_goal_sources_in_collision_ref" in checks:
        lines.append(
            f"    the reference finds {checks['ik_goal_sources_in_collision_ref']} of the {n} source q in"
            " self-collision;"
            f" its FK of them differs from the goals by at most {checks['ik_goal_fk_max_diff_ref']:.1e}"
        )
    for label, fig in (("ours", ours), ("ref ", ref)):
        if not fig:
            continue
        rej = ", ".join(f"{k} {v}" for k, v in fig["ik_rejected"].items() if v) or "none"
        lines.append(
            f"    {label}: {fig['ik_claimed']}/{n} reported success, {fig['ik_success']} verified"
            f" (reported but rejected: {rej}); worst deviation among the reported:"
            f" {fig['ik_worst_position_m'] * 1e3:.3f} mm,"
            f" {math.degrees(fig['ik_worst_angle_rad']):.1f} deg; mean {fig['ik_mean_ms']:.1f} ms/call;"
            f" all passes/rounds identical: {fig['ik_deterministic']}"
        )
    return lines


def git_state() -> str:
    """The library's source state (commit, +dirty if the work tree differs), or '?'."""
    try:
        proc = subprocess.run(
            ["git", "-C", str(REPO), "describe", "--always", "--dirty=+dirty"],
            capture_output=True,
            text=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return proc.stdout.strip() or "?"


def parse_groups(text: str | None) -> tuple[str, ...]:
    if not text:
        return GROUPS
    groups = tuple(g.strip() for g in text.split(",") if g.strip())
    unknown = [g for g in groups if g not in GROUPS]
    if unknown or not groups:
        raise SystemExit(f"--only: unknown group(s) {unknown}; choose from {', '.join(GROUPS)}")
    return groups


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
    p.add_argument("--only", default=None, help=f"comma-separated groups to run (default all): {', '.join(GROUPS)}")
    p.add_argument("--ik-goals", type=int, default=None, help="number of IK goals (default 200, --quick 40)")
    p.add_argument("--ik-reps", type=int, default=None, help="passes over the IK goals per worker (default 1)")
    p.add_argument(
        "--rounds",
        type=int,
        default=None,
        help="alternating worker runs per side for collision and ik (default 3, quick 1)",
    )
    args = p.parse_args(argv)
    groups = parse_groups(args.only)

    table_out = sys.stderr if args.json else sys.stdout
    if not IMPROV_JSON.is_file():
        log(f"SKIPPED: the IMPROV module set is not at {IMPROV_JSON}; all benchmark cases use it, nothing measured.")
        if args.json:
            print(json.dumps({"skipped": f"IMPROV module set missing: {IMPROV_JSON}", "cases": []}))
        return 0

    reps = args.reps or (2 if args.quick else 7)
    cold_runs = args.cold_runs or (1 if args.quick else 3)
    rounds = args.rounds or (1 if args.quick else 3)
    assemblies = improv_assemblies(N_ASSEMBLIES_QUICK if args.quick else N_ASSEMBLIES)
    spec = {
        "modules_json": str(IMPROV_JSON),
        "assemblies": [list(a) for a in assemblies],
        "reps": reps,
        "fk_calls": 1000 if args.quick else 5000,
        "collision_calls": 500 if args.quick else 2000,
        "n_q": 200,
        "seed": 7,
        "collision_assembly": list(EXAMPLE),
        "ik_assembly": list(EXAMPLE),
        "ik_goals": args.ik_goals or (40 if args.quick else 200),
        "ik_seed": 2024,
        "ik_reps": args.ik_reps or 1,
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

    library_at_start = git_state()
    sides = {"ours": ours_command()}
    if ref_python:
        sides["ref"] = ref_command(ref_python)
    results: dict = {
        name: {"main": None, "cold-urdf": [], "cold-robot": [], "collision": None, "ik": None} for name in sides
    }
    errors: dict = {}

    if "cold" in groups:
        for i in range(cold_runs):
            for mode in ("cold-urdf", "cold-robot"):
                for name, (cmd, env) in sides.items():
                    log(f"[{name}] {mode} run {i + 1}/{cold_runs} ...")
                    fig, err = run_worker(cmd, {**spec, "mode": mode}, env)
                    if fig:
                        results[name][mode].append(fig)
                    else:
                        errors[f"{name} {mode}"] = err
    goals_fig = None
    if "ik" in groups:  # the goals come from our side (FK + self-collision check) and go to both as JSON
        log(f"[ours] ik-goals: {spec['ik_goals']} reachable goals ...")
        goals_fig, err = run_worker(sides["ours"][0], {**spec, "mode": "ik-goals"}, sides["ours"][1])
        if err:
            errors["ours ik-goals"] = err
    for mode in SINGLE_RUN_MODES:
        if mode not in groups or (mode == "ik" and not goals_fig):
            continue
        mode_spec = {**spec, "mode": mode}
        if mode == "ik":
            mode_spec["goals"] = goals_fig["goals"]
        # collision and IK: `rounds` fresh workers per side, alternating ours / reference, so that a burst of
        # load on a shared machine does not fall on one side only; the figures are merged (medians)
        n_rounds = 1 if mode == "main" else rounds
        per_round: dict = {name: [] for name in sides}
        for i in range(n_rounds):
            for name, (cmd, env) in sides.items():
                what = {
                    "main": f"{len(assemblies)} assemblies x {reps} repetitions",
                    "collision": f"{spec['n_q']} q x {spec['collision_calls']} calls x {reps} repetitions",
                    "ik": f"{len(goals_fig['goals']) if goals_fig else 0} goals x {spec['ik_reps']} passes",
                }[mode]
                log(f"[{name}] {mode}: {what}" + (f", round {i + 1}/{n_rounds}" if n_rounds > 1 else "") + " ...")
                fig, err = run_worker(cmd, mode_spec, env)
                if fig:
                    per_round[name].append(fig)
                else:
                    errors[f"{name} {mode}" + (f" round {i + 1}" if n_rounds > 1 else "")] = err
        for name in sides:
            results[name][mode] = merge_rounds(mode, per_round[name])

    for what, err in errors.items():
        log(f"\nERROR in worker '{what}': {err}")

    ours_res, ref_res = results["ours"], results.get("ref", {})
    rows = build_report(ours_res, ref_res, groups)
    checks = consistency(ours_res, ref_res)
    version = next((f["version"] for f in (ours_res["main"], ours_res["collision"], ours_res["ik"]) if f), None)
    ref_version = next(
        (f["version"] for f in (ref_res.get("main"), ref_res.get("collision"), ref_res.get("ik")) if f), None
    )
    library = library_at_start
    if git_state() != library_at_start:  # someone committed while the run was going on
        library = f"{library_at_start} -> {git_state()} during the run"
    print(file=table_out)
    print(
        f"timor_core {version or '?'} ({library}, Python {platform.python_version()})"
        f" vs timor-python {ref_version or '(not measured)'}"
        f" | {len(assemblies)} six-DOF IMPROV assemblies, {reps} reps, median per assembly"
        f" | {os.cpu_count()} CPUs",
        file=table_out,
    )
    print_table(rows, table_out)
    missed = [r for r in rows if r["met"] is False]
    print(file=table_out)
    for r in missed:
        print(_missed_text(r), file=table_out)
    if not ref_python:
        print("(no reference figures: ratios and targets not evaluated)", file=table_out)
    for line in (
        _checks_text(checks)
        + _rounds_text(ours_res, ref_res)
        + _cpu_text(ours_res, ref_res)
        + _ik_text(goals_fig, spec, rounds, ours_res["ik"], ref_res.get("ik"), checks)
    ):
        print(line, file=table_out)

    if args.json:
        report = {
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "command": " ".join([Path(sys.executable).name, "benchmarks/run.py", *argv]),
            "library": library,
            "groups": list(groups),
            "reps": reps,
            "cold_runs": cold_runs,
            "rounds": rounds,
            "assemblies": [list(a) for a in assemblies],
            "reference_python": ref_python,
            "reference_error": None if ref_python else ref_error,
            "cases": rows,
            "missed": [r["id"] for r in missed],
            "checks": checks,
            "errors": errors,
            "ik_goals": goals_fig,
            "raw": results,
        }
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
