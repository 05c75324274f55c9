"""Collision checks against mesh obstacles, and what the safety margin applies to.

Two faults seen with real CoBRA data (issue 13, items 9 and 10): coal raised "computeLocalAABB must have been
called" for robot x mesh-obstacle pairs in about 1 configuration of 5 (the bounding-volume GJK guess does not
work for a mesh's triangles), and the task's safety margin inflated the robot's own self-collision pairs.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import SHARED

from timor_core import ModuleAssembly, ModulesDB
from timor_core.kinematics.collision import CollisionChecker
from timor_core.task import Task

PTP_3 = SHARED / "data" / "cobra" / "tasks" / "simple" / "PTP_3.json"
IMPROV_6DOF = ("1", "21", "4", "21", "5", "23", "12")


@pytest.fixture(scope="module")
def ptp3() -> Task:
    if not PTP_3.is_file():
        pytest.skip(f"real CoBRA tasks not available (expected {PTP_3})")
    return Task.from_json_file(PTP_3)


def test_mesh_obstacles_never_throw_and_verdicts_agree(improv: ModulesDB, ptp3: Task):
    robot = ModuleAssembly.from_serial_modules(improv, IMPROV_6DOF).robot
    assert any(o.id for o in ptp3.obstacles)
    rng = np.random.default_rng(0)
    kinds = []
    for _ in range(60):
        q = robot.random_configuration(rng)
        hit = robot.has_collision(q, ptp3)  # raised coal's BoundingVolumeGuess error in ~1 of 5
        pairs = robot.collisions(q, ptp3)
        assert hit == bool(pairs)
        assert robot.has_collision(q, ptp3, margin=0.05) or not hit  # a margin never frees a collision
        kinds.extend(p.kind for p in pairs)
    # not vacuous: the mesh obstacle is really hit in some configurations and missed in others
    assert "obstacle" in kinds
    assert kinds.count("obstacle") < 60


def test_margin_keeps_off_obstacles_but_does_not_inflate_the_robot(primitives: ModulesDB):
    robot = ModuleAssembly.from_serial_modules(primitives, ("base", "J2", "i_45", "J2", "J2", "eef")).robot
    empty = Task.from_json_data({"header": {"ID": "empty"}})
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(200):
        q = robot.random_configuration(rng)
        if robot.has_self_collision(q):
            continue
        checked += 1
        # adjacent bodies of this robot are closer than 10 cm in every configuration: with the margin on the
        # self-collision pairs, every configuration was reported in collision
        assert not robot.has_collision(q, empty, margin=0.1)
        assert not CollisionChecker(robot, (), margin=0.1).collisions(q)
    assert checked > 20
    # the margin still applies to obstacles: a box 5 cm beside the TCP is a collision with a 10 cm margin only
    q = np.zeros(robot.dof)
    tcp = robot.fk(q)[:3, 3]
    pose = np.eye(4)
    pose[:3, 3] = tcp + (0.0, 0.0, 0.05 + 0.05)
    box = Task.from_json_data(
        {
            "header": {"ID": "box"},
            "obstacles": [
                {
                    "ID": "box",
                    "collision": [{"type": "box", "parameters": {"x": 0.1, "y": 0.1, "z": 0.1}, "pose": pose.tolist()}],
                }
            ],
        }
    )
    assert not robot.has_collision(q, box)
    assert robot.has_collision(q, box, margin=0.1)
    assert {(p.kind, p.obstacle) for p in robot.collisions(q, box, margin=0.1)} == {("obstacle", "box")}
