#!/usr/bin/env python3
"""Unseen tasks for experiment 2's space, generated from a seed (issue 38, item 1): the task generator.

    python benchmarks/unseen_tasks.py --seed 38 -o /tmp/unseen      # writes the tasks' JSON files there

Nobody tuned the search to these: every goal is the tool pose of a *reference arm* of robco_like at a random
collision-free configuration (so a robot of experiment 2's space reaches it, though obstacles may bar that one),
and every scene is turned about z and moved by a random base placement. The kinds (``KINDS``):

- ``turned_user_study``: the paper's user-study scene (goals, box and wall) turned and moved as a whole, base
  included: physically the same task, so the same optimum (a check of the generator and of the search alike);
- ``moved_goals``: two goals of a four-joint arm, scene turned and moved;
- ``spread_goals``: four goals in four directions (turned about joint 1's axis, the base's z, a quarter turn apart);
- ``obstacles_3`` / ``obstacles_4``: two / three goals and three / four boxes placed at random around the base,
  clear of the goals (0.12 m) and of the base column (0.2 m);
- ``boundary``: two goals, one at >= 92 % of its reference arm's longest reach (``base J L_250 J L_250 J L_250 J
  gripper`` stretched: the boundary of that arm's workspace, far beyond what light arms reach);
- ``boundary_high``: a goal at >= 90 % of the reach of a three-joint arm, high above the base;
- ``five_joints``: experiment 2's pillar task (``obstacle_middle``: a pillar between the base and the first goal,
  whose optimum has five joints) with every position jittered by up to 1.5 cm and the scene turned and moved;
- ``unsolvable``: two goals, one 0.1-0.6 m beyond the space's reach bound (2.94 m) in a random direction.

The same seed gives the same files, byte for byte (numpy's ``default_rng``, full float precision).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parent.parent
USER_STUDY = REPO.parent / "shared" / "data" / "cobra" / "tasks" / "user_study.json"
EXP2_TASKS = REPO / "src" / "timor_core" / "tests" / "data" / "exp2_tasks"
FOUR_JOINTS = ("base", "J", "L_150", "J", "L_200", "J", "L_150", "J", "gripper")
LONG_ARM = ("base", "J", "L_250", "J", "L_250", "J", "L_250", "J", "gripper")
THREE_JOINTS = ("base", "J", "L_250", "J", "L_200", "J", "L_100", "gripper")
SPACE_REACH = 2.94  # experiment 2's space (search.space_reach; test_space_reach checks the figure)
TOLERANCE = {
    "toleranceProjection": ["x", "y", "z", "Theta_R"],
    "tolerance": [[-0.001, 0.001]] * 3 + [[0.0, math.pi / 4]],
}
KINDS = (
    "turned_user_study",
    "moved_goals",
    "spread_goals",
    "obstacles_3",
    "obstacles_4",
    "boundary",
    "boundary_high",
    "five_joints",
    "unsolvable",
)


def rot_z(angle: float) -> np.ndarray:
    """A 4x4 turn about z."""
    c, s = math.cos(angle), math.sin(angle)
    T = np.eye(4)
    T[:2, :2] = [[c, -s], [s, c]]
    return T


def placement(rng: np.random.Generator) -> np.ndarray:
    """A random base placement: turned about z by 20-340 deg, moved up to 0.5 m sideways and 0.2 m up or down."""
    T = rot_z(float(rng.uniform(math.radians(20), math.radians(340))))
    T[:2, 3] = rng.uniform(-0.5, 0.5, 2)
    T[2, 3] = rng.uniform(-0.2, 0.2)
    return T


def _pose(T: np.ndarray) -> list[list[float]]:
    return [[float(v) + 0.0 for v in row] for row in T]


class Arm:
    """A reference arm of robco_like: random collision-free configurations and their tool poses (base frame)."""

    def __init__(self, ids: tuple[str, ...]):
        from timor_core import ModuleAssembly, ModulesDB

        self.robot = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ids).robot
        lo, hi = self.robot.joint_limits
        self.lo, self.hi = np.maximum(lo, -math.pi), np.minimum(hi, math.pi)

    def pose(self, rng: np.random.Generator, ok: Any, tries: int = 20000) -> np.ndarray:
        """The tool pose at a random configuration with ``ok(pose)``, the tool above the base's plane and no
        self-collision."""
        for _ in range(tries):
            q = rng.uniform(self.lo, self.hi)
            T = self.robot.fk(q)
            if not ok(T) or T[2, 3] < 0.03 or self.robot.has_self_collision(q):
                continue
            return T
        raise RuntimeError("no configuration found")


def far_enough(low: float) -> Any:
    """A test for a tool pose: at least ``low`` m from the base."""
    return lambda T: float(np.linalg.norm(T[:3, 3])) >= low


def goal(gid: str, T: np.ndarray) -> dict:
    """A pose goal within 1 mm and 45 deg (the user study's tolerance)."""
    return {"ID": gid, "type": "at", "constraints": [], "goalPose": {"nominal": _pose(T), **TOLERANCE}}


def box(oid: str, size: tuple[float, float, float], T: np.ndarray) -> dict:
    """A box obstacle."""
    params = {"x": size[0], "y": size[1], "z": size[2]}
    return {"ID": oid, "name": None, "collision": [{"type": "box", "parameters": params, "pose": _pose(T)}]}


def task(name: str, description: str, base: np.ndarray, goals: list[dict], obstacles: list[dict]) -> dict:
    """A task's JSON data: its goals and obstacles given in the base's frame, placed by ``base``."""
    for g in goals:
        g["goalPose"]["nominal"] = _pose(base @ np.asarray(g["goalPose"]["nominal"]))
    for o in obstacles:
        for c in o["collision"]:
            c["pose"] = _pose(base @ np.asarray(c["pose"]))
    header = {"ID": name, "version": "Py", "taskName": name, "tags": ["issue-38", "unseen"], "date": "2026-11-28"}
    header |= {"timeStepSize": 0.01, "gravity": [0.0, 0.0, -9.81], "author": ["timor project"], "email": []}
    header |= {"affiliation": "", "description": description}
    return {
        "header": header,
        "constraints": [{"type": "basePlacement", "pose": {"nominal": _pose(base)}}],
        "obstacles": obstacles,
        "goals": goals,
    }


def _clear(T: np.ndarray, size: np.ndarray, points: list[np.ndarray], clearance: float) -> bool:
    """Whether every point is ``clearance`` outside the axis-aligned-in-its-frame box."""
    for p in points:
        local = np.abs(T[:3, :3].T @ (p - T[:3, 3]))
        if np.linalg.norm(np.maximum(local - size / 2, 0.0)) < clearance:
            return False
    return True


def random_boxes(rng: np.random.Generator, n: int, goals: list[np.ndarray]) -> list[dict]:
    """``n`` boxes (0.05-0.3 m sides) around the base, 0.12 m clear of every goal and 0.2 m of the base column."""
    out: list[dict] = []
    column = [np.array([0.0, 0.0, z]) for z in np.linspace(0.0, 0.4, 9)]
    while len(out) < n:
        size = rng.uniform(0.05, 0.3, 3)
        T = rot_z(float(rng.uniform(0, math.pi)))
        radius, angle = rng.uniform(0.25, 0.8), rng.uniform(0, 2 * math.pi)
        T[:3, 3] = [radius * math.cos(angle), radius * math.sin(angle), rng.uniform(0.0, 0.7)]
        if _clear(T, size, goals, 0.12) and _clear(T, size, column, 0.2):
            out.append(box(f"box{len(out) + 1}", tuple(round(float(s), 3) for s in size), T))
    return out


def _user_study(rng: np.random.Generator) -> dict:
    data = json.loads(USER_STUDY.read_text())
    goals = [goal(g["ID"], np.asarray(g["goalPose"]["nominal"])) for g in data["goals"]]
    obstacles = [box(o["ID"], _size(o), np.asarray(o["collision"][0]["pose"])) for o in data["obstacles"]]
    return task("turned_user_study", "the user study's scene turned and moved", placement(rng), goals, obstacles)


def _size(o: dict) -> tuple[float, float, float]:
    p = o["collision"][0]["parameters"]
    return (p["x"], p["y"], p["z"])


def _five_joints(rng: np.random.Generator) -> dict:
    data = json.loads((EXP2_TASKS / "obstacle_middle.json").read_text())

    def jitter(T: Any) -> np.ndarray:
        T = np.asarray(T, dtype=float).copy()
        T[:3, 3] += rng.uniform(-0.015, 0.015, 3)
        return T

    goals = [goal(g["ID"], jitter(g["goalPose"]["nominal"])) for g in data["goals"]]
    obstacles = [box(o["ID"], _size(o), jitter(o["collision"][0]["pose"])) for o in data["obstacles"]]
    text = "obstacle_middle's pillar task, positions jittered by up to 1.5 cm, turned and moved"
    return task("five_joints", text, placement(rng), goals, obstacles)


def generate(seed: int = 38) -> dict[str, dict]:
    """Every kind of ``KINDS`` as task JSON data, from ``seed`` alone."""
    rng = np.random.default_rng(seed)
    four, long, three = Arm(FOUR_JOINTS), Arm(LONG_ARM), Arm(THREE_JOINTS)
    near = far_enough(0.3)
    out = {"turned_user_study": _user_study(rng)}
    g = [four.pose(rng, near) for _ in range(2)]
    out["moved_goals"] = task("moved_goals", "two goals of a four-joint arm", placement(rng), _goals(g), [])
    a0 = rng.uniform(0, 2 * math.pi)
    g = [_toward(four.pose(rng, near), a0 + k * math.pi / 2) for k in range(4)]
    out["spread_goals"] = task("spread_goals", "four goals in four directions", placement(rng), _goals(g), [])
    for n, m in ((3, 2), (4, 3)):
        g = [four.pose(rng, near) for _ in range(m)]
        boxes = random_boxes(rng, n, [T[:3, 3] for T in g])
        out[f"obstacles_{n}"] = task(f"obstacles_{n}", f"{m} goals, {n} boxes", placement(rng), _goals(g), boxes)
    edge = 0.92 * long.robot.reach()
    g = [long.pose(rng, far_enough(edge)), four.pose(rng, near)]
    out["boundary"] = task("boundary", f"a goal >= {edge:.3f} m from the base", placement(rng), _goals(g), [])
    edge3 = 0.9 * three.robot.reach()
    g = [three.pose(rng, lambda T: far_enough(edge3)(T) and T[2, 3] > 0.5 * edge3)]
    text = f"a goal >= {edge3:.3f} m from the base, high up"
    out["boundary_high"] = task("boundary_high", text, placement(rng), _goals(g), [])
    out["five_joints"] = _five_joints(rng)
    direction = rng.normal(size=3)
    direction[2] = abs(direction[2])
    far = np.eye(4)
    far[:3, 3] = direction / np.linalg.norm(direction) * (SPACE_REACH + rng.uniform(0.1, 0.6))
    g = [four.pose(rng, near), far]
    out["unsolvable"] = task("unsolvable", "a goal beyond the space's reach", placement(rng), _goals(g), [])
    return out


def _toward(T: np.ndarray, azimuth: float) -> np.ndarray:
    """The pose turned about the base's z axis (joint 1's, so the arm still reaches it) to this azimuth."""
    return rot_z(azimuth - math.atan2(T[1, 3], T[0, 3])) @ T


def _goals(poses: list[np.ndarray]) -> list[dict]:
    return [goal(f"g{k + 1}", T) for k, T in enumerate(poses)]


def write(seed: int, folder: Path) -> list[Path]:
    """The tasks of ``generate(seed)`` as ``folder/<kind>.json`` (temp file, then rename)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in generate(seed).items():
        path = folder / f"{name}.json"
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, indent=1) + "\n")
        tmp.replace(path)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=38)
    p.add_argument("-o", "--output", type=Path, required=True)
    args = p.parse_args(argv)
    for path in write(args.seed, args.output):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
