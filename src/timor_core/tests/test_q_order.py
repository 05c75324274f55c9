"""The q order of our model equals that of Pinocchio's URDF loader for every tree (issue 13, item 3).

Pinocchio (and the reference toolbox, PyBullet, MoveIt) number the joints of a URDF depth first, the child
joints of a link in the byte order of their names. timor numbered them breadth first, so for a tree a q vector
passed by index went to the wrong joints. Random trees of a module set with branching modules check it.
"""

from __future__ import annotations

import json

import numpy as np
import pinocchio as pin
import pytest
from branched_set import branched_json
from conftest import write_db
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core import ModuleAssembly, ModulesDB, TimorError
from timor_core.kinematics.trajectory import Trajectory
from timor_core.task import Task
from timor_core.task.solution import Solution

CHAIN = ["J1", "J2", "P1", "i_30", "l_15", "tee", "tee"]


@pytest.fixture(scope="module")
def branched(tmp_path_factory) -> ModulesDB:
    return ModulesDB.from_json_file(write_db(tmp_path_factory.mktemp("branched"), branched_json()))


def _free_connectors(db: ModulesDB, assembly: ModuleAssembly) -> list[tuple[int, str]]:
    used = {(a, ca) for a, ca, _, _ in assembly.connections} | {(b, cb) for _, _, b, cb in assembly.connections}
    used.add(assembly.base_connector)
    return sorted(
        (i, cid)
        for i, mid in enumerate(assembly.module_ids)
        for cid in db.by_id(mid).connectors
        if (i, cid) not in used
    )


def _grow(db: ModulesDB, choices: list[tuple[int, int]]) -> ModuleAssembly:
    A = ModuleAssembly(db, ["base3"])
    for pick_module, pick_connector in choices:
        free = _free_connectors(db, A)
        if not free:
            break
        where = free[pick_connector % len(free)]
        try:
            A.add(CHAIN[pick_module % len(CHAIN)], where)
        except TimorError:  # an incompatible connector for this module: try the next choice
            continue
    return A


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 50), st.integers(0, 50)), min_size=1, max_size=14), st.integers(0, 2**31))
def test_q_order_equals_pinocchio_urdf_loader(branched, choices, seed):
    A = _grow(branched, choices)
    robot = A.robot
    model = pin.buildModelFromXML(A.to_urdf())
    assert list(model.names)[1:] == robot.joints
    if robot.dof:
        q = robot.random_configuration(seed)
        data = model.createData()
        pin.framesForwardKinematics(model, data, q)  # the same q vector, by index
        for name, T in robot.fk(q, kind="full").items():
            if name != "universe":
                np.testing.assert_allclose(data.oMf[model.getFrameId(name)].homogeneous, T, atol=1e-9)


def test_three_arms_are_numbered_depth_first(branched):
    A = ModuleAssembly(branched, ["base3"])
    arms = []
    for k in (2, 0, 1):  # attached out of order on purpose
        j = A.add("J1", (0, f"out_{k}"))
        j2 = A.add("J2", (j, "J1_distal_connector"))
        arms.append((j, j2))
    robot = A.robot
    model = pin.buildModelFromXML(A.to_urdf())
    assert list(model.names)[1:] == robot.joints
    # each arm's two joints are adjacent in q (depth first), not interleaved with the other arms' (breadth first)
    position = {name: k for k, name in enumerate(robot.joints)}
    for j, j2 in arms:
        first = [n for n in robot.joints if n.startswith(f"m{j}_")]
        second = [n for n in robot.joints if n.startswith(f"m{j2}_")]
        assert len(first) == len(second) == 1
        assert position[second[0]] == position[first[0]] + 1
    assert robot.dof == 6


def _three_arms(db: ModulesDB) -> ModuleAssembly:
    A = ModuleAssembly(db, ["base3"])
    for k in (2, 0):
        j = A.add("J1", (0, f"out_{k}"))
        j = A.add("J2", (j, "J1_distal_connector"))
        A.add("eef", (j, "J2_distal_connector"))
    return A


def test_branched_solutions_state_their_joint_order_and_legacy_files_migrate(branched, tmp_path):
    A = _three_arms(branched)
    robot = A.robot
    assert list(A.tree().breadth_first_joints) != robot.joints  # the two orders differ for this tree
    task = Task.from_json_data({"header": {"ID": "t"}})
    t = np.array([0.0, 1.0, 2.0])
    q = np.array([robot.random_configuration(s) for s in range(3)])
    solution = Solution(task, A, Trajectory(t, q, np.zeros_like(q), np.zeros_like(q)))
    path = solution.to_json_file(tmp_path / "solution.json")
    data = json.loads(path.read_text())
    assert data["jointOrder"] == robot.joints
    again = Solution.from_json_file(path, task, branched)
    np.testing.assert_array_equal(again.trajectory.q, q)
    assert "jointOrder" not in again.extra
    # a file naming another order is read into ours, column by column
    legacy = list(A.tree().breadth_first_joints)
    perm = [robot.joints.index(n) for n in legacy]
    data["jointOrder"] = legacy
    for key in ("q", "dq", "ddq"):
        data["trajectory"][key] = np.asarray(data["trajectory"][key])[:, perm].tolist()
    path.write_text(json.dumps(data))
    np.testing.assert_array_equal(Solution.from_json_file(path, task, branched).trajectory.q, q)
    # a file of timor before the change: breadth first and no jointOrder; read on request
    del data["jointOrder"]
    path.write_text(json.dumps(data))
    np.testing.assert_array_equal(
        Solution.from_json_file(path, task, branched, legacy_breadth_first=True).trajectory.q, q
    )
    np.testing.assert_array_equal(Solution.from_json_file(path, task, branched).trajectory.q, q[:, perm])
    # a jointOrder that does not name the assembly's joints is refused, naming the field
    data["jointOrder"] = legacy[:-1] + ["nosuch"]
    path.write_text(json.dumps(data))
    with pytest.raises(TimorError, match="jointOrder"):
        Solution.from_json_file(path, task, branched)


def test_serial_solutions_carry_no_joint_order(primitives, tmp_path):
    A = ModuleAssembly.from_serial_modules(primitives, ("base", "J2", "J2", "eef"))
    task = Task.from_json_data({"header": {"ID": "t"}})
    q = np.zeros((2, 2))
    solution = Solution(task, A, Trajectory(np.array([0.0, 1.0]), q, q, q))
    assert "jointOrder" not in solution.to_json_data()
