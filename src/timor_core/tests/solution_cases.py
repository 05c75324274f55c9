"""The synthetic task (goals at the forward kinematics of random free configurations of a six-joint robco arm) and
the trajectory helpers the solution tests share (test_solution.py, test_end_effector_constraint.py)."""

from __future__ import annotations

import copy

import numpy as np

from timor_core.kinematics.trajectory import Trajectory, time_parametrize
from timor_core.task import Task

ROBCO_6DOF = ["base", "J", "L_250", "J", "L_100", "J", "L_100", "J", "L_100", "J", "L_100", "J", "gripper"]
BASE = np.array([[0.0, -1.0, 0.0, 0.5], [1.0, 0.0, 0.0, -0.2], [0.0, 0.0, 1.0, 0.1], [0.0, 0.0, 0.0, 1.0]])
TOLERANCE = {"toleranceProjection": ["r_sph", "Theta_R"], "tolerance": [[0.0, 0.005], [0.0, 0.05]]}
ORDER = ["g0", "g1", "g2", "hold", "back"]


def free_configurations(robot, rng, n):
    out = []
    while len(out) < n:
        q = robot.random_configuration(rng)
        if not robot.has_self_collision(q) and robot.fk(q)[2, 3] > 0.0:
            out.append(q)
    return out


def task_json(robot, seed: int = 3) -> dict:
    """A task whose pose goals are the TCP poses of random configurations (reachable by construction)."""
    qs = free_configurations(robot, np.random.default_rng(seed), 3)
    goals = [
        {"ID": f"g{k}", "type": "reach" if k == 1 else "at", "goalPose": {"nominal": robot.fk(q).tolist(), **TOLERANCE}}
        for k, q in enumerate(qs)
    ]
    goals += [
        {"ID": "hold", "type": "pause", "duration": 0.25},
        {"ID": "back", "type": "returnTo", "returnToGoal": "g0"},
    ]
    floor = np.eye(4)
    floor[:3, 3] = [0.5, -0.2, -0.5]
    return {
        "header": {"ID": "synthetic", "taskName": "synthetic", "timeStepSize": 0.01, "gravity": [0, 0, -9.81]},
        "obstacles": [
            {
                "ID": "floor",
                "collision": [{"type": "box", "parameters": {"x": 3, "y": 3, "z": 0.1}, "pose": floor.tolist()}],
            }
        ],
        "goals": goals,
        "constraints": [
            {"type": "joint", "parts": ["q", "dq", "ddq", "tau"]},
            {"type": "selfCollisionFree"},
            {"type": "collisionFree", "safetyMargin": 0.01},
            {"type": "allGoalsFulfilled"},
            {"type": "allGoalsFulfilledInOrder", "order": ORDER},
            {
                "type": "basePlacement",
                "pose": {"nominal": BASE.tolist(), "toleranceProjection": ["r_sph"], "tolerance": [[0, 0.01]]},
            },
        ],
    }


def make_task(data: dict) -> Task:
    return Task.from_json_data(copy.deepcopy(data))


def stationary(q, n: int = 3, dt: float = 0.01) -> Trajectory:
    q = np.repeat(np.asarray(q, dtype=float)[None], n, axis=0)
    return Trajectory(np.arange(n) * dt, q, np.zeros_like(q), np.zeros_like(q))


def entry(report: dict, ctype: str) -> dict:
    return next(c for c in report["constraints"] if c["type"] == ctype)


# -- constraints that fail ---------------------------------------------------------------------------


def with_arrays(traj: Trajectory, **arrays) -> Trajectory:
    parts = {k: np.array(getattr(traj, k)) for k in ("t", "q", "dq", "ddq")}
    parts.update(arrays)
    return Trajectory(**parts)


def blocking_task(robot, q, offset: float, margin: float | None) -> dict:
    T = robot.fk(q)
    centre = np.eye(4)
    centre[:3, 3] = T[:3, 3] + offset * T[:3, 2]
    free = {"type": "collisionFree"} if margin is None else {"type": "collisionFree", "safetyMargin": margin}
    return {
        "header": {"ID": "obstacle"},
        "obstacles": [
            {"ID": "blocker", "collision": [{"type": "sphere", "parameters": {"r": 0.03}, "pose": centre.tolist()}]}
        ],
        "constraints": [{"type": "selfCollisionFree"}, free],
    }


# -- goals -----------------------------------------------------------------------------------------


def two_way(robot) -> tuple[Trajectory, np.ndarray, np.ndarray]:
    qa, qb = free_configurations(robot, np.random.default_rng(11), 2)
    tr = time_parametrize(np.array([qa, qb, qa]), robot.velocity_limits, robot.acceleration_limits, 0.01)
    return tr, qa, qb
