"""Your own module, and a tree: two arms on one base.

Shows: reading a module of your own in the CoBRA format (data/dual_base.json: a base plate with two output
connectors), adding it to an embedded module set, growing a branched assembly connector by connector with
ModuleAssembly.add, the tool frames tool0 and tool1 it gets, its URDF, and the typed error a broken module gives
(naming the file, the JSON path and the value at fault).

Run:  python examples/custom_module_and_tree.py [OUTPUT_DIR]      (default OUTPUT_DIR: build/examples)
"""

import copy
import json
import sys
from pathlib import Path

import numpy as np

from timor_core import ModuleAssembly, ModulesDB, TimorError
from timor_core.model.module import Module

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("build/examples")
out.mkdir(parents=True, exist_ok=True)

# 1. One module from its own JSON file; json_file makes every error name that file.
module_file = Path(__file__).parent / "data" / "dual_base.json"
module_json = json.loads(module_file.read_text())
dual_base = Module.from_json(module_json, json_file=module_file)
print(f"module {dual_base.id}: connectors {sorted(dual_base.connectors)}")

# 2. The embedded primitives plus that module: a module set is an immutable collection of modules.
primitives = ModulesDB.from_name("geometric_primitive_modules")
db = ModulesDB([*primitives, dual_base], name="primitives_with_dual_base")
print(f"module set {db.name}: {len(db)} modules")

# 3. A tree: start with the base (index 0), attach each module to a free connector of one already placed.
#    add() returns the new module's index, so each arm is grown from the module before it.
A = ModuleAssembly(db, ["dual_base"])
left = A.add("J1", (0, "out_left"))
left = A.add("J2", (left, "J1_distal_connector"))
A.add("eef", (left, "J2_distal_connector"))
right = A.add("J2", (0, "out_right"))
right = A.add("i_30", (right, "J2_distal_connector"))
right = A.add("J2", (right, "i_30_distal_connector"))
A.add("eef", (right, "J2_distal_connector"))
robot = A.robot
print(f"two-arm robot: {len(A.module_ids)} modules, {robot.dof} DOF, joints {robot.joints}")

# Each free end-effector connector becomes a tool frame: tool0, tool1, ... in a deterministic order.
q = np.zeros(robot.dof)
frames = robot.fk(q, kind="full")
for tool in ("tool0", "tool1"):
    print(f"{tool} at q = 0: {np.round(frames[tool][:3, 3], 4).tolist()}")
gap = float(np.linalg.norm(frames["tool0"][:3, 3] - frames["tool1"][:3, 3]))
print(f"distance between the tools at q = 0: {gap:.3f} m")

# 4. The URDF of the tree (root base_link, both tool frames), and the assembly as JSON with its connections.
A.to_urdf("two_arms", write_to=out / "two_arms.urdf")
A.to_json_file(out / "two_arms.json")
print(f"wrote {out / 'two_arms.urdf'} and {out / 'two_arms.json'}")

# 5. A broken module is refused with an error that says where: here a negative mass.
broken = copy.deepcopy(module_json)
broken["bodies"][0]["mass"] = -6.0
try:
    Module.from_json(broken, json_file=module_file)
except TimorError as error:
    print(f"broken module refused: {type(error).__name__}: {error}")
