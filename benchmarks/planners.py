#!/usr/bin/env python3
"""Sampling planners side by side (issue 17): timor's own RRT-Connect against OMPL's RRTConnect, RRTstar, BITstar
and PRM, on the same 50 joint-space queries, through the same ``joint_path`` (same validity checker, same
resolution, same shortcutting afterwards).

    python benchmarks/planners.py                 # 50 queries, 2 s budget per query and planner (about 4 min)
    python benchmarks/planners.py --queries 10 --budget 1 --json

Robot: a six-axis robco_like arm; scene: the embedded pick_and_place task's obstacles (a crate and a pillar) plus
a wall, checked by coal with a 1 cm margin and self-collision. Queries: random valid start/goal pairs whose
straight segment collides (seeded). Per planner: success rate, median and 90th percentile planning time (s;
anytime planners use their whole budget by design), median joint-space path length (rad) after shortcutting.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time

import numpy as np

ARM = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "J", "J", "J", "gripper"]


def _scene():
    from timor_core import ModuleAssembly, ModulesDB
    from timor_core.task import Task

    data = Task.from_name("pick_and_place").to_json_data()
    wall = np.eye(4)
    wall[:3, 3] = (0.45, 0.0, 0.45)
    data["obstacles"].append(
        {
            "ID": "wall",
            "collision": [{"type": "box", "parameters": {"x": 0.05, "y": 0.6, "z": 0.5}, "pose": wall.tolist()}],
        }
    )
    task = Task.from_json_data(data)
    robot = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ARM).robot
    checker = robot.collision_checker(task, 0.01, self_collision=True)
    lo, hi = robot.joint_limits

    def is_valid(q: np.ndarray) -> bool:
        return bool(np.all(q >= lo) and np.all(q <= hi)) and not checker.in_collision(q)

    return robot, is_valid


def _queries(robot, is_valid, n: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    from timor_core.kinematics.planning import edge_valid

    rng = np.random.default_rng(seed)
    out = []
    while len(out) < n:
        a, b = robot.random_configuration(rng), robot.random_configuration(rng)
        if is_valid(a) and is_valid(b) and not edge_valid(a, b, is_valid, 0.02):
            out.append((a, b))
    return out


def main(argv: list[str] | None = None) -> int:
    from timor_core.kinematics.ompl_planning import ompl_available
    from timor_core.kinematics.planning import PLANNERS, PlannerConfig, joint_path, path_length

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--budget", type=float, default=2.0, help="seconds per query and planner (default 2)")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    robot, is_valid = _scene()
    queries = _queries(robot, is_valid, args.queries, args.seed)
    lo, hi = robot.joint_limits
    report = {}
    planners = [p for p in PLANNERS if p == "timor" or ompl_available()]
    for name in planners:
        config = PlannerConfig(planner=name, time_limit=args.budget, max_iterations=10**6)
        times, lengths, ok = [], [], 0
        for k, (a, b) in enumerate(queries):
            t0 = time.perf_counter()
            path = joint_path(a, b, is_valid, lo, hi, rng=k, config=config)
            times.append(time.perf_counter() - t0)
            if path is not None:
                ok += 1
                lengths.append(path_length(path))
        ordered = sorted(times)
        report[name] = {
            "success": 100.0 * ok / len(queries),
            "median_s": statistics.median(times),
            "p90_s": ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)],
            "median_length": statistics.median(lengths) if lengths else math.nan,
        }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{len(queries)} queries, six-axis robco_like arm, pick_and_place obstacles + wall, budget {args.budget} s")
    print(f"{'planner':<12}{'solved %':>10}{'median s':>11}{'p90 s':>9}{'median length (rad)':>22}")
    for name, r in report.items():
        print(f"{name:<12}{r['success']:>10.1f}{r['median_s']:>11.4f}{r['p90_s']:>9.3f}{r['median_length']:>22.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
