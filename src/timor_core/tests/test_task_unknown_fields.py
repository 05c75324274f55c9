"""``timor task validate`` and ``timor db validate`` name the fields no reader uses: a typo of an optional field
(``"safetymargin": 0.05``, ``"peaktorque": 80``) reads as the field left out, a 0 m margin or no torque limit, and
the file passed as valid without a word (session 56's walk: a new user's own task and module set). The fields stay
in the task or set, written back unchanged."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import EMBEDDED, IMPROV_FILE, SHARED

from timor_core import ModulesDB
from timor_core.cli.app import main
from timor_core.model.validation import check_db_file
from timor_core.task import Task
from timor_core.task.unknown_fields import unknown_fields

TASK = json.loads((EMBEDDED / "tasks" / "pick_and_place.json").read_text())


def _find(d: dict, kind: str, key: str) -> dict:
    return next(item for item in d[kind] if item.get("type") == key or item.get("ID") == key)


def _rename(d: dict, old: str, new: str) -> None:
    d[new] = d.pop(old)


# (what the user wrote wrong, the JSON path and field the warning names, the field it suggests)
TYPOS = [
    (lambda d: _rename(_find(d, "constraints", "collisionFree"), "safetyMargin", "safetymargin"),
     "$.constraints[2]", "safetymargin", "safetyMargin"),
    (lambda d: _rename(_find(d, "constraints", "joint"), "parts", "part"), "$.constraints[0]", "part", "parts"),
    (lambda d: _rename(d["header"], "timeStepSize", "timeStepsize"), "$.header", "timeStepsize", "timeStepSize"),
    (lambda d: _find(d, "goals", "pick")["goalPose"].__setitem__("nominalparent", "world"), "$.goals[0].goalPose",
     "nominalparent", "nominalParent"),
    (lambda d: _find(d, "goals", "home").__setitem__("returntogoal", "pick"), "$.goals[3]", "returntogoal",
     "returnToGoal"),
    (lambda d: d["obstacles"][0]["collision"][0].__setitem__("Pose", d["obstacles"][0]["collision"][0]["pose"]),
     "$.obstacles[0].collision[0]", "Pose", "pose"),
    (lambda d: d["obstacles"][1]["collision"][0]["parameters"].__setitem__("R", 0.1),
     "$.obstacles[1].collision[0].parameters", "R", "r"),
]  # fmt: skip


def _validate(tmp_path: Path, data: dict, capsys, *extra: str) -> tuple[int, str, str]:
    path = tmp_path / "task.json"
    path.write_text(json.dumps(data))
    code = main(["task", "validate", str(path), *extra])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("spoil", "path", "field", "meant"), TYPOS, ids=[t[2] for t in TYPOS])
def test_a_misspelt_field_is_named_with_its_path_and_the_field_meant(tmp_path, capsys, spoil, path, field, meant):
    data = copy.deepcopy(TASK)
    spoil(data)
    code, out, err = _validate(tmp_path, data, capsys)
    assert code == 0 and "valid" in out and "(1 warning)" in out, (out, err)
    line = f"{tmp_path / 'task.json'}: {path}: unknown field {field!r}, kept but not read (did you mean {meant!r}?)"
    assert err.strip() == f"warning: {line}", err
    code, out, _ = _validate(tmp_path, data, capsys, "--json")
    assert json.loads(out)["warnings"] == [line]
    task = Task.from_json_file(tmp_path / "task.json")
    assert task.to_json_data() == Task.from_json_data(data).to_json_data()  # kept for the round trip
    assert f'"{field}"' in json.dumps(task.to_json_data())
    code, out, err = _validate(tmp_path, data, capsys, "--strict")  # as db validate --strict: the warning fails it
    assert code == 1 and out == "" and err.strip() == f"error: {line}", (out, err)


def test_the_shipped_and_the_cobra_tasks_have_no_unknown_fields(capsys, tmp_path):
    """The fields CoBRA files carry that timor does not read (an obstacle's ``pose`` and ``acknowledgement``, the
    header's ``author``...) are no typos."""
    code, out, err = _validate(tmp_path, TASK, capsys)
    assert code == 0 and "warning" not in out + err
    files = sorted((SHARED / "data" / "cobra" / "tasks").rglob("*.json"))
    files += sorted((Path(__file__).parent / "data" / "exp2_tasks").glob("*.json"))
    for file in files:
        assert unknown_fields(Task.from_json_file(file, missing_assets="skip")) == [], file


def test_a_field_unlike_any_gets_no_guess_and_a_constraint_type_timor_does_not_evaluate_keeps_its_own(tmp_path):
    data = copy.deepcopy(TASK)
    data["goals"][0]["note"] = "by hand"
    data["constraints"].append({"type": "goalsBySameRobot", "goals": ["pick", "place"]})
    task = Task.from_json_data(data)
    assert unknown_fields(task) == ["$.goals[0]: unknown field 'note', kept but not read"]


SET = json.loads((EMBEDDED / "robco_like" / "modules.json").read_text())
SET_TYPOS = [  # (module, what the user wrote wrong, the JSON path the warning names, the field, the one meant)
    ("J", lambda m: _rename(m["joints"][0]["limits"], "peakTorque", "peaktorque"), "joints[0].limits", "peaktorque",
     "peakTorque"),
    ("L_100", lambda m: _rename(m["header"], "cost", "Cost"), "header", "Cost", "cost"),
    ("J", lambda m: _rename(m["joints"][0], "gearRatio", "gear_ratio"), "joints[0]", "gear_ratio", "gearRatio"),
    ("J", lambda m: _rename(m["bodies"][0], "r_com", "rCom"), "bodies[0]", "rCom", "r_com"),
    ("gripper", lambda m: m["bodies"][0]["connectors"][1].__setitem__("Size", [1]), "bodies[0].connectors[1]", "Size",
     "size"),
    ("J", lambda m: m["bodies"][0]["collision"][0]["parameters"].__setitem__("Z", 0.2),
     "bodies[0].collision[0].parameters", "Z", "z"),
]  # fmt: skip


@pytest.mark.parametrize(("module", "spoil", "path", "field", "meant"), SET_TYPOS, ids=[t[3] for t in SET_TYPOS])
def test_a_misspelt_module_field_is_a_warning_and_with_strict_an_error(tmp_path, capsys, module, spoil, path, field,
                                                                      meant):  # fmt: skip
    data = copy.deepcopy(SET)
    index = next(i for i, m in enumerate(data["modules"]) if m["header"]["ID"] == module)
    spoil(data["modules"][index])
    (tmp_path / "modules.json").write_text(json.dumps(data))
    report = check_db_file(tmp_path / "modules.json")
    line = f"unknown field {field!r}, kept but not read (did you mean {meant!r}?)"
    assert report.errors == [] and [(w.path, w.message) for w in report.warnings] == [
        (f"$.modules[{index}].{path}", line)
    ]
    assert main(["db", "validate", str(tmp_path)]) == 0
    assert line in capsys.readouterr().err
    assert main(["db", "validate", "--strict", str(tmp_path)]) == 1
    db = ModulesDB.from_json_file(tmp_path / "modules.json")  # it loads, and saves the field back
    db.to_json_file(tmp_path / "again" / "modules.json")
    saved = json.loads((tmp_path / "again" / "modules.json").read_text())["modules"][index]
    assert f'"{field}"' in json.dumps(saved) and f'"{field}"' in json.dumps(data["modules"][index])


def test_the_shipped_and_the_cobra_module_sets_have_no_unknown_fields():
    files = [EMBEDDED / name / "modules.json" for name in ("robco_like", "geometric_primitive_modules")]
    for file in files + ([IMPROV_FILE] if IMPROV_FILE.is_file() else []):
        assert [w for w in check_db_file(file).warnings if "unknown field" in w.message] == [], file
