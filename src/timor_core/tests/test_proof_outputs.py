"""The compiled reach proof's output arrays kept per thread and reused (search/filtering/reach_proof.py ``_outputs``,
s54-proof): two threads proving at once (a Dask worker's threads, a ROS node's executor; the kernel runs without the
GIL) get each proof's own result, a proof's kept boxes stay as they were after later proofs, the kernel is handed
arrays of the rows asked for (its OVERFLOW reads their length, as with fresh arrays), and levels passed as a list
changed in place between proofs are read anew (review of s54-proof)."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from proof_robots import assembly_of
from reach_cases import TOLERANCES

from timor_core.search.filtering import reach_proof
from timor_core.search.filtering.family_proof import cut_chain
from timor_core.search.filtering.proof_fused import fused_kernel
from timor_core.search.filtering.proof_kernel import use_compiled
from timor_core.search.filtering.reach_proof import chain_poses, pose_proof

BUDGET = 4096
LEVELS = (0.05, 0.1, 0.25)


@pytest.fixture(scope="module")
def kernel():
    use_compiled(True)
    found = fused_kernel(jit=True)  # (the build's, or numba's where none is built)
    assert found is not None
    return found


@pytest.fixture
def fused(kernel, monkeypatch):
    """``pose_proof`` runs the compiled levels; the arrays handed to the kernel are recorded."""
    handed: list[tuple] = []

    def recording(*args):
        handed.append(args[13:17])
        return kernel(*args)

    monkeypatch.setattr(reach_proof, "fused_kernel", lambda: recording)
    return handed


def _cases(count: int) -> list[tuple]:
    """Drawn chains (:data:`proof_robots.ROBOT`'s robco-like assemblies) with a goal at one of their poses moved
    0 to 0.6 m off, in every kind of tolerance."""
    rng, out = np.random.default_rng(5), []
    while len(out) < count:
        assembly, placement = assembly_of("robco_like", float(rng.uniform()), rng, 0.3)
        cut = cut_chain(assembly, placement)
        if cut is None:
            continue
        at = chain_poses(cut.chain, rng.uniform(-np.pi, np.pi, (1, cut.chain.dof)))
        goal = np.eye(4)
        goal[:3, :3], goal[:3, 3] = at.frames[0].T, at.tcp[0] + rng.normal(size=3) * [0.0, 0.03, 0.2, 0.4][len(out) % 4]
        out.append((cut.chain, goal, TOLERANCES[sorted(TOLERANCES)[len(out) % len(TOLERANCES)]]))
    return out


def _run(case: tuple, levels=LEVELS) -> tuple:
    chain, goal, tolerance = case
    kept: list = []
    witnesses: list = []
    proof = pose_proof(chain, goal, tolerance, BUDGET, widen=0.25, widen_budget=BUDGET, witnesses=witnesses, kept=kept,
                       levels=levels)  # fmt: skip
    return proof, kept, witnesses


def _snap(result: tuple) -> tuple:
    """A result's values, bit for bit (its arrays' bytes: a later overwrite shows)."""
    proof, kept, witnesses = result
    boxes = [(b.floor, *(getattr(b, f).tobytes() for f in ("centres", "half", "weights", "excess"))) for b in kept]
    return proof, boxes, [w.tobytes() for w in witnesses]


def test_two_threads_proving_at_once_get_each_proofs_own_result(fused):
    cases = _cases(60)
    results = [_run(c) for c in cases]
    want = [_snap(r) for r in results]
    assert sum(p is not None for p, _, _ in want) > 10 and any(boxes for _, boxes, _ in want)
    assert [_snap(r) for r in results] == want  # (later proofs left the kept boxes as they were)
    for rows in fused:
        assert len({len(a) for a in rows}) == 1 and all(a.flags.c_contiguous for a in rows)
    got: list[dict] = [{}, {}]

    def prove(order: list[int], out: dict) -> None:
        for i in order:
            out[i] = _snap(_run(cases[i]))

    for _ in range(3):
        threads = [threading.Thread(target=prove, args=(order, out))
                   for order, out in zip((range(60), range(59, -1, -1)), got, strict=True)]  # fmt: skip
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for out in got:
            assert [out[i] for i in range(60)] == want


def test_the_kernel_is_handed_the_rows_asked_for(fused):
    small, large = _cases(2)
    chain, goal, tolerance = large
    pose_proof(chain, goal, tolerance, 4 * BUDGET, widen=0.25, widen_budget=4 * BUDGET, levels=LEVELS)
    chain, goal, tolerance = small
    pose_proof(chain, goal, tolerance, 64, widen=0.25, widen_budget=64, levels=LEVELS)
    first = 1 << reach_proof.FIRST_SPLITS
    assert [len(rows[3]) for rows in fused] == [first + 8 * BUDGET + 16, first + 128 + 16]


def test_levels_given_as_a_list_are_read_anew_each_proof(fused):
    cases = _cases(40)
    levels = [0.05, 0.1, 0.25]
    differ = 0
    for case in cases:
        levels[:] = [0.05, 0.1, 0.25]
        _run(case, levels)
        levels[:] = [0.5, 0.7, 0.9]  # (the same list, changed in place)
        got = _snap(_run(case, levels))
        assert got == _snap(_run(case, (0.5, 0.7, 0.9)))
        differ += got != _snap(_run(case, LEVELS))
    assert differ, "the levels must change some proof (else this test shows nothing)"
