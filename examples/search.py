"""Configuration search: find the lightest robot of a small module space that solves a task.

Shows: defining a search space with SpaceOptions (DOF range, which modules, where links may go), counting it,
an exhaustive search cheapest-first (it stops at the first valid robot, which is then the optimum), the filter
funnel that says why the other robots failed, an independent check of the winner's goal configurations, a short
genetic search on the same task for comparison, and saving the result.

Run:  python examples/search.py [OUTPUT_DIR]      (default OUTPUT_DIR: build/examples)
"""

import sys
from pathlib import Path

from timor_core import ModulesDB
from timor_core.search import Budget, ExhaustiveSearch, GeneticSearch, SerialSpace, SpaceOptions
from timor_core.task import Task
from timor_core.task.feedback import verify_goal_configurations

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("build/examples")
out.mkdir(parents=True, exist_ok=True)

task = Task.from_name("pick_and_place")  # shipped with timor_core; Task.from_json_file(path) for your own
db = ModulesDB.from_name("robco_like")

# Serial robots base, ..., gripper with 1 to 3 joints (the drive module J), a joint right after the base,
# at most one L-shaped link between two joints and at most one after the last joint.
links = ("L_100", "L_150", "L_200", "L_250")
options = SpaceOptions(
    dof_min=1,
    dof_max=3,
    modules=("J", *links),
    first_is_joint=True,
    max_links_between_joints=1,
    max_links_after_last_joint=1,
)
space = SerialSpace(db, options)
print(f"search space: {len(space)} assemblies, e.g. {' '.join(space[0])} ... {' '.join(space[len(space) - 1])}")

# Cheapest first (cost "mass"): the first robot that passes every filter is the lightest valid one.
# workers=1 evaluates in this process (None would use every core); progress=False keeps the output short.
search = ExhaustiveSearch(space, cost="mass", order="cost", workers=1, progress=False)
result = search.optimize(task, db, budget=Budget(max_time=60))
print(f"exhaustive: evaluated {result.evaluations} of {len(space)} in {result.wall_time:.2f} s ({result.stopped})")
print(f"best robot: {' '.join(result.best_ids)}, cost {result.best_cost:.2f} kg")
print(result.funnel.summary())  # per filter: how many entered, passed, and the most common reasons to fail

# Do not trust, verify: the winner's IK configurations, checked without any IK (pose, collisions, torques, limits).
best = result.best_assembly(db)
checks = verify_goal_configurations(task, best, result.best_q)
for check in checks:
    print(f"  goal {check['id']}: {'ok' if check['ok'] else 'FAILED: ' + check['reason']}")
print(f"best robot verified: {all(check['ok'] for check in checks)}")

# A genetic algorithm explores the same kind of robots without enumerating them (seeded: the same every run).
ga = GeneticSearch(
    db, max_dof=3, modules=("J", *links), generations=10, population=12, seed=1, workers=1, progress=False
)
ga_result = ga.optimize(task, db)
if ga_result.found:
    ga_best = f"{' '.join(ga_result.best_ids)}, cost {ga_result.best_cost:.2f} kg"
else:
    ga_best = "no valid robot"
print(f"genetic search: {ga_result.evaluations} evaluations in {ga_result.wall_time:.2f} s, best {ga_best}")

path = result.to_json_file(out / "search_result.json")
print(f"wrote {path}")
