"""ModulesDB (load, save, connectivity) and ModuleAssembly (construction, graph, JSON)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import networkx as nx
import numpy as np
import pytest
from conftest import EMBEDDED, primitives_json, write_db
from hypothesis import given
from hypothesis import strategies as st

import timor_core
from timor_core import ModuleAssembly, ModulesDB, connectors_compatible, modules_compatible
from timor_core.common.transforms import IDENTITY
from timor_core.errors import AssemblyError, ConnectorError, InputError, UnknownModuleError
from timor_core.model.module import Connector

PAPER_IDS = ("base", "J2", "i_45", "J2", "J2", "eef")


def test_paper_code_sample_runs_as_written():
    """The paper's sample with only the import changed (db_file = the embedded primitives)."""
    from timor_core import ModuleAssembly, ModulesDB

    db_file = EMBEDDED / "geometric_primitive_modules" / "modules.json"
    db = ModulesDB.from_json_file(db_file)
    A = ModuleAssembly.from_serial_modules(db, ("base", "J2", "i_45", "J2", "J2", "eef"))
    q0 = A.robot.random_configuration()
    assert q0.shape == (3,)
    lo, hi = A.robot.joint_limits
    assert np.all(q0 >= lo) and np.all(q0 <= hi)
    assert A.robot.fk(np.zeros(3))[2, 3] == pytest.approx(1.2)  # straight up: 0.1 + 0.2 + 0.45 + 0.2 + 0.2 + 0.05


@pytest.mark.parametrize("name", timor_core.embedded_db_names())
def test_embedded_sets_round_trip_losslessly(name, tmp_path):
    db = ModulesDB.from_name(name)
    out = db.to_json_file(tmp_path / name / "modules.json")  # a set's name is its folder's
    again = ModulesDB.from_json_file(out)
    assert again == db
    assert ModulesDB.from_json_file(out, name="other") != db  # equality includes the name
    assert again.to_json_data() == json.loads((EMBEDDED / name / "modules.json").read_text())


def test_improv_round_trip_copies_meshes(improv, tmp_path):
    out = improv.to_json_file(tmp_path / "IMPROV" / "modules.json")
    again = ModulesDB.from_json_file(out)
    assert again == improv
    meshes = again.meshes()
    assert meshes and all(m.path.is_file() and m.path.is_relative_to(tmp_path) for m in meshes)
    # the saved file is the original data (apart from formatting)
    original = json.loads(improv.source.read_text())
    assert again.to_json_data() == original


def test_unknown_fields_survive_round_trip(tmp_path):
    data = primitives_json()
    data["modules"][0]["header"]["vendor"] = {"sku": "X-1"}
    data["modules"][0]["bodies"][0]["material"] = "steel"
    data["modules"][1]["joints"][0]["limits"]["jerk"] = 100.0
    data["comment"] = "kept"
    db = ModulesDB.from_json_file(write_db(tmp_path, data))
    assert db.to_json_data() == data


def test_db_queries(primitives):
    assert [m.id for m in primitives.bases] == ["base"]
    assert [m.id for m in primitives.end_effectors] == ["eef"]
    assert {m.id for m in primitives.joints} == {"J1", "J2", "P1"}
    assert primitives.by_id("J2").dof == 1
    assert primitives.by_name("J2").id == "J2"
    assert "i_45" in primitives and len(primitives) == 11
    # σ_c / σ_m and G_c
    pc = primitives.possible_connections
    assert ("base", "base_out", "J2", "J2_proximal_connector") in pc
    assert ("J2", "J2_proximal_connector", "base", "base_out") in pc
    assert not any(a == "eef" and ca == "eef_tcp" for a, ca, _, _ in pc)
    G = primitives.connectivity_graph
    assert set(G.nodes) == set(primitives.ids)
    assert G.number_of_edges() == len(pc) // 2
    assert modules_compatible(primitives["base"], primitives["eef"])
    assert not modules_compatible(primitives["eef"], primitives["eef"])  # f input and eef flange: nothing fits


def _connector(gender: str, ctype: str = "x", size=(1.0,)) -> Connector:
    return Connector("c", "b", IDENTITY, gender, ctype, tuple(size))


@given(
    g1=st.sampled_from("mfh"),
    g2=st.sampled_from("mfh"),
    t1=st.sampled_from(["a", "b", "base", "eef"]),
    t2=st.sampled_from(["a", "b", "base", "eef"]),
    s1=st.sampled_from([(1.0,), (2.0,), ()]),
    s2=st.sampled_from([(1.0,), (2.0,), ()]),
)
def test_connector_compatibility_rules(g1, g2, t1, t2, s1, s2):
    a, b = _connector(g1, t1, s1), _connector(g2, t2, s2)
    fits = connectors_compatible(a, b)
    assert fits == connectors_compatible(b, a)  # symmetric
    expected = t1 == t2 and t1 not in ("base", "eef") and s1 == s2 and {g1, g2} in ({"m", "f"}, {"h"})
    assert fits == expected


def test_serial_add_and_explicit_constructions_are_equal(primitives):
    serial = ModuleAssembly.from_serial_modules(primitives, PAPER_IDS)
    grown = ModuleAssembly(primitives, ["base"])
    k = 0
    for mid in PAPER_IDS[1:]:
        free = [c.id for c in grown.modules[k].connectors.values() if c.gender == "m"]
        k = grown.add(mid, (k, free[0]))
    explicit = ModuleAssembly(primitives, list(PAPER_IDS), serial.connections, (0, "base"))
    assert serial == grown == explicit
    assert serial.to_urdf() == grown.to_urdf() == explicit.to_urdf()


def test_several_instances_have_distinct_deterministic_names(primitives):
    ids = ("base", "J1", "J1", "J1", "i_15", "i_15", "J2", "eef")
    A = ModuleAssembly.from_serial_modules(primitives, ids)
    root = ET.fromstring(A.to_urdf())
    links = [e.get("name") for e in root.iter("link")]
    joints = [e.get("name") for e in root.iter("joint")]
    assert len(set(links)) == len(links) and len(set(joints)) == len(joints)
    assert A.robot.joints == ["m1_J1_joint", "m2_J1_joint", "m3_J1_joint", "m6_J2_joint"]
    again = ModuleAssembly.from_serial_modules(primitives, ids)
    assert again.to_urdf() == A.to_urdf()


def test_assembly_json_round_trip(primitives, tmp_path):
    placement = np.eye(4)
    placement[:3, 3] = (1.0, 2.0, 0.5)
    A = ModuleAssembly.from_serial_modules(primitives, PAPER_IDS, base_placement=placement)
    path = A.to_json_file(tmp_path / "a.json")
    B = ModuleAssembly.from_json_file(primitives, path)
    assert A == B
    np.testing.assert_allclose(B.robot.fk(np.zeros(3))[:3, 3], (1.0, 2.0, 1.7))
    # without moduleConnection: a serial chain
    C = ModuleAssembly.from_json_data(primitives, {"moduleOrder": list(PAPER_IDS)})
    assert C.connections == A.connections


def test_assembly_graph_transforms(primitives):
    A = ModuleAssembly.from_serial_modules(primitives, PAPER_IDS)
    G = A.graph
    assert isinstance(G, nx.DiGraph) and "world" in G
    tcp = A.transform("world", (5, "connector", "eef_tcp"))
    np.testing.assert_allclose(tcp, A.robot.fk(np.zeros(3)), atol=1e-12)
    # connected connectors are related by a rotation of pi about x
    a = A.transform("world", (0, "connector", "base_out"))
    b = A.transform("world", (1, "connector", "J2_proximal_connector"))
    np.testing.assert_allclose(np.linalg.inv(a) @ b, np.diag([1.0, -1.0, -1.0, 1.0]), atol=1e-12)
    # transforms compose: A->B->C == A->C
    mid = (2, "body", "i_45_body")
    np.testing.assert_allclose(
        A.transform("world", mid) @ A.transform(mid, (5, "body", "eef_body")),
        A.transform("world", (5, "body", "eef_body")),
        atol=1e-12,
    )
    with pytest.raises(AssemblyError):
        A.transform("world", (9, "body", "nope"))


def test_module_graph(primitives):
    G = primitives["J2"].graph
    assert ("joint", "J2_joint") in G
    T = G.edges[("body", "J2_proximal"), ("joint", "J2_joint")]["transform"]
    back = G.edges[("joint", "J2_joint"), ("body", "J2_proximal")]["transform"]
    np.testing.assert_allclose(T @ back, np.eye(4), atol=1e-12)


def test_closed_chain_is_refused_for_urdf(tmp_path):
    data = primitives_json()
    link = next(m for m in data["modules"] if m["header"]["ID"] == "i_15")
    # a link with a second input makes a loop possible: base -> J1 -> i_15 <- ... we join J1's output twice
    link["bodies"][0]["connectors"].append(
        {**link["bodies"][0]["connectors"][0], "ID": "i_15_extra_in", "pose": np.eye(4).tolist()}
    )
    db = ModulesDB.from_json_file(write_db(tmp_path, data))
    ids = ["base", "i_15", "J1", "i_15"]
    conns = [
        (0, "base_out", 1, "i_15_proximal_connector"),
        (1, "i_15_distal_connector", 2, "J1_proximal_connector"),
        (2, "J1_distal_connector", 3, "i_15_proximal_connector"),
        (3, "i_15_distal_connector", 1, "i_15_extra_in"),
    ]
    A = ModuleAssembly(db, ids, conns, (0, "base"))
    assert not A.is_tree
    with pytest.raises(AssemblyError, match="closed"):
        A.to_urdf()


def test_from_serial_errors(primitives):
    with pytest.raises(ConnectorError):
        ModuleAssembly.from_serial_modules(primitives, ("base", "eef", "J2"))
    with pytest.raises(timor_core.UnknownModuleError, match="nope"):
        ModuleAssembly.from_serial_modules(primitives, ("base", "nope"))


def test_set_equality_ignores_spelled_out_defaults_but_not_the_name():
    """Issue 13 item 11: equal sets are equal however their defaults were written; a different name differs."""
    data = primitives_json()
    data["ignore_collisions"] = "rigid_via_joint"
    terse = primitives_json()
    terse.pop("ignore_collisions", None)
    for module in terse["modules"]:
        for joint in module.get("joints", []):
            joint.pop("passive", None)
        for body in module["bodies"]:
            for key in ("visual", "collision"):
                if body.get(key) == []:
                    body.pop(key)
    a = ModulesDB.from_json_data(data, name="set")
    assert a == ModulesDB.from_json_data(terse, name="set")
    assert a != ModulesDB.from_json_data(data, name="another")
    changed = primitives_json()
    changed["modules"][1]["bodies"][0]["mass"] += 0.001
    assert a != ModulesDB.from_json_data(changed, name="set")


def test_one_string_of_ids_is_refused_naming_the_argument(primitives):
    """``from_serial_modules(db, "base J2 eef")`` was read one character per module: ``no module with ID 'b'``."""
    for make, argument in ((lambda ids: ModuleAssembly.from_serial_modules(primitives, ids), "module_ids"),
                           (lambda ids: ModuleAssembly(primitives, ids), "assembly_modules")):  # fmt: skip
        with pytest.raises(InputError, match=f"{argument} must be a sequence of module IDs, not one string") as info:
            make("base J2 eef")
        assert info.value.path == argument and info.value.value == "base J2 eef"
        with pytest.raises(UnknownModuleError, match="'J9'"):
            make(["base", "J9", "eef"])
    assert ModuleAssembly.from_serial_modules(primitives, "base J2 eef".split()).module_ids == ["base", "J2", "eef"]
