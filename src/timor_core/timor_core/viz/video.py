"""MP4 videos without a screen: frames from the offscreen renderer, encoded with imageio's bundled ffmpeg."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import trimesh

from timor_core.common.fileio import atomic_target
from timor_core.errors import InputError
from timor_core.viz import VizError, require
from timor_core.viz.render import Camera, Item, OffscreenRenderer, RobotMesher, simplified
from timor_core.viz.scene import BASE_COLOR, GOAL_COLOR, OBSTACLE_COLOR, ROBOT_COLOR
from timor_core.viz.shapes import frame_axes, geometries_mesh, goal_poses
from timor_core.viz.tolerance_volume import tolerance_volume

if TYPE_CHECKING:
    from timor_core.kinematics.robot import PinRobot
    from timor_core.kinematics.trajectory import Trajectory
    from timor_core.task import Task
    from timor_core.task.solution import Solution

__all__ = ["write_mp4", "task_items", "floor", "robot_frames", "robot_video", "solution_video", "random_motion"]


def write_mp4(frames: Iterable[np.ndarray], path: str | Path, fps: float = 20.0) -> Path:
    """Encode RGB frames (H, W, 3, uint8) as H.264 MP4, atomically (temp file beside the target, then rename)."""
    if Path(path).suffix.lower() != ".mp4":
        raise InputError("a video is written as an .mp4 file", value=str(path))
    if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not 0 < fps <= 240:
        raise InputError("fps must be a number of frames per second in (0, 240]", value=fps)
    iio = require("imageio.v2")
    require("imageio_ffmpeg")
    count = 0
    with atomic_target(path) as tmp:
        with iio.get_writer(tmp, format="FFMPEG", fps=fps, codec="libx264", macro_block_size=8, quality=7) as w:
            for frame in frames:
                w.append_data(frame)
                count += 1
        if count == 0:
            raise VizError("no frames to write")
    return Path(path)


def task_items(task: Task) -> list[Item]:
    """Render items of a task: obstacles (grey), goal tolerance volumes (green) with their frames' axes (x red,
    y green, z blue), base placement (blue)."""
    items = []
    for obstacle in task.obstacles:
        mesh = geometries_mesh(obstacle.visual if obstacle.visual else obstacle.collision)
        if mesh is not None:
            mesh = simplified(mesh)
            items.append(Item(np.asarray(mesh.vertices)[mesh.faces], OBSTACLE_COLOR, 0.8))
    poses = [(pose, GOAL_COLOR) for _, pose in goal_poses(task)]
    if task.base_placement is not None and task.base_placement.pose is not None:
        poses.append((task.base_placement.pose, BASE_COLOR))
    for pose, color in poses:
        mesh = tolerance_volume(pose.tolerance, pose.world)
        if mesh is None:  # an exact pose: a small marker
            mesh = trimesh.creation.icosphere(subdivisions=1, radius=0.015)
            mesh.apply_translation(pose.world[:3, 3])
        items.append(Item(np.asarray(mesh.vertices)[mesh.faces], color, 0.35))
        items.extend(Item(np.asarray(m.vertices)[m.faces], c, 1.0) for m, c in frame_axes(pose.world))
    return items


def floor(camera: Camera, z: float = 0.0) -> Item:
    """A light grey square on the plane z under the camera's view, for a sense of up and depth."""
    c, r = camera.center, camera.radius
    corners = np.array(
        [[c[0] - r, c[1] - r, z], [c[0] + r, c[1] - r, z], [c[0] + r, c[1] + r, z], [c[0] - r, c[1] + r, z]]
    )
    return Item(corners[[[0, 1, 2], [0, 2, 3]]], (225, 225, 230), 1.0)


def robot_frames(
    robot: PinRobot,
    qs: np.ndarray,
    *,
    task: Task | None = None,
    size: tuple[int, int] = (640, 480),
    geometry: str = "visual",
    color=ROBOT_COLOR,
) -> Iterable[np.ndarray]:
    """RGB frames of a robot at every configuration of qs (N×dof), with a task around it; one fixed camera."""
    mesher = RobotMesher(robot, geometry)
    qs = np.asarray(qs, dtype=float).reshape(len(qs), -1)
    extra = task_items(task) if task is not None else []
    sample = qs[np.linspace(0, len(qs) - 1, min(len(qs), 30)).astype(int)]
    points = [mesher.triangles(q).reshape(-1, 3) for q in sample] + [i.triangles.reshape(-1, 3) for i in extra]
    camera = Camera.fit(np.concatenate(points))
    ground = floor(camera, min(0.0, float(np.concatenate(points)[:, 2].min())) - 1e-3)
    renderer = OffscreenRenderer(*size)
    try:
        for q in qs:
            yield renderer.render([Item(mesher.triangles(q), color), *extra], camera, floor=ground)
    finally:
        renderer.close()


def _resampled(trajectory: Trajectory, fps: float) -> np.ndarray:
    """Configurations of a trajectory at ``fps`` frames per second of its duration (at least two)."""
    n = max(int(round(trajectory.duration * fps)) + 1, 2)
    times = np.linspace(0.0, trajectory.duration, n)
    return np.array([trajectory.at(t)[0] for t in times]).reshape(n, -1)


def robot_video(
    robot: PinRobot,
    trajectory: Trajectory | np.ndarray,
    path: str | Path,
    *,
    fps: float = 20.0,
    task: Task | None = None,
    size: tuple[int, int] = (640, 480),
) -> Path:
    """Write an MP4 of a robot following a Trajectory (real time) or an N×dof array of q (one per frame)."""
    if isinstance(trajectory, np.ndarray) or not hasattr(trajectory, "duration"):
        qs = np.asarray(trajectory)
    else:
        qs = _resampled(trajectory, fps)
    return write_mp4(robot_frames(robot, qs, task=task, size=size), path, fps)


def solution_video(solution: Solution, path: str | Path, *, fps: float = 20.0, size=(640, 480)) -> Path:
    """Write an MP4 of a solution: its robot following its trajectory among the task's obstacles and goals."""
    return robot_video(solution.robot, solution.trajectory, path, fps=fps, task=solution.task, size=size)


def random_motion(robot: PinRobot, seed: int = 0, tries: int = 200) -> Trajectory:
    """A collision-free motion between two random collision-free configurations, planned with RRT-Connect."""
    from timor_core.kinematics.planning import plan

    rng = np.random.default_rng(seed)
    free = []
    for _ in range(tries):
        q = robot.random_configuration(rng)
        if not robot.has_collision(q):
            free.append(q)
            if len(free) == 2:
                trajectory = plan(robot, free[0], free[1], rng=rng)
                if trajectory is not None:
                    return trajectory
                free.pop()
    raise VizError(f"found no collision-free motion of this robot in {tries} random configurations (seed {seed})")
