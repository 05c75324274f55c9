"""URDF export options and the PinRobot API (kinematics, dynamics, collisions)."""

from __future__ import annotations

import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
from urdf_parser_py.urdf import URDF

from timor_core import ModuleAssembly
from timor_core.errors import InputError

PAPER_IDS = ("base", "J2", "i_45", "J2", "J2", "eef")
IMPROV_6DOF = ("1", "21", "4", "21", "5", "23", "12")


def test_urdf_structure_and_parsers(primitives):
    A = ModuleAssembly.from_serial_modules(primitives, ("base", "J1", "l_30", "J2", "P1", "i_15", "eef"))
    text = A.to_urdf("my_robot")
    robot = URDF.from_xml_string(text)
    assert robot.name == "my_robot"
    assert robot.get_root() == "base_link"
    names = [link.name for link in robot.links]
    assert "tool0" in names
    types = {j.name: j.type for j in robot.joints}
    assert types["m1_J1_joint"] == "revolute" and types["m4_P1_joint"] == "prismatic"
    assert types["m1_to_m2"] == "fixed" and types["m0_to_m1"] == "fixed"
    j = next(j for j in robot.joints if j.name == "m4_P1_joint")
    assert (j.limit.lower, j.limit.upper) == (0.0, pytest.approx(0.3))
    assert robot.get_chain("base_link", "tool0", links=False)[-1].endswith("to_tool0")
    # composed geometry = several elements on one link
    l30 = next(link for link in robot.links if link.name == "m2_l_30_body")
    assert len(l30.collisions) == 2 and len(l30.visuals) == 2
    model = pin.buildModelFromXML(text)
    assert model.nq == 3


def test_urdf_prefix_and_name_validity(primitives):
    import re

    A = ModuleAssembly.from_serial_modules(primitives, PAPER_IDS)
    root = ET.fromstring(A.to_urdf(prefix="left_"))
    names = [e.get("name") for e in root if e.tag in ("link", "joint")]
    assert all(n.startswith("left_") for n in names)
    assert "left_base_link" in names and "left_tool0" in names
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", n) for n in names)
    robot = A.to_pin_robot(prefix="left_")
    assert robot.tcp_name == "left_tool0"
    assert robot.joints[0].startswith("left_")


def test_urdf_default_name_is_deterministic(primitives):
    a = ModuleAssembly.from_serial_modules(primitives, PAPER_IDS).to_urdf()
    b = ModuleAssembly.from_serial_modules(primitives, PAPER_IDS).to_urdf()
    c = ModuleAssembly.from_serial_modules(primitives, ("base", "J2", "i_30", "J2", "J2", "eef")).to_urdf()
    assert a == b and ET.fromstring(a).get("name") != ET.fromstring(c).get("name")


def test_improv_mesh_uris(improv, tmp_path):
    A = ModuleAssembly.from_serial_modules(improv, IMPROV_6DOF)
    file_urdf = A.to_urdf(mesh_uri="file")
    meshes = [m.get("filename") for m in ET.fromstring(file_urdf).iter("mesh")]
    assert meshes and all(m.startswith("file:///") for m in meshes)
    assert all(pin_path.endswith(".stl") for pin_path in meshes)  # wrl collision written as visual STL
    from pathlib import Path

    assert all(Path(m[len("file://") :]).is_file() for m in meshes)
    pkg = A.to_urdf(mesh_uri="package", package="improv_description")
    assert all(
        m.get("filename").startswith("package://improv_description/STLfiles/") for m in ET.fromstring(pkg).iter("mesh")
    )
    keep = A.to_urdf(wrl="keep")
    assert any(m.get("filename").endswith(".wrl") for m in ET.fromstring(keep).iter("mesh"))
    with pytest.raises(InputError):
        A.to_urdf(mesh_uri="ftp")
    # the file URIs load in Pinocchio's URDF geometry parser
    path = A.to_urdf(write_to=tmp_path / "r.urdf") and tmp_path / "r.urdf"
    model = pin.buildModelFromUrdf(str(path))
    geom = pin.buildGeomFromUrdf(model, str(path), pin.GeometryType.COLLISION, package_dirs=[])
    assert geom.ngeoms > 0
    assert URDF.from_xml_file(str(path)).get_root() == "base_link"


def test_assembly_export_methods_match_the_module_functions(primitives, tmp_path):
    from timor_core.export.formats.ros2_control import Ros2ControlConfig
    from timor_core.export.formats.srdf import assembly_to_srdf
    from timor_core.export.formats.urdf import assembly_to_urdf
    from timor_core.export.formats.xacro import assembly_to_xacro

    A = ModuleAssembly.from_serial_modules(primitives, PAPER_IDS)
    control = Ros2ControlConfig(plugin="my_vendor/Hardware")
    urdf = A.to_urdf(prefix="r_", ros2_control=control, write_to=tmp_path / "out" / "r.urdf")
    assert urdf == assembly_to_urdf(A, prefix="r_", ros2_control=control)
    assert ET.fromstring(urdf).find("ros2_control/hardware/plugin").text == "my_vendor/Hardware"
    assert (tmp_path / "out" / "r.urdf").read_text() == urdf
    xacro = A.to_xacro("arm", instantiate=False, write_to=tmp_path / "arm.xacro")
    assert xacro == assembly_to_xacro(A, "arm", instantiate=False) == (tmp_path / "arm.xacro").read_text()
    srdf = A.to_srdf(n_samples=50, seed=3, write_to=tmp_path / "r.srdf")
    assert srdf == assembly_to_srdf(A, n_samples=50, seed=3) == (tmp_path / "r.srdf").read_text()
    assert ET.fromstring(srdf).find("group").get("name") == "manipulator"


def test_robot_api(primitives):
    robot = ModuleAssembly.from_serial_modules(primitives, PAPER_IDS).robot
    assert robot.dof == 3 and len(robot.joints) == 3
    assert robot.mass == pytest.approx(sum(primitives[m].mass for m in PAPER_IDS))
    q = robot.random_configuration(rng=1)
    np.testing.assert_array_equal(q, robot.random_configuration(rng=1))
    assert robot.within_limits(q)
    frames = robot.fk(q, kind="full")
    np.testing.assert_allclose(frames["tool0"], robot.fk(q))
    assert robot.fk(q, kind="joints").shape == (3, 4, 4)
    robot.q = q
    np.testing.assert_array_equal(robot.q, q)
    with pytest.raises(InputError):
        robot.fk(np.zeros(4))
    with pytest.raises(InputError):
        robot.fk(np.array([np.nan, 0, 0]))
    lim = robot.joint_limits
    assert lim.shape == (2, 3) and np.all(lim[0] < lim[1])
    assert robot.velocity_limits.shape == robot.torque_limits.shape == robot.acceleration_limits.shape == (3,)


def test_jacobian_matches_finite_differences(primitives):
    robot = ModuleAssembly.from_serial_modules(primitives, ("base", "J1", "l_30", "J2", "P1", "J2", "eef")).robot
    q = robot.random_configuration(rng=5)
    J = robot.jacobian(q)
    eps = 1e-7
    T0 = robot.fk(q)
    for k in range(robot.dof):
        dq = np.zeros(robot.dof)
        dq[k] = eps
        T1 = robot.fk(q + dq)
        np.testing.assert_allclose((T1[:3, 3] - T0[:3, 3]) / eps, J[:3, k], atol=1e-5)
        dR = (T1[:3, :3] - T0[:3, :3]) / eps @ T0[:3, :3].T  # skew(omega)
        np.testing.assert_allclose([dR[2, 1], dR[0, 2], dR[1, 0]], J[3:, k], atol=1e-5)


def test_inverse_dynamics_terms(primitives):
    robot = ModuleAssembly.from_serial_modules(primitives, PAPER_IDS).robot
    q = robot.random_configuration(rng=2)
    zero = np.zeros(3)
    np.testing.assert_allclose(robot.id(q, zero, zero), robot.static_torque(q), atol=1e-10)
    ddq = np.array([1.0, -2.0, 0.5])
    M = robot.mass_matrix(q)
    np.testing.assert_allclose(robot.id(q, zero, ddq) - robot.static_torque(q), M @ ddq, atol=1e-9)
    # rotor inertia (motorInertia * gearRatio^2) adds to the diagonal
    arm = robot.model.armature
    assert np.all(arm > 0)
    np.testing.assert_allclose(robot.id(q, zero, ddq) - robot.id(q, zero, ddq, motor_inertia=False), arm * ddq)
    dq = np.array([0.3, -0.1, 0.0])
    fr = robot.id(q, dq, zero, friction=True) - robot.id(q, dq, zero)
    np.testing.assert_allclose(fr, robot.model.friction * np.sign(dq) + robot.model.damping * dq)


def test_self_collision_modes(primitives):
    A = ModuleAssembly.from_serial_modules(primitives, ("base", "J2", "i_45", "J2", "i_45", "J2", "eef"))
    counts = {
        mode: len(A.to_pin_robot(ignore_collisions=mode).collision_pairs)
        for mode in ("rigid", "via_joint", "rigid_via_joint")
    }
    assert counts["rigid"] > counts["via_joint"] > counts["rigid_via_joint"] > 0
    robot = A.robot
    assert robot.ignore_collisions == "rigid_via_joint"
    assert not robot.has_self_collision(np.zeros(3))  # straight up
    folded = np.array([1.5, 2.9, 0.0])  # fold the arm back down onto its base
    assert robot.has_self_collision(folded)
    pairs = robot.self_collisions(folded)
    assert ("base_link_c0", "m6_eef_body_c0") in pairs
    # no pair is between geometries of the same rigid group or of neighbours across one joint
    parents = {g.name: g.parentJoint for g in robot.collision.geometryObjects}
    for a, b in robot.collision_pairs:
        assert abs(parents[a] - parents[b]) >= 2  # serial chain: joint index distance = joints in between


def test_improv_robot_collision_model(improv):
    A = ModuleAssembly.from_serial_modules(improv, IMPROV_6DOF)
    robot = A.robot
    links_with_collision = sum(1 for link in A.tree().links if link.body.collision)
    assert robot.collision.ngeoms > links_with_collision  # VRML convex decompositions: several parts per body
    assert not robot.has_self_collision(np.zeros(6))
    rng = np.random.default_rng(0)
    results = [robot.has_self_collision(robot.random_configuration(rng)) for _ in range(30)]
    assert any(results)  # some random configurations of a 6-DOF arm collide with itself


def test_no_eef_means_a_tcp_at_the_last_free_connector(primitives):
    """As in the reference toolbox, an assembly without an end effector has its TCP (frame ``tcp``, also in the
    URDF) at the free connector of its last module; ``has_end_effector`` tells the two apart."""
    assembly = ModuleAssembly.from_serial_modules(primitives, ("base", "J1", "i_15"))
    robot = assembly.robot
    assert not robot.has_end_effector and robot.tcp_name == "tcp"
    i_15 = primitives["i_15"]
    distal = next(c for c in i_15.connectors.values() if c.gender == "m")
    body = robot.frame_pose("m2_i_15_body", np.zeros(1))
    np.testing.assert_allclose(robot.fk(np.zeros(1)), body @ distal.pose, atol=1e-12)
    assert '<link name="tcp">' in assembly.to_urdf()
    assert ModuleAssembly.from_serial_modules(primitives, ("base", "J1", "i_15", "eef")).robot.has_end_effector
    base_only = ModuleAssembly.from_serial_modules(primitives, ("base",)).robot
    assert base_only.dof == 0 and base_only.tcp_name == "tcp"  # at the base module's free connector


def test_continuous_and_fixed_joints(tmp_path):
    """A continuous joint is written as such (Pinocchio loads it as a unit-circle joint); a fixed joint
    inside a module is a fixed URDF joint and adds no degree of freedom."""
    from conftest import primitives_json, write_db
    from kinematics_reference import tool_poses

    from timor_core import ModulesDB

    data = primitives_json()
    j1 = next(m for m in data["modules"] if m["header"]["ID"] == "J1")
    j1["joints"][0]["type"] = "continuous"
    j2 = next(m for m in data["modules"] if m["header"]["ID"] == "J2")
    j2["joints"][0]["type"] = "fixed"
    db = ModulesDB.from_json_file(write_db(tmp_path, data))
    A = ModuleAssembly.from_serial_modules(db, ("base", "J1", "i_30", "J2", "J1", "eef"))
    robot = A.robot
    assert robot.dof == 2
    assert np.all(np.isinf(robot.joint_limits))
    text = A.to_urdf()
    types = {j.get("name"): j.get("type") for j in ET.fromstring(text).iter("joint")}
    assert types["m1_J1_joint"] == "continuous" and types["m3_J2_joint"] == "fixed"
    mu = pin.buildModelFromXML(text)
    du = mu.createData()
    assert mu.nq == 4 and mu.nv == 2
    q = np.array([2.5, -3.0])  # beyond +-pi is fine for a continuous joint
    qu = np.zeros(4)
    for k, name in enumerate(robot.joints):
        idx = mu.joints[mu.getJointId(name)].idx_q
        qu[idx : idx + 2] = np.cos(q[k]), np.sin(q[k])
    pin.framesForwardKinematics(mu, du, qu)
    np.testing.assert_allclose(du.oMf[mu.getFrameId("tool0")].homogeneous, robot.fk(q), atol=1e-9)
    np.testing.assert_allclose(robot.fk(q), tool_poses(A, q)[0], atol=1e-9)


def test_every_link_but_the_root_carries_its_inertial(robco):
    """PyBullet gives a link without ``<inertial>`` 1 kg and an inertia of 1 kg m²: a URDF whose tool frame had none
    carried a phantom load at the TCP there (the gravity torques of a 4-joint arm 24 % too high). Every link but the
    root (KDL refuses an inertia there) says its inertial; the tool frame's is none, as Pinocchio reads it."""
    placement = np.eye(4)
    placement[:3, 3] = (0.2, -0.1, 0.3)
    A = ModuleAssembly.from_serial_modules(robco, ["base", "J", "L_250", "J", "gripper"], base_placement=placement)
    text = A.to_urdf()
    root = ET.fromstring(text)
    links = {link.get("name"): link for link in root.iter("link")}
    children = {joint.find("child").get("link") for joint in root.iter("joint")}
    assert set(links) - children == {"world"} and links["world"].find("inertial") is None
    assert [name for name in children if links[name].find("inertial") is None] == []
    assert links["tool0"].find("inertial/mass").get("value") == "0"
    model = pin.buildModelFromXML(text)
    q = np.array([0.4, -0.9])
    np.testing.assert_allclose(pin.computeGeneralizedGravity(model, model.createData(), q), A.robot.static_torque(q),
                               atol=1e-9)  # fmt: skip
    assert sum(i.mass for i in model.inertias) == pytest.approx(A.robot.mass)
