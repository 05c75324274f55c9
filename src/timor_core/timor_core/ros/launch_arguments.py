"""Launch arguments: the one validation of every launch file, timor_ros's (``assembly``, ``moveit``) and those of the
generated bring-up packages (``view``, ``control``, ``moveit``, ``sim``; templates in ``hardware/bringup_templates``).

``ros2 launch`` hands every argument over as a string. A launch file that parses them while it starts nodes
fails halfway (``search_workers:=two`` after four nodes started) and leaves processes behind. So every launch file
goes through the same three steps here before it starts anything (``checked_plan``): it refuses a ``name:=value``
it does not declare, parses every argument at once (an ``AssemblyLaunch``, ``MoveItLaunch`` or ``BringupLaunch``,
or an ``InputError`` naming the argument and its value), and checks that the external packages it would start are
installed. Any problem ends the launch with one ``LaunchRefusedError`` and nothing running. Every launch file's
``generate_launch_description`` is ``launch_description`` (its arguments declared, its nodes made once they are
set). Those steps are :mod:`.launch_checks`' (re-exported here, where the launch files import them); this module
has the arguments and their parsing, and needs no ROS either (only ``BringupLaunch.checked`` looks at a launch
context).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from timor_core.common.names import check_plugin, check_prefix, check_xacro_argument, expand_xacro
from timor_core.errors import InputError
from timor_core.export.formats.ros_distro import check_distro, node_behaviour
from timor_core.limits import limit_hint, limits
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB
from timor_core.ros.launch_checks import (
    LaunchRefusedError,
    check_arguments,
    check_namespace,
    checked_plan,
    controller_manager,
    launch_description,
    parse_auto_flag,
    parse_flag,
    refuse_unknown_arguments,
    require_packages,
)
from timor_core.ros.launch_paths import config_folder, task_file

__all__ = ["ASSEMBLY_ARGUMENTS", "BRINGUP_ARGUMENTS", "BRINGUP_DATA", "MOVEIT_ARGUMENTS", "SWITCHES", "AssemblyLaunch",
           "BringupLaunch", "LaunchRefusedError", "MoveItLaunch", "check_arguments", "check_namespace", "checked_plan",
           "controller_manager", "launch_description", "parse_auto_flag", "parse_flag", "refuse_unknown_arguments",
           "require_packages"]  # fmt: skip


NAMESPACE_ARGUMENT = ("", "namespace of every node, one robot per namespace (leave it out for the root)")

#: name -> (default, description) of assembly.launch.py's arguments.
ASSEMBLY_ARGUMENTS: dict[str, tuple[str, str]] = {
    "db": ("geometric_primitive_modules", "embedded module set name or modules.json path"),
    "modules": ("base J2 i_45 J2 J2 eef", "module IDs of the initial serial assembly, base first"),
    "prefix": ("", "prefix of every link and joint name (leave it out for none)"),
    "namespace": NAMESPACE_ARGUMENT,
    "robot_state_publisher": ("true", "start robot_state_publisher (C++ package robot_state_publisher)"),
    "rviz": ("true", "start RViz (C++ package rviz2)"),
    "gui": ("false", "joint_state_publisher_gui instead of joint_state_publisher"),
    "joint_state_publisher": ("true", "start joint_state_publisher (or its GUI); false with ros2_control"),
    "ros2_control": ("false", "add a <ros2_control> block to the published URDF"),
    "ros2_control_plugin": ("mock_components/GenericSystem", "ros2_control hardware plugin"),
    "description_from_topic": (
        "auto",
        "robot_state_publisher reads the URDF from the assembly node's topic (true; robot_state_publisher 3.4.4+),"
        " or takes it as a parameter the assembly node sets at every reconfiguration (false); auto: true where the"
        " installed robot_state_publisher can",
    ),
    "ros_distro": (
        "",
        "ROS 2 distro whose node behaviour to expect (humble, jazzy, kilted, rolling; empty: $ROS_DISTRO)",
    ),
    "srdf": ("true", "publish the SRDF on robot_description_semantic (false for branched robots: it needs a chain)"),
    "search": ("true", "start the search node (action search/search)"),
    "search_workers": ("1", "processes of the search node (1: in the node's process)"),
    "task": ("", "task file (or embedded task name) whose obstacles and goals RViz shows as markers (empty: none)"),
}

#: name -> (default, description) of moveit.launch.py's own arguments (it takes assembly.launch.py's too).
MOVEIT_ARGUMENTS: dict[str, tuple[str, str]] = {
    "config_dir": ("/tmp/timor_moveit_config", "folder the generated MoveIt config is written to"),
    "move_group": ("true", "start MoveIt's move_group (C++ package moveit_ros_move_group)"),
    "ros2_control": ("true", "ros2_control_node, joint_state_broadcaster and arm_controller (follow set_assembly)"),
}

#: external package -> the launch argument that leaves it out.
SWITCHES: dict[str, str] = {
    "robot_state_publisher": "robot_state_publisher:=false",
    "rviz2": "rviz:=false",
    "joint_state_publisher": "joint_state_publisher:=false",
    "joint_state_publisher_gui": "gui:=false",
    "moveit_ros_move_group": "move_group:=false",
    "controller_manager": "ros2_control:=false",
}

#: launch file name -> name -> (default, description): the arguments of a generated bring-up package's launch files
#: (control and moveit also take the package's xacro arguments, e.g. ``can_interface``: see ``BringupLaunch``)
BRINGUP_ARGUMENTS: dict[str, dict[str, tuple[str, str]]] = {
    "view.launch.py": {"rviz": ("true", "start RViz"), "joint_state_publisher": ("true", "start the publisher")},
    "control.launch.py": {"rviz": ("false", "start RViz")},
    "moveit.launch.py": {
        "rviz": ("false", "start RViz"),
        "ros2_control": ("true", "start ros2_control (control.launch.py) beside move_group"),
    },
    "sim.launch.py": {
        "gazebo": ("true", "start Gazebo (false: spawn into a Gazebo that already runs)"),
        "world": ("empty.sdf", "the Gazebo world"),
    },
}
#: the data file beside a bring-up package's launch files: what they know of the package (``BringupLaunch``)
BRINGUP_DATA = "bringup.yaml"

_WHOLE = re.compile(r"[0-9]{1,9}")  # ASCII digits only: str.isdigit() also takes '²', which int() refuses


def _arg(args: Mapping[str, str], defaults: Mapping[str, tuple[str, str]], name: str) -> str:
    return str(args.get(name, defaults[name][0]))


@dataclass(frozen=True)
class AssemblyLaunch:
    """assembly.launch.py's arguments, validated; ``assembly`` is the initial robot (so the modules fit)."""

    db: str
    modules: tuple[str, ...]
    prefix: str
    namespace: str
    robot_state_publisher: bool
    rviz: bool
    gui: bool
    joint_state_publisher: bool
    ros2_control: bool
    ros2_control_plugin: str
    description_from_topic: bool | None
    ros_distro: str
    srdf: bool
    search: bool
    search_workers: int
    assembly: ModuleAssembly
    task: str = ""  # the task file's absolute path ('' for none)

    @classmethod
    def from_arguments(cls, args: Mapping[str, str]) -> AssemblyLaunch:
        """Parse and check every argument (missing ones take their defaults); raise InputError naming the first
        bad one. Loads the module set and builds the initial assembly, so unknown modules fail here too."""
        args = check_arguments(args, {**ASSEMBLY_ARGUMENTS, **MOVEIT_ARGUMENTS})

        def get(name: str) -> str:
            return _arg(args, ASSEMBLY_ARGUMENTS, name)

        flags = {
            name: parse_flag(name, get(name))
            for name in ("robot_state_publisher", "rviz", "gui", "joint_state_publisher", "ros2_control", "srdf",
                         "search")
        }  # fmt: skip
        from_topic = parse_auto_flag("description_from_topic", get("description_from_topic"))
        distro = get("ros_distro").strip()
        if distro:
            distro = check_distro(distro, "launch argument 'ros_distro'")
        try:
            prefix = check_prefix(get("prefix").strip(), "launch argument 'prefix'")
            plugin = check_plugin(get("ros2_control_plugin"), "launch argument 'ros2_control_plugin'")
        except InputError as exc:
            raise InputError(exc.message, value=exc.value) from None
        namespace = check_namespace(get("namespace"))
        text = get("search_workers").strip()
        most = limits().max_workers
        if not _WHOLE.fullmatch(text) or not 1 <= int(text) <= most:
            raise InputError(
                f"launch argument 'search_workers' must be a whole number 1..{most} ({limit_hint('max_workers')};"
                " more than the cores are cut to the cores)",
                value=text,
            )
        modules = tuple(get("modules").split())
        if not modules:
            raise InputError("launch argument 'modules' names no module", value=get("modules"))
        db_name = get("db").strip()
        try:
            db = ModulesDB.load(db_name)
            assembly = ModuleAssembly.from_serial_modules(db, list(modules))
        except InputError as exc:
            raise InputError(f"launch argument 'db'/'modules': {exc}") from None
        except Exception as exc:  # noqa: BLE001  (a module set or chain that cannot be built: say so, start nothing)
            raise InputError(f"launch arguments 'db'/'modules': {type(exc).__name__}: {exc}") from None
        return cls(
            db=db_name,
            modules=modules,
            prefix=prefix,
            namespace=namespace,
            ros2_control_plugin=plugin,
            search_workers=int(text),
            description_from_topic=from_topic,
            ros_distro=distro,
            assembly=assembly,
            task=task_file(get("task")),
            **flags,
        )

    def external_packages(self) -> list[str]:
        """The packages not in this repository whose nodes this launch would start."""
        out = ["robot_state_publisher"] if self.robot_state_publisher else []
        if self.joint_state_publisher:
            out.append("joint_state_publisher_gui" if self.gui else "joint_state_publisher")
        if self.rviz:
            out.append("rviz2")
        return out


@dataclass(frozen=True)
class MoveItLaunch:
    """moveit.launch.py's arguments: the assembly launch's plus where to write the config and what to start."""

    base: AssemblyLaunch
    config_dir: Path
    move_group: bool
    ros2_control: bool

    @classmethod
    def from_arguments(cls, args: Mapping[str, str]) -> MoveItLaunch:
        """Parse and check every argument (see ``AssemblyLaunch.from_arguments``); an unknown one is refused."""
        args = check_arguments(args, {**ASSEMBLY_ARGUMENTS, **MOVEIT_ARGUMENTS})
        ros2_control = parse_flag("ros2_control", _arg(args, MOVEIT_ARGUMENTS, "ros2_control"))
        move_group = parse_flag("move_group", _arg(args, MOVEIT_ARGUMENTS, "move_group"))
        config_dir = config_folder(_arg(args, MOVEIT_ARGUMENTS, "config_dir"))
        base_args = {k: v for k, v in args.items() if k in ASSEMBLY_ARGUMENTS}
        base_args["ros2_control"] = "true" if ros2_control else "false"
        if ros2_control:  # /joint_states comes from joint_state_broadcaster
            base_args["joint_state_publisher"] = "false"
        return cls(AssemblyLaunch.from_arguments(base_args), config_dir, move_group, ros2_control)

    def forwarded(self) -> dict[str, str]:
        """The arguments handed to assembly.launch.py."""
        b = self.base
        values = {name: getattr(b, name) for name in ASSEMBLY_ARGUMENTS}
        values.update(modules=" ".join(b.modules), ros2_control=self.ros2_control)
        return {
            k: "auto" if v is None else str(v).lower() if isinstance(v, bool) else str(v) for k, v in values.items()
        }

    def external_packages(self) -> list[str]:
        """The packages not in this repository whose nodes this launch would start."""
        out = self.base.external_packages()
        if self.move_group:
            out.append("moveit_ros_move_group")
        if self.ros2_control:
            out.append("controller_manager")
        return out


def _bringup_data(launch_file: str | Path) -> dict[str, Any]:
    """The package's data file beside a bring-up launch file (an InputError naming it if it is missing or bad)."""
    from timor_core.common.safe_yaml import load_yaml

    path = Path(launch_file).with_name(BRINGUP_DATA)
    data = load_yaml(path, what="bring-up data")
    for key, kind in {
        "package": str,
        "robot": str,
        "distro": str,
        "route_packages": list,
        "xacro_arguments": dict,
    }.items():
        if not isinstance(data, dict) or not isinstance(data.get(key), kind):
            raise InputError(f"the bring-up data needs {key!r} ({kind.__name__})", file=path, path=f"$.{key}")
    return data


@dataclass(frozen=True)
class BringupLaunch:
    """A generated bring-up package's launch file, its arguments validated: the package's data (its
    ``launch/bringup.yaml``: package, robot, distro, the route's driver packages, the xacro arguments with their
    defaults) and the values of this launch file's arguments."""

    package: str
    robot: str
    distro: str
    route_packages: tuple[str, ...]
    namespace: str
    flags: dict[str, bool]  # the arguments whose default is true or false
    text: dict[str, str]  # the others: the xacro arguments this file takes (and ``world`` for sim)
    xacro_arguments: tuple[str, ...]

    @staticmethod
    def arguments(launch_file: str | Path) -> dict[str, tuple[str, str]]:
        """name -> (default, description) of a bring-up launch file's arguments (control and moveit also take the
        package's xacro arguments)."""
        name = Path(launch_file).name
        out = {"namespace": NAMESPACE_ARGUMENT, **BRINGUP_ARGUMENTS[name]}
        if name in ("control.launch.py", "moveit.launch.py"):
            xacro = _bringup_data(launch_file)["xacro_arguments"]
            out.update({str(k): (str(v), f"xacro argument {k} of the robot description") for k, v in xacro.items()})
        return out

    @classmethod
    def from_arguments(cls, launch_file: str | Path, args: Mapping[str, str]) -> BringupLaunch:
        """Parse and check every argument of ``launch_file`` (missing ones take their defaults)."""
        data, declared = _bringup_data(launch_file), cls.arguments(launch_file)
        args = check_arguments(args, declared)
        values = {name: args.get(name, default) for name, (default, _) in declared.items()}
        flags = {k: parse_flag(k, values[k]) for k, (default, _) in declared.items() if default in ("true", "false")}
        return cls(
            package=data["package"],
            robot=data["robot"],
            distro=check_distro(data["distro"], "the bring-up data's distro"),
            route_packages=tuple(str(p) for p in data["route_packages"]),
            namespace=check_namespace(values["namespace"]),
            flags=flags,
            text={n: check_xacro_argument(n, values[n]) for n in declared if n not in flags and n != "namespace"},
            xacro_arguments=tuple(str(k) for k in data["xacro_arguments"]),
        )

    @classmethod
    def checked(cls, context: Any, launch_file: str | Path) -> BringupLaunch:
        """``checked_plan`` of a bring-up launch file: its validated arguments, or one LaunchRefusedError."""
        try:
            declared = cls.arguments(launch_file)
        except InputError as exc:
            raise LaunchRefusedError(f"{Path(launch_file).name}: {exc}") from None
        return checked_plan(context, Path(launch_file).name, declared, lambda a: cls.from_arguments(launch_file, a))

    def description(self, share: str | Path) -> str:
        """The robot's URDF: the package's xacro expanded with its installed config folder and the xacro arguments
        of this launch file."""
        mappings = {"config_dir": str(Path(share) / "config")}
        mappings.update({k: v for k, v in self.text.items() if k in self.xacro_arguments})
        return expand_xacro(Path(share) / "urdf" / f"{self.robot}.urdf.xacro", mappings)

    def cm_remappings(self) -> list[tuple[str, str]]:
        """ros2_control_node's remappings for ``$ROS_DISTRO`` (the package's distro where it is not set)."""
        distro = os.environ.get("ROS_DISTRO") or self.distro
        try:
            return node_behaviour(distro).cm_remappings()
        except InputError as exc:
            raise LaunchRefusedError(str(exc)) from None
