"""A robot's kinematics without the robot (issue 38 item 1): ``kinematics.build.serial_arm`` gives of an assembly the
very numbers the compiled IK takes of its built robot (``ik_kernel.kernel_chain``, limits, random starts' box, base,
reach); ``search.filtering.arm_segments.ArmSegments`` gives them from the segments other chains' trees gave; and
``kinematics.ik.solve_arm_ik`` on the arm is ``PinRobot.ik`` on the robot: the same q, tries, iterations, residual and
reason, and the generator left in the same state."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from conftest import random_placement

from timor_core import ModuleAssembly
from timor_core.common import compiled
from timor_core.kinematics import ik_kernel
from timor_core.kinematics.build import SerialArm, serial_arm
from timor_core.kinematics.ik import IKConfig, solve_arm_ik
from timor_core.kinematics.tolerance import tolerance_from_json
from timor_core.search import FilterChain, FilterConfig, paper_exp2_space
from timor_core.search.filtering.arm_segments import ArmSegments
from timor_core.task import Task

TOLERANCE = tolerance_from_json(["r_sph", "Theta_R"], [[0.0, 0.001], [0.0, math.radians(1.0)]])


@pytest.fixture(autouse=True)
def _compiled():
    compiled.use_compiled(True)
    yield
    compiled.use_compiled(None)


def _same_arm(a: SerialArm, b: SerialArm) -> None:
    for x, y in zip(
        (a.chain.placements, a.chain.kinds, a.chain.axes, a.chain.tool, a.lower, a.upper, *a.sample_box),
        (b.chain.placements, b.chain.kinds, b.chain.axes, b.chain.tool, b.lower, b.upper, *b.sample_box),
    ):
        assert x.dtype == y.dtype and x.shape == y.shape and x.tobytes() == y.tobytes()
    assert (a.chain.moving, a.base, a.reach) == (b.chain.moving, b.base, b.reach)


def _robot_arm(robot) -> SerialArm:
    """The arm as the IK reads it of a built robot."""
    chain = ik_kernel.kernel_chain(robot.model, robot.tcp)
    base = robot.model.frames[1].placement.translation.tolist()
    limits = (robot.model.lowerPositionLimit.copy(), robot.model.upperPositionLimit.copy())
    return SerialArm(chain, *limits, robot.sample_box, base, robot.reach())


def _assemblies(robco, rng, count):
    space = paper_exp2_space(robco)
    return [tuple(space[int(i)]) for i in rng.integers(0, space.count, count)]


@pytest.mark.parametrize("seed", range(3))
def test_the_arm_is_what_the_ik_reads_of_the_robot(robco, seed):
    rng = np.random.default_rng(seed)
    placement = random_placement(rng, 0.3) if seed else None
    made = 0
    for ids in _assemblies(robco, rng, 60):
        assembly = ModuleAssembly.from_serial_modules(robco, ids, base_placement=placement)
        arm = serial_arm(assembly, assembly.base_placement)
        robot = assembly.to_pin_robot(placement)
        if arm is None:  # (only for robots that are no serial chain of revolute joints moving the TCP)
            chain = ik_kernel.kernel_chain(robot.model, robot.tcp)
            assert chain is None or chain.moving < robot.dof or not robot.has_end_effector
            continue
        made += 1
        _same_arm(arm, _robot_arm(robot))
    assert made > 40


def _candidate(chain: FilterChain, ids):
    c = chain.candidate(ids)
    assert chain.filters[0](c)  # the assembly filter: how the modules join
    return c


@pytest.mark.parametrize("seed", range(3))
def test_the_arm_from_known_segments_is_the_trees(robco, seed):
    """Chains of experiment 2's space, with the base moved and turned: an arm made of segments other chains' trees
    gave is, bit for bit, the chain's own tree's; most arms are so made."""
    rng = np.random.default_rng(10 + seed)
    placement = random_placement(rng, 0.3)
    task = Task.from_json_data({"header": {"ID": "t"}, "goals": [], "constraints": [
        {"type": "basePlacement", "pose": {"nominal": placement.tolist()}}]})  # fmt: skip
    chain = FilterChain(task, robco, "mass", FilterConfig(family_proof=True))
    segments = ArmSegments.of(chain.ctx)
    from_segments = 0
    for ids in _assemblies(robco, rng, 150):
        c = _candidate(chain, ids)
        known = segments.joints.copy(), segments.tools.copy()
        arm = segments.arm(c)
        own = serial_arm(c.require_assembly(), c.require_assembly().base_placement)
        assert (arm is None) == (own is None), ids
        if arm is not None:
            _same_arm(arm, own)
            from_segments += (segments.joints, segments.tools) == known
    assert from_segments > 60


@pytest.mark.parametrize("seed", range(2))
def test_the_ik_of_the_arm_is_the_robots(robco, seed):
    """Goals the arm reaches, misses by a little, and lies far from (beyond the reach bound): solve_arm_ik's result and
    the generator after it are PinRobot.ik's, field by field."""
    rng = np.random.default_rng(20 + seed)
    placement = random_placement(rng, 0.3)
    config = IKConfig(max_n_tries=int(rng.integers(3, 30)))
    compared, found = 0, 0
    for ids in _assemblies(robco, rng, 12):
        assembly = ModuleAssembly.from_serial_modules(robco, ids, base_placement=placement)
        arm = serial_arm(assembly, assembly.base_placement)
        if arm is None:
            continue
        robot = assembly.to_pin_robot(placement)
        for miss in (0.0, 0.05, 0.3, 5.0):
            goal = robot.fk(robot.random_configuration(rng))
            shift = rng.normal(size=3)
            goal[:3, 3] += shift / np.linalg.norm(shift) * miss
            seed_ = int(rng.integers(2**31))
            want_rng, got_rng = np.random.default_rng(seed_), np.random.default_rng(seed_)
            want = robot.ik(goal, TOLERANCE, rng=want_rng, ignore_self_collision=True, details=True, config=config)
            got = solve_arm_ik(arm, goal, TOLERANCE, got_rng, config)
            assert got is not None
            assert got.q.tobytes() == want.q.tobytes()
            assert (got.success, got.reason, got.tries, got.iterations) == (
                want.success, want.reason, want.tries, want.iterations)  # fmt: skip
            assert got.residual == want.residual and got.rejections == want.rejections == {}
            assert got_rng.random() == want_rng.random()
            compared += 1
            found += got.success
    assert compared > 20 and 0 < found < compared


@pytest.mark.parametrize("name", ["obstacle_middle", "more_goals"])
def test_the_filters_give_with_the_arm_what_they_give_with_the_robot(robco, name, monkeypatch):
    """Chains of experiment 2's space through the default filters with the family filter on, once as the search
    runs them (the robot filter makes the arm, the robot is built on first use) and once with the robot built by the
    robot filter (as before): every candidate's verdict, filter, reasons and per-goal records (configuration,
    success, reason, stage) are the same; many chains reach the ik filter, some pass it."""
    from timor_core.search.filtering import filters

    task = Task.from_json_file(Path(__file__).parent / "data" / "exp2_tasks" / f"{name}.json")
    space = paper_exp2_space(robco)
    rng = np.random.default_rng(len(name))
    picks = [tuple(space[int(i)]) for i in rng.integers(0, space.count, 3000)]

    def run() -> list[tuple]:
        chain = FilterChain(task, robco, "mass", FilterConfig(family_proof=True))
        out = []
        for ids in picks:
            c = chain(ids)
            goals = {k: (g.q, g.success, g.reason, g.stage) for k, g in c.goals.items()}
            out.append((c.failed_filter, c.reason_key, c.reason, goals, c.arm is not None))
        return out

    with_arm = run()
    monkeypatch.setattr(filters, "build_kinematics", lambda c: c.build_robot())
    with_robot = run()
    assert [x[:4] for x in with_arm] == [x[:4] for x in with_robot]
    reached_ik = sum(x[0] not in ("assembly", "bound", "limits", "family", "robot", "workspace") for x in with_arm)
    assert sum(x[4] for x in with_arm) > 20 and reached_ik > 20 and not any(x[4] for x in with_robot)


def test_the_workspace_filter_takes_the_robot_for_what_the_modules_did_not_check(robco):
    """With the arm, the workspace filter leaves the robot unbuilt where the robot filter's bounds from the modules
    checked every goal it would (``within_reach``); else it builds the robot for each goal no witness reached, and
    gives the verdict the robot gives."""
    task = Task.from_json_file(Path(__file__).parent / "data" / "exp2_tasks" / "more_goals.json")
    chain = FilterChain(task, robco, "mass", FilterConfig(family_proof=True))
    space = paper_exp2_space(robco)
    rng = np.random.default_rng(7)
    checked, built = 0, 0
    for i in rng.integers(0, space.count, 3000):
        c = chain.candidate(space[int(i)])
        if not all(f(c) for f in chain.filters[:5]) or c.arm is None:
            continue
        assert c.within_reach and chain.filters[5](c) and c.robot is None
        c.within_reach = False
        unreached = any(k not in c.reached for k in range(len(chain.ctx.goals)))
        assert chain.filters[5](c) and (c.robot is not None) == unreached  # (every goal within the robot's bounds)
        checked += 1
        built += unreached
    assert checked > 40 and built > 10
