"""The proof that every configuration at a goal drives the arm into an obstacle (search.sweep_proof): a box of joint
angles it calls colliding holds no configuration the collision checker calls free (property test over random
robots of both embedded sets, base placements, obstacle boxes around the arm and boxes of joint angles, numpy and
compiled), a pose reached free of the obstacles is never refused, and on ``obstacles_4`` (seed 38) it refuses the
arms the task-aware IK fails on against box1 and leaves the optimum to the IK."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import anywhere_configuration
from hypothesis import given, settings
from hypothesis import strategies as st
from proof_robots import (
    DBS,
    FAMILY,
    ROBOTS,
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
from timor_core.kinematics.tolerance import tolerance_from_json
from timor_core.search.filtering.proof_kernel import use_compiled
from timor_core.search.filtering.sweep_proof import (
    arm_sweep,
    certain_collision,
    certain_collision_numpy,
    obstacle_boxes,
    sweep_proof,
)
from timor_core.task import Task

EXP2 = tolerance_from_json(["x", "y", "z", "Theta_R"], [[-1e-3, 1e-3]] * 3 + [[0.0, math.pi / 4]])


@pytest.fixture(scope="module", autouse=True)
def _default_bounds():
    """The tests below choose the numpy or the compiled bounds; the rest of the suite gets the default rule."""
    yield
    use_compiled(None)


def _robot(name, pick, seed, spread):
    rng = np.random.default_rng(seed)
    assembly, _ = assembly_of(name, pick, rng, spread)
    return assembly.robot, rng, tuple(assembly.module_ids)


@settings(max_examples=40, deadline=None)
@given(
    **ROBOTS,
    width=st.sampled_from([0.01, 0.1, 0.5]),
    margin=st.sampled_from([0.0, 0.02]),
)
def test_a_box_called_colliding_holds_no_free_configuration(name, pick, seed, spread, width, margin):
    """Boxes of joint angles around random configurations, obstacle boxes around the arm: wherever the bound
    calls a box colliding, the collision checker (obstacles only, with the margin) finds every configuration
    sampled in it colliding; the numpy and the compiled bound agree."""
    robot, rng, ids = _robot(name, pick, seed, spread)
    sweep = arm_sweep(robot)
    if sweep is None:
        return
    task = obstacle_task(boxes_around(robot, anywhere_configuration(robot, rng), rng, 3))
    obstacles = obstacle_boxes(task)
    checker = CollisionChecker(robot, task.obstacles, margin, self_collision=False)
    n = sweep.chain.dof
    centres = rng.uniform(-math.pi, math.pi, (24, n))
    half = rng.uniform(0.0, width, (24, n))
    use_compiled(True)
    fast = certain_collision(sweep, obstacles, centres, half, margin)
    slow = certain_collision_numpy(sweep, obstacles, centres, half, margin)
    assert (fast == slow).all(), ids
    for b in np.flatnonzero(fast):
        for _ in range(6):
            q = robot_q(sweep, centres[b] + rng.uniform(-1.0, 1.0, n) * half[b], rng)
            assert checker.in_collision(q), (ids, centres[b], half[b], q)


@settings(max_examples=40, deadline=None)
@given(
    **ROBOTS,
    compiled=st.booleans(),
)
def test_a_pose_reached_free_of_the_obstacles_is_never_refused(name, pick, seed, spread, compiled):
    """The TCP pose at a random configuration the checker calls free of obstacle boxes placed around the arm
    (at that and at another configuration): the proof never refuses it."""
    use_compiled(compiled)
    robot, rng, ids = _robot(name, pick, seed, spread)
    sweep = arm_sweep(robot)
    if sweep is None:
        return
    for _ in range(3):
        q = anywhere_configuration(robot, rng)
        boxes = boxes_around(robot, q, rng, 2) + boxes_around(robot, anywhere_configuration(robot, rng), rng, 2)
        task = obstacle_task(boxes)
        if CollisionChecker(robot, task.obstacles, 0.0, self_collision=False).in_collision(q):
            continue
        goal = robot.fk(q)
        assert sweep_proof(sweep, obstacle_boxes(task), goal, EXP2, margin=0.0, budget=2048) is None, (ids, q)


def test_an_arm_based_inside_an_obstacle_is_refused_everywhere():
    """The base's body inside a box: every goal is refused (one box), and the checker agrees at any q."""
    ids = ("base", "J", "L_150", "J", "L_100", "J", "gripper")
    robot, rng = ModuleAssembly.from_serial_modules(DBS["robco_like"], ids).robot, np.random.default_rng(1)
    sweep = arm_sweep(robot)
    assert sweep is not None and len(sweep.fixed)
    pose = np.eye(4)
    pose[:3, 3] = sweep.fixed[0]
    task = obstacle_task([(pose, np.full(3, 0.05))])
    checker = CollisionChecker(robot, task.obstacles, 0.0, self_collision=False)
    for _ in range(5):
        q = anywhere_configuration(robot, rng)
        assert checker.in_collision(q)
        assert sweep_proof(sweep, obstacle_boxes(task), robot.fk(q), EXP2) == 1


@pytest.fixture(scope="module")
def obstacles_4() -> Task:
    return unseen_task("obstacles_4")


REFUSED = (
    "base J L_250 J L_250 J L_250 J gripper",
    "base J L_200 J L_100 J L_150 J I_100 gripper",
    "base J L_150 J L_200 J L_250 J I_50 gripper",
)
OPTIMUM = "base J L_250 J L_100 J L_100 J I_400 gripper"
EARLY = ("family", "ik")  # the filters that try the sweep proof before the IK (from the modules: family)


@pytest.mark.parametrize("compiled", [False, True])
def test_the_arms_that_reach_g3_only_through_box1_are_proven_so(obstacles_4, compiled):
    """On ``obstacles_4``: arms the task-aware IK (150 tries) fails on at g3 against box1 are refused by the proof,
    and the filter chain's verdict (with the proof) is what the task-aware IK alone gives (without it); the
    optimum's g3 is left to the IK, which reaches it."""
    from timor_core.search import FilterChain, FilterConfig
    from timor_core.search.filtering import sweep_proof as module
    from timor_core.task.feedback import task_base_placement

    use_compiled(compiled)
    db = DBS["robco_like"]
    placement = task_base_placement(obstacles_4)
    obstacles = obstacle_boxes(obstacles_4)
    g3 = next(g for g in obstacles_4.goals if g.id == "g3")
    chain = FilterChain(obstacles_4, db, "mass", FilterConfig())
    for text in (*REFUSED, OPTIMUM):
        robot = ModuleAssembly.from_serial_modules(db, text.split(), base_placement=placement).robot
        boxes = sweep_proof(arm_sweep(robot), obstacles, g3.goal_pose.world, g3.goal_pose.tolerance)
        assert (boxes is not None) == (text != OPTIMUM), text
        c = chain(tuple(text.split()))
        if text == OPTIMUM:
            assert c.failed_filter is None, c.reason
            continue
        assert c.failed_filter in ("ik", "ik_task") and "collides with an obstacle" in c.reason, c.reason
    plain = module.collision_refusal
    try:  # the same chains with the task-aware IK alone: it fails at g3 as well
        module.collision_refusal = lambda *args: None
        import timor_core.search.filtering.goal_filters as goal_filters

        goal_filters.collision_refusal = module.collision_refusal
        for text in REFUSED:
            c = FilterChain(obstacles_4, db, "mass", FilterConfig())(tuple(text.split()))
            assert c.failed_filter == "ik_task" and c.reason_key == "g3: collision with obstacle box1", c.reason
    finally:
        module.collision_refusal = plain
        goal_filters.collision_refusal = plain


@pytest.mark.parametrize("compiled", [False, True])
def test_a_sweep_proof_tried_before_the_ik_changes_no_verdict(obstacles_4, compiled, monkeypatch):
    """On ``obstacles_4`` (the arms above, the first 1,500 of the cost order, the optimum): where the ``ik`` filter
    tries the sweep proof before a goal's IK (it proved that goal for other chains of the family), every chain it
    refuses so is refused without it too, it refuses some, and the optimum (of the refused arms' family, tried
    early too) passes."""
    from timor_core.search import FilterChain, FilterConfig, paper_exp2_space
    from timor_core.search.filtering import filters, goal_filters
    from timor_core.search.spaces.cost_order import by_cost

    use_compiled(compiled)
    db = DBS["robco_like"]
    early = FilterChain(obstacles_4, db, "mass", FilterConfig(family_proof=True))
    texts = [*REFUSED, *(" ".join(ids) for k, (_, ids) in zip(range(1500), by_cost(paper_exp2_space(db), "mass")))]
    refused_early = [c.ids for c in map(early, (tuple(t.split()) for t in texts)) if c.failed_filter in EARLY
                     and "collides with an obstacle" in c.reason]  # fmt: skip
    optimum = early(tuple(OPTIMUM.split()))
    assert optimum.failed_filter is None, optimum.reason
    assert 2 in optimum.swept  # its family's g3 was proven for the refused arms: tried first, not proven
    assert refused_early
    monkeypatch.setattr(goal_filters, "likely_refusal", lambda *args: None)
    monkeypatch.setattr(filters, "early_refusal", lambda *args: None)
    plain = FilterChain(obstacles_4, db, "mass", FilterConfig(family_proof=True))
    for ids in refused_early:
        assert plain(ids).failed_filter is not None, ids


def _family_verdicts(task, db, order, monkeypatch, early: bool) -> list:
    """The filter chain's candidates (family proofs on) for ``order``'s chains of :data:`FAMILY`, in that order, with
    the sweep proof tried before the IK or not."""
    from timor_core.search import FilterChain, FilterConfig
    from timor_core.search.filtering import filters, goal_filters, sweep_proof

    with monkeypatch.context() as patch:
        if not early:
            patch.setattr(goal_filters, "likely_refusal", lambda *args: None)
            patch.setattr(filters, "early_refusal", lambda *args: None)
        else:
            patch.setattr(goal_filters, "likely_refusal", sweep_proof.likely_refusal)
            patch.setattr(filters, "early_refusal", sweep_proof.early_refusal)
        chain = FilterChain(task, db, "mass", FilterConfig(family_proof=True))
        return [chain(FAMILY[k]) for k in order]


def _check_early_sweeps(
    task: Task, order, compiled: bool, least: tuple[int, int] = (100, 1), tried: bool = True, verdicts=None
) -> None:
    """The early sweep proof over ``order``'s chains of :data:`FAMILY` on ``obstacles_4`` (see the tests below); at
    least ``least`` = (refused early, passing) among them; ``verdicts``: the (early, plain) verdicts of that order
    computed already (None: computed here)."""
    from _pytest.monkeypatch import MonkeyPatch

    use_compiled(compiled)
    db = DBS["robco_like"]
    patch = MonkeyPatch()
    try:
        early, plain = verdicts or (
            _family_verdicts(task, db, order, patch, early=True),
            _family_verdicts(task, db, order, patch, early=False),
        )
    finally:
        patch.undo()
    refused_early, passed = 0, 0
    for c, p in zip(early, plain, strict=True):
        if c.failed_filter in EARLY and "collides with an obstacle" in c.reason:
            refused_early += 1  # refused without it too: by the IK, or (the early proof runs before the workspace
            # filter, which some orders leave a goal no witness reached to) by the workspace bound
            assert p.failed_filter in ("workspace", "ik", "ik_task"), (c.ids, p.failed_filter, p.reason)
            goal = next(g for g in task.goals if c.reason.startswith(f"goal {g.id}:"))
            if "from a proof for a chain of its family" in c.reason:
                continue  # a proof started from a chain near it (its own from the whole turn may give up)
            # the sweep proof alone on the chain's built robot (once per chain and goal: proof_robots)
            assert sweep_proof_alone(task.id, compiled, tuple(c.ids), goal.id) is not None, (c.ids, goal.id)
            continue
        assert (c.failed_filter, c.reason_key, c.reason) == (p.failed_filter, p.reason_key, p.reason), c.ids
        if c.failed_filter is None:
            passed += 1
            assert 2 in c.swept or not tried, c.ids  # g3, proven for the family's refused arms: tried, not proven
    assert refused_early >= least[0] and passed >= least[1], (refused_early, passed)


@pytest.mark.xdist_group("obstacles_4_family")  # one worker computes the verdicts test_module_sweep reads too
def test_the_early_sweep_proof_refuses_many_of_a_family_and_changes_no_verdict(obstacles_4):
    """On ``obstacles_4``, the 448 chains of the refused arms' family (:data:`FAMILY`, shuffled; the family's record
    primed by its first chains): the ``ik`` filter refuses over a hundred of them by the sweep proof before their
    IK; each such refusal is the sweep proof's (run again here on the chain's robot at that goal), the chain is
    refused without the early proof too, and every other chain gets the same verdict and reason as without it (the
    chains that pass, tried early in vain at g3, still pass). Compiled bounds (the numpy ones: the slow test). The
    verdicts of that order are test_module_sweep's, computed once per process (``proof_robots.family_verdicts``)."""
    order = np.random.default_rng(38).permutation(len(FAMILY))
    _check_early_sweeps(obstacles_4, order, compiled=True, verdicts=(family_verdicts(True), family_verdicts(False)))


@pytest.mark.slow
@settings(max_examples=2, deadline=None)
@given(order=st.permutations(range(len(FAMILY))))
def test_the_early_sweep_proof_changes_no_verdict_in_any_order(obstacles_4, order):
    """As above, the family's chains in random orders (compiled bounds: with numpy's, an example took ~40 s, and
    test_a_box_called_colliding_holds_no_free_configuration holds the two bounds equal). A chain that passes need
    not have been tried early here: the family filter tries the proof on chains the IK would refuse at g1 or g2 as
    well, and its misses there count, so in some orders the family's record says "unlikely" when one comes."""
    _check_early_sweeps(obstacles_4, order, True, least=(50, 1), tried=False)


def _module_sweep(task: Task, text: str):
    """The module sweep and cut of the chain ``text`` at ``task``'s base placement."""
    from timor_core.search.filtering.arm_body import module_sweep
    from timor_core.search.filtering.family_proof import cut_chain
    from timor_core.task.feedback import task_base_placement

    placement = task_base_placement(task)
    assembly = ModuleAssembly.from_serial_modules(DBS["robco_like"], text.split(), base_placement=placement)
    return module_sweep(assembly, placement), cut_chain(assembly, placement), assembly


@pytest.mark.parametrize("tail", ["I_100 gripper", "I_150 gripper", "I_200 gripper"])
def test_a_proof_started_from_a_proven_sibling_never_refuses_the_optimum(obstacles_4, tail):
    """On ``obstacles_4`` the optimum reaches g3 free of the obstacles; its siblings with a shorter extension (the
    same modules up to the last joint) are proven not to: a proof for the optimum started from a sibling's boxes
    (``excess - d``, ``d`` the cuts' distance) is undecided, as its own, while one that took the boxes' excess as
    it is (``d`` = 0: what the start must not do) refuses it."""
    from timor_core.search.filtering.family_proof import distance
    from timor_core.search.filtering.sweep_proof import sweep_certificate

    use_compiled(True)
    g3 = next(g for g in obstacles_4.goals if g.id == "g3").goal_pose
    boxes = obstacle_boxes(obstacles_4)
    optimum, optimum_cut, _ = _module_sweep(obstacles_4, OPTIMUM)
    sibling, sibling_cut, _ = _module_sweep(obstacles_4, " ".join(OPTIMUM.split()[:8]) + " " + tail)
    proof = sweep_certificate(sibling, boxes, g3.world, g3.tolerance, leaves=True)
    assert proof is not None and proof.leaves is not None and proof.link < sibling.chain.dof - 1, tail
    d = distance(sibling_cut.rows, optimum_cut.rows)
    assert d > 0.1
    assert sweep_certificate(optimum, boxes, g3.world, g3.tolerance, start=(proof.leaves, d)) is None
    assert sweep_certificate(optimum, boxes, g3.world, g3.tolerance, start=(proof.leaves, 0.0)) is not None


@pytest.mark.parametrize("text", [*REFUSED, OPTIMUM])
def test_a_witness_ends_only_a_proof_that_cannot_succeed(obstacles_4, text):
    """A configuration within g3's slacks (the IK's, obstacles ignored, descended to within the proof's slacks as
    the family filter's witnesses are, ``reach_proof.reaching``): given to the proof of a refused arm, the proof
    ends as it does without it (the body refuses the witness); given to the optimum's, with its collision-free
    configuration, it ends undecided at once (as it does without)."""
    from timor_core.search.filtering.reach_proof import reaching
    from timor_core.search.filtering.sweep_proof import sweep_certificate

    use_compiled(True)
    g3 = next(g for g in obstacles_4.goals if g.id == "g3").goal_pose
    boxes = obstacle_boxes(obstacles_4)
    sweep, _, assembly = _module_sweep(obstacles_4, text)
    robot = assembly.robot
    rng = np.random.default_rng(3)
    task = obstacles_4 if text == OPTIMUM else None
    result = robot.ik(g3, task=task, rng=rng, ignore_self_collision=True, max_n_tries=50, details=True)
    assert result.success, text
    witness = reaching(sweep.chain.steps, np.asarray(result.q, dtype=float)[None], g3.world, g3.tolerance)
    assert witness is not None, text
    plain = sweep_certificate(sweep, boxes, g3.world, g3.tolerance)
    assert sweep_certificate(sweep, boxes, g3.world, g3.tolerance, witness=witness) == plain
    assert (plain is None) == (text == OPTIMUM), text


@pytest.mark.parametrize("text", REFUSED)
def test_the_body_a_proof_needed_is_the_same_for_every_chain_with_those_modules(obstacles_4, text):
    """A refused arm's proof at g3 (``sweep_certificate``): every box of it the body refused is refused by the body
    of every chain of the exp2 space with the same modules up to the one ``body_modules`` names (the proof's
    ``link``; whatever follows), so a proof of such a chain may start from those boxes."""
    from timor_core.search import paper_exp2_space
    from timor_core.search.filtering.reach_proof import box_excess
    from timor_core.search.filtering.sweep_fused import BODY
    from timor_core.search.filtering.sweep_proof import body_modules, sweep_certificate

    use_compiled(True)
    g3 = next(g for g in obstacles_4.goals if g.id == "g3").goal_pose
    boxes = obstacle_boxes(obstacles_4)
    sweep, _, assembly = _module_sweep(obstacles_4, text)
    proof = sweep_certificate(sweep, boxes, g3.world, g3.tolerance, leaves=True)
    assert proof is not None and proof.leaves is not None
    end = body_modules(assembly.modules, sweep, proof.link)
    assert end is not None and end < len(assembly.modules) - 1, (text, proof.link)
    leaves = proof.leaves
    measured = box_excess(sweep.chain, g3.world, g3.tolerance, leaves.centres, leaves.half)
    body = leaves.excess == BODY  # (refused by the body; by rotation alone: inf, as the measure says)
    assert body.any() and np.array_equal(np.isinf(leaves.excess), np.isinf(measured) & ~body)
    head = tuple(text.split()[: end + 1])
    others = [ids for ids in map(tuple, paper_exp2_space(DBS["robco_like"])) if ids[: end + 1] == head]
    others = [ids for ids in others if ids != tuple(text.split())]
    assert len(others) >= 3, (text, end)
    for ids in others[:40]:
        other, _, _ = _module_sweep(obstacles_4, " ".join(ids))
        if other is None or other.chain.dof != sweep.chain.dof:
            continue
        hit = certain_collision(other, boxes, leaves.centres[body], leaves.half[body])
        assert hit.all(), (text, ids)


def test_a_chain_with_other_modules_starts_with_the_bodys_boxes_open(obstacles_4):
    """A refused arm's kept proof at g3 (``sweep_proof.SweepStarts``): a chain of its family with the same modules up
    to those its body needed starts from its boxes as they are (the body's too: excess ``BODY``); one with other
    modules starts from them with exactly the body's boxes open (excess -inf: measured again), those refused by
    position or by rotation alone (inf: the family's orientations are the same) as they are."""
    from timor_core.search.filtering.sweep_fused import BODY
    from timor_core.search.filtering.sweep_proof import SweepStarts, body_modules, sweep_certificate

    use_compiled(True)
    g3 = next(g for g in obstacles_4.goals if g.id == "g3").goal_pose
    text = REFUSED[1]
    sweep, cut, assembly = _module_sweep(obstacles_4, text)
    proof = sweep_certificate(sweep, obstacle_boxes(obstacles_4), g3.world, g3.tolerance, leaves=True)
    assert proof is not None and proof.leaves is not None
    excess, ids = proof.leaves.excess, tuple(text.split())
    body = excess == BODY
    assert body.any() and np.isinf(excess).any() and np.isfinite(excess[~body]).any()  # (every kind of box)
    end = body_modules(assembly.modules, sweep, proof.link)
    assert end is not None and end + 1 < len(ids)
    starts = SweepStarts()
    starts.add(2, cut, ids, end, proof.leaves)
    same = starts.near(2, cut, (*ids[: end + 1], *("another",) * (len(ids) - end - 1)))
    assert same is not None and same[0] is proof.leaves and same[2] == end + 1
    other = starts.near(2, cut, ("another", *ids[1:]))
    assert other is not None and other[2] == 0 and other[1] == same[1]
    assert np.all(other[0].excess[body] == -math.inf)
    assert np.array_equal(other[0].excess[~body], excess[~body])
    assert starts.near(1, cut, ids) is None


def test_every_start_holds_for_the_chain_it_starts(obstacles_4, monkeypatch):
    """The family filter's sweep proofs over 160 chains of the refused arms' family (seed 38's order), every proof's
    boxes kept (a started one's under the modules its start's body needed too): every start handed to a chain has
    boxes refused by the body (excess ``BODY``) only where it shares the modules they need, and the chain's own body
    (its modules' sweep) refuses each of them; both kinds of start are handed out (the same modules, and other
    modules with the body's boxes open)."""
    from proof_robots import FAMILY_38

    from timor_core.search import FilterChain, FilterConfig
    from timor_core.search.filtering import filters, sweep_proof
    from timor_core.search.filtering.sweep_fused import BODY

    use_compiled(True)
    boxes, kinds = obstacle_boxes(obstacles_4), {"same modules": 0, "other modules": 0}
    real = sweep_proof.SweepStarts.near

    def near(self, k, cut, ids):
        found = real(self, k, cut, ids)
        if found is not None:
            leaves, _, shared = found
            body = leaves.excess == BODY
            kinds["same modules" if shared else "other modules"] += 1
            assert shared or not body.any(), ids
            if body.any():
                sweep, _, _ = _module_sweep(obstacles_4, " ".join(ids))
                assert certain_collision(sweep, boxes, leaves.centres[body], leaves.half[body]).all(), ids
        return found

    monkeypatch.setattr(sweep_proof.SweepStarts, "near", near)
    monkeypatch.setattr(filters, "early_refusal", sweep_proof.early_refusal)
    chain = FilterChain(obstacles_4, DBS["robco_like"], "mass", FilterConfig(family_proof=True))
    for ids in FAMILY_38[:160]:
        chain(ids)
    assert min(kinds.values()) >= 3, kinds
