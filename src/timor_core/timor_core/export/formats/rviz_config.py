"""The RViz configuration of one launch, and where RViz's camera puts a point on the screen.

timor_ros's ``rviz/timor.rviz`` is a template: a launch with ``prefix:=`` has no ``base_link`` (its root link is
``r1_base_link``), an imported robot keeps its own root link name (``panda_link0``), and in ``namespace:=r1`` the
robot's description is on ``/r1/robot_description`` and the task's markers on ``/r1/task_markers``.
``rviz_config_text`` writes the template's fixed frame and display topics for one launch, adds the task's
MarkerArray display when the launch shows a task, and reads the template's Orbit camera as an ``OrbitView``, whose
``project`` gives the pixel where RViz draws a point (the tests compare the screenshot with timor's own geometry).
Plain Python and PyYAML: no ROS needed.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import Any

import numpy as np
import yaml

from timor_core.errors import InputError
from timor_core.export.formats.yaml_text import to_yaml

__all__ = ["MARKERS_TOPIC", "OrbitView", "rviz_config_text", "root_link", "topic_in"]

#: the topic (relative to the launch's namespace) of the task's visualization_msgs/MarkerArray
MARKERS_TOPIC = "task_markers"

#: OGRE's default vertical field of view, which RViz's view controllers keep
FOV_Y = math.pi / 4

_MARKER_DISPLAY = {
    "Class": "rviz_default_plugins/MarkerArray",
    "Name": "Task",
    "Enabled": True,
    "Namespaces": {},
    "Topic": {
        "Depth": 5,
        "Durability Policy": "Transient Local",
        "History Policy": "Keep Last",
        "Reliability Policy": "Reliable",
        "Value": MARKERS_TOPIC,
    },
    "Value": True,
}


def topic_in(namespace: str, name: str) -> str:
    """The absolute name of a relative topic in a namespace (``r1``, ``robot_description`` -> ``/r1/...``)."""
    return "/" + "/".join(p for p in (*namespace.strip("/").split("/"), name) if p)


def root_link(urdf: str) -> str:
    """The root link of a URDF (the one link that is no joint's child); an InputError if there is not one."""
    try:
        robot = ET.fromstring(urdf)
    except ET.ParseError as exc:
        raise InputError(f"the robot description is not XML: {exc}") from None
    children = {child.get("link") for child in robot.iter("child")}
    roots = [name for link in robot.iter("link") if (name := link.get("name")) and name not in children]
    if len(roots) != 1:
        raise InputError("the robot description has no single root link", value=roots)
    return roots[0]


@dataclass(frozen=True)
class OrbitView:
    """RViz's Orbit view: the camera looks at ``focal`` from ``distance`` at ``yaw``/``pitch`` (rad), z up."""

    distance: float
    yaw: float
    pitch: float
    focal: tuple[float, float, float]

    @classmethod
    def of_config(cls, text: str) -> OrbitView:
        """The current view of an RViz config (an InputError unless it is an Orbit view with all four values)."""
        view = (_config(text).get("Visualization Manager") or {}).get("Views", {}).get("Current", {})
        if not isinstance(view, dict) or view.get("Class") != "rviz_default_plugins/Orbit":
            raise InputError("the RViz config's current view is not an Orbit view", value=str(view)[:80])
        try:
            focal = view["Focal Point"]
            return cls(float(view["Distance"]), float(view["Yaw"]), float(view["Pitch"]),
                       (float(focal["X"]), float(focal["Y"]), float(focal["Z"])))  # fmt: skip
        except (KeyError, TypeError, ValueError) as exc:
            raise InputError(f"the RViz config has no complete Orbit view ({exc})") from None

    def camera(self) -> np.ndarray:
        """The camera's position in the fixed frame (rviz_default_plugins' OrbitViewController::updateCamera)."""
        c, s = math.cos(self.pitch), math.sin(self.pitch)
        return np.add(self.focal, self.distance * np.array([math.cos(self.yaw) * c, math.sin(self.yaw) * c, s]))

    def project(self, points: Any, width: int, height: int) -> np.ndarray:
        """Pixel coordinates (column, row; float, (n, 2)) in a render panel of ``width`` x ``height`` pixels of
        points given in the fixed frame (n, 3); a point behind the camera gets NaN."""
        p = np.atleast_2d(np.asarray(points, dtype=float)) - self.camera()
        forward = np.subtract(self.focal, self.camera())
        forward /= np.linalg.norm(forward)
        right = np.cross(forward, (0.0, 0.0, 1.0))
        right /= np.linalg.norm(right)
        up = np.cross(right, forward)
        depth = p @ forward
        depth = np.where(depth > 1e-9, depth, np.nan)
        tan_y = math.tan(FOV_Y / 2)
        x = (p @ right) / (depth * tan_y * width / height)
        y = (p @ up) / (depth * tan_y)
        return np.column_stack(((x + 1) / 2 * width, (1 - y) / 2 * height))


def _config(text: str) -> dict:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InputError(f"the RViz config is not YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("Visualization Manager"), dict):
        raise InputError("the RViz config has no 'Visualization Manager'")
    return data


def rviz_config_text(template: str, *, fixed_frame: str, namespace: str = "", task: bool = False) -> str:
    """``template`` (an RViz config) for one launch: ``fixed_frame`` (the robot's root link, with its prefix),
    every display topic made absolute in ``namespace``, and, with ``task``, a MarkerArray display of the task's
    markers (``MARKERS_TOPIC``)."""
    data = _config(template)
    manager = data["Visualization Manager"]
    manager.setdefault("Global Options", {})["Fixed Frame"] = fixed_frame
    displays = [d for d in manager.get("Displays") or [] if d.get("Class") != _MARKER_DISPLAY["Class"]]
    if task:
        displays.append(yaml.safe_load(yaml.safe_dump(_MARKER_DISPLAY)))  # a copy
    for display in displays:
        for key in ("Topic", "Description Topic"):
            topic = display.get(key)
            if isinstance(topic, dict) and isinstance(topic.get("Value"), str) and topic["Value"]:
                topic["Value"] = topic_in(namespace, topic["Value"].lstrip("/"))
    manager["Displays"] = displays
    return to_yaml(data)
