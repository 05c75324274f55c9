"""Offscreen software rendering of meshes to RGB images with matplotlib (Agg): no screen, browser or GPU.

Triangles are depth-sorted (painter's algorithm) and Lambert-shaded; good enough for videos and contact sheets.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import trimesh

from timor_core.viz import require
from timor_core.viz.shapes import Part, joint_poses, robot_parts

__all__ = ["Item", "Camera", "OffscreenRenderer", "RobotMesher", "simplified", "MAX_FACES"]

#: Meshes with more triangles are simplified (vertex clustering) before offscreen rendering.
MAX_FACES = 1500
_LIGHT = np.array([0.4, -0.5, 0.8]) / np.linalg.norm([0.4, -0.5, 0.8])


@dataclass
class Item:
    """World-space triangles (F, 3, 3) with one RGB colour (0-255) and an opacity."""

    triangles: np.ndarray
    color: Sequence[int]
    alpha: float = 1.0


@dataclass
class Camera:
    """An orbit camera looking at ``center``, showing a cube of half-width ``radius`` around it."""

    center: np.ndarray
    radius: float
    elev: float = 25.0
    azim: float = -55.0

    @classmethod
    def fit(cls, points: np.ndarray, margin: float = 1.05, **kwargs) -> Camera:
        """A camera showing every point (N, 3)."""
        points = np.asarray(points, dtype=float).reshape(-1, 3)
        lo, hi = points.min(axis=0), points.max(axis=0)
        return cls((lo + hi) / 2, max(float((hi - lo).max()) / 2 * margin, 1e-3), **kwargs)


def simplified(mesh: trimesh.Trimesh, max_faces: int = MAX_FACES) -> trimesh.Trimesh:
    """A coarser copy of a mesh with at most about ``max_faces`` triangles (vertex clustering on a grid)."""
    if len(mesh.faces) <= max_faces:
        return mesh
    cell = float(mesh.extents.max()) / 64
    out = mesh
    for _ in range(8):
        keys = np.floor(np.asarray(mesh.vertices) / cell).astype(np.int64)
        _, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        faces = inverse.reshape(-1)[mesh.faces]
        keep = (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
        faces = np.unique(np.sort(faces[keep], axis=1), axis=0, return_index=True)[1]
        out = trimesh.Trimesh(
            np.asarray(mesh.vertices)[first], inverse.reshape(-1)[mesh.faces][keep][np.sort(faces)], process=False
        )
        if len(out.faces) <= max_faces:
            break
        cell *= 1.4
    return out


def _triangles(mesh: trimesh.Trimesh, T: np.ndarray | None = None) -> np.ndarray:
    v = np.asarray(mesh.vertices, dtype=float)
    if T is not None:
        v = v @ T[:3, :3].T + T[:3, 3]
    return v[np.asarray(mesh.faces)]


class RobotMesher:
    """World triangles of a robot at any q, from meshes prepared (and simplified) once."""

    def __init__(self, robot, geometry: str = "visual", max_faces: int = MAX_FACES) -> None:
        self.robot = robot
        self.parts: list[Part] = [
            Part(p.name, p.joint, p.placement, simplified(p.mesh, max_faces)) for p in robot_parts(robot, geometry)
        ]
        self._local = [_triangles(p.mesh, p.placement) for p in self.parts]

    def triangles(self, q) -> np.ndarray:
        """All triangles (F, 3, 3) of the robot at q, in the world."""
        poses = joint_poses(self.robot, q)
        out = [tri @ poses[p.joint][:3, :3].T + poses[p.joint][:3, 3] for p, tri in zip(self.parts, self._local)]
        return np.concatenate(out) if out else np.zeros((0, 3, 3))


class OffscreenRenderer:
    """Renders Items from a Camera to (H, W, 3) uint8 images; reuses one matplotlib figure."""

    def __init__(self, width: int = 640, height: int = 480, background: str = "white") -> None:
        require("matplotlib")
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure

        dpi = 100
        self.figure = Figure(figsize=(width / dpi, height / dpi), dpi=dpi, facecolor=background)
        self.canvas = FigureCanvasAgg(self.figure)
        # an Axes3D (matplotlib types add_axes as returning Axes, and mpl_toolkits.mplot3d has no type information);
        # computed_zorder off: the floor (zorder 0) always lies under the depth-sorted triangles
        self.ax: Any = self.figure.add_axes((0, 0, 1, 1), projection="3d", facecolor=background, computed_zorder=False)
        self._collection = None
        self._floor = None
        self._texts: list = []

    def render(
        self,
        items: Sequence[Item],
        camera: Camera,
        labels: Sequence[tuple[np.ndarray, str]] = (),
        floor: Item | None = None,
    ) -> np.ndarray:
        """One image of the items (and text labels at 3D points) seen from the camera, above an optional floor."""
        from mpl_toolkits.mplot3d.art3d import Poly3DCollection

        ax = self.ax
        if floor is not None and self._floor is None:
            color = np.append(np.asarray(floor.color) / 255, floor.alpha)
            self._floor = Poly3DCollection(floor.triangles, facecolors=[color], edgecolors="none", zorder=0)
            ax.add_collection3d(self._floor)
        tris = [np.asarray(i.triangles, dtype=float).reshape(-1, 3, 3) for i in items]
        colors = []
        for item, t in zip(items, tris):
            n = np.cross(t[:, 1] - t[:, 0], t[:, 2] - t[:, 0])
            n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
            shade = 0.45 + 0.55 * np.abs(n @ _LIGHT)
            rgb = np.clip(np.outer(shade, np.asarray(item.color, dtype=float) / 255), 0, 1)
            colors.append(np.column_stack([rgb, np.full(len(t), item.alpha)]))
        verts = np.concatenate(tris) if tris else np.zeros((0, 3, 3))
        facecolors = np.concatenate(colors) if colors else np.zeros((0, 4))
        if self._collection is None:
            self._collection = Poly3DCollection(verts, facecolors=facecolors, edgecolors="none", linewidths=0, zorder=1)
            ax.add_collection3d(self._collection)
        else:
            self._collection.set_verts(verts)
            self._collection.set_facecolor(facecolors)
        for text in self._texts:
            text.remove()
        self._texts = [ax.text(*p, s, fontsize=8, color="black") for p, s in labels]
        c, r = camera.center, camera.radius
        ax.set_xlim(c[0] - r, c[0] + r)
        ax.set_ylim(c[1] - r, c[1] + r)
        ax.set_zlim(c[2] - r, c[2] + r)
        ax.set_box_aspect((1, 1, 1), zoom=1.5)
        ax.view_init(elev=camera.elev, azim=camera.azim)
        ax.set_axis_off()
        self.canvas.draw()
        return np.asarray(self.canvas.buffer_rgba())[..., :3].copy()

    def close(self) -> None:
        """Release the figure."""
        self.figure.clear()
