"""Tests of the ``timor`` command line (timor_core.cli.app): in-process with capsys, and through a subprocess.

Errors in the user's input must print one clear line on stderr and exit non-zero, never a traceback.
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from cli_cases import CHAIN, NAME, gpm, run_cli, write_set

from timor_core.cli.app import main
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
IMPROV = SHARED / "data" / "cobra" / "modules" / "IMPROV" / "modules.json"
needs_improv = pytest.mark.skipif(not IMPROV.is_file(), reason=f"shared IMPROV module set not found at {IMPROV}")


def _subprocess(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "timor_core.cli", *argv], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _module(data: dict, module_id: str) -> dict:
    return next(m for m in data["modules"] if m["header"]["ID"] == module_id)


@pytest.fixture()
def good_file(tmp_path) -> Path:
    return write_set(tmp_path / "good", gpm())


@pytest.fixture()
def bad_file(tmp_path) -> tuple[Path, list[str]]:
    """A set with three independent errors, and the JSON paths the validator must name."""
    data = copy.deepcopy(gpm())
    _module(data, "base")["bodies"][0]["connectors"][1]["gender"] = "q"
    limits = _module(data, "J2")["joints"][0]["limits"]
    limits["positionLower"], limits["positionUpper"] = 1.0, -1.0
    _module(data, "i_45")["bodies"][0]["mass"] = -3.0
    paths = [
        "$.modules[0].bodies[0].connectors[1].gender",
        "$.modules[2].joints[0].limits",
        "$.modules[6].bodies[0].mass",
    ]
    return write_set(tmp_path / "bad", data), paths


# ---------------------------------------------------------------------------------------------------------
# db info
# ---------------------------------------------------------------------------------------------------------
def test_db_info_by_name_lists_modules(capsys):
    code, out, err = run_cli(capsys, "db", "info", NAME)
    assert code == 0, err
    assert NAME in out and "11 modules" in out
    lines = out.splitlines()
    for mid in ("base", "J1", "J2", "P1", "i_15", "i_30", "i_45", "l_15", "l_30", "l_45", "eef"):
        assert any(line.split()[:1] == [mid] for line in lines), mid
    assert "base_out(m,default)" in out


def test_db_info_alias_name(capsys):
    code, out, _ = run_cli(capsys, "db", "info", "geometric_primitives")
    assert code == 0 and "11 modules" in out


def test_db_info_file_json(capsys, good_file):
    code, out, err = run_cli(capsys, "db", "info", str(good_file), "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["modules"] == 11 == len(info["module_details"])
    assert Path(info["source"]).resolve() == good_file.resolve()
    assert info["bases"] == ["base"] and info["end_effectors"] == ["eef"]
    assert sorted(info["joints"]) == ["J1", "J2", "P1"]
    details = {m["id"]: m for m in info["module_details"]}
    assert details["J2"]["dof"] == 1 and details["base"]["dof"] == 0
    assert details["J2"]["connectors"] == ["J2_proximal_connector", "J2_distal_connector"]


def test_db_info_folder(capsys, good_file):
    code, out, _ = run_cli(capsys, "db", "info", str(good_file.parent))
    assert code == 0 and "11 modules" in out


def test_db_info_bad_file_exits_2_with_path(capsys, bad_file):
    path, paths = bad_file
    code, out, err = run_cli(capsys, "db", "info", str(path))
    assert code == 2
    assert out == ""
    assert err.startswith("error: ") and str(path) in err and paths[0] in err
    assert "Traceback" not in err


@pytest.mark.parametrize("source", ["no_such_set", "/definitely/not/here/modules.json"])
def test_db_info_unknown_source_exits_2(capsys, source):
    code, _, err = run_cli(capsys, "db", "info", source)
    assert code == 2
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert source in err


# ---------------------------------------------------------------------------------------------------------
# db validate
# ---------------------------------------------------------------------------------------------------------
def test_db_validate_good_file(capsys, good_file):
    code, out, err = run_cli(capsys, "db", "validate", str(good_file))
    assert code == 0, err
    assert "valid" in out and err == ""


def test_db_validate_good_file_json(capsys, good_file):
    code, out, _ = run_cli(capsys, "db", "validate", str(good_file), "--json")
    assert code == 0
    assert json.loads(out) == {"file": str(good_file), "valid": True, "errors": [], "warnings": []}


def test_db_validate_bad_file_lists_every_error(capsys, bad_file):
    path, paths = bad_file
    code, out, err = run_cli(capsys, "db", "validate", str(path))
    assert code != 0
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 3, err
    for line, json_path in zip(lines, paths):
        assert line.startswith("error: ") and str(path) in line and json_path in line
    assert "'q'" in lines[0] and "-3.0" in lines[2]


def test_db_validate_bad_file_json(capsys, bad_file):
    path, paths = bad_file
    code, out, _ = run_cli(capsys, "db", "validate", str(path), "--json")
    assert code != 0
    report = json.loads(out)
    assert report["valid"] is False and len(report["errors"]) == 3
    for message, json_path in zip(report["errors"], paths):
        assert json_path in message


def test_db_validate_truncated_json(capsys, tmp_path):
    text = json.dumps(gpm(), indent=2)
    path = write_set(tmp_path / "cut", text=text[: len(text) // 2])
    code, out, err = run_cli(capsys, "db", "validate", str(path))
    assert code != 0
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert str(path) in line and "invalid JSON" in line and "line" in line


@pytest.mark.parametrize("content", ["", "NaN", "[1, 2", "\xff\xfe"], ids=["empty", "nan", "cut", "binary"])
def test_db_validate_garbage(capsys, tmp_path, content):
    path = tmp_path / "modules.json"
    path.write_bytes(content.encode("latin-1"))
    code, _, err = run_cli(capsys, "db", "validate", str(path))
    assert code != 0
    assert err.startswith("error: ") and str(path) in err


def test_db_validate_missing_file_and_folder(capsys, tmp_path):
    code, _, err = run_cli(capsys, "db", "validate", str(tmp_path / "nope.json"))
    assert code != 0 and "not found" in err
    code, _, err = run_cli(capsys, "db", "validate", str(tmp_path))
    assert code != 0 and str(tmp_path) in err


# ---------------------------------------------------------------------------------------------------------
# help and usage errors
# ---------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "argv",
    [[], ["db"], ["db", "info"], ["db", "validate"], ["urdf"], ["fk"], ["demo"]],
    ids=["top", "db", "db-info", "db-validate", "urdf", "fk", "demo"],
)
def test_help(capsys, argv):
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    assert info.value.code == 0
    out, _ = capsys.readouterr()
    assert out.startswith("usage: timor")


@pytest.mark.parametrize("argv", [[], ["db"], ["frobnicate"], ["urdf", NAME], ["fk"], ["db", "info", NAME, "--bogus"]])
def test_usage_errors_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    _, err = capsys.readouterr()
    assert "usage: timor" in err and "Traceback" not in err


# ---------------------------------------------------------------------------------------------------------
# through a real subprocess: exit codes and no traceback
# ---------------------------------------------------------------------------------------------------------
def test_subprocess_validate_bad_file_no_traceback(tmp_path, bad_file):
    path, paths = bad_file
    proc = _subprocess("db", "validate", str(path), cwd=tmp_path)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    for json_path in paths:
        assert json_path in proc.stderr
    assert all(line.startswith("error: ") for line in proc.stderr.strip().splitlines())


def test_subprocess_errors_exit_2_no_traceback(tmp_path):
    text = json.dumps(gpm(), indent=2)
    cut = write_set(tmp_path / "cut", text=text[: len(text) // 3])
    for argv in (
        ["fk", NAME, *CHAIN, "--q", "1,2"],
        ["fk", NAME, "base", "J2", "nope", "eef"],
        ["urdf", str(cut), "base", "J2", "eef"],
        ["db", "info", str(cut)],
    ):
        proc = _subprocess(*argv, cwd=tmp_path)
        assert proc.returncode == 2, (argv, proc.stderr)
        assert "Traceback" not in proc.stderr, argv
        assert proc.stderr.startswith("error: "), argv
        assert proc.stdout == "", argv


def test_subprocess_success(tmp_path):
    proc = _subprocess("fk", NAME, *CHAIN, "--q", "0.1,0.2,0.3", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    expected = ModuleAssembly.from_serial_modules(ModulesDB.from_name(NAME), CHAIN).robot.fk(np.array([0.1, 0.2, 0.3]))
    assert np.allclose(json.loads(proc.stdout)["tcp"], expected)
    proc = _subprocess("urdf", NAME, *CHAIN, "-o", "robot.urdf", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert ET.parse(tmp_path / "robot.urdf").getroot().tag == "robot"


@pytest.mark.parametrize("kind", ["urdf-into-folder", "urdf-below-file", "demo-out-is-file"])
def test_unusable_output_path_is_a_clear_error(capsys, tmp_path, kind):
    (tmp_path / "a_folder").mkdir()
    (tmp_path / "a_file").write_text("x")
    argv = {
        "urdf-into-folder": ["urdf", NAME, *CHAIN, "-o", str(tmp_path / "a_folder")],
        "urdf-below-file": ["urdf", NAME, *CHAIN, "-o", str(tmp_path / "a_file" / "robot.urdf")],
        "demo-out-is-file": ["demo", "--out", str(tmp_path / "a_file")],
    }[kind]
    if kind == "demo-out-is-file":  # refused by the option's type, before any work
        with pytest.raises(SystemExit) as info:
            main(argv)
        code, err = info.value.code, capsys.readouterr().err.splitlines()[-1] + "\n"
    else:
        code, _, err = run_cli(capsys, *argv)
    assert code == 2
    assert err.startswith("error: ")
    assert (tmp_path / "a_file").read_text() == "x"


def test_subprocess_unusable_output_path_no_traceback(tmp_path):
    (tmp_path / "a_folder").mkdir()
    proc = _subprocess("urdf", NAME, *CHAIN, "-o", "a_folder", cwd=tmp_path)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


# ---------------------------------------------------------------------------------------------------------
# the shared IMPROV module set (if the shared folder is next to the repository)
# ---------------------------------------------------------------------------------------------------------
@needs_improv
def test_improv_db_info(capsys):
    code, out, err = run_cli(capsys, "db", "info", str(IMPROV), "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["modules"] == len(json.loads(IMPROV.read_text())["modules"]) > 0
    assert info["bases"] and info["end_effectors"]


@needs_improv
def test_improv_db_validate(capsys):
    code, out, err = run_cli(capsys, "db", "validate", str(IMPROV))
    assert code == 0, err
    assert "valid" in out


@needs_improv
def test_improv_db_validate_subprocess(tmp_path):
    proc = _subprocess("db", "validate", str(IMPROV), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_misspelt_demo_set_names_the_option_and_the_closest_set(tmp_path, capsys):
    """``timor demo --db robco_lik`` said 'no embedded module set named ...' without the option or a hint (s57: every
    other --db names both); ``ModulesDB.from_name`` gives the hint to the Python API too."""
    assert main(["demo", "--db", "robco_lik", "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --db: no embedded module set named 'robco_lik'"), err
    assert err.endswith("; did you mean 'robco_like'?") and not (tmp_path / "out").exists(), err
    from timor_core.errors import UnknownModuleError

    with pytest.raises(UnknownModuleError, match="; did you mean 'robco_like'[?]$"):
        ModulesDB.from_name("robcoo")  # closest to the alias robco: named as its set
