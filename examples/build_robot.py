"""Build a serial robot from an embedded module set and look at its model.

Shows: loading a module set, assembling a chain, DOF and mass, forward kinematics of the tool frame,
static (gravity) torques, the self-collision check, URDF export, and saving / reloading the assembly JSON.

Run:  python examples/build_robot.py [OUTPUT_DIR]      (default OUTPUT_DIR: build/examples)
"""

import sys
from pathlib import Path

import numpy as np

from timor_core import ModuleAssembly, ModulesDB

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("build/examples")
out.mkdir(parents=True, exist_ok=True)
np.set_printoptions(precision=4, suppress=True)

# The module set ships inside the package: a base, revolute joints J1 (roll) / J2 (pitch), links, an end effector.
db = ModulesDB.from_name("geometric_primitive_modules")
print(f"module set {db.name!r}: {len(db)} modules: {', '.join(db.ids)}")

# A chain: each module is joined to the next by the only pair of connectors that fits.
assembly = ModuleAssembly.from_serial_modules(db, ["base", "J1", "i_30", "J2", "i_45", "J2", "eef"])
robot = assembly.robot  # a Pinocchio model plus a coal collision model, built directly (no URDF in between)
print(f"DOF: {robot.dof}")
print(f"mass: {robot.mass:.3f} kg")
print(f"joints: {robot.joints}")

# Forward kinematics: the 4x4 pose of the tool frame "tool0" in the world frame.
q = np.array([0.3, -0.6, 1.2])
print(f"q = {q}")
print(f"tool0 pose at q:\n{robot.fk(q)}")

# Torques the joints must apply to hold the robot still against gravity at q.
print(f"static torques at q: {robot.static_torque(q)} Nm")

# Self-collision, following the module set's ignore rules (neighbouring bodies never count).
print(f"self-collision at q: {robot.has_self_collision(q)}")
q_folded = np.array([0.0, 2.8, 1.8])  # fold the arm back down onto its base
print(f"self-collision at {q_folded}: {robot.has_self_collision(q_folded)}, pairs {robot.self_collisions(q_folded)}")

# URDF: root link base_link, tool link tool0, deterministic link and joint names.
urdf_path = out / "robot.urdf"
assembly.to_urdf(name="example_robot", write_to=urdf_path)
print(f"wrote {urdf_path}")

# The assembly in the CoBRA solution layout (moduleOrder, moduleConnection, baseConnection, basePose).
json_path = assembly.to_json_file(out / "assembly.json")
print(f"wrote {json_path}")

# Reload it: the same modules and connections, hence the same kinematics.
reloaded = ModuleAssembly.from_json_file(db, json_path)
same = reloaded == assembly and np.allclose(reloaded.robot.fk(q), robot.fk(q))
print(f"reloaded assembly is the same robot: {same}")
