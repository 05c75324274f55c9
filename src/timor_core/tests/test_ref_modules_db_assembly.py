"""Compatibility suite (issue 13 item 12): the reference toolbox's tests/test_modulesDB.py and tests/test_assembly.py
(timor-python 1.1.1) ported to timor_core's API, keeping each test's intent and tolerances.

Deliberate differences are marked ``deliberate difference``; features timor_core lacks are strict xfails.
"""

from __future__ import annotations

import random
import time

import networkx as nx
import numpy as np
import pytest

from timor_core import AssemblyError, ConnectorError, ModuleAssembly, ModulesDB
from timor_core.model.parametric import ParametricModule

IMPROV_SIX = ["1", "21", "4", "21", "5", "23", "7", "12"]
IMPROV_CONNECTIONS = [
    (1, "21_proximal_connector", 0, "base_out"),
    (2, "4_proximal_connector", 1, "21_distal_connector"),
    (3, "21_proximal_connector", 2, "4_distal_connector"),
    (4, "5_proximal_connector", 3, "21_distal_connector"),
    (5, "23_proximal_connector", 4, "5_distal_connector"),
    (6, "7_proximal_connector", 5, "23_distal_connector"),
    (7, "12_proximal_connector", 6, "7_distal_connector"),
]


# -- test_modulesDB.py ------------------------------------------------------------------------------------------


def test_dump_json(improv):
    """ref: test_modulesDB.py::test_dump_json"""
    text = improv.to_json_string()
    again = ModulesDB.from_json_string(text, name=improv.name, base_dir=improv.base_dir)
    assert again.to_json_string() == text
    assert again.all_module_ids == improv.all_module_ids
    assert nx.is_isomorphic(improv.connectivity_graph, again.connectivity_graph)


def test_empty(primitives):
    """ref: test_modulesDB.py::test_empty"""
    assembly = ModuleAssembly(ModulesDB([], name="empty"))
    with pytest.raises(AssemblyError, match="empty assembly"):
        assembly.robot  # noqa: B018  deliberate difference: an empty assembly has no robot (the reference builds one)
    with pytest.raises(LookupError):
        assembly.add_random_from_db()  # the set is empty


def test_equality(improv, primitives):
    """ref: test_modulesDB.py::test_equality"""
    assert improv != primitives and improv == improv and primitives == primitives
    assert improv != ModulesDB(tuple(improv))  # a different (empty) name
    assert improv == ModulesDB(tuple(improv), name=improv.name, ignore_collisions=improv.ignore_collisions)
    assert primitives == ModulesDB(tuple(primitives), name=primitives.name)


def test_load_all_from_file(improv):
    """ref: test_modulesDB.py::test_load_all_from_file (every set timor ships, and IMPROV from ../shared)"""
    from timor_core import embedded_db_names

    for name in embedded_db_names():
        assert len(ModulesDB.from_name(name)) > 0
    assert len(improv) > 0


def test_jointless_robot(primitives):
    """ref: test_modulesDB.py::test_jointless_robot"""
    assembly = ModuleAssembly.from_serial_modules(primitives, ["base"] + ["l_15"] * 5)
    robot = assembly.robot
    assert robot.dof == 0 and robot.mass == pytest.approx(assembly.mass)
    assert robot.fk().shape == (4, 4)  # deliberate difference: a 4x4 array, not a Transformation
    far = np.eye(4)
    far[:3, 3] = (9, 9, 9)
    q, success = robot.ik(far)
    assert isinstance(q, np.ndarray) and q.size == 0 and not success
    q, success = robot.ik(robot.fk())
    assert success and q.size == 0


def test_possible_connections(improv):
    """ref: test_modulesDB.py::test_possible_connections"""
    # deliberate difference: timor_core lists every pair both ways (A->B and B->A), so a lookup needs no
    # normalisation; the intent (every module connects to another, random robots assemble) is kept
    possible = improv.possible_connections
    assert all((b, cb, a, ca) in possible for a, ca, b, cb in possible)
    for module in improv:
        assert any(a == module.id and b != module.id for a, _, b, _ in possible)
    rng = random.Random(123)
    for k in range(10):
        base = rng.choice(improv.bases)
        assembly = ModuleAssembly(improv)
        assembly.start_with(base.id)
        for _ in range(5):
            assembly.add_random_from_db(lambda m: m not in improv.bases and m not in improv.end_effectors, rng=k)
        assert len(assembly) == 6 and assembly.is_tree


def test_robot_from_assembly(improv):
    """ref: test_modulesDB.py::test_robot_from_assembly"""
    assembly = ModuleAssembly(improv)
    for k in range(12):
        assembly.add_random_from_db(lambda m: m not in improv.end_effectors, rng=k)
    robot = assembly.robot
    assert robot.mass == pytest.approx(assembly.mass)
    robot.fk(robot.random_configuration(np.random.default_rng(0)))
    joints = [j for m in assembly.modules for j in m.joints if j.actuated]
    model = robot.model
    for j in joints:  # the joint dynamics reach the Pinocchio model
        if j.gear_ratio is not None and j.motor_inertia is not None:
            assert np.any(np.isclose(model.armature, j.motor_inertia * j.gear_ratio**2))
        if j.friction_viscous is not None:
            assert j.friction_viscous in model.damping
        if j.friction_coulomb is not None:
            assert j.friction_coulomb in model.friction


# -- test_assembly.py -------------------------------------------------------------------------------------------


def test_graph_features(improv):
    """ref: test_assembly.py::test_graph_features"""
    assembly = ModuleAssembly(improv)
    for k in range(12):
        assembly.add_random_from_db(lambda m: m not in improv.end_effectors, rng=k)
    G = assembly.module_graph
    adjacency = nx.to_numpy_array(G, dtype=int)
    assert 2 * len(assembly.connections) == adjacency.sum()
    assert G.number_of_nodes() == len(assembly)
    assert nx.is_connected(G)
    assert not np.any(np.diag(adjacency))  # no self-loops
    assert nx.is_weakly_connected(assembly.graph)


def test_modules_assembly(improv):
    """ref: test_assembly.py::test_modules_assembly"""
    assembly = ModuleAssembly(improv, IMPROV_SIX, IMPROV_CONNECTIONS)
    assert ModuleAssembly(improv, IMPROV_SIX, list(reversed(IMPROV_CONNECTIONS))) == assembly  # order invariant
    # deliberate difference: timor_core raises its typed errors (AssemblyError, ConnectorError, UnknownModuleError)
    with pytest.raises(AssemblyError):  # a loose module (two free base connectors)
        ModuleAssembly(improv, [*IMPROV_SIX, "1"], IMPROV_CONNECTIONS)
    with pytest.raises(AssemblyError, match="out of range"):
        ModuleAssembly(improv, IMPROV_SIX, [*IMPROV_CONNECTIONS, (8, "12_distal_connector", 9, "base")])
    with pytest.raises(AssemblyError):
        ModuleAssembly(improv, IMPROV_SIX, [*IMPROV_CONNECTIONS[:-1], (7, "12_proximal_connector", -1, "")])
    with pytest.raises((AssemblyError, ConnectorError, KeyError)):
        ModuleAssembly(improv, IMPROV_SIX, [*IMPROV_CONNECTIONS[:-1], (7, "hulu", 6, "7_distal_connector")])
    with pytest.raises((AssemblyError, ConnectorError)):  # a base module attached to the end effector
        ModuleAssembly(improv, [*IMPROV_SIX, "1"], [*IMPROV_CONNECTIONS, (7, "12_distal_connector", 8, "base")])

    grown = ModuleAssembly(improv)
    grown.add_random_from_db(rng=1)
    grown.add_random_from_db(rng=2)
    assert grown.base_connector is not None and len(grown) == 2
    again = ModuleAssembly.from_json_string(improv, grown.to_json_string())
    assert again == grown
    try:
        again.add_random_from_db(rng=3)
    except LookupError:  # nothing fits: take a module away instead
        again = ModuleAssembly(improv, again.module_ids[:1])
    assert again != grown
    full = ModuleAssembly.from_serial_modules(improv, IMPROV_SIX)  # ends in an end effector: no free connector
    with pytest.raises(LookupError):
        full.add_random_from_db()


def test_parameterizable_assembly(primitives):
    """ref: test_assembly.py::test_parameterizable_assembly"""
    size = (0.08,)
    cylinder = ParametricModule("cylinder_link", "cylinder", (1.0, 1.0), connector_size=size)
    l_shaped = ParametricModule("orthogonal_link", "L", (0.2, 1.0, 3.0), connector_size=size)
    straight = ParametricModule("straight_joint", "J1", (0.1, 1.0), joint_type="prismatic", connector_size=size)
    orthogonal = ParametricModule("orthogonal_joint", "J2", (0.1, 1.0, 1.0), connector_size=size)
    db = ModulesDB(
        [primitives["base"], *(m.freeze() for m in (cylinder, l_shaped, straight, orthogonal))], name="param"
    )
    assembly = ModuleAssembly.from_serial_modules(db, ("base", "cylinder", "J1", "L", "J2"))
    assert nx.is_connected(assembly.module_graph) and nx.is_weakly_connected(assembly.graph)
    robot = assembly.robot
    assert robot.mass == pytest.approx(assembly.mass)
    fk = robot.fk(np.zeros(2))
    move_up = 0.3
    moved = robot.fk(np.array((move_up, 0.0)))
    assert fk[2, 3] == pytest.approx(moved[2, 3] - move_up)
    assert np.allclose(fk[:2, 3], moved[:2, 3]) and np.allclose(fk[:3, :3], moved[:3, :3])
    turned = robot.fk(np.array((0.0, np.pi)))
    # the elbow joint's half turn swings the last cylinder (l2) and the TCP at its free connector around the
    # joint axis: the TCP moves by 2 * l2 (the reference asserts this along world z for its chain)
    assert np.linalg.norm(turned[:3, 3] - fk[:3, 3]) == pytest.approx(2 * orthogonal.named_parameters["l2"])
    assert not robot.has_self_collision(np.zeros(2))


def test_robot_property(improv):
    """ref: test_assembly.py::test_robot_property"""
    assembly = ModuleAssembly(improv)
    for k in range(3):
        assembly.add_random_from_db(lambda m: m not in improv.end_effectors, rng=k)
    t0 = time.perf_counter()
    robot = assembly.robot
    t1 = time.perf_counter()
    assert assembly.robot is robot
    t2 = time.perf_counter()
    assert t2 - t1 < t1 - t0 and t2 - t1 < 1e-3  # cached
    assembly.add_random_from_db(rng=4)
    assert assembly.robot is not robot  # a change resets the cache
    robot = assembly.robot
    _ = (assembly.mass, len(assembly), assembly.dof, assembly.graph, assembly.module_graph)
    assert assembly.robot is robot  # reading does not


@pytest.mark.xfail(
    strict=True, raises=AttributeError, reason="missing feature: export of an assembly in a configuration to a trimesh"
)
def test_export_to_trimesh(improv):
    """ref: test_assembly.py::test_export_to_trimesh"""
    assembly = ModuleAssembly.from_serial_modules(improv, IMPROV_SIX)
    mesh = assembly.export_to_trimesh()  # type: ignore[attr-defined]
    assert mesh is not None
