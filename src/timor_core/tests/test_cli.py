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

from timor_core.cli.app import main
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB

NAME = "geometric_primitive_modules"
CHAIN = ["base", "J2", "i_45", "J2", "J2", "eef"]
CHAIN_DOF = 3
_GPM_FILE = Path(__file__).resolve().parents[1] / "timor_core" / "data" / NAME / "modules.json"
SHARED = Path(__file__).resolve().parents[3].parent / "shared"
IMPROV = SHARED / "data" / "cobra" / "modules" / "IMPROV" / "modules.json"
needs_improv = pytest.mark.skipif(not IMPROV.is_file(), reason=f"shared IMPROV module set not found at {IMPROV}")


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _subprocess(*argv: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "timor_core.cli", *argv], cwd=cwd, capture_output=True, text=True, timeout=120
    )


def _gpm() -> dict:
    return json.loads(_GPM_FILE.read_text(encoding="utf-8"))


def _write_set(folder: Path, data: dict | None = None, text: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "modules.json"
    path.write_text(text if text is not None else json.dumps(data, indent=2), encoding="utf-8")
    return path


def _module(data: dict, module_id: str) -> dict:
    return next(m for m in data["modules"] if m["header"]["ID"] == module_id)


@pytest.fixture()
def good_file(tmp_path) -> Path:
    return _write_set(tmp_path / "good", _gpm())


@pytest.fixture()
def bad_file(tmp_path) -> tuple[Path, list[str]]:
    """A set with three independent errors, and the JSON paths the validator must name."""
    data = copy.deepcopy(_gpm())
    _module(data, "base")["bodies"][0]["connectors"][1]["gender"] = "q"
    limits = _module(data, "J2")["joints"][0]["limits"]
    limits["positionLower"], limits["positionUpper"] = 1.0, -1.0
    _module(data, "i_45")["bodies"][0]["mass"] = -3.0
    paths = [
        "$.modules[0].bodies[0].connectors[1].gender",
        "$.modules[2].joints[0].limits",
        "$.modules[6].bodies[0].mass",
    ]
    return _write_set(tmp_path / "bad", data), paths


# ---------------------------------------------------------------------------------------------------------
# db info
# ---------------------------------------------------------------------------------------------------------
def test_db_info_by_name_lists_modules(capsys):
    code, out, err = _run(capsys, "db", "info", NAME)
    assert code == 0, err
    assert NAME in out and "11 modules" in out
    lines = out.splitlines()
    for mid in ("base", "J1", "J2", "P1", "i_15", "i_30", "i_45", "l_15", "l_30", "l_45", "eef"):
        assert any(line.split()[:1] == [mid] for line in lines), mid
    assert "base_out(m,default)" in out


def test_db_info_alias_name(capsys):
    code, out, _ = _run(capsys, "db", "info", "geometric_primitives")
    assert code == 0 and "11 modules" in out


def test_db_info_file_json(capsys, good_file):
    code, out, err = _run(capsys, "db", "info", str(good_file), "--json")
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
    code, out, _ = _run(capsys, "db", "info", str(good_file.parent))
    assert code == 0 and "11 modules" in out


def test_db_info_bad_file_exits_2_with_path(capsys, bad_file):
    path, paths = bad_file
    code, out, err = _run(capsys, "db", "info", str(path))
    assert code == 2
    assert out == ""
    assert err.startswith("error: ") and str(path) in err and paths[0] in err
    assert "Traceback" not in err


@pytest.mark.parametrize("source", ["no_such_set", "/definitely/not/here/modules.json"])
def test_db_info_unknown_source_exits_2(capsys, source):
    code, _, err = _run(capsys, "db", "info", source)
    assert code == 2
    assert err.startswith("error: ") and len(err.strip().splitlines()) == 1
    assert source in err


# ---------------------------------------------------------------------------------------------------------
# db validate
# ---------------------------------------------------------------------------------------------------------
def test_db_validate_good_file(capsys, good_file):
    code, out, err = _run(capsys, "db", "validate", str(good_file))
    assert code == 0, err
    assert "valid" in out and err == ""


def test_db_validate_good_file_json(capsys, good_file):
    code, out, _ = _run(capsys, "db", "validate", str(good_file), "--json")
    assert code == 0
    assert json.loads(out) == {"file": str(good_file), "valid": True, "errors": [], "warnings": []}


def test_db_validate_bad_file_lists_every_error(capsys, bad_file):
    path, paths = bad_file
    code, out, err = _run(capsys, "db", "validate", str(path))
    assert code != 0
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 3, err
    for line, json_path in zip(lines, paths):
        assert line.startswith("error: ") and str(path) in line and json_path in line
    assert "'q'" in lines[0] and "-3.0" in lines[2]


def test_db_validate_bad_file_json(capsys, bad_file):
    path, paths = bad_file
    code, out, _ = _run(capsys, "db", "validate", str(path), "--json")
    assert code != 0
    report = json.loads(out)
    assert report["valid"] is False and len(report["errors"]) == 3
    for message, json_path in zip(report["errors"], paths):
        assert json_path in message


def test_db_validate_truncated_json(capsys, tmp_path):
    text = json.dumps(_gpm(), indent=2)
    path = _write_set(tmp_path / "cut", text=text[: len(text) // 2])
    code, out, err = _run(capsys, "db", "validate", str(path))
    assert code != 0
    assert "Traceback" not in err
    (line,) = err.strip().splitlines()
    assert str(path) in line and "invalid JSON" in line and "line" in line


@pytest.mark.parametrize("content", ["", "NaN", "[1, 2", "\xff\xfe"], ids=["empty", "nan", "cut", "binary"])
def test_db_validate_garbage(capsys, tmp_path, content):
    path = tmp_path / "modules.json"
    path.write_bytes(content.encode("latin-1"))
    code, _, err = _run(capsys, "db", "validate", str(path))
    assert code != 0
    assert err.startswith("error: ") and str(path) in err


def test_db_validate_missing_file_and_folder(capsys, tmp_path):
    code, _, err = _run(capsys, "db", "validate", str(tmp_path / "nope.json"))
    assert code != 0 and "not found" in err
    code, _, err = _run(capsys, "db", "validate", str(tmp_path))
    assert code != 0 and str(tmp_path) in err


# ---------------------------------------------------------------------------------------------------------
# urdf
# ---------------------------------------------------------------------------------------------------------
def test_urdf_to_file(capsys, tmp_path):
    target = tmp_path / "sub" / "out.urdf"
    code, out, err = _run(capsys, "urdf", NAME, *CHAIN, "-o", str(target))
    assert code == 0, err
    assert out == ""
    assert str(target) in err and f"{CHAIN_DOF} DOF" in err
    text = target.read_text()

    root = ET.fromstring(text)
    assert root.tag == "robot"
    links = {link.get("name") for link in root.iter("link")}
    assert {"base_link", "tool0"} <= links
    movable = [j for j in root.iter("joint") if j.get("type") != "fixed"]
    assert len(movable) == CHAIN_DOF

    from urdf_parser_py.urdf import URDF

    robot = URDF.from_xml_string(text)
    assert robot.get_root() == "base_link"
    assert "tool0" in robot.link_map
    assert sum(1 for j in robot.joints if j.type != "fixed") == CHAIN_DOF

    import pinocchio as pin

    model = pin.buildModelFromXML(text)
    assert model.nq == CHAIN_DOF and model.nv == CHAIN_DOF
    assert model.existFrame("tool0") and model.existFrame("base_link")

    # the same as the library's own direct model
    assembly = ModuleAssembly.from_serial_modules(ModulesDB.from_name(NAME), CHAIN)
    q = np.array([0.3, -0.7, 1.1])
    data = model.createData()
    pin.framesForwardKinematics(model, data, q)
    tcp = data.oMf[model.getFrameId("tool0")].homogeneous
    assert np.allclose(tcp, assembly.robot.fk(q), atol=1e-9)


def test_urdf_to_stdout(capsys):
    code, out, err = _run(capsys, "urdf", NAME, *CHAIN, "--name", "my_robot", "--prefix", "r1_")
    assert code == 0, err
    root = ET.fromstring(out)
    assert root.get("name") == "my_robot"
    links = {link.get("name") for link in root.iter("link")}
    assert {"r1_base_link", "r1_tool0"} <= links
    assert ModuleAssembly.from_serial_modules(ModulesDB.from_name(NAME), CHAIN).to_urdf("my_robot", prefix="r1_") == out


def test_urdf_from_file_db(capsys, good_file):
    code, out, _ = _run(capsys, "urdf", str(good_file), "base", "P1", "eef")
    assert code == 0
    root = ET.fromstring(out)
    assert [j.get("type") for j in root.iter("joint") if j.get("type") != "fixed"] == ["prismatic"]


@pytest.mark.invalid_urdf  # it writes placeholder text into .urdf files
def test_urdf_does_not_overwrite_on_error(capsys, tmp_path):
    target = tmp_path / "out.urdf"
    target.write_text("keep me")
    code, _, err = _run(capsys, "urdf", NAME, "base", "nope", "-o", str(target))
    assert code == 2 and "'nope'" in err
    assert target.read_text() == "keep me"


def test_urdf_incompatible_chain(capsys):
    code, out, err = _run(capsys, "urdf", NAME, "base", "eef", "J2")
    assert code == 2 and out == ""
    assert err.startswith("error: ") and "'eef'" in err and "'J2'" in err


# ---------------------------------------------------------------------------------------------------------
# fk
# ---------------------------------------------------------------------------------------------------------
def test_fk_prints_tcp_pose(capsys):
    code, out, err = _run(capsys, "fk", NAME, *CHAIN, "--q", "0.1,0.2,0.3")
    assert code == 0, err
    result = json.loads(out)
    tcp = np.array(result["tcp"])
    assert tcp.shape == (4, 4)
    expected = ModuleAssembly.from_serial_modules(ModulesDB.from_name(NAME), CHAIN).robot.fk(np.array([0.1, 0.2, 0.3]))
    assert np.allclose(tcp, expected, atol=1e-12)
    assert np.allclose(tcp[3], [0, 0, 0, 1])


def test_fk_default_is_zero_and_negative_values(capsys):
    robot = ModuleAssembly.from_serial_modules(ModulesDB.from_name(NAME), CHAIN).robot
    code, out, _ = _run(capsys, "fk", NAME, *CHAIN)
    assert code == 0 and np.allclose(json.loads(out)["tcp"], robot.fk(np.zeros(CHAIN_DOF)))
    code, out, _ = _run(capsys, "fk", NAME, *CHAIN, "--q=-0.5, 0.25,-1")
    assert code == 0 and np.allclose(json.loads(out)["tcp"], robot.fk(np.array([-0.5, 0.25, -1.0])))


def test_fk_all_frames(capsys):
    code, out, _ = _run(capsys, "fk", NAME, *CHAIN, "--q", "0,0,0", "--all")
    assert code == 0
    result = json.loads(out)
    assert "tool0" in result["frames"]
    assert np.allclose(result["frames"]["tool0"], result["tcp"])


@pytest.mark.parametrize("q", ["0.1,0.2", "0.1,0.2,0.3,0.4", ""], ids=["too-few", "too-many", "empty"])
def test_fk_wrong_number_of_q(capsys, q):
    code, out, err = _run(capsys, "fk", NAME, *CHAIN, "--q", q)
    assert code == 2
    assert out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ") and f"needs {CHAIN_DOF} values" in line
    assert "Traceback" not in err


@pytest.mark.parametrize("q", ["a,b,c", "0.1;0.2;0.3", "nan,0,0", "inf,0,0"])
def test_fk_bad_q_values(capsys, q):
    code, out, err = _run(capsys, "fk", NAME, *CHAIN, "--q", q)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and "--q" in err


def test_fk_unknown_module(capsys):
    code, out, err = _run(capsys, "fk", NAME, "base", "J2", "J42", "eef", "--q", "0")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert "'J42'" in line and "Traceback" not in err


def test_fk_without_end_effector(capsys):
    """Without an end effector the TCP is the frame ``tcp`` at the last module's free connector."""
    code, out, err = _run(capsys, "fk", NAME, "base", "J2", "--q", "0")
    assert code == 0, err
    result = json.loads(out)
    assert result["tcp_frame"] == "tcp" and np.asarray(result["tcp"]).shape == (4, 4)
    code, out, _ = _run(capsys, "fk", NAME, "base", "J2", "eef", "--q", "0")
    assert code == 0 and json.loads(out)["tcp_frame"] == "tool0"


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
# demo
# ---------------------------------------------------------------------------------------------------------
def test_demo(capsys, tmp_path):
    out_dir = tmp_path / "demo"
    code, out, err = _run(capsys, "demo", "--out", str(out_dir))
    assert code == 0, err
    urdf = out_dir / "robot.urdf"
    assert urdf.is_file()
    assert {"base_link", "tool0"} <= {link.get("name") for link in ET.parse(urdf).getroot().iter("link")}
    robot = ModuleAssembly.from_serial_modules(ModulesDB.from_name(NAME), CHAIN).robot
    assert f"DOF            : {CHAIN_DOF}" in out
    assert f"mass           : {robot.mass:.3f} kg" in out
    summary = json.loads((out_dir / "summary.json").read_text())
    assert summary["dof"] == CHAIN_DOF and np.isclose(summary["mass_kg"], robot.mass, atol=1e-6)
    assembly = json.loads((out_dir / "assembly.json").read_text())
    assert assembly["moduleOrder"] == CHAIN
    # the embedded task: the lightest robot found, verified, its motion planned and its MoveIt config written
    task = summary["task"]
    assert task["found"] and task["verified"] and task["solution_valid"], task
    assert f"lightest robot : {' '.join(task['best'])}, {task['mass_kg']:.2f} kg (verified: True)" in out
    from timor_core.task import Task
    from timor_core.task.solution import Solution

    solution = Solution.from_json_file(task["solution"], Task.from_name("pick_and_place"), "robco_like")
    assert solution.valid and solution.all_goals_achieved
    assert solution.assembly.module_ids == task["best"] and solution.cost == pytest.approx(task["mass_kg"])
    moveit = Path(task["moveit_config"])
    assert {"kinematics.yaml", "ros2_controllers.yaml"} <= {p.name for p in moveit.iterdir()}
    urdf_with_control = next(moveit.glob("*.urdf"))
    assert ET.parse(urdf_with_control).getroot().find("ros2_control") is not None


def test_demo_custom_modules(capsys, tmp_path):
    argv = ["demo", "--out", str(tmp_path), "--modules", "base", "J1", "l_30", "P1", "eef", "--no-task"]
    code, out, _ = _run(capsys, *argv)
    assert code == 0
    assert "DOF            : 2" in out and "task" not in out
    assert (tmp_path / "robot.urdf").is_file() and not (tmp_path / "pick_and_place").exists()


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
    text = json.dumps(_gpm(), indent=2)
    cut = _write_set(tmp_path / "cut", text=text[: len(text) // 3])
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
        code, _, err = _run(capsys, *argv)
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
    code, out, err = _run(capsys, "db", "info", str(IMPROV), "--json")
    assert code == 0, err
    info = json.loads(out)
    assert info["modules"] == len(json.loads(IMPROV.read_text())["modules"]) > 0
    assert info["bases"] and info["end_effectors"]


@needs_improv
def test_improv_db_validate(capsys):
    code, out, err = _run(capsys, "db", "validate", str(IMPROV))
    assert code == 0, err
    assert "valid" in out


@needs_improv
def test_improv_db_validate_subprocess(tmp_path):
    proc = _subprocess("db", "validate", str(IMPROV), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
