"""The browser viewer: a headless viser server with robots, tasks, solutions and animations.

``with Viewer(port=8080) as v: v.add_robot(robot); v.wait()`` serves http://127.0.0.1:8080 until Ctrl-C.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from timor_core.viz import VizError, require
from timor_core.viz.scene import RobotScene, add_task

if TYPE_CHECKING:
    from timor_core.kinematics.robot import PinRobot
    from timor_core.kinematics.trajectory import Trajectory
    from timor_core.task import Task
    from timor_core.task.solution import Solution

__all__ = ["Viewer", "PortInUseError", "animation", "show_robot", "show_task", "show_solution", "DEFAULT_PORT"]

DEFAULT_PORT = 8080
SKY, GROUND = (255, 255, 255), (90, 90, 100)


def _light(server) -> None:
    """Light the scene by viser's default directional lights and a hemisphere light, without its HDRI environment map.

    Why: a browser without a GPU (software WebGL, as in VMs, remote desktops and headless chromium) prefilters that
    map for seconds before it shades the first frame: in headless chromium here 6-7 CPU-s and 5-15 s until the robot
    showed shaded; with the hemisphere light 0.5-1 s, and the robot's colour and shading look the same.
    """
    server.scene.configure_environment_map(hdri=None)
    server.scene.add_light_hemisphere("/lights/hemisphere", sky_color=SKY, ground_color=GROUND, intensity=2.0)


class PortInUseError(VizError):
    """The viewer's port is taken by another program (or another viewer)."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        super().__init__(f"port {port} on {host} is already in use: close the other program or pass another --port")


class Viewer:
    """A viser server on ``host:port`` (headless: open its URL in any browser); ``port=0`` picks a free one."""

    def __init__(self, port: int = DEFAULT_PORT, host: str = "127.0.0.1", *, grid: bool = True) -> None:
        viser = require("viser")
        server = viser.ViserServer(host=host, port=port, verbose=False)
        if port and server.get_port() != port:  # viser silently moves on to the next free port: refuse that
            server.stop()
            raise PortInUseError(host, port)
        self.server = server
        self.host = host
        self.port = server.get_port()
        self.robots: list[RobotScene] = []
        self._stop = threading.Event()
        self._players: list[threading.Thread] = []
        server.scene.set_up_direction("+z")
        _light(server)
        if grid:
            server.scene.add_grid("/grid", width=4.0, height=4.0, cell_size=0.1, section_size=0.5)

    @property
    def url(self) -> str:
        """The address to open in a browser."""
        return f"http://{self.host}:{self.port}"

    def add_robot(self, robot: PinRobot, q=None, *, root: str | None = None, **kwargs) -> RobotScene:
        """Show a robot at q (default: its current configuration); returns its RobotScene."""
        scene = RobotScene(self.server, robot, root=root or f"/robot{len(self.robots)}", **kwargs)
        if q is not None:
            scene.update(q)
        self.robots.append(scene)
        return scene

    def add_task(self, task: Task, root: str = "/task") -> list:
        """Show a task's obstacles, goals with tolerance volumes and base placement."""
        return add_task(self.server, task, root)

    def play(self, scene: RobotScene, q: np.ndarray, dt: float, loop: bool = True) -> None:
        """Play configurations q (N×dof) every dt seconds in a background thread, with a time slider."""
        q = np.asarray(q, dtype=float).reshape(len(q), -1)
        gui = self.server.gui
        slider = gui.add_slider("time / s", min=0.0, max=max(dt * (len(q) - 1), dt), step=dt, initial_value=0.0)
        playing = gui.add_checkbox("play", initial_value=True)
        slider.on_update(lambda _: scene.update(q[min(int(round(slider.value / dt)), len(q) - 1)]))

        def run() -> None:
            i = 0
            while not self._stop.wait(dt):
                if not playing.value:
                    continue
                i = i + 1 if i + 1 < len(q) else (0 if loop else i)
                slider.value = i * dt
                scene.update(q[i])

        player = threading.Thread(target=run, name="timor-viewer-player", daemon=True)
        player.start()
        self._players.append(player)

    def wait(self, timeout: float | None = None, on_ready: Callable[[], None] | None = None) -> None:
        """Serve until Ctrl-C (or ``timeout`` seconds), then close.

        In the main thread Ctrl-C is caught by a handler installed *before* ``on_ready`` runs (e.g. printing the
        address), so a Ctrl-C that arrives right after the announcement still ends the wait cleanly.
        """
        interrupted = threading.Event()
        previous = None
        if threading.current_thread() is threading.main_thread():
            previous = signal.signal(signal.SIGINT, lambda *_: interrupted.set())
        end = None if timeout is None else time.monotonic() + timeout
        try:
            if on_ready is not None:
                on_ready()
            while not interrupted.is_set() and (end is None or time.monotonic() < end):
                interrupted.wait(0.1)
        except KeyboardInterrupt:  # outside the main thread, or a handler of the caller's own
            pass
        finally:
            if previous is not None:
                signal.signal(signal.SIGINT, previous)
            self.close()

    def close(self) -> None:
        """Stop the server and its players; frees the port (safe to call twice)."""
        if self._stop.is_set():
            return
        self._stop.set()
        for player in self._players:
            player.join(timeout=2.0)
        self.server.stop()

    def __enter__(self) -> Viewer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def show_robot(robot: PinRobot, q=None, viewer: Viewer | None = None, **kwargs) -> Viewer:
    """Show a robot at q in a (new) viewer and return the viewer."""
    viewer = viewer or Viewer(**kwargs)
    viewer.add_robot(robot, q)
    return viewer


def show_task(task: Task, viewer: Viewer | None = None, **kwargs) -> Viewer:
    """Show a task in a (new) viewer and return the viewer."""
    viewer = viewer or Viewer(**kwargs)
    viewer.add_task(task)
    return viewer


def show_solution(solution: Solution, viewer: Viewer | None = None, **kwargs) -> Viewer:
    """Show a solution's task and its robot playing the trajectory; returns the viewer."""
    viewer = viewer or Viewer(**kwargs)
    viewer.add_task(solution.task)
    traj = solution.trajectory
    dt = float(np.median(np.diff(traj.t))) if len(traj) > 1 else solution.task.header.time_step
    viewer.play(viewer.add_robot(solution.robot, traj.q[0]), traj.q, dt)
    return viewer


def animation(robot: PinRobot, trajectory: Trajectory | np.ndarray, dt: float | None = None, **kwargs) -> Viewer:
    """Play a trajectory (or an N×dof array of q, one every ``dt`` seconds) in a viewer, as in the Timor paper.

    Returns the viewer at once (playback runs in the background); ``viewer.wait()`` blocks until Ctrl-C.
    """
    q = getattr(trajectory, "q", trajectory)
    if dt is None:
        t = getattr(trajectory, "t", None)
        dt = float(np.median(np.diff(t))) if t is not None and len(t) > 1 else 0.05
    if dt <= 0:
        raise VizError(f"dt must be positive, got {dt}")
    viewer = kwargs.pop("viewer", None) or Viewer(**kwargs)
    q = np.asarray(q)
    viewer.play(viewer.add_robot(robot, q[0]), q, dt)
    return viewer
