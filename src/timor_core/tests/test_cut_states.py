"""The batched look-up's staging by the automata of search.filtering.cut_states (issue 38 item 1) stages what the
staging one assembly at a time (``BatchLookup._scalar``, from the kept heads and tails) stages: the same assemblies,
family numbers, head rows and last rows to the last bit and equal cuts' answers, on runs of a real cost-ordered
stream with certificates learnt, bounds and halved families; and its tables keep every entry as they grow."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batch_decide import N, _run

from timor_core.search.filtering import batch_decide, cut_states, family_proof

_EXTEND, _SCALAR = (
    batch_decide.BatchLookup._extend,
    batch_decide.BatchLookup._scalar,
)  # (as imported: the spies wrap these)


def _bits(rows: tuple) -> bytes:
    """Rows of floats as their bits (``-0.0`` is not ``0.0``, a last-bit difference shows)."""
    flat = [x for row in rows for x in row]
    return struct.pack(f"{len(flat)}d", *flat)


def _staged(monkeypatch: pytest.MonkeyPatch, states: bool, *run: object) -> tuple[list, list, list]:
    """What each ``_extend`` call of ``_run(*run)`` staged, by the automata (``states``) or one at a time:
    ``(ids, family number, head rows' bits, last row's bits, answer)`` per assembly in order; the answers; and how
    many assemblies the automata left to ``_scalar``."""
    monkeypatch.setattr(batch_decide, "STATES", states)
    real, real_scalar, staged, scalar = _EXTEND, _SCALAR, [], []

    def spy(self, proofs, items, same, bound):
        before = len(self._ids)
        real(self, proofs, items, same, bound)
        for j in range(before, len(self._ids)):
            head_rows = _bits(self._heads[j].rows)
            staged.append((self._ids[j], self._families[j], head_rows, _bits((self._lasts[j],)), self._state[j]))

    def counted(self, proofs, items, bound):
        scalar.append(len(items))
        return real_scalar(self, proofs, items, bound)

    monkeypatch.setattr(batch_decide.BatchLookup, "_extend", spy)
    monkeypatch.setattr(batch_decide.BatchLookup, "_scalar", counted)
    answers, _ = _run(*run)  # type: ignore[arg-type]
    return staged, answers, scalar


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.sampled_from([1, 7, 64, 256]),
    start=st.integers(0, N - 200),
    length=st.integers(1, 1500),
    bound_at=st.one_of(st.none(), st.integers(0, 1500)),
    seed=st.integers(0, 2**32 - 1),
    cap=st.sampled_from([2, 8192]),
)
def test_the_automata_stage_what_one_at_a_time_stages(monkeypatch, batch, start, length, bound_at, seed, cap):
    """Any run of the stream, in batches, with certificates learnt where an assembly is left to the chain, a bound
    that stops the staging, and (cap 2) families' certificates halved: the automata stage the very assemblies,
    family numbers, rows (bit for bit) and equal cuts' answers that the staging one at a time does, and every
    answer is the same."""
    monkeypatch.setattr(family_proof, "MAX_CERTIFICATES", cap)
    run = (batch, start, length, bound_at, seed)
    by_states, answers, _ = _staged(monkeypatch, True, *run)
    one_by_one, expected, _ = _staged(monkeypatch, False, *run)
    assert answers == expected
    assert len(by_states) == len(one_by_one)
    for a, b in zip(by_states, one_by_one, strict=True):
        assert a[0] is b[0] and a[1:] == b[1:], (a, b)


def test_the_fixed_run_is_staged_by_the_automata_with_a_few_assemblies_left_to_the_older_way(monkeypatch):
    """The fixed long run (so that the property test's cases are seen whatever hypothesis draws): nearly every
    assembly is staged by the automata, a few (modules or pairs the joiner had not read yet) by ``_scalar``, and
    what is staged and answered is what the staging one at a time gives."""
    by_states, answers, scalar = _staged(monkeypatch, True, 256, 0, N, None, 7)
    one_by_one, expected, _ = _staged(monkeypatch, False, 256, 0, N, None, 7)
    assert answers == expected and len(by_states) == len(one_by_one) >= N // 2
    assert all(a[0] is b[0] and a[1:] == b[1:] for a, b in zip(by_states, one_by_one, strict=True))
    assert 1 <= sum(scalar) <= len(by_states) // 20, (sum(scalar), len(by_states))


@given(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 70), st.integers(1, 2**40)), max_size=60))
def test_a_table_keeps_every_entry_as_it_grows(puts):
    """``Table``: after any puts (rows past the room made, columns past the power of two), every entry is where
    numpy's steps read it (``flat[row << bits | column]``), equal to Python's copy, and every other cell is 0."""
    table = cut_states.Table()
    expected: dict[tuple[int, int], int] = {}
    for row, column, value in puts:
        table.put(row, column, value)
        expected[row, column] = value
    assert table.entries == expected
    grid = table.flat.reshape(-1, 1 << table.bits)
    for (row, column), value in expected.items():
        assert table.flat[(row << table.bits) | column] == value
        grid[row, column] = 0
    assert not np.any(grid)
