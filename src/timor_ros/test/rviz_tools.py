"""The real rviz2 in tests and benchmarks: a private headless X server (Xvfb), screenshots of it (Pillow's X11 grab),
the render panel found in a screenshot, and what RViz should draw there computed from timor's own geometry.

RViz's camera is the Orbit view of timor's rviz/timor.rviz (``OrbitView.project``): timor's visual meshes at the
robot's forward kinematics, projected with it, give the silhouette the robot must have on the screen; the grid's
lines, projected the same way, are left out of what counts as drawn. timor's URDFs carry no materials, so RViz
draws every link in its default colour (rviz_default_plugins' RobotLink: ``RVIZ/ShadedRed``): red.
"""

from __future__ import annotations

import functools
import os
import select
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml
from ros2_cli import REPO, TOKEN_VAR, Launch, marked_processes, real_package, require_ros2
from ros_helpers import wait_for
from tf_tools import JointStates

from timor_core import ModuleAssembly
from timor_core.export.formats.rviz_config import OrbitView

CONFIG = REPO / "src" / "timor_ros" / "rviz" / "timor.rviz"
KIT = Path(os.environ.get("ROS_RVIZ_KIT", REPO.parent / "shared" / "ros-rviz"))
SHOTS = os.environ.get("TIMOR_RVIZ_SHOTS", "")  # a folder: RvizLaunch.keep saves its screenshots there


@functools.lru_cache(maxsize=1)
def _config() -> dict:
    return yaml.safe_load(CONFIG.read_text())


@functools.lru_cache(maxsize=1)
def background() -> np.ndarray:
    """The render panel's background colour of timor.rviz (RGB)."""
    text = _config()["Visualization Manager"]["Global Options"]["Background Color"]
    return np.array([int(v) for v in str(text).split(";")])


@functools.lru_cache(maxsize=1)
def view() -> OrbitView:
    return OrbitView.of_config(CONFIG.read_text())


def rviz_missing() -> str:
    """Why the RViz tests cannot run here ('' if they can)."""
    if not real_package("rviz2"):
        return f"the real rviz2 is not installed (make ros installs it from the ros-rviz kit, {KIT})"
    if shutil.which("Xvfb") is None:
        return "no Xvfb (apt-get install xvfb): rviz2 needs an X display"
    try:
        from PIL import features
    except ImportError:
        return "Pillow is not installed (screenshots)"
    if not features.check("xcb"):
        return "this Pillow has no X11 (xcb) support for screenshots"
    return ""


class Xvfb:
    """A headless X server on a display it picks itself (``-displayfd``: the first free one, taken under the X
    server's own lock, so parallel test workers and other users never race for one), ended by its PID (never by
    name)."""

    def __init__(self, size: tuple[int, int] = (1280, 800), timeout: float = 30.0) -> None:
        read_fd, write_fd = os.pipe()
        try:
            self.proc = subprocess.Popen(
                ["Xvfb", "-displayfd", str(write_fd), "-screen", "0", f"{size[0]}x{size[1]}x24", "-nolisten", "tcp"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True, pass_fds=(write_fd,),
            )  # fmt: skip
        finally:
            os.close(write_fd)
        with os.fdopen(read_fd) as answer:  # the server writes its display number once it listens on it
            ready, _, _ = select.select([answer], [], [], timeout)
            number = answer.readline().strip() if ready else ""
        if not number.isdigit():
            self.stop()
            raise RuntimeError(f"Xvfb did not start (no display number within {timeout:g} s)")
        self.display = f":{number}"

    def env(self) -> dict[str, str]:
        """What rviz2 needs to draw on this display with Mesa's software OpenGL (llvmpipe)."""
        return {"DISPLAY": self.display, "LIBGL_ALWAYS_SOFTWARE": "1"}

    def shot(self) -> np.ndarray:
        """A screenshot of the whole display, (rows, columns, RGB) uint8."""
        from PIL import ImageGrab

        return np.asarray(ImageGrab.grab(xdisplay=self.display).convert("RGB"))

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def save(image: np.ndarray, path: Path) -> Path:
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(image).save(path)
    return path


@dataclass(frozen=True)
class Panel:
    """The render panel of RViz in a screenshot: its top-left pixel and size."""

    left: int
    top: int
    width: int
    height: int

    @classmethod
    def find(cls, image: np.ndarray) -> Panel | None:
        """The bounding box of the pixels of exactly the background colour (None if too few: RViz not drawn)."""
        rows, cols = np.nonzero(np.all(image == background(), axis=2))
        if len(rows) < 100_000:
            return None
        return cls(int(cols.min()), int(rows.min()), int(cols.max() - cols.min() + 1), int(rows.max() - rows.min() + 1))

    def crop(self, image: np.ndarray) -> np.ndarray:
        return image[self.top : self.top + self.height, self.left : self.left + self.width]

    def project(self, points) -> np.ndarray:
        """Pixel coordinates (column, row) in the panel of points in RViz's fixed frame."""
        return view().project(points, self.width, self.height)


def draw_mask(size: tuple[int, int], polygons, lines=(), width: int = 1) -> np.ndarray:
    from PIL import Image, ImageDraw

    image = Image.new("1", size, 0)
    draw = ImageDraw.Draw(image)
    for polygon in polygons:
        if np.all(np.isfinite(polygon)):
            draw.polygon([tuple(p) for p in polygon], fill=1, outline=1)
    for a, b in lines:
        draw.line([tuple(a), tuple(b)], fill=1, width=width)
    return np.array(image, dtype=bool)


def silhouette(panel: Panel, meshes) -> np.ndarray:
    """Where triangle meshes (trimesh, in the fixed frame) cover the panel: (rows, columns) bool."""
    polygons = []
    for mesh in meshes:
        pixels = panel.project(np.asarray(mesh.vertices))
        polygons.extend(pixels[np.asarray(mesh.faces)])
    return draw_mask((panel.width, panel.height), polygons)


def robot_meshes(robot, q, T_root=None) -> list:
    """The visual meshes of a PinRobot at q in its world (``T_root``: the world's pose in the fixed frame)."""
    from timor_core.viz.shapes import joint_poses, posed, robot_parts

    poses = joint_poses(robot, q)
    T = np.eye(4) if T_root is None else np.asarray(T_root)
    return [posed(part.mesh, T @ poses[part.joint] @ part.placement) for part in robot_parts(robot, "visual")]


@functools.lru_cache(maxsize=8)
def grid_lines(panel: Panel) -> np.ndarray:
    """Where timor.rviz's grid lines are drawn (5 pixels wide, to allow for rounding)."""
    grid = next(d for d in _config()["Visualization Manager"]["Displays"] if d["Class"].endswith("/Grid"))
    size, count = float(grid["Cell Size"]), int(grid["Plane Cell Count"])
    half = size * count / 2
    ticks = np.linspace(-half, half, count + 1)
    ends = [((t, -half, 0), (t, half, 0)) for t in ticks] + [((-half, t, 0), (half, t, 0)) for t in ticks]
    lines = [panel.project(np.array(e)) for e in ends]
    return draw_mask((panel.width, panel.height), [], lines, width=5)


def drawn(image: np.ndarray, panel: Panel) -> np.ndarray:
    """Pixels of the panel where RViz drew something other than its background (grid lines included)."""
    crop = panel.crop(image).astype(int)
    return np.abs(crop - background()).sum(axis=2) > 24


def red(image: np.ndarray, panel: Panel) -> np.ndarray:
    """Pixels of RViz's default link colour (red, shaded by its lights)."""
    c = panel.crop(image).astype(int)
    r, g, b = c[..., 0], c[..., 1], c[..., 2]
    return (r > 50) & (r > 2 * g) & (r > 2 * b)


def status_errors(image: np.ndarray, panel: Panel) -> int:
    """Red pixels among the display names of RViz's Displays panel (left of the render panel): a display whose
    status is an error (a missing frame or transform, an unreadable description) is listed in red."""
    names = image[panel.top + 20 : panel.top + 260, 40 : panel.left // 2].astype(int)
    return int(((names[..., 0] > 150) & (names[..., 1] < 90) & (names[..., 2] < 90)).sum())


def shrink(mask: np.ndarray, pixels: int) -> np.ndarray:
    from scipy.ndimage import binary_erosion

    return binary_erosion(mask, iterations=pixels) if pixels else mask


def grow(mask: np.ndarray, pixels: int) -> np.ndarray:
    from scipy.ndimage import binary_dilation

    return binary_dilation(mask, iterations=pixels) if pixels else mask


@dataclass(frozen=True)
class Match:
    """How a screenshot agrees with an expected silhouette: ``covered``, the share of the silhouette (2 pixels in
    from its edge) that is drawn; ``inside``, the share of what is drawn that lies in it (3 pixels out from its
    edge); ``colour``, the share of the silhouette's drawn pixels in the expected colour."""

    covered: float
    inside: float
    colour: float
    pixels: int

    def good(self, covered: float = 0.9, inside: float = 0.9, colour: float = 0.0) -> bool:
        return self.pixels > 200 and self.covered >= covered and self.inside >= inside and self.colour >= colour


def match(image: np.ndarray, panel: Panel, expected: np.ndarray, colour: np.ndarray | None = None,
          ignore: np.ndarray | None = None) -> Match:  # fmt: skip
    """Compare what RViz drew in ``panel`` with the ``expected`` silhouette (``ignore``: other drawn things)."""
    grid = grid_lines(panel)  # neither counted as drawn nor as missing where it crosses the silhouette
    seen = drawn(image, panel) & ~grid
    core = shrink(expected, 2) & ~grid
    if ignore is not None:  # neither counted as drawn nor as missing, either
        seen &= ~grow(ignore, 3)
        core &= ~grow(ignore, 3)
    covered = float(seen[core].mean()) if core.any() else 0.0
    inside = float(grow(expected, 3)[seen].mean()) if seen.any() else 0.0
    hit = seen & expected
    share = float(colour[hit].mean()) if colour is not None and hit.any() else 1.0
    return Match(covered, inside, share, int(expected.sum()))


def _ns_name(ns: str, name: str) -> str:
    return f"/{ns}/{name}" if ns else f"/{name}"


class RvizLaunch:
    """assembly.launch.py with rviz:=true on an Xvfb display; the test publishes the joint states."""

    def __init__(self, ros_client, log: Path, args: list[str], ns: str = "", prefix: str = "") -> None:
        require_ros2()
        xvfb = Xvfb()  # a display of its own: two launches alive at once (random test order) draw apart
        self.xvfb, self.client, self.ns, self.prefix = xvfb, ros_client, ns, prefix
        argv = ["timor_ros", "assembly.launch.py", "rviz:=true", "search:=false", "joint_state_publisher:=false",
                *args, *([f"prefix:={prefix}"] if prefix else []), *([f"namespace:={ns}"] if ns else [])]  # fmt: skip
        saved = {k: os.environ.get(k) for k in xvfb.env()}
        os.environ.update(xvfb.env())  # inherited by the launch and rviz2
        try:
            self.launch = Launch(argv, log)
        except BaseException:
            xvfb.stop()
            raise
        finally:
            for k, v in saved.items():
                os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
        self.js = JointStates(ros_client.node, _ns_name(ns, "joint_states"))
        self.last: np.ndarray | None = None

    def wait_ready(self) -> None:
        from timor_interfaces.srv import GetAssembly

        service = _ns_name(self.ns, "assembly/get_assembly")

        def ready():
            return self.client.call(GetAssembly, service, GetAssembly.Request(), timeout=30).available

        assert wait_for(ready, 60, 0.5), self.launch.output()

    def drawn(self, assembly: ModuleAssembly, q, timeout: float = 60.0, ignore=None, colour: bool = True
              ) -> tuple[Match, Panel]:  # fmt: skip
        """Poll screenshots (publishing q) until RViz draws ``assembly`` at q; the last match either way."""
        robot = assembly.robot
        names = [self.prefix + n for n in list(robot.model.names)[1:]]
        meshes = robot_meshes(robot, np.asarray(q, dtype=float))
        expected, found, m = None, None, Match(0, 0, 0, 0)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            self.js.publish(names, q)
            self.last = image = self.xvfb.shot()
            panel = Panel.find(image)
            if panel is not None:
                if panel != found:
                    found, expected = panel, silhouette(panel, meshes)
                ignored = ignore(panel) if ignore else None
                m = match(image, panel, expected, red(image, panel) if colour else None, ignored)
                if m.good(colour=0.85 if colour else 0.0):
                    return m, panel
            time.sleep(0.25)
        self.keep("failed")
        raise AssertionError(f"RViz did not draw {assembly.module_ids} at q={q} within {timeout} s: "
                             f"{m}\n{self.launch.output()[-3000:]}")  # fmt: skip

    def keep(self, name: str) -> None:
        """Save the last screenshot as NAME.png in $TIMOR_RVIZ_SHOTS (if set)."""
        if SHOTS and self.last is not None:
            save(self.last, Path(SHOTS) / f"{name}.png")

    def config(self) -> dict:
        """The RViz config the launch gave rviz2 (``-d FILE`` of its command line)."""
        for _, cmdline in marked_processes(TOKEN_VAR, self.launch.token):
            words = cmdline.split()
            if "-d" in words and any(w.endswith("rviz2") for w in words):
                return yaml.safe_load(Path(words[words.index("-d") + 1]).read_text())
        raise AssertionError("no rviz2 process with -d CONFIG")

    def errors(self, settle: float = 30.0) -> list[str]:
        """rviz2's error lines (frames, description, displays), and a display listed in red (its status an error)
        that stays red: screenshots are taken until none is, for up to ``settle`` seconds. (At load 25 a display
        was still listed red in the screenshot that showed the robot drawn, once; the cause was not caught.)"""
        out = [line for line in self.launch.output().splitlines() if "[rviz2" in line and "ERROR" in line]
        panel = Panel.find(self.last) if self.last is not None else None
        red = status_errors(self.last, panel) if panel is not None else 0
        end = time.monotonic() + settle
        while red and time.monotonic() < end:
            time.sleep(0.25)
            self.last = self.xvfb.shot()
            panel = Panel.find(self.last)
            red = status_errors(self.last, panel) if panel is not None else red
        if red:
            self.keep("failed_status")
            out.append(f"a display's status is an error (red in the Displays panel: {red} px, {settle:g} s)")
        return out

    def close(self) -> None:
        self.js.close()
        self.launch.stop()
        left = self.launch.kill_leftovers()
        self.xvfb.stop()
        assert not left, f"processes left behind: {left}"
