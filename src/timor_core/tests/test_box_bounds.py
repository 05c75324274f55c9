"""The table of cosines and sines the proofs' kernels take their angles' from (search/filtering/box_bounds.py
``cos_sin``): every value is ``math.cos``/``math.sin`` of exactly its argument, to the last bit, whether the table
holds it, holds another argument in its slot, or cannot hold it; compiled and as the Python function numba compiles;
one table per thread. That the kernels' bounds do not change is ``test_proof_aot``'s (ahead-built against numba's
and numpy's, bit for bit), ``test_proof_poses``' and ``test_proof_fused``'s."""

from __future__ import annotations

import math
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core.search.filtering import box_bounds
from timor_core.search.filtering.box_bounds import TRIG_SLOTS, cos_sin, trig_table

_SCALE = 2.0**20 / math.pi  # (box_bounds' hash, to make two arguments share a slot: asserted below)


def _kernel(compiled: bool):
    if not compiled:
        return cos_sin
    numba = pytest.importorskip("numba")
    return numba.njit(cache=False, fastmath=False, nogil=True)(box_bounds.cos_sin)


def _same(got: tuple, x: float) -> bool:
    """Bit for bit ``math.cos(x), math.sin(x)`` (the sign of a zero too; NaN where they are NaN)."""
    want = np.array([math.cos(x), math.sin(x)]) if math.isfinite(x) else np.array([np.nan, np.nan])
    return np.array_equal(np.array(got).view(np.int64), want.view(np.int64)) or (
        not math.isfinite(x) and bool(np.isnan(got).all())
    )


def _slot(x: float) -> int:
    return (((int(x * _SCALE) & 0xFFFFFF) * 2654435761) >> 32) & (TRIG_SLOTS - 1)


# the angles a search's boxes have: sums of +-pi / 2**j (as halving makes them), and others
_angles = st.one_of(
    st.lists(st.tuples(st.booleans(), st.integers(0, 24)), min_size=1, max_size=8).map(
        lambda terms: math.fsum((1 if up else -1) * math.pi / 2**j for up, j in terms)
    ),
    st.floats(-10.0, 10.0, allow_nan=False),
    st.sampled_from([0.0, -0.0, math.pi, -math.pi, 1e-300, 999.0, 1e3, -1e3, 1e300, math.inf, -math.inf, math.nan]),
)


@settings(max_examples=60, deadline=None)
@given(xs=st.lists(_angles, min_size=1, max_size=40), compiled=st.booleans())
def test_the_table_gives_cos_and_sin_to_the_last_bit(xs, compiled):
    """Each argument, asked for in turn and again (the table then holds it, or another one in its slot), gets
    ``math.cos`` and ``math.sin`` of it bit for bit (a zero's sign too); arguments far from an angle (|x| >= 1e3,
    inf, NaN) and zeros are computed and never kept."""
    kernel, table = _kernel(compiled), np.full((TRIG_SLOTS, 3), np.nan)
    xs = xs if compiled else [x for x in xs if math.isfinite(x)]  # (Python's math.cos raises on inf: numba's NaN)
    for x in [0.0, -0.0, *xs, -0.0, 0.0, *xs[::-1]]:  # (zeros of both signs: 0.0 == -0.0, their sines differ)
        assert _same(kernel(table, x), x), x
    kept = table[np.isfinite(table[:, 0]), 0]
    assert all(0.0 < abs(x) < 1e3 for x in kept) and set(kept) <= set(xs)


@pytest.mark.parametrize("compiled", [False, True])
def test_two_arguments_in_one_slot_each_get_their_own_values(compiled):
    """Arguments that hash to the same slot take it in turn: neither ever gets the other's values."""
    kernel, table = _kernel(compiled), np.full((TRIG_SLOTS, 3), np.nan)
    a = 0.5
    b = next(x for x in (a + k * math.pi / 2**20 for k in range(1, 1 << 22)) if _slot(x) == _slot(a))
    for x in (a, b, a, a, b, b, a):
        assert _same(kernel(table, x), x), x
        assert np.count_nonzero(np.isfinite(table[:, 0])) == 1 and table[_slot(a), 0] == x  # (they share a slot)


def test_each_thread_has_its_own_table():
    """The kernels run without the GIL: a thread's table is its own, made once and kept."""
    mine, theirs = trig_table(), []
    thread = threading.Thread(target=lambda: theirs.extend([trig_table(), trig_table()]))
    thread.start()
    thread.join()
    assert trig_table() is mine and theirs[0] is theirs[1] and theirs[0] is not mine
    assert mine.shape == (TRIG_SLOTS, 3)
