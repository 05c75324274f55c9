"""Issue 13 item 6: MJCF export compiled by MuJoCo, checked by loading it with the ``mujoco`` package: masses,
inertias (mass matrix), gravity torques and the pose of every body equal the project's model."""

from __future__ import annotations

import json
import math
import shutil
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from conftest import IMPROV_FILE, check_urdf_file, primitives_json, write_db

from timor_core import ModuleAssembly, ModulesDB
from timor_core.cli.app import main
from timor_core.errors import InputError, MJCFError
from timor_core.export.formats.mjcf import MJCFOptions, assembly_to_mjcf

mujoco = pytest.importorskip("mujoco")

PRIMITIVE_CHAIN = ["base", "J1", "l_30", "J2", "i_30", "P1", "J2", "eef"]
IMPROV_CHAIN = ["1", "21", "4", "21", "5", "23", "12"]  # six axes, without module 7 (impossible inertia)


def _placement() -> np.ndarray:
    c, s = math.cos(0.7), math.sin(0.7)
    T = np.eye(4)
    T[:3, :3] = [[c, -s, 0], [s, c, 0], [0, 0, 1]]
    T[:3, 3] = [0.3, -0.2, 0.5]
    return T


def assert_same_model(assembly: ModuleAssembly, model, n: int = 5) -> None:
    """Masses, FK of every body, mass matrix and gravity torques of MuJoCo's model equal the robot's."""
    robot = assembly.robot
    data = mujoco.MjData(model)
    assert model.nq == model.nv == robot.dof
    assert model.body_mass.sum() == pytest.approx(robot.mass, rel=1e-6)  # static bodies keep their mass
    qadr = [model.joint(name).qposadr[0] for name in robot.joints]
    vadr = [model.joint(name).dofadr[0] for name in robot.joints]
    rng = np.random.default_rng(7)
    for _ in range(n):
        q = robot.random_configuration(rng)
        data.qpos[qadr] = q
        data.qvel[:] = 0
        mujoco.mj_forward(model, data)
        for b in range(1, model.nbody):
            pose = robot.frame_pose(model.body(b).name, q)
            np.testing.assert_allclose(data.xpos[b], pose[:3, 3], atol=2e-6)
            np.testing.assert_allclose(data.xmat[b].reshape(3, 3), pose[:3, :3], atol=2e-6)
        M = np.zeros((model.nv, model.nv))
        mujoco.mj_fullM(model, data, M)
        np.testing.assert_allclose(M[np.ix_(vadr, vadr)], robot.mass_matrix(q), atol=1e-5, rtol=1e-5)
        np.testing.assert_allclose(data.qfrc_bias[vadr], robot.static_torque(q), atol=1e-5, rtol=1e-5)


def test_primitive_robot_matches_in_mujoco():
    assembly = ModuleAssembly.from_serial_modules(ModulesDB.from_name("geometric_primitive_modules"), PRIMITIVE_CHAIN)
    assembly.base_placement = _placement()
    text = assembly.to_mjcf("prim")
    model = mujoco.MjModel.from_xml_string(text)
    assert_same_model(assembly, model)
    robot = assembly.robot
    # a torque motor per joint, limited to the module's peak torque
    assert model.nu == robot.dof
    for k, joint in enumerate(robot.joints):
        actuator = model.actuator(f"{joint}_motor")
        assert model.actuator_trnid[actuator.id][0] == model.joint(joint).id
        np.testing.assert_allclose(
            model.actuator_ctrlrange[actuator.id], [-robot.torque_limits[k], robot.torque_limits[k]]
        )
        np.testing.assert_allclose(model.jnt_range[model.joint(joint).id], robot.joint_limits[:, k])
    root = ET.fromstring(text)
    assert root.get("model") == "prim"


def test_contact_excludes_are_the_sets_ignore_rule():
    db = ModulesDB.from_name("geometric_primitive_modules")
    assembly = ModuleAssembly.from_serial_modules(db, PRIMITIVE_CHAIN)
    model = mujoco.MjModel.from_xml_string(assembly.to_mjcf())
    robot = assembly.robot
    frames = robot.model.frames
    gm = robot.collision
    robot.collision_pairs  # noqa: B018 - computes the pairs
    checked = {
        frozenset(
            (
                frames[gm.geometryObjects[p.first].parentFrame].name,
                frames[gm.geometryObjects[p.second].parentFrame].name,
            )
        )
        for p in gm.collisionPairs
    }
    bodies = {frames[g.parentFrame].name for g in gm.geometryObjects}
    excluded = {
        frozenset(
            (
                model.body(int(model.exclude_signature[i]) >> 16).name,
                model.body(int(model.exclude_signature[i]) & 0xFFFF).name,
            )
        )
        for i in range(model.nexclude)
    }
    all_pairs = {frozenset((a, b)) for a in bodies for b in bodies if a != b}
    assert excluded == all_pairs - checked and checked  # MuJoCo collides exactly the pairs timor checks
    assert model.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT
    plain = mujoco.MjModel.from_xml_string(assembly.to_mjcf(options=MJCFOptions(contact_excludes=False)))
    assert plain.nexclude == 0 and not plain.opt.disableflags & mujoco.mjtDisableBit.mjDSBL_FILTERPARENT


def test_unlimited_joints_are_unlimited_in_mujoco(tmp_path):
    data = primitives_json()
    for module in data["modules"]:
        if module["header"]["ID"] == "J1":
            module["joints"][0]["limits"].update(positionLower=-math.inf, positionUpper=math.inf, peakTorque=math.inf)
    path = tmp_path / "modules.json"
    path.write_text(json.dumps(data))
    assembly = ModuleAssembly.from_serial_modules(ModulesDB.from_json_file(path), ["base", "J1", "l_30", "J2", "eef"])
    model = mujoco.MjModel.from_xml_string(assembly.to_mjcf())
    j1, j2 = (model.joint(name) for name in assembly.robot.joints)
    assert not model.jnt_limited[j1.id] and model.jnt_limited[j2.id]
    assert not model.jnt_actfrclimited[j1.id]
    assert not model.actuator_ctrllimited[0] and model.actuator_ctrllimited[1]


def test_improv_robot_with_meshes_written_beside_the_file(tmp_path, improv):
    assembly = ModuleAssembly.from_serial_modules(improv, IMPROV_CHAIN)
    assembly.base_placement = _placement()
    target = tmp_path / "out" / "six.xml"
    text = assembly.to_mjcf("six", write_to=target)
    assert target.read_text() == text
    mesh_dir = tmp_path / "out" / "six_meshes"
    files = {m.get("file") for m in ET.fromstring(text).iter("mesh")}
    assert files and all(f.startswith("six_meshes/") for f in files)  # relative: the folder can move
    assert {f"six_meshes/{p.name}" for p in mesh_dir.iterdir()} == files
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path / "out", moved)
    shutil.rmtree(tmp_path / "out")
    model = mujoco.MjModel.from_xml_path(str(moved / "six.xml"))
    assert_same_model(assembly, model)
    # every VRML convex piece is its own collision mesh (MuJoCo collides meshes as convex hulls)
    pieces = sum(
        len(g.load().parts)
        for m in assembly.modules
        for b in m.bodies
        for g in b.collision
        if getattr(g, "is_convex_decomposition", False)
    )
    assert pieces > 0
    assert sum("_part" in f for f in files) == pieces
    collision_geoms = [g for g in range(model.ngeom) if model.geom_contype[g] or model.geom_conaffinity[g]]
    assert len(collision_geoms) >= pieces


def test_improv_robot_in_memory_uses_absolute_paths(improv):
    assembly = ModuleAssembly.from_serial_modules(improv, IMPROV_CHAIN)
    text = assembly_to_mjcf(assembly)
    files = [m.get("file") for m in ET.fromstring(text).iter("mesh")]
    assert files and all(f.startswith(str(IMPROV_FILE.resolve().parent)) for f in files)
    assert_same_model(assembly, mujoco.MjModel.from_xml_string(text), n=2)


def test_impossible_inertia_is_refused_naming_the_body_or_balanced_on_request(tmp_path):
    data = primitives_json()
    data["modules"][2]["bodies"][1]["inertia"] = [[0.001, 0, 0], [0, 0.001, 0], [0, 0, 0.003]]
    assembly = ModuleAssembly.from_serial_modules(ModulesDB.from_json_file(write_db(tmp_path, data)), PRIMITIVE_CHAIN)
    with pytest.raises(MJCFError) as err:
        assembly.to_mjcf()
    assert "module 'J2', body 'J2_distal'" in str(err.value) and "balance" in str(err.value)
    model = mujoco.MjModel.from_xml_string(assembly.to_mjcf(options=MJCFOptions(balance_inertia=True)))
    assert model.body_mass.sum() == pytest.approx(assembly.robot.mass)
    with pytest.raises(InputError, match="actuators"):
        assembly.to_mjcf(options=MJCFOptions(actuators="servo"))


def test_urdf_with_plain_paths_loads_in_mujoco_and_urdfdom(tmp_path, improv):
    assembly = ModuleAssembly.from_serial_modules(improv, IMPROV_CHAIN)
    path = tmp_path / "six.urdf"
    text = assembly.to_urdf("six", mesh_uri="path", write_to=path)
    assert "file://" not in text and str(IMPROV_FILE.resolve().parent) in text
    check_urdf_file(path)
    model = mujoco.MjModel.from_xml_path(str(path))
    assert model.nq == assembly.robot.dof and model.nmesh > 0


def test_cli_mjcf(tmp_path, capsys):
    out = tmp_path / "bot.xml"
    assert main(["mjcf", "robco_like", "base", "J", "I_300", "J", "L_200", "J", "gripper", "-o", str(out)]) == 0
    assert "wrote" in capsys.readouterr().err
    model = mujoco.MjModel.from_xml_path(str(out))
    assert model.nu == 3
    assert (
        main(["mjcf", "--db", "geometric_primitive_modules", "--modules", *PRIMITIVE_CHAIN, "--actuators", "none"]) == 0
    )
    assert mujoco.MjModel.from_xml_string(capsys.readouterr().out).nu == 0
    assert main(["mjcf", "geometric_primitive_modules", "base", "J1", "-o", str(tmp_path), "--name", "x"]) == 2
    assert capsys.readouterr().err.startswith("error: ")
