"""The compiled parts of a proof's set-up (issue 38 item 1, s54-proof): the distances between a family's certificates
(search/filtering/proof_kernel.py ``distance_steps``, what ``widening.Distances.note`` runs where it is built) and
the whole turn's weights made inside the compiled proof (proof_fused.py ``turn_weights``) give numpy's values to the
last bit, so the widening's levels and the first level's cuts are those of the numpy route."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from timor_core.search.filtering import proof_kernel, widening
from timor_core.search.filtering.proof_chain import chain_of_steps
from timor_core.search.filtering.proof_fused import turn_weights
from timor_core.search.filtering.proof_kernel import distance_steps, use_compiled
from timor_core.search.filtering.reach_proof import ROT_WEIGHT
from timor_core.search.filtering.widening import LEVEL_STEP, Distances


def _numpy_steps(points: np.ndarray, size: int, t: np.ndarray, top: float, step: float) -> list[float]:
    """What ``Distances.note`` computed in numpy before the kernel (and still does without it)."""
    d = np.sqrt(((points[:size] - t) ** 2).sum(axis=2)).sum(axis=1)
    return np.ceil(d[d < top] / step).tolist()


def _kernels() -> list:
    """``distance_steps`` in Python, numba's compilation, and the ahead-built one where it is built."""
    use_compiled(True)
    built = proof_kernel.ahead_kernel("distance_steps")
    return [distance_steps, numba.njit(distance_steps), *([built] if built is not None else [])]


def _family(rng: np.random.Generator, gaps: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Certificates (m, gaps, 3) of links 0.05 m apart (the robco-like lengths, plus a rounding-sized jitter), with
    rows equal to the chain, and the chain's translations."""
    t = rng.choice([0.0, 0.05, 0.1, 0.15, 0.2], size=(gaps, 3)) + rng.normal(0.0, 1e-9, (gaps, 3))
    points = t + rng.choice([0.0, 0.0, 0.05, -0.05, 0.1], size=(m, gaps, 3)) + rng.normal(0.0, 1e-3, (m, gaps, 3))
    points[: m // 8] = t
    return np.ascontiguousarray(points), np.ascontiguousarray(t)


@pytest.mark.parametrize("step", [LEVEL_STEP, 2.0**-60])  # (2^-60: the distances' every bit, d / step exact)
@pytest.mark.parametrize("gaps", range(1, 8))
def test_the_compiled_distances_are_numpys_to_the_last_bit(gaps: int, step: float) -> None:
    rng = np.random.default_rng(gaps)
    kernels = _kernels()
    for _ in range(40):
        m = int(rng.integers(1, 60))
        points, t = _family(rng, gaps, m)
        size, top = int(rng.integers(0, m + 1)), float(rng.choice([0.25, 0.1, 1.0]))
        want = _numpy_steps(points, size, t, top, step)
        for kernel in kernels:
            out = np.empty(m)
            assert out[: kernel(points, size, t, top, step, out)].tolist() == want


class _Certs:
    """A goal's certificates as ``Distances.note`` reads them."""

    def __init__(self, points: np.ndarray, size: int) -> None:
        self.points, self.size = points, size


def test_the_levels_are_the_same_with_and_without_the_kernel(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(7)
    use_compiled(True)
    if proof_kernel.ahead_kernel("distance_steps") is None:  # (numba's compilation in its place)
        compiled = numba.njit(distance_steps)
        monkeypatch.setattr(widening, "ahead_kernel", lambda name: compiled if name == "distance_steps" else None)
    kernel_route, numpy_route = Distances(0.25, 1e-7), Distances(0.25, 1e-7)
    for gaps in (2, 3, 4, 4, 5, 9):
        for _ in range(30):
            points, t = _family(rng, gaps, 40)
            family = [_Certs(points[:20].copy(), int(rng.integers(0, 21))), _Certs(points[20:].copy(), 20)]
            kernel_route.note(family, t)
            with monkeypatch.context() as patched:
                patched.setattr(widening, "ahead_kernel", lambda name: None)
                numpy_route.note(family, t)
            assert kernel_route.seen == numpy_route.seen
            assert kernel_route.levels(gaps) == numpy_route.levels(gaps)
    assert len(kernel_route.seen) > 100  # (the draws meet many distances below the top)


def test_the_compiled_whole_turns_weights_are_the_chains_radii() -> None:
    rng = np.random.default_rng(3)
    jitted = numba.njit(turn_weights)
    for n in range(1, 8):
        for _ in range(50):
            rotations = np.linalg.qr(rng.normal(size=(n + 1, 3, 3)))[0]
            translations = rng.normal(0.0, rng.choice([0.01, 0.2, 1.0]), (n + 1, 3))
            chain = chain_of_steps(rotations, translations)
            assert chain.radii_of_steps
            want = (chain.radii + ROT_WEIGHT)[None]
            for weights in (turn_weights(chain.steps[1], ROT_WEIGHT), jitted(chain.steps[1], ROT_WEIGHT)):
                assert weights.shape == want.shape and np.array_equal(weights, want)
