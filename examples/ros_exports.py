"""Export one assembly for ROS 2: URDF with <ros2_control>, a xacro macro, an SRDF and a MoveIt config folder.

Shows: assembly.to_urdf with a Ros2ControlConfig (mock hardware), assembly.to_xacro (a macro with prefix, parent
and *origin), assembly.to_srdf (planning group, home state, collision matrix from random samples) and
write_moveit_config (URDF, SRDF and the YAML files move_group needs). No ROS installation is needed.

Run:  python examples/ros_exports.py [OUTPUT_DIR]      (default OUTPUT_DIR: build/examples)
"""

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from timor_core import ModuleAssembly, ModulesDB
from timor_core.export.formats.moveit_config import write_moveit_config
from timor_core.export.formats.ros2_control import Ros2ControlConfig

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("build/examples")
out.mkdir(parents=True, exist_ok=True)

db = ModulesDB.from_name("robco_like")
assembly = ModuleAssembly.from_serial_modules(db, ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"])
name = "example_arm"
print(f"assembly: {' '.join(assembly.module_ids)} ({assembly.dof} DOF)")

# 1. URDF plus a <ros2_control> block: one <joint> per actuated joint with position/velocity/effort interfaces,
#    the model's limits, and a hardware plugin (mock hardware here; a vendor's plugin on a real robot).
control = Ros2ControlConfig(plugin="mock_components/GenericSystem", initial_positions={"m1_J_joint": 0.5})
urdf = assembly.to_urdf(name, ros2_control=control, write_to=out / f"{name}.urdf")
controlled = [joint.get("name") for joint in ET.fromstring(urdf).find("ros2_control").iter("joint")]
print(f"wrote {out / f'{name}.urdf'}: ros2_control joints {controlled}")

# 2. A xacro macro: instantiate the arm under any parent link with a name prefix, several times in one description.
assembly.to_xacro(f"{name}_macro", name=name, prefix="left_", write_to=out / f"{name}.urdf.xacro")
print(f"wrote {out / f'{name}.urdf.xacro'}: macro {name}_macro(prefix parent *origin), called with prefix left_")

# 3. SRDF for MoveIt: link pairs that never collide (over n_samples random configurations) or are adjacent are
#    excluded from collision checking. The same seed gives the same file.
srdf = assembly.to_srdf(name=name, n_samples=200, seed=0, write_to=out / f"{name}.srdf")
print(f"wrote {out / f'{name}.srdf'}: {srdf.count('<disable_collisions')} disabled collision pairs")

# 4. A complete MoveIt 2 config folder (URDF with ros2_control, SRDF, kinematics, limits, controllers, OMPL, ...).
written = write_moveit_config(assembly, out / "moveit_config", name=name, n_samples=200, seed=0)
print(f"MoveIt config in {out / 'moveit_config'}:")
for label, path in sorted(written.items()):
    print(f"  {label}: {path.name} ({path.stat().st_size} bytes)")
