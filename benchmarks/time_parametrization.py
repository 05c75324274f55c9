#!/usr/bin/env python3
"""Time parametrization side by side (issue 17): timor's own timing (straight segments, a trapezoidal profile per
segment, a stop at every waypoint) against toppra (time-optimal along a cubic spline through the waypoints), on
the paths the planner benchmark's queries give.

    python benchmarks/time_parametrization.py              # 50 paths, about a minute
    python benchmarks/time_parametrization.py --queries 10 --json

toppra_dense: toppra along the segments resampled every 0.05 rad (the spline then only rounds the corners).
Per method: median duration (s), the largest velocity and acceleration over the limits (finite differences of the
samples, as a fraction of the limit; 0 = within), and the share of trajectories whose every sample is valid (within
the joint limits and free of collision, as the planner checked the straight segments: a spline leaves them).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import planners  # noqa: E402  (the same scene and queries)

DT = 0.01


def _own(path, v, a):
    from timor_core.kinematics.trajectory import time_parametrize

    traj = time_parametrize(path, v, a, DT)
    return np.asarray(traj.t), np.asarray(traj.q)


def _toppra(path, v, a):
    import toppra as ta
    import toppra.algorithm as algo
    import toppra.constraint as constraint

    s = np.concatenate([[0.0], np.cumsum(np.linalg.norm(np.diff(path, axis=0), axis=1))])
    spline = ta.SplineInterpolator(s / s[-1], path)
    vlim = np.stack([-v, v], axis=1)
    alim = np.stack([-a, a], axis=1)
    problem = algo.TOPPRA(
        [constraint.JointVelocityConstraint(vlim), constraint.JointAccelerationConstraint(alim)],
        spline,
        parametrizer="ParametrizeConstAccel",
    )
    traj = problem.compute_trajectory()
    if traj is None:
        return None
    t = np.arange(0.0, traj.duration + DT / 2, DT)
    return t, traj(t)


def _toppra_dense(path, v, a, spacing: float = 0.05):
    """toppra along the straight segments themselves: the path resampled every ``spacing`` rad, so the spline
    stays within a few mrad of them and only rounds the corners."""
    dense = [path[0]]
    for p0, p1 in zip(path[:-1], path[1:]):
        n = max(1, int(np.ceil(np.abs(p1 - p0).max() / spacing)))
        dense.extend(p0 + (p1 - p0) * k / n for k in range(1, n + 1))
    return _toppra(np.asarray(dense), v, a)


def _violation(t, q, v, a) -> tuple[float, float]:
    qd = np.diff(q, axis=0) / DT
    qdd = np.diff(qd, axis=0) / DT
    over_v = float(np.max(np.abs(qd) / v - 1.0, initial=0.0))
    over_a = float(np.max(np.abs(qdd) / a - 1.0, initial=0.0)) if len(qdd) else 0.0
    return max(0.0, over_v), max(0.0, over_a)


def main(argv: list[str] | None = None) -> int:
    from timor_core.kinematics.planning import PlannerConfig, joint_path

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=50)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    robot, is_valid = planners._scene()
    lo, hi = robot.joint_limits
    v, a = np.asarray(robot.velocity_limits), np.asarray(robot.acceleration_limits)
    paths = []
    for k, (s, g) in enumerate(planners._queries(robot, is_valid, args.queries, 3)):
        path = joint_path(s, g, is_valid, lo, hi, rng=k, config=PlannerConfig(time_limit=2.0))
        if path is not None:
            paths.append(path)
    report = {}
    for name, method in (("own", _own), ("toppra", _toppra), ("toppra_dense", _toppra_dense)):
        durations, over_v, over_a, valid = [], [], [], 0
        for path in paths:
            out = method(path, v, a)
            if out is None:
                continue
            t, q = out
            durations.append(float(t[-1]))
            ov, oa = _violation(t, q, v, a)
            over_v.append(ov)
            over_a.append(oa)
            valid += all(is_valid(qk) for qk in q)
        report[name] = {
            "paths": len(paths),
            "timed": len(durations),
            "median_duration_s": statistics.median(durations),
            "max_velocity_over": max(over_v),
            "max_acceleration_over": max(over_a),
            "valid_share": valid / len(paths),
        }
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    print(f"{len(paths)} planned paths (OMPL RRTConnect + shortcut), sampled every {DT} s")
    print(f"{'method':<14}{'timed':>7}{'median s':>10}{'v over':>9}{'a over':>9}{'all samples valid':>19}")
    for name, r in report.items():
        print(f"{name:<14}{r['timed']:>7}{r['median_duration_s']:>10.2f}{r['max_velocity_over']:>9.3f}"
              f"{r['max_acceleration_over']:>9.3f}{100 * r['valid_share']:>18.0f}%")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
