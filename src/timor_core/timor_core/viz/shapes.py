"""Triangle meshes of robots, geometries and tolerance volumes (trimesh), independent of any viewer."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import coal
import numpy as np
import pinocchio as pin
import trimesh

from timor_core.model.geometry import Box, Cylinder, Geometry, Mesh, Sphere
from timor_core.model.meshes import ConvexParts, MeshData, load_mesh

if TYPE_CHECKING:
    from timor_core.kinematics.pose import ToleratedPose

__all__ = [
    "Part",
    "robot_parts",
    "joint_poses",
    "geometry_mesh",
    "geometries_mesh",
    "goal_poses",
    "posed",
]


@dataclass(frozen=True)
class Part:
    """One rigid piece of a robot: a mesh in its joint's frame (``joint`` 0 is the world)."""

    name: str
    joint: int
    placement: np.ndarray
    mesh: trimesh.Trimesh


def concatenate_meshes(meshes: list[trimesh.Trimesh]) -> trimesh.Trimesh:
    """``trimesh.util.concatenate`` of triangle meshes (one Trimesh; trimesh annotates the base Geometry)."""
    return trimesh.util.concatenate(meshes)  # type: ignore[return-value]  # trimesh types it as Geometry


def _data_mesh(data: MeshData | ConvexParts) -> trimesh.Trimesh:
    if isinstance(data, ConvexParts):
        return concatenate_meshes([_data_mesh(p) for p in data.parts])
    return trimesh.Trimesh(np.asarray(data.vertices), np.asarray(data.faces), process=False)


def _shape_mesh(obj: pin.GeometryObject) -> trimesh.Trimesh | None:
    """A trimesh of one Pinocchio geometry object (coal primitive, BVH, convex or mesh file)."""

    shape = obj.geometry
    if obj.meshPath:
        return _data_mesh(load_mesh(obj.meshPath, tuple(np.asarray(obj.meshScale, dtype=float))))
    if isinstance(shape, coal.Box):
        return trimesh.creation.box(extents=2 * np.asarray(shape.halfSide))
    if isinstance(shape, coal.Cylinder):
        return trimesh.creation.cylinder(radius=shape.radius, height=2 * shape.halfLength, sections=24)
    if isinstance(shape, coal.Sphere):
        return trimesh.creation.icosphere(subdivisions=2, radius=shape.radius)
    if hasattr(shape, "points") and hasattr(shape, "num_points"):  # coal.Convex
        points = np.array([shape.points(i) for i in range(shape.num_points)])
        return trimesh.convex.convex_hull(points)
    if hasattr(shape, "tri_indices") and shape.num_tris > 0:  # coal.BVHModel
        vertices = np.array([shape.vertex(i) for i in range(shape.num_vertices)])
        faces = np.array([list(shape.tri_indices(i)) for i in range(shape.num_tris)], dtype=int)
        return trimesh.Trimesh(vertices, faces, process=False)
    return None


def robot_parts(robot, geometry: str = "visual") -> list[Part]:
    """Meshes of a PinRobot's visual (or ``collision``) geometry, each placed in its parent joint's frame."""
    model = robot.visual if geometry == "visual" else robot.collision
    parts = []
    for obj in model.geometryObjects:
        mesh = _shape_mesh(obj)
        if mesh is not None and len(mesh.faces):
            parts.append(Part(obj.name, int(obj.parentJoint), obj.placement.homogeneous, mesh))
    return parts


def joint_poses(robot, q) -> np.ndarray:
    """World poses (njoints, 4, 4) of every Pinocchio joint at q, the universe (world) first."""
    poses = robot.fk(q, kind="joints")
    return np.concatenate([np.eye(4)[None], poses.reshape(-1, 4, 4)])


def posed(mesh: trimesh.Trimesh, T: np.ndarray) -> trimesh.Trimesh:
    """A copy of the mesh moved by the 4x4 transform T."""
    out = mesh.copy()
    out.apply_transform(T)
    return out


def geometry_mesh(geometry: Geometry) -> trimesh.Trimesh | None:
    """A trimesh of one timor geometry at its pose (None for empty or missing geometry)."""
    if isinstance(geometry, Box):
        mesh = trimesh.creation.box(extents=(geometry.x, geometry.y, geometry.z))
    elif isinstance(geometry, Cylinder):
        mesh = trimesh.creation.cylinder(radius=geometry.r, height=geometry.z, sections=24)
    elif isinstance(geometry, Sphere):
        mesh = trimesh.creation.icosphere(subdivisions=2, radius=geometry.r)
    elif isinstance(geometry, Mesh) and not geometry.missing:
        mesh = _data_mesh(geometry.load())
    else:  # Empty, or a mesh skipped as missing
        return None
    return posed(mesh, geometry.pose)


def geometries_mesh(geometries, T: np.ndarray | None = None) -> trimesh.Trimesh | None:
    """One trimesh of several geometries, moved by T (None if there is nothing to draw)."""
    meshes = [m for m in (geometry_mesh(g) for g in geometries) if m is not None]
    if not meshes:
        return None
    mesh = concatenate_meshes(meshes)
    return mesh if T is None else posed(mesh, T)


def goal_poses(task) -> Iterator[tuple[str, ToleratedPose]]:
    """(label, ToleratedPose) of every goal pose of a task: at/reach goals and follow trajectories' poses."""
    for goal in task.goals:
        pose = getattr(goal, "goal_pose", None)
        if pose is not None:
            yield goal.id, pose
        for i, p in enumerate(getattr(goal, "trajectory", []) or []):
            yield f"{goal.id}[{i}]", p


AXIS_COLORS = ((220, 50, 50), (50, 180, 60), (50, 90, 220))


def frame_axes(T: np.ndarray, length: float = 0.08, radius: float = 0.004) -> list[tuple[trimesh.Trimesh, tuple]]:
    """Three thin cylinders along the x (red), y (green) and z (blue) axes of the frame ``T``, with their colors."""
    T = np.asarray(T, dtype=float)
    out = []
    for axis, color in enumerate(AXIS_COLORS):
        tip = T[:3, 3] + length * T[:3, axis]
        out.append((trimesh.creation.cylinder(radius, segment=(T[:3, 3], tip), sections=8), color))
    return out
