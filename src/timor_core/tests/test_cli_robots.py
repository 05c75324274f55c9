"""Tests of the ``timor`` commands that build a robot from a module chain (timor_core.cli.app): ``urdf``, ``fk`` and
``demo``, in-process with capsys; errors in the user's input print one clear line and exit 2."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest
from cli_cases import CHAIN, NAME, gpm, run_cli, write_set

from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB

CHAIN_DOF = 3


@pytest.fixture()
def good_file(tmp_path) -> Path:
    return write_set(tmp_path / "good", gpm())


# ---------------------------------------------------------------------------------------------------------
# urdf
# ---------------------------------------------------------------------------------------------------------
def test_urdf_to_file(capsys, tmp_path):
    target = tmp_path / "sub" / "out.urdf"
    code, out, err = run_cli(capsys, "urdf", NAME, *CHAIN, "-o", str(target))
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
    code, out, err = run_cli(capsys, "urdf", NAME, *CHAIN, "--name", "my_robot", "--prefix", "r1_")
    assert code == 0, err
    root = ET.fromstring(out)
    assert root.get("name") == "my_robot"
    links = {link.get("name") for link in root.iter("link")}
    assert {"r1_base_link", "r1_tool0"} <= links
    assert ModuleAssembly.from_serial_modules(ModulesDB.from_name(NAME), CHAIN).to_urdf("my_robot", prefix="r1_") == out


def test_urdf_from_file_db(capsys, good_file):
    code, out, _ = run_cli(capsys, "urdf", str(good_file), "base", "P1", "eef")
    assert code == 0
    root = ET.fromstring(out)
    assert [j.get("type") for j in root.iter("joint") if j.get("type") != "fixed"] == ["prismatic"]


@pytest.mark.invalid_urdf  # it writes placeholder text into .urdf files
def test_urdf_does_not_overwrite_on_error(capsys, tmp_path):
    target = tmp_path / "out.urdf"
    target.write_text("keep me")
    code, _, err = run_cli(capsys, "urdf", NAME, "base", "nope", "-o", str(target))
    assert code == 2 and "'nope'" in err
    assert target.read_text() == "keep me"


def test_urdf_incompatible_chain(capsys):
    code, out, err = run_cli(capsys, "urdf", NAME, "base", "eef", "J2")
    assert code == 2 and out == ""
    assert err.startswith("error: ") and "'eef'" in err and "'J2'" in err


# ---------------------------------------------------------------------------------------------------------
# fk
# ---------------------------------------------------------------------------------------------------------
def test_fk_prints_tcp_pose(capsys):
    code, out, err = run_cli(capsys, "fk", NAME, *CHAIN, "--q", "0.1,0.2,0.3")
    assert code == 0, err
    result = json.loads(out)
    tcp = np.array(result["tcp"])
    assert tcp.shape == (4, 4)
    expected = ModuleAssembly.from_serial_modules(ModulesDB.from_name(NAME), CHAIN).robot.fk(np.array([0.1, 0.2, 0.3]))
    assert np.allclose(tcp, expected, atol=1e-12)
    assert np.allclose(tcp[3], [0, 0, 0, 1])


def test_fk_default_is_zero_and_negative_values(capsys):
    robot = ModuleAssembly.from_serial_modules(ModulesDB.from_name(NAME), CHAIN).robot
    code, out, _ = run_cli(capsys, "fk", NAME, *CHAIN)
    assert code == 0 and np.allclose(json.loads(out)["tcp"], robot.fk(np.zeros(CHAIN_DOF)))
    code, out, _ = run_cli(capsys, "fk", NAME, *CHAIN, "--q=-0.5, 0.25,-1")
    assert code == 0 and np.allclose(json.loads(out)["tcp"], robot.fk(np.array([-0.5, 0.25, -1.0])))


def test_fk_all_frames(capsys):
    code, out, _ = run_cli(capsys, "fk", NAME, *CHAIN, "--q", "0,0,0", "--all")
    assert code == 0
    result = json.loads(out)
    assert "tool0" in result["frames"]
    assert np.allclose(result["frames"]["tool0"], result["tcp"])


@pytest.mark.parametrize("q", ["0.1,0.2", "0.1,0.2,0.3,0.4", ""], ids=["too-few", "too-many", "empty"])
def test_fk_wrong_number_of_q(capsys, q):
    code, out, err = run_cli(capsys, "fk", NAME, *CHAIN, "--q", q)
    assert code == 2
    assert out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("error: ") and f"needs {CHAIN_DOF} values" in line
    assert "Traceback" not in err


@pytest.mark.parametrize("q", ["a,b,c", "0.1;0.2;0.3", "nan,0,0", "inf,0,0"])
def test_fk_bad_q_values(capsys, q):
    code, out, err = run_cli(capsys, "fk", NAME, *CHAIN, "--q", q)
    assert code == 2 and out == ""
    assert err.startswith("error: ") and "--q" in err


def test_fk_unknown_module(capsys):
    code, out, err = run_cli(capsys, "fk", NAME, "base", "J2", "J42", "eef", "--q", "0")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert "'J42'" in line and "Traceback" not in err


def test_fk_without_end_effector(capsys):
    """Without an end effector the TCP is the frame ``tcp`` at the last module's free connector."""
    code, out, err = run_cli(capsys, "fk", NAME, "base", "J2", "--q", "0")
    assert code == 0, err
    result = json.loads(out)
    assert result["tcp_frame"] == "tcp" and np.asarray(result["tcp"]).shape == (4, 4)
    code, out, _ = run_cli(capsys, "fk", NAME, "base", "J2", "eef", "--q", "0")
    assert code == 0 and json.loads(out)["tcp_frame"] == "tool0"


# ---------------------------------------------------------------------------------------------------------
# demo
# ---------------------------------------------------------------------------------------------------------
def test_demo(capsys, tmp_path):
    out_dir = tmp_path / "demo"
    code, out, err = run_cli(capsys, "demo", "--out", str(out_dir))
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
    code, out, _ = run_cli(capsys, *argv)
    assert code == 0
    assert "DOF            : 2" in out and "task" not in out
    assert (tmp_path / "robot.urdf").is_file() and not (tmp_path / "pick_and_place").exists()
