"""What timor_ros's launch files need from the ROS install: the versions of the C++ nodes they start (which decide
how they are wired), the first URDF and the RViz configuration. Argument validation, the package check and
``LaunchRefusedError`` are those of every launch file: ``timor_core.ros.launch_arguments``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from timor_core.errors import InputError
from timor_core.export.formats.ros_distro import NodeBehaviour, node_behaviour
from timor_core.ros.launch_arguments import LaunchRefusedError

__all__ = [
    "LaunchRefusedError",
    "initial_urdf",
    "installed_versions",
    "nodes_of_this_install",
    "reads_description_topic",
    "root_frame",
    "rviz_config_for",
]

#: the C++ packages whose version decides how timor wires them (see timor_core.export.formats.ros_distro)
VERSIONED = ("robot_state_publisher", "controller_manager")


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
        raise LaunchRefusedError(str(exc)) from None


def reads_description_topic(wanted: bool | None, nodes: NodeBehaviour) -> bool:
    """Whether robot_state_publisher is started with ``description_from_topic``: ``wanted`` (None: where it can);
    true where the installed one cannot is refused, naming its version."""
    if wanted is None:
        return nodes.rsp_reads_topic
    if wanted and not nodes.rsp_reads_topic:
        version = installed_versions(["robot_state_publisher"]).get("robot_state_publisher", "unknown")
        raise LaunchRefusedError(
            f"description_from_topic:=true needs robot_state_publisher 3.4.4+ (installed: {version}, "
            f"{nodes.distro}); use description_from_topic:=false or auto"
        )
    return wanted


def initial_urdf(plan: Any) -> str:
    """The URDF the assembly node publishes first for an ``AssemblyLaunch`` (same prefix and ros2_control block),
    given to robot_state_publisher as its start-up parameter so that both agree from the first message."""
    from timor_core.ros.robot_description import describe

    plugin = plan.ros2_control_plugin if plan.ros2_control else None
    return describe(plan.assembly, prefix=plan.prefix, srdf=False, ros2_control_plugin=plugin).urdf


def root_frame(plan: Any) -> str:
    """The root link of an ``AssemblyLaunch``'s first robot, with its prefix: RViz's fixed frame (an imported robot
    keeps its own root name, a prefixed one has no ``base_link``) and the frame of the task's markers."""
    from timor_core.export.formats.rviz_config import root_link

    return root_link(plan.assembly.to_urdf(prefix=plan.prefix))


def rviz_config_for(fixed_frame: str, namespace: str = "", task: bool = False) -> str:
    """timor_ros's RViz configuration for one launch (``timor_core.export.formats.rviz_config``: ``fixed_frame``, the
    display topics in ``namespace``, the task's MarkerArray display with ``task``), written to a temporary file whose
    path is returned and removed when the launch process ends (rviz2, its child, has read it by then)."""
    import atexit
    import tempfile

    from ament_index_python.packages import get_package_share_directory

    from timor_core.export.formats.rviz_config import rviz_config_text

    template = (Path(get_package_share_directory("timor_ros")) / "rviz" / "timor.rviz").read_text()
    text = rviz_config_text(template, fixed_frame=fixed_frame, namespace=namespace, task=task)
    with tempfile.NamedTemporaryFile("w", prefix="timor_", suffix=".rviz", delete=False) as f:
        f.write(text)
    atexit.register(Path(f.name).unlink, missing_ok=True)
    return f.name
