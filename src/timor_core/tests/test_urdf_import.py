"""Issue 13 item 7: URDF import (``PinRobot.from_urdf``, ``ModuleAssembly.from_monolithic_robot``) tested on real
robots from the ``example-robot-data`` package: Panda (with its gripper), UR5, UR5 with a gripper."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from urdf_agreement import robots_share

from timor_core import ModuleAssembly, ModulesDB, PinRobot
from timor_core.errors import FormatError, MeshError, ValidationError
from timor_core.export.urdf_import.importer import assembly_from_urdf, db_from_urdf
from timor_core.task import Task
from timor_core.task.point_to_point import solve_point_to_point
from timor_core.task.solution import Solution


def _robots_share() -> Path:
    share = robots_share()
    if share is None:
        pytest.skip("example-robot-data is not installed, or holds no panda.urdf (pip install example-robot-data)")
    return share


@pytest.fixture(scope="module")
def share() -> Path:
    return _robots_share()


ROBOTS = {
    "panda": ("robots/panda_description/urdf/panda.urdf", "panda_hand_tcp"),
    "ur5": ("robots/ur_description/urdf/ur5_robot.urdf", "tool0"),
    "ur5_gripper": ("robots/ur_description/urdf/ur5_gripper.urdf", "tool0"),
}


def _body_pose(assembly: ModuleAssembly, link: str, q: np.ndarray) -> np.ndarray:
    """The pose of a URDF link in the imported model: its link frame is the URDF's (issue 24)."""
    for tree_link in assembly.tree().links:
        if tree_link.body.id == link:
            np.testing.assert_array_equal(tree_link.body_in_link, np.eye(4))
            fid = assembly.robot.model.getFrameId(tree_link.name, pin.FrameType.BODY)
            return assembly.robot.frame_pose(fid, q)
    raise KeyError(link)


@pytest.mark.parametrize("robot_name", sorted(ROBOTS))
def test_imported_robot_equals_pinocchios_loader(share, robot_name):
    file, tool = ROBOTS[robot_name]
    urdf = share / file
    robot = PinRobot.from_urdf(urdf, share.parent)  # package://example-robot-data/... resolves below share/
    model = pin.buildModelFromUrdf(str(urdf))
    data = model.createData()
    assert robot.dof == model.nq == model.nv
    assert [n.removeprefix("m0_") for n in robot.joints] == list(model.names)[1:]  # same q order
    assert robot.mass == pytest.approx(sum(i.mass for i in model.inertias))
    assembly = robot.assembly
    assert assembly.tree().tools[0].link == next(
        k for k, link in enumerate(assembly.tree().links) if link.body.id == tool
    )
    rng = np.random.default_rng(3)
    links = [f.name for f in model.frames if f.type == pin.FrameType.BODY]
    for _ in range(5):
        q = robot.random_configuration(rng)
        pin.framesForwardKinematics(model, data, q)
        for link in links:
            np.testing.assert_allclose(_body_pose(assembly, link, q), data.oMf[model.getFrameId(link)].homogeneous,
                                       atol=1e-9)  # fmt: skip
        np.testing.assert_allclose(robot.mass_matrix(q), pin.crba(model, data, q), atol=1e-9)
        np.testing.assert_allclose(robot.static_torque(q), pin.computeGeneralizedGravity(model, data, q), atol=1e-9)
    # meshes were found and load (DAE visuals, STL collisions)
    meshes = assembly.db.meshes()
    assert meshes and all(m.path.is_file() for m in meshes)
    assert robot.collision.ngeoms > 0


def test_a_task_solved_with_an_imported_robot(share, tmp_path):
    assembly = assembly_from_urdf(share / ROBOTS["ur5"][0], [share.parent])
    robot = assembly.robot
    rng = np.random.default_rng(5)
    poses = []
    while len(poses) < 2:
        q = robot.random_configuration(rng)
        if not robot.has_self_collision(q):
            poses.append(robot.fk(q).tolist())
    tol = {"toleranceProjection": ["r_sph", "Theta_R"], "tolerance": [[0, 0.002], [0, 0.05]]}
    task = Task.from_json_data(
        {
            "header": {"ID": "ur5_task"},
            "obstacles": [],
            "goals": [{"ID": f"g{k}", "type": "at", "goalPose": {"nominal": p, **tol}} for k, p in enumerate(poses)],
            "constraints": [{"type": "joint", "parts": ["q"]}, {"type": "selfCollisionFree"}],
        }
    )
    solution = solve_point_to_point(task, assembly, rng=0)
    assert solution.valid, solution
    path = tmp_path / "solution.json"
    solution.to_json_file(path)
    data = json.loads(path.read_text())
    assert data  # a CoBRA solution; it reloads against the imported robot's module set and stays valid
    reloaded = Solution.from_json_file(path, task, assembly.db)
    assert reloaded.valid and reloaded.all_goals_achieved


def test_from_monolithic_robot(share, primitives):
    imported = PinRobot.from_urdf(share / ROBOTS["ur5"][0], share.parent)
    again = ModuleAssembly.from_monolithic_robot(imported)
    assert len(again.modules) == 1 and again.robot.dof == 6
    q = imported.random_configuration(np.random.default_rng(0))
    np.testing.assert_allclose(again.robot.fk(q), imported.fk(q), atol=1e-12)
    # a modular robot fused into one module: same kinematics and dynamics, same q order
    modular = ModuleAssembly.from_serial_modules(primitives, ["base", "J1", "l_30", "J2", "i_30", "J2", "eef"])
    modular.base_placement = pin.SE3(pin.rpy.rpyToMatrix(0, 0, 0.4), np.array([0.1, 0.2, 0.3])).homogeneous
    fused = ModuleAssembly.from_monolithic_robot(modular.robot)
    assert len(fused.modules) == 1
    q = modular.robot.random_configuration(np.random.default_rng(1))
    np.testing.assert_allclose(fused.robot.fk(q), modular.robot.fk(q), atol=1e-9)
    np.testing.assert_allclose(fused.robot.mass_matrix(q), modular.robot.mass_matrix(q), atol=1e-9)
    assert fused.robot.mass == pytest.approx(modular.robot.mass)


def test_tcp_link_and_package_map(share):
    urdf = share / ROBOTS["panda"][0]
    db = db_from_urdf(urdf, {"example-robot-data": share}, tcp_link="panda_link8", module_id="arm")
    assert [m.id for m in db] == ["arm"]
    assembly = ModuleAssembly.from_serial_modules(db, ["arm"])
    link = assembly.tree().links[assembly.tree().tools[0].link]
    assert link.body.id == "panda_link8"
    with pytest.raises(ValidationError, match="tcp_link"):
        db_from_urdf(urdf, [share.parent], tcp_link="nosuch")


@pytest.mark.invalid_urdf  # it writes a broken URDF on purpose
def test_bad_urdfs_are_typed_errors(tmp_path):
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'><link name='a'/>")
    with pytest.raises(FormatError, match="not well-formed"):
        db_from_urdf(bad)
    text = (
        "<robot name='r'><link name='a'/><link name='b'><visual><geometry><mesh filename='package://nopkg/m.stl'/>"
        "</geometry></visual></link><joint name='j' type='revolute'><parent link='a'/><child link='b'/>"
        "<limit lower='-1' upper='1' effort='1' velocity='1'/></joint></robot>"
    )
    with pytest.raises(MeshError, match="nopkg") as err:
        db_from_urdf(text)
    assert "link[@name='b']" in str(err.value)
    floating = text.replace("type='revolute'", "type='floating'").replace("package://nopkg/m.stl", "x.stl")
    with pytest.raises(ValidationError, match="floating"):
        db_from_urdf(floating.replace("<visual><geometry><mesh filename='x.stl'/></geometry></visual>", ""))
    nan = text.replace("lower='-1'", "lower='nan'").replace(
        "<visual><geometry><mesh filename='package://nopkg/m.stl'/></geometry></visual>", ""
    )
    with pytest.raises(FormatError, match="finite"):
        db_from_urdf(nan)


def test_export_then_import_round_trip(primitives, tmp_path):
    """Our URDF read back: the same robot (FK, dynamics), unlimited limits stay unlimited."""
    modular = ModuleAssembly.from_serial_modules(primitives, ["base", "J1", "l_30", "P1", "J2", "eef"])
    path = tmp_path / "bot.urdf"
    modular.to_urdf("bot", write_to=path)
    imported = PinRobot.from_urdf(path)
    q = modular.robot.random_configuration(np.random.default_rng(2))
    np.testing.assert_allclose(imported.fk(q), modular.robot.fk(q), atol=1e-9)
    np.testing.assert_allclose(imported.joint_limits, modular.robot.joint_limits)
    np.testing.assert_allclose(imported.velocity_limits, modular.robot.velocity_limits)
    assert isinstance(imported.assembly.db, ModulesDB)
