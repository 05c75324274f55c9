"""The main job on the embedded default data.

1. Build a robot from the embedded module set, write its URDF, print DOF, mass and TCP pose.
2. For the embedded task ``pick_and_place``: search the lightest robco_like robot that solves it, check the
   result independently, plan its motion (a CoBRA solution) and write its ROS 2 artefacts (a MoveIt config
   with a ros2_control URDF).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from timor_core.common.fileio import atomic_write_text
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB

__all__ = ["run_demo"]


def run_demo(
    db_name: str = "geometric_primitive_modules",
    modules: Sequence[str] = ("base", "J2", "i_45", "J2", "J2", "eef"),
    out_dir: Path = Path("build/demo"),
    task: str | None = "pick_and_place",
) -> dict:
    """Build the assembly, write ``<out_dir>/robot.urdf`` and ``assembly.json``; then, unless ``task`` is None,
    solve that embedded task (see the module docstring) into ``<out_dir>/<task>/``. Prints and returns a summary."""
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
    if task is not None:
        summary["task"] = _solve_task(task, out_dir / task)
    atomic_write_text(out_dir / "summary.json", json.dumps(summary, indent=2) + "\n")
    return summary


def _solve_task(name: str, out_dir: Path) -> dict:
    """Search, verify, plan and export the lightest robco_like robot for the embedded task ``name``."""
    from timor_core.export.formats.moveit_config import write_moveit_config
    from timor_core.search import Budget, ExhaustiveSearch, SerialSpace, SpaceOptions
    from timor_core.task import Task
    from timor_core.task.feedback import verify_goal_configurations
    from timor_core.task.point_to_point import solve_point_to_point

    task = Task.from_name(name)
    db = ModulesDB.from_name("robco_like")
    print(f"\ntask           : {task.id} (embedded: {len(task.goals)} goals, {len(task.obstacles)} obstacles)")
    options = SpaceOptions(
        dof_max=3,
        modules=("J", "L_100", "L_150", "L_200", "L_250"),
        first_is_joint=True,
        max_links_between_joints=1,
        max_links_after_last_joint=1,
    )
    space = SerialSpace(db, options)
    search = ExhaustiveSearch(space, cost="mass", order="cost", workers=1, progress=False)
    result = search.optimize(task, db, Budget(max_time=120))
    checked = f"{result.evaluations} of {len(space)} robco_like robots"
    print(f"search         : {checked} checked in {result.wall_time:.1f} s (cheapest first)")
    out: dict = {"id": task.id, "space": len(space), "evaluated": result.evaluations, "found": result.found}
    if not result.found or result.best_ids is None or result.best_cost is None:
        print("lightest robot : none in this space solves the task")
        return out
    best = result.best_assembly(db)
    verified = all(check["ok"] for check in verify_goal_configurations(task, best, result.best_q))
    print(f"lightest robot : {' '.join(result.best_ids)}, {result.best_cost:.2f} kg (verified: {verified})")
    solution = solve_point_to_point(task, best, rng=0, cost_function="mass")
    solution_path = solution.to_json_file(out_dir / "solution.json")
    print(f"motion         : {solution.trajectory.t[-1]:.2f} s, valid: {solution.valid} -> {solution_path}")
    folder = out_dir / "moveit_config"
    moveit = write_moveit_config(best, folder, n_samples=300)
    print(f"ROS 2          : MoveIt config with a ros2_control URDF ({len(moveit)} files) -> {folder}")
    out.update(
        best=list(result.best_ids),
        mass_kg=round(result.best_cost, 6),
        verified=verified,
        solution=str(solution_path),
        solution_valid=solution.valid,
        duration_s=round(float(solution.trajectory.t[-1]), 4),
        moveit_config=str(folder),
    )
    return out
