#!/usr/bin/env python3
"""IK against the strongest anchors (issues 17 and 38): timor_core's IK against the reference's compiled
``ik_method="jacobian_cpp"`` (and, with ``--python-ik``, its default Python IK), on five six-DOF IMPROV robots and
three arms of example-robot-data (UR5, Panda, xArm7), the same goals for all sides, judged by one rule.

    python benchmarks/ik_anchor.py                     # 8 robots x 30 goals, 3 alternating rounds, about a minute
    python benchmarks/ik_anchor.py --goals 10 --json   # fewer goals, the full report as JSON

Goals: per robot, the FK of random configurations within the joint limits and free of self-collision (our model,
seeded): reachable by construction. Tolerance: position within 1 mm (r_sph) and rotation within 1 deg (Theta_R).
Every side runs with self-collision ignored (the reference's ``ignore_self_collisions=True``; ours
``ignore_self_collision=True``) and its defaults otherwise. The judge, one for all: the returned q is within the
joint limits and our FK of it is within 1 mm and 1 deg of the goal ("solved").

Unreachable goals (``--unreachable`` per robot, default 10): a reachable goal's position moved along the ray from
the robot's base to 1.05-1.5 times our reach bound (a sound upper bound of the TCP's distance from the base: the
sum of the link lengths), so no configuration reaches it; every side must fail them, and their time is reported
apart (ours refuses them by that bound without iterating).

Timing: per call, the wall clock (``perf_counter``) and the calling thread's CPU time (``thread_time``: a share of
the CPU lost to other jobs on a busy machine does not count), failures included; "per solved goal" is the total
time of the reachable goals' calls over the number solved. Each side runs in its own process (ours on this
checkout's src/timor_core, by default as a fresh process runs it with no setting: ``--kernels``; the reference
under its venv's Python, ``--ref-python``, offline through ../shared/bench-ref), in ``--rounds`` rounds of
alternating order; each side's random generator is made outside the timed call. Each worker also reports its whole
process's CPU time (``process_time`` at its end: interpreter, imports, robots, warm-up calls, any kernel loading).
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
from importlib import metadata
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SHARED = REPO.parent / "shared"
IMPROV = SHARED / "data" / "cobra" / "modules" / "IMPROV" / "modules.json"
SHIM = SHARED / "bench-ref"
IMPROV_ROBOTS = (
    ("1", "21", "4", "21", "5", "23", "7", "12"),
    ("1", "22", "14", "21", "15", "23", "13"),
    ("1", "29", "4", "22", "5", "23", "16"),
    ("1", "21", "5", "29", "4", "23", "8", "101"),
    ("1", "21", "14", "22", "6", "23", "12"),
)
ARMS = (  # example-robot-data: (name, URDF below share/example-robot-data/robots)
    ("ur5", "ur_description/urdf/ur5_robot.urdf"),
    ("panda", "panda_description/urdf/panda.urdf"),
    ("xarm7", "xarm_description/urdf/xarm7.urdf"),
)
POSITION = 0.001  # m
ANGLE = math.radians(1.0)


def robots_share() -> Path | None:
    """The ``share/example-robot-data`` folder of the installed package (None without it)."""
    try:
        files = metadata.files("example-robot-data") or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if str(f).endswith("robots/ur_description/urdf/ur5_robot.urdf"):
            return Path(f.locate()).resolve().parents[3]
    return None


def robot_specs(share: Path | None, sets: list[str]) -> list[dict]:
    """The robots to run: IMPROV assemblies and (where example-robot-data is installed) its arms."""
    out = []
    if "improv" in sets:
        out += [{"name": "-".join(ids), "set": "improv", "ids": list(ids)} for ids in IMPROV_ROBOTS]
    if "arms" in sets and share is not None:
        out += [{"name": name, "set": "arms", "urdf": str(share / "robots" / rel), "packages": str(share.parent)}
                for name, rel in ARMS]  # fmt: skip
    return out


def _our_robot(spec: dict, db):
    from timor_core import ModuleAssembly, PinRobot

    if "ids" in spec:
        return ModuleAssembly.from_serial_modules(db, list(spec["ids"])).robot
    return PinRobot.from_urdf(spec["urdf"], spec["packages"])


def _ours(spec: dict) -> list[dict]:
    import numpy as np

    from timor_core import ModulesDB
    from timor_core.common import compiled
    from timor_core.kinematics import ik_kernel
    from timor_core.kinematics.tolerance import Composed, ProjectionTolerance

    if spec["kernels"] == "compiled":
        ik_kernel.load()  # numba and the kernels, before anything is timed (a long-lived process has them)
        if hasattr(ik_kernel, "forget_ahead"):  # numba's, not those built ahead of time (a --before has none)
            ik_kernel.AHEAD_FOLDER = ik_kernel.AHEAD_FOLDER / "none"
            ik_kernel.forget_ahead()
    elif spec["kernels"] == "interpreted":
        compiled.use_compiled(False)
    db = ModulesDB.from_json_file(IMPROV)
    tol = Composed([ProjectionTolerance("r_sph", (0.0, POSITION)), ProjectionTolerance("Theta_R", (0.0, ANGLE))])
    robots = [_our_robot(r, db) for r in spec["robots"]]

    def call(r: int, T, k: int):
        rng = np.random.default_rng(k)  # made outside the timing, as the reference's robot._rng below
        return lambda: robots[r].ik(np.asarray(T), tolerance=tol, rng=rng, ignore_self_collision=True)

    results = _timed(spec, call)
    kernels = ik_kernel.ready()
    ran = "interpreted" if kernels is None else "built ahead of time" if getattr(kernels, "ahead", 0) else "numba"
    return {"results": results, "process_cpu_s": time.process_time(), "kernels_ran": ran}


def _timed(spec: dict, call) -> list[dict]:
    """Every goal's call (``call(robot, pose, k)`` makes it, untimed) timed: wall and thread CPU time, result."""
    out = []
    for r in range(len(spec["robots"])):
        call(r, spec["goals"][r][0], 0)()  # warm-up (caches, first calls)
        for kind in ("goals", "unreachable"):
            for k, T in enumerate(spec[kind][r]):
                f = call(r, T, k)
                t0, c0 = time.perf_counter(), time.thread_time()
                q, ok = f()
                c1, t1 = time.thread_time(), time.perf_counter()
                out.append({"robot": r, "kind": kind, "goal": k, "ms": 1000 * (t1 - t0), "cpu_ms": 1000 * (c1 - c0),
                            "ok": bool(ok), "q": [float(v) for v in q]})  # fmt: skip
    return out


def _ref(spec: dict, method: str) -> list[dict]:
    sys.path.insert(0, str(SHIM))
    import logging

    import numpy as np
    import timor_offline  # noqa: F401
    from timor import ModuleAssembly, ModulesDB
    from timor.Robot import PinRobot
    from timor.task import Tolerance
    from timor.utilities.tolerated_pose import ToleratedPose
    from timor.utilities.transformation import Transformation

    logging.getLogger("Timor").setLevel(logging.ERROR)
    db = ModulesDB.from_json_file(IMPROV)
    tol = Tolerance.Composed([Tolerance.CartesianSpheric(r=(0, POSITION)), Tolerance.RotationAbsolute(ANGLE)])
    robots = [ModuleAssembly.from_serial_modules(db, list(r["ids"])).robot if "ids" in r
              else PinRobot.from_urdf(Path(r["urdf"]), Path(r["packages"])) for r in spec["robots"]]  # fmt: skip

    def call(r: int, T, k: int):
        goal = ToleratedPose(Transformation(np.asarray(T)), tol)
        robot = robots[r]

        def run():
            robot._rng = np.random.default_rng(k)  # its starts come from robot._rng (no seed argument)
            return robot.ik(goal, ik_method=method, ignore_self_collisions=True)

        return run

    results = _timed(spec, call)
    return {"results": results, "process_cpu_s": time.process_time(), "kernels_ran": method}


def _goals(robots: list[dict], n: int, n_far: int, seed: int) -> tuple[list[list], list[list]]:
    """Per robot: ``n`` reachable goals (FK of random self-collision-free q) and ``n_far`` unreachable ones."""
    import numpy as np

    from timor_core import ModulesDB

    db = ModulesDB.from_json_file(IMPROV)
    rng = np.random.default_rng(seed)
    goals, far = [], []
    for spec in robots:
        robot = _our_robot(spec, db)
        mine: list = []
        while len(mine) < n + n_far:
            q = robot.random_configuration(rng)
            if not robot.has_self_collision(q):
                mine.append(robot.fk(q))
        goals.append([T.tolist() for T in mine[:n]])
        base, reach = robot.placement[:3, 3], robot.reach()
        out = []
        for T in mine[n:]:  # the same orientation, the position pushed beyond the reach bound
            ray = T[:3, 3] - base
            T = T.copy()
            T[:3, 3] = base + ray / np.linalg.norm(ray) * reach * rng.uniform(1.05, 1.5)
            out.append(T.tolist())
        far.append(out)
    return goals, far


def _judge(spec: dict, results: list[dict]) -> list[bool]:
    """The one rule, per result: within the limits and our FK within 1 mm and 1 deg of the goal."""
    import numpy as np

    from timor_core import ModulesDB

    db = ModulesDB.from_json_file(IMPROV)
    robots = [_our_robot(r, db) for r in spec["robots"]]
    verdicts = []
    for res in results:
        robot, T = robots[res["robot"]], np.asarray(spec[res["kind"]][res["robot"]][res["goal"]])
        q = np.asarray(res["q"])
        lim = robot.joint_limits
        ok = q.shape == (robot.dof,) and bool(np.all(q >= lim[0] - 1e-9) and np.all(q <= lim[1] + 1e-9))
        if ok:
            R = robot.fk(q)
            angle = math.acos(max(-1.0, min(1.0, (np.trace(R[:3, :3].T @ T[:3, :3]) - 1) / 2)))
            ok = np.linalg.norm(R[:3, 3] - T[:3, 3]) <= POSITION + 1e-9 and angle <= ANGLE + 1e-9
        verdicts.append(bool(ok))
    return verdicts


def _run_worker(python: str, side: str, spec: dict) -> dict:
    # ours: the timor_core of this checkout (not whichever one is installed), "before": the one of --before; the
    # reference: its venv and the shim
    library = {"ours": str(REPO / "src" / "timor_core"), "before": spec.get("before")}.get(side)
    path = [library, str(HERE)] if library else [str(HERE), str(SHIM)]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
    worker = "ours" if library else side
    proc = subprocess.run([python, __file__, "--worker", worker], input=json.dumps(spec), capture_output=True,
                          text=True, env=env, timeout=3600, cwd=str(REPO if library else SHIM))  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"{side} worker failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _summary(rows: list[dict]) -> dict:
    """Figures of one side over some results (each with its verdict ``solved``)."""
    reach = [r for r in rows if r["kind"] == "goals"]
    far = [r for r in rows if r["kind"] == "unreachable"]
    solved = sum(r["solved"] for r in reach)
    ms = sorted(r["ms"] for r in reach)
    out = {
        "goals": len(reach),
        "success": 100.0 * solved / max(1, len(reach)),
        "median_ms": statistics.median(ms) if ms else math.nan,
        "p90_ms": ms[min(len(ms) - 1, math.ceil(0.9 * len(ms)) - 1)] if ms else math.nan,
        "per_solved_ms": sum(ms) / solved if solved else math.inf,
        "per_solved_cpu_ms": sum(r["cpu_ms"] for r in reach) / solved if solved else math.inf,
    }
    if far:
        out["unreachable"] = len(far)
        out["unreachable_refused"] = sum(not r["ok"] and not r["solved"] for r in far)
        out["unreachable_median_us"] = 1000 * statistics.median(r["ms"] for r in far)
        out["unreachable_median_cpu_us"] = 1000 * statistics.median(r["cpu_ms"] for r in far)
    return out


def _report(spec: dict, pooled: dict[str, list[dict]], per_round: list[dict], process: dict) -> dict:
    """Per side: the figures over all robots, per set of robots and per robot; the reference's over ours."""
    report: dict = {"kernels": spec["kernels"], "per_round_cpu_ratio": per_round, "sides": {}, "process": process}
    sets = sorted({r["set"] for r in spec["robots"]})
    for side, rows in pooled.items():
        entry = {"all": _summary(rows)}
        for s in sets:
            entry[s] = _summary([r for r in rows if spec["robots"][r["robot"]]["set"] == s])
        entry["robots"] = {spec["robots"][i]["name"]: _summary([r for r in rows if r["robot"] == i])
                           for i in range(len(spec["robots"]))}  # fmt: skip
        report["sides"][side] = entry
    ours = report["sides"]["ours"]
    for side in pooled:
        if side == "ours":
            continue
        ref = report["sides"][side]
        keys = ("median_ms", "per_solved_ms", "per_solved_cpu_ms")
        report[f"ratio_{side}"] = {g: {k: ref[g][k] / ours[g][k] for k in keys} for g in ["all", *sets]}
    return report


def _print(report: dict, args: argparse.Namespace, n_robots: int) -> None:
    print(f"IK on {n_robots} robots x {args.goals} reachable goals (+ {args.unreachable} unreachable) x {args.rounds} "
          f"rounds, 1 mm / 1 deg, self-collision ignored, judged by our FK and the limits; ours: {args.kernels} "
          f"kernels")  # fmt: skip
    print(f"{'side':<11}{'robots':<8}{'solved %':>9}{'median ms':>11}{'p90 ms':>9}{'per solved ms':>15}"
          f"{'per solved CPU ms':>19}{'unreachable: refused':>22}{'median us':>11}")  # fmt: skip
    for side, entry in report["sides"].items():
        for group, r in entry.items():
            if group == "robots":
                continue
            far = f"{r.get('unreachable_refused', 0)}/{r.get('unreachable', 0)}"
            print(f"{side:<11}{group:<8}{r['success']:>9.1f}{r['median_ms']:>11.3f}{r['p90_ms']:>9.3f}"
                  f"{r['per_solved_ms']:>15.3f}{r['per_solved_cpu_ms']:>19.3f}{far:>22}"
                  f"{r.get('unreachable_median_us', math.nan):>11.1f}")  # fmt: skip
    for side in report["sides"]:
        if side == "ours":
            continue
        for group, ratios in report[f"ratio_{side}"].items():
            print(f"{side} / ours, {group}: median {ratios['median_ms']:.2f}x, per solved goal "
                  f"{ratios['per_solved_ms']:.2f}x (wall), {ratios['per_solved_cpu_ms']:.2f}x (CPU)")  # fmt: skip
    for side, runs in report["process"].items():
        cpu = statistics.median(r["process_cpu_s"] for r in runs)
        ran = sorted({r["kernels_ran"] for r in runs})
        print(f"whole worker process, {side}: {cpu:.2f} s CPU (median of {len(runs)}; kernels run: {', '.join(ran)})")
    rounds = report["per_round_cpu_ratio"]
    if rounds and "ref-cpp" in rounds[0]:
        print("per round, ref-cpp / ours per solved goal (CPU): " + ", ".join(f"{x['ref-cpp']:.2f}x" for x in rounds))
    for name in report["sides"]["ours"]["robots"]:
        cells = [
            f"{s} {report['sides'][s]['robots'][name]['success']:.0f} % "
            f"{report['sides'][s]['robots'][name]['per_solved_cpu_ms']:.3f} ms"
            for s in report["sides"]
        ]
        print(f"  {name:<24}" + "; ".join(cells))


def _rounds(args: argparse.Namespace, spec: dict, pythons: dict[str, str]) -> tuple[dict, list[dict], dict]:
    """Every round's workers in alternating order; the judged results pooled per side, per round the reference's
    CPU time per solved goal over ours, per side each worker's process CPU time and the kernels it ran."""
    pooled: dict[str, list[dict]] = {side: [] for side in pythons}
    process: dict[str, list[dict]] = {side: [] for side in pythons}
    per_round = []
    for round_ in range(args.rounds):  # alternate the order, so drifting machine load hits every side alike
        order = list(pythons) if round_ % 2 == 0 else list(reversed(pythons))
        figures = {}
        for side in order:
            out = _run_worker(pythons[side], side, spec)
            results = out.pop("results")
            process[side].append(out)
            for res, ok in zip(results, _judge(spec, results), strict=True):
                res["solved"] = ok
            pooled[side].extend(results)
            figures[side] = _summary(results)["per_solved_cpu_ms"]
        per_round.append({side: figures[side] / figures["ours"] for side in pythons if side != "ours"})
    return pooled, per_round, process


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--goals", type=int, default=30, help="reachable goals per robot (default 30)")
    parser.add_argument("--unreachable", type=int, default=10, help="unreachable goals per robot (default 10)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each side, in alternating order (default 3)")
    parser.add_argument("--sets", default="improv,arms", help="improv, arms or both (default)")
    parser.add_argument("--kernels", choices=("compiled", "interpreted", "rule"), default="rule",
                        help="ours: as a fresh process runs with no setting (rule, the default: the kernels built "
                             "ahead of time where built, else numba's after 0.5 s of interpreted IK), numba's "
                             "compiled kernels loaded before the timing, or never compiled")  # fmt: skip
    parser.add_argument("--python-ik", action="store_true", help="also the reference's Python IK (slow)")
    parser.add_argument("--no-ref", action="store_true", help="ours only")
    parser.add_argument("--before", metavar="PATH", help="also this timor_core (a src/timor_core folder), as 'before'")
    parser.add_argument("--ref-python", default=str(REPO.parent / "refvenv" / "bin" / "python"))
    parser.add_argument("--json", action="store_true")
    parser.add_argument(
        "--worker",
        choices=("ours", "ref-python", "ref-cpp"),
        help="run one side on the spec (stdin or --spec) and print its results as JSON",
    )
    parser.add_argument("--spec", metavar="FILE", help="with --worker: the spec from this file (see --write-spec)")
    parser.add_argument("--write-spec", metavar="FILE", help="write the workers' spec (robots, goals) here, then stop")
    args = parser.parse_args(argv)
    if args.worker:
        spec = json.loads(Path(args.spec).read_text() if args.spec else sys.stdin.read())
        methods = {"ref-cpp": "jacobian_cpp", "ref-python": "jacobian"}
        out = _ours(spec) if args.worker == "ours" else _ref(spec, methods[args.worker])
        print(json.dumps(out))
        return 0
    if not IMPROV.is_file():
        raise SystemExit(f"IMPROV not found at {IMPROV}")
    robots = robot_specs(robots_share(), args.sets.split(","))
    goals, far = _goals(robots, args.goals, args.unreachable, args.seed)
    spec = {"robots": robots, "goals": goals, "unreachable": far, "kernels": args.kernels, "before": args.before}
    if args.write_spec:  # for timing whole worker processes with an outside tool
        Path(args.write_spec).write_text(json.dumps(spec))
        return 0
    pythons = {"ours": sys.executable}
    if args.before:
        pythons["before"] = sys.executable
    if not args.no_ref:
        pythons["ref-cpp"] = args.ref_python
        if args.python_ik:
            pythons["ref-python"] = args.ref_python
    pooled, per_round, process = _rounds(args, spec, pythons)
    report = _report(spec, pooled, per_round, process)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        _print(report, args, len(robots))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
