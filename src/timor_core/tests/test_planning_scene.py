"""A task's world for MoveIt's planning scene (export/formats/planning_scene.py): every obstacle kind, its pose
relative to the robot's root link, the safety margin as padding; and the MoveIt config's kinematics for arms below
6 joints."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import trimesh
import yaml

from timor_core import ModuleAssembly
from timor_core.common.transforms import from_rpy, quaternion_xyzw
from timor_core.errors import InputError
from timor_core.export.formats.moveit_config import move_group_parameters, moveit_config_data
from timor_core.export.formats.planning_scene import planning_scene, robot_links, safety_margin
from timor_core.export.formats.urdf import assembly_to_urdf
from timor_core.task import Task


def _task(tmp_path: Path, base: np.ndarray | None = None, margin: float | None = 0.02) -> Task:
    trimesh.creation.box(extents=(0.1, 0.2, 0.3)).export(tmp_path / "part.stl")
    box_pose = from_rpy(0.1, 0.2, 0.3, (0.5, 0.0, 0.1))
    constraints: list[dict] = [{"type": "collisionFree", "safetyMargin": margin}] if margin is not None else []
    if base is not None:
        constraints.append({"type": "basePlacement", "pose": {"nominal": base.tolist()}})
    data = {
        "header": {"ID": "scene"},
        "constraints": constraints,
        "obstacles": [
            {"ID": "crate", "collision": {"type": "box", "parameters": {"x": 0.2, "y": 0.3, "z": 0.4},
                                          "pose": box_pose.tolist()}},
            {"ID": "composed", "collision": [
                {"type": "cylinder", "parameters": {"r": 0.05, "z": 0.8}, "pose": np.eye(4).tolist()},
                {"type": "sphere", "parameters": {"r": 0.1}, "pose": from_rpy(0, 0, 0, (0, 0, 1)).tolist()},
                {"type": "mesh", "parameters": {"file": "part.stl", "scale": 2.0}, "pose": np.eye(4).tolist()},
            ]},
        ],
    }  # fmt: skip
    path = tmp_path / "task.json"
    path.write_text(json.dumps(data))
    return Task.from_json_file(path)


def test_every_obstacle_kind_in_moveit_terms(tmp_path):
    task = _task(tmp_path)
    scene = planning_scene(task, ["a", "b"], frame="r_base_link")
    assert scene.frame == "r_base_link" and scene.padding == {"a": 0.02, "b": 0.02}
    crate, composed = scene.objects
    assert crate.id == "crate" and [p.kind for p in crate.primitives] == ["box"] and not crate.meshes
    assert crate.primitives[0].dimensions == (0.2, 0.3, 0.4)
    assert np.allclose(crate.primitives[0].pose, from_rpy(0.1, 0.2, 0.3, (0.5, 0.0, 0.1)))
    cylinder, sphere = composed.primitives
    assert (cylinder.kind, cylinder.dimensions) == ("cylinder", (0.8, 0.05))  # MoveIt: height, then radius
    assert (sphere.kind, sphere.dimensions) == ("sphere", (0.1,))
    (mesh,) = composed.meshes
    assert np.allclose(np.ptp(mesh.vertices, axis=0), (0.2, 0.4, 0.6))  # the scale applied
    assert mesh.triangles.shape[1] == 3 and mesh.triangles.max() < len(mesh.vertices)


def test_obstacles_are_placed_relative_to_the_robot_base(tmp_path):
    base = from_rpy(0.0, 0.0, np.pi / 2, (1.0, 2.0, 0.0))
    task = _task(tmp_path, base=base)
    scene = planning_scene(task, [])  # the task's base placement
    crate_world = from_rpy(0.1, 0.2, 0.3, (0.5, 0.0, 0.1))
    assert np.allclose(base @ scene.objects[0].primitives[0].pose, crate_world)
    explicit = planning_scene(task, [], base_placement=np.eye(4))
    assert np.allclose(explicit.objects[0].primitives[0].pose, crate_world)
    with pytest.raises(InputError, match="base placement"):
        planning_scene(task, [], base_placement=np.full((4, 4), np.nan))


def test_no_margin_no_padding(tmp_path):
    task = _task(tmp_path, margin=None)
    assert safety_margin(task) == 0.0
    assert planning_scene(task, ["x"]).padding == {"x": 0.0}


def test_robot_links_of_a_generated_urdf(robco):
    assembly = ModuleAssembly.from_serial_modules(robco, ("base", "J", "L_250", "J", "gripper"))
    root, links = robot_links(assembly_to_urdf(assembly, prefix="p_"))
    assert root == "p_base_link" and "p_tool0" in links and all(n.startswith("p_") for n in links)
    with pytest.raises(InputError, match="not XML"):
        robot_links("<robot")


def test_quaternions_match_rotations():
    rng = np.random.default_rng(0)
    for _ in range(200):
        R = from_rpy(*rng.uniform(-np.pi, np.pi, 3))[:3, :3]
        x, y, z, w = quaternion_xyzw(R)
        assert w >= 0 and abs(x * x + y * y + z * z + w * w - 1) < 1e-12
        Q = np.array([
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ])  # fmt: skip
        assert np.allclose(Q, R, atol=1e-12)


@pytest.mark.parametrize(
    ("modules", "position_only"),
    [
        (("base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"), True),
        (("base", "J", "L_100", "J", "L_250", "J", "L_250", "J", "L_100", "J", "L_100", "J", "gripper"), False),
    ],
)
def test_kinematics_position_only_below_six_joints(robco, modules, position_only):
    """KDL cannot solve full 6-D poses for a 3-joint arm (no goal state could be sampled): position-only IK."""
    assembly = ModuleAssembly.from_serial_modules(robco, modules)
    data = moveit_config_data(assembly)
    kinematics = data["kinematics.yaml"]["manipulator"]
    assert kinematics.get("position_only_ik", False) is position_only
    params = move_group_parameters(data, "<robot/>", "<robot/>")
    assert params["robot_description_kinematics"]["manipulator"] == kinematics
    # move_group logs no ERROR for the octomap: a sensor list whose one entry it skips
    assert params["sensors"] == ["no_3d_sensor"] and params["no_3d_sensor"]["sensor_plugin"] == "~"
    assert yaml.safe_load(yaml.safe_dump(params)) == params
