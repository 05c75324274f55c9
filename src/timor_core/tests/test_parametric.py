"""Parameterizable modules (issue 13 item 12): geometry, inertia checked against trimesh's mass properties of
the same solids, DH/MDH chains checked against the textbook products, resizing within limits, JSON round trip."""

from __future__ import annotations

import math

import numpy as np
import pytest
import trimesh
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core import InputError, ModuleAssembly, ModulesDB
from timor_core.common.transforms import rot_x, rot_z, translation
from timor_core.model.parametric import KINDS, ParametricModule, solid_inertia

SIZE = (0.08,)  # the embedded primitives' connector size, so parametric modules join base and eef


def _db(*modules: ParametricModule) -> ModulesDB:
    base = ModulesDB.from_name("geometric_primitive_modules")
    return ModulesDB([base["base"], base["eef"], *(m.freeze() for m in modules)], name="parametric")


def _dh(d, a, alpha, theta):
    return rot_z(theta) @ translation((0, 0, d)) @ translation((a, 0, 0)) @ rot_x(alpha)


def _mdh(d, a, alpha, theta):
    return rot_x(alpha) @ translation((a, 0, 0)) @ translation((0, 0, d)) @ rot_z(theta)


@settings(max_examples=15, deadline=None)
@given(
    st.lists(
        st.tuples(st.floats(0.0, 0.5), st.floats(0.0, 0.5), st.floats(-3.1, 3.1), st.floats(-3.0, 3.0)),
        min_size=1,
        max_size=5,
    ),
    st.sampled_from(["DH", "MDH"]),
)
def test_dh_chains_give_the_dh_product(rows, convention):
    modules = [
        ParametricModule("dh_joint", f"j{k}", (0.03, d, a, alpha), convention=convention, connector_size=SIZE)
        for k, (d, a, alpha, _) in enumerate(rows)
    ]
    db = _db(*modules)
    robot = ModuleAssembly.from_serial_modules(db, ["base", *(m.module_id for m in modules), "eef"]).robot
    q = np.array([theta for *_, theta in rows])
    base_out = next(c for c in db["base"].connectors.values() if c.type != "base")
    expected = base_out.pose.copy()  # the base module's body frame is the world frame
    for d, a, alpha, theta in rows:
        expected = expected @ (_dh if convention == "DH" else _mdh)(d, a, alpha, theta)
    eef = db["eef"]
    tcp = next(c for c in eef.connectors.values() if c.type == "eef")
    proximal = next(c for c in eef.connectors.values() if c.type != "eef")
    # the eef module sits on the last frame: its proximal connector is turned by pi about x onto it
    expected = expected @ np.linalg.inv(proximal.pose @ rot_x(math.pi)) @ tcp.pose
    np.testing.assert_allclose(robot.fk(q), expected, atol=1e-9)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_mass_and_inertia_match_trimesh(kind):
    params = {"cylinder_link": (0.05, 0.3), "orthogonal_link": (0.05, 0.2, 0.3), "straight_joint": (0.05, 0.3),
              "orthogonal_joint": (0.05, 0.2, 0.25), "dh_joint": (0.04, 0.3, 0.2, 1.0)}[kind]  # fmt: skip
    module = ParametricModule(kind, "m", params, density=2700.0).freeze()
    for body in module.bodies:
        meshes = []
        for g in body.collision:
            if type(g).__name__ == "Cylinder":
                mesh = trimesh.creation.cylinder(radius=g.r, height=g.z, sections=512)
            else:
                mesh = trimesh.creation.icosphere(subdivisions=6, radius=g.r)
            mesh.apply_transform(g.pose)
            meshes.append(mesh)
        if not meshes:
            assert body.mass == 0.0
            continue
        mass = sum(m.volume for m in meshes) * 2700.0
        com = sum(m.volume * m.center_mass for m in meshes) * 2700.0 / mass
        inertia = np.zeros((3, 3))
        for m in meshes:
            m.density = 2700.0
            d = m.center_mass - com
            inertia += m.moment_inertia + m.mass * (d @ d * np.eye(3) - np.outer(d, d))
        assert body.mass == pytest.approx(mass, rel=1e-3)
        np.testing.assert_allclose(body.r_com, com, atol=1e-4)
        np.testing.assert_allclose(body.inertia, inertia, rtol=2e-3, atol=1e-6 * np.abs(inertia).max())


def test_solid_inertia_formulas():
    m, inertia = solid_inertia("box", (1.0, 2.0, 3.0), 10.0)
    assert m == 60.0 and np.allclose(np.diag(inertia), [65.0, 50.0, 25.0])
    m, inertia = solid_inertia("sphere", (0.5,), 1.0)
    assert m == pytest.approx(4 / 3 * math.pi / 8) and np.allclose(inertia, np.eye(3) * 0.4 * m * 0.25)


def test_joint_modules_move_and_links_do_not():
    straight = ParametricModule("straight_joint", "s", (0.05, 0.4), joint={"limits": {"positionLower": -1.0}})
    assert straight.freeze().dof == 1 and straight.freeze().joints[0].limits.lower == -1.0
    prismatic = ParametricModule("straight_joint", "p", (0.05, 0.4), joint_type="prismatic")
    assert prismatic.freeze().joints[0].type == "prismatic"
    assert ParametricModule("cylinder_link", "c", (0.05, 0.4)).freeze().dof == 0
    # DH (default): the axis runs along the first cylinder, the second sticks out sideways and swings around it
    ortho = ParametricModule("orthogonal_joint", "o", (0.05, 0.2, 0.3), connector_size=SIZE)
    robot = ModuleAssembly.from_serial_modules(_db(ortho), ["base", "o", "eef"]).robot
    axis = robot.jacobian(np.zeros(1), reference="world_aligned")[3:, 0]
    assert np.allclose(np.abs(axis), [0, 0, 1])
    a, b = robot.fk(np.zeros(1))[:3, 3], robot.fk(np.array([np.pi]))[:3, 3]
    assert a[2] == pytest.approx(b[2]) and np.linalg.norm(a[:2] - b[:2]) > 0.6  # 2 * (0.3 + eef length)
    # MDH: the axis is turned, perpendicular to the first cylinder
    mdh = ParametricModule("orthogonal_joint", "o", (0.05, 0.2, 0.3), connector_size=SIZE, convention="MDH")
    robot = ModuleAssembly.from_serial_modules(_db(mdh), ["base", "o", "eef"]).robot
    axis = robot.jacobian(np.zeros(1), reference="world_aligned")[3:, 0]
    assert abs(axis @ [0, 0, 1]) < 1e-12 and np.linalg.norm(axis) == pytest.approx(1.0)


def test_resize_checks_limits_and_keeps_the_rest():
    link = ParametricModule("cylinder_link", "c", (0.05, 0.3), limits=((0.01, 0.1), (0.1, 1.0)), density=1000.0)
    longer = link.resize((0.05, 0.6))
    assert longer.parameters == (0.05, 0.6) and longer.density == 1000.0 and link.parameters == (0.05, 0.3)
    assert longer.freeze().mass == pytest.approx(2 * link.freeze().mass)
    assert longer.named_parameters == {"radius": 0.05, "length": 0.6}
    with pytest.raises(InputError, match="length"):
        link.resize((0.05, 1.5))
    with pytest.raises(InputError, match="takes 2 parameters"):
        link.resize((0.05,))
    with pytest.raises(InputError, match="kind"):
        ParametricModule("hexagon", "h", (1.0,))
    with pytest.raises(InputError, match="radius must be positive"):
        ParametricModule("cylinder_link", "c", (0.0, 0.3))
    with pytest.raises(InputError, match="dh_joint"):
        ParametricModule("dh_joint", "d", (0.05, 0.1, 0.1, 0.0), joint_type="prismatic")


def test_frozen_modules_round_trip_through_json(tmp_path):
    modules = [
        ParametricModule(kind, kind, params, connector_size=SIZE, density=1500.0)
        for kind, params in [
            ("straight_joint", (0.04, 0.3)),
            ("orthogonal_link", (0.04, 0.2, 0.1)),
            ("dh_joint", (0.04, 0.2, 0.1, 0.5)),
        ]  # fmt: skip
    ]
    db = _db(*modules)
    saved = db.to_json_file(tmp_path / "parametric" / "modules.json")
    assert ModulesDB.from_json_file(saved) == db
    assembly = ModuleAssembly.from_serial_modules(db, ["base", "straight_joint", "orthogonal_link", "dh_joint", "eef"])
    assert assembly.robot.dof == 2
    assembly.to_urdf("param", write_to=tmp_path / "param.urdf")  # checked by urdfdom after the test
