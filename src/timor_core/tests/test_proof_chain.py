"""The chain a reach proof of a family's member runs on, made from its cut's steps (search/filtering/proof_chain.py
``chain_of_steps``, what ``family_proof.Cut.chain`` gives): the same kinematics as the steps' product at every
configuration, and the same origins, axes, TCP, radii, wrist radii and offset as the chain of its frames
(``chain_from_frames``) that the proofs used to run on (the proofs' bounds, weights and wrist cap read them)."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from timor_core.search.filtering.proof_chain import chain_from_frames, chain_of_steps, chain_poses


def _product(rotations: np.ndarray, translations: np.ndarray, q: np.ndarray) -> np.ndarray:
    """``A_0 Rz(q_1) A_1 ... Rz(q_n) A_n`` (4x4), one matrix after the other."""

    def step(k: int) -> np.ndarray:
        a = np.eye(4)
        a[:3, :3], a[:3, 3] = rotations[k], translations[k]
        return a

    pose = step(0)
    for k, angle in enumerate(q):
        turn = np.eye(4)
        turn[:2, :2] = [[math.cos(angle), -math.sin(angle)], [math.sin(angle), math.cos(angle)]]
        pose = pose @ turn @ step(k + 1)
    return pose


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 6), seed=st.integers(0, 2**31))
def test_a_chain_of_steps_is_the_chain_of_its_frames(n, seed):
    """At random configurations the chain's poses are the steps' product (to 1e-12); at q = 0 its joints' origins
    and axes and the TCP are the product's frames, and its radii, wrist radii and offset are those
    ``chain_from_frames`` computes from them; its steps are the ones given."""
    rng = np.random.default_rng(seed)
    rotations = Rotation.random(n + 1, random_state=rng.integers(2**31)).as_matrix()
    translations = rng.normal(size=(n + 1, 3)) * rng.uniform(0.01, 0.5)
    chain = chain_of_steps(rotations, translations)
    assert chain.dof == n
    assert all(np.array_equal(a, b) for a, b in zip(chain.steps, (rotations, translations), strict=True))
    q = rng.uniform(-np.pi, np.pi, (4, n))
    at = chain_poses(chain, q)
    for k in range(len(q)):
        pose = _product(rotations, translations, q[k])
        assert np.allclose(at.frames[k].T, pose[:3, :3], rtol=0, atol=1e-12)
        assert np.allclose(at.tcp[k], pose[:3, 3], rtol=0, atol=1e-12)
    zero = np.zeros(n)
    assert np.allclose(chain.tcp, _product(rotations, translations, zero), rtol=0, atol=1e-12)
    for k in range(n):
        frame = _product(rotations[: k + 1], translations[: k + 1], zero[:k])
        assert np.allclose(chain.origins[k], frame[:3, 3], rtol=0, atol=1e-12)
        assert np.allclose(chain.axes[k], frame[:3, 2], rtol=0, atol=1e-12)
    framed = chain_from_frames(chain.origins, chain.axes, chain.tcp)
    if framed.dof == n:  # (no two joints drawn on one line: then the frames' chain merges them)
        for name in ("radii", "wrist_radii", "offset"):
            assert np.allclose(getattr(chain, name), getattr(framed, name), rtol=0, atol=1e-12), name
