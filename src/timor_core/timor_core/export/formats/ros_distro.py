"""What the ROS 2 nodes of each distro expect from timor's launch files and configuration files.

The same robot needs different wiring on Humble, Jazzy and Kilted, and even between releases of one distro:

* robot_state_publisher takes the URDF as its ``robot_description`` parameter everywhere; only 3.4.4+ (Kilted,
  released 2026-09) and 3.5.3+ (Rolling) can read it from the ``robot_description`` topic instead
  (``description_from_topic``; ros/robot_state_publisher#234). Older ones die at start without the parameter.
* controller_manager (ros2_control_node) of Humble (2.x) subscribes to ``~/robot_description``, so launch files
  remap it to ``robot_description``; from Jazzy (4.x) it subscribes to ``robot_description`` itself and warns
  that remapping its topics is deprecated.
* MoveIt of Humble reads ``planning_plugin`` (one string) and ``request_adapters`` (one space-separated string of
  ``default_planner_request_adapters/...``) in ompl_planning.yaml; Jazzy and newer read ``planning_plugins`` (a
  list) and split ``request_adapters`` / ``response_adapters`` (lists of ``default_planning_*_adapters/...``).

``node_behaviour`` picks these from the distro name (``ROS_DISTRO``) and, where known, the installed packages'
versions, which decide over the name (a Kilted install from before 2026-09 has no ``description_from_topic``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from timor_core.errors import InputError

__all__ = [
    "DISTROS",
    "DEFAULT_DISTRO",
    "NodeBehaviour",
    "node_behaviour",
    "ompl_pipeline",
    "parse_version",
    "check_distro",
]

#: the ROS 2 distros whose node behaviour timor knows, oldest first
DISTROS = ("humble", "jazzy", "kilted", "rolling")
DEFAULT_DISTRO = "kilted"
#: ros2_control's major version -> distro (controller_manager's package.xml)
_CONTROL_MAJOR = {2: "humble", 3: "humble", 4: "jazzy", 5: "kilted"}


def parse_version(text: str) -> tuple[int, ...] | None:
    """``"3.4.4"`` -> ``(3, 4, 4)``; None for anything that is not dotted numbers."""
    text = str(text).strip()
    if not re.fullmatch(r"\d{1,6}(\.\d{1,6}){0,3}", text):
        return None
    return tuple(int(p) for p in text.split("."))


def check_distro(name: str, what: str = "ROS distro") -> str:
    """A distro name of ``DISTROS`` (case-insensitive), or InputError naming ``what`` and the value."""
    low = str(name).strip().lower()
    if low not in DISTROS:
        raise InputError(f"{what} must be one of {', '.join(DISTROS)}", value=name)
    return low


def rsp_reads_topic(version: tuple[int, ...]) -> bool:
    """Whether this robot_state_publisher version has ``description_from_topic`` (3.4.4+ on 3.4, 3.5.3+)."""
    return (3, 4, 4) <= version < (3, 5) or version >= (3, 5, 3)


@dataclass(frozen=True)
class NodeBehaviour:
    """How timor wires the C++ nodes of one ROS 2 installation (see the module docstring)."""

    distro: str
    #: robot_state_publisher can read the URDF from the robot_description topic (else: parameter)
    rsp_reads_topic: bool
    #: controller_manager listens on ``~/robot_description`` (Humble): launch files remap it
    cm_private_topic: bool
    #: MoveIt's ompl_planning.yaml layout: "humble" (planning_plugin) or "jazzy" (planning_plugins)
    moveit_layout: str

    def cm_remappings(self) -> list[tuple[str, str]]:
        """Remappings of ros2_control_node so that it reads the robot_description topic of its namespace."""
        return [("~/robot_description", "robot_description")] if self.cm_private_topic else []


def node_behaviour(distro: str | None = None, versions: Mapping[str, str] | None = None) -> NodeBehaviour:
    """The behaviour of the nodes of ``distro`` (default: ``$ROS_DISTRO``, else from controller_manager's
    version, else Kilted), corrected by the installed ``versions`` (package -> version text) where given."""
    versions = dict(versions or {})
    name = distro if distro is not None else os.environ.get("ROS_DISTRO", "")
    if name:
        name = check_distro(name, "ROS_DISTRO" if distro is None else "ROS distro")
    else:
        cm = parse_version(versions.get("controller_manager", ""))
        name = _CONTROL_MAJOR.get(cm[0], DEFAULT_DISTRO) if cm else DEFAULT_DISTRO
    rsp = parse_version(versions.get("robot_state_publisher", ""))
    # without a known version, only Rolling is sure to have it (Kilted got it in a later release)
    reads_topic = rsp_reads_topic(rsp) if rsp else name == "rolling"
    cm = parse_version(versions.get("controller_manager", ""))
    private = cm[0] < 4 if cm else name == "humble"
    return NodeBehaviour(
        distro=name,
        rsp_reads_topic=reads_topic,
        cm_private_topic=private,
        moveit_layout="humble" if name == "humble" else "jazzy",
    )


#: MoveIt 2 Jazzy and newer (moveit2@jazzy moveit_configs_utils/default_configs/ompl_planning.yaml)
OMPL_PIPELINE_JAZZY: dict = {
    "planning_plugins": ["ompl_interface/OMPLPlanner"],
    "request_adapters": [
        "default_planning_request_adapters/ResolveConstraintFrames",
        "default_planning_request_adapters/ValidateWorkspaceBounds",
        "default_planning_request_adapters/CheckStartStateBounds",
        "default_planning_request_adapters/CheckStartStateCollision",
    ],
    "response_adapters": [
        "default_planning_response_adapters/AddTimeOptimalParameterization",
        "default_planning_response_adapters/ValidateSolution",
        "default_planning_response_adapters/DisplayMotionPath",
    ],
}
#: MoveIt 2 Humble (moveit2@humble moveit_configs_utils/default_configs/ompl_planning.yaml): one plugin name, the
#: adapters as one space-separated string, processed in this order
OMPL_PIPELINE_HUMBLE: dict = {
    "planning_plugin": "ompl_interface/OMPLPlanner",
    "request_adapters": " ".join(
        f"default_planner_request_adapters/{name}"
        for name in (
            "AddTimeOptimalParameterization",
            "ResolveConstraintFrames",
            "FixWorkspaceBounds",
            "FixStartStateBounds",
            "FixStartStateCollision",
            "FixStartStatePathConstraints",
        )
    ),
    "start_state_max_bounds_error": 0.1,
}


def ompl_pipeline(distro: str) -> dict:
    """The plugin and adapter entries of MoveIt's ompl_planning.yaml in the layout ``distro`` reads."""
    layout = OMPL_PIPELINE_HUMBLE if check_distro(distro) == "humble" else OMPL_PIPELINE_JAZZY
    return {k: list(v) if isinstance(v, list) else v for k, v in layout.items()}
