"""Bad assemblies and saving: a TimorError names what is at fault (unknown modules and connectors, connections that
do not fit, bad base placements and assembly JSON; ambiguous connections, closed chains and disconnected modules of a
tiny custom set with a fork and a ring), and saving a module set never corrupts the file it replaces. Bad module sets:
test_bad_input_files.py, test_bad_input_bodies.py, test_bad_input_validate.py."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
from bad_input_cases import EYE4, UNSET, check_error, write_set

import timor_core.common.fileio
import timor_core.model.db
from timor_core.errors import (
    AssemblyError,
    ConnectorError,
    FormatError,
    InputError,
    TimorError,
    UnknownModuleError,
    ValidationError,
)
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB


# ---------------------------------------------------------------------------------------------------------
# assemblies (embedded DB)
# ---------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gpm_db() -> ModulesDB:
    return ModulesDB.from_name("geometric_primitive_modules")


def test_unknown_module_id(gpm_db):
    with pytest.raises(UnknownModuleError) as info:
        ModuleAssembly.from_serial_modules(gpm_db, ("base", "J2", "J99", "eef"))
    assert isinstance(info.value, TimorError)
    assert "'J99'" in str(info.value)
    assert "J2" in str(info.value)  # lists what exists


def test_unknown_connector_id(gpm_db):
    with pytest.raises(UnknownModuleError) as info:
        ModuleAssembly(gpm_db, ["base", "J2"], [(0, "base_out", 1, "no_such_connector")])
    assert "'no_such_connector'" in str(info.value) and "J2_proximal_connector" in str(info.value)


def test_incompatible_explicit_connection(gpm_db):
    with pytest.raises(ConnectorError) as info:
        ModuleAssembly(gpm_db, ["base", "J2"], [(0, "base_out", 1, "J2_distal_connector")])
    text = str(info.value)
    assert "'base_out'" in text and "'J2_distal_connector'" in text


def test_connector_used_twice(gpm_db):
    conns = [(0, "base_out", 1, "J2_proximal_connector"), (0, "base_out", 2, "J2_proximal_connector")]
    with pytest.raises(TimorError) as info:
        ModuleAssembly(gpm_db, ["base", "J2", "J2"], conns)
    assert "'base_out'" in str(info.value) and "already used" in str(info.value)


@pytest.mark.parametrize("bad_index", [3, -1])
def test_connection_index_out_of_range(gpm_db, bad_index):
    with pytest.raises(AssemblyError) as info:
        ModuleAssembly(
            gpm_db,
            ["base", "J2", "eef"],
            [(0, "base_out", 1, "J2_proximal_connector"), (1, "J2_distal_connector", bad_index, "x")],
        )
    assert f"index {bad_index}" in str(info.value) and "out of range" in str(info.value)


def test_eef_has_no_free_fitting_connector(gpm_db):
    with pytest.raises(ConnectorError) as info:
        ModuleAssembly.from_serial_modules(gpm_db, ("base", "eef", "J2"))
    text = str(info.value)
    assert "'eef'" in text and "'J2'" in text and "position 1" in text


def test_first_module_without_base_connector(gpm_db):
    with pytest.raises(AssemblyError, match="base connector"):
        ModuleAssembly.from_serial_modules(gpm_db, ("J2", "eef"))


@pytest.mark.parametrize(
    "placement",
    [np.diag([2.0, 1.0, 1.0, 1.0]), np.eye(3), np.full((4, 4), np.nan), np.diag([1.0, 1.0, -1.0, 1.0])],
    ids=["scaled", "3x3", "nan", "reflection"],
)
def test_bad_base_placement(gpm_db, placement):
    with pytest.raises(InputError) as info:
        ModuleAssembly.from_serial_modules(gpm_db, ("base", "J2", "eef"), base_placement=placement)
    assert "base placement" in str(info.value)


def test_assembly_json_wrong_shaped_base_pose(gpm_db, tmp_path):
    bad = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]]
    path = tmp_path / "assembly.json"
    path.write_text(json.dumps({"moduleOrder": ["base", "J2", "eef"], "basePose": [bad]}))
    with pytest.raises(FormatError) as info:
        ModuleAssembly.from_json_file(gpm_db, path)
    check_error(info.value, path, "$.basePose[0]", bad, "4x4")


def test_assembly_json_non_rigid_base_pose(gpm_db, tmp_path):
    bad = copy.deepcopy(EYE4)
    bad[1][1] = -1.0
    path = tmp_path / "assembly.json"
    path.write_text(json.dumps({"moduleOrder": ["base", "J2", "eef"], "basePose": [bad]}))
    with pytest.raises(ValidationError) as info:
        ModuleAssembly.from_json_file(gpm_db, path)
    check_error(info.value, path, "$.basePose[0]", bad, "rigid")


def test_assembly_json_truncated(gpm_db, tmp_path):
    path = tmp_path / "assembly.json"
    path.write_text('{"moduleOrder": ["base", "J2"')
    with pytest.raises(FormatError) as info:
        ModuleAssembly.from_json_file(gpm_db, path)
    check_error(info.value, path, None, UNSET, "invalid JSON")


def test_assembly_json_malformed_base_connection(gpm_db, tmp_path):
    path = tmp_path / "assembly.json"
    data = {
        "moduleOrder": ["base", "J2", "eef"],
        "moduleConnection": [[0, "base_out", 1, "J2_proximal_connector"], [1, "J2_distal_connector", 2, "eef"]],
        "baseConnection": [5],
    }
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        ModuleAssembly.from_json_file(gpm_db, path)
    check_error(info.value, path, "$.baseConnection[0]", 5)


def test_assembly_json_non_integer_connection_index(gpm_db, tmp_path):
    path = tmp_path / "assembly.json"
    data = {
        "moduleOrder": ["base", "J2", "eef"],
        "moduleConnection": [
            [0, "base_out", "one", "J2_proximal_connector"],
            [1, "J2_distal_connector", 2, "eef_proximal_connector"],
        ],
    }
    path.write_text(json.dumps(data))
    with pytest.raises(InputError) as info:
        ModuleAssembly.from_json_file(gpm_db, path)
    check_error(info.value, path, "$.moduleConnection[0][2]", "one")


# ---------------------------------------------------------------------------------------------------------
# assemblies (a tiny custom DB with a fork and a ring, for ambiguity and closed chains)
# ---------------------------------------------------------------------------------------------------------
def _pose(z: float, flip: bool = False) -> list[list[float]]:
    s = -1.0 if flip else 1.0
    return [[1.0, 0.0, 0.0, 0.0], [0.0, s, 0.0, 0.0], [0.0, 0.0, s, z], [0.0, 0.0, 0.0, 1.0]]


def _conn(cid: str, gender: str, z: float, flip: bool = False, ctype: str = "pin") -> dict:
    return {"ID": cid, "pose": _pose(z, flip), "gender": gender, "type": ctype, "size": [0.05]}


def _single_body_module(mid: str, connectors: list[dict]) -> dict:
    inertia = [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.01]]
    body = {"ID": f"{mid}_body", "mass": 1.0, "inertia": inertia, "r_com": [0.0, 0.0, 0.05], "connectors": connectors}
    body["collision"] = [{"type": "sphere", "parameters": {"r": 0.03}, "pose": EYE4}]
    return {"header": {"ID": mid, "name": mid}, "bodies": [body], "joints": []}


@pytest.fixture()
def tiny_db(tmp_path) -> ModulesDB:
    modules = [
        _single_body_module("base", [_conn("base", "f", 0.0, True, "base"), _conn("base_out", "m", 0.1)]),
        _single_body_module(
            "fork", [_conn("fork_in", "f", 0.0, True), _conn("fork_a", "m", 0.1), _conn("fork_b", "m", 0.2)]
        ),
        _single_body_module("ring", [_conn("ring_a", "f", 0.0, True), _conn("ring_b", "f", 0.1, True)]),
        _single_body_module("tip", [_conn("tip_in", "f", 0.0, True), _conn("tip_tcp", "m", 0.05, False, "eef")]),
    ]  # fmt: skip
    path = write_set(tmp_path / "tiny", {"modules": modules})
    return ModulesDB.from_json_file(path)


def test_tiny_db_unambiguous_chain_works(tiny_db):
    assembly = ModuleAssembly.from_serial_modules(tiny_db, ("base", "fork"))
    assert assembly.is_tree
    assert "base_link" in assembly.to_urdf()


def test_ambiguous_connection(tiny_db):
    with pytest.raises(ConnectorError) as info:
        ModuleAssembly.from_serial_modules(tiny_db, ("base", "fork", "tip"))
    text = str(info.value)
    assert "'fork'" in text and "'tip'" in text
    assert "2 ways" in text and "fork_a" in text and "fork_b" in text and "explicitly" in text


def test_ambiguous_connection_via_add(tiny_db):
    assembly = ModuleAssembly(tiny_db, ["base", "fork"], [(0, "base_out", 1, "fork_in")])
    with pytest.raises(ConnectorError, match="ring_a"):
        assembly.add("ring", (1, "fork_a"))
    assert len(assembly) == 2  # nothing half-added


def test_closed_chain_to_urdf_raises(tiny_db):
    conns = [(0, "base_out", 1, "fork_in"), (1, "fork_a", 2, "ring_a"), (1, "fork_b", 2, "ring_b")]
    assembly = ModuleAssembly(tiny_db, ["base", "fork", "ring"], conns)
    assert not assembly.is_tree
    with pytest.raises(AssemblyError, match="closed kinematic chain"):
        assembly.to_urdf()
    with pytest.raises(AssemblyError, match="closed kinematic chain"):
        assembly.to_pin_robot()


def test_disconnected_module_to_urdf_raises(tiny_db):
    # as many connections as a tree needs, but one module hangs in a loop away from the base
    tiny = ModuleAssembly(
        tiny_db,
        ["base", "fork", "ring", "tip"],
        [(0, "base_out", 1, "fork_in"), (1, "fork_a", 2, "ring_a"), (1, "fork_b", 2, "ring_b")],
        base_connector=(0, "base"),
    )
    with pytest.raises(AssemblyError):
        tiny.to_urdf()


# ---------------------------------------------------------------------------------------------------------
# saving never corrupts a file
# ---------------------------------------------------------------------------------------------------------
def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name != "modules.json")


def test_save_failing_in_json_dumps_leaves_old_file(tmp_path, monkeypatch, gpm_db):
    target = tmp_path / "out" / "modules.json"
    target.parent.mkdir()
    original = "precious old content\n"
    target.write_text(original)

    calls = []

    def boom(*args, **kwargs):  # the set is written record by record: fail after some are in the temp file
        calls.append(1)
        if len(calls) > 3:
            raise RuntimeError("serialization failed midway")
        return json.dumps(*args, **kwargs)

    import timor_core.common.json_text

    monkeypatch.setattr(timor_core.common.json_text, "json", SimpleNamespace(dumps=boom, loads=json.loads))
    with pytest.raises(RuntimeError, match="midway"):
        gpm_db.to_json_file(target)
    assert len(calls) > 3
    assert target.read_text() == original
    assert _leftovers(target.parent) == []


def test_save_failing_while_writing_leaves_old_file(tmp_path, monkeypatch, gpm_db):
    target = tmp_path / "out" / "modules.json"
    target.parent.mkdir()
    original = "precious old content\n"
    target.write_text(original)

    def no_space(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(timor_core.common.fileio.os, "fsync", no_space)
    with pytest.raises(InputError, match="modules.json: cannot write: No space"):
        gpm_db.to_json_file(target)
    monkeypatch.undo()
    assert target.read_text() == original
    assert _leftovers(target.parent) == []


def test_save_failing_in_rename_leaves_old_file(tmp_path, monkeypatch, gpm_db):
    target = tmp_path / "out" / "modules.json"
    target.parent.mkdir()
    original = "precious old content\n"
    target.write_text(original)
    real_replace = os.replace

    def fail_replace(src, dst):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(timor_core.common.fileio.os, "replace", fail_replace)
    with pytest.raises(InputError, match="modules.json: cannot write: Permission denied"):
        gpm_db.to_json_file(target)
    monkeypatch.undo()
    assert os.replace is real_replace
    assert target.read_text() == original
    assert _leftovers(target.parent) == []


def test_save_then_load_round_trip(tmp_path, gpm_db):
    target = gpm_db.to_json_file(tmp_path / gpm_db.name / "modules.json")
    assert ModulesDB.from_json_file(target) == gpm_db
    assert _leftovers(target.parent) == []
