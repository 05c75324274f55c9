"""Bad input must raise a TimorError whose message names the file, the JSON path and the value at fault.

Every case starts from a deep copy of the embedded ``geometric_primitive_modules`` set, changes one
thing, writes it to ``tmp_path`` and loads it with ``ModulesDB.from_json_file``.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

import timor_core.common.fileio
import timor_core.model.db
from timor_core.errors import (
    AssemblyError,
    ConnectorError,
    FormatError,
    InputError,
    MeshError,
    TimorError,
    UnknownModuleError,
    ValidationError,
)
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB
from timor_core.model.validation import validate_db_file

_GPM_FILE = Path(timor_core.__file__).parent / "data" / "geometric_primitive_modules" / "modules.json"
_GPM: dict = json.loads(_GPM_FILE.read_text(encoding="utf-8"))
_UNSET = object()

_EYE4 = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
_CUBE_STL = """solid cube
  facet normal 0 0 -1
    outer loop
      vertex 0 0 0
      vertex 0 1 0
      vertex 1 1 0
    endloop
  endfacet
  facet normal 0 0 -1
    outer loop
      vertex 0 0 0
      vertex 1 1 0
      vertex 1 0 0
    endloop
  endfacet
  facet normal 0 0 1
    outer loop
      vertex 0 0 1
      vertex 1 0 1
      vertex 1 1 1
    endloop
  endfacet
  facet normal 0 0 1
    outer loop
      vertex 0 0 1
      vertex 1 1 1
      vertex 0 1 1
    endloop
  endfacet
endsolid cube
"""


# ---------------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------------
def _gpm() -> dict:
    return copy.deepcopy(_GPM)


def _mi(data: dict, module_id: str) -> int:
    """Index of a module in the ``modules`` list."""
    return [m["header"]["ID"] for m in data["modules"]].index(module_id)


def _module(data: dict, module_id: str) -> dict:
    return data["modules"][_mi(data, module_id)]


def _write(folder: Path, data: Any = None, text: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "modules.json"
    path.write_text(text if text is not None else json.dumps(data, indent=2), encoding="utf-8")
    return path


def _load_error(path: Path, kind: type[TimorError] = InputError) -> TimorError:
    with pytest.raises(kind) as info:
        ModulesDB.from_json_file(path)
    assert isinstance(info.value, TimorError)
    return info.value


def _check(exc: BaseException, file: Path, path: str | None, value: Any = _UNSET, *fragments: str) -> None:
    """The error is an InputError naming the file, the JSON path and the value; its text shows all three."""
    assert isinstance(exc, InputError), type(exc)
    text = str(exc)
    assert exc.file is not None and Path(exc.file).resolve() == file.resolve()
    assert exc.file in text
    if path is not None:
        assert exc.path == path
        assert path in text
    if value is not _UNSET:
        if isinstance(value, float) and np.isnan(value):
            assert isinstance(exc.value, float) and np.isnan(exc.value)
        else:
            assert exc.value == value
        assert repr(value)[:20] in text
    for fragment in fragments:
        assert fragment in text, (fragment, text)


def _case(
    tmp_path: Path, mutate: Callable[[dict], Any], kind: type[TimorError] = InputError
) -> tuple[Path, TimorError]:
    data = _gpm()
    mutate(data)
    path = _write(tmp_path / "set", data)
    return path, _load_error(path, kind)


# ---------------------------------------------------------------------------------------------------------
# the unmodified copy loads (so every failure below is caused by the one change)
# ---------------------------------------------------------------------------------------------------------
def test_unmodified_copy_loads(tmp_path):
    path = _write(tmp_path / "set", _gpm())
    db = ModulesDB.from_json_file(path)
    assert len(db) == 11
    assert validate_db_file(path) == []


# ---------------------------------------------------------------------------------------------------------
# not JSON at all
# ---------------------------------------------------------------------------------------------------------
def test_invalid_json(tmp_path):
    path = _write(tmp_path / "set", text='{"modules": [ {"header": {"ID": "a",}} ]')
    exc = _load_error(path, FormatError)
    _check(exc, path, None, _UNSET, "invalid JSON", "line 1")


def test_truncated_json(tmp_path):
    text = json.dumps(_gpm(), indent=2)
    path = _write(tmp_path / "set", text=text[: len(text) // 2])
    exc = _load_error(path, FormatError)
    cut_line = text[: len(text) // 2].count("\n") + 1
    _check(exc, path, None, _UNSET, "invalid JSON", f"line {cut_line}")


def test_empty_file(tmp_path):
    path = _write(tmp_path / "set", text="")
    exc = _load_error(path, FormatError)
    _check(exc, path, None, _UNSET, "invalid JSON", "line 1, column 1")


def test_missing_file(tmp_path):
    path = tmp_path / "nowhere" / "modules.json"
    exc = _load_error(path, FormatError)
    assert exc.file == str(path)
    assert str(path) in str(exc) and "not found" in str(exc)


def test_top_level_not_an_object(tmp_path):
    path = _write(tmp_path / "set", text="42")
    exc = _load_error(path, FormatError)
    _check(exc, path, "$", 42)


# ---------------------------------------------------------------------------------------------------------
# missing fields
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("where", "key", "json_path"),
    [
        (lambda d: _module(d, "base")["header"], "ID", "$.modules[0].header"),
        (lambda d: _module(d, "base"), "bodies", "$.modules[0]"),
        (lambda d: _module(d, "J2")["bodies"][1], "mass", "$.modules[2].bodies[1]"),
        (lambda d: _module(d, "i_45")["bodies"][0]["connectors"][1], "pose", "$.modules[6].bodies[0].connectors[1]"),
        (lambda d: _module(d, "J1")["joints"][0], "parent", "$.modules[1].joints[0]"),
    ],
    ids=["header.ID", "bodies", "body.mass", "connector.pose", "joint.parent"],
)
def test_missing_field(tmp_path, where, key, json_path):
    data = _gpm()
    del where(data)[key]
    path = _write(tmp_path / "set", data)
    exc = _load_error(path, FormatError)
    _check(exc, path, json_path, _UNSET, f"missing required field '{key}'")


# ---------------------------------------------------------------------------------------------------------
# wrong types and shapes
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("where", "key", "bad", "json_path", "fragment"),
    [
        (lambda d: _module(d, "base")["bodies"][0], "mass", "2.0", "$.modules[0].bodies[0].mass", "expected a number"),
        (lambda d: _module(d, "J1")["header"], "ID", ["J1"], "$.modules[1].header.ID", "expected a string"),
        (lambda d: _module(d, "J1")["bodies"][0], "inertia", 0.01, "$.modules[1].bodies[0].inertia", "3x3"),
        (
            lambda d: _module(d, "i_30")["bodies"][0]["connectors"][0],
            "pose",
            [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]],
            "$.modules[5].bodies[0].connectors[0].pose",
            "4x4",
        ),
        (
            lambda d: _module(d, "P1")["bodies"][0],
            "inertia",
            [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0]],
            "$.modules[3].bodies[0].inertia",
            "3x3",
        ),
        (
            lambda d: _module(d, "eef")["bodies"][0],
            "r_com",
            [0.0, 0.02],
            "$.modules[10].bodies[0].r_com",
            "expected 3 numbers",
        ),
        (lambda d: _module(d, "J2")["joints"][0], "poseParent", "identity", "$.modules[2].joints[0].poseParent", "4x4"),
        (lambda d: d, "modules", {"base": {}}, "$.modules", "expected a JSON array"),
    ],
    ids=["mass-string", "ID-list", "inertia-number", "pose-3x4", "inertia-2x3", "r_com-len2", "poseParent-str", "obj"],
)
def test_wrong_type_or_shape(tmp_path, where, key, bad, json_path, fragment):
    data = _gpm()
    where(data)[key] = bad
    path = _write(tmp_path / "set", data)
    exc = _load_error(path, FormatError)
    _check(exc, path, json_path, bad, fragment)


def test_pose_row_of_wrong_length_names_the_row(tmp_path):
    data = _gpm()
    pose = _module(data, "base")["bodies"][0]["connectors"][1]["pose"]
    pose[2] = [0.0, 0.0, 1.0]
    path = _write(tmp_path / "set", data)
    exc = _load_error(path, FormatError)
    _check(exc, path, "$.modules[0].bodies[0].connectors[1].pose", [0.0, 0.0, 1.0], "row 2")


# ---------------------------------------------------------------------------------------------------------
# NaN and Infinity
# ---------------------------------------------------------------------------------------------------------
def _with_literal(tmp_path: Path, literal: str) -> Path:
    """Write the set with ``base``'s body mass replaced by a bare literal (not valid strict JSON)."""
    text = json.dumps(_gpm(), indent=2)
    needle = '"mass": 2.0'
    assert text.count(needle) >= 1
    return _write(tmp_path / "set", text=text.replace(needle, f'"mass": {literal}', 1))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nonfinite_literal_is_rejected_naming_the_file(tmp_path, literal):
    path = _with_literal(tmp_path, literal)
    exc = _load_error(path, FormatError)
    _check(exc, path, None, _UNSET, literal)
    # the validator reports it the same way
    problems = validate_db_file(path)
    assert len(problems) == 1 and literal in str(problems[0]) and str(path) in str(problems[0])


@pytest.mark.parametrize("literal", ["NaN", "Infinity"])
def test_nonfinite_literal_names_the_json_path(tmp_path, literal):
    path = _with_literal(tmp_path, literal)
    exc = _load_error(path, FormatError)
    _check(exc, path, "$.modules[0].bodies[0].mass", _UNSET, literal)


def test_nan_as_a_string_that_parses(tmp_path):
    path, exc = _case(tmp_path, lambda d: d["modules"][0]["bodies"][0].__setitem__("mass", "NaN"), FormatError)
    _check(exc, path, "$.modules[0].bodies[0].mass", "NaN", "expected a number")


@pytest.mark.parametrize("number", ["1e999", "-1e999"])
def test_overflowing_number_parses_to_infinity_and_is_rejected(tmp_path, number):
    text = json.dumps(_gpm(), indent=2)
    # the x translation of base_out: a number inside a pose
    data = json.loads(text)
    data["modules"][0]["bodies"][0]["connectors"][1]["pose"][0][3] = "__BIG__"
    path = _write(tmp_path / "set", text=json.dumps(data, indent=2).replace('"__BIG__"', number))
    exc = _load_error(path, ValidationError)
    _check(exc, path, "$.modules[0].bodies[0].connectors[1].pose[0][3]", float(number), "finite")


def test_overflowing_mass(tmp_path):
    path = _with_literal(tmp_path, "1e999")
    exc = _load_error(path, ValidationError)
    _check(exc, path, "$.modules[0].bodies[0].mass", float("inf"), "finite")


# ---------------------------------------------------------------------------------------------------------
# duplicate IDs
# ---------------------------------------------------------------------------------------------------------
def test_duplicate_module_ids(tmp_path):
    path, exc = _case(tmp_path, lambda d: _module(d, "J2")["header"].__setitem__("ID", "J1"), ValidationError)
    _check(exc, path, "$.modules[2].header.ID", "J1", "duplicate module ID", "$.modules[1]")


def test_duplicate_body_ids(tmp_path):
    path, exc = _case(tmp_path, lambda d: _module(d, "J1")["bodies"][1].__setitem__("ID", "J1_proximal"))
    assert isinstance(exc, ValidationError)
    _check(exc, path, None, "J1_proximal", "duplicate body ID")
    assert exc.path is not None and exc.path.startswith("$.modules[1].bodies")


def test_duplicate_connector_ids_within_a_module(tmp_path):
    def mutate(d):
        _module(d, "i_45")["bodies"][0]["connectors"][1]["ID"] = "i_45_proximal_connector"

    path, exc = _case(tmp_path, mutate, ValidationError)
    _check(exc, path, None, "i_45_proximal_connector", "duplicate connector ID")
    assert exc.path is not None and exc.path.startswith("$.modules[6].bodies")


def test_same_connector_id_in_different_modules_is_fine(tmp_path):
    data = _gpm()
    _module(data, "i_45")["bodies"][0]["connectors"][0]["ID"] = "J1_proximal_connector"
    db = ModulesDB.from_json_file(_write(tmp_path / "set", data))
    assert "J1_proximal_connector" in db["i_45"].connectors


def test_duplicate_joint_ids(tmp_path):
    def mutate(d):
        j1 = _module(d, "J1")
        extra = copy.deepcopy(j1["bodies"][1])
        extra["ID"] = "J1_extra"
        for c in extra["connectors"]:
            c["ID"] = "J1_extra_connector"
        j1["bodies"].append(extra)
        joint = copy.deepcopy(j1["joints"][0])
        joint["parent"], joint["child"] = "J1_distal", "J1_extra"
        j1["joints"].append(joint)

    path, exc = _case(tmp_path, mutate, ValidationError)
    _check(exc, path, None, "J1_joint", "duplicate joint ID")
    assert exc.path is not None and exc.path.startswith("$.modules[1].joints")


# ---------------------------------------------------------------------------------------------------------
# poses that are not rigid transforms
# ---------------------------------------------------------------------------------------------------------
_C = 0.5**0.5


@pytest.mark.parametrize(
    "bad_pose",
    [
        [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.1], [0.0, 0.0, 0.0, 1.0]],  # scaled
        [[1.0, 0.5, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.1], [0.0, 0.0, 0.0, 1.0]],  # sheared
        [[_C, _C, 0.0, 0.0], [_C, _C, 0.0, 0.0], [0.0, 0.0, 1.0, 0.1], [0.0, 0.0, 0.0, 1.0]],  # singular
    ],
    ids=["scaled", "sheared", "singular"],
)
def test_non_orthonormal_rotation(tmp_path, bad_pose):
    path, exc = _case(tmp_path, lambda d: d["modules"][0]["bodies"][0]["connectors"][1].__setitem__("pose", bad_pose))
    assert isinstance(exc, ValidationError)
    _check(exc, path, "$.modules[0].bodies[0].connectors[1].pose", bad_pose, "not a rigid transform")


def test_reflection_det_minus_one(tmp_path):
    bad = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, -1.0, 0.1], [0.0, 0.0, 0.0, 1.0]]
    assert np.isclose(np.linalg.det(np.array(bad)[:3, :3]), -1.0)
    path, exc = _case(tmp_path, lambda d: _module(d, "i_15")["bodies"][0]["connectors"][1].__setitem__("pose", bad))
    assert isinstance(exc, ValidationError)
    _check(exc, path, "$.modules[4].bodies[0].connectors[1].pose", bad, "det +1")


@pytest.mark.parametrize(
    "last_row", [[0.0, 0.0, 0.0, 2.0], [0.0, 0.0, 0.1, 1.0], [0.0, 0.0, 0.0, 0.0]], ids=["w=2", "perspective", "zero"]
)
def test_bad_last_row(tmp_path, last_row):
    bad = copy.deepcopy(_EYE4)
    bad[3] = last_row
    path, exc = _case(tmp_path, lambda d: _module(d, "J2")["joints"][0].__setitem__("poseChild", bad))
    assert isinstance(exc, ValidationError)
    _check(exc, path, "$.modules[2].joints[0].poseChild", bad, "last row")


def test_non_rigid_geometry_pose(tmp_path):
    bad = copy.deepcopy(_EYE4)
    bad[0][0] = 3.0
    path, exc = _case(tmp_path, lambda d: _module(d, "l_30")["bodies"][0]["visual"][1].__setitem__("pose", bad))
    _check(exc, path, "$.modules[8].bodies[0].visual[1].pose", bad, "rigid")


# ---------------------------------------------------------------------------------------------------------
# inertial parameters
# ---------------------------------------------------------------------------------------------------------
def test_negative_mass(tmp_path):
    path, exc = _case(tmp_path, lambda d: _module(d, "P1")["bodies"][1].__setitem__("mass", -0.5), ValidationError)
    _check(exc, path, "$.modules[3].bodies[1].mass", -0.5, "negative")


@pytest.mark.parametrize(
    "inertia",
    [
        [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, -0.01]],  # negative eigenvalue
        [[0.01, 0.02, 0.0], [0.02, 0.01, 0.0], [0.0, 0.0, 0.01]],  # eigenvalues 0.03, -0.01, 0.01
    ],
    ids=["negative-eig", "indefinite-offdiag"],
)
def test_inertia_not_positive_semi_definite(tmp_path, inertia):
    path, exc = _case(tmp_path, lambda d: _module(d, "i_15")["bodies"][0].__setitem__("inertia", inertia))
    assert isinstance(exc, ValidationError)
    _check(exc, path, "$.modules[4].bodies[0].inertia", inertia, "positive semi-definite")


@pytest.mark.parametrize(
    "inertia",
    [
        [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.0]],  # a thin rod: one zero moment
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],  # a point mass
    ],
    ids=["rod", "point-mass"],
)
def test_point_masses_and_rods_load(tmp_path, inertia):
    """Idealised bodies URDFs use (and Pinocchio takes) load; their inertia is kept as given."""
    data = _gpm()
    _module(data, "i_15")["bodies"][0]["inertia"] = inertia
    db = ModulesDB.from_json_file(_write(tmp_path / "set", data))
    np.testing.assert_array_equal(db["i_15"].bodies[0].inertia, inertia)


def test_inertia_not_symmetric(tmp_path):
    bad = [[0.01, 0.001, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.01]]
    path, exc = _case(tmp_path, lambda d: _module(d, "l_15")["bodies"][0].__setitem__("inertia", bad))
    assert isinstance(exc, ValidationError)
    _check(exc, path, "$.modules[7].bodies[0].inertia", bad, "symmetric")


def test_massless_body_with_zero_inertia_is_fine(tmp_path):
    data = _gpm()
    body = _module(data, "i_15")["bodies"][0]
    body["mass"] = 0.0
    body["inertia"] = [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    db = ModulesDB.from_json_file(_write(tmp_path / "set", data))
    assert db["i_15"].mass == 0.0


# ---------------------------------------------------------------------------------------------------------
# joints
# ---------------------------------------------------------------------------------------------------------
def test_inverted_joint_limits(tmp_path):
    def mutate(d):
        limits = _module(d, "J2")["joints"][0]["limits"]
        limits["positionLower"], limits["positionUpper"] = 1.0, -1.0

    path, exc = _case(tmp_path, mutate, ValidationError)
    _check(exc, path, "$.modules[2].joints[0].limits", {"positionLower": 1.0, "positionUpper": -1.0}, "inverted")


@pytest.mark.parametrize("key", ["velocity", "acceleration", "peakTorque"])
def test_negative_velocity_acceleration_torque_limit(tmp_path, key):
    path, exc = _case(tmp_path, lambda d: _module(d, "J1")["joints"][0]["limits"].__setitem__(key, -2.0))
    assert isinstance(exc, ValidationError)
    _check(exc, path, f"$.modules[1].joints[0].limits.{key}", -2.0, "negative")


def test_joint_limit_of_wrong_type(tmp_path):
    path, exc = _case(tmp_path, lambda d: _module(d, "P1")["joints"][0]["limits"].__setitem__("positionUpper", "0.3"))
    assert isinstance(exc, FormatError)
    _check(exc, path, "$.modules[3].joints[0].limits.positionUpper", "0.3", "expected a number")


@pytest.mark.parametrize("key", ["parent", "child"])
def test_joint_names_unknown_body(tmp_path, key):
    path, exc = _case(tmp_path, lambda d: _module(d, "J1")["joints"][0].__setitem__(key, "ghost_body"))
    assert isinstance(exc, ValidationError)
    _check(exc, path, f"$.modules[1].joints[0].{key}", "ghost_body", "body")


def test_joint_joins_body_to_itself(tmp_path):
    path, exc = _case(tmp_path, lambda d: _module(d, "J1")["joints"][0].__setitem__("child", "J1_proximal"))
    _check(exc, path, "$.modules[1].joints[0].child", "J1_proximal", "itself")


def test_unknown_joint_type(tmp_path):
    path, exc = _case(tmp_path, lambda d: _module(d, "J2")["joints"][0].__setitem__("type", "spherical"))
    assert isinstance(exc, ValidationError)
    _check(exc, path, "$.modules[2].joints[0].type", "spherical", "unknown joint type", "revolute")


def test_bodies_not_connected_by_joints(tmp_path):
    path, exc = _case(tmp_path, lambda d: _module(d, "J1").__setitem__("joints", []))
    assert isinstance(exc, ValidationError)
    _check(exc, path, "$.modules[1].bodies", ["J1_distal", "J1_proximal"], "not all connected")


# ---------------------------------------------------------------------------------------------------------
# connectors and geometry
# ---------------------------------------------------------------------------------------------------------
def test_unknown_connector_gender(tmp_path):
    path, exc = _case(tmp_path, lambda d: _module(d, "l_45")["bodies"][0]["connectors"][1].__setitem__("gender", "x"))
    assert isinstance(exc, ValidationError)
    _check(exc, path, "$.modules[9].bodies[0].connectors[1].gender", "x", "gender")


def test_unknown_geometry_type(tmp_path):
    path, exc = _case(tmp_path, lambda d: _module(d, "i_45")["bodies"][0]["collision"][0].__setitem__("type", "cone"))
    _check(exc, path, "$.modules[6].bodies[0].collision[0].type", "cone", "unknown geometry type")


@pytest.mark.parametrize(("key", "bad"), [("r", -0.06), ("z", -0.1)])
def test_negative_cylinder_dimension(tmp_path, key, bad):
    path, exc = _case(
        tmp_path, lambda d: _module(d, "J1")["bodies"][1]["visual"][0]["parameters"].__setitem__(key, bad)
    )
    assert isinstance(exc, ValidationError)
    _check(exc, path, f"$.modules[1].bodies[1].visual[0].parameters.{key}", bad, ">= 0")


def test_missing_geometry_parameter(tmp_path):
    path, exc = _case(tmp_path, lambda d: _module(d, "P1")["bodies"][0]["visual"][0]["parameters"].pop("y"))
    assert isinstance(exc, FormatError)
    _check(exc, path, "$.modules[3].bodies[0].visual[0].parameters", _UNSET, "'y'")


def test_ignore_collisions_unknown_mode(tmp_path):
    path, exc = _case(tmp_path, lambda d: d.__setitem__("ignore_collisions", "never"), ValidationError)
    _check(exc, path, "$.ignore_collisions", "never", "rigid_via_joint")


# ---------------------------------------------------------------------------------------------------------
# meshes
# ---------------------------------------------------------------------------------------------------------
def _with_mesh(tmp_path: Path, file_field: str) -> Path:
    data = _gpm()
    body = _module(data, "i_30")["bodies"][0]
    body["visual"] = [{"type": "mesh", "parameters": {"file": file_field, "scale": 0.1}, "pose": _EYE4}]
    return _write(tmp_path / "set", data)


def test_valid_mesh_loads(tmp_path):
    (tmp_path / "set" / "meshes").mkdir(parents=True)
    (tmp_path / "set" / "meshes" / "cube.stl").write_text(_CUBE_STL)
    path = _with_mesh(tmp_path, "meshes/cube.stl")
    db = ModulesDB.from_json_file(path)
    (mesh,) = db.meshes()
    assert mesh.path == (tmp_path / "set" / "meshes" / "cube.stl").resolve()
    data = mesh.load()
    assert np.allclose(data.bounds, [[0, 0, 0], [0.1, 0.1, 0.1]])


def test_missing_mesh_file(tmp_path):
    path = _with_mesh(tmp_path, "meshes/nope.stl")
    exc = _load_error(path, MeshError)
    _check(exc, path, "$.modules[5].bodies[0].visual[0].parameters.file", "meshes/nope.stl", "not found")


def test_mesh_path_escaping_the_folder(tmp_path):
    path = _with_mesh(tmp_path, "../../etc/passwd")
    exc = _load_error(path, MeshError)
    _check(exc, path, "$.modules[5].bodies[0].visual[0].parameters.file", "../../etc/passwd", "outside")


def test_mesh_absolute_path_outside(tmp_path):
    outside = tmp_path / "elsewhere" / "cube.stl"
    outside.parent.mkdir()
    outside.write_text(_CUBE_STL)
    path = _with_mesh(tmp_path, str(outside))
    exc = _load_error(path, MeshError)
    _check(exc, path, "$.modules[5].bodies[0].visual[0].parameters.file", str(outside), "outside")


def test_mesh_file_uri_outside(tmp_path):
    outside = tmp_path / "elsewhere" / "cube.stl"
    outside.parent.mkdir()
    outside.write_text(_CUBE_STL)
    path = _with_mesh(tmp_path, outside.as_uri())
    exc = _load_error(path, MeshError)
    _check(exc, path, "$.modules[5].bodies[0].visual[0].parameters.file", outside.as_uri(), "outside")


def test_mesh_symlink_escaping_the_folder(tmp_path):
    outside = tmp_path / "elsewhere" / "cube.stl"
    outside.parent.mkdir()
    outside.write_text(_CUBE_STL)
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "link.stl").symlink_to(outside)
    path = _with_mesh(tmp_path, "link.stl")
    exc = _load_error(path, MeshError)
    _check(exc, path, "$.modules[5].bodies[0].visual[0].parameters.file", "link.stl", "outside")


def test_mesh_zero_scale(tmp_path):
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "cube.stl").write_text(_CUBE_STL)
    data = _gpm()
    _module(data, "i_30")["bodies"][0]["visual"] = [
        {"type": "mesh", "parameters": {"file": "cube.stl", "scale": [1.0, 0.0, 1.0]}}
    ]
    path = _write(tmp_path / "set", data)
    exc = _load_error(path, ValidationError)
    _check(exc, path, "$.modules[5].bodies[0].visual[0].parameters.scale", [1.0, 0.0, 1.0], "zero")


def test_mesh_negative_scale_mirrors(tmp_path):
    """A negative factor mirrors the mesh, as URDF allows (TIAGo Pro, Centauro): it loads, faces turned."""
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "cube.stl").write_text(_CUBE_STL)
    data = _gpm()
    _module(data, "i_30")["bodies"][0]["visual"] = [
        {"type": "mesh", "parameters": {"file": "cube.stl", "scale": [1.0, -1.0, 1.0]}}
    ]
    db = ModulesDB.from_json_file(_write(tmp_path / "set", data))
    mesh = db["i_30"].bodies[0].visual[0]
    assert mesh.scale == (1.0, -1.0, 1.0) and mesh.volume > 0


def test_mesh_with_unsupported_extension(tmp_path):
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "cube.xyz").write_text(_CUBE_STL)
    path = _with_mesh(tmp_path, "cube.xyz")
    assert validate_db_file(path), "validate_db_file finds nothing wrong"
    exc = _load_error(path, MeshError)
    _check(exc, path, "$.modules[5].bodies[0].visual[0].parameters.file", "cube.xyz", ".xyz")


def test_corrupt_mesh_error_names_json_path(tmp_path):
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "broken.stl").write_text(
        "solid x\n facet normal 0 0 1\n  outer loop\n   vertex 0 0\nendsolid x\n"
    )
    data = _gpm()
    _module(data, "i_30")["bodies"][0]["collision"] = [{"type": "mesh", "parameters": {"file": "broken.stl"}}]
    path = _write(tmp_path / "set", data)
    try:
        db = ModulesDB.from_json_file(path)
    except MeshError as exc:  # refusing it at load time is fine as well
        _check(exc, path, "$.modules[5].bodies[0].collision[0].parameters.file", "broken.stl")
        return
    with pytest.raises(MeshError) as info:
        ModuleAssembly.from_serial_modules(db, ("base", "i_30", "eef")).to_pin_robot()
    _check(info.value, path, "$.modules[5].bodies[0].collision[0].parameters.file", "broken.stl")


def test_connector_size_scalar_string_names_real_path(tmp_path):
    path, exc = _case(tmp_path, lambda d: _module(d, "i_15")["bodies"][0]["connectors"][0].__setitem__("size", "big"))
    _check(exc, path, "$.modules[4].bodies[0].connectors[0].size", "big")


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
    _check(info.value, path, "$.basePose[0]", bad, "4x4")


def test_assembly_json_non_rigid_base_pose(gpm_db, tmp_path):
    bad = copy.deepcopy(_EYE4)
    bad[1][1] = -1.0
    path = tmp_path / "assembly.json"
    path.write_text(json.dumps({"moduleOrder": ["base", "J2", "eef"], "basePose": [bad]}))
    with pytest.raises(ValidationError) as info:
        ModuleAssembly.from_json_file(gpm_db, path)
    _check(info.value, path, "$.basePose[0]", bad, "rigid")


def test_assembly_json_truncated(gpm_db, tmp_path):
    path = tmp_path / "assembly.json"
    path.write_text('{"moduleOrder": ["base", "J2"')
    with pytest.raises(FormatError) as info:
        ModuleAssembly.from_json_file(gpm_db, path)
    _check(info.value, path, None, _UNSET, "invalid JSON")


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
    _check(info.value, path, "$.baseConnection[0]", 5)


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
    _check(info.value, path, "$.moduleConnection[0][2]", "one")


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
    body["collision"] = [{"type": "sphere", "parameters": {"r": 0.03}, "pose": _EYE4}]
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
    path = _write(tmp_path / "tiny", {"modules": modules})
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


# ---------------------------------------------------------------------------------------------------------
# validate_db_file reports every error
# ---------------------------------------------------------------------------------------------------------
def _three_errors() -> tuple[dict, list[tuple[str, Any]]]:
    data = _gpm()
    _module(data, "base")["bodies"][0]["connectors"][1]["gender"] = "x"
    limits = _module(data, "J2")["joints"][0]["limits"]
    limits["positionLower"], limits["positionUpper"] = 2.0, -2.0
    _module(data, "i_45")["bodies"][0]["visual"][0]["type"] = "cone"
    expected = [
        ("$.modules[0].bodies[0].connectors[1].gender", "x"),
        ("$.modules[2].joints[0].limits", {"positionLower": 2.0, "positionUpper": -2.0}),
        ("$.modules[6].bodies[0].visual[0].type", "cone"),
    ]
    return data, expected


def test_validate_reports_three_independent_errors(tmp_path):
    data, expected = _three_errors()
    path = _write(tmp_path / "set", data)
    problems = validate_db_file(path)
    assert len(problems) == 3, [str(p) for p in problems]
    for problem, (json_path, value) in zip(problems, expected):
        _check(problem, path, json_path, value)
    # the loader stops at the first one
    exc = _load_error(path, ValidationError)
    assert exc.path == expected[0][0]


def test_validate_three_errors_in_bodies_of_different_modules(tmp_path):
    data = _gpm()
    _module(data, "base")["bodies"][0]["mass"] = -1.0
    _module(data, "i_15")["bodies"][0]["inertia"] = [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, -1.0]]
    _module(data, "l_30")["bodies"][0]["r_com"] = [0.0]
    path = _write(tmp_path / "set", data)
    problems = validate_db_file(path)
    assert [p.path for p in problems] == [
        "$.modules[0].bodies[0].mass",
        "$.modules[4].bodies[0].inertia",
        "$.modules[8].bodies[0].r_com",
    ]
    assert all(p.file == str(path) for p in problems)


def test_validate_reports_module_level_duplicates_and_mode(tmp_path):
    data = _gpm()
    data["ignore_collisions"] = "sometimes"
    _module(data, "l_45")["header"]["ID"] = "l_15"
    path = _write(tmp_path / "set", data)
    problems = validate_db_file(path)
    paths = [p.path for p in problems]
    assert "$.ignore_collisions" in paths and "$.modules[9].header.ID" in paths
    assert len(problems) == 2


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: _module(d, "J1")["bodies"][0].__setitem__("mass", -1.0),
        lambda d: _module(d, "J1")["bodies"][1].__setitem__("ID", "J1_proximal"),
    ],
    ids=["bad-body", "duplicate-body"],
)
def test_validate_reports_no_follow_up_errors(tmp_path, mutate):
    data = _gpm()
    mutate(data)
    problems = validate_db_file(_write(tmp_path / "set", data))
    if len(problems) == 2:  # renaming J1_distal really leaves the joint without its child: a second real fault
        text = " | ".join(str(p) for p in problems)
        assert "duplicate body ID" in text and "'J1_distal'" in text
    else:
        assert len(problems) == 1, [str(p) for p in problems]


def test_validate_duplicate_joint_reported_once(tmp_path):
    data = _gpm()
    j1 = _module(data, "J1")
    j1["joints"].append(copy.deepcopy(j1["joints"][0]))
    problems = validate_db_file(_write(tmp_path / "set", data))
    assert len(problems) == 1, [str(p) for p in problems]
    assert "duplicate joint ID" in str(problems[0])


def test_validate_agrees_with_loader_on_empty_bodies(tmp_path):
    data = _gpm()
    _module(data, "i_15")["bodies"] = []
    path = _write(tmp_path / "set", data)
    exc = _load_error(path, ValidationError)
    assert exc.path == "$.modules[4].bodies"
    problems = validate_db_file(path)
    assert [p.path for p in problems] == ["$.modules[4].bodies"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: _module(d, "J2")["joints"][0].__setitem__("type", "ball"),
        lambda d: _module(d, "eef")["bodies"][0]["connectors"][0].pop("pose"),
        lambda d: _module(d, "P1")["bodies"][1].__setitem__("inertia", [[1, 2, 3], [4, 5, 6], [7, 8, 9]]),
        lambda d: d.__setitem__("ignore_collisions", "all"),
        lambda d: _module(d, "J1")["header"].__setitem__("ID", "J2"),
    ],
    ids=["joint-type", "connector-pose", "inertia", "mode", "dup-module"],
)
def test_validate_and_loader_report_the_same_first_error(tmp_path, mutate):
    data = _gpm()
    mutate(data)
    path = _write(tmp_path / "set", data)
    exc = _load_error(path)
    problems = validate_db_file(path)
    assert problems, "validate_db_file found nothing the loader refuses"
    assert exc.path in [p.path for p in problems]
