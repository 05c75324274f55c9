"""Proofs for families of chains (search.family_proof): the cut gives the robot's own kinematics, a proof's margin
never exceeds the translation distance to a chain that reaches the goal (property test over random robots of two
module sets, base placements, configurations, goals within four kinds of tolerance and link translations moved by
random amounts), a certificate never refuses such a chain, and the search's verdicts do not change."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from conftest import anywhere_configuration, random_placement, reach_test_spaces
from hypothesis import given, settings
from hypothesis import strategies as st
from test_reach_proof import TOLERANCES, _within

from timor_core import ModuleAssembly
from timor_core.search.filtering.family_proof import Cut, FamilyProofs, cut_chain
from timor_core.search.filtering.reach_proof import chain_poses, pose_proof

TASKS = Path(__file__).parent / "data" / "exp2_tasks"
DBS, SPACES = reach_test_spaces()


def _member(cut: Cut, rng: np.random.Generator, total: float) -> tuple[Cut, float]:
    """A chain of ``cut``'s family: its translations moved by random vectors whose lengths add up to ``total``."""
    shares = rng.dirichlet(np.ones(cut.gaps)) * total
    moves = rng.normal(size=(cut.gaps, 3))
    moves *= (shares / np.linalg.norm(moves, axis=1))[:, None]
    steps = cut.steps.copy()
    steps[:, :3, 3] += moves
    return Cut(cut.rotations, steps[:, :3, 3].copy(), steps), float(np.linalg.norm(moves, axis=1).sum())


def _assembly(name: str, pick: float, rng: np.random.Generator, spread: float):
    space = SPACES[name]
    ids = space[int(pick * space.count)]
    placement = random_placement(rng, spread) if spread else None
    return ModuleAssembly.from_serial_modules(DBS[name], ids, base_placement=placement), placement


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(sorted(DBS)), pick=st.floats(0, 1, exclude_max=True), seed=st.integers(0, 2**31))
def test_the_cut_is_the_robots_kinematics(name, pick, seed):
    """The frames rebuilt from the cut's steps are the joints' and the TCP's, the cut from the segments seen before
    (``FamilyProofs.cut``) is the same, and the cut's chain gives Pinocchio's TCP poses at random configurations."""
    rng = np.random.default_rng(seed)
    assembly, placement = _assembly(name, pick, rng, 0.5)
    cut = cut_chain(assembly, placement)
    if cut is None:
        return
    rebuilt = Cut(cut.rotations, cut.translations, cut.steps)  # frames from the steps, not from the walk
    assert np.allclose(rebuilt.frames, cut.frames, atol=1e-12)
    space = SPACES[name]
    proofs = FamilyProofs([], 1, placement)
    for k in rng.integers(0, space.count, 30):  # segments seen in other assemblies
        proofs.cut(ModuleAssembly.from_serial_modules(DBS[name], space[int(k)], base_placement=placement))
    cached = proofs.cut(assembly)
    assert cached is not None and cached.rotations == cut.rotations
    assert np.allclose(cached.steps, cut.steps, atol=1e-12) and np.allclose(cached.frames, cut.frames, atol=1e-12)
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
    name=st.sampled_from(sorted(DBS)),
    pick=st.floats(0, 1, exclude_max=True),
    seed=st.integers(0, 2**31),
    spread=st.sampled_from([0.0, 0.3]),
    total=st.sampled_from([0.0, 0.002, 0.02, 0.1, 0.4]),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
)
def test_no_certificate_refuses_a_chain_that_reaches_the_goal(name, pick, seed, spread, total, tolerance):
    """A chain of the family (translations moved by ``total`` in all) reaches a goal; every proof for the original
    chain that refuses that goal has a margin of at most the distance (widened or not), and the certificates never
    refuse it."""
    rng = np.random.default_rng(seed)
    assembly, placement = _assembly(name, pick, rng, spread)
    cut = cut_chain(assembly, placement)
    if cut is None:
        return
    tol = TOLERANCES[tolerance]
    for _ in range(4):
        member, distance = _member(cut, rng, total)
        q = rng.uniform(-np.pi, np.pi, (1, member.chain.dof))
        at = chain_poses(member.chain, q)
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = at.frames[0].T, at.tcp[0]
        goal = _within(pose, tolerance, rng)
        for widen in (0.0, 0.15):  # the margin as proven, and widened by cutting the tight boxes further
            proof = pose_proof(cut.chain, goal, tol, widen=widen)
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
