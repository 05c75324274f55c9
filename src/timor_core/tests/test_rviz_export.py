"""What timor hands RViz without ROS: the RViz config of one launch (fixed frame, topics in the namespace, the task's
MarkerArray display), the Orbit camera's projection, a task as markers, and the ``task`` launch argument.
(The real rviz2 drawing them: src/timor_ros/test/test_real_rviz.py.)"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core import ModuleAssembly, ModulesDB
from timor_core.errors import InputError
from timor_core.export.formats.rviz_config import OrbitView, root_link, rviz_config_text, topic_in
from timor_core.ros.launch_arguments import AssemblyLaunch, MoveItLaunch
from timor_core.ros.launch_paths import task_file
from timor_core.task.task import Task
from timor_core.viz.rviz_markers import ARROW, CUBE, CYLINDER, TEXT, TRIANGLE_LIST, task_markers

TEMPLATE = (Path(__file__).resolve().parents[2] / "timor_ros" / "rviz" / "timor.rviz").read_text()


def _displays(text: str) -> dict:
    manager = yaml.safe_load(text)["Visualization Manager"]
    return {d["Class"].rsplit("/", 1)[1]: d for d in manager["Displays"]} | {"_global": manager["Global Options"]}


def test_the_config_follows_prefix_and_namespace():
    shown = _displays(rviz_config_text(TEMPLATE, fixed_frame="r1_base_link", namespace="fleet/r1", task=True))
    assert shown["_global"]["Fixed Frame"] == "r1_base_link"
    assert shown["RobotModel"]["Description Topic"]["Value"] == "/fleet/r1/robot_description"
    assert shown["MarkerArray"]["Topic"]["Value"] == "/fleet/r1/task_markers"
    assert shown["MarkerArray"]["Topic"]["Durability Policy"] == "Transient Local"  # the node publishes once
    root = _displays(rviz_config_text(TEMPLATE, fixed_frame="panda_link0"))
    assert root["RobotModel"]["Description Topic"]["Value"] == "/robot_description"
    assert "MarkerArray" not in root and root["_global"]["Fixed Frame"] == "panda_link0"
    # the view and the rest of the template are kept
    assert OrbitView.of_config(rviz_config_text(TEMPLATE, fixed_frame="x")) == OrbitView.of_config(TEMPLATE)


def test_topic_in_and_root_link():
    assert topic_in("", "robot_description") == "/robot_description"
    assert topic_in("/a/b/", "task_markers") == "/a/b/task_markers"
    robot = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), ["base", "J", "gripper"])
    assert root_link(robot.to_urdf(prefix="r1_")) == "r1_base_link"
    placed = np.eye(4)
    placed[0, 3] = 0.3
    robot = ModuleAssembly.from_serial_modules(
        ModulesDB.load("robco_like"), ["base", "J", "gripper"], base_placement=placed
    )
    assert root_link(robot.to_urdf()) == "world"
    with pytest.raises(InputError, match="single root"):
        root_link('<robot name="r"><link name="a"/><link name="b"/></robot>')
    with pytest.raises(InputError, match="not XML"):
        root_link("<robot")


def test_bad_configs_are_refused():
    with pytest.raises(InputError, match="Visualization Manager"):
        rviz_config_text("Panels: []", fixed_frame="a")
    with pytest.raises(InputError, match="Orbit"):
        OrbitView.of_config(TEMPLATE.replace("rviz_default_plugins/Orbit", "rviz_default_plugins/FPS"))


VIEW = OrbitView(2.4, 0.785, 0.45, (0.0, 0.0, 0.35))


def test_the_focal_point_is_the_centre_and_up_is_up():
    (c, r), (_, r_high) = VIEW.project([VIEW.focal, np.add(VIEW.focal, (0, 0, 0.2))], 900, 700)
    assert (c, r) == pytest.approx((450, 350))
    assert r_high < r  # higher in the world: higher on the screen
    assert np.isnan(VIEW.project(2 * VIEW.camera() - np.asarray(VIEW.focal), 900, 700)).all()  # behind the camera


@settings(max_examples=50, deadline=None)
@given(st.floats(-0.4, 0.4), st.floats(-0.4, 0.4), st.floats(0, 0.8), st.floats(0.1, 3.0))
def test_points_on_one_ray_from_the_camera_fall_on_one_pixel(x, y, z, k):
    """The projection is a pinhole: every point on a ray from the camera lands on the same pixel, and a point at
    the edge of the vertical field of view (45 degrees) on the panel's edge."""
    camera = VIEW.camera()
    p = np.array([x, y, z])
    a, b = VIEW.project([p, camera + k * (p - camera)], 640, 480)
    assert a == pytest.approx(b, abs=1e-6)
    forward = np.subtract(VIEW.focal, camera) / VIEW.distance
    right = np.cross(forward, (0, 0, 1))
    up = np.cross(right / np.linalg.norm(right), forward)
    edge = camera + forward + math.tan(math.pi / 8) * up
    assert VIEW.project(edge, 640, 480)[0][1] == pytest.approx(0.0, abs=1e-6)


def test_a_task_as_markers():
    task = Task.from_name("pick_and_place")
    markers = task_markers(task)
    obstacles = [m for m in markers if m.ns == "obstacles"]
    assert [m.type for m in obstacles] == [CUBE, CYLINDER]
    assert obstacles[0].position == pytest.approx((0.3, 0.3, 0.1)) and obstacles[0].scale == pytest.approx((0.2,) * 3)
    assert obstacles[1].scale == pytest.approx((0.1, 0.1, 0.8))
    pick = task.goal("pick").goal_pose.world  # type: ignore[attr-defined]
    arrows = [m for m in markers if m.ns == "goals" and m.type == ARROW][:3]
    for axis, arrow in enumerate(arrows):
        assert arrow.points[0] == pytest.approx(tuple(pick[:3, 3]))
        assert np.subtract(arrow.points[1], arrow.points[0]) == pytest.approx(0.1 * pick[:3, axis])
    assert [m.text for m in markers if m.type == TEXT] == ["pick", "place", "base"]
    keys = [(m.ns, m.id) for m in markers]
    assert len(keys) == len(set(keys))  # RViz replaces a marker with the same ns and id


def test_a_tolerance_box_becomes_a_triangle_list(tmp_path):
    data = Task.from_name("pick_and_place").to_json_data()
    place = next(g for g in data["goals"] if g["ID"] == "place")["goalPose"]
    place["toleranceProjection"], place["tolerance"] = ["x", "y", "z"], [[-0.05, 0.05], [-0.04, 0.04], [-0.03, 0.03]]
    path = tmp_path / "pick_and_place.json"
    path.write_text(json.dumps(data))
    box = [m for m in task_markers(Task.from_json_file(path)) if m.type == TRIANGLE_LIST]
    assert [m.id for m in box] == [3, 8]  # pick's ±1 mm box too (5 ids per goal, the volume fourth)
    box = box[1:]
    assert len(box[0].points) % 3 == 0
    corners = np.array(box[0].points)
    nominal = np.array(place["nominal"])[:3, 3]
    assert np.ptp(corners, axis=0) == pytest.approx([0.08, 0.1, 0.06])  # the goal frame's x and y are swapped
    assert corners.mean(axis=0) == pytest.approx(nominal, abs=1e-9)
    assert box[0].color[3] < 1  # translucent


def test_the_task_launch_argument(tmp_path):
    assert task_file("") == "" and AssemblyLaunch.from_arguments({}).task == ""
    embedded = task_file("pick_and_place")
    assert Path(embedded).is_file() and Path(embedded).is_absolute()
    plan = MoveItLaunch.from_arguments({"task": "pick_and_place"})
    assert plan.base.task == embedded and plan.forwarded()["task"] == embedded  # moveit.launch.py hands it on
    for bad in (str(tmp_path), str(tmp_path / "none.json"), "~nosuchuser_x/t.json", "/dev/null"):
        with pytest.raises(InputError, match="launch argument 'task'"):
            AssemblyLaunch.from_arguments({"task": bad})
    broken = tmp_path / "broken.json"
    broken.write_text('{"header": {"ID": "broken"}, "goals": [{"ID": 1}]}')
    with pytest.raises(InputError, match="launch argument 'task'") as err:
        task_file(str(broken))
    assert "goals" in str(err.value)
