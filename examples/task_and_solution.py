"""Check robots against a CoBRA task, plan a motion through its goals and write a CoBRA solution.

Shows: loading a task (the embedded pick_and_place: two goal poses, a pause, a return home, a crate and a
pillar as obstacles), per-goal feedback (task-aware IK: reached or not, and why), planning collision-free motions
(solve_point_to_point), checking the solution against every constraint, and the solution JSON round trip.

Run:  python examples/task_and_solution.py [OUTPUT_DIR]      (default OUTPUT_DIR: build/examples)
"""

import sys
from pathlib import Path

from timor_core import ModuleAssembly, ModulesDB
from timor_core.task import Task
from timor_core.task.feedback import solve_feedback
from timor_core.task.point_to_point import solve_point_to_point
from timor_core.task.solution import Solution

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("build/examples")
out.mkdir(parents=True, exist_ok=True)

task = Task.from_name("pick_and_place")  # shipped with timor_core; Task.from_json_file(path) for your own
print(f"task {task.id!r}: goals {[g.id for g in task.goals]}, obstacles {[o.id for o in task.obstacles]}")
db = ModulesDB.from_name("robco_like")


def check(modules: list[str]) -> bool:
    """Per goal: can this robot, placed as the task says, reach it without collisions or torque overload?"""
    assembly = ModuleAssembly.from_serial_modules(db, modules)
    feedback = solve_feedback(task, assembly, seed=0)  # {"goals": [...], "cost": mass in kg}
    print(f"robot {' '.join(modules)}: {assembly.dof} DOF, {feedback['cost']:.2f} kg")
    for goal in feedback["goals"]:
        reason = f" ({goal['reason']})" if goal["reason"] else ""
        print(f"  {goal['id']:>6}: {'reached' if goal['reached'] else 'NOT reached'}{reason}")
    return all(goal["reached"] for goal in feedback["goals"])


# A short arm misses the goals; the reasons say how (outside the workspace, unreachable pose, collision, ...).
short_ok = check(["base", "J", "L_250", "J", "gripper"])
print(f"short robot reaches every goal: {short_ok}")

# Three joints and longer links reach both poses.
modules = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
print(f"robot reaches every goal: {check(modules)}")

# Plan: the motion starts at the first goal's IK solution (a returnTo without a goal comes back there);
# IK per goal, collision-free RRT-Connect motions between them, then time-parametrized within the limits.
assembly = ModuleAssembly.from_serial_modules(db, modules)
solution = solve_point_to_point(task, assembly, rng=0, cost_function="mass")
trajectory = solution.trajectory
print(f"trajectory: {len(trajectory.t)} samples, {trajectory.t[-1]:.2f} s")
for goal in task.goals:
    print(f"  goal {goal.id} achieved at t = {solution.goal_time(goal):.2f} s")

# The solution is checked independently of how it was made: every constraint over the whole trajectory.
report = solution.report()
for constraint in report["constraints"]:
    print(f"  constraint {constraint['type']}: {'ok' if constraint['ok'] else 'VIOLATED ' + constraint['reason']}")
print(f"solution valid: {solution.valid}, all goals achieved: {solution.all_goals_achieved}, cost {solution.cost:.2f}")

# Write the CoBRA solution file, read it back and check it again.
path = solution.to_json_file(out / "pick_and_place_solution.json")
print(f"wrote {path}")
reloaded = Solution.from_json_file(path, task, db)
print(f"reloaded solution valid: {reloaded.valid}")
