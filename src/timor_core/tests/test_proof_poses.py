"""The reach proofs' poses kernel (search/filtering/box_bounds.py ``poses``) takes the frames up to the first joint
whose angle differs from the box before's from that box: each box must still get its own frames, to the last bit
(the proofs' boxes, margins and verdicts depend on them), whatever prefix it shares with the box before."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.spatial.transform import Rotation

from timor_core.search.filtering import proof_kernel as pk
from timor_core.search.filtering.box_bounds import trig_table
from timor_core.search.filtering.proof_numpy import chain_frames


def _boxes(rng: np.random.Generator, n: int, m: int, few: bool = False) -> np.ndarray:
    """``m`` box centres of ``n`` joints, each sharing a random number of leading angles (none to all) with the one
    before, as the children of a halving and the kept boxes of a proof do; ``few``: each other angle one of three per
    joint (as siblings' angles, one of two per joint: the kernel keeps the last two angles' cosines and sines)."""
    centres, values = np.empty((m, n)), rng.uniform(-np.pi, np.pi, (3, n))
    centres[0] = rng.uniform(-np.pi, np.pi, n)
    for b in range(1, m):
        same = int(rng.integers(0, n + 1))
        centres[b, :same] = centres[b - 1, :same]
        drawn = values[rng.integers(0, 3, n), np.arange(n)] if few else rng.uniform(-np.pi, np.pi, n)
        centres[b, same:] = drawn[same:]
    return centres


def _poses(kernel, steps: tuple, centres: np.ndarray) -> list[np.ndarray]:
    m, n = centres.shape
    out = [np.empty((m, 3)), np.empty((m, 3, 3)), np.empty((m, n, 3)), np.empty((m, n, 3))]
    kernel(*steps, centres, *out, trig_table())
    return out


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 6), m=st.integers(1, 40), seed=st.integers(0, 2**31), compiled=st.booleans(), few=st.booleans())
def test_boxes_sharing_leading_angles_get_their_own_frames(n, m, seed, compiled, few):
    """Per box, the batch's TCP position and rotation, joint origins and axes equal those of the box alone (no box
    before it) to the last bit, and the numpy chain's (``chain_frames``) up to rounding; compiled (numba's or the
    build) and as the Python function numba compiles; also where most angles recur (the kernel's kept cosines)."""
    rng = np.random.default_rng(seed)
    rots = Rotation.random(n + 1, random_state=rng.integers(2**31)).as_matrix()
    steps = (np.ascontiguousarray(rots), rng.normal(size=(n + 1, 3)) * 0.3)
    centres = _boxes(rng, n, m, few)
    pk.use_compiled(compiled)
    kernels = pk._compiled() if compiled else None
    kernel = kernels[0] if kernels is not None else pk.py_kernels()["poses"]
    batch = _poses(kernel, steps, centres)
    for b in range(m):
        alone = _poses(kernel, steps, centres[b : b + 1].copy())
        for got, want in zip(batch, alone, strict=True):
            assert np.array_equal(got[b], want[0]), (b, centres[max(b - 1, 0) : b + 1])
    rot, tcp, axes, origins = chain_frames(*steps, centres)
    for got, want in zip(batch, (tcp, rot, origins, axes), strict=True):
        assert np.allclose(got, want, rtol=0, atol=1e-12)
