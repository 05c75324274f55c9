"""The sweep proofs' body from the modules alone (search.filtering.arm_body.module_sweep) and the family filter's
sweep proof before any robot is built (search.sweep_proof.early_refusal): the modules give the built robot's joints
and balls (random robots of both embedded sets, moved bases); a box of joint angles their body calls colliding
holds no configuration the robot's collision checker calls free; on ``obstacles_4`` (seed 38) the family filter
refuses chains by it without building their robots, each refusal is the robot's own sweep proof (the same box
count), and the chains get the verdicts they get without any early sweep proof."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import anywhere_configuration, random_placement
from hypothesis import given, settings
from hypothesis import strategies as st
from proof_robots import (
    DBS,
    ROBOTS,
    SPACES,
    assembly_of,
    boxes_around,
    family_verdicts,
    obstacle_task,
    robot_q,
    sweep_proof_alone,
    unseen_task,
)

from timor_core import ModuleAssembly
from timor_core.kinematics.collision import CollisionChecker
from timor_core.search.filtering.arm_body import module_sweep, robot_sweep
from timor_core.search.filtering.proof_kernel import use_compiled
from timor_core.search.filtering.sweep_proof import certain_collision, obstacle_boxes

ATOL = 1e-12  # m: the modules' products against Pinocchio's


@pytest.fixture(scope="module", autouse=True)
def _default_bounds():
    yield
    use_compiled(None)


def _same_balls(a_points, a_links, a_rho, b_points, b_links, b_rho) -> bool:
    """Each ball of one body has a ball of the same joint and radius within ATOL in the other, and the counts match."""
    if len(a_points) != len(b_points):
        return False
    free = np.ones(len(b_points), dtype=bool)
    for p, link, r in zip(a_points, a_links, a_rho, strict=True):
        d = np.abs(b_points - p).max(axis=1) if len(b_points) else np.zeros(0)
        hits = np.flatnonzero(free & (b_links == link) & (np.abs(b_rho - r) <= ATOL) & (d <= ATOL))
        if not len(hits):
            return False
        free[hits[0]] = False
    return True


@settings(max_examples=60, deadline=None)
@given(**ROBOTS)
def test_the_modules_give_the_robots_body(name, pick, seed, spread):
    """Random robots of both embedded sets at moved bases: the modules' sweep and the built robot's have the same
    chain (origins, axes, radii, TCP offset within 1e-12 m), the same merged joints and signs, and the same balls
    (each joint's, and the base's, within 1e-12 m); either both exist or neither."""
    rng = np.random.default_rng(seed)
    assembly, placement = assembly_of(name, pick, rng, spread)
    mine, theirs = module_sweep(assembly, placement), robot_sweep(assembly.robot)
    assert (mine is None) == (theirs is None), assembly.module_ids
    if mine is None or theirs is None:
        return
    for field in ("origins", "axes", "radii", "offset"):
        assert np.allclose(getattr(mine.chain, field), getattr(theirs.chain, field), rtol=0, atol=ATOL), field
    assert np.allclose(mine.chain.tcp, theirs.chain.tcp, rtol=0, atol=ATOL)
    assert np.array_equal(mine.groups, theirs.groups) and np.array_equal(mine.signs, theirs.signs)
    assert _same_balls(mine.points, mine.links, mine.rho, theirs.points, theirs.links, theirs.rho)
    zero = np.zeros(len(mine.fixed_rho), dtype=int)
    assert _same_balls(mine.fixed, zero, mine.fixed_rho, theirs.fixed, np.zeros(len(theirs.fixed_rho), int),
                       theirs.fixed_rho)  # fmt: skip


@settings(max_examples=40, deadline=None)
@given(**ROBOTS, width=st.sampled_from([0.01, 0.1, 0.5]), margin=st.sampled_from([0.0, 0.02]))
def test_a_box_the_modules_call_colliding_holds_no_free_configuration(name, pick, seed, spread, width, margin):
    """Soundness against the real thing: boxes of joint angles around random configurations, obstacle boxes around
    the arm; wherever the bound on the modules' body calls a box colliding, the built robot's collision checker
    (obstacles, the margin) finds every configuration sampled in it (mapped to the robot's joints by the modules'
    merged joints and signs) colliding."""
    use_compiled(True)
    rng = np.random.default_rng(seed)
    assembly, placement = assembly_of(name, pick, rng, spread)
    sweep = module_sweep(assembly, placement)
    if sweep is None:
        return
    robot = assembly.robot
    task = obstacle_task(boxes_around(robot, anywhere_configuration(robot, rng), rng, 3))
    checker = CollisionChecker(robot, task.obstacles, margin, self_collision=False)
    n = sweep.chain.dof
    centres = rng.uniform(-math.pi, math.pi, (24, n))
    half = rng.uniform(0.0, width, (24, n))
    for b in np.flatnonzero(certain_collision(sweep, obstacle_boxes(task), centres, half, margin)):
        for _ in range(6):
            q = robot_q(sweep, centres[b] + rng.uniform(-1.0, 1.0, n) * half[b], rng)
            assert checker.in_collision(q), (assembly.module_ids, centres[b], half[b], q)


@pytest.fixture(scope="module")
def obstacles_4():
    return unseen_task("obstacles_4")


@pytest.mark.xdist_group("obstacles_4_family")  # one worker computes the verdicts test_sweep_proof reads too
def test_the_family_filter_refuses_by_the_sweep_proof_without_a_robot(obstacles_4):
    """On ``obstacles_4``, the 448 chains of the arms refused at g3 (``proof_robots.FAMILY``, shuffled): the
    family filter refuses over a hundred of them by the sweep proof with no robot built; each such refusal names the
    box count the built robot's own sweep proof gives at that goal, and every chain (refused so or not) gets the
    same verdict as without any early sweep proof (neither the family filter's nor the ik filter's); a refusal by a
    proof started from the boxes of a chain near it (``sweep_proof.SweepStarts``) says so. The verdicts are
    test_sweep_proof's, computed once per process (``proof_robots.family_verdicts``)."""
    from timor_core.search.filtering.sweep_proof import sweep_reason

    use_compiled(True)
    refused = started = 0
    for c, p in zip(family_verdicts(True), family_verdicts(False), strict=True):
        assert c.ids == p.ids
        assert (c.failed_filter is None) == (p.failed_filter is None), (c.ids, c.reason, p.reason)
        if c.failed_filter != "family" or "collides with an obstacle" not in c.reason:
            continue
        refused += 1
        assert c.robot is None, c.ids
        if "from a proof for a chain of its family" in c.reason:
            started += 1  # (its box count is the started proof's: the verdict, compared above, is what holds)
            continue
        goal = next(g for g in obstacles_4.goals if c.reason.startswith(f"goal {g.id}:"))
        proven = sweep_proof_alone(obstacles_4.id, True, tuple(c.ids), goal.id)  # the built robot's, once a chain
        assert proven is not None and c.reason == f"goal {goal.id}: {sweep_reason(proven)}", (c.ids, c.reason)
    assert refused >= 100 and started >= 10, (refused, started)


ROUNDING = 1e-12  # m (or a sine): how far the tails' products, grouped otherwise, may take a sweep's numbers


def _same_sweep(a, b) -> str:
    """How two :class:`ArmSweep` differ ('' if not): the balls' links and radii, the base's balls, the joints'
    groups and signs, the chain's joints to the last bit; the balls' centres, the TCP and what follows from it (the
    chain's radii, offset and steps) within :data:`ROUNDING` (a chain's tail is walked from its last joint's module
    on, not from the base)."""
    for field in ("links", "rho", "fixed", "fixed_rho", "groups", "signs", "points"):
        x, y = getattr(a, field), getattr(b, field)
        if x.dtype != y.dtype or x.shape != y.shape:
            return field
        if field != "points" and x.tobytes() != y.tobytes() or not np.allclose(x, y, rtol=0.0, atol=ROUNDING):
            return field
    for field in ("origins", "axes", "wrist_radii"):
        if getattr(a.chain, field).tobytes() != getattr(b.chain, field).tobytes():
            return f"chain.{field}"
    for field in ("tcp", "radii", "offset"):
        if not np.allclose(getattr(a.chain, field), getattr(b.chain, field), rtol=0.0, atol=ROUNDING):
            return f"chain.{field}"
    if any(not np.allclose(x, y, rtol=0.0, atol=ROUNDING) for x, y in zip(a.chain.steps, b.chain.steps, strict=True)):
        return "chain.steps"
    return ""


@settings(max_examples=12, deadline=None)
@given(**ROBOTS)
def test_the_module_sweeps_per_head_and_tail_are_module_sweep(name, pick, seed, spread):
    """``arm_body.ModuleSweeps`` (one per task: each head's joints' part and balls made once, each tail's TCP and
    balls seen from its last joint's module once): for chains of a space 1, 5, 37 and 211 apart from one drawn (they
    share prefixes of every length, to their last joint or not, and tails), at a moved base, in order and then
    shuffled, every sweep is :func:`module_sweep`'s of the built assembly (:func:`_same_sweep`), or None where that
    is."""
    from timor_core.search.filtering.arm_body import ModuleSweeps
    from timor_core.search.filtering.filter_state import SerialJoin

    rng = np.random.default_rng(seed)
    space, db = SPACES[name], DBS[name]
    first = int(pick * space.count)
    chains = [space[(first + j * apart) % space.count] for apart in (1, 5, 37, 211) for j in range(8)]
    placement = random_placement(rng, spread) if spread else None
    sweeps = ModuleSweeps(db, placement)
    for ids in [*chains, *(chains[k] for k in rng.permutation(len(chains)))]:
        assembly = ModuleAssembly.from_serial_modules(db, ids, base_placement=placement)
        theirs, mine = module_sweep(assembly, placement), sweeps.sweep(tuple(ids), SerialJoin.of(assembly))
        assert (mine is None) == (theirs is None), ids
        if mine is not None and theirs is not None:
            assert not _same_sweep(mine, theirs), (ids, _same_sweep(mine, theirs))


def _walk_differs(sweeps, ids: tuple[str, ...], assembly, placement) -> str:
    """How ``sweeps``' walk of a chain (its prefixes' steps, kept from chains walked before) differs from
    :func:`~.quick_reach.walk_chain`'s of its assembly ('' if not): the joints' world frames to the last bit, and each
    body of the modules to the last joint's (the head) with its world pose to the last bit and the same owner joint."""
    from timor_core.search.filtering.quick_reach import walk_chain

    bodies: list = []
    walked = walk_chain(assembly, placement, bodies)
    if walked is None:
        return "no walk"
    last = max(k for k, m in enumerate(assembly.modules) if m.joints)
    frames = sweeps.steps[ids[: last + 1]].frames
    if len(frames) != len(walked[0]) or any(a.tobytes() != b.tobytes() for a, b in zip(frames, walked[0])):
        return "frames"
    head = [body for k in range(last + 1) for body in sweeps.steps[ids[: k + 1]].bodies]
    if len(head) != sum(len(m.bodies) for m in assembly.modules[: last + 1]):
        return "head bodies"
    for (p, body, joint), (q, theirs, their_joint) in zip(head, bodies, strict=False):
        if p.tobytes() != q.tobytes() or body is not theirs or joint != their_joint:
            return f"body {body.id}"
    return ""


@pytest.mark.parametrize("name", sorted(DBS))
def test_the_module_sweeps_walk_is_walk_chains_to_the_bit(name):
    """``arm_body.ModuleSweeps`` and :func:`~.quick_reach.walk_chain` take each module's step by one function
    (``quick_reach.walk_module``): on chains of a space (60 drawn, each with the 3 after it and 3 more 7 apart: shared
    prefixes), at a moved base, in order and then shuffled, wherever a chain has a sweep (all of robco_like's, 144 of
    the 960 of geometric_primitive_modules) its walk's joint frames and head bodies (pose, body, owner joint) are
    walk_chain's of the built assembly bit for bit (:func:`_walk_differs`), and the sweep is ``module_sweep``'s
    (:func:`_same_sweep`: the chain's joints to the bit)."""
    from timor_core.search.filtering.arm_body import ModuleSweeps
    from timor_core.search.filtering.filter_state import SerialJoin

    rng = np.random.default_rng(54)
    space, db = SPACES[name], DBS[name]
    starts = rng.integers(0, space.count, 60)
    chains = [tuple(space[(int(s) + j * apart) % space.count]) for s in starts for apart in (1, 7) for j in range(4)]
    placement = random_placement(rng, 0.3)
    sweeps, checked = ModuleSweeps(db, placement), 0
    for ids in [*chains, *(chains[k] for k in rng.permutation(len(chains)))]:
        assembly = ModuleAssembly.from_serial_modules(db, ids, base_placement=placement)
        mine = sweeps.sweep(ids, SerialJoin.of(assembly))
        if mine is None:
            assert module_sweep(assembly, placement) is None, ids
            continue
        differs = _walk_differs(sweeps, ids, assembly, placement)
        assert not differs, (ids, differs)
        assert not _same_sweep(mine, module_sweep(assembly, placement)), ids
        checked += 1
    assert checked >= 100, checked
