"""Experiment 1 of the Timor paper: paper.exp1 and `timor paper exp1` (needs the IMPROV data in ../shared)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from timor_core.cli.app import main
from timor_core.errors import InputError
from timor_core.model.db import ModulesDB
from timor_core.paper.experiments import EXP1_COUNT, exp1, exp1_space

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
IMPROV_DIR = SHARED / "data" / "cobra" / "modules" / "IMPROV"
IMPROV_FILE = IMPROV_DIR / "modules.json"

pytestmark = pytest.mark.skipif(
    not SHARED.is_dir() or not IMPROV_FILE.is_file(), reason=f"IMPROV data not available (expected {IMPROV_FILE})"
)

KEYS = {"count", "seconds", "ms_per_assembly"}


@pytest.fixture(scope="module")
def improv_db() -> ModulesDB:
    return ModulesDB.from_json_file(IMPROV_FILE)


@pytest.fixture(scope="module")
def broken_sets(tmp_path_factory) -> dict[str, Path]:
    """IMPROV copies in one folder (with the meshes): one without PB23, one where L8 fits nothing."""
    folder = tmp_path_factory.mktemp("improv")
    shutil.copytree(IMPROV_DIR / "STLfiles", folder / "STLfiles")
    data = json.loads(IMPROV_FILE.read_text())
    without = dict(data, modules=[m for m in data["modules"] if m["header"]["ID"] != "23"])
    (folder / "no_pb23.json").write_text(json.dumps(without))
    for m in data["modules"]:
        if m["header"]["ID"] == "14":
            for body in m["bodies"]:
                for c in body.get("connectors", ()):
                    c["size"] = [7]
    (folder / "l8_fits_nothing.json").write_text(json.dumps(data))
    return {"missing": folder / "no_pb23.json", "mutated": folder / "l8_fits_nothing.json"}


def test_space_is_the_science2019_space(improv_db):
    space = exp1_space(improv_db)
    assert len(space) == EXP1_COUNT == 32_768


def test_exp1_limit(improv_db):
    result = exp1(improv_db, limit=200)
    assert result.count == 200
    assert 0 < result.seconds < 60
    assert result.ms_per_assembly == pytest.approx(result.seconds / 200 * 1e3)
    assert 0.01 < result.ms_per_assembly < 300  # ours: ~0.3-0.5 ms on a shared 2-CPU machine
    assert set(result.to_json()) == KEYS
    assert "200 URDFs" in result.summary()


def test_exp1_rejects_bad_limit(improv_db):
    for bad in (0, -3, 1.5, True):
        with pytest.raises(InputError, match="limit"):
            exp1(improv_db, limit=bad)


def test_exp1_rejects_other_sets(broken_sets):
    with pytest.raises(InputError, match="not the IMPROV set.*missing: 1, 12, 4, 5, 14, 15, 6, 7, 8, 21, 23$"):
        exp1(ModulesDB.from_name("robco_like"))
    with pytest.raises(InputError, match="missing: 23$"):
        exp1(ModulesDB.from_json_file(broken_sets["missing"]))
    with pytest.raises(InputError, match="gives 18432 assemblies .* not 32768"):
        exp1(ModulesDB.from_json_file(broken_sets["mutated"]))


def test_cli_json(capsys):
    assert main(["paper", "exp1", "--db", str(IMPROV_FILE), "--json", "--limit", "100"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == KEYS
    assert out["count"] == 100
    assert out["seconds"] > 0 and out["ms_per_assembly"] > 0


def test_cli_readable(capsys):
    assert main(["paper", "exp1", "--db", str(IMPROV_DIR), "--limit", "20"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("experiment 1: 20 URDFs") and "127 s" in out


def test_cli_subprocess():
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "timor_core.cli",
            "paper",
            "exp1",
            "--db",
            str(IMPROV_FILE),
            "--json",
            "--limit",
            "50",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == KEYS and out["count"] == 50
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "db, expected",
    [
        ("robco_like", "is not the IMPROV set"),
        ("missing", "missing: 23"),
        ("mutated", "not 32768"),
        ("/nonexistent/modules.json", "file not found"),
    ],
)
def test_cli_bad_db(db, expected, broken_sets, capsys):
    db = str(broken_sets.get(db, db))
    assert main(["paper", "exp1", "--db", db, "--json"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and expected in lines[0]


def test_cli_bad_limit(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["paper", "exp1", "--db", str(IMPROV_FILE), "--limit", "0"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "--limit" in err and "expected an integer 1-" in err and "max_search_evals" in err
