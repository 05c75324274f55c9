"""The main job on the embedded default data: build a robot, write its URDF, print DOF, mass, TCP pose."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .assembly import ModuleAssembly
from .db import ModulesDB
from .fileio import atomic_write_text

__all__ = ["run_demo"]


def run_demo(
    db_name: str = "geometric_primitive_modules",
    modules: Sequence[str] = ("base", "J2", "i_45", "J2", "J2", "eef"),
    out_dir: Path = Path("build/demo"),
) -> dict:
    """Build the assembly, write ``<out_dir>/robot.urdf`` and ``assembly.json``, print and return a summary."""
    db = ModulesDB.from_name(db_name)
    assembly = ModuleAssembly.from_serial_modules(db, modules)
    out_dir = Path(out_dir)
    urdf_path = out_dir / "robot.urdf"
    assembly.to_urdf(write_to=urdf_path)
    assembly.to_json_file(out_dir / "assembly.json")
    robot = assembly.robot
    q0 = np.zeros(robot.dof)
    q_rand = robot.random_configuration(rng=0)
    summary = {
        "module_set": db.name,
        "modules": list(modules),
        "urdf": str(urdf_path),
        "dof": robot.dof,
        "joints": robot.joints,
        "mass_kg": round(robot.mass, 6),
        "tcp_pose_at_zero": np.round(robot.fk(q0), 6).tolist(),
        "q_random_seed0": np.round(q_rand, 6).tolist(),
        "tcp_pose_at_q_random": np.round(robot.fk(q_rand), 6).tolist(),
        "self_collision_at_q_random": robot.has_self_collision(q_rand),
        "static_torque_at_q_random_Nm": np.round(robot.static_torque(q_rand), 4).tolist(),
    }
    print(f"module set     : {db.name} ({len(db)} modules)")
    print(f"assembly       : {' - '.join(modules)}")
    print(f"URDF written   : {urdf_path}")
    print(f"DOF            : {robot.dof} ({', '.join(robot.joints)})")
    print(f"mass           : {robot.mass:.3f} kg")
    print("TCP (tool0) at q = 0:")
    print(np.array2string(robot.fk(q0), precision=4, suppress_small=True))
    print(f"q (random, seed 0): {np.array2string(q_rand, precision=4)}")
    print("TCP at that q:")
    print(np.array2string(robot.fk(q_rand), precision=4, suppress_small=True))
    print(f"self-collision at that q: {summary['self_collision_at_q_random']}")
    atomic_write_text(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    return summary
