"""The hypothesis strategies of a random robot of the embedded sets, shared by the proofs' property tests
(``test_family_proof.py``, ``test_sweep_proof.py``, ``test_module_sweep.py``): which set, where in its small serial
space, the seed of the test's random numbers and how far its base is moved; the unseen tasks those tests run the
filters on; and the sweep proofs' obstacle tasks, boxes around an arm and robot configurations at a chain's angles."""

from __future__ import annotations

import functools
import importlib.util
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import random_placement, reach_test_spaces
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from timor_core import ModuleAssembly
from timor_core.task import Task

GENERATOR = Path(__file__).resolve().parents[3] / "benchmarks" / "unseen_tasks.py"

DBS, SPACES = reach_test_spaces()

#: a robot of one of the embedded sets: the set, the pick in its space (a fraction of its count), the seed
ROBOT = dict(
    name=st.sampled_from(sorted(DBS)),
    pick=st.floats(0, 1, exclude_max=True),
    seed=st.integers(0, 2**31),
)
#: :data:`ROBOT` and how far its base is moved (:func:`conftest.random_placement`; 0: not moved)
ROBOTS = dict(**ROBOT, spread=st.sampled_from([0.0, 0.3]))


def assembly_of(name: str, pick: float, rng: np.random.Generator, spread: float) -> tuple[ModuleAssembly, Any]:
    """The assembly :data:`ROBOTS` draw (``rng`` made from their seed) and its base placement (None: not moved)."""
    space = SPACES[name]
    ids = space[int(pick * space.count)]
    placement = random_placement(rng, spread) if spread else None
    return ModuleAssembly.from_serial_modules(DBS[name], ids, base_placement=placement), placement


def unseen_task(name: str) -> Task:
    """The unseen task ``name`` of ``benchmarks/unseen_tasks.py`` (seed 38); skips where the benchmarks are absent."""
    if not GENERATOR.is_file():
        pytest.skip("needs the repository's benchmarks/")
    spec = importlib.util.spec_from_file_location("unseen_tasks", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Task.from_json_data(module.generate(38)[name])


#: the refused arms' and the optimum's family on ``obstacles_4`` (four joints, three links between them, an
#: extension or none before the gripper): 64 x 7 chains, most of them refused at g3 by the sweep proof
LINKS = ("L_100", "L_150", "L_200", "L_250")
FAMILY = tuple(
    ("base", "J", a, "J", b, "J", c, "J", *((i,) if i else ()), "gripper")
    for a in LINKS for b in LINKS for c in LINKS for i in (None, "I_50", "I_100", "I_150", "I_200", "I_300", "I_400")
)  # fmt: skip
#: :data:`FAMILY` shuffled (seed 38): the order the tests of the sweep proofs on ``obstacles_4`` walk it in
FAMILY_38 = tuple(FAMILY[k] for k in np.random.default_rng(38).permutation(len(FAMILY)))


@functools.cache
def family_verdicts(early: bool) -> tuple:
    """The filter chain's candidates (family proofs on, compiled bounds) for :data:`FAMILY_38` on ``obstacles_4``,
    in that order, with the sweep proofs tried before the IK (the family's and the ik filter's, as by default) or
    neither; computed once per process: test_sweep_proof and test_module_sweep read the same 2 x 448 verdicts
    (~3 CPU-s) and change none."""
    from _pytest.monkeypatch import MonkeyPatch

    from timor_core.search import FilterChain, FilterConfig
    from timor_core.search.filtering import filters, goal_filters, sweep_proof
    from timor_core.search.filtering.proof_kernel import use_compiled

    task = unseen_task("obstacles_4")
    use_compiled(True)
    patch = MonkeyPatch()
    try:
        patch.setattr(goal_filters, "likely_refusal", sweep_proof.likely_refusal if early else lambda *args: None)
        patch.setattr(filters, "early_refusal", sweep_proof.early_refusal if early else lambda *args: None)
        chain = FilterChain(task, DBS["robco_like"], "mass", FilterConfig(family_proof=True))
        return tuple(chain(ids) for ids in FAMILY_38)
    finally:
        patch.undo()


@functools.cache
def _unseen(name: str) -> Task:
    return unseen_task(name)


@functools.cache
def sweep_proof_alone(task_name: str, compiled: bool, ids: tuple[str, ...], goal_id: str) -> Any:
    """:func:`~timor_core.search.filtering.sweep_proof.sweep_proof` (compiled or numpy bounds) of the chain's robot,
    built on its own at the unseen task's base, at its goal ``goal_id``: the proof, or None; once per process:
    test_sweep_proof and test_module_sweep check the early refusals of :data:`FAMILY` (most of them the same chains
    at the same goals, in each order they walk) against it (~5 ms a chain: the robot built, then proven)."""
    from timor_core.search.filtering.arm_body import robot_sweep
    from timor_core.search.filtering.proof_kernel import use_compiled
    from timor_core.search.filtering.sweep_proof import obstacle_boxes, sweep_proof
    from timor_core.task.feedback import task_base_placement

    task = _unseen(task_name)
    use_compiled(compiled)
    goal = next(g for g in task.goals if g.id == goal_id)
    robot = ModuleAssembly.from_serial_modules(DBS["robco_like"], ids, base_placement=task_base_placement(task)).robot
    return sweep_proof(robot_sweep(robot), obstacle_boxes(task), goal.goal_pose.world, goal.goal_pose.tolerance)


def obstacle_task(boxes: list[tuple[np.ndarray, np.ndarray]]) -> Task:
    """A task with these obstacle boxes (4x4 pose, full sides) and one goal (not used here)."""
    obstacles = [
        {"ID": f"box{k}", "collision": [{"type": "box", "parameters": dict(zip("xyz", map(float, sides), strict=True)),
                                         "pose": pose.tolist()}]}
        for k, (pose, sides) in enumerate(boxes)
    ]  # fmt: skip
    goal = {"ID": "g", "type": "at", "goalPose": {"nominal": np.eye(4).tolist()}}
    return Task.from_json_data({"header": {"ID": "sweep"}, "obstacles": obstacles, "goals": [goal]})


def boxes_around(robot, q, rng, count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Obstacle boxes of random sides and turns centred near the robot's joint origins and TCP at ``q``."""
    robot.fk(q)
    points = [robot.data.oMi[j].translation.copy() for j in range(1, robot.model.njoints)]
    points.append(robot.fk(q)[:3, 3])
    out = []
    for _ in range(count):
        pose = np.eye(4)
        pose[:3, :3] = Rotation.random(random_state=int(rng.integers(2**31))).as_matrix()
        pose[:3, 3] = points[int(rng.integers(len(points)))] + rng.normal(scale=0.08, size=3)
        out.append((pose, rng.uniform(0.02, 0.4, 3)))
    return out


def robot_q(sweep, angles: np.ndarray, rng) -> np.ndarray:
    """A robot configuration at the chain's ``angles``: the joints merged into a chain joint (on one line with it)
    at random angles, the first of each group making up the rest."""
    q = rng.uniform(-math.pi, math.pi, len(sweep.groups))
    for g, angle in enumerate(angles):
        members = np.flatnonzero(sweep.groups == g)
        first, rest = members[0], members[1:]
        q[first] = sweep.signs[first] * (angle - float(np.dot(sweep.signs[rest], q[rest])))
    return q
