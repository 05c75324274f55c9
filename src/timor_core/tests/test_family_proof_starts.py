"""Proofs started from a family member's boxes (search.family_proof): a goal found reached is refused by no proof
or reach bound, a proof's boxes bound the chain's own poses, a proof started from a member's boxes never refuses a
reached goal, an undecided started proof is not run again, and the kept boxes are bounded."""

from __future__ import annotations

import numpy as np
from family_cases import arms, drawn_cut, family_member, goal_near, goals_at_members
from hypothesis import given, settings
from hypothesis import strategies as st
from proof_robots import DBS, ROBOT, assembly_of
from reach_cases import TOLERANCES

from timor_core.search.filtering.family_proof import FamilyProofs, cut_chain
from timor_core.search.filtering.reach_proof import chain_poses, pose_proof


@settings(max_examples=40, deadline=None)
@given(
    **ROBOT,
    total=st.sampled_from([0.0, 0.001, 0.005, 0.03]),
    miss=st.sampled_from([0.0, 0.0, 0.004, 0.03]),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
)
def test_a_goal_found_reached_is_one_no_proof_or_reach_bound_refuses(name, pick, seed, total, miss, tolerance):
    """The family filter's witnesses (a proof's, and the last ones of a family tried on its other chains first):
    chains of one family (translations moved by ``total``), goals at one's random configuration (within four kinds
    of tolerance, moved ``miss`` off): the refusals are what proofs without any witness give, a goal put in
    ``reached`` is refused by no such proof, and for the assembly itself by neither reach bound of the ``robot``
    and ``workspace`` filters (the modules' and the robot's)."""
    from timor_core.kinematics.ik import outside_workspace
    from timor_core.kinematics.reach import position_slack, reach_gap
    from timor_core.search.filtering import reach_proof
    from timor_core.search.filtering.proof_kernel import use_compiled
    from timor_core.search.filtering.quick_reach import quick_chain, quick_gap

    use_compiled(True)
    rng, assembly, placement, cut = drawn_cut(name, pick, seed)
    if cut is None:
        return
    members = [cut] + [family_member(cut, rng, total)[0] for _ in range(3)]
    goals, tol = goals_at_members(members, rng, tolerance, miss), TOLERANCES[tolerance]
    found, proofs = [], FamilyProofs(goals, 4096, placement)
    for member in members:
        reached: set[int] = set()
        found.append((proofs.refusal(member, reached), reached))
    levels, reach_proof.WITNESS_LEVELS = reach_proof.WITNESS_LEVELS, 0
    try:
        plain = FamilyProofs(goals, 4096, placement)
        for member, (refusal, reached) in zip(members, found, strict=True):
            assert plain.refusal(member) == refusal
            for k in reached:
                assert pose_proof(member.chain, *goals[k]) is None
    finally:
        reach_proof.WITNESS_LEVELS = levels
    robot, qc = assembly.robot, quick_chain(assembly, placement)
    for k in found[0][1]:
        slack, where = position_slack(tol), goals[k][0][:3, 3]
        assert outside_workspace(robot, robot.tcp, goals[k][0], tol) == 0.0
        assert reach_gap(robot, robot.tcp, where, slack) == 0.0
        assert qc is None or quick_gap(qc, type("Pose", (), {"world": goals[k][0], "tolerance": tol})) == 0.0


@settings(max_examples=40, deadline=None)
@given(
    **ROBOT,
    miss=st.sampled_from([0.005, 0.02, 0.08]),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
)
def test_a_proofs_boxes_bound_the_chains_own_poses(name, pick, seed, miss, tolerance):
    """The boxes a proof leaves (``pose_proof(kept=...)``, what proofs of nearby chains start from): at 400
    configurations (uniform and near the goal's) whose TCP is within the goal's rotation tolerance, the TCP is at
    least the slack plus the box's excess from the goal where the configuration lies in a kept box, and the slack
    plus the floor elsewhere."""
    from timor_core.kinematics.reach import position_slack
    from timor_core.search.filtering.reach_proof import EPS, rotation_slack

    rng = np.random.default_rng(seed)
    assembly, placement = assembly_of(name, pick, rng, 0.3)
    cut = cut_chain(assembly, placement)
    if cut is None:
        return
    tol, chain = TOLERANCES[tolerance], cut.chain
    goal = goal_near(chain, rng, tolerance, miss)
    kept: list = []
    if pose_proof(chain, goal, tol, widen=0.15, kept=kept) is None:
        return
    boxes = kept[0]
    q = np.concatenate([rng.uniform(-np.pi, np.pi, (200, chain.dof)), rng.normal(0.0, 0.3, (200, chain.dof))])
    if len(boxes.centres):  # near the kept boxes: the ones refused with least to spare
        q[200:] += boxes.centres[rng.integers(0, len(boxes.centres), 200)]
    q = (q + np.pi) % (2 * np.pi) - np.pi
    at = chain_poses(chain, q)
    cos = np.clip((np.einsum("mkj,kj->m", at.frames, goal[:3, :3].T) - 1.0) / 2.0, -1.0, 1.0)
    turned = np.arccos(cos) <= rotation_slack(tol) + 1e-6
    gap = np.linalg.norm(at.tcp - goal[:3, 3], axis=1) - position_slack(tol) - EPS
    inside = np.all(np.abs(q[:, None, :] - boxes.centres[None]) <= boxes.half[None] + 1e-12, axis=2)
    bound = np.where(inside, boxes.excess[None], np.inf).min(axis=1)
    bound = np.where(inside.any(axis=1), bound, boxes.floor)
    assert np.all(~turned | (gap >= bound - 1e-9)), (gap[turned] - bound[turned]).min()


@settings(max_examples=60, deadline=None)
@given(
    **ROBOT,
    total=st.sampled_from([0.002, 0.02, 0.05, 0.1]),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
)
def test_a_proof_started_from_a_members_boxes_never_refuses_a_reached_goal(name, pick, seed, total, tolerance):
    """A chain of the family (translations moved by ``total``) reaches a goal: a proof of it started from the
    boxes of the original chain's proof (``pose_proof(start=...)``, as :class:`FamilyProofs` runs it for a chain
    near a proven one) never refuses it, nor does the family filter after proving the original chain."""
    rng, _, _, cut = drawn_cut(name, pick, seed)
    if cut is None:
        return
    tol = TOLERANCES[tolerance]
    for _ in range(4):
        member, distance = family_member(cut, rng, total)
        goal = goal_near(member.chain, rng, tolerance, 0.0)
        kept: list = []
        proof = pose_proof(cut.chain, goal, tol, widen=0.15, kept=kept)
        if proof is not None and distance < kept[0].floor:
            assert pose_proof(member.chain, goal, tol, widen=0.15, start=(kept[0], distance)) is None
        proofs = FamilyProofs([(goal, tol)], 4096)
        proofs.refusal(cut)
        assert proofs.refusal(member) is None


def test_proofs_start_from_a_members_boxes():
    """The test above is not idle: of 120 chains (both embedded sets) moved 2-10 cm off their family's proven one
    from a goal the moved chain reaches, proofs started from the proven chain's boxes ran for at least 12, and
    every one was undecided."""
    rng = np.random.default_rng(7)
    started = 0
    for k in range(120):
        name = sorted(DBS)[k % 2]
        assembly, placement = assembly_of(name, float(rng.uniform()), rng, 0.3)
        cut = cut_chain(assembly, placement)
        if cut is None:
            continue
        member, distance = family_member(cut, rng, float(rng.choice([0.02, 0.05, 0.1])))
        goal = goal_near(member.chain, rng, "exp2", 0.0)
        kept: list = []
        if pose_proof(cut.chain, goal, TOLERANCES["exp2"], widen=0.15, kept=kept) and distance < kept[0].floor:
            started += 1
            start = (kept[0], distance)
            assert pose_proof(member.chain, goal, TOLERANCES["exp2"], widen=0.15, start=start) is None
    assert started >= 12, started


def test_a_started_proof_left_undecided_is_not_run_again(monkeypatch):
    """A chain whose proof started from a proven neighbour's boxes ends undecided is left to the IK: one proof a goal,
    not a second one from the whole turn (s49: such reruns ended undecided too on the unseen tasks). Chains moved
    2-10 cm off a proven one, from a goal the moved chain reaches (as the test above): at least 8 end so without a
    witness."""
    from timor_core.search.filtering import family_proof

    calls: list[tuple[bool, bool]] = []  # per proof: started, ended with a witness

    def counted(*args, **kwargs):
        before = len(kwargs["witnesses"])
        proof = pose_proof(*args, **kwargs)
        calls.append((kwargs.get("start") is not None, len(kwargs["witnesses"]) > before))
        return proof

    monkeypatch.setattr(family_proof, "pose_proof", counted)
    rng, undecided = np.random.default_rng(7), 0
    for cut in arms(rng, 120):
        member, _ = family_member(cut, rng, float(rng.choice([0.02, 0.05, 0.1])))
        proofs = FamilyProofs([(goal_near(member.chain, rng, "exp2", 0.0), TOLERANCES["exp2"])], 4096)
        if proofs.refusal(cut) is None:
            continue
        calls.clear()
        assert proofs.refusal(member) is None  # (it reaches the goal)
        if calls and calls[0][0]:
            assert len(calls) == 1, calls
            undecided += not calls[0][1]
    assert undecided >= 8, undecided


def test_the_kept_boxes_are_bounded(monkeypatch):
    """``FamilyProofs`` keeps at most ``MAX_KEPT_BOXES`` boxes for started proofs (more: it forgets them all): 13
    chains of a family and three goals each of three arms, with the default cap (proofs started from kept boxes)
    and with a cap of 50."""
    from timor_core.search.filtering import family_proof

    tol, started = TOLERANCES["exp2"], 0
    for cap in (family_proof.MAX_KEPT_BOXES, 50):
        monkeypatch.setattr(family_proof, "MAX_KEPT_BOXES", cap)
        rng = np.random.default_rng(3)
        for pick in (0.1, 0.4, 0.7):
            assembly, placement = assembly_of("robco_like", pick, rng, 0.3)
            cut = cut_chain(assembly, placement)
            assert cut is not None
            members = [cut] + [family_member(cut, rng, float(rng.choice([0.02, 0.05, 0.1])))[0] for _ in range(12)]
            proofs = FamilyProofs([(goal_near(m.chain, rng, "exp2", 0.05), tol) for m in members[:3]], 4096)
            for member in members:
                proofs.refusal(member)
                kept = sum(len(b.excess) for starts in proofs.starts.values() for _, b in starts)
                assert kept == proofs.kept_boxes <= cap
            started += proofs.started
    assert started > 0
