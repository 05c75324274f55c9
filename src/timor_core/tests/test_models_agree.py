"""The direct Pinocchio model, the URDF-loaded model and an independent naive FK all agree."""

from __future__ import annotations

import copy

import numpy as np
import pinocchio as pin
import pytest
from conftest import primitives_json, write_db
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kinematics_reference import generalized_gravity, tool_poses

from timor_core import ModuleAssembly, ModulesDB
from timor_core.common.transforms import from_rpy

PRIMITIVE_MIDDLE = ["J1", "J2", "P1", "i_15", "i_30", "i_45", "l_15", "l_30", "l_45"]
ROBCO_MIDDLE = ["J", "L_100", "L_150", "L_200", "L_250", "I_50", "I_100", "I_150", "I_200", "I_300", "I_400"]


def urdf_model(assembly: ModuleAssembly) -> pin.Model:
    return pin.buildModelFromXML(assembly.to_urdf())


def urdf_q(model_urdf: pin.Model, robot, q: np.ndarray) -> np.ndarray:
    """Our q, reordered into the URDF model's joint order (matched by joint name)."""
    out = pin.neutral(model_urdf)
    for k, name in enumerate(robot.joints):
        jid = model_urdf.getJointId(name)
        assert jid < model_urdf.njoints, f"joint {name} missing in the URDF model"
        out[model_urdf.joints[jid].idx_q] = q[k]
    return out


def check_agreement(assembly: ModuleAssembly, q: np.ndarray) -> None:
    robot = assembly.robot
    mu = urdf_model(assembly)
    du = mu.createData()
    qu = urdf_q(mu, robot, q)
    assert mu.nv == robot.dof
    # every frame of the direct model exists in the URDF model at the same world pose
    ours = robot.fk(q, kind="full")
    pin.framesForwardKinematics(mu, du, qu)
    for name, T in ours.items():
        if name == "universe":
            continue
        fid = mu.getFrameId(name)
        assert fid < mu.nframes, f"frame {name} missing in the URDF model"
        np.testing.assert_allclose(du.oMf[fid].homogeneous, T, atol=1e-9, err_msg=name)
    # the naive FK from the CoBRA definitions
    tools = tool_poses(assembly, q)
    for k, T in enumerate(tools):
        np.testing.assert_allclose(ours[f"tool{k}"], T, atol=1e-9)
    # dynamics: mass, gravity, full inverse dynamics (URDF has no rotor inertia)
    assert robot.mass == pytest.approx(sum(i.mass for i in mu.inertias), rel=1e-12)
    g_ours = robot.static_torque(q)
    g_urdf = pin.computeGeneralizedGravity(mu, du, qu)
    order = [mu.joints[mu.getJointId(n)].idx_v for n in robot.joints]
    np.testing.assert_allclose(g_ours, g_urdf[order], atol=1e-9)
    np.testing.assert_allclose(g_ours, generalized_gravity(assembly, q), atol=1e-9)
    rng = np.random.default_rng(0)
    dq, ddq = rng.normal(size=robot.dof), rng.normal(size=robot.dof)
    dq_u, ddq_u = np.zeros(mu.nv), np.zeros(mu.nv)
    dq_u[order], ddq_u[order] = dq, ddq
    tau_u = pin.rnea(mu, du, qu, dq_u, ddq_u)
    np.testing.assert_allclose(robot.id(q, dq, ddq, motor_inertia=False), tau_u[order], atol=1e-8)


@st.composite
def serial_chains(draw, middle: list[str]):
    body = draw(st.lists(st.sampled_from(middle), min_size=1, max_size=8))
    return body


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(middle=serial_chains(PRIMITIVE_MIDDLE), eef=st.booleans(), seed=st.integers(0, 2**31))
def test_primitives_urdf_direct_naive_agree(primitives, middle, eef, seed):
    ids = ["base", *middle] + (["eef"] if eef else [])
    assembly = ModuleAssembly.from_serial_modules(primitives, ids)
    if assembly.dof == 0:
        return
    q = assembly.robot.random_configuration(seed)
    check_agreement(assembly, q)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(middle=serial_chains(ROBCO_MIDDLE), seed=st.integers(0, 2**31))
def test_robco_urdf_direct_naive_agree(robco, middle, seed):
    assembly = ModuleAssembly.from_serial_modules(robco, ["base", *middle, "gripper"])
    q = assembly.robot.random_configuration(seed) if assembly.dof else np.zeros(0)
    if assembly.dof:
        check_agreement(assembly, q)
    np.testing.assert_allclose(assembly.robot.fk(q), tool_poses(assembly, q)[0], atol=1e-9)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    rpy=st.tuples(*[st.floats(-3.1, 3.1)] * 3),
    xyz=st.tuples(*[st.floats(-2, 2)] * 3),
    seed=st.integers(0, 2**31),
)
def test_base_placement_moves_everything(primitives, rpy, xyz, seed):
    placement = from_rpy(*rpy, xyz)
    ids = ["base", "J1", "l_30", "J2", "i_15", "P1", "eef"]
    moved = ModuleAssembly.from_serial_modules(primitives, ids, base_placement=placement)
    still = ModuleAssembly.from_serial_modules(primitives, ids)
    q = still.robot.random_configuration(seed)
    np.testing.assert_allclose(moved.robot.fk(q), placement @ still.robot.fk(q), atol=1e-9)
    check_agreement(moved, q)  # the URDF gets a 'world' link carrying the placement


# -- modules walked backwards and branched trees --------------------------------------------------
def hermaphroditic_db(tmp_path) -> ModulesDB:
    """Primitives whose connectors are all hermaphroditic, so modules can be mounted either way round."""
    data = primitives_json()
    for m in data["modules"]:
        for b in m["bodies"]:
            for c in b["connectors"]:
                if c["type"] == "default":
                    c["gender"], c["type"] = "h", "herm"
    return ModulesDB.from_json_file(write_db(tmp_path, data))


def test_reversed_joint_modules_agree(tmp_path):
    db = hermaphroditic_db(tmp_path)
    # base -> J2 mounted by its DISTAL connector -> P1 by its distal connector -> J1 normally -> eef
    ids = ["base", "J2", "P1", "J1", "i_30", "eef"]
    conns = [
        (0, "base_out", 1, "J2_distal_connector"),
        (1, "J2_proximal_connector", 2, "P1_distal_connector"),
        (2, "P1_proximal_connector", 3, "J1_proximal_connector"),
        (3, "J1_distal_connector", 4, "i_30_proximal_connector"),
        (4, "i_30_distal_connector", 5, "eef_proximal_connector"),
    ]
    assembly = ModuleAssembly(db, ids, conns, (0, "base"))
    robot = assembly.robot
    assert robot.dof == 3
    rng = np.random.default_rng(7)
    for _ in range(10):
        q = robot.random_configuration(rng)
        check_agreement(assembly, q)


def branched_db(tmp_path) -> ModulesDB:
    """Primitives plus a base with two outputs (two arms on one base)."""
    data = primitives_json()
    base = copy.deepcopy(next(m for m in data["modules"] if m["header"]["ID"] == "base"))
    base["header"]["ID"] = base["header"]["name"] = "base2"
    out = next(c for c in base["bodies"][0]["connectors"] if c["ID"] == "base_out")
    left, right = copy.deepcopy(out), copy.deepcopy(out)
    left["ID"], right["ID"] = "out_left", "out_right"
    left["pose"][1][3], right["pose"][1][3] = 0.3, -0.3
    base["bodies"][0]["connectors"] = [c for c in base["bodies"][0]["connectors"] if c["ID"] != "base_out"]
    base["bodies"][0]["connectors"] += [left, right]
    data["modules"].append(base)
    return ModulesDB.from_json_file(write_db(tmp_path, data))


def two_arm_assembly(db: ModulesDB) -> ModuleAssembly:
    A = ModuleAssembly(db, ["base2"])
    j = A.add("J1", (0, "out_left"))
    j = A.add("J2", (j, "J1_distal_connector"))
    A.add("eef", (j, "J2_distal_connector"))
    k = A.add("J2", (0, "out_right"))
    k = A.add("i_30", (k, "J2_distal_connector"))
    k = A.add("J2", (k, "i_30_distal_connector"))
    A.add("eef", (k, "J2_distal_connector"))
    return A


def test_two_arms_on_one_base(tmp_path):
    A = two_arm_assembly(branched_db(tmp_path))
    robot = A.robot
    assert robot.dof == 4
    assert {"tool0", "tool1"} <= set(robot.frame_names)
    rng = np.random.default_rng(3)
    for _ in range(10):
        check_agreement(A, robot.random_configuration(rng))
    # the two tools start 0.6 m apart in y
    frames = robot.fk(np.zeros(4), kind="full")
    assert abs(frames["tool0"][1, 3] - frames["tool1"][1, 3]) == pytest.approx(0.6)


def test_improv_six_dof_agree(improv):
    for ids in (("1", "21", "4", "21", "5", "23", "12"), ("1", "21", "14", "6", "21", "15", "23", "7", "12")):
        assembly = ModuleAssembly.from_serial_modules(improv, ids)
        assert assembly.robot.dof == 6
        rng = np.random.default_rng(11)
        for _ in range(5):
            check_agreement(assembly, assembly.robot.random_configuration(rng))
