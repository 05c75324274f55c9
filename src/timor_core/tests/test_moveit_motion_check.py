"""MoveIt's motion-check step, read from the written ompl_planning.yaml and URDF: OMPL checks each motion at least
every MOTION_CHECK_STEP of MoveIt's joint-space distance, so between two checked states no frame of the arm moves
further than the task's safety margin (move_group's ValidateSolution checks waypoints that lie between them)."""

from __future__ import annotations

import math
from importlib import resources

import numpy as np
import pytest
from urdf_parser_py.urdf import URDF

from timor_core import ModuleAssembly, ModulesDB
from timor_core.export.formats.moveit_config import MOTION_CHECK_STEP, write_moveit_config
from timor_core.export.formats.planning_scene import safety_margin
from timor_core.task.task import Task

yaml = pytest.importorskip("yaml")

THREE = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]  # the robot of test_moveit_scene (timor_ros)
SIX = ["base", "J", "L_100", "J", "L_250", "J", "L_250", "J", "L_100", "J", "L_100", "J", "gripper"]
TASK = resources.files("timor_core") / "data" / "tasks" / "pick_and_place.json"


def _written(modules: list[str], tmp_path) -> tuple[float, URDF]:
    written = write_moveit_config(ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), modules), tmp_path,
                                  name="arm", n_samples=20)  # fmt: skip
    ompl = yaml.safe_load(written["ompl_planning.yaml"].read_text())
    return ompl["manipulator"]["longest_valid_segment_fraction"], URDF.from_xml_string(written["arm.urdf"].read_text())


def _step(fraction: float, urdf: URDF) -> float:
    """MoveIt's motion-check step: the fraction of the group's extent (the sum of its joints' ranges)."""
    movable = [j for j in urdf.joints if j.type != "fixed"]
    return fraction * sum(j.limit.upper - j.limit.lower if j.type != "continuous" else 2 * math.pi for j in movable)


@pytest.mark.parametrize("modules", [THREE, SIX], ids=["3 joints", "6 joints"])
def test_moveit_checks_motions_every_step_whatever_the_joint_count(modules, tmp_path):
    fraction, urdf = _written(modules, tmp_path)
    assert _step(fraction, urdf) == pytest.approx(MOTION_CHECK_STEP, rel=1e-4)


def test_between_two_checks_no_frame_moves_further_than_the_tasks_margin(tmp_path):
    """A bound on how far any frame of the arm moves while MoveIt's joint-space distance grows by one step: each
    joint's |dq| times the frame's distance from that joint, at most the sum of the offsets after the first movable
    joint (tool0 included)."""
    fraction, urdf = _written(THREE, tmp_path)
    first = next(k for k, j in enumerate(urdf.joints) if j.type != "fixed")
    reach = sum(float(np.linalg.norm(j.origin.xyz)) for j in urdf.joints[first + 1 :] if j.origin is not None)
    assert reach > 0.4  # the arm's links: L_250 + L_150 + L_150 + gripper
    margin = safety_margin(Task.from_json_file(str(TASK)))
    assert margin > 0
    assert _step(fraction, urdf) * reach < margin, (fraction, reach, margin)
