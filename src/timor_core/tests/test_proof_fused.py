"""A reach proof's levels and widening in one compiled call (search/filtering/proof_fused.py): the same proofs as the
numpy levels of ``reach_proof.pose_proof`` (verdict, boxes, margin, the boxes kept for chains near and their floor,
the witness found), from the whole turn and from a family member's kept boxes, over random robots of two module
sets, base placements, goals near and far in four kinds of tolerance, budgets, widenings and levels. Soundness (no
reached pose refused) is ``test_reach_proof``'s and ``test_family_proof``'s property tests, which run this path
wherever the compiled kernels run."""

from __future__ import annotations

import numba
import numpy as np
import pytest
from family_cases import drawn_cut, family_member, goal_near
from hypothesis import given, settings
from hypothesis import strategies as st
from proof_robots import ROBOT
from reach_cases import TOLERANCES

from timor_core.search.filtering import reach_proof
from timor_core.search.filtering.family_proof import ROTATION_SLACK
from timor_core.search.filtering.proof_fused import first_by, fused_kernel
from timor_core.search.filtering.proof_kernel import use_compiled
from timor_core.search.filtering.reach_proof import pose_proof


def _proof(fused: bool, chain, goal, tolerance, budget: int, widen: float, levels: tuple, start=None) -> tuple:
    """``pose_proof`` with the fused levels or the numpy ones: the proof, the boxes kept, the witnesses found."""
    real = reach_proof.fused_kernel
    kept: list = []
    witnesses: list = []
    try:
        reach_proof.fused_kernel = (lambda: fused_kernel(jit=True)) if fused else (lambda: None)
        proof = pose_proof(chain, goal, tolerance, budget, widen=widen, widen_budget=budget, witnesses=witnesses,
                           start=start, kept=kept, levels=levels)  # fmt: skip
    finally:
        reach_proof.fused_kernel = real
    return proof, kept, witnesses


def _same(a: tuple, b: tuple) -> str:
    """The first way two :func:`_proof` results differ ('' if they do not)."""
    (proof, kept, witnesses), (proof_b, kept_b, witnesses_b) = a, b
    if proof != proof_b:
        return f"proof {proof} != {proof_b}"
    if len(kept) != len(kept_b) or len(witnesses) != len(witnesses_b):
        return "kept boxes or witnesses"
    for x, y in zip(kept, kept_b, strict=True):
        if x.floor != y.floor or not all(np.array_equal(getattr(x, f), getattr(y, f))
                                         for f in ("centres", "half", "weights", "excess")):  # fmt: skip
            return "kept boxes differ"
    if not all(np.array_equal(x, y) for x, y in zip(witnesses, witnesses_b, strict=True)):
        return "witnesses differ"
    return ""


def _compare(name, pick, seed, miss, tolerance, budget, widen, levels, total) -> tuple[str, str]:
    """Both ways for one drawn chain and goal, then for a member started from the chain's kept boxes: how they
    differ ('' if not) and what the proof ended in."""
    use_compiled(True)
    assert fused_kernel(jit=True) is not None  # (the build's, or numba's where none is built)
    rng, _, _, cut = drawn_cut(name, pick, seed)
    if cut is None:
        return "", "no chain"
    goal, tol = goal_near(cut.chain, rng, tolerance, miss), TOLERANCES[tolerance]
    aims = (0.05 + 3e-6, 0.1 + 3e-6, widen) if levels and widen > 0.1 else ()
    runs = [_proof(fused, cut.chain, goal, tol, budget, widen, aims) for fused in (True, False)]
    if differs := _same(*runs):
        return differs, ""
    proof, kept, witnesses = runs[0]
    ended = "witness" if witnesses else "undecided" if proof is None else "proven"
    member, d = family_member(cut, rng, total)
    d += ROTATION_SLACK * (cut.gaps + 1)
    if proof is None or not kept or d >= kept[-1].floor:
        return "", ended
    start = (kept[-1], d)
    runs = [_proof(fused, member.chain, goal, tol, budget, widen, aims, start) for fused in (True, False)]
    return _same(*runs), ended + " and started"


@settings(max_examples=40, deadline=None)
@given(
    **ROBOT,
    miss=st.sampled_from([0.0, 0.01, 0.05, 0.2, 0.6]),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
    budget=st.sampled_from([64, 1024, 4096]),
    widen=st.sampled_from([0.0, 0.05, 0.25]),
    levels=st.booleans(),
    total=st.sampled_from([0.0, 0.01, 0.05]),
)
def test_the_fused_levels_give_the_numpy_levels_proofs(name, pick, seed, miss, tolerance, budget, widen, levels, total):
    """Whatever the chain, goal, budget, widening and levels: the fused levels' proof, kept boxes and witnesses are
    the numpy levels', from the whole turn and from a member's kept boxes."""
    differs, _ = _compare(name, pick, seed, miss, tolerance, budget, widen, levels, total)
    assert not differs, differs


def test_the_fused_levels_meet_every_ending():
    """30 drawn cases: the same results both ways, and among them proofs proven (then a member's started from its
    kept boxes), undecided and ended by a witness (the comparison is not of one kind of ending only)."""
    rng = np.random.default_rng(48)
    endings = set()
    for k in range(30):
        case = ("robco_like", float(rng.uniform()), int(rng.integers(2**31)), [0.0, 0.05, 0.3, 0.6][k % 4],
                sorted(TOLERANCES)[k % len(TOLERANCES)], 4096, 0.25, k % 3 > 0, 0.05)  # fmt: skip
        differs, ended = _compare(*case)
        assert not differs, (k, differs)
        endings.add(ended)
    assert {"proven and started", "undecided", "witness"} <= endings, endings


@pytest.mark.parametrize("compiled", [False, True])
def test_the_first_scores_are_the_stable_sorts_first(compiled):
    """``first_by`` (the witness descents' starts): ``np.argsort(score, kind="mergesort")[:count]`` for scores with
    ties, signed zeros, infinities and NaNs, counts from 0 to more than the scores, numba's and Python's."""
    pick = numba.njit(cache=False)(first_by) if compiled else first_by
    rng = np.random.default_rng(38)
    values = np.array([0.0, -0.0, 1.0, -1.0, 0.5, np.inf, -np.inf, np.nan])
    for m in (0, 1, 2, 5, 9, 40, 300):
        for _ in range(6):
            score = rng.choice(values, m) if rng.random() < 0.5 else np.round(rng.normal(size=m), 1)
            for count in (0, 1, 2, 4, 7, m, m + 3):
                expected = np.argsort(score, kind="mergesort")[:count]
                assert np.array_equal(pick(score, count), expected), (score, count)
