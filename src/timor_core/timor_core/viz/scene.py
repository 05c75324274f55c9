"""Scene nodes of robots and tasks in a viser server: ``RobotScene`` (posable robot) and ``add_task``.

Every function takes a running ``viser.ViserServer``; nothing here starts one (see :mod:`.viewer`).
Geometry comes from :mod:`.shapes` (trimesh), so the browser view and the offscreen renderer show the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import trimesh
from scipy.spatial.transform import Rotation

from timor_core.common.transforms import IDENTITY
from timor_core.viz.shapes import geometries_mesh, goal_poses, robot_parts
from timor_core.viz.tolerance_volume import tolerance_volume

if TYPE_CHECKING:
    import viser

    from timor_core.kinematics.robot import PinRobot
    from timor_core.task import Task

__all__ = ["RobotScene", "add_task", "add_mesh", "wxyz_xyz", "ROBOT_COLOR", "OBSTACLE_COLOR", "GOAL_COLOR"]

ROBOT_COLOR = (235, 140, 30)
OBSTACLE_COLOR = (150, 150, 160)
GOAL_COLOR = (40, 170, 90)
BASE_COLOR = (60, 110, 220)


def wxyz_xyz(T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Quaternion (w, x, y, z) and translation of a 4x4 pose, as viser wants them."""

    x, y, z, w = Rotation.from_matrix(np.asarray(T)[:3, :3]).as_quat()
    return np.array([w, x, y, z]), np.asarray(T)[:3, 3].copy()


def _rgb(color: Sequence[int]) -> tuple[int, int, int]:
    """A colour as the (r, g, b) int triple viser takes (viser rejects any other length)."""
    r, g, b = (int(c) for c in color)
    return r, g, b


def add_mesh(
    server: viser.ViserServer,
    name: str,
    mesh: trimesh.Trimesh,
    color: Sequence[int],
    T: np.ndarray = IDENTITY,
    opacity: float | None = None,
):
    """Add one mesh node at pose T (relative to its parent node) and return its handle."""
    wxyz, xyz = wxyz_xyz(T)
    return server.scene.add_mesh_simple(
        name,
        np.asarray(mesh.vertices, dtype=np.float32),
        np.asarray(mesh.faces, dtype=np.uint32),
        color=_rgb(color),
        opacity=opacity,
        flat_shading=False,
        side="double" if opacity is not None else "front",
        wxyz=wxyz,
        position=xyz,
    )


class RobotScene:
    """A PinRobot in a viser scene: one frame node per joint with the robot's meshes below it.

    ``update(q)`` moves only the joint frames; ``geometry`` is ``"visual"`` or ``"collision"``.
    """

    def __init__(
        self,
        server: viser.ViserServer,
        robot: PinRobot,
        *,
        root: str = "/robot",
        geometry: str = "visual",
        color: Sequence[int] = ROBOT_COLOR,
    ) -> None:
        self.server = server
        self.robot = robot
        self.root = root.rstrip("/")
        self._color = _rgb(color)
        self._frames: dict[int, viser.FrameHandle] = {}
        self._meshes: list[viser.MeshHandle] = []
        for part in robot_parts(robot, geometry):
            if part.joint not in self._frames:
                self._frames[part.joint] = server.scene.add_frame(f"{self.root}/joint{part.joint}", show_axes=False)
            name = f"{self.root}/joint{part.joint}/{part.name}"
            self._meshes.append(add_mesh(server, name, part.mesh, self._color, part.placement))
        self.update(robot.q)

    def update(self, q) -> None:
        """Show the robot at configuration q."""
        poses = self.robot.fk(q, kind="joints").reshape(-1, 4, 4)
        with self.server.atomic():
            for joint, handle in self._frames.items():
                wxyz, xyz = wxyz_xyz(IDENTITY if joint == 0 else poses[joint - 1])
                handle.wxyz = wxyz
                handle.position = xyz

    def set_color(self, rgb: Sequence[int]) -> None:
        """Recolour every mesh of the robot (0-255 RGB)."""
        self._color = _rgb(rgb)
        for handle in self._meshes:
            handle.color = self._color

    def remove(self) -> None:
        """Remove the robot's nodes from the scene."""
        for handle in self._meshes:
            handle.remove()
        for frame in self._frames.values():
            frame.remove()
        self._meshes.clear()
        self._frames.clear()


def add_task(server: viser.ViserServer, task: Task, root: str = "/task", *, labels: bool = True) -> list:
    """Add a task's obstacles, goal frames with their tolerance volumes, and base placement; return the handles."""
    root = root.rstrip("/")
    handles = []
    for i, obstacle in enumerate(task.obstacles):
        mesh = geometries_mesh(obstacle.visual if obstacle.visual else obstacle.collision)
        if mesh is not None:
            handles.append(add_mesh(server, f"{root}/obstacles/{i}", mesh, OBSTACLE_COLOR, opacity=0.8))
    for i, (label, pose) in enumerate(goal_poses(task)):
        handles.extend(_add_pose(server, f"{root}/goals/{i}", pose, GOAL_COLOR, label if labels else None))
    base = task.base_placement
    if base is not None and base.pose is not None:
        handles.extend(_add_pose(server, f"{root}/base", base.pose, BASE_COLOR, "base" if labels else None))
    return handles


def _add_pose(server: viser.ViserServer, name: str, pose, color: Sequence[int], label: str | None) -> list:
    """A frame at a tolerated pose, its tolerance volume (translucent) and an optional label."""
    T = pose.world
    wxyz, xyz = wxyz_xyz(T)
    handles: list[viser.SceneNodeHandle] = [
        server.scene.add_frame(f"{name}/frame", axes_length=0.08, axes_radius=0.004, wxyz=wxyz, position=xyz)
    ]
    volume = tolerance_volume(pose.tolerance, T)
    if volume is not None:
        handles.append(add_mesh(server, f"{name}/tolerance", volume, color, opacity=0.35))
    if label:
        handles.append(server.scene.add_label(f"{name}/label", label, position=xyz))
    return handles
