"""The real rviz2 (../shared/ros-rviz, installed by `make ros`) started by timor's assembly.launch.py, headless on a
private Xvfb display: screenshots show the robot where timor's forward kinematics puts it, for the default launch,
a prefixed and namespaced one, a branched robot and an imported URDF; after set_assembly the new robot; a task's
obstacles, goal frames and tolerance volume (``task:=``). Skipped without the real rviz2 or without Xvfb.

What RViz must draw is computed from timor's own geometry (``rviz_tools``): the visual meshes at the joint angles the
test publishes, projected with the Orbit camera of timor.rviz, must be covered by drawn pixels in the expected
colour, and what RViz draws must lie inside them. ``TIMOR_RVIZ_SHOTS=DIR`` keeps the screenshots (docs/ has them).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import rviz_tools as rt

from timor_core import ModuleAssembly, ModulesDB
from timor_interfaces.srv import SetAssembly

MISSING = rt.rviz_missing()
pytestmark = pytest.mark.skipif(bool(MISSING), reason=MISSING)

CHAIN = ["base", "J", "L_250", "J", "L_150", "J", "gripper"]
OTHER = ["base", "J", "L_150", "J", "L_100", "J", "L_100", "gripper"]
Q = [0.6, -0.9, 0.7]  # a pose whose links stand apart on the screen


@pytest.fixture(scope="class")  # ended before the next class's launch starts
def default_rviz(ros_client, tmp_path_factory):
    run = rt.RvizLaunch(ros_client, tmp_path_factory.mktemp("rviz") / "launch.log",
                     ["db:=robco_like", f"modules:={' '.join(CHAIN)}"])  # fmt: skip
    try:
        run.wait_ready()
        yield run
    finally:
        run.close()


class TestDefaultLaunch:
    """One launch in the root namespace, no prefix."""

    def test_rviz_draws_the_robot_where_timor_fk_puts_it(self, default_rviz):
        assembly = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), CHAIN)
        m, _ = default_rviz.drawn(assembly, Q)
        default_rviz.keep("rviz_robot")
        assert m.colour > 0.85, m  # timor's URDF has no materials: RViz's default link colour
        assert not default_rviz.errors(), default_rviz.errors()

    def test_rviz_follows_set_assembly(self, default_rviz, ros_client):
        """Before: the first robot; after set_assembly: the other one, and the first one's own pixels are gone."""
        db = ModulesDB.load("robco_like")
        first, other = (ModuleAssembly.from_serial_modules(db, m) for m in (CHAIN, OTHER))
        _, panel = default_rviz.drawn(first, Q)
        before = default_rviz.last
        response = ros_client.call(
            SetAssembly, "/assembly/set_assembly", SetAssembly.Request(modules=OTHER), timeout=30
        )
        assert response.success, response.message
        m, _ = default_rviz.drawn(other, Q)
        after = default_rviz.last
        only_first = rt.silhouette(panel, rt.robot_meshes(first.robot, np.asarray(Q)))
        only_first &= ~rt.grow(rt.silhouette(panel, rt.robot_meshes(other.robot, np.asarray(Q))), 3)
        only_first = rt.shrink(only_first, 2)
        assert only_first.sum() > 200, "the two robots differ too little on the screen for this test"
        was, now = (rt.drawn(img, panel)[only_first].mean() for img in (before, after))
        assert was > 0.9 and now < 0.1, f"pixels of the first robot only: drawn {was:.2f} before, {now:.2f} after"
        default_rviz.keep("rviz_after_set_assembly")
        assert not default_rviz.errors(), default_rviz.errors()
        back = SetAssembly.Request(modules=CHAIN)  # as the class's other test expects it, in either order
        assert ros_client.call(SetAssembly, "/assembly/set_assembly", back, timeout=30).success
        default_rviz.drawn(first, Q)


def _task_file(folder: Path) -> Path:
    """The embedded pick-and-place task with a tolerance box (±5 cm, ±3 cm) at the place goal, so one is drawn."""
    from timor_core.task.task import Task

    data = Task.from_name("pick_and_place").to_json_data()
    place = next(g for g in data["goals"] if g["ID"] == "place")["goalPose"]
    place["toleranceProjection"] = ["x", "y", "z"]
    place["tolerance"] = [[-0.05, 0.05], [-0.05, 0.05], [-0.03, 0.03]]
    path = folder / "pick_and_place.json"
    path.write_text(json.dumps(data))
    return path


@pytest.fixture(scope="class")
def namespaced_rviz(ros_client, tmp_path_factory):
    folder = tmp_path_factory.mktemp("rviz_ns")
    run = rt.RvizLaunch(
        ros_client,
        folder / "launch.log",
        ["db:=robco_like", f"modules:={' '.join(CHAIN)}", f"task:={_task_file(folder)}"],
        "r2",
        "r2_",
    )
    try:
        run.wait_ready()
        yield run
    finally:
        run.close()


def _markers(panel: rt.Panel) -> np.ndarray:
    """Everything the task's markers may cover: obstacles, the tolerance box, goal frames and their labels."""
    from timor_core.task.task import Task
    from timor_core.viz.shapes import geometry_mesh

    task = Task.from_name("pick_and_place")
    out = rt.silhouette(panel, [geometry_mesh(g) for o in task.obstacles for g in o.collision])
    for goal in ("pick", "place"):
        T = task.goal(goal).goal_pose.world  # type: ignore[attr-defined]
        c, r = panel.project(T[:3, 3])[0]
        rows, cols = np.ogrid[: panel.height, : panel.width]
        out |= (np.abs(cols - c) < 60) & (rows > r - 50) & (rows < r + 40)  # arrows, tolerance box and label
    return out


def _colour_share(image: np.ndarray, panel: rt.Panel, mask: np.ndarray, test) -> float:
    """The share of the pixels in ``mask`` (shrunk by 2) whose colour passes ``test(r, g, b)``."""
    core = rt.shrink(mask, 2) & ~rt.grid_lines(panel)
    c = panel.crop(image).astype(int)
    return float(test(c[..., 0], c[..., 1], c[..., 2])[core].mean()) if core.any() else 0.0


AXES = (  # the x, y and z arrows' colours (timor_core.viz.shapes.AXIS_COLORS), shaded
    lambda r, g, b: (r > 90) & (r > 2 * g) & (r > 2 * b),
    lambda r, g, b: (g > 80) & (g > 1.5 * r) & (g > 1.5 * b),
    lambda r, g, b: (b > 100) & (b > 1.5 * r) & (b > 1.3 * g),
)


def _task_problems(image: np.ndarray, panel: rt.Panel, task, robot: np.ndarray) -> list[str]:
    """What of the task's markers is missing from the screenshot (``robot``: the robot's pixels, left out)."""
    from timor_core.viz.shapes import geometry_mesh
    from timor_core.viz.tolerance_volume import tolerance_volume

    problems = []
    obstacles = rt.silhouette(panel, [geometry_mesh(g) for o in task.obstacles for g in o.collision])
    free = rt.shrink(obstacles, 2) & ~robot
    if rt.drawn(image, panel)[free].mean() < 0.95:
        problems.append(f"obstacles drawn on {rt.drawn(image, panel)[free].mean():.2f} of their silhouette")
    grey = _colour_share(
        image, panel, obstacles & ~robot, lambda r, g, b: (np.abs(r - g) < 20) & (b >= g - 5) & (r > 60)
    )
    if grey < 0.9:
        problems.append(f"obstacle colour on {grey:.2f} of their pixels")
    place = task.goal("place").goal_pose
    box = rt.silhouette(panel, [tolerance_volume(place.tolerance, place.world)]) & ~robot & ~obstacles
    green = _colour_share(image, panel, box, lambda r, g, b: (g > r + 8) & (g > b + 3))  # shaded: dim
    if green < 0.8:
        problems.append(f"the tolerance box is green on {green:.2f} of its pixels")
    crop = panel.crop(image).astype(int)
    for goal in ("pick", "place"):
        T = task.goal(goal).goal_pose.world
        for axis, test in enumerate(AXES):  # the arrow from the tolerance box (±5 cm) to its tip (10 cm)
            ends = panel.project([T[:3, 3] + 0.05 * T[:3, axis], T[:3, 3] + 0.1 * T[:3, axis]])
            band = rt.draw_mask((panel.width, panel.height), [], [ends], width=7)
            if test(crop[..., 0], crop[..., 1], crop[..., 2])[band].sum() < 4:
                problems.append(f"{goal}: no {'xyz'[axis]} arrow")
    return problems


class TestNamespacedLaunchWithTask:
    """One launch with namespace:=r2 prefix:=r2_ task:=FILE."""

    def test_rviz_namespaced_and_prefixed_launch_draws_the_robot(self, namespaced_rviz):
        """namespace:=r2 prefix:=r2_: the fixed frame is r2_base_link, the description comes from
        /r2/robot_description."""
        assembly = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), CHAIN)
        namespaced_rviz.drawn(assembly, Q, ignore=_markers)
        config = namespaced_rviz.config()["Visualization Manager"]
        assert config["Global Options"]["Fixed Frame"] == "r2_base_link"
        topics = {
            d["Name"]: (d.get("Topic") or d.get("Description Topic") or {}).get("Value") for d in config["Displays"]
        }
        assert topics["RobotModel"] == "/r2/robot_description" and topics["Task"] == "/r2/task_markers", topics
        assert not namespaced_rviz.errors(), namespaced_rviz.errors()

    def test_rviz_shows_the_task_markers(self, namespaced_rviz):
        """task:=FILE: the obstacles (a grey box and cylinder) where the task puts them, each goal frame's x, y and z
        arrows (red, green, blue) at its pose, the place goal's tolerance box (translucent green); in the prefixed
        frame of the namespaced launch."""
        from timor_core.task.task import Task

        assembly = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), CHAIN)
        task = Task.from_json_file(_task_file(Path(namespaced_rviz.launch.log).parent))
        _, panel = namespaced_rviz.drawn(assembly, Q, ignore=_markers)
        robot = rt.grow(rt.silhouette(panel, rt.robot_meshes(assembly.robot, np.asarray(Q))), 2)
        problems = ["no screenshot"]
        end = time.monotonic() + 30  # the node publishes once it has built the tolerance volumes
        while problems and time.monotonic() < end:
            namespaced_rviz.last = namespaced_rviz.xvfb.shot()
            problems = _task_problems(namespaced_rviz.last, panel, task, robot)
            time.sleep(0.25 if problems else 0)
        namespaced_rviz.keep("rviz_task" if not problems else "failed_task")
        assert not problems, problems
        assert not namespaced_rviz.errors(), namespaced_rviz.errors()


def _branched_db(folder: Path) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "timor_core" / "tests"))
    from branched_set import branched_json

    path = folder / "branched.json"
    path.write_text(json.dumps(branched_json()))
    return path


@pytest.mark.slow  # 8-17 s here: a launch of its own
def test_rviz_draws_a_branched_robot(ros_client, tmp_path):
    """A base with three arms (set_assembly with an assembly JSON; srdf:=false: an SRDF needs a chain), in a
    namespace and with a prefix of its own (other launches of this module may be alive)."""
    db_path = _branched_db(tmp_path)
    run = rt.RvizLaunch(ros_client, tmp_path / "launch.log",
                     [f"db:={db_path}", "modules:=base J1 l_30 J2 eef", "srdf:=false"], "b", "b_")  # fmt: skip
    try:
        run.wait_ready()
        db = ModulesDB.from_json_file(db_path)
        chain = ModuleAssembly.from_serial_modules(db, ["base", "J1", "l_30", "J2", "eef"])
        run.drawn(chain, [0.3, 0.6])
        tree = ModuleAssembly(db, ["base3"])
        for k in range(3):
            tree.add("J1", (0, f"out_{k}"))
        request = SetAssembly.Request(assembly_json=json.dumps(tree.to_json_data()))
        response = ros_client.call(SetAssembly, "/b/assembly/set_assembly", request, timeout=30)
        assert response.success, response.message
        run.drawn(tree, [0.5, -0.5, 1.0])
        run.keep("rviz_branched")
        assert not run.errors(), run.errors()
    finally:
        run.close()


@pytest.mark.slow  # 17-34 s here: a launch of its own; RViz draws the Panda's 135,000 triangles at ~3 frames/s
def test_rviz_draws_an_imported_urdf_robot(ros_client, tmp_path):
    """`timor import` of example-robot-data's Panda (keep its names: with prefix:=p_ the root link is
    p_panda_link0, RViz's fixed frame) and its meshes: RViz loads them from the module set's folder (file:// URIs)
    and draws them in their own colours where timor's FK puts them."""
    from importlib import metadata

    try:
        files = metadata.files("example-robot-data") or []
    except metadata.PackageNotFoundError:
        pytest.skip("example-robot-data is not installed")
    panda = next((Path(f.locate()) for f in files if str(f).endswith("panda_description/urdf/panda.urdf")), None)
    if panda is None:
        pytest.skip("example-robot-data has no panda.urdf")
    out = tmp_path / "panda" / "modules.json"
    cli = [
        sys.executable,
        "-m",
        "timor_core.cli",
        "import",
        str(panda),
        "-o",
        str(out),
        "--keep-names",
        "--package-dir",
        str(panda.parents[4]),
    ]  # the share folder holding example-robot-data
    done = subprocess.run(cli, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    db = ModulesDB.from_json_file(out)
    ids = [m.id for m in db]
    run = rt.RvizLaunch(ros_client, tmp_path / "launch.log", [f"db:={out}", f"modules:={' '.join(ids)}"], "p", "p_")
    try:
        run.wait_ready()
        assembly = ModuleAssembly.from_serial_modules(db, ids)
        q = np.zeros(assembly.robot.dof)
        q[:4] = [0.4, -0.3, 0.2, -1.8]
        run.drawn(assembly, q, colour=False)
        run.keep("rviz_imported")
        assert not run.errors(), run.errors()
    finally:
        run.close()
