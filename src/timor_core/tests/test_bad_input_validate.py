"""``validate_db_file`` reports every independent error of a module set (and the loader's first one), each naming
the file, the JSON path and the value."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from bad_input_cases import check_error, gpm, load_error, module_of, write_set

from timor_core.errors import ValidationError
from timor_core.model.validation import validate_db_file


# ---------------------------------------------------------------------------------------------------------
# validate_db_file reports every error
# ---------------------------------------------------------------------------------------------------------
def _three_errors() -> tuple[dict, list[tuple[str, Any]]]:
    data = gpm()
    module_of(data, "base")["bodies"][0]["connectors"][1]["gender"] = "x"
    limits = module_of(data, "J2")["joints"][0]["limits"]
    limits["positionLower"], limits["positionUpper"] = 2.0, -2.0
    module_of(data, "i_45")["bodies"][0]["visual"][0]["type"] = "cone"
    expected = [
        ("$.modules[0].bodies[0].connectors[1].gender", "x"),
        ("$.modules[2].joints[0].limits", {"positionLower": 2.0, "positionUpper": -2.0}),
        ("$.modules[6].bodies[0].visual[0].type", "cone"),
    ]
    return data, expected


def test_validate_reports_three_independent_errors(tmp_path):
    data, expected = _three_errors()
    path = write_set(tmp_path / "set", data)
    problems = validate_db_file(path)
    assert len(problems) == 3, [str(p) for p in problems]
    for problem, (json_path, value) in zip(problems, expected):
        check_error(problem, path, json_path, value)
    # the loader stops at the first one
    exc = load_error(path, ValidationError)
    assert exc.path == expected[0][0]


def test_validate_three_errors_in_bodies_of_different_modules(tmp_path):
    data = gpm()
    module_of(data, "base")["bodies"][0]["mass"] = -1.0
    module_of(data, "i_15")["bodies"][0]["inertia"] = [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, -1.0]]
    module_of(data, "l_30")["bodies"][0]["r_com"] = [0.0]
    path = write_set(tmp_path / "set", data)
    problems = validate_db_file(path)
    assert [p.path for p in problems] == [
        "$.modules[0].bodies[0].mass",
        "$.modules[4].bodies[0].inertia",
        "$.modules[8].bodies[0].r_com",
    ]
    assert all(p.file == str(path) for p in problems)


def test_validate_reports_module_level_duplicates_and_mode(tmp_path):
    data = gpm()
    data["ignore_collisions"] = "sometimes"
    module_of(data, "l_45")["header"]["ID"] = "l_15"
    path = write_set(tmp_path / "set", data)
    problems = validate_db_file(path)
    paths = [p.path for p in problems]
    assert "$.ignore_collisions" in paths and "$.modules[9].header.ID" in paths
    assert len(problems) == 2


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: module_of(d, "J1")["bodies"][0].__setitem__("mass", -1.0),
        lambda d: module_of(d, "J1")["bodies"][1].__setitem__("ID", "J1_proximal"),
    ],
    ids=["bad-body", "duplicate-body"],
)
def test_validate_reports_no_follow_up_errors(tmp_path, mutate):
    data = gpm()
    mutate(data)
    problems = validate_db_file(write_set(tmp_path / "set", data))
    if len(problems) == 2:  # renaming J1_distal really leaves the joint without its child: a second real fault
        text = " | ".join(str(p) for p in problems)
        assert "duplicate body ID" in text and "'J1_distal'" in text
    else:
        assert len(problems) == 1, [str(p) for p in problems]


def test_validate_duplicate_joint_reported_once(tmp_path):
    data = gpm()
    j1 = module_of(data, "J1")
    j1["joints"].append(copy.deepcopy(j1["joints"][0]))
    problems = validate_db_file(write_set(tmp_path / "set", data))
    assert len(problems) == 1, [str(p) for p in problems]
    assert "duplicate joint ID" in str(problems[0])


def test_validate_agrees_with_loader_on_empty_bodies(tmp_path):
    data = gpm()
    module_of(data, "i_15")["bodies"] = []
    path = write_set(tmp_path / "set", data)
    exc = load_error(path, ValidationError)
    assert exc.path == "$.modules[4].bodies"
    problems = validate_db_file(path)
    assert [p.path for p in problems] == ["$.modules[4].bodies"]


@pytest.mark.parametrize(
    "mutate",
    [
        lambda d: module_of(d, "J2")["joints"][0].__setitem__("type", "ball"),
        lambda d: module_of(d, "eef")["bodies"][0]["connectors"][0].pop("pose"),
        lambda d: module_of(d, "P1")["bodies"][1].__setitem__("inertia", [[1, 2, 3], [4, 5, 6], [7, 8, 9]]),
        lambda d: d.__setitem__("ignore_collisions", "all"),
        lambda d: module_of(d, "J1")["header"].__setitem__("ID", "J2"),
    ],
    ids=["joint-type", "connector-pose", "inertia", "mode", "dup-module"],
)
def test_validate_and_loader_report_the_same_first_error(tmp_path, mutate):
    data = gpm()
    mutate(data)
    path = write_set(tmp_path / "set", data)
    exc = load_error(path)
    problems = validate_db_file(path)
    assert problems, "validate_db_file found nothing the loader refuses"
    assert exc.path in [p.path for p in problems]
