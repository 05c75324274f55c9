"""A task as RViz markers: its obstacles, goal frames with their tolerance volumes, and base placement, as plain
data that a ROS node turns into one ``visualization_msgs/MarkerArray`` (timor_ros's ``task_markers`` node).

The same picture as the browser viewer's ``add_task`` (same colours, same tolerance volumes), in the task's world
frame: box, cylinder and sphere obstacles as RViz's own shapes, meshes and tolerance volumes as triangle lists,
each goal frame as three arrows (x red, y green, z blue) with its ID as text. No ROS needed here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import trimesh
from scipy.spatial.transform import Rotation

from timor_core.model.geometry import Box, Cylinder, Geometry, Sphere
from timor_core.viz.scene import BASE_COLOR, GOAL_COLOR, OBSTACLE_COLOR
from timor_core.viz.shapes import AXIS_COLORS, geometry_mesh, goal_poses
from timor_core.viz.tolerance_volume import tolerance_volume

__all__ = ["ARROW", "CUBE", "CYLINDER", "SPHERE", "TEXT", "TRIANGLE_LIST", "MarkerData", "task_markers"]

# visualization_msgs/Marker types
ARROW, CUBE, SPHERE, CYLINDER, TEXT, TRIANGLE_LIST = 0, 1, 2, 3, 9, 11

AXIS_LENGTH = 0.1  # m, a goal frame's arrows
OBSTACLE_ALPHA, TOLERANCE_ALPHA = 0.85, 0.4

Vector = tuple[float, float, float]


@dataclass(frozen=True)
class MarkerData:
    """One marker, in the task's world frame: ``orientation`` is a quaternion (x, y, z, w), ``color`` RGBA in
    0..1, ``points`` the arrow's start and end or the triangles' corners (three per triangle)."""

    ns: str
    id: int
    type: int
    position: Vector = (0.0, 0.0, 0.0)
    orientation: tuple[float, float, float, float] = (0.0, 0.0, 0.0, 1.0)
    scale: Vector = (1.0, 1.0, 1.0)
    color: tuple[float, float, float, float] = (1.0, 1.0, 1.0, 1.0)
    points: tuple[Vector, ...] = ()
    text: str = ""


def _rgba(rgb: Sequence[int], alpha: float) -> tuple[float, float, float, float]:
    r, g, b = (float(c) / 255 for c in rgb)
    return r, g, b, alpha


def _vector(v) -> Vector:
    x, y, z = (float(c) for c in v)
    return x, y, z


def _quaternion(T: np.ndarray) -> tuple[float, float, float, float]:

    x, y, z, w = Rotation.from_matrix(np.asarray(T, dtype=float)[:3, :3]).as_quat()
    return float(x), float(y), float(z), float(w)


def _triangles(mesh: trimesh.Trimesh) -> tuple[Vector, ...]:
    return tuple(_vector(p) for p in np.asarray(mesh.vertices)[np.asarray(mesh.faces)].reshape(-1, 3))


def _geometry_marker(ns: str, mid: int, geometry: Geometry, color) -> MarkerData | None:
    """One obstacle geometry: RViz's shape for a box, cylinder or sphere (along z, like timor's), else triangles."""
    pose = np.asarray(geometry.pose, dtype=float)
    shape: tuple[int, tuple[float, ...]] | None = None
    if isinstance(geometry, Box):
        shape = CUBE, (geometry.x, geometry.y, geometry.z)
    elif isinstance(geometry, Cylinder):
        shape = CYLINDER, (2 * geometry.r, 2 * geometry.r, geometry.z)
    elif isinstance(geometry, Sphere):
        shape = SPHERE, (2 * geometry.r,) * 3
    if shape is not None:
        return MarkerData(ns, mid, shape[0], _vector(pose[:3, 3]), _quaternion(pose), _vector(shape[1]), color)
    mesh = geometry_mesh(geometry)  # a mesh (a missing one is None)
    if mesh is None or not len(mesh.faces):
        return None
    return MarkerData(ns, mid, TRIANGLE_LIST, color=color, points=_triangles(mesh))


def _pose_markers(ns: str, first: int, T: np.ndarray, tolerance, color, label: str) -> list[MarkerData]:
    """A tolerated pose: three axis arrows, its tolerance volume (if it bounds positions visibly) and a label."""
    T = np.asarray(T, dtype=float)
    origin = _vector(T[:3, 3])
    out = [
        MarkerData(ns, first + axis, ARROW, scale=(0.012, 0.024, 0.025), color=_rgba(rgb, 1.0),
                   points=(origin, _vector(T[:3, 3] + AXIS_LENGTH * T[:3, axis])))
        for axis, rgb in enumerate(AXIS_COLORS)
    ]  # fmt: skip
    volume = tolerance_volume(tolerance, T)
    if volume is not None:
        out.append(MarkerData(ns, first + 3, TRIANGLE_LIST, color=_rgba(color, TOLERANCE_ALPHA),
                              points=_triangles(volume)))  # fmt: skip
    above = _vector(T[:3, 3] + (0.0, 0.0, 0.06))
    out.append(MarkerData(ns, first + 4, TEXT, above, scale=(0.0, 0.0, 0.05), color=(1.0, 1.0, 1.0, 1.0), text=label))
    return out


def task_markers(task) -> list[MarkerData]:
    """Every marker of a task: namespace ``obstacles`` (one per geometry, visual geometry where given),
    ``goals`` (five ids per goal pose: three arrows, tolerance volume, label) and ``base`` (the base placement)."""
    out: list[MarkerData] = []
    obstacle_color = _rgba(OBSTACLE_COLOR, OBSTACLE_ALPHA)
    for obstacle in task.obstacles:
        for geometry in obstacle.visual if obstacle.visual else obstacle.collision:
            marker = _geometry_marker("obstacles", len(out), geometry, obstacle_color)
            if marker is not None:
                out.append(marker)
    for i, (label, pose) in enumerate(goal_poses(task)):
        out.extend(_pose_markers("goals", 5 * i, pose.world, pose.tolerance, GOAL_COLOR, label))
    base = task.base_placement
    if base is not None and base.pose is not None:
        out.extend(_pose_markers("base", 0, base.pose.world, base.pose.tolerance, BASE_COLOR, "base"))
    return out
