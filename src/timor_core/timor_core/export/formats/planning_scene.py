"""A task's world as MoveIt's planning scene sees it: collision objects in the robot's root frame, plus padding.

``planning_scene(task, ...)`` turns every obstacle of a task (boxes, cylinders, spheres, meshes, and obstacles
composed of several of them) into plain data shaped like ``moveit_msgs/CollisionObject`` (SolidPrimitive
dimensions in MoveIt's order, meshes as vertices and triangles), placed relative to the robot's root link, and the
task's collisionFree safety margin as padding of every robot link. MoveIt checks the world against padded links and
the robot against itself unpadded, which is what the margin means in timor's own checker. ``timor_ros`` turns it
into messages; nothing here imports ROS.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from timor_core.errors import InputError
from timor_core.model.geometry import Box, Cylinder, Empty, Mesh, Sphere
from timor_core.model.mesh_data import ConvexParts
from timor_core.task.constraints import CollisionFree

if TYPE_CHECKING:
    from collections.abc import Iterable

    from timor_core.model.geometry import Geometry
    from timor_core.task.task import Task

__all__ = [
    "ScenePrimitive",
    "SceneMesh",
    "SceneObject",
    "PlanningScene",
    "planning_scene",
    "robot_links",
    "safety_margin",
]


@dataclass(frozen=True)
class ScenePrimitive:
    """A solid primitive: ``kind`` box (x, y, z), cylinder (height, radius) or sphere (radius); ``pose`` 4x4."""

    kind: str
    dimensions: tuple[float, ...]
    pose: np.ndarray


@dataclass(frozen=True)
class SceneMesh:
    """A triangle mesh (vertices already scaled, in metres) placed at ``pose``."""

    vertices: np.ndarray
    triangles: np.ndarray
    pose: np.ndarray


@dataclass(frozen=True)
class SceneObject:
    """One obstacle: an ID and the shapes it is made of."""

    id: str
    primitives: tuple[ScenePrimitive, ...]
    meshes: tuple[SceneMesh, ...]


@dataclass(frozen=True)
class PlanningScene:
    """The objects in ``frame`` (the robot's root link) and the padding of each robot link (metres)."""

    frame: str
    objects: tuple[SceneObject, ...]
    padding: dict[str, float]


def safety_margin(task: Task) -> float:
    """The task's collisionFree safety margin (the largest, if several constraints give one; 0 without)."""
    return max((float(c.safety_margin or 0.0) for c in task.constraints_of(CollisionFree)), default=0.0)


def _shapes(geometry: Geometry, to_root: np.ndarray) -> tuple[list[ScenePrimitive], list[SceneMesh]]:
    pose = to_root @ np.asarray(geometry.pose, dtype=float)
    if isinstance(geometry, Box):
        return [ScenePrimitive("box", (geometry.x, geometry.y, geometry.z), pose)], []
    if isinstance(geometry, Cylinder):
        return [ScenePrimitive("cylinder", (geometry.z, geometry.r), pose)], []
    if isinstance(geometry, Sphere):
        return [ScenePrimitive("sphere", (geometry.r,), pose)], []
    if isinstance(geometry, Mesh):
        if geometry.missing:
            return [], []
        data = geometry.load()
        parts = data.parts if isinstance(data, ConvexParts) else (data,)
        return [], [SceneMesh(np.asarray(p.vertices), np.asarray(p.faces), pose) for p in parts]
    if isinstance(geometry, Empty):
        return [], []
    raise InputError("MoveIt's planning scene cannot hold this geometry", value=type(geometry).__name__)


def planning_scene(
    task: Task, links: Iterable[str], frame: str = "base_link", base_placement: np.ndarray | None = None
) -> PlanningScene:
    """The task's obstacles relative to the robot's root link ``frame`` and its margin as padding of ``links``.

    ``base_placement`` is the robot's base pose in the task's world (default: the task's base placement, else the
    world origin): task files give obstacle poses in the world, MoveIt plans in the robot's root frame.
    """
    if base_placement is None:
        placement = task.base_placement
        base_placement = placement.pose.world if placement is not None and placement.pose else np.eye(4)
    base = np.asarray(base_placement, dtype=float)
    if base.shape != (4, 4) or not np.all(np.isfinite(base)):
        raise InputError("the base placement must be a finite 4x4 transform", value=base.tolist())
    to_root = np.linalg.inv(base)
    objects = []
    for obstacle in task.obstacles:
        primitives: list[ScenePrimitive] = []
        meshes: list[SceneMesh] = []
        for geometry in obstacle.collision:
            p, m = _shapes(geometry, to_root)
            primitives += p
            meshes += m
        objects.append(SceneObject(obstacle.id, tuple(primitives), tuple(meshes)))
    margin = safety_margin(task)
    return PlanningScene(frame, tuple(objects), {link: margin for link in links})


def robot_links(urdf: str) -> tuple[str, tuple[str, ...]]:
    """The root link and every link of a URDF text (the frame and the padded links of ``planning_scene``)."""
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError as exc:
        raise InputError(f"the robot description is not XML: {exc}", value=urdf[:80]) from None
    links = tuple(str(e.get("name")) for e in root.findall("link"))
    children = {str(c.get("link")) for c in root.findall("joint/child")}
    roots = [name for name in links if name not in children]
    if len(roots) != 1:
        raise InputError("the robot description must have exactly one root link", value=roots)
    return roots[0], links
