"""The batched look-up's compiled cover (search.filtering.cover_kernel, batch_cover; issue 38 item 1) marks cuts as
numpy's distances do: the first goal a certificate covers by more than the slack, ``UNSURE`` where one lies within
the slack of its margin first, ``NONE`` else; for new cuts and for new certificates added to a family (``added``),
as Python and as built ahead of time, with borderline margins (a cut's distance to the last bit, and the slack's
edges)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core.common.compiled import use_compiled
from timor_core.search.filtering import batch_cover, cover_kernel
from timor_core.search.filtering.batch_cover import NONE, UNSURE, added, covered
from timor_core.search.filtering.batch_distances import SLACK, distances, sums


class _Certs:
    """A goal's certificates as ``family_proof._Certificates`` keeps them: arrays with room beyond ``size``."""

    def __init__(self, points: np.ndarray, margins: np.ndarray) -> None:
        self.size = len(margins)
        self.points = np.concatenate([points, np.full_like(points, np.nan)])  # (room: never read)
        self.margins = np.concatenate([margins, np.full_like(margins, np.nan)])


def _reference(certs: list[_Certs], cuts: np.ndarray, lo: list[int], ends: list[int]) -> list[int | None]:
    """Per cut: numpy's answer over each goal's certificates ``lo[goal]:size`` for the goals before ``ends[cut]``
    (None: no goal decided it)."""
    out: list[int | None] = [None] * len(cuts)
    for goal, c in enumerate(certs):
        for i in range(len(cuts)):
            if out[i] is None and goal < ends[i] and c.size > lo[goal]:
                clear, near, _ = distances(c.points[lo[goal] : c.size], c.margins[lo[goal] : c.size], cuts[i : i + 1])
                out[i] = goal if clear[0] else UNSURE if near[0] else None
    return out


@st.composite
def _problem(draw: st.DrawFn) -> tuple[list[_Certs], np.ndarray]:
    """A family's certificates for 1-3 goals and 1-12 cuts of 1-6 gaps; some margins a cut's distance (or its first
    gaps' part: where the kernel may stop early) to the last bit, or off it by the slack (or by one bit more or
    less than the slack)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    gaps, n = draw(st.integers(1, 6)), draw(st.integers(1, 12))
    cuts = rng.uniform(-1, 1, (n, gaps, 3))
    certs = []
    for _ in range(draw(st.integers(1, 3))):
        m = draw(st.integers(0, 8))
        points = cuts[rng.integers(n, size=m)] + rng.normal(0, 0.05, (m, gaps, 3))
        margins = rng.uniform(0.0, 0.6, m)
        for k in range(m):
            kind = int(rng.integers(6))
            if kind < 5:  # (borderline: at the sum of this cut's distance, or the slack away from it)
                j, part = int(rng.integers(n)), int(rng.integers(1, gaps + 1))  # (or its first gaps' part)
                d = float(sums(points[k : k + 1, :part], cuts[j : j + 1, :part])[0, 0])
                shift = [0.0, SLACK, -SLACK, math.nextafter(SLACK, 1), -math.nextafter(SLACK, 1)][kind]
                margins[k] = d + shift
        certs.append(_Certs(points, margins))
    return certs, cuts


@settings(max_examples=300, deadline=None)
@given(_problem())
def test_the_kernel_covers_new_cuts_as_numpy(problem):
    """``covered`` with the kernel (as Python) marks each cut with numpy's answer, goal by goal."""
    certs, cuts = problem
    want = _reference(certs, cuts, [0] * len(certs), [len(certs)] * len(cuts))
    assert covered(cover_kernel.cover, certs, cuts) == [NONE if w is None else w for w in want]


@settings(max_examples=300, deadline=None)
@given(_problem(), st.data())
def test_new_certificates_cover_as_numpy_by_both_routes(problem, data):
    """``added`` (certificates only added to since the cuts' marks) by the kernel and by numpy: the new ones of the
    goals before each mark decide, as numpy over them does; a mark where none does stays."""
    certs, cuts = problem
    sizes = [data.draw(st.integers(0, c.size)) for c in certs]
    marks = data.draw(st.lists(st.sampled_from([NONE, *range(len(certs))]), min_size=len(cuts), max_size=len(cuts)))
    ends = [len(certs) if m == NONE else m for m in marks]
    want = [m if w is None else w for m, w in zip(marks, _reference(certs, cuts, sizes, ends), strict=True)]
    assert added(cover_kernel.cover, certs, sizes, cuts, marks) == want
    assert added(None, certs, sizes, cuts, marks) == want


def test_the_problems_have_borderline_cuts():
    """The strategy's problems reach every mark: covered, within the slack (``UNSURE``) and none."""
    seen = set()

    @settings(max_examples=200, deadline=None)
    @given(_problem())
    def collect(problem):
        seen.update(covered(cover_kernel.cover, *problem))

    collect()
    assert {0, UNSURE, NONE} <= seen, seen


@settings(max_examples=200, deadline=None)
@given(_problem())
def test_the_built_kernel_marks_as_its_python(problem):
    """The kernel built ahead of time (``make test`` builds it) marks every cut as its Python function does."""
    built = cover_kernel.AHEAD.get()
    if built is None:
        pytest.skip("the cover kernel is not built here (proof_aot)")
    certs, cuts = problem
    assert covered(built, certs, cuts) == covered(cover_kernel.cover, certs, cuts)


def test_the_built_kernel_runs_only_where_compiled_kernels_may():
    """``kernel()``: the build where compiled kernels are allowed, None (numpy's route) where they are not."""
    try:
        use_compiled(False)
        assert cover_kernel.kernel() is None
        use_compiled(True)
        assert cover_kernel.kernel() is cover_kernel.AHEAD.get()
    finally:
        use_compiled(None)
    assert batch_cover.PENDING not in (NONE, UNSURE)


def test_the_cover_kernels_slack_is_the_look_ups():
    """``cover_kernel`` writes its own copy of ``batch_distances.SLACK`` (numba freezes a global, and the name of the
    module built ahead of time hashes ``cover_kernel.py``'s text, not the file it would be imported from): the copies
    stay equal, or the compiled cover and numpy's would decide a cut at the slack's edge differently."""
    assert cover_kernel._SLACK == SLACK
