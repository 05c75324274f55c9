"""The orientation bound that takes a box's widest joint exactly and the others by the metric
(``proof_numpy.one_joint``, and the compiled orientation kernel's same bound): never above the angle between the TCP's
rotation and the goal's at any configuration of the box, and not idle (it refuses boxes a quarter to half a turn wide
in one joint that the angle less ``sum_i h_i`` does not)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from timor_core.search.filtering.proof_kernel import measure_boxes, use_compiled
from timor_core.search.filtering.proof_numpy import BoxGoal, chain_frames, one_joint

M, SAMPLES = 8, 64  # boxes a case, configurations sampled in each (the first a corner)


def _case(n: int, seed: int, wide: float, narrow: float, turn: float) -> tuple:
    """A random chain of n joints, M boxes each ``wide`` in one joint and up to ``narrow`` in the others, the
    rotations of SAMPLES configurations in each box, and a goal's axes (rows) ``turn`` rad off one of them."""
    rng = np.random.default_rng(seed)
    steps = (Rotation.random(n + 1, random_state=seed).as_matrix(), rng.normal(size=(n + 1, 3)) * 0.2)
    centres, half = rng.uniform(-np.pi, np.pi, (M, n)), rng.uniform(0.0, narrow, (M, n))
    half[np.arange(M), rng.integers(n, size=M)] = wide
    q = centres[:, None, :] + half[:, None, :] * rng.uniform(-1.0, 1.0, (M, SAMPLES, n))
    q[:, 0] = centres + half * rng.choice([-1.0, 1.0], (M, n))
    rot = chain_frames(*steps, q.reshape(-1, n))[0]
    turned = Rotation.from_rotvec(rng.normal(size=3) * turn / math.sqrt(3)).as_matrix()
    goal = rot[rng.integers(len(rot))] @ turned  # columns: the goal's axes
    return steps, centres, half, rot, np.ascontiguousarray(goal.T)


def _angles(rot: np.ndarray, gaxes: np.ndarray) -> np.ndarray:
    """Per sampled rotation (columns the TCP's axes) its angle to the goal's (``gaxes``: rows), (M, SAMPLES)."""
    trace = np.einsum("mjk,kj->m", rot, gaxes)
    return np.arccos(np.clip((trace - 1.0) / 2.0, -1.0, 1.0)).reshape(M, SAMPLES)


CASES = {
    "n": st.integers(1, 6),
    "seed": st.integers(0, 2**31 - 1),
    "wide": st.floats(0.05, math.pi),
    "narrow": st.sampled_from([0.0, 0.01, 0.05, 0.3]),
    "turn": st.sampled_from([0.0, 0.3, 1.0, 2.5]),
}


@settings(max_examples=120, deadline=None)
@given(**CASES)
def test_no_configuration_of_a_box_turns_less_than_its_bound(n, seed, wide, narrow, turn):
    """The bound per box against the rotations of configurations sampled in it (a corner among them)."""
    steps, centres, half, rot, gaxes = _case(n, seed, wide, narrow, turn)
    at, _, axes, _ = chain_frames(*steps, centres)
    bound = one_joint(at, axes, half, gaxes, np.einsum("mjk,kj->m", at, gaxes))
    assert np.all(_angles(rot, gaxes) >= bound[:, None] - 1e-7)  # (arccos near 1: ~3e-8; ANGLE_EPS 1e-6)


@settings(max_examples=120, deadline=None)
@given(theta=st.sampled_from([0.05, 0.3, math.pi / 4, 1.5]), **CASES)
def test_a_box_refused_by_orientation_holds_no_rotation_within_the_slack(n, seed, wide, narrow, turn, theta):
    """The measure's orientation refusals (inf; all its orientation bounds, this one among them), the compiled
    kernel's the same as numpy's, against the sampled rotations: none within ``theta`` of the goal's in a refused
    box."""
    steps, centres, half, rot, gaxes = _case(n, seed, wide, narrow, turn)
    goal = BoxGoal(np.zeros(3), gaxes, 0.05, theta, np.array([1.0, 0.0, 0.0]), 0.0, (0.0, 0.0), 0.01)
    refused = []
    for compiled in (True, False):
        use_compiled(compiled)
        refused.append(np.isinf(measure_boxes(steps, centres, half, goal)[0]))
    assert np.array_equal(*refused)
    assert np.all(_angles(rot, gaxes)[refused[0]] > theta - 1e-7)


def test_the_bound_refuses_what_the_angle_less_the_half_widths_does_not():
    """Not idle: over 200 cases (one joint a quarter to half a turn wide, the others up to 0.05 rad, goals up to 1 rad
    off), the bound exceeds a slack of pi/8 for boxes whose centre's angle less ``sum_i h_i`` does not, and their
    sampled rotations agree."""
    only = 0
    for seed in range(200):
        steps, centres, half, rot, gaxes = _case(4, seed, float(np.random.default_rng(seed).uniform(0.8, 1.6)), 0.05,
                                                 1.0)  # fmt: skip
        at, _, axes, _ = chain_frames(*steps, centres)
        trace = np.einsum("mjk,kj->m", at, gaxes)
        turn = np.arccos(np.clip((trace - 1.0) / 2.0, -1.0, 1.0))
        new = (one_joint(at, axes, half, gaxes, trace) > math.pi / 8) & (turn - half.sum(axis=1) <= math.pi / 8)
        only += int(new.sum())
        assert np.all(_angles(rot, gaxes)[new] > math.pi / 8)
    assert only >= 200, only
