"""Launch arguments: the one validation of every launch file, timor_ros's (``assembly``, ``moveit``) and those of the
generated bring-up packages (``view``, ``control``, ``moveit``, ``sim``; templates in ``hardware/bringup_templates``).

``ros2 launch`` hands every argument over as a string. A launch file that parses them while it starts nodes
fails halfway (``search_workers:=two`` after four nodes started) and leaves processes behind. So every launch file
goes through the same three steps here before it starts anything (``checked_plan``): it refuses a ``name:=value``
it does not declare, parses every argument at once (an ``AssemblyLaunch``, ``MoveItLaunch`` or ``BringupLaunch``,
or an ``InputError`` naming the argument and its value), and checks that the external packages it would start are
installed. Any problem ends the launch with one ``LaunchRefusedError`` and nothing running. Every launch file's
``generate_launch_description`` is ``launch_description`` (its arguments declared, its nodes made once they are
set). ROS is imported only inside the functions that look at a launch context or the installed packages or build
the launch description: the module itself needs no ROS.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from timor_core.common.names import check_plugin, check_prefix, check_xacro_argument, expand_xacro
from timor_core.errors import InputError, TimorError
from timor_core.export.formats.ros_distro import check_distro, node_behaviour
from timor_core.limits import limit_hint, limits
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB
from timor_core.ros.launch_paths import config_folder, task_file

__all__ = ["ASSEMBLY_ARGUMENTS", "BRINGUP_ARGUMENTS", "BRINGUP_DATA", "MOVEIT_ARGUMENTS", "SWITCHES", "AssemblyLaunch",
           "BringupLaunch", "LaunchRefusedError", "MoveItLaunch", "check_arguments", "check_namespace", "checked_plan",
           "controller_manager", "launch_description", "parse_auto_flag", "parse_flag", "refuse_unknown_arguments",
           "require_packages"]  # fmt: skip

Plan = TypeVar("Plan")


class LaunchRefusedError(TimorError):
    """A launch refused before it started any process (unknown or bad argument, missing package)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{reason}; nothing was started")


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

_NAMESPACE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(/[A-Za-z][A-Za-z0-9_]*)*")
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")
_WHOLE = re.compile(r"[0-9]{1,9}")  # ASCII digits only: str.isdigit() also takes '²', which int() refuses


def check_arguments(args: Mapping[str, object], known: Mapping[str, object]) -> dict[str, str]:
    """The arguments as strings, each a known name, without NUL characters and at most ``max_path_chars`` long
    (a launch argument is a name, a flag, a number or a path); else an InputError naming the argument."""
    unknown = sorted(str(k) for k in set(args) - set(known))
    if unknown:
        raise InputError(f"unknown launch argument (expected one of {', '.join(known)})", value=unknown[0])
    longest = limits().max_path_chars
    out = {}
    for name, value in args.items():
        text = value if isinstance(value, str) else str(value)
        if "\x00" in text:
            raise InputError(f"launch argument {name!r} contains a NUL character", value=text)
        if len(text) > longest:
            raise InputError(
                f"launch argument {name!r} has {len(text)} characters, more than the {limit_hint('max_path_chars')}"
                f" ({longest})",
                value=text,
            )
        out[str(name)] = text
    return out


def parse_flag(name: str, value: str) -> bool:
    """A boolean launch argument: true/false (also 1/0, yes/no, on/off); anything else is refused."""
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InputError(f"launch argument {name!r} must be true or false", value=value)


def parse_auto_flag(name: str, value: str) -> bool | None:
    """A boolean launch argument that may also be ``auto`` (None: decided by what is installed)."""
    return None if str(value).strip().lower() == "auto" else parse_flag(name, value)


def check_namespace(value: str) -> str:
    """The ``namespace`` argument: names of letters, digits and '_' separated by '/' (leading and trailing '/' and
    blanks are dropped: ``/r1/`` -> ``r1``), or empty for the root; else an InputError."""
    namespace = str(value).strip().strip("/")
    if namespace and not _NAMESPACE.fullmatch(namespace):
        raise InputError(
            "launch argument 'namespace' must be a ROS namespace (letters, digits, '_', separated by '/')",
            value=value,
        )
    return namespace


def controller_manager(namespace: str) -> str:
    """The full name of the controller manager of a namespace (what the spawners are told)."""
    return "/" + "/".join(p for p in (*namespace.strip("/").split("/"), "controller_manager") if p)


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


def refuse_unknown_arguments(launch_file: str, declared: Iterable[str], argv: list[str] | None = None) -> None:
    """When ``launch_file`` is the file given to ``ros2 launch``, refuse a ``name:=value`` it does not declare
    (``ros2 launch`` ignores them silently, so ``rvis:=false`` would start RViz). Not checked when another launch
    file includes this one: that file may have arguments of its own."""
    argv = sys.argv if argv is None else argv
    if not any(Path(a).name == launch_file for a in argv[1:]):
        return
    known = set(declared)
    unknown = [a.split(":=", 1)[0] for a in argv[1:] if ":=" in a and a.split(":=", 1)[0] not in known]
    if unknown:
        raise LaunchRefusedError(
            f"{launch_file}: unknown launch argument {unknown[0]!r} (its arguments: {', '.join(sorted(known))})"
        )


def require_packages(packages: Iterable[str], switches: Mapping[str, str] | None = None) -> None:
    """One LaunchRefusedError naming every package that is not installed (and the argument that leaves it out)."""
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    missing = []
    for package in dict.fromkeys(packages):
        try:
            get_package_prefix(package)
        except (PackageNotFoundError, ValueError):
            switch = (switches or {}).get(package)
            missing.append(f"{package} (leave it out with {switch})" if switch else package)
    if missing:
        raise LaunchRefusedError(f"not installed: {', '.join(missing)}")


def launch_description(declared: Mapping[str, tuple[str, str]], launch: Callable[[Any], list]) -> Any:
    """What every timor launch file's ``generate_launch_description`` returns: its arguments declared (name ->
    (default, description)) and ``launch(context)`` run once their values are set (an ``OpaqueFunction``)."""
    # ignore: where mypy also checks src/timor_ros, it reads src/timor_ros/launch/ (launch files) as package `launch`
    from launch import LaunchDescription  # type: ignore[attr-defined]
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    arguments = [DeclareLaunchArgument(k, default_value=v, description=d) for k, (v, d) in declared.items()]
    return LaunchDescription([*arguments, OpaqueFunction(function=launch)])


def checked_plan(
    context: Any, launch_file: str, declared: Iterable[str], parse: Callable[[dict[str, str]], Plan]
) -> Plan:
    """A launch file's validated arguments (``parse`` of the values in the launch ``context``), after refusing
    unknown command-line arguments; a bad value is one LaunchRefusedError naming the file and the argument."""
    names = list(declared)
    refuse_unknown_arguments(launch_file, names)
    configs: Mapping[str, str] = context.launch_configurations
    try:
        return parse({name: configs[name] for name in names if name in configs})
    except InputError as exc:
        raise LaunchRefusedError(f"{launch_file}: {exc}") from None
