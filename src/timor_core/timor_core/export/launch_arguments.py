"""The launch arguments of timor_ros's launch files, validated before any process starts.

``ros2 launch`` hands every argument over as a string. A launch file that parses them while it starts nodes
fails halfway (``search_workers:=two`` after four nodes started) and leaves processes behind. So the launch
files parse everything here first, in one step: an ``AssemblyLaunch`` or ``MoveItLaunch`` or an ``InputError``
naming the argument and its value. Only then do they check that the external packages they would start are
installed (``external_packages``), and only then start anything.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from timor_core.common.names import check_plugin, check_prefix
from timor_core.errors import InputError
from timor_core.export.ros_distro import check_distro
from timor_core.limits import limit_hint, limits
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB

__all__ = [
    "ASSEMBLY_ARGUMENTS",
    "MOVEIT_ARGUMENTS",
    "AssemblyLaunch",
    "MoveItLaunch",
    "parse_flag",
    "parse_auto_flag",
    "SWITCHES",
    "check_arguments",
]

#: name -> (default, description) of assembly.launch.py's arguments.
ASSEMBLY_ARGUMENTS: dict[str, tuple[str, str]] = {
    "db": ("geometric_primitive_modules", "embedded module set name or modules.json path"),
    "modules": ("base J2 i_45 J2 J2 eef", "module IDs of the initial serial assembly, base first"),
    "prefix": ("", "prefix of every link and joint name (leave it out for none)"),
    "namespace": ("", "namespace of every node, one robot per namespace (leave it out for the root)"),
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
}

#: name -> (default, description) of moveit.launch.py's own arguments (it takes assembly.launch.py's too).
MOVEIT_ARGUMENTS: dict[str, tuple[str, str]] = {
    "config_dir": ("/tmp/timor_moveit_config", "folder the generated MoveIt config is written to"),
    "move_group": ("true", "start MoveIt's move_group (C++ package moveit_ros_move_group)"),
    "ros2_control": ("true", "start ros2_control_node and the spawners of joint_state_broadcaster, arm_controller"),
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

_NAMESPACE = re.compile(r"/?[A-Za-z][A-Za-z0-9_]*(/[A-Za-z][A-Za-z0-9_]*)*")
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
        namespace = get("namespace").strip()
        if namespace and not _NAMESPACE.fullmatch(namespace):
            raise InputError(
                "launch argument 'namespace' must be a ROS namespace (letters, digits, '_', separated by '/')",
                value=namespace,
            )
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


def _folder(text: str) -> Path:
    """``config_dir``: a folder (or none yet) after ``~`` expansion; every failure an InputError naming it."""
    if not text.strip():
        raise InputError("launch argument 'config_dir' is empty", value=text)
    try:
        path = Path(text).expanduser()
    except RuntimeError as exc:  # ~nosuchuser/x: no such user's home
        raise InputError(f"launch argument 'config_dir': cannot expand '~' ({exc})", value=text) from None
    try:
        if path.exists() and not path.is_dir():
            raise InputError("launch argument 'config_dir' is not a folder", value=str(path))
    except OSError as exc:  # a component longer than the file system allows, a loop of links, ...
        raise InputError(f"launch argument 'config_dir' cannot be used: {exc.strerror or exc}", value=text) from None
    return path


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
        config_dir = _folder(_arg(args, MOVEIT_ARGUMENTS, "config_dir"))
        base_args = {k: v for k, v in args.items() if k in ASSEMBLY_ARGUMENTS}
        base_args["ros2_control"] = "true" if ros2_control else "false"
        if ros2_control:  # /joint_states comes from joint_state_broadcaster
            base_args["joint_state_publisher"] = "false"
        return cls(AssemblyLaunch.from_arguments(base_args), config_dir, move_group, ros2_control)

    def forwarded(self) -> dict[str, str]:
        """The arguments handed to assembly.launch.py."""
        b = self.base
        return {
            "db": b.db,
            "modules": " ".join(b.modules),
            "prefix": b.prefix,
            "namespace": b.namespace,
            "robot_state_publisher": str(b.robot_state_publisher).lower(),
            "rviz": str(b.rviz).lower(),
            "gui": str(b.gui).lower(),
            "joint_state_publisher": str(b.joint_state_publisher).lower(),
            "ros2_control": str(self.ros2_control).lower(),
            "ros2_control_plugin": b.ros2_control_plugin,
            "description_from_topic": "auto"
            if b.description_from_topic is None
            else str(b.description_from_topic).lower(),
            "ros_distro": b.ros_distro,
            "srdf": str(b.srdf).lower(),
            "search": str(b.search).lower(),
            "search_workers": str(b.search_workers),
        }

    def external_packages(self) -> list[str]:
        """The packages not in this repository whose nodes this launch would start."""
        out = self.base.external_packages()
        if self.move_group:
            out.append("moveit_ros_move_group")
        if self.ros2_control:
            out.append("controller_manager")
        return out
