"""ROS artefacts: the <ros2_control> block, the xacro macro, the SRDF and the MoveIt config folder."""

from __future__ import annotations

import copy
import xml.dom.minidom
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest
from conftest import primitives_json, write_db
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from urdf_parser_py.urdf import URDF

from timor_core import ModuleAssembly, ModulesDB
from timor_core.common.transforms import from_rpy
from timor_core.errors import AssemblyError, InputError, TimorError
from timor_core.export.formats.ros2_control import Ros2ControlConfig
from timor_core.export.formats.srdf import assembly_to_srdf, collision_matrix, planning_chain
from timor_core.export.formats.urdf import assembly_to_urdf
from timor_core.export.formats.xacro import assembly_to_xacro
from timor_core.kinematics.collision import configure_requests

xacro = pytest.importorskip("xacro")

SIX_DOF = ("base", "J2", "i_45", "J2", "J2", "l_30", "J1", "J2", "J1", "eef")
MIXED = ("base", "J1", "l_30", "J2", "P1", "i_15", "eef")
PRIMITIVE_MIDDLE = ["J1", "J2", "P1", "i_15", "i_30", "i_45", "l_15", "l_30", "l_45"]


def _control(text: str) -> ET.Element:
    blocks = ET.fromstring(text).findall("ros2_control")
    assert len(blocks) == 1
    return blocks[0]


def _canonical(element: ET.Element) -> tuple:
    """An element without layout whitespace, for comparing XML."""
    return (element.tag, element.attrib, (element.text or "").strip(), [_canonical(c) for c in element])


def _params(element: ET.Element) -> dict[str, float]:
    return {p.get("name"): float(p.text) for p in element.findall("param")}


# -- <ros2_control> ---------------------------------------------------------------------------------
def test_ros2_control_block_matches_the_urdf_joints(primitives):
    A = ModuleAssembly.from_serial_modules(primitives, MIXED)
    config = Ros2ControlConfig(
        hardware_parameters={"calibration": "${not_evaluated}"}, initial_positions={"m4_P1_joint": 0.1}
    )
    text = assembly_to_urdf(A, "bot", prefix="l_", ros2_control=config)
    robot = URDF.from_xml_string(text)  # the extra element does not upset the URDF parsers
    model = pin.buildModelFromXML(text)
    assert model.nq == 3
    movable = {j.name: j for j in robot.joints if j.type != "fixed"}
    block = _control(text)
    assert block.get("name") == "l_bot" and block.get("type") == "system"
    assert block.find("hardware/plugin").text == "mock_components/GenericSystem"
    assert block.find("hardware/param").attrib == {"name": "calibration"}
    assert block.find("hardware/param").text == "${not_evaluated}"
    joints = block.findall("joint")
    assert [j.get("name") for j in joints] == [link.joint_name for link in A.tree("l_").actuated]
    assert sorted(j.get("name") for j in joints) == sorted(movable)  # every movable joint exactly once
    for j in joints:
        limit = movable[j.get("name")].limit
        command = {c.get("name"): _params(c) for c in j.findall("command_interface")}
        assert list(command) == ["position", "velocity", "effort"]
        assert command["position"] == {"min": pytest.approx(limit.lower), "max": pytest.approx(limit.upper)}
        assert command["velocity"] == {"min": pytest.approx(-limit.velocity), "max": pytest.approx(limit.velocity)}
        assert command["effort"] == {"min": pytest.approx(-limit.effort), "max": pytest.approx(limit.effort)}
        state = {s.get("name"): _params(s) for s in j.findall("state_interface")}
        assert list(state) == ["position", "velocity", "effort"]
        expected = 0.1 if j.get("name") == "l_m4_P1_joint" else 0.0
        assert state["position"] == {"initial_value": pytest.approx(expected)}
    # without the keyword the URDF is unchanged
    assert assembly_to_urdf(A, "bot", prefix="l_") == text[: text.index("  <ros2_control")] + "</robot>\n"


def test_ros2_control_continuous_passive_and_home_clipping(tmp_path):
    data = primitives_json()
    modules = {m["header"]["ID"]: m for m in data["modules"]}
    modules["J1"]["joints"][0]["type"] = "continuous"
    modules["J2"]["joints"][0]["passive"] = True
    modules["P1"]["joints"][0]["limits"]["positionLower"] = 0.05  # zero is outside: home is clipped to 0.05
    db = ModulesDB.from_json_file(write_db(tmp_path, data))
    A = ModuleAssembly.from_serial_modules(db, MIXED)
    block = _control(assembly_to_urdf(A, ros2_control=Ros2ControlConfig(command_interfaces=("position",))))
    joints = {j.get("name"): j for j in block.findall("joint")}
    continuous = joints["m1_J1_joint"].find("command_interface")
    assert continuous.get("name") == "position" and continuous.findall("param") == []  # no position limits
    assert joints["m3_J2_joint"].findall("command_interface") == []  # passive: state only
    assert len(joints["m3_J2_joint"].findall("state_interface")) == 3
    position_state = joints["m4_P1_joint"].find("state_interface")
    assert _params(position_state) == {"initial_value": pytest.approx(0.05)}
    srdf = ET.fromstring(assembly_to_srdf(A, n_samples=20))
    assert [p.get("name") for p in srdf.findall("passive_joint")] == ["m3_J2_joint"]
    home = {j.get("name"): float(j.get("value")) for j in srdf.find("group_state").findall("joint")}
    assert home == {"m1_J1_joint": 0.0, "m3_J2_joint": 0.0, "m4_P1_joint": pytest.approx(0.05)}
    assert planning_chain(A).commanded == ("m1_J1_joint", "m4_P1_joint")


def test_ros2_control_config_errors(primitives):
    A = ModuleAssembly.from_serial_modules(primitives, MIXED)
    with pytest.raises(InputError, match="unknown interface"):
        Ros2ControlConfig(command_interfaces=("position", "torque"))
    with pytest.raises(InputError, match="include 'position'"):
        Ros2ControlConfig(state_interfaces=("velocity",))
    with pytest.raises(InputError, match="finite"):
        Ros2ControlConfig(initial_positions={"m1_J1_joint": float("nan")})
    with pytest.raises(InputError, match="does not have"):
        assembly_to_urdf(A, ros2_control=Ros2ControlConfig(initial_positions={"nope": 0.0}))
    with pytest.raises(InputError, match="outside its limits"):
        assembly_to_urdf(A, ros2_control=Ros2ControlConfig(initial_positions={"m1_J1_joint": 4.0}))
    assert isinstance(Ros2ControlConfig(command_interfaces=["velocity"]).command_interfaces, tuple)


# -- xacro -------------------------------------------------------------------------------------------
def expand(text: str) -> str:
    doc = xml.dom.minidom.parseString(text)
    xacro.process_doc(doc)
    return doc.toxml()


def check_same_robot(plain: str, expanded: str, prefix: str, rng: np.random.Generator) -> None:
    """Same joints, same masses and inertias, same pose of every shared frame at random configurations."""
    mp, mx = pin.buildModelFromXML(plain), pin.buildModelFromXML(expanded)
    assert list(mp.names) == list(mx.names)
    assert all(n.startswith(prefix) for n in list(mx.names)[1:])
    for name in list(mp.names)[1:]:
        a, b = mp.inertias[mp.getJointId(name)], mx.inertias[mx.getJointId(name)]
        assert a.mass == pytest.approx(b.mass, abs=1e-12)
        np.testing.assert_allclose(a.lever, b.lever, atol=1e-12)
        np.testing.assert_allclose(a.inertia, b.inertia, atol=1e-12)
    np.testing.assert_allclose(mp.lowerPositionLimit, mx.lowerPositionLimit)
    np.testing.assert_allclose(mp.upperPositionLimit, mx.upperPositionLimit)
    np.testing.assert_allclose(mp.velocityLimit, mx.velocityLimit)
    np.testing.assert_allclose(mp.effortLimit, mx.effortLimit)
    frames_p, frames_x = {f.name for f in mp.frames}, {f.name for f in mx.frames}
    assert frames_p - {f"{prefix}world"} <= frames_x
    assert frames_x - frames_p <= {"world", f"{prefix}world_to_base_link"}
    dp, dx = mp.createData(), mx.createData()
    for _ in range(3):
        q = pin.randomConfiguration(mp)
        q = np.where(np.isfinite(q), q, rng.uniform(-np.pi, np.pi, q.shape))
        pin.framesForwardKinematics(mp, dp, q)
        pin.framesForwardKinematics(mx, dx, q)
        for name in frames_p & frames_x:
            np.testing.assert_allclose(
                dx.oMf[mx.getFrameId(name)].homogeneous, dp.oMf[mp.getFrameId(name)].homogeneous, atol=1e-9
            )


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    middle=st.lists(st.sampled_from(PRIMITIVE_MIDDLE), min_size=1, max_size=6),
    eef=st.booleans(),
    prefix=st.sampled_from(["", "left_"]),
    placed=st.booleans(),
    seed=st.integers(0, 2**31),
)
def test_xacro_expands_to_the_urdf(primitives, middle, eef, prefix, placed, seed):
    placement = from_rpy(0.3, -0.2, 1.0, (0.5, -0.1, 0.2)) if placed else None
    ids = ["base", *middle] + (["eef"] if eef else [])
    A = ModuleAssembly.from_serial_modules(primitives, ids, base_placement=placement)
    config = Ros2ControlConfig() if A.dof else None
    expanded = expand(assembly_to_xacro(A, prefix=prefix, ros2_control=config))
    plain = assembly_to_urdf(A, prefix=prefix, ros2_control=config)
    check_same_robot(plain, expanded, prefix, np.random.default_rng(seed))
    if config is not None:  # the same <ros2_control> block, name and joints prefixed
        assert _canonical(_control(expanded)) == _canonical(_control(plain))


def test_xacro_macro_included_twice(primitives, tmp_path):
    A = ModuleAssembly.from_serial_modules(primitives, MIXED)
    macro = assembly_to_xacro(A, "arm", instantiate=False, ros2_control=Ros2ControlConfig())
    assert '<link name="world"/>' not in macro
    (tmp_path / "arm.xacro").write_text(macro)
    (tmp_path / "cell.urdf.xacro").write_text(
        '<?xml version="1.0"?>\n<robot name="cell" xmlns:xacro="http://www.ros.org/wiki/xacro">\n'
        '  <xacro:include filename="arm.xacro"/>\n  <link name="table"/>\n'
        '  <xacro:arm prefix="left_" parent="table"><origin xyz="0 0.5 0" rpy="0 0 0"/></xacro:arm>\n'
        '  <xacro:arm prefix="right_" parent="table"><origin xyz="0 -0.5 0" rpy="0 0 3.14159"/></xacro:arm>\n'
        "</robot>\n"
    )
    text = xacro.process_file(str(tmp_path / "cell.urdf.xacro")).toxml()
    model = pin.buildModelFromXML(text)
    assert model.nq == 2 * A.dof
    names = list(model.names)[1:]
    assert {n.removeprefix("left_") for n in names if n.startswith("left_")} == set(A.robot.joints)
    assert {n.removeprefix("right_") for n in names if n.startswith("right_")} == set(A.robot.joints)
    controls = ET.fromstring(text).findall("ros2_control")
    assert len({c.get("name") for c in controls}) == 2  # one per arm, names prefixed
    data = model.createData()
    pin.framesForwardKinematics(model, data, pin.neutral(model))
    left = data.oMf[model.getFrameId("left_tool0")].homogeneous
    np.testing.assert_allclose(left[:3, 3], A.robot.fk(np.zeros(A.dof))[:3, 3] + [0, 0.5, 0], atol=1e-9)


def test_xacro_bad_input(primitives):
    A = ModuleAssembly.from_serial_modules(primitives, MIXED)
    with pytest.raises(InputError, match="macro name"):
        assembly_to_xacro(A, "1arm")
    with pytest.raises(InputError, match="prefix"):
        assembly_to_xacro(A, prefix="a b")
    with pytest.raises(InputError, match="mesh_uri"):
        assembly_to_xacro(A, mesh_uri="ftp")


# -- SRDF ------------------------------------------------------------------------------------------
def _link_pairs_colliding(robot, qs) -> list[set[frozenset[str]]]:
    """Per configuration, the link pairs in contact: every geometry pair of different links checked."""
    gm = pin.GeometryModel()
    for obj in robot.collision.geometryObjects:
        gm.addGeometryObject(obj)
    link = [robot.model.frames[o.parentFrame].name for o in gm.geometryObjects]
    for a in range(gm.ngeoms):
        for b in range(a + 1, gm.ngeoms):
            if link[a] != link[b]:
                gm.addCollisionPair(pin.CollisionPair(a, b))
    gd = pin.GeometryData(gm)
    configure_requests(gd)
    data = robot.model.createData()
    out = []
    for q in qs:
        pin.computeCollisions(robot.model, data, gm, gd, q, False)
        out.append(
            {
                frozenset((link[p.first], link[p.second]))
                for p, r in zip(gm.collisionPairs, gd.collisionResults)
                if r.isCollision()
            }
        )
    return out


def test_srdf_structure_and_collision_matrix(primitives):
    A = ModuleAssembly.from_serial_modules(primitives, SIX_DOF)
    n = 300
    text = assembly_to_srdf(A, prefix="r_", n_samples=n, seed=5)
    assert text == assembly_to_srdf(A, prefix="r_", n_samples=n, seed=5)  # deterministic
    root = ET.fromstring(text)
    urdf = URDF.from_xml_string(assembly_to_urdf(A, prefix="r_"))
    assert root.get("name") == urdf.name
    links = {link.name for link in urdf.links}
    chain = root.find("group[@name='manipulator']/chain")
    assert (chain.get("base_link"), chain.get("tip_link")) == ("r_base_link", "r_tool0")
    eef = root.find("end_effector")
    assert eef.get("parent_link") == "r_tool0" and eef.get("parent_group") == "manipulator"
    assert root.find(f"group[@name='{eef.get('group')}']/link").get("name") == "r_tool0"
    home = {j.get("name"): float(j.get("value")) for j in root.find("group_state[@name='home']")}
    assert home == dict.fromkeys((j.name for j in urdf.joints if j.type != "fixed"), 0.0)
    disabled = {frozenset((d.get("link1"), d.get("link2"))): d.get("reason") for d in root.iter("disable_collisions")}
    assert set().union(*disabled) <= links
    assert set(disabled.values()) <= {"Adjacent", "Default", "Always", "Never", "User"}
    # every URDF parent-child pair of links with geometry is disabled as adjacent
    with_geometry = {link.name for link in urdf.links if link.collisions}
    for j in urdf.joints:
        if j.parent in with_geometry and j.child in with_geometry:
            assert disabled[frozenset((j.parent, j.child))] == "Adjacent"
    # replay the same samples with an independent all-pairs checker
    robot = A.to_pin_robot(prefix="r_")
    frame_of = {o.name: robot.model.frames[o.parentFrame].name for o in robot.collision.geometryObjects}
    checked = {frozenset((frame_of[a], frame_of[b])) for a, b in robot.collision_pairs}
    rng = np.random.default_rng(5)
    qs = [robot.random_configuration(rng) for _ in range(n)]
    hits = _link_pairs_colliding(robot, qs)
    seen = set().union(*hits)
    assert seen, "some pair should collide in 300 random configurations"
    for pair in seen & checked:  # a pair timor checks that collides somewhere stays checked
        assert pair not in disabled, (pair, disabled[pair])
    never = [pair for pair, reason in disabled.items() if reason == "Never"]
    assert never and not any(pair in h for pair in never for h in hits)
    all_pairs = {frozenset((a, b)) for a in with_geometry for b in with_geometry if a != b}
    assert all_pairs - set(disabled) <= checked  # MoveIt checks no pair timor ignores
    assert {p for p, r in disabled.items() if r == "User"} <= all_pairs - checked


def test_srdf_seed_and_speed(primitives):
    A = ModuleAssembly.from_serial_modules(primitives, SIX_DOF)
    assembly_to_srdf(A, n_samples=10)  # warm caches
    text = assembly_to_srdf(A, n_samples=1000, seed=1)  # its speed is measured in benchmarks, not here
    assert text.count("<disable_collisions") > 20
    assert collision_matrix(A, n_samples=50, seed=3) == collision_matrix(A, n_samples=50, seed=3)


def test_srdf_default_pairs_and_no_tool(tmp_path):
    """Two bodies that overlap at home are 'Default'; without an eef the chain ends at the last link."""
    data = primitives_json()
    l30 = next(m for m in data["modules"] if m["header"]["ID"] == "l_30")
    l30["bodies"][0]["collision"].append({"type": "sphere", "parameters": {"r": 0.5}, "pose": np.eye(4).tolist()})
    db = ModulesDB.from_json_file(write_db(tmp_path, data))
    A = ModuleAssembly.from_serial_modules(db, ("base", "J1", "i_30", "J2", "l_30"))
    root = ET.fromstring(assembly_to_srdf(A, n_samples=50))
    reasons = {frozenset((d.get("link1"), d.get("link2"))): d.get("reason") for d in root.iter("disable_collisions")}
    assert reasons[frozenset(("m2_i_30_body", "m4_l_30_body"))] == "Default"
    assert root.find("group/chain").get("tip_link") == "m4_l_30_body"
    assert root.find("end_effector") is None


def test_srdf_bad_input(primitives, tmp_path):
    A = ModuleAssembly.from_serial_modules(primitives, SIX_DOF)
    with pytest.raises(InputError, match="n_samples"):
        assembly_to_srdf(A, n_samples=0)
    with pytest.raises(InputError, match="group name"):
        assembly_to_srdf(A, group="my group")
    with pytest.raises(AssemblyError, match="no movable joint"):
        assembly_to_srdf(ModuleAssembly.from_serial_modules(primitives, ("base", "l_30", "eef")))
    # two arms on one base: not a serial chain
    data = primitives_json()
    base = next(m for m in data["modules"] if m["header"]["ID"] == "base")
    base2 = copy.deepcopy(base)
    base2["header"]["ID"] = base2["header"]["name"] = "base2"
    out = next(c for c in base2["bodies"][0]["connectors"] if c["ID"] == "base_out")
    right = copy.deepcopy(out)
    right["ID"] = "out_right"
    right["pose"][1][3] = -0.3
    base2["bodies"][0]["connectors"].append(right)
    data["modules"].append(base2)
    db = ModulesDB.from_json_file(write_db(tmp_path, data))
    B = ModuleAssembly(db, ["base2"])
    j = B.add("J1", (0, "base_out"))
    B.add("eef", (j, "J1_distal_connector"))
    B.add("J2", (0, "out_right"))
    with pytest.raises(AssemblyError, match="serial"):
        assembly_to_srdf(B, n_samples=5)
    assert issubclass(AssemblyError, TimorError)


def test_improv_xacro_and_srdf(improv):
    A = ModuleAssembly.from_serial_modules(improv, ("1", "21", "4", "21", "5", "23", "12"))
    for mesh_uri in ("package", "file"):
        expanded = expand(assembly_to_xacro(A, prefix="q_", mesh_uri=mesh_uri))
        check_same_robot(assembly_to_urdf(A, prefix="q_", mesh_uri=mesh_uri), expanded, "q_", np.random.default_rng(0))
    root = ET.fromstring(assembly_to_srdf(A, n_samples=1000))
    assert len(root.findall("disable_collisions")) > 6
