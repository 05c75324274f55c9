"""A sweep proof's levels in one compiled call (search/filtering/sweep_fused.py): the same proofs as the levels of
``sweep_proof.sweep_certificate`` a kernel call per step (verdict, boxes, link, and the refused boxes bit for bit),
from the whole turn and from a proof's refused boxes, over random robots of both embedded sets, base placements,
obstacle boxes around the arm, goals at and near its poses, margins, budgets, with the refused boxes asked for or
not, and where the fused call's buffers are too small (the numpy levels then run). Soundness (no free configuration
refused) is ``test_sweep_proof``'s property tests, which run this path wherever it is built."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import anywhere_configuration
from hypothesis import given, settings
from hypothesis import strategies as st
from proof_robots import ROBOTS, assembly_of, boxes_around, obstacle_task

from timor_core.kinematics.tolerance import tolerance_from_json
from timor_core.search.filtering import sweep_fused, sweep_proof
from timor_core.search.filtering.proof_kernel import use_compiled
from timor_core.search.filtering.sweep_proof import arm_sweep, obstacle_boxes, sweep_certificate

TOLERANCES = {
    "exp2": tolerance_from_json(["x", "y", "z", "Theta_R"], [[-1e-3, 1e-3]] * 3 + [[0.0, math.pi / 4]]),
    "loose": tolerance_from_json(["x", "y", "z", "Theta_R"], [[-0.02, 0.02]] * 3 + [[0.0, math.pi / 2]]),
    "position": tolerance_from_json(["x", "y", "z"], [[-5e-3, 5e-3]] * 3),
}


@pytest.fixture(scope="module", autouse=True)
def _default_bounds():
    """The tests below run the compiled kernels; the rest of the suite gets the default rule."""
    yield
    use_compiled(None)


def _certificate(fused: bool, *args, **options):
    """``sweep_certificate`` with the fused levels (numba's where none is built) or a kernel call per step."""
    real = sweep_proof.sweep_kernel
    try:
        sweep_proof.sweep_kernel = (lambda: sweep_fused.sweep_kernel(jit=True)) if fused else (lambda: None)
        return sweep_certificate(*args, **options)
    finally:
        sweep_proof.sweep_kernel = real


def _differs(a, b) -> str:
    """The first way two proofs differ ('' if they do not: verdict, boxes, link, refused boxes to the last bit)."""
    if a is None or b is None:
        return "" if a is b else f"verdicts {a} != {b}"
    if (a.boxes, a.link, a.leaves is None) != (b.boxes, b.link, b.leaves is None):
        return f"{a.boxes, a.link} != {b.boxes, b.link}"
    for field in ("centres", "half", "weights", "excess") if a.leaves is not None else ():
        x, y = getattr(a.leaves, field), getattr(b.leaves, field)
        if x.dtype != y.dtype or x.shape != y.shape or x.tobytes() != y.tobytes():
            return f"leaves' {field} differ"
    return ""


def _both(*args, **options) -> tuple[str, object]:
    """How ``sweep_certificate`` differs both ways ('' if not), and the fused levels' proof."""
    runs = [_certificate(fused, *args, **options) for fused in (True, False)]
    return _differs(*runs), runs[0]


def _compare(name, pick, seed, spread, miss, tolerance, margin, budget, leaves, d) -> tuple[str, set]:
    """Both ways for a drawn robot, obstacle boxes around it and a goal near one of its poses; where proven, again
    with a budget of its boxes and of one box less (proven, then undecided), then started from its refused boxes at
    distance ``d`` and, at 0.3 m, for another pose: how they differ ('' if not) and how they ended."""
    use_compiled(True)
    assert sweep_fused.sweep_kernel(jit=True) is not None  # (the build's, or numba's where none is built)
    rng = np.random.default_rng(seed)
    robot = assembly_of(name, pick, rng, spread)[0].robot
    sweep = arm_sweep(robot)
    if sweep is None:
        return "", {"no chain"}
    q = anywhere_configuration(robot, rng)
    obstacles = obstacle_boxes(obstacle_task(boxes_around(robot, q, rng, int(rng.integers(1, 4)))))
    goal = robot.fk(q)
    goal[:3, 3] += rng.normal(size=3) * miss
    args = (sweep, obstacles, goal, TOLERANCES[tolerance], margin)
    differs, proof = _both(*args, budget, leaves=leaves)
    ended = {"undecided" if proof is None else "proven"}
    if differs or proof is None or proof.boxes <= 1 << sweep_proof.FIRST_SPLITS:
        return differs, ended
    for spend in (proof.boxes, proof.boxes - 1):  # (at the edge of its budget)
        differs, edge = _both(*args, spend, leaves=True)
        if differs or (edge is None) != (spend < proof.boxes):
            return differs or f"{edge} with a budget of {spend} boxes", ended
    differs, proof = _both(*args, budget, leaves=True) if not leaves else ("", proof)  # (its boxes, to start from)
    if differs:
        return differs, ended
    if (proof.leaves.excess == sweep_fused.BODY).any():
        ended.add("refused by the body")
    if np.isinf(proof.leaves.excess).any():
        ended.add("by rotation alone")
    other = robot.fk(anywhere_configuration(robot, rng))  # (another pose, most boxes open: may end undecided)
    for at, away in ((goal, d), (other, 0.3)):
        differs, started = _both(sweep, obstacles, at, *args[3:], budget, start=(proof.leaves, away), leaves=leaves)
        ended.add("started and " + ("undecided" if started is None else "proven"))
        if differs:
            return differs, ended
    return "", ended


CASES = dict(
    **ROBOTS,
    miss=st.sampled_from([0.0, 0.01, 0.1]),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
    margin=st.sampled_from([0.0, 0.02]),
    budget=st.sampled_from([300, 2048, 8192]),
    leaves=st.booleans(),
    d=st.sampled_from([0.0, 0.001, 0.01]),
)


@settings(max_examples=40, deadline=None)
@given(**CASES)
def test_the_fused_levels_give_the_numpy_levels_proofs(name, pick, seed, spread, miss, tolerance, margin, budget,
                                                        leaves, d):  # fmt: skip
    """Whatever the robot, obstacles, goal, margin and budget: the fused levels' proof (verdict, boxes, link and
    refused boxes) is the numpy levels', from the whole turn and from the proof's refused boxes."""
    differs, _ = _compare(name, pick, seed, spread, miss, tolerance, margin, budget, leaves, d)
    assert not differs, differs


def test_the_fused_levels_meet_every_ending(monkeypatch):
    """40 drawn cases, then again with buffers too small for some proofs' refused boxes (the numpy levels run): the
    same results both ways, and among them proofs proven with boxes the body refused, undecided, and started from
    a proof's boxes both proven and undecided (the comparison is not of one kind of ending only)."""
    rng = np.random.default_rng(49)
    cases = [("robco_like", float(rng.uniform()), int(rng.integers(2**31)), 0.0, [0.0, 0.01][k % 2],
              sorted(TOLERANCES)[k % 3], 0.0, 8192, True, [0.0, 0.01][k // 2 % 2]) for k in range(40)]  # fmt: skip
    endings: set = set()
    for k, case in enumerate(cases):
        differs, ended = _compare(*case)
        assert not differs, (k, differs)
        endings |= ended
    assert {"undecided", "refused by the body", "started and proven", "started and undecided"} <= endings, endings
    monkeypatch.setattr(sweep_fused, "MOST_ROWS", 1024)
    real, overflows = sweep_fused.fused_levels, []
    monkeypatch.setattr(sweep_proof, "fused_levels", lambda *args: overflows.append(real(*args)) or overflows[-1])
    for k, case in enumerate(cases[:12]):
        assert not _compare(*case)[0], k
    assert False in overflows and any(isinstance(o, tuple) for o in overflows), "no overflow, or only overflows"
