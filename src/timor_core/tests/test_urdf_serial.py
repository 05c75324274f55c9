"""The compiled URDF writer for serial chains (export.urdf_serial) gives exactly the general writer's bytes.

``urdf_of_serial(db, ids)`` and ``from_serial_modules(db, ids).to_urdf()`` (which routes serial chains to the
compiled writer) against ``tree_to_urdf`` (the writer that walks the kinematic tree), on the Science Robotics
2019 space of experiment 1, on the embedded module sets, on chains the compiled writer must hand over
(branching modules, exits on a middle body, clashing names), and for the errors.
"""

from __future__ import annotations

import pickle
import random

import numpy as np
import pytest
from conftest import primitives_json, write_db
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core.errors import TimorError
from timor_core.export.urdf import tree_to_urdf
from timor_core.export.urdf_serial import serial_assembly_urdf, urdf_of_serial
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB
from timor_core.paper.experiments import exp1_space

OPTIONS = (
    {},
    {"prefix": "left_", "mesh_uri": "package"},
    {"mesh_uri": "relative", "wrl": "keep"},
    {"name": "my.robot", "mesh_uri": "path"},
    {"package": "pkg", "mesh_uri": "package", "prefix": "r2_"},
)
PLACED = np.array([[0.0, -1.0, 0.0, 0.1], [1.0, 0.0, 0.0, -0.2], [0.0, 0.0, 1.0, 0.3], [0.0, 0.0, 0.0, 1.0]])


def _general(db: ModulesDB, ids, placement=None, name=None, **options) -> str:
    return tree_to_urdf(ModuleAssembly.from_serial_modules(db, ids, placement), name, **options)


def _same(db: ModulesDB, ids, placement=None, name=None, **options) -> str:
    """All three ways give the same text; return it."""
    expected = _general(db, ids, placement, name, **options)
    assert urdf_of_serial(db, ids, name, base_placement=placement, **options) == expected
    assert ModuleAssembly.from_serial_modules(db, ids, placement).to_urdf(name, **options) == expected
    return expected


def _outcome(fn):
    try:
        return fn()
    except TimorError as exc:
        return (type(exc), str(exc))


def _serial_chains(db: ModulesDB, count: int, seed: int) -> list[list[str]]:
    rng, found = random.Random(seed), []
    while len(found) < count:
        ids = [rng.choice(db.ids) for _ in range(rng.randint(1, 9))]
        try:
            ModuleAssembly.from_serial_modules(db, ids).tree()
        except TimorError:
            continue
        found.append(ids)
    return found


def test_science2019_space_is_byte_identical(improv):
    space = exp1_space(improv)
    for k, ids in enumerate(space.iter()):
        if k % 97 == 0:
            _same(improv, ids, **OPTIONS[(k // 97) % len(OPTIONS)])
        if k % 997 == 0:
            _same(improv, ids, PLACED)


@pytest.mark.parametrize("set_name", ["geometric_primitive_modules", "robco_like"])
def test_embedded_sets_are_byte_identical(set_name):
    db = ModulesDB.from_name(set_name)
    for k, ids in enumerate(_serial_chains(db, 150, seed=3)):
        _same(db, ids, PLACED if k % 10 == 0 else None, **OPTIONS[k % len(OPTIONS)])


def test_no_kinematic_tree_is_built(robco, monkeypatch):
    ids = _serial_chains(robco, 1, seed=5)[0]
    expected = _general(robco, ids)

    def no_tree(self, prefix=""):
        raise AssertionError("the compiled writer must not build the kinematic tree")

    monkeypatch.setattr(ModuleAssembly, "tree", no_tree)
    assert urdf_of_serial(robco, ids) == expected
    assert ModuleAssembly.from_serial_modules(robco, ids).to_urdf() == expected


def test_errors_are_those_of_the_general_path(primitives):
    cases = [
        (["base", "J1", "nope"], {}),
        ([], {}),
        (["base", "eef", "J1"], {}),  # nothing fits after the end effector
        (["J1", "J2"], {}),  # no base first
        (["base", "J1", "eef"], {"mesh_uri": "ftp"}),
        (["base", "J1", "eef"], {"prefix": "bad prefix"}),
        (["base", "J1", "eef"], {"name": "../x"}),
        (["base", "J1", "eef"], {"wrl": "drop"}),
        (["base", "nope"], {"mesh_uri": "ftp"}),
    ]
    for ids, options in cases:
        name = options.pop("name", None)
        general = _outcome(lambda: _general(primitives, ids, None, name, **options))
        assert isinstance(general, tuple), (ids, options)
        assert _outcome(lambda: urdf_of_serial(primitives, ids, name, **options)) == general
    bad_placement = np.eye(4) * 2
    general = _outcome(lambda: _general(primitives, ["base", "J1"], bad_placement))
    assert _outcome(lambda: urdf_of_serial(primitives, ["base", "J1"], base_placement=bad_placement)) == general


def _joint_module(data: dict, module_id: str) -> dict:
    return next(m for m in data["modules"] if m["header"]["ID"] == module_id)


def test_handed_over_chains_are_byte_identical(tmp_path):
    """Chains whose links are not in module order, or whose names could clash: the general writer decides."""
    data = primitives_json()
    j1 = _joint_module(data, "J1")
    side = dict(j1["bodies"][1]["connectors"][0], ID="J1_side")  # a second output, on the proximal body
    j1["bodies"][0]["connectors"].append(side)
    j2 = _joint_module(data, "J2")  # a branching module: two distal bodies on one proximal body
    extra = dict(j2["bodies"][1], ID="J2_extra", connectors=[])
    j2["bodies"].append(extra)
    j2["joints"].append(dict(j2["joints"][0], ID="J2_joint_b", child="J2_extra"))
    _joint_module(data, "P1")["joints"][0]["ID"] = "to_m2"  # its URDF name m1_to_m2 is that of a connection
    db = ModulesDB.from_json_file(write_db(tmp_path, data))

    def chain(*connectors: str) -> list[tuple[int, str, int, str]]:
        pairs = list(zip(connectors[::2], connectors[1::2]))
        return [(k, a, k + 1, b) for k, (a, b) in enumerate(pairs)]

    start, j1_in, j1_out, eef_in = "base_out", "J1_proximal_connector", "J1_distal_connector", "eef_proximal_connector"
    cases = {  # modules: the connections, pairwise
        ("base", "J1", "i_15", "eef"): chain(
            start, j1_in, "J1_side", "i_15_proximal_connector", "i_15_distal_connector", eef_in
        ),
        ("base", "J1", "J1", "eef"): chain(start, j1_in, j1_out, j1_in, "J1_side", eef_in),
        ("base", "J2", "J1", "eef"): chain(
            start, "J2_proximal_connector", "J2_distal_connector", j1_in, j1_out, eef_in
        ),
        ("base", "P1", "J1", "eef"): chain(
            start, "P1_proximal_connector", "P1_distal_connector", j1_in, j1_out, eef_in
        ),
        ("base", "J1", "P1", "eef"): chain(
            start, j1_in, j1_out, "P1_proximal_connector", "P1_distal_connector", eef_in
        ),
    }
    written = 0
    for ids, connections in cases.items():
        assembly = ModuleAssembly(db, ids, connections, (0, "base"))
        assert serial_assembly_urdf(assembly) is None  # handed over
        general = _outcome(lambda: tree_to_urdf(assembly))
        assert _outcome(lambda: assembly.to_urdf()) == general
        written += isinstance(general, str)
    assert written == 4  # P1's joint is named like the connection from instance 1 to 2
    # from IDs alone: the same text or the same error
    for ids in (["base", "J2", "J1", "eef"], ["base", "J1", "P1", "eef"], ["base", "P1", "J1"], ["base", "J1", "eef"]):
        assert _outcome(lambda: urdf_of_serial(db, ids)) == _outcome(lambda: _general(db, ids))


def test_tool_frames_and_fallback_tcp(tmp_path):
    """Two eef connectors give tool0 and tool1; a chain without one gets the tcp frame."""
    data = primitives_json()
    eef = _joint_module(data, "eef")
    flange = next(c for b in eef["bodies"] for c in b["connectors"] if c["type"] == "eef")
    eef["bodies"][0]["connectors"].append(dict(flange, ID="second_flange"))
    link = _joint_module(data, "l_15")
    link["bodies"][0]["connectors"].append(dict(link["bodies"][0]["connectors"][0], ID="spare", gender="h"))
    db = ModulesDB.from_json_file(write_db(tmp_path, data))
    for ids in (["base", "J1", "eef"], ["base", "J1", "l_15"], ["base", "l_15", "J1"], ["base", "J1", "l_15", "eef"]):
        text = _same(db, ids)
        assert ("tool1" in text) == ("eef" in ids)
        assert ('name="tcp"' in text) == ("eef" not in ids)
        (tmp_path / f"{'_'.join(ids)}.urdf").write_text(text)  # check_urdf runs on it after the test


def test_non_serial_connection_order_goes_to_the_general_writer(robco):
    ids = _serial_chains(robco, 1, seed=7)[0]
    while len(ids) < 2:
        ids = _serial_chains(robco, 1, seed=len(ids) + 11)[0]
    serial = ModuleAssembly.from_serial_modules(robco, ids)
    flipped = [(j, b, i, a) for i, a, j, b in serial.connections]  # the same robot, connections the other way
    assembly = ModuleAssembly(robco, ids, flipped, serial.base_connector)
    assert serial_assembly_urdf(assembly) is None
    assert assembly.to_urdf("r") == tree_to_urdf(assembly, "r") == serial.to_urdf("r")  # named: the JSON differs


def test_pickled_set_leaves_the_compiled_strings_behind(robco):
    ids = _serial_chains(robco, 1, seed=9)[0]
    text = urdf_of_serial(robco, ids)
    copy = pickle.loads(pickle.dumps(robco))
    assert copy._cache == {}
    assert urdf_of_serial(copy, ids) == text


_DB = ModulesDB.from_name("geometric_primitive_modules")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ids=st.lists(st.sampled_from(_DB.ids), min_size=0, max_size=9),
    prefix=st.sampled_from(["", "a_", "${prefix}"]),
    mesh_uri=st.sampled_from(["file", "package", "relative", "path"]),
)
def test_any_id_list_gives_the_same_text_or_error(ids, prefix, mesh_uri):
    general = _outcome(lambda: _general(_DB, ids, prefix=prefix, mesh_uri=mesh_uri))
    assert _outcome(lambda: urdf_of_serial(_DB, ids, prefix=prefix, mesh_uri=mesh_uri)) == general
