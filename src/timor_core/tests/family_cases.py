"""The family members, drawn cuts and near goals the family proofs' tests share (test_family_proof*.py,
test_proof_fused.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from proof_robots import DBS, SPACES, assembly_of
from reach_cases import TOLERANCES, within

from timor_core.search import paper_exp2_space
from timor_core.search.filtering.family_proof import Cut, cut_chain
from timor_core.search.filtering.reach_proof import chain_poses

TASKS = Path(__file__).parent / "data" / "exp2_tasks"
EXP2 = {
    "robco_like": paper_exp2_space(DBS["robco_like"]),
    "geometric_primitive_modules": SPACES["geometric_primitive_modules"],
}


def family_member(cut: Cut, rng: np.random.Generator, total: float) -> tuple[Cut, float]:
    """A chain of ``cut``'s family: its translations moved by random vectors whose lengths add up to ``total``."""
    shares = rng.dirichlet(np.ones(cut.gaps)) * total
    moves = rng.normal(size=(cut.gaps, 3))
    moves *= (shares / np.linalg.norm(moves, axis=1))[:, None]
    steps = cut.steps.copy()
    steps[:, :3, 3] += moves
    return Cut(cut.rotations, steps[:, :3, 3].copy(), steps), float(np.linalg.norm(moves, axis=1).sum())


def variants(ids: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Assemblies of the exp2 space turning like ``ids``: each straight link swapped for another straight link or
    none, each bent one for another bent one (joints on one line merged, :func:`test_merged_joints_...`)."""
    straight, bent = ["I_50", "I_100", "I_150", "I_200", "I_300", "I_400"], ["L_100", "L_150", "L_200", "L_250"]
    out = []
    for k, m in enumerate(ids):
        for other in (straight + [None]) if m in straight else bent if m in bent else []:
            out.append(tuple(x for x in (*ids[:k], other, *ids[k + 1 :]) if x is not None))
    return [v for v in out if v != ids]


def drawn_cut(name: str, pick: float, seed: int):
    """The random numbers of ``seed``, the assembly :data:`proof_robots.ROBOT` draws (base moved up to 0.3), its
    placement and its cut (None: not a serial chain of revolute joints)."""
    rng = np.random.default_rng(seed)
    assembly, placement = assembly_of(name, pick, rng, 0.3)
    return rng, assembly, placement, cut_chain(assembly, placement)


def goals_at_members(members: list[Cut], rng: np.random.Generator, tolerance: str, miss: float) -> list:
    """Two goals, each at a random configuration of ``members[k]`` within ``tolerance`` (a kind of
    :data:`TOLERANCES`), the second moved ``miss`` off in a random direction: ``[(4x4 pose, tolerance)]``."""
    goals = []
    for k in range(2):
        at = chain_poses(members[k].chain, rng.uniform(-np.pi, np.pi, (1, members[0].chain.dof)))
        pose = np.eye(4)
        pose[:3, :3], pose[:3, 3] = at.frames[0].T, at.tcp[0]
        goal = within(pose, tolerance, rng)
        shift = rng.normal(size=3)
        goal[:3, 3] += shift / np.linalg.norm(shift) * miss * k
        goals.append((goal, TOLERANCES[tolerance]))
    return goals


def goal_near(chain, rng: np.random.Generator, tolerance: str, miss: float) -> np.ndarray:
    """A goal at a random configuration of ``chain`` (within the tolerance), moved ``miss`` (m) off."""
    at = chain_poses(chain, rng.uniform(-np.pi, np.pi, (1, chain.dof)))
    pose = np.eye(4)
    pose[:3, :3], pose[:3, 3] = at.frames[0].T, at.tcp[0]
    goal = within(pose, tolerance, rng)
    shift = rng.normal(size=3)
    goal[:3, 3] += shift / np.linalg.norm(shift) * miss
    return goal


def arms(rng: np.random.Generator, count: int):
    """The cuts of ``count`` arms drawn from the two module sets in turn (base moved up to 0.3 m), of those that are
    serial chains of revolute joints."""
    for k in range(count):
        assembly, placement = assembly_of(sorted(DBS)[k % 2], float(rng.uniform()), rng, 0.3)
        cut = cut_chain(assembly, placement)
        if cut is not None:
            yield cut
