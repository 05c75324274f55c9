"""Witnesses kept by the family proofs (search.family_proof): kept across a family change or reused across a task's
chains they change no verdict or reason, and a goal put in the reached set has a witness that reaches it."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from conftest import anywhere_configuration, random_placement
from family_cases import EXP2, TASKS, drawn_cut, family_member, goals_at_members, variants
from hypothesis import given, settings
from hypothesis import strategies as st
from proof_robots import DBS, ROBOT, ROBOTS, unseen_task
from reach_cases import TOLERANCES, within

from timor_core import ModuleAssembly
from timor_core.search.filtering.family_proof import FamilyProofs
from timor_core.search.filtering.family_proof import reaching as reached_by


def _exp2_task(goals: list[np.ndarray], tolerance: str, placement: np.ndarray | None):
    """A task of these goals (4x4, world) under one of :data:`TOLERANCES`' tolerances, the base at ``placement``."""
    from timor_core.task import Task

    projection, bounds = {
        "exp2": (["x", "y", "z", "Theta_R"], [[-1e-3, 1e-3]] * 3 + [[0.0, math.pi / 4]]),
        "tight": (["x", "y", "z", "Theta_R"], [[-1e-4, 1e-4]] * 3 + [[0.0, math.radians(0.1)]]),
        "rotation vector": (["x", "y", "z", "N_x", "N_y", "N_z"], [[-2e-3, 2e-3]] * 3 + [[-0.2, 0.2], [-0.1, 0.1],
                                                                                         [-0.3, 0.3]]),
        "position only": (["x", "y", "z"], [[-1e-3, 1e-3]] * 3),
    }[tolerance]  # fmt: skip
    at = [{"ID": f"g{k}", "type": "at", "goalPose": {"nominal": g.tolist(), "toleranceProjection": projection,
                                                     "tolerance": bounds}} for k, g in enumerate(goals)]  # fmt: skip
    base = [] if placement is None else [{"type": "basePlacement", "pose": {"nominal": placement.tolist()}}]
    return Task.from_json_data({"header": {"ID": "witnessed"}, "constraints": base, "goals": at})


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(
    pick=ROBOT["pick"],
    seed=ROBOT["seed"],
    spread=ROBOTS["spread"],
    misses=st.lists(st.sampled_from([0.0, 0.0, 0.002, 0.03, 0.15]), min_size=1, max_size=3),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
    order=st.randoms(use_true_random=False),
)
def test_witnesses_kept_across_a_family_change_no_verdict_or_reason(pick, seed, spread, misses, tolerance, order):
    """The filter chain (family proofs on) over up to 40 of an exp2 arm's family (links swapped or dropped twice at
    most, the base placed at random) in a random order, on a task of goals at members' random configurations (each
    moved ``misses[k]`` off): every chain gets the verdict, filter and reason it gets where no witness is kept
    across chains and no goal is marked reached (the proofs, ``first_unreachable`` and the workspace filter run for
    every goal), and a goal marked reached is within the robot's reach bounds."""
    from timor_core.kinematics.ik import outside_workspace
    from timor_core.kinematics.reach import position_slack, reach_gap
    from timor_core.search import FilterChain, FilterConfig
    from timor_core.search.filtering import family_proof
    from timor_core.search.filtering.proof_kernel import use_compiled

    use_compiled(True)
    rng = np.random.default_rng(seed)
    db, space = DBS["robco_like"], EXP2["robco_like"]
    ids = tuple(space[int(pick * space.count)])
    members = sorted({ids, *(w for v in variants(ids) for w in (v, *variants(v)))})  # two swaps at most
    order.shuffle(members)
    members = members[:40]
    placement = random_placement(rng, spread) if spread else None
    goals = []
    for miss in misses:
        at = members[int(rng.integers(len(members)))]
        robot = ModuleAssembly.from_serial_modules(db, at, base_placement=placement).robot
        goal = within(robot.fk(anywhere_configuration(robot, rng)), tolerance, rng)
        shift = rng.normal(size=3)
        goal[:3, 3] += shift / np.linalg.norm(shift) * miss
        goals.append(goal)
    task = _exp2_task(goals, tolerance, placement)
    kept = FilterChain(task, db, "mass", FilterConfig(family_proof=True))
    with_witnesses = [kept(m) for m in members]
    refusal = FamilyProofs.refusal
    try:  # no witness tried first, no goal marked reached
        family_proof.reaching = lambda *args: None
        FamilyProofs.refusal = lambda self, cut, reached=None, witnessed=None: refusal(self, cut)  # type: ignore[method-assign]
        plain = FilterChain(task, db, "mass", FilterConfig(family_proof=True))
        without = [plain(m) for m in members]
    finally:
        family_proof.reaching = reached_by
        FamilyProofs.refusal = refusal  # type: ignore[method-assign]
    for c, p in zip(with_witnesses, without, strict=True):
        assert p.reached == set()
        assert (c.failed_filter, c.reason_key, c.reason) == (p.failed_filter, p.reason_key, p.reason), c.ids
        robot = c.robot or ModuleAssembly.from_serial_modules(db, c.ids, base_placement=placement).robot
        for k in c.reached:
            pose = task.goals[k].goal_pose
            assert outside_workspace(robot, robot.tcp, pose.world, pose.tolerance) == 0.0, (c.ids, k)
            assert reach_gap(robot, robot.tcp, pose.world[:3, 3], position_slack(pose.tolerance)) == 0.0, (c.ids, k)


def _witness_task(name: str):
    """An exp2 task of ``tests/data/exp2_tasks`` or of the unseen tasks of ``benchmarks/unseen_tasks.py`` (seed 38)."""
    from timor_core.task import Task

    if (TASKS / f"{name}.json").is_file():
        return Task.from_json_data(json.loads((TASKS / f"{name}.json").read_text()))
    return unseen_task(name)


def _verdicts(task, chains, witnesses: bool) -> list:
    """The filter chain's candidates (family proofs on) for ``chains``, in order; ``witnesses`` off: no witness
    tried first, no proof ended by its own, no goal marked reached (every goal's proof, quick reach bound and
    workspace bound run to their end)."""
    from timor_core.search import FilterChain, FilterConfig
    from timor_core.search.filtering import family_proof, reach_proof

    refusal, levels = FamilyProofs.refusal, reach_proof.WITNESS_LEVELS
    try:
        if not witnesses:
            family_proof.reaching = lambda *args: None
            FamilyProofs.refusal = lambda self, cut, reached=None, witnessed=None: refusal(self, cut)  # type: ignore[method-assign]
            reach_proof.WITNESS_LEVELS = 0
        chain = FilterChain(task, DBS["robco_like"], "mass", FilterConfig(family_proof=True))
        return [chain(ids) for ids in chains]
    finally:
        family_proof.reaching = reached_by
        FamilyProofs.refusal = refusal  # type: ignore[method-assign]
        reach_proof.WITNESS_LEVELS = levels


@pytest.mark.parametrize(
    "name",
    ["obstacles_4", "base_moved", "boundary",
     pytest.param("more_goals", marks=pytest.mark.slow), pytest.param("turned_user_study", marks=pytest.mark.slow),
     pytest.param("boundary_high", marks=pytest.mark.slow), pytest.param("five_joints", marks=pytest.mark.slow)],
)  # fmt: skip
def test_witnesses_reused_across_a_tasks_chains_change_no_verdict_or_reason(name):
    """1,000 random arms of the exp2 space on a task (a moved base, goals near the workspace's boundary, obstacles):
    with the family filter's witnesses kept across chains and goals marked reached, every arm gets the verdict,
    filter, reason key and reason it gets without (every proof and reach bound run for every goal); witnesses are
    reused and goals marked reached on tens of arms; a goal marked reached is within the robot's reach bounds."""
    from timor_core.kinematics.ik import outside_workspace
    from timor_core.kinematics.reach import position_slack, reach_gap
    from timor_core.search.filtering import family_proof
    from timor_core.search.filtering.proof_kernel import use_compiled

    use_compiled(True)
    task = _witness_task(name)
    space = EXP2["robco_like"]
    chains = [tuple(space[int(k)]) for k in np.random.default_rng(1).integers(0, space.count, 1000)]
    reused = []
    try:
        family_proof.reaching = lambda *args: reused.append((found := reached_by(*args)) is not None) or found
        kept = _verdicts(task, chains, witnesses=True)
    finally:
        family_proof.reaching = reached_by
    plain = _verdicts(task, chains, witnesses=False)
    for c, p in zip(kept, plain, strict=True):
        assert p.reached == set()
        assert (c.failed_filter, c.reason_key, c.reason) == (p.failed_filter, p.reason_key, p.reason), c.ids
        for k in c.reached:
            robot = c.robot or ModuleAssembly.from_serial_modules(c.ctx.db, c.ids, base_placement=c.ctx.placement).robot
            pose = task.goals[k].goal_pose
            assert outside_workspace(robot, robot.tcp, pose.world, pose.tolerance) == 0.0, (c.ids, k)
            assert reach_gap(robot, robot.tcp, pose.world[:3, 3], position_slack(pose.tolerance)) == 0.0, (c.ids, k)
    assert sum(reused) >= 20 and sum(1 for c in kept if c.reached) >= 20, (sum(reused), len(reused))


@settings(max_examples=40, deadline=None)
@given(
    **ROBOT,
    total=st.sampled_from([0.0, 0.005, 0.03]),
    miss=st.sampled_from([0.0, 0.004, 0.03, 0.1]),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
    budget=st.sampled_from([16, 64, 4096]),
)
def test_a_goal_put_in_reached_has_a_witness_that_reaches_it(name, pick, seed, total, miss, tolerance, budget):
    """``FamilyProofs.refusal`` puts a goal in ``reached`` only with a witness in hand: a configuration (one of the
    family's last witnesses, or one the chain's own proof found) from which the witnesses' descent reaches the goal
    on this chain. A proof that ends undecided without one (small budgets, goals moved off a reached pose) leaves the
    goal out, so the cheaper bounds after the family filter still run for it."""
    from timor_core.search.filtering import family_proof
    from timor_core.search.filtering.proof_kernel import use_compiled

    use_compiled(True)
    rng, _, placement, cut = drawn_cut(name, pick, seed)
    if cut is None:
        return
    members = [cut] + [family_member(cut, rng, total)[0] for _ in range(3)]
    goals = goals_at_members(members, rng, tolerance, miss)
    found: list[tuple[int, list[np.ndarray]]] = []  # (goal, the witnesses list a proof of it was given)
    real = family_proof.pose_proof

    def recording(chain, goal, *args, witnesses=None, **kwargs):
        found.append((next(k for k, (g, _) in enumerate(goals) if np.array_equal(g, goal)), witnesses))
        return real(chain, goal, *args, witnesses=witnesses, **kwargs)

    proofs = FamilyProofs(goals, budget, placement)
    family_proof.pose_proof = recording
    try:
        for member in members:
            before = {key: list(seen) for key, seen in proofs.witnesses.items()}
            found.clear()
            reached: set[int] = set()
            proofs.refusal(member, reached)
            for k in reached:
                candidates = before.get((k, member.rotations), []) + [w for g, ws in found if g == k for w in ws or ()]
                candidates = [q for q in candidates if len(q) == member.chain.dof]
                assert candidates, (k, "reached without a witness")
                assert reached_by(member.chain.steps, np.array(candidates), *goals[k]) is not None, k
    finally:
        family_proof.pose_proof = real
