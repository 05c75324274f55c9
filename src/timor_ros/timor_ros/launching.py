"""What the launch files share: their arguments as a dict, and the check that the external packages they would
start are installed. Parsing and validation live in ``timor_core.export.launch_arguments``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from timor_core.errors import InputError
from timor_core.export.launch_arguments import SWITCHES
from timor_core.export.ros_distro import NodeBehaviour, node_behaviour

Plan = TypeVar("Plan")

__all__ = [
    "LaunchRefusedError",
    "arguments",
    "checked_plan",
    "installed_versions",
    "nodes_of_this_install",
    "reads_description_topic",
    "require_packages",
    "refuse_unknown_arguments",
]

#: the C++ packages whose version decides how timor wires them (see timor_core.export.ros_distro)
VERSIONED = ("robot_state_publisher", "controller_manager")


class LaunchRefusedError(RuntimeError):
    """A launch refused before it started any process (bad argument, missing package)."""


def arguments(context, declared: Iterable[str]) -> dict[str, str]:
    """The values of the declared launch arguments in a launch context (defaults filled in by launch)."""
    configs: Mapping[str, str] = context.launch_configurations
    return {name: configs[name] for name in declared if name in configs}


def refuse_unknown_arguments(launch_file: str, declared: Iterable[str]) -> None:
    """When ``launch_file`` is the file given to ``ros2 launch``, refuse a ``name:=value`` it does not declare
    (``ros2 launch`` ignores them silently, so ``rvis:=false`` would start RViz). Not checked when another launch
    file includes this one: that file may have arguments of its own."""
    import sys

    argv = sys.argv
    if not any(Path(a).name == launch_file for a in argv[1:]):
        return
    known = set(declared)
    unknown = [a.split(":=", 1)[0] for a in argv[1:] if ":=" in a and a.split(":=", 1)[0] not in known]
    if unknown:
        raise LaunchRefusedError(
            f"{launch_file}: unknown launch argument {unknown[0]!r} (its arguments: {', '.join(sorted(known))}); "
            "nothing was started"
        )


def require_packages(packages: Iterable[str]) -> None:
    """Raise one LaunchRefusedError naming every package that is not installed and the argument that leaves it out."""
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    missing = []
    for package in packages:
        try:
            get_package_prefix(package)
        except (PackageNotFoundError, ValueError):
            switch = SWITCHES.get(package)
            missing.append(f"{package} (leave it out with {switch})" if switch else package)
    if missing:
        raise LaunchRefusedError(f"not installed: {', '.join(missing)}; nothing was started")


def checked_plan(
    context: Any, launch_file: str, declared: Iterable[str], parse: Callable[[dict[str, str]], Plan]
) -> Plan:
    """A launch file's validated arguments (``parse``), after refusing unknown CLI arguments and before checking
    that every external package the plan starts is installed; any problem is one LaunchRefusedError."""
    names = list(declared)
    refuse_unknown_arguments(launch_file, names)
    try:
        plan = parse(arguments(context, names))
    except InputError as exc:
        raise LaunchRefusedError(f"{launch_file}: {exc}; nothing was started") from None
    require_packages(plan.external_packages())  # type: ignore[attr-defined]
    return plan


def installed_versions(packages: Iterable[str] = VERSIONED) -> dict[str, str]:
    """package -> the version in its installed package.xml, for the packages that are installed."""
    import re

    from ament_index_python.packages import PackageNotFoundError, get_package_share_directory

    found = {}
    for package in packages:
        try:
            manifest = Path(get_package_share_directory(package)) / "package.xml"
            match = re.search(r"<version>\s*([^<\s]+)\s*</version>", manifest.read_text(errors="replace"))
        except (PackageNotFoundError, ValueError, OSError):
            continue
        if match:
            found[package] = match.group(1)
    return found


def nodes_of_this_install(distro: str = "") -> NodeBehaviour:
    """The node behaviour of ``distro`` (empty: ``$ROS_DISTRO``) corrected by the installed versions."""
    try:
        return node_behaviour(distro or None, installed_versions())
    except InputError as exc:
        raise LaunchRefusedError(f"{exc}; nothing was started") from None


def reads_description_topic(wanted: bool | None, nodes: NodeBehaviour) -> bool:
    """Whether robot_state_publisher is started with ``description_from_topic``: ``wanted`` (None: where it can);
    true where the installed one cannot is refused, naming its version."""
    if wanted is None:
        return nodes.rsp_reads_topic
    if wanted and not nodes.rsp_reads_topic:
        version = installed_versions(["robot_state_publisher"]).get("robot_state_publisher", "unknown")
        raise LaunchRefusedError(
            f"description_from_topic:=true needs robot_state_publisher 3.4.4+ (installed: {version}, "
            f"{nodes.distro}); use description_from_topic:=false or auto; nothing was started"
        )
    return wanted


def initial_urdf(plan: Any) -> str:
    """The URDF the assembly node publishes first for an ``AssemblyLaunch`` (same prefix and ros2_control block),
    given to robot_state_publisher as its start-up parameter so that both agree from the first message."""
    from timor_core.export.description import describe

    plugin = plan.ros2_control_plugin if plan.ros2_control else None
    return describe(plan.assembly, prefix=plan.prefix, srdf=False, ros2_control_plugin=plugin).urdf


def rviz_config_for(fixed_frame: str) -> str:
    """timor_ros's RViz configuration with ``fixed_frame`` (the robot's prefixed root link), written to a temporary
    file whose path is returned: with a name prefix the robot has no ``base_link`` for RViz to show it in."""
    import re
    import tempfile

    from ament_index_python.packages import get_package_share_directory

    text = (Path(get_package_share_directory("timor_ros")) / "rviz" / "timor.rviz").read_text()
    text = re.sub(r"(?m)^(\s*Fixed Frame:) .*$", lambda m: f"{m.group(1)} {fixed_frame}", text)
    with tempfile.NamedTemporaryFile("w", prefix="timor_", suffix=".rviz", delete=False) as f:
        f.write(text)
    return f.name
