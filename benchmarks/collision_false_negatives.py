"""Collision verdicts against coal's signed distance, per request setting (issue 38, item 1).

    python benchmarks/collision_false_negatives.py TASK.json "base J ... gripper" N [Q0 SIGMA]

N configurations (uniform, or Q0 plus normal noise SIGMA per joint: around a contact), every checked pair: how many
pairs deeper than 0.1 mm each request setting calls free, the deepest such miss, and the time of the checks.
"""

import sys
import time
import warnings

import coal
import numpy as np
import pinocchio as pin

from timor_core.model.assembly import ModuleAssembly
from timor_core.search.evaluation.evaluate import load_db
from timor_core.task.feedback import load_task, task_base_placement

warnings.simplefilter("ignore")

task = load_task(sys.argv[1])
ids = sys.argv[2].split()
n = int(sys.argv[3])
a = ModuleAssembly.from_serial_modules(load_db("robco_like"), ids)
robot = a.to_pin_robot(task_base_placement(task))
cc = robot.collision_checker(task, 0.0)
gm = cc.model
variants = {}
for name, guess, contact in [
    ("bv_nocontact", coal.GJKInitialGuess.BoundingVolumeGuess, False),
    ("default_nocontact", coal.GJKInitialGuess.DefaultGuess, False),
    ("bv_contact", coal.GJKInitialGuess.BoundingVolumeGuess, True),
    ("default_contact", coal.GJKInitialGuess.DefaultGuess, True),
]:
    gd = pin.GeometryData(gm)
    for req in gd.collisionRequests:
        req.enable_cached_gjk_guess = False
        req.gjk_initial_guess = guess
        req.enable_contact = contact
    variants[name] = gd
dd = pin.GeometryData(gm)
rng = np.random.default_rng(0)
lo, hi = robot.model.lowerPositionLimit, robot.model.upperPositionLimit
lo = np.maximum(lo, -np.pi)
hi = np.minimum(hi, np.pi)
fn = {k: 0 for k in variants}
fp = {k: 0 for k in variants}
t = {k: 0.0 for k in variants}
pen = 0
worst = {k: 0.0 for k in variants}
for _ in range(n):
    q = (
        rng.uniform(lo, hi)
        if len(sys.argv) < 5
        else np.array([float(v) for v in sys.argv[4].split(",")]) + rng.normal(0, float(sys.argv[5]), robot.dof)
    )
    pin.forwardKinematics(robot.model, robot.data, q)
    pin.updateGeometryPlacements(robot.model, robot.data, gm, dd)
    pin.computeDistances(gm, dd)
    dist = np.array([r.min_distance for r in dd.distanceResults])
    truth = dist < 0
    pen += truth.sum()
    for k, gd in variants.items():
        pin.updateGeometryPlacements(robot.model, robot.data, gm, gd)
        t0 = time.perf_counter()
        pin.computeCollisions(gm, gd, False)
        t[k] += time.perf_counter() - t0
        v = np.array([r.isCollision() for r in gd.collisionResults])
        miss = truth & ~v
        fn[k] += int((truth & ~v & (dist < -1e-4)).sum())
        fp[k] += int((~truth & v & (dist > 1e-4)).sum())
        if miss.any():
            worst[k] = min(worst[k], float(dist[miss].min()))
print("configs", n, "pairs", len(gm.collisionPairs), "penetrating pair-instances", pen)
for k in variants:
    print(
        f"{k:20s} false-neg(>0.1mm) {fn[k]:6d} false-pos {fp[k]:4d}"
        f" deepest missed {worst[k] * 1000:.2f} mm  time {t[k]:.2f}s"
    )
