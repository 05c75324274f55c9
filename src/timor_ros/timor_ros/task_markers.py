"""task_markers node: a task's obstacles, goal frames and tolerance volumes as one visualization_msgs/MarkerArray,
for RViz (assembly.launch.py ``task:=``; the MarkerArray display of timor's RViz config shows it).

Parameters (read-only, set at start):
  task       a task file (CoBRA JSON) or the name of a task shipped with timor_core (``pick_and_place``)
  frame_id   the frame the task's world is in: the robot's root link (``r1_base_link`` with a prefix)
Published: ``task_markers`` (latched: RViz started later still gets it). The markers are
``timor_core.viz.rviz_markers.task_markers``; this node only turns them into messages.
"""

from __future__ import annotations

import sys
from typing import NoReturn

from geometry_msgs.msg import Point
from rclpy.node import Node
from std_msgs.msg import ColorRGBA
from visualization_msgs.msg import Marker, MarkerArray

from timor_core.errors import InputError
from timor_core.export.formats.rviz_config import MARKERS_TOPIC
from timor_core.ros.launch_paths import task_file
from timor_core.task.task import Task
from timor_core.viz.rviz_markers import MarkerData, task_markers

from .common import LATCHED, declare, param

__all__ = ["TaskMarkersNode", "marker_message", "main"]


def marker_message(data: MarkerData, frame_id: str) -> Marker:
    """One visualization_msgs/Marker of timor's plain marker data."""
    m = Marker()
    m.header.frame_id = frame_id
    m.ns, m.id, m.type, m.action = data.ns, data.id, data.type, Marker.ADD
    m.pose.position.x, m.pose.position.y, m.pose.position.z = data.position
    o = m.pose.orientation
    o.x, o.y, o.z, o.w = data.orientation
    m.scale.x, m.scale.y, m.scale.z = data.scale
    m.color = ColorRGBA(r=data.color[0], g=data.color[1], b=data.color[2], a=data.color[3])
    m.points = [Point(x=p[0], y=p[1], z=p[2]) for p in data.points]
    m.text = data.text
    return m


class TaskMarkersNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("task_markers", **kwargs)
        declare(self, "task", "", "task file or embedded task name", read_only=True)
        declare(self, "frame_id", "base_link", "frame of the task's world (the robot's root link)", read_only=True)
        try:
            path = task_file(str(param(self, "task", "")))
        except InputError as exc:
            raise InputError(str(exc).replace("launch argument", "parameter")) from None
        if not path:
            raise InputError("parameter 'task' is empty: name a task file or an embedded task")
        frame = str(param(self, "frame_id", "base_link"))
        markers = MarkerArray(markers=[marker_message(m, frame) for m in task_markers(Task.from_json_file(path))])
        self.publisher = self.create_publisher(MarkerArray, MARKERS_TOPIC, LATCHED)
        self.publisher.publish(markers)
        self.get_logger().info(f"task {path}: {len(markers.markers)} markers in frame {frame} on {MARKERS_TOPIC}")


def main(argv: list[str] | None = None) -> NoReturn:
    from .runner import exit_now, spin_nodes

    exit_now(spin_nodes([TaskMarkersNode], argv if argv is not None else sys.argv))


if __name__ == "__main__":
    sys.exit(main())
