"""Proofs for families of chains (search.family_proof): the cut gives the robot's own kinematics, a proof's margin
never exceeds the translation distance to a chain that reaches the goal (property test over random robots of two
module sets, base placements, configurations, goals within four kinds of tolerance and link translations moved by
random amounts), a certificate never refuses such a chain, and the search's verdicts do not change."""

from __future__ import annotations

import itertools
import json
import math

import numpy as np
from conftest import anywhere_configuration, random_placement
from family_cases import EXP2, TASKS, arms, family_member, goal_near, variants
from hypothesis import given, settings
from hypothesis import strategies as st
from proof_robots import DBS, ROBOT, ROBOTS, SPACES, assembly_of
from reach_cases import TOLERANCES, within

from timor_core import ModuleAssembly
from timor_core.search.filtering.family_proof import ROTATION_SLACK, FamilyProofs, chain_segments, cut_chain, distance
from timor_core.search.filtering.quick_reach import joint_frames
from timor_core.search.filtering.reach_proof import chain_poses, pose_proof


@settings(max_examples=25, deadline=None)
@given(**ROBOT)
def test_the_cut_is_the_robots_kinematics(name, pick, seed):
    """The frames rebuilt from the cut's steps are the joints' and the TCP's as the walk of the modules gives them
    (every joint's where none was merged, the first joint's and the TCP's always), the cut from the segments seen
    before (``FamilyProofs.cut``) is the same, and the cut's chain gives Pinocchio's TCP poses at random
    configurations."""
    rng = np.random.default_rng(seed)
    assembly, placement = assembly_of(name, pick, rng, 0.5)
    cut = cut_chain(assembly, placement)
    if cut is None:
        return
    joints, tcp = joint_frames(assembly, placement)
    frames = list(itertools.accumulate(cut.steps, np.matmul))  # (q = 0: A_0 A_1 ... A_k)
    assert np.allclose(frames[0], joints[0], atol=1e-12) and np.allclose(frames[-1], tcp, atol=1e-12)
    if len(frames) == len(joints) + 1:
        assert np.allclose(frames[:-1], joints, atol=1e-12)
    space = SPACES[name]
    proofs = FamilyProofs([], 1, placement)
    for k in rng.integers(0, space.count, 30):  # segments seen in other assemblies
        proofs.cut(ModuleAssembly.from_serial_modules(DBS[name], space[int(k)], base_placement=placement))
    cached = proofs.cut(assembly)
    assert cached is not None and cached.rotations == cut.rotations
    assert np.allclose(cached.steps, cut.steps, atol=1e-12)
    robot = assembly.robot
    q = np.array([anywhere_configuration(robot, rng) for _ in range(4)])
    at = chain_poses(cut.chain, q)  # joints on one line merged: a different but equal parametrisation
    if cut.chain.dof == robot.dof:
        for k in range(len(q)):
            pose = robot.fk(q[k])
            assert np.allclose(at.frames[k].T, pose[:3, :3], atol=1e-12)
            assert np.allclose(at.tcp[k], pose[:3, 3], atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    **ROBOTS,
    total=st.sampled_from([0.0, 0.002, 0.02, 0.1, 0.4]),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
)
def test_no_certificate_refuses_a_chain_that_reaches_the_goal(name, pick, seed, spread, total, tolerance):
    """A chain of the family (translations moved by ``total`` in all) reaches a goal; every proof for the original
    chain that refuses that goal has a margin of at most the distance (widened or not), and the certificates never
    refuse it."""
    rng = np.random.default_rng(seed)
    assembly, placement = assembly_of(name, pick, rng, spread)
    cut = cut_chain(assembly, placement)
    if cut is None:
        return
    tol = TOLERANCES[tolerance]
    for _ in range(4):
        member, distance = family_member(cut, rng, total)
        q = rng.uniform(-np.pi, np.pi, (1, member.chain.dof))
        at = chain_poses(member.chain, q)
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = at.frames[0].T, at.tcp[0]
        goal = within(pose, tolerance, rng)
        # the margin as proven, widened by cutting the tight boxes further, and widened level by level
        for widen, levels in ((0.0, ()), (0.15, ()), (0.15, (0.0, 0.05, 0.1, 0.15))):
            proof = pose_proof(cut.chain, goal, tol, widen=widen, levels=levels)
            assert proof is None or proof.margin <= distance + 1e-9, (proof, distance, widen)
        proofs = FamilyProofs([(goal, tol)], 4096)
        proofs.refusal(cut)  # may leave a certificate ...
        assert proofs.refusal(member) is None  # ... which must not cover the member


def test_the_search_verdicts_do_not_change():
    """The first assemblies of the cost order on a new task: every one the family filter refuses fails without
    it (the IK or an earlier proof), at least a hundred of them by a certificate alone, and the valid ones stay
    valid."""
    from timor_core.search import FilterChain, FilterConfig, paper_exp2_space
    from timor_core.search.spaces.cost_order import by_cost
    from timor_core.task import Task

    db = DBS["robco_like"]
    task = Task.from_json_data(json.loads((TASKS / "more_goals.json").read_text()))
    family = FilterChain(task, db, "mass", FilterConfig(family_proof=True))
    plain = FilterChain(task, db, "mass", FilterConfig(family_proof=False))
    by_certificate = 0
    for k, (_, ids) in enumerate(by_cost(paper_exp2_space(db), "mass")):
        if k >= 600:
            break
        a = family(ids)
        if a.failed_filter == "family":
            by_certificate += "family within the proof's margin" in a.reason
            b = plain(ids)
            assert b.failed_filter is not None, (ids, a.reason)
    assert by_certificate >= 100
    optimum = ("base", "J", "L_100", "J", "L_150", "J", "L_250", "J", "L_100", "gripper")
    assert family(optimum).failed_filter is None and plain(optimum).failed_filter is None


def _merged_angles(assembly, placement, q: np.ndarray) -> np.ndarray:
    """The merged chain's angles for the robot's ``q``: a joint on one line with the joint before adds its angle
    and the turn ``phi`` of the step between them to the first's (``Rz(a) Tz(l) Rz(phi) Rz(b) = Tz(l) Rz(a + phi +
    b)``)."""
    segments = chain_segments(assembly, placement)
    out = [q[0]]
    for k in range(1, len(segments) - 1):
        step, axial = segments[k][1], segments[k][3]
        if axial is None:
            out.append(q[k])
        else:
            out[-1] += math.atan2(step[1, 0], step[0, 0]) + q[k]
    return np.array(out)


@settings(max_examples=40, deadline=None)
@given(**ROBOT)
def test_merged_joints_give_the_robots_poses(name, pick, seed):
    """A cut merges each joint on one line with the joint before into it (``family_proof.merged``): at every
    configuration of the robot, the merged chain at the merged angles has the robot's TCP pose (Pinocchio's), so
    it reaches exactly the robot's poses and a proof or certificate for it holds for the robot."""
    rng = np.random.default_rng(seed)
    for space in (SPACES[name], EXP2[name]):
        ids = space[int(pick * space.count)]
        placement = random_placement(rng, 0.5)
        assembly = ModuleAssembly.from_serial_modules(DBS[name], ids, base_placement=placement)
        cut = cut_chain(assembly, placement)
        if cut is None:
            continue
        robot = assembly.robot
        assert cut.gaps == 2 + sum(s[3] is None for s in chain_segments(assembly, placement)[1:-1])
        for _ in range(4):
            q = np.array(anywhere_configuration(robot, rng))
            merged_q = _merged_angles(assembly, placement, q)
            assert len(merged_q) == cut.gaps - 1
            frames = cut.steps[0].copy()
            for k, angle in enumerate(merged_q):
                c, s = math.cos(angle), math.sin(angle)
                frames = frames @ np.array([[c, -s, 0, 0], [s, c, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]) @ cut.steps[k + 1]
            assert np.allclose(frames, robot.fk(q), atol=1e-9)


def test_an_arm_with_joints_on_one_line_is_in_the_shorter_arms_family():
    """``J I_50 J L_100 J`` turns like ``J L_100 J`` (the first two joints on one line): one family, translations
    apart by the 0.2 m the second joint and ``I_50`` add along the axis; ``J L_100 J L_100 J`` is not of it."""
    db = DBS["robco_like"]
    cut = {ids: cut_chain(ModuleAssembly.from_serial_modules(db, ids), None) for ids in (
        ("base", "J", "I_50", "J", "L_100", "J", "gripper"),
        ("base", "J", "L_100", "J", "gripper"),
        ("base", "J", "J", "L_100", "J", "gripper"),
        ("base", "J", "L_100", "J", "L_100", "J", "gripper"),
    )}  # fmt: skip
    five, three, four, bent = cut.values()
    assert five.rotations == three.rotations == four.rotations != bent.rotations
    assert abs(distance(five.rows, three.rows) - 0.2) < 1e-12 and abs(distance(four.rows, three.rows) - 0.15) < 1e-12


@settings(max_examples=30, deadline=None)
@given(
    pick=ROBOT["pick"],
    seed=ROBOT["seed"],
    tolerance=st.sampled_from(sorted(TOLERANCES)),
)
def test_no_certificate_of_a_merged_family_refuses_a_chain_that_reaches_the_goal(pick, seed, tolerance):
    """A goal at the pose of a random configuration of an exp2 arm (within four kinds of tolerance): its family's
    other members (links swapped, straight ones dropped: other numbers of joints, one merged family) proven first,
    their certificates never refuse the arm, nor does its own proof; and the members do share its family."""
    rng = np.random.default_rng(seed)
    db, space = DBS["robco_like"], EXP2["robco_like"]
    ids = space[int(pick * space.count)]
    placement = random_placement(rng, 0.3)
    assembly = ModuleAssembly.from_serial_modules(db, ids, base_placement=placement)
    q = np.array(anywhere_configuration(assembly.robot, rng))
    goal = within(assembly.robot.fk(q), tolerance, rng)
    proofs = FamilyProofs([(goal, TOLERANCES[tolerance])], 4096, placement)
    own = proofs.cut(assembly)
    for other in variants(ids)[:12]:
        cut = proofs.cut(ModuleAssembly.from_serial_modules(db, other, base_placement=placement))
        assert cut.rotations == own.rotations
        proofs.refusal(cut)  # may leave a certificate ...
    assert proofs.refusal(own) is None  # ... which must not cover the arm


@settings(max_examples=40, deadline=None)
@given(**ROBOTS, steps=st.lists(st.sampled_from([0.0, 0.01, 0.05, 0.1, 0.3]), min_size=1, max_size=4))
def test_a_margin_above_a_level_covers_the_chain_at_that_distance(name, pick, seed, spread, steps):
    """The widening's levels (``FamilyProofs.distances``): each distance below ``WIDEN`` between two certificates of a
    family gives a level, and a certificate whose proof's margin is above that level covers the chain at that
    distance (the look-up's allowance included); none before two certificates lie that close."""
    from timor_core.search.filtering.family_proof import WIDEN, Lesson

    rng = np.random.default_rng(seed)
    assembly, placement = assembly_of(name, pick, rng, spread)
    cut = cut_chain(assembly, placement)
    if cut is None:
        return
    proofs = FamilyProofs([(np.eye(4), TOLERANCES["exp2"])], 4096)
    assert proofs.distances.levels(cut.gaps) == ()
    members = [family_member(cut, rng, total) for total in steps]
    for chain in [cut] + [member for member, _ in members]:
        proofs.learn([Lesson(0, cut.rotations, chain.translations, 1.0)])
    levels = proofs.distances.levels(cut.gaps)
    near = [(member, gap) for member, gap in members if gap + 1e-5 < WIDEN]
    chains = [cut.translations] + [member.translations for member, _ in members]  # (members also lie near each other)
    pairs = [float(np.linalg.norm(a - b, axis=1).sum()) for a, b in itertools.combinations(chains, 2)]
    if all(d >= WIDEN + 1e-5 for d in pairs):
        assert levels == ()
    elif any(d + 1e-5 < WIDEN for d in pairs):
        assert levels[-1] == WIDEN and list(levels) == sorted(levels)
    for member, gap in near:
        level = min(v for v in levels if v > gap)
        assert level - gap < 3e-6, (level, gap)
        covering = FamilyProofs([(np.eye(4), TOLERANCES["exp2"])], 4096)
        margin = np.nextafter(level, math.inf)
        slack = 1e-7 * (cut.gaps + 1)  # the certificates' allowance (family_proof.ROTATION_SLACK per gap and one)
        covering.learn([Lesson(0, cut.rotations, cut.translations, margin - slack)])
        assert covering.certified(member) is not None, (gap, level)


def test_the_nearest_kept_boxes_by_the_certificates_metric():
    """``FamilyProofs._near`` gives, of the boxes kept by the family's proven chains, those nearest a chain by the
    certificates' metric (the sum over the gaps of the translations' distances, numpy's value, plus the look-up's
    allowance) among those below their floor, and that distance: chains 0-30 cm off drawn arms, against numpy."""
    rng, checked = np.random.default_rng(11), 0
    for cut in arms(rng, 40):
        proofs = FamilyProofs([(goal_near(cut.chain, rng, "exp2", 0.3), TOLERANCES["exp2"])], 4096)
        for _ in range(4):
            proofs.refusal(family_member(cut, rng, float(rng.uniform(0.0, 0.3)))[0])
        kept, slack = proofs.starts.get((0, cut.rotations), []), ROTATION_SLACK * (cut.gaps + 1)
        for _ in range(4):
            member = family_member(cut, rng, float(rng.uniform(0.0, 0.3)))[0]
            ds = [float(np.sqrt(((np.array(t) - member.translations) ** 2).sum(axis=1)).sum()) + slack for t, _ in kept]
            below = [(d, i) for i, d in enumerate(ds) if d < kept[i][1].floor]
            got = proofs._near(0, member)
            if below:
                d, i = min(below)
                assert got is not None and got[0] is kept[i][1] and got[1] == d, (got, below)
                checked += 1
            else:
                assert got is None
    assert checked >= 20, checked
