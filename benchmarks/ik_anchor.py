#!/usr/bin/env python3
"""IK against the strongest anchors (issue 17): timor_core's IK, the reference's default Python IK and its compiled
``ik_method="jacobian_cpp"``, on five six-DOF IMPROV robots, the same reachable goals for all three, judged by one
rule.

    python benchmarks/ik_anchor.py                    # 30 goals per robot, 3 rounds, about half a minute
    python benchmarks/ik_anchor.py --goals 10 --json  # fewer goals, the full report as JSON

Goals: per robot, the FK of random configurations within the joint limits and free of self-collision (our model,
seeded). Tolerance: position within 1 mm (r_sph) and rotation within 1 deg (Theta_R). All three run with
self-collision ignored (the reference's ``ignore_self_collisions=True``: its self-collision check calls several
IMPROV robots colliding in every configuration; ours ``ignore_self_collision=True``, the same shortcut) and their
defaults otherwise. The judge, the same for all three and for what they were asked: the returned q is within the
joint limits and our FK of it is within 1 mm and 1 deg of the goal ("solved"). Beside it, for information only,
the share of returned q that are also free of self-collision by our checker (which no side was asked for).
``--self-collision`` runs ours with self-collision checked instead (more work on our side; the old set-up).
Each side runs in its own process (ours on this checkout's
src/timor_core; the reference under its venv's Python, ``--ref-python``, offline through ../shared/bench-ref), in
``--rounds`` rounds of alternating order; times are per call, failures included, pooled over the rounds; each
side's random generator is made outside the timed call.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = REPO.parent / "shared"
IMPROV = SHARED / "data" / "cobra" / "modules" / "IMPROV" / "modules.json"
SHIM = SHARED / "bench-ref"
ROBOTS = (
    ("1", "21", "4", "21", "5", "23", "7", "12"),
    ("1", "22", "14", "21", "15", "23", "13"),
    ("1", "29", "4", "22", "5", "23", "16"),
    ("1", "21", "5", "29", "4", "23", "8", "101"),
    ("1", "21", "14", "22", "6", "23", "12"),
)
POSITION = 0.001  # m
ANGLE = math.radians(1.0)


def _ours(spec: dict) -> list[dict]:
    import numpy as np

    from timor_core import ModuleAssembly, ModulesDB
    from timor_core.kinematics.tolerance import Composed, ProjectionTolerance

    db = ModulesDB.from_json_file(IMPROV)
    tol = Composed([ProjectionTolerance("r_sph", (0.0, POSITION)), ProjectionTolerance("Theta_R", (0.0, ANGLE))])
    out = []
    for r, ids in enumerate(spec["robots"]):
        robot = ModuleAssembly.from_serial_modules(db, list(ids)).robot
        robot.ik(np.asarray(spec["goals"][r][0]), tolerance=tol, rng=0)  # warm-up (caches, first calls)
        for k, T in enumerate(spec["goals"][r]):
            rng = np.random.default_rng(k)  # made outside the timing, as the reference's robot._rng below
            t0 = time.perf_counter()
            q, ok = robot.ik(np.asarray(T), tolerance=tol, rng=rng, ignore_self_collision=not spec["self_collision"])
            out.append({"robot": r, "goal": k, "ms": 1000 * (time.perf_counter() - t0), "ok": bool(ok),
                        "q": [float(v) for v in q]})  # fmt: skip
    return out


def _ref(spec: dict, method: str) -> list[dict]:
    sys.path.insert(0, str(SHIM))
    import logging

    import numpy as np
    import timor_offline  # noqa: F401
    from timor import ModuleAssembly, ModulesDB
    from timor.task import Tolerance
    from timor.utilities.tolerated_pose import ToleratedPose
    from timor.utilities.transformation import Transformation

    logging.getLogger("Timor").setLevel(logging.ERROR)
    db = ModulesDB.from_json_file(IMPROV)
    tol = Tolerance.Composed([Tolerance.CartesianSpheric(r=(0, POSITION)), Tolerance.RotationAbsolute(ANGLE)])
    out = []
    for r, ids in enumerate(spec["robots"]):
        robot = ModuleAssembly.from_serial_modules(db, list(ids)).robot
        goals = [ToleratedPose(Transformation(np.asarray(T)), tol) for T in spec["goals"][r]]
        robot.ik(goals[0], ik_method=method, ignore_self_collisions=True)  # warm-up
        for k, goal in enumerate(goals):
            robot._rng = np.random.default_rng(k)  # its starts come from robot._rng (no seed argument)
            t0 = time.perf_counter()
            q, ok = robot.ik(goal, ik_method=method, ignore_self_collisions=True)
            out.append({"robot": r, "goal": k, "ms": 1000 * (time.perf_counter() - t0), "ok": bool(ok),
                        "q": [float(v) for v in q]})  # fmt: skip
    return out


def _goals(n: int, seed: int) -> list[list]:
    import numpy as np

    from timor_core import ModuleAssembly, ModulesDB

    db = ModulesDB.from_json_file(IMPROV)
    rng = np.random.default_rng(seed)
    goals = []
    for ids in ROBOTS:
        robot = ModuleAssembly.from_serial_modules(db, list(ids)).robot
        mine = []
        while len(mine) < n:
            q = robot.random_configuration(rng)
            if not robot.has_self_collision(q):
                mine.append(robot.fk(q).tolist())
        goals.append(mine)
    return goals


def _judge(spec: dict, results: list[dict]) -> list[tuple[bool, bool]]:
    """The one rule, per result: (within limits and FK within 1 mm and 1 deg of the goal, that and free of
    self-collision by our checker)."""
    import numpy as np

    from timor_core import ModuleAssembly, ModulesDB

    db = ModulesDB.from_json_file(IMPROV)
    robots = [ModuleAssembly.from_serial_modules(db, list(ids)).robot for ids in spec["robots"]]
    verdicts = []
    for res in results:
        robot, T = robots[res["robot"]], np.asarray(spec["goals"][res["robot"]][res["goal"]])
        q = np.asarray(res["q"])
        lim = robot.joint_limits
        ok = q.shape == (robot.dof,) and bool(np.all(q >= lim[0] - 1e-9) and np.all(q <= lim[1] + 1e-9))
        if ok:
            R = robot.fk(q)
            angle = math.acos(max(-1.0, min(1.0, (np.trace(R[:3, :3].T @ T[:3, :3]) - 1) / 2)))
            ok = np.linalg.norm(R[:3, 3] - T[:3, 3]) <= POSITION + 1e-9 and angle <= ANGLE + 1e-9
        verdicts.append((bool(ok), bool(ok) and not robot.has_self_collision(q)))
    return verdicts


def _run_worker(python: str, side: str, spec: dict) -> list[dict]:
    # ours: the timor_core of this checkout (not whichever one is installed); the reference: its venv and the shim
    path = [str(REPO / "src" / "timor_core"), str(HERE)] if side == "ours" else [str(HERE), str(SHIM)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    proc = subprocess.run([python, __file__, "--worker", side], input=json.dumps(spec), capture_output=True,
                          text=True, env=env, timeout=3600, cwd=str(SHIM if side != "ours" else REPO))  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"{side} worker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _summary(times: list[float], verdicts: list[tuple[bool, bool]]) -> dict:
    ordered = sorted(times)
    p90 = ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]
    return {
        "success": 100.0 * sum(v[0] for v in verdicts) / len(verdicts),
        "also_self_collision_free": 100.0 * sum(v[1] for v in verdicts) / len(verdicts),
        "median_ms": statistics.median(times),
        "p90_ms": p90,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--goals", type=int, default=30, help="goals per robot (default 30)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side, in alternating order (default 3)")
    parser.add_argument("--ref-python", default=str(REPO.parent / "refvenv" / "bin" / "python"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--self-collision", action="store_true", help="ours checks self-collision (the reference not)")
    parser.add_argument("--worker", choices=("ours", "ref-python", "ref-cpp"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        spec = json.loads(sys.stdin.read())
        if args.worker == "ours":
            out = _ours(spec)
        else:
            out = _ref(spec, "jacobian" if args.worker == "ref-python" else "jacobian_cpp")
        print(json.dumps(out))
        return 0
    if not IMPROV.is_file():
        raise SystemExit(f"IMPROV not found at {IMPROV}")
    spec = {"robots": [list(r) for r in ROBOTS], "goals": _goals(args.goals, args.seed)}
    spec["self_collision"] = args.self_collision
    pythons = {"ours": sys.executable, "ref-python": args.ref_python, "ref-cpp": args.ref_python}
    pooled: dict[str, tuple[list[float], list[tuple[bool, bool]]]] = {side: ([], []) for side in pythons}
    per_round = []  # the C++ reference's median over ours, per round
    for round_ in range(args.rounds):  # alternate the order, so drifting machine load hits every side alike
        order = ("ours", "ref-cpp", "ref-python") if round_ % 2 == 0 else ("ref-cpp", "ours", "ref-python")
        times = {}
        for side in order:
            results = _run_worker(pythons[side], side, spec)
            pooled[side][0].extend(r["ms"] for r in results)
            pooled[side][1].extend(_judge(spec, results))
            if side != "ref-python":
                times[side] = statistics.median(r["ms"] for r in results)
        per_round.append(times["ref-cpp"] / times["ours"])
    report: dict = {side: _summary(*pooled[side]) for side in pythons}
    report["ours_checks_self_collision"] = args.self_collision
    ours = report["ours"]["median_ms"]
    report["ratio_vs_ref_python"] = report["ref-python"]["median_ms"] / ours
    report["ratio_vs_ref_cpp"] = report["ref-cpp"]["median_ms"] / ours
    report["ratio_vs_ref_cpp_per_round"] = per_round
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    n = len(ROBOTS) * args.goals
    head = f"IK on {len(ROBOTS)} six-DOF IMPROV robots, {n} reachable goals x {args.rounds} rounds, 1 mm / 1 deg"
    same = "ours checks self-collision, the reference not" if args.self_collision else "all ignore self-collision"
    print(head + f", judged by our FK and the limits ({same})")
    print(f"{'side':<12}{'solved %':>10}{'median ms':>12}{'p90 ms':>10}{'  also self-collision free % (info)'}")
    for side in ("ours", "ref-python", "ref-cpp"):
        r = report[side]
        print(f"{side:<12}{r['success']:>10.1f}{r['median_ms']:>12.2f}{r['p90_ms']:>10.2f}"
              f"{r['also_self_collision_free']:>10.1f}")  # fmt: skip
    print(f"median ratio: {report['ratio_vs_ref_python']:.2f}x vs the reference's Python IK (target >= 5), "
          f"{report['ratio_vs_ref_cpp']:.2f}x vs its C++ IK (target >= 1)")  # fmt: skip
    print("per round vs its C++ IK: " + ", ".join(f"{x:.2f}x" for x in per_round))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
