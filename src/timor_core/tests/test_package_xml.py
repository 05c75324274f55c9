"""package.xml says what the packages need at run time (issue 22): derived from the code, not written from memory.

timor_ros: every package its launch files can start (every switch on, both GUI choices), every plugin the
configurations they generate load (controllers, mock hardware, MoveIt's planner, kinematics, adapters and
controller manager), and every Python import of its code must be an exec_depend (or depend). timor_core: every
package of install_requires, and every module its code imports at the top of a file, must be an exec_depend.
"""

from __future__ import annotations

import ast
import configparser
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from timor_core import ModuleAssembly, ModulesDB
from timor_core.export.formats.moveit_config import moveit_config_data
from timor_core.export.formats.ros2_control import Ros2ControlConfig
from timor_core.ros.launch_arguments import AssemblyLaunch, MoveItLaunch

SRC = Path(__file__).resolve().parents[2]
#: a plugin's namespace (the part before "/") -> the ROS package that provides it
PLUGIN_PACKAGES = {
    "mock_components": "hardware_interface",
    "joint_state_broadcaster": "joint_state_broadcaster",
    "joint_trajectory_controller": "joint_trajectory_controller",
    "ompl_interface": "moveit_planners_ompl",
    "kdl_kinematics_plugin": "moveit_kinematics",
    "moveit_simple_controller_manager": "moveit_simple_controller_manager",
    "default_planning_request_adapters": "moveit_ros_planning",
    "default_planning_response_adapters": "moveit_ros_planning",
    "default_planner_request_adapters": "moveit_ros_planning",
}
#: a Python distribution (install_requires) or import -> its rosdep key
ROSDEP = {
    "numpy": "python3-numpy",
    "networkx": "python3-networkx",
    "pin": "pinocchio",
    "pinocchio": "pinocchio",
    "coal": "coal",
    "trimesh": "python3-trimesh",
    "scipy": "python3-scipy",
    "pycollada": "python3-collada",
    "tqdm": "python3-tqdm",
    "pyyaml": "python3-yaml",
    "yaml": "python3-yaml",
    "numba": "python3-numba",
}
#: install_requires without a rosdep key: pip installs them; package.xml must say so in a comment
PIP_ONLY = ("pygad",)
_PLUGIN = re.compile(r"([a-z_][a-z0-9_]*)/[A-Za-z][A-Za-z0-9_]*")


def _depends(package: str) -> tuple[set[str], str]:
    path = SRC / package / "package.xml"
    text = path.read_text()
    tags = ("depend", "exec_depend", "build_export_depend")
    return {e.text.strip() for e in ET.fromstring(text) if e.tag in tags and e.text}, text


def _imports(*folders: Path, top_only: bool = False) -> set[str]:
    found = set()
    for folder in folders:
        for path in folder.rglob("*.py"):
            if "bringup_templates" in path.parts:  # run in generated packages: test_bringup_templates checks those
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if top_only and getattr(node, "col_offset", 0) != 0:
                    continue
                if isinstance(node, ast.Import):
                    found |= {a.name.split(".")[0] for a in node.names}
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.add(node.module.split(".")[0])
    return {m for m in found if m not in sys.stdlib_module_names}


def _plugins(data) -> set[str]:
    """Every ``namespace/Class`` string in a nested config."""
    if isinstance(data, dict):
        return set().union(set(), *(_plugins(v) for v in data.values()))
    if isinstance(data, list):
        return set().union(set(), *(_plugins(v) for v in data))
    if isinstance(data, str):
        return {m.group(1) for word in data.split() if (m := _PLUGIN.fullmatch(word))}
    return set()


def test_timor_ros_declares_what_its_launch_files_start_and_load():
    depends, _ = _depends("timor_ros")
    on = {k: "true" for k in ("robot_state_publisher", "rviz", "joint_state_publisher", "search", "move_group")}
    started: set[str] = set()
    for gui in ("true", "false"):
        started |= set(AssemblyLaunch.from_arguments({**on, "gui": gui}).external_packages())
        started |= set(MoveItLaunch.from_arguments({**on, "gui": gui, "ros2_control": "true"}).external_packages())
    assert {"controller_manager", "moveit_ros_move_group", "robot_state_publisher", "rviz2"} <= started
    assembly = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), ["base", "J", "L_250", "J", "gripper"])
    loaded: set[str] = {"mock_components"}  # the default ros2_control_plugin of both launch files
    for distro in ("humble", "kilted"):
        loaded |= _plugins(moveit_config_data(assembly, ros2_control=Ros2ControlConfig(), distro=distro))
    unknown = loaded - set(PLUGIN_PACKAGES)
    assert not unknown, f"plugins of unknown packages (add them to PLUGIN_PACKAGES): {unknown}"
    needed = started | {PLUGIN_PACKAGES[p] for p in loaded}
    needed |= _imports(SRC / "timor_ros" / "timor_ros", SRC / "timor_ros" / "launch") - {"timor_ros"}
    assert not needed - depends, f"missing in timor_ros/package.xml: {sorted(needed - depends)}"


def test_timor_core_declares_its_python_dependencies():
    depends, text = _depends("timor_core")
    cfg = configparser.ConfigParser()
    cfg.read(SRC / "timor_core" / "setup.cfg")
    requires = {re.split(r"[<>=!\[ ]", r, maxsplit=1)[0] for r in cfg["options"]["install_requires"].split()}
    hard = _imports(SRC / "timor_core" / "timor_core", top_only=True) - {"timor_core"}
    assert {ROSDEP[m] for m in hard} <= {ROSDEP[r] for r in requires if r in ROSDEP}, "an import not in setup.cfg"
    for dist in sorted(requires):
        if dist in PIP_ONLY:
            assert re.search(rf"<!--[^>]*\b{dist}\b[^>]*-->", text), f"package.xml must say {dist} comes from pip"
        else:
            assert ROSDEP[dist] in depends, f"{dist}: exec_depend {ROSDEP[dist]} missing in timor_core/package.xml"
