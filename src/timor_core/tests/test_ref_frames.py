"""Compatibility suite (issue 13 item 12): the reference toolbox's tests/test_frames.py (timor-python 1.1.1) ported
to timor_core. Frames live in ``timor_core.kinematics.frames.FrameTree`` (named frames, each relative to a parent;
``world`` is the root); poses are 4x4 arrays, tolerance frames ``ToleranceFrame`` values."""

from __future__ import annotations

import copy
import json
import math

import numpy as np
import pinocchio as pin
import pytest
from conftest import SHARED

from timor_core.common.transforms import rot_x, rot_z, translation
from timor_core.errors import FormatError, ValidationError
from timor_core.kinematics.frames import WORLD, Frame, FrameTree
from timor_core.kinematics.pose import ToleratedPose
from timor_core.kinematics.tolerance import Composed, ProjectionTolerance
from timor_core.kinematics.tolerance_base import NOMINAL_FRAME, WORLD_FRAME, ToleranceFrame
from timor_core.task import Task

TASKS = SHARED / "data" / "cobra" / "tasks"
PI = math.pi


def _random_pose(rng) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = pin.exp3(rng.normal(size=3))
    T[:3, 3] = rng.uniform(-1, 1, 3)
    return T


@pytest.fixture
def data() -> dict:
    """Five frames in two branches below world (plain JSON data, as in a task file)."""
    rng = np.random.default_rng(0)
    parents = {"1": "world", "2": "1", "3": "2", "2a": "1", "3a": "2a"}
    return {n: {"transformation": _random_pose(rng).round(10).tolist(), "parent": p} for n, p in parents.items()}


def _ptp1(data: dict) -> dict:
    if not TASKS.is_dir():
        pytest.skip(f"real CoBRA tasks not available (expected {TASKS})")
    description = json.loads((TASKS / "simple" / "PTP_1.json").read_text())
    description["frames"] = data
    return description


def xyz(frame: ToleranceFrame = NOMINAL_FRAME) -> Composed:
    bounds = {"x": (-0.1, 0.2), "y": (-0.3, 0.4), "z": (-0.5, 0.6)}
    return Composed([ProjectionTolerance(p, iv, frame) for p, iv in bounds.items()])


def test_frame_tree_transformations(data):
    """ref: test_frames.py::test_frame_tree_transformations"""
    ft = FrameTree.from_json(data)
    assert WORLD in ft and np.array_equal(ft.in_world(WORLD), np.eye(4))
    for name, spec in data.items():
        assert name in ft
        assert ft[name].parent == spec["parent"]
        assert np.array_equal(ft[name].transform, spec["transformation"])
        assert np.allclose(ft.in_world(name), ft.in_world(spec["parent"]) @ ft[name].transform)


def test_frame_tree_add(data):
    """ref: test_frames.py::test_frame_tree_add (names already taken are refused; names with a '.' are frames of
    goals and constraints: in the tree, not in its JSON)"""
    ft = FrameTree.from_json(data)
    rng = np.random.default_rng(1)
    for name in (WORLD, *data):
        with pytest.raises(ValidationError):
            ft.add(name, _random_pose(rng), WORLD)
    ft.add("new", _random_pose(rng), WORLD)
    assert "new" in ft and "new" in ft.to_json()
    ft.add("special.new", _random_pose(rng), WORLD)
    assert "special.new" in ft and "special.new" not in ft.to_json()
    with pytest.raises(FormatError):
        ft.add("orphan", np.eye(4), "no-such-parent")


def test_matmul(data):
    """ref: test_frames.py::test_matmul. Frames are named and poses are arrays here: a pose T given in a frame is
    ``ft.in_world(name) @ T`` in the world (what ``nominalParent`` does)."""
    ft = FrameTree.from_json(data)
    rng = np.random.default_rng(2)
    for frame in ft:
        T = _random_pose(rng)
        pose = ToleratedPose(T, parent=frame.name, frames=ft)
        assert np.allclose(pose.world, ft.in_world(frame.name) @ T)


def test_eq_frame(data):
    """ref: test_frames.py::test_eq_frame (frames of two trees built from the same data are equal). Not ported:
    equality of two frames that are each other's parent, which a FrameTree cannot hold (parents are names, and
    the tree refuses cycles; see test_frame_circle)."""
    ft1, ft2 = FrameTree.from_json(data), FrameTree.from_json(data)
    for frame in ft1:
        assert frame == ft2[frame.name] and frame == frame
    moved = Frame("1", WORLD, ft1["1"].transform @ translation((0, 0, 1e-3)))
    assert moved != ft1["1"] and Frame("1", "2", ft1["1"].transform) != ft1["1"]


def test_eq_ft(data):
    """ref: test_frames.py::test_eq_ft"""
    assert FrameTree.from_json(data) == FrameTree.from_json(data)
    other = copy.deepcopy(data)
    other["3a"]["transformation"][0][3] += 1e-3
    assert FrameTree.from_json(data) != FrameTree.from_json(other)
    del other["3a"]
    assert FrameTree.from_json(data) != FrameTree.from_json(other)


def test_frame_circle():
    """ref: test_frames.py::test_frame_circle (a cycle is refused, naming a frame of it)"""
    cycle = {"1": {"parent": "2"}, "2": {"parent": "3"}, "3": {"parent": "1"}}
    with pytest.raises(ValidationError, match="cycle") as err:
        FrameTree.from_json(cycle)
    assert "$.frames." in str(err.value)


def test_special_frames(data):
    """ref: test_frames.py::test_special_frames. ``nominal`` is no frame of the tree: it has no world pose. (The
    reference's world and nominal frame objects are singletons; here they are the names ``world`` and
    ``nominal``, and the tolerance frames ``WORLD_FRAME`` and ``NOMINAL_FRAME``.)"""
    ft = FrameTree.from_json(data)
    assert "nominal" not in ft
    with pytest.raises(FormatError):
        ft.in_world("nominal")
    assert FrameTree.from_json(data)[WORLD] == ft[WORLD]


@pytest.mark.parametrize(
    "frames",
    [
        {"world": {"transformation": np.eye(4).tolist(), "parent": "some_parent"}},
        {"world": {"transformation": (translation((0, 0, 1))).tolist()}},
        {"nominal": {}},
        {"special.dot": {}},
    ],
)
def test_frame_tree_reserved_keywords(frames):
    """ref: test_frames.py::test_frame_tree_reserved_keywords (world, nominal and names with a '.' are reserved)"""
    frames = {**frames, "another": {"transformation": translation((0, 0, 1)).tolist(), "parent": "world"}}
    with pytest.raises(ValidationError, match="reserved"):
        FrameTree.from_json(frames)


def test_serialization(data):
    """ref: test_frames.py::test_serialization"""
    ft = FrameTree.from_json(data)
    again = FrameTree.from_json(json.loads(json.dumps(ft.to_json())))
    assert again == ft and again.to_json() == data


def test_frames_in_task(data):
    """ref: test_frames.py::test_frames_in_task (user frames, the base constraint's and the goals' frames)"""
    task = Task.from_json_data(_ptp1(data))
    for name in (*data, "constraint.base", *(f"goal.{g.id}" for g in task.goals)):
        assert name in task.frames
    assert task.frames.to_json() == data
    assert np.allclose(task.frames.in_world("constraint.base"), task.base_placement.pose.world)
    for goal in task.goals:
        assert np.allclose(task.frames.in_world(f"goal.{goal.id}"), goal.goal_pose.world)
    saved = task.to_json_data()
    for frame in saved["frames"].values():
        assert isinstance(frame["transformation"], list) and isinstance(frame["parent"], str)
    again = Task.from_json_data(json.loads(json.dumps(saved)))
    assert again.to_json_data() == saved and again.frames == task.frames


def test_frames_in_task_with_obstacles(data, tmp_path):
    """ref: test_frames.py::test_frames_in_task_with_obstacles (on PTP_3: the reference's PTP_2 names a mesh that
    its data set lacks, see test_ref_schemas_logging_tutorials)"""
    if not TASKS.is_dir():
        pytest.skip(f"real CoBRA tasks not available (expected {TASKS})")
    folder = TASKS  # the sample tasks name their meshes relative to the tasks folder ("assets/...")
    description = Task.from_json_file(folder / "simple" / "PTP_3.json").to_json_data()
    description["frames"] = data
    task = Task.from_json_data(description, base_dir=folder)
    assert task.obstacles and any(o.collision for o in task.obstacles)
    again = Task.from_json_data(task.to_json_data(), base_dir=folder)
    assert again.to_json_data() == task.to_json_data() and again.frames == task.frames
    reloaded = Task.from_json_file(task.to_json_file(tmp_path / "with_frames"))
    assert reloaded.frames == task.frames


def test_tolerance_frames_in_task(data):
    """ref: test_frames.py::test_tolerance_frames_in_task (each projection keeps its own frame, through JSON)"""
    description = _ptp1(data)
    description["goals"][0]["goalPose"]["toleranceFrame"] = ["nominal", "world"]
    description["goals"][1]["goalPose"]["toleranceFrame"] = ["nominal", "1"]
    task = Task.from_json_data(description)
    first, second = (task.goals_by_id[g].goal_pose.tolerance for g in ("1", "2"))
    assert first.projections == ("r_sph", "Theta_R") and first.frames == ("nominal", "world")
    assert first.parts[0].frame == NOMINAL_FRAME and first.parts[1].frame == WORLD_FRAME
    assert second.frames == ("nominal", "1")
    assert np.allclose(second.parts[1].frame.matrix(np.eye(3)), task.frames.in_world("1")[:3, :3])
    saved = task.to_json_data()
    for old, new in zip(description["goals"], saved["goals"]):
        assert new["ID"] == old["ID"]
        assert new["goalPose"]["toleranceProjection"] == old["goalPose"]["toleranceProjection"]
        assert new["goalPose"]["toleranceFrame"] == old["goalPose"]["toleranceFrame"]
    description["goals"][1]["goalPose"]["toleranceFrame"] = ["nominal", "no-such-frame"]
    with pytest.raises(FormatError, match="tolerance frame") as err:
        Task.from_json_data(description)
    assert "toleranceFrame[1]" in str(err.value)


def test_frames_with_tolerated_poses(data):
    """ref: test_frames.py::test_frames_with_tolerated_poses"""
    ft = FrameTree.from_json(data)
    rng = np.random.default_rng(4)
    in_world = ToleratedPose(_random_pose(rng))
    assert in_world.valid(in_world.world)
    in_one = ToleratedPose(_random_pose(rng), parent="1", frames=ft)
    assert in_one.valid(in_one.world) and not in_one.valid(in_one.nominal)
    assert not in_one.valid(in_world.world)
    spec = {"nominal": [[1, 0, 0, -0.5], [0, 1, 0, -1.1], [0, 0, 1, 0.5], [0, 0, 0, 1]], "nominalParent": "world"}
    third = ToleratedPose.from_json(spec, "$.pose", ft)
    assert third.valid(third.world)
    fourth = ToleratedPose.from_json(third.to_json(), "$.pose", ft, name="some_name.2")
    assert fourth.valid(third.world)
    assert "some_name.2" in ft and "some_name.2" not in ft.to_json()
    with pytest.raises(FormatError, match="nominalParent") as err:
        ToleratedPose.from_json({**spec, "nominalParent": "a-non-registered-frame"}, "$.pose", ft)
    assert "$.pose.nominalParent" in str(err.value)


def test_frames_with_tolerances():
    """ref: test_frames.py::test_frames_with_tolerances (deviations in the nominal, the world and named frames)"""
    ft = FrameTree.from_json(
        {
            "1": {"transformation": translation((1, 2, 3)).tolist(), "parent": "world"},
            "2": {"transformation": rot_x(PI / 2).tolist(), "parent": "1"},
        }
    )
    nominal, desired = xyz(), rot_x(PI / 2)  # in the desired frame: y = z_world, z = -y_world
    assert nominal.valid(desired, translation((0, 0, 0))) and nominal.valid(desired, translation((0, -0.6, 0)))
    assert not nominal.valid(desired, translation((0, 0.51, 0)))
    assert nominal.valid(desired, translation((0, 0, 0.4))) and not nominal.valid(desired, translation((0, 0, -0.31)))
    assert not nominal.valid(np.eye(4), translation((0, -0.6, 0)))  # another desired orientation

    rng = np.random.default_rng(5)
    for frame in (WORLD_FRAME, ToleranceFrame.fixed("1", ft.in_world("1"))):  # both parallel to the world
        tolerance = xyz(frame)
        for _ in range(100):
            R = _random_pose(rng)
            R[:3, 3] = 0
            assert tolerance.valid(R, translation((0, 0, 0))) and tolerance.valid(R, translation((0, 0, 0.6)))
            assert not tolerance.valid(R, translation((0, 0, -0.51)))
            assert tolerance.valid(R, translation((0, 0.4, 0))) and not tolerance.valid(R, translation((0, -0.31, 0)))
            shifted = translation((1, 2, 3)) @ R  # the translation counts, whatever the rotation
            assert tolerance.valid(shifted, translation((1, 2, 3)))
            assert tolerance.valid(shifted, translation((1, 2, 3.6)))
            assert not tolerance.valid(shifted, translation((1, 2, 3.61)))

    tolerance = xyz(ToleranceFrame.fixed("2", ft.in_world("2")))  # rotated by 90 deg about x: y = z_w, z = -y_w
    identity = np.eye(4)
    assert tolerance.valid(identity, translation((0, 0, 0))) and tolerance.valid(identity, translation((0, 0.5, 0)))
    assert not tolerance.valid(identity, translation((0, 0.51, 0)))
    assert tolerance.valid(identity, translation((0, 0, -0.3)))
    assert not tolerance.valid(identity, translation((1, 2, -0.31)))


def test_mixed_tolerance():
    """ref: test_frames.py::test_mixed_tolerance (x and y in the world, z in the nominal frame)"""
    desired = translation((-1, 2, 1)) @ rot_x(PI / 2)
    spec = {
        "nominal": desired.tolist(),
        "toleranceProjection": ["x", "y", "z"],
        "tolerance": [[-0.1, 0.2], [-0.3, 0.4], [-0.5, 0.6]],
        "toleranceFrame": ["world", "world", "nominal"],
    }
    pose = ToleratedPose.from_json(spec, "$.pose", FrameTree())
    assert pose.valid(translation((-1, 2, 1))) and pose.valid(translation((-1.1, 2, 1)))
    assert not pose.valid(translation((-1.11, 2, 1)))
    assert pose.valid(translation((-1, 2.4, 1))) and not pose.valid(translation((-1, 2.41, 1)))
    for i in range(10):  # z of the world is y of the nominal frame: not constrained
        assert pose.valid(translation((-1, 2.4, 1 + 0.1 * i)))
    assert pose.to_json()["toleranceFrame"] == ["world", "world", "nominal"]

    same = ToleratedPose.from_json(
        {**spec, "toleranceProjection": ["x", "y"], "tolerance": [[-0.1, 0.2], [-0.3, 0.4]],
         "toleranceFrame": ["world", "world"]}, "$.pose", FrameTree(),
    )  # fmt: skip
    assert set(same.tolerance.frames) == {"world"} and all(p.frame is WORLD_FRAME for p in same.tolerance.parts)


def test_axis_angle():
    """ref: test_frames.py::test_axis_angle (any rotation about the nominal z axis, then about the world's)"""
    rng = np.random.default_rng(6)

    def about_z(frame: ToleranceFrame) -> Composed:
        return Composed(
            [ProjectionTolerance(p, iv, frame) for p, iv in (("N_x", (0, 0)), ("N_y", (0, 0)), ("N_z", (-PI, PI)))]
        )

    nominal, world = about_z(NOMINAL_FRAME), about_z(WORLD_FRAME)
    for _ in range(10):
        a, b = 10 * rng.random(), 10 * rng.random()
        assert nominal.valid(np.eye(4), rot_z(a)) and not nominal.valid(np.eye(4), rot_x(b))
        T = _random_pose(rng)
        assert nominal.valid(T, T) and nominal.valid(T, T @ rot_z(a)) and not nominal.valid(T, T @ rot_x(b))
        assert world.valid(rot_z(a), np.eye(4)) and not world.valid(np.eye(4), rot_x(b))
        assert world.valid(T, T) and world.valid(T, rot_z(a) @ T) and not world.valid(T, rot_x(b) @ T)


def test_visualization(data):
    """ref: test_frames.py::test_visualization. The reference only draws the task; here the drawn goals of a task
    whose goals are given relative to a frame (``nominalParent``) must sit at their world poses."""
    pytest.importorskip("manifold3d")
    from timor_core.viz.video import task_items

    description = _ptp1(data)
    for goal in description["goals"]:
        goal["goalPose"]["nominalParent"] = "3a"
    task = Task.from_json_data(description)
    items = task_items(task)
    assert len(items) == len(task.goals) * 4 + 4  # per pose: its tolerance volume and three axes
    for i, goal in enumerate(task.goals):
        volume = items[4 * i].triangles.reshape(-1, 3)
        centre = (volume.min(axis=0) + volume.max(axis=0)) / 2
        assert np.allclose(centre, goal.goal_pose.world[:3, 3], atol=1e-3)
        assert not np.allclose(centre, goal.goal_pose.nominal[:3, 3], atol=1e-3)
