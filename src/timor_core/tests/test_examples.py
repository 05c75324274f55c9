"""Every script in examples/ runs start to finish, prints what it claims, and writes files that load again.

Each script runs as its own process (``sys.executable examples/<script>.py OUTPUT_DIR``) with the working directory
in a temporary folder, as a user would run it.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest

from timor_core import ModuleAssembly, ModulesDB
from timor_core.search import SearchResult
from timor_core.task import Task
from timor_core.task.solution import Solution

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
TASK_FILE = Path(__file__).resolve().parents[1] / "timor_core" / "data" / "tasks" / "pick_and_place.json"
TESTED = {
    "build_robot.py",
    "custom_module_and_tree.py",
    "inverse_kinematics.py",
    "task_and_solution.py",
    "search.py",
    "ros_exports.py",
    "visualize.py",
}


def run_example(script: str, cwd: Path, *args: str) -> str:
    """Run one example in its own interpreter; fail with its output unless it exits 0; return its stdout."""
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / script), *args], cwd=cwd, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, f"{script} exited {proc.returncode}\nstdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
    return proc.stdout


def test_every_example_is_tested_and_documented():
    scripts = {p.name for p in EXAMPLES.glob("*.py")}
    assert scripts == TESTED
    readme = (EXAMPLES / "README.md").read_text()
    for script in scripts:
        assert f"[{script}]" in readme
        assert f"python examples/{script}" in (EXAMPLES / script).read_text()  # the docstring says how to run it


def test_build_robot(tmp_path):
    out = run_example("build_robot.py", tmp_path)  # no argument: writes to build/examples below the cwd
    folder = tmp_path / "build" / "examples"
    assert "DOF: 3" in out
    assert "mass: 13.575 kg" in out
    assert re.search(r"self-collision at q: False", out)
    assert re.search(r"self-collision at \[.*\]: True, pairs \[\('base_link", out)
    assert "reloaded assembly is the same robot: True" in out
    # the URDF written parses, into a model with the printed DOF and a tool0 frame
    model = pin.buildModelFromUrdf(str(folder / "robot.urdf"))
    assert model.nq == 3
    assert model.existFrame("tool0")
    # the assembly JSON is the robot the script built
    db = ModulesDB.from_name("geometric_primitive_modules")
    reloaded = ModuleAssembly.from_json_file(db, folder / "assembly.json")
    assert reloaded.module_ids == ["base", "J1", "i_30", "J2", "i_45", "J2", "eef"]
    fk = reloaded.robot.fk(np.array([0.3, -0.6, 1.2]))
    data = model.createData()
    pin.framesForwardKinematics(model, data, np.array([0.3, -0.6, 1.2]))
    np.testing.assert_allclose(data.oMf[model.getFrameId("tool0")].homogeneous, fk, atol=1e-9)


def test_custom_module_and_tree(tmp_path):
    out = run_example("custom_module_and_tree.py", tmp_path, "out")
    assert "module dual_base: connectors ['base', 'out_left', 'out_right']" in out
    assert "two-arm robot: 8 modules, 4 DOF" in out
    printed = {m[1]: np.array(json.loads(m[2])) for m in re.finditer(r"(tool\d) at q = 0: (\[.*\])", out)}
    assert set(printed) == {"tool0", "tool1"}
    # the URDF written has both tool frames where the script said, 0.6 m apart sideways (the base's connectors)
    model = pin.buildModelFromUrdf(str(tmp_path / "out" / "two_arms.urdf"))
    data = model.createData()
    pin.framesForwardKinematics(model, data, np.zeros(model.nq))
    assert model.nq == 4
    for tool, position in printed.items():
        np.testing.assert_allclose(data.oMf[model.getFrameId(tool)].translation, position, atol=1e-4)
    assert printed["tool0"][1] - printed["tool1"][1] == pytest.approx(0.6)
    # the error names the file, the JSON path and the value
    assert re.search(r"broken module refused: ValidationError: .*dual_base\.json: \$\.bodies\[0\]\.mass: .*-6\.0", out)


def test_inverse_kinematics(tmp_path):
    out = run_example("inverse_kinematics.py", tmp_path)
    assert "(6 DOF" in out
    error = float(re.search(r"exact pose:\s+success=True after \d+ tries, largest axis error ([\d.]+) mm", out)[1])
    assert error <= 0.1 + 1e-9  # the default tolerance: 0.1 mm per axis
    assert re.search(r"tolerant pose:\s+success=True, fk within tolerance: True", out)
    assert float(re.search(r"warm start:\s+success=True, \|q - previous solution\| = ([\d.]+) rad", out)[1]) < 0.5
    assert re.search(r"unreachable:\s+success=False, reason: unreachable: [\d.]+ m outside the robot's workspace", out)
    assert re.search(r"next to base:\s+success=False, reason: self-collision", out)


def test_task_and_solution(tmp_path):
    out = run_example("task_and_solution.py", tmp_path, "out")
    assert "short robot reaches every goal: False" in out
    assert re.search(r"pick: NOT reached \(no solution found", out)
    assert "robot reaches every goal: True" in out
    assert "solution valid: True, all goals achieved: True, cost 11.02" in out
    assert "VIOLATED" not in out
    # the solution file, checked again here, independently of the script
    task = Task.from_json_file(TASK_FILE)
    solution = Solution.from_json_file(tmp_path / "out" / "pick_and_place_solution.json", task, "robco_like")
    assert solution.valid and solution.all_goals_achieved
    assert solution.assembly.module_ids == ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]


def test_search(tmp_path):
    out = run_example("search.py", tmp_path, "out")
    assert "search space: 155 assemblies" in out
    best = re.search(r"best robot: (.+), cost ([\d.]+) kg", out)
    assert best is not None
    assert "best robot verified: True" in out
    assert re.search(r"genetic search: \d+ evaluations in [\d.]+ s, best base .* gripper, cost [\d.]+ kg", out)
    result = SearchResult.from_json_file(tmp_path / "out" / "search_result.json")
    assert result.found
    assert " ".join(result.best_ids) == best[1]
    assert result.best_cost == pytest.approx(float(best[2]), abs=0.01)
    # the robot of task_and_solution.py is in this space and solves the task: the lightest valid one is no heavier
    assert result.best_cost <= 11.02


def test_ros_exports(tmp_path):
    out = run_example("ros_exports.py", tmp_path, "out")
    folder = tmp_path / "out"
    urdf = ET.parse(folder / "example_arm.urdf").getroot()
    control = urdf.find("ros2_control")
    assert control is not None
    assert [j.get("name") for j in control.iter("joint")] == ["m1_J_joint", "m3_J_joint", "m5_J_joint"]
    assert control.find("hardware/plugin").text == "mock_components/GenericSystem"
    assert "ros2_control joints ['m1_J_joint', 'm3_J_joint', 'm5_J_joint']" in out
    assert pin.buildModelFromUrdf(str(folder / "example_arm.urdf")).nq == 3
    srdf = ET.parse(folder / "example_arm.srdf").getroot()
    n_disabled = len(srdf.findall("disable_collisions"))
    assert f"{n_disabled} disabled collision pairs" in out
    assert srdf.find("group") is not None
    moveit = folder / "moveit_config"
    for name in (
        "example_arm.urdf",
        "example_arm.srdf",
        "kinematics.yaml",
        "joint_limits.yaml",
        "ros2_controllers.yaml",
    ):
        assert (moveit / name).is_file()
        assert name in out
    xacro = pytest.importorskip("xacro")
    expanded = xacro.process_file(str(folder / "example_arm.urdf.xacro")).toxml()
    links = [link.get("name") for link in ET.fromstring(expanded).iter("link")]
    assert "left_base_link" in links and "left_tool0" in links


def test_visualize(tmp_path):
    pytest.importorskip("matplotlib")
    iio = pytest.importorskip("imageio.v3")
    pytest.importorskip("imageio_ffmpeg")
    out = run_example("visualize.py", tmp_path, "out")
    assert re.search(r"solution valid: True, [\d.]+ s from q = \[0\.0, -1\.0, 1\.5\]", out)
    frames = iio.imread(tmp_path / "out" / "pick_and_place.mp4", index=None)
    assert len(frames) > 10 and frames.shape[1:3] == (240, 320)
    assert frames[0].std() > 5  # not blank
    assert np.abs(frames[len(frames) // 3].astype(int) - frames[0]).mean() > 0.5  # the robot moved
    peaks = json.loads(re.search(r"peak \|tau\| per joint: (\[.*\])", out)[1])
    assert len(peaks) == 3 and all(0 < p < 80 for p in peaks)  # within the drives' limits (80 N m)
    plot = iio.imread(tmp_path / "out" / "pick_and_place_joints.png")
    assert plot.ndim == 3 and plot.std() > 5
