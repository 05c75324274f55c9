"""Inverse kinematics: find joint angles that put the tool at a desired pose, and learn why when there are none.

Shows: robot.ik to an exact pose (default tolerance 0.1 mm per axis / 0.1 deg), to a pose with a looser tolerance built
from projections (x, y, z, Theta_R), checking a pose against a tolerance, and a failure with its reason
(details=True). Seeds are fixed, so the output is the same on every run.

Run:  python examples/inverse_kinematics.py
"""

import numpy as np

from timor_core import ModuleAssembly, ModulesDB
from timor_core.kinematics.tolerance import ProjectionTolerance

np.set_printoptions(precision=4, suppress=True)

db = ModulesDB.from_name("robco_like")
modules = ["base", "J", "L_250", "J", "L_100", "J", "L_100", "J", "L_100", "J", "L_100", "J", "gripper"]
robot = ModuleAssembly.from_serial_modules(db, modules).robot
print(f"robot: {' '.join(modules)} ({robot.dof} DOF, reach <= {robot.reach():.3f} m)")

# 1. A pose the robot can certainly reach: the tool pose at some random configuration.
q_true = robot.random_configuration(rng=7)
target = robot.fk(q_true)
print(f"target position: {target[:3, 3]}")

result = robot.ik(target, rng=0, details=True)  # details=True: an IKResult instead of (q, success)
# Tolerances are measured in the axes of the target pose: the deviation is inv(target) @ fk(q).
deviation = np.linalg.inv(target) @ robot.fk(result.q)
error_mm = 1000 * np.abs(deviation[:3, 3]).max()  # the default tolerance allows 0.1 mm per axis
print(f"exact pose:     success={result.success} after {result.tries} tries, largest axis error {error_mm:.4f} mm")
print(f"  q found {result.q} (the true q was {q_true}; any q reaching the pose is fine)")

# 2. A looser goal: within 1 mm in x, y, z and within 30 degrees of the nominal orientation.
# Each ProjectionTolerance bounds one projection of the deviation from the nominal pose; `&` combines them.
tolerance = (
    ProjectionTolerance("x", (-1e-3, 1e-3))
    & ProjectionTolerance("y", (-1e-3, 1e-3))
    & ProjectionTolerance("z", (-1e-3, 1e-3))
    & ProjectionTolerance("Theta_R", (0.0, np.radians(30)))
)
q_loose, ok = robot.ik(target, tolerance=tolerance, rng=0)  # the short form: (q, success)
print(f"tolerant pose:  success={ok}, fk within tolerance: {tolerance.valid(target, robot.fk(q_loose))}")

# 3. Warm start: from a q near a known solution, IK converges to a nearby solution (smooth motions).
q_near, ok = robot.ik(target, q_init=result.q + 0.05, rng=0)
print(f"warm start:     success={ok}, |q - previous solution| = {np.linalg.norm(q_near - result.q):.4f} rad")

# 4. A pose 2 m above the base is out of reach: IK says so, and why, instead of iterating for long.
far = np.eye(4)
far[:3, 3] = [0.0, 0.0, 2.0]
failure = robot.ik(far, rng=0, details=True)
print(f"unreachable:    success={failure.success}, reason: {failure.reason}")

# 5. Within reach, but right next to the base: every pose the solver reaches there collides with the robot itself.
awkward = target.copy()
awkward[:3, 3] = [0.05, 0.0, 0.1]
failure = robot.ik(awkward, rng=0, details=True)
print(f"next to base:   success={failure.success}, reason: {failure.reason}")
