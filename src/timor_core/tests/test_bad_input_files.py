"""Bad input must raise a TimorError whose message names the file, the JSON path and the value at fault.

Every case starts from a deep copy of the embedded ``geometric_primitive_modules`` set, changes one
thing, writes it to ``tmp_path`` and loads it with ``ModulesDB.from_json_file``.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from bad_input_cases import UNSET, check_error, gpm, load_case, load_error, module_of, write_set

from timor_core.errors import FormatError, ValidationError
from timor_core.model.db import ModulesDB
from timor_core.model.validation import validate_db_file


# ---------------------------------------------------------------------------------------------------------
# the unmodified copy loads (so every failure below is caused by the one change)
# ---------------------------------------------------------------------------------------------------------
def test_unmodified_copy_loads(tmp_path):
    path = write_set(tmp_path / "set", gpm())
    db = ModulesDB.from_json_file(path)
    assert len(db) == 11
    assert validate_db_file(path) == []


# ---------------------------------------------------------------------------------------------------------
# not JSON at all
# ---------------------------------------------------------------------------------------------------------
def test_invalid_json(tmp_path):
    path = write_set(tmp_path / "set", text='{"modules": [ {"header": {"ID": "a",}} ]')
    exc = load_error(path, FormatError)
    check_error(exc, path, None, UNSET, "invalid JSON", "line 1")


def test_truncated_json(tmp_path):
    text = json.dumps(gpm(), indent=2)
    path = write_set(tmp_path / "set", text=text[: len(text) // 2])
    exc = load_error(path, FormatError)
    cut_line = text[: len(text) // 2].count("\n") + 1
    check_error(exc, path, None, UNSET, "invalid JSON", f"line {cut_line}")


def test_empty_file(tmp_path):
    path = write_set(tmp_path / "set", text="")
    exc = load_error(path, FormatError)
    check_error(exc, path, None, UNSET, "invalid JSON", "line 1, column 1")


def test_missing_file(tmp_path):
    path = tmp_path / "nowhere" / "modules.json"
    exc = load_error(path, FormatError)
    assert exc.file == str(path)
    assert str(path) in str(exc) and "not found" in str(exc)


def test_top_level_not_an_object(tmp_path):
    path = write_set(tmp_path / "set", text="42")
    exc = load_error(path, FormatError)
    check_error(exc, path, "$", 42)


# ---------------------------------------------------------------------------------------------------------
# missing fields
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("where", "key", "json_path"),
    [
        (lambda d: module_of(d, "base")["header"], "ID", "$.modules[0].header"),
        (lambda d: module_of(d, "base"), "bodies", "$.modules[0]"),
        (lambda d: module_of(d, "J2")["bodies"][1], "mass", "$.modules[2].bodies[1]"),
        (lambda d: module_of(d, "i_45")["bodies"][0]["connectors"][1], "pose", "$.modules[6].bodies[0].connectors[1]"),
        (lambda d: module_of(d, "J1")["joints"][0], "parent", "$.modules[1].joints[0]"),
    ],
    ids=["header.ID", "bodies", "body.mass", "connector.pose", "joint.parent"],
)
def test_missing_field(tmp_path, where, key, json_path):
    data = gpm()
    del where(data)[key]
    path = write_set(tmp_path / "set", data)
    exc = load_error(path, FormatError)
    check_error(exc, path, json_path, UNSET, f"missing required field '{key}'")


# ---------------------------------------------------------------------------------------------------------
# wrong types and shapes
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("where", "key", "bad", "json_path", "fragment"),
    [
        (
            lambda d: module_of(d, "base")["bodies"][0],
            "mass",
            "2.0",
            "$.modules[0].bodies[0].mass",
            "expected a number",
        ),
        (lambda d: module_of(d, "J1")["header"], "ID", ["J1"], "$.modules[1].header.ID", "expected a string"),
        (lambda d: module_of(d, "J1")["bodies"][0], "inertia", 0.01, "$.modules[1].bodies[0].inertia", "3x3"),
        (
            lambda d: module_of(d, "i_30")["bodies"][0]["connectors"][0],
            "pose",
            [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0]],
            "$.modules[5].bodies[0].connectors[0].pose",
            "4x4",
        ),
        (
            lambda d: module_of(d, "P1")["bodies"][0],
            "inertia",
            [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0]],
            "$.modules[3].bodies[0].inertia",
            "3x3",
        ),
        (
            lambda d: module_of(d, "eef")["bodies"][0],
            "r_com",
            [0.0, 0.02],
            "$.modules[10].bodies[0].r_com",
            "expected 3 numbers",
        ),
        (
            lambda d: module_of(d, "J2")["joints"][0],
            "poseParent",
            "identity",
            "$.modules[2].joints[0].poseParent",
            "4x4",
        ),
        (lambda d: d, "modules", {"base": {}}, "$.modules", "expected a JSON array"),
    ],
    ids=["mass-string", "ID-list", "inertia-number", "pose-3x4", "inertia-2x3", "r_com-len2", "poseParent-str", "obj"],
)
def test_wrong_type_or_shape(tmp_path, where, key, bad, json_path, fragment):
    data = gpm()
    where(data)[key] = bad
    path = write_set(tmp_path / "set", data)
    exc = load_error(path, FormatError)
    check_error(exc, path, json_path, bad, fragment)


def test_pose_row_of_wrong_length_names_the_row(tmp_path):
    data = gpm()
    pose = module_of(data, "base")["bodies"][0]["connectors"][1]["pose"]
    pose[2] = [0.0, 0.0, 1.0]
    path = write_set(tmp_path / "set", data)
    exc = load_error(path, FormatError)
    check_error(exc, path, "$.modules[0].bodies[0].connectors[1].pose", [0.0, 0.0, 1.0], "row 2")


# ---------------------------------------------------------------------------------------------------------
# NaN and Infinity
# ---------------------------------------------------------------------------------------------------------
def _with_literal(tmp_path: Path, literal: str) -> Path:
    """Write the set with ``base``'s body mass replaced by a bare literal (not valid strict JSON)."""
    text = json.dumps(gpm(), indent=2)
    needle = '"mass": 2.0'
    assert text.count(needle) >= 1
    return write_set(tmp_path / "set", text=text.replace(needle, f'"mass": {literal}', 1))


@pytest.mark.parametrize("literal", ["NaN", "Infinity", "-Infinity"])
def test_nonfinite_literal_is_rejected_naming_the_file(tmp_path, literal):
    path = _with_literal(tmp_path, literal)
    exc = load_error(path, FormatError)
    check_error(exc, path, None, UNSET, literal)
    # the validator reports it the same way
    problems = validate_db_file(path)
    assert len(problems) == 1 and literal in str(problems[0]) and str(path) in str(problems[0])


@pytest.mark.parametrize("literal", ["NaN", "Infinity"])
def test_nonfinite_literal_names_the_json_path(tmp_path, literal):
    path = _with_literal(tmp_path, literal)
    exc = load_error(path, FormatError)
    check_error(exc, path, "$.modules[0].bodies[0].mass", UNSET, literal)


def test_nan_as_a_string_that_parses(tmp_path):
    path, exc = load_case(tmp_path, lambda d: d["modules"][0]["bodies"][0].__setitem__("mass", "NaN"), FormatError)
    check_error(exc, path, "$.modules[0].bodies[0].mass", "NaN", "expected a number")


@pytest.mark.parametrize("number", ["1e999", "-1e999"])
def test_overflowing_number_parses_to_infinity_and_is_rejected(tmp_path, number):
    text = json.dumps(gpm(), indent=2)
    # the x translation of base_out: a number inside a pose
    data = json.loads(text)
    data["modules"][0]["bodies"][0]["connectors"][1]["pose"][0][3] = "__BIG__"
    path = write_set(tmp_path / "set", text=json.dumps(data, indent=2).replace('"__BIG__"', number))
    exc = load_error(path, ValidationError)
    check_error(exc, path, "$.modules[0].bodies[0].connectors[1].pose[0][3]", float(number), "finite")


def test_overflowing_mass(tmp_path):
    path = _with_literal(tmp_path, "1e999")
    exc = load_error(path, ValidationError)
    check_error(exc, path, "$.modules[0].bodies[0].mass", float("inf"), "finite")


# ---------------------------------------------------------------------------------------------------------
# duplicate IDs
# ---------------------------------------------------------------------------------------------------------
def test_duplicate_module_ids(tmp_path):
    path, exc = load_case(tmp_path, lambda d: module_of(d, "J2")["header"].__setitem__("ID", "J1"), ValidationError)
    check_error(exc, path, "$.modules[2].header.ID", "J1", "duplicate module ID", "$.modules[1]")


def test_duplicate_body_ids(tmp_path):
    path, exc = load_case(tmp_path, lambda d: module_of(d, "J1")["bodies"][1].__setitem__("ID", "J1_proximal"))
    assert isinstance(exc, ValidationError)
    check_error(exc, path, None, "J1_proximal", "duplicate body ID")
    assert exc.path is not None and exc.path.startswith("$.modules[1].bodies")


def test_duplicate_connector_ids_within_a_module(tmp_path):
    def mutate(d):
        module_of(d, "i_45")["bodies"][0]["connectors"][1]["ID"] = "i_45_proximal_connector"

    path, exc = load_case(tmp_path, mutate, ValidationError)
    check_error(exc, path, None, "i_45_proximal_connector", "duplicate connector ID")
    assert exc.path is not None and exc.path.startswith("$.modules[6].bodies")


def test_same_connector_id_in_different_modules_is_fine(tmp_path):
    data = gpm()
    module_of(data, "i_45")["bodies"][0]["connectors"][0]["ID"] = "J1_proximal_connector"
    db = ModulesDB.from_json_file(write_set(tmp_path / "set", data))
    assert "J1_proximal_connector" in db["i_45"].connectors


def test_duplicate_joint_ids(tmp_path):
    def mutate(d):
        j1 = module_of(d, "J1")
        extra = copy.deepcopy(j1["bodies"][1])
        extra["ID"] = "J1_extra"
        for c in extra["connectors"]:
            c["ID"] = "J1_extra_connector"
        j1["bodies"].append(extra)
        joint = copy.deepcopy(j1["joints"][0])
        joint["parent"], joint["child"] = "J1_distal", "J1_extra"
        j1["joints"].append(joint)

    path, exc = load_case(tmp_path, mutate, ValidationError)
    check_error(exc, path, None, "J1_joint", "duplicate joint ID")
    assert exc.path is not None and exc.path.startswith("$.modules[1].joints")
