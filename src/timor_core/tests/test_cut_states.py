"""The batched look-up's staging by the automata of search.filtering.cut_states (issue 38 item 1) stages each
assembly's cut as the full join and cut do (``Kept.keep``, what ``decision`` reads): the same family, head rows and
last row to the last bit, on runs of a real cost-ordered stream with certificates learnt, bounds and halved
families, every answer the one-at-a-time one; and its tables keep every entry as they grow."""

from __future__ import annotations

import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_batch_decide import N, run_stream

from timor_core.search.filtering import batch_decide, cut_kernel, cut_states, cut_verdicts, family_proof
from timor_core.search.filtering.kept_heads import Kept


def _bits(rows: tuple) -> bytes:
    """Rows of floats as their bits (``-0.0`` is not ``0.0``, a last-bit difference shows)."""
    flat = [x for row in rows for x in row]
    return struct.pack(f"{len(flat)}d", *flat)


def _staged(monkeypatch: pytest.MonkeyPatch, *run: object) -> tuple[list, list, list]:
    """What each ``_extend`` call of ``run_stream(*run)`` staged: ``(ids, family rotations, head rows' bits, last row's
    bits)`` per assembly in order and the same from ``Kept.keep`` after a full join (the cut ``decision`` reads,
    with the look-up's segments); and the answers."""
    real, staged, kept = batch_decide.BatchLookup._extend, [], []

    def spy(self, proofs, items, same, bound):
        before = len(self._ids)
        real(self, proofs, items, same, bound)
        rotations = {number: key for key, number in self._numbers.items()}
        ctx, keeping = self.certified.ctx, Kept(self.certified.ctx, None)
        for j in range(before, len(self._ids)):
            ids = self._ids[j]
            family = rotations[self._families[j]]
            head, last = self._states.heads[self._heads[j]], self._states.lasts[self._lasts[j]]
            staged.append((ids, family, _bits(head.rows), _bits((last,))))
            head, key, last = keeping.keep(proofs, ids, ctx.join(ids))  # (None: not kept: the test fails)
            end = keeping.end(head, key, last)
            kept.append((ids, (head.rotations, end[0]), _bits(head.rows), _bits((end[2],))))

    monkeypatch.setattr(batch_decide.BatchLookup, "_extend", spy)
    answers, _ = run_stream(*run)  # type: ignore[arg-type]
    return staged, kept, answers


_RUNS = {
    "batch": st.sampled_from([1, 7, 64, 256]),
    "start": st.integers(0, N - 200),
    "length": st.integers(1, 1500),
    "bound_at": st.one_of(st.none(), st.integers(0, 1500)),
    "seed": st.integers(0, 2**32 - 1),
}
"""A run of the stream (:func:`test_batch_decide.run_stream`'s arguments)."""


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**_RUNS, cap=st.sampled_from([2, 8192]))
def test_the_automata_stage_the_cut_of_the_full_join(monkeypatch, batch, start, length, bound_at, seed, cap):
    """Any run of the stream, in batches, with certificates learnt where an assembly is left to the chain, a bound
    that stops the staging, and (cap 2) families' certificates halved: every assembly staged by the automata has
    the family, head rows and last row (bit for bit) of its cut from the kept head and tail after a full join
    (``Kept.keep``, ``Kept.end``: what ``decision`` reads), and every answer is the one-at-a-time one."""
    monkeypatch.setattr(family_proof, "MAX_CERTIFICATES", cap)
    staged, kept, answers = _staged(monkeypatch, batch, start, length, bound_at, seed)
    assert staged == kept
    assert answers == run_stream(None, start, length, bound_at, seed)[0]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(**_RUNS)
def test_the_compiled_lock_step_reads_what_numpy_reads(monkeypatch, batch, start, length, bound_at, seed):
    """Every batch ``ends_of`` reads in a run of the stream (entries made as the run goes, assemblies whose entries
    are not made yet, new module IDs) gets the same columns from :func:`.cut_kernel.ends` (as Python, the function
    built; and as built where it is) as from numpy's steps; the answers are the one-at-a-time ones."""
    real, routes, reads = cut_states.CutStates.ends_of, [None, cut_kernel.ends, cut_kernel.AHEAD.get()], []

    def spy(self, ids):
        columns = []
        for route in [r for r in routes if r is not None] + [None]:
            monkeypatch.setattr(cut_kernel, "kernel", lambda route=route: route)
            columns.append([column.tolist() for column in real(self, ids)])
        assert all(c == columns[-1] for c in columns[:-1])
        reads.append(len(ids))
        return real(self, ids)

    monkeypatch.setattr(cut_states.CutStates, "ends_of", spy)
    answers = run_stream(batch, start, length, bound_at, seed)[0]
    assert reads or batch == 1 or length < 2 * batch
    monkeypatch.undo()
    assert answers == run_stream(None, start, length, bound_at, seed)[0]


def test_the_fixed_run_is_staged_by_the_automata_with_a_few_assemblies_joined_first(monkeypatch):
    """The fixed long run (so that the property test's cases are seen whatever hypothesis draws): most assemblies
    are staged, each with its full join's cut, and a few only after their join (modules or pairs the joiner had not
    read yet: ``CutStates.walk`` gives None first) or not at all (a segment not known yet); the assemblies read
    after a stop are not read again by the next call (``BatchLookup._ends``)."""
    walk, ends, ends_of = cut_states.CutStates.walk, batch_decide.BatchLookup._ends, cut_states.CutStates.ends_of
    walked, asked, read = [], [], []

    def spy_walk(self, ids, ctx, number, start=0):
        found = walk(self, ids, ctx, number, start)
        walked.append(found is not None)
        return found

    def spy_ends(self, ids):
        asked.append(len(ids))
        return ends(self, ids)

    def spy_read(self, ids):
        read.append(len(ids))
        return ends_of(self, ids)

    monkeypatch.setattr(cut_states.CutStates, "walk", spy_walk)
    monkeypatch.setattr(batch_decide.BatchLookup, "_ends", spy_ends)
    monkeypatch.setattr(cut_states.CutStates, "ends_of", spy_read)
    staged, kept, answers = _staged(monkeypatch, 256, 0, N, None, 7)
    assert staged == kept and len(staged) >= N // 2
    assert answers == run_stream(None, 0, N, None, 7)[0]
    assert 1 <= walked.count(False) <= len(walked) // 4 and walked.count(True) >= 100, (
        walked.count(False),
        len(walked),
    )
    assert sum(read) <= sum(asked) // 2, (sum(read), sum(asked))  # (read after a stop: taken from the last call)


@pytest.mark.parametrize(("bound", "at"), [("MAX_STATES", 40), ("MAX_CELLS", 6000)])
def test_the_states_are_bounded_and_made_anew_with_the_same_numbers(monkeypatch, bound, at):
    """Past ``MAX_STATES`` heads, runs and last rows, or ``MAX_CELLS`` cells of the tables, the automata forget
    everything and make them anew (bounded memory): on the fixed long run at a bound of 40 states (6,000 cells:
    the five tables start at 5,120) they are cleared again and again, and every assembly is still staged with its
    full join's cut and answered as one at a time (the numbers are the look-up's and its ``Verdicts``', read
    again)."""
    monkeypatch.setattr(cut_states, bound, at)
    real, clears = cut_states.CutStates.clear, []

    def counted(self, stamp, verdicts=None):
        clears.append(stamp)
        real(self, stamp, verdicts)

    monkeypatch.setattr(cut_states.CutStates, "clear", counted)
    staged, kept, answers = _staged(monkeypatch, 256, 0, N, None, 3)
    assert staged == kept and len(staged) >= N // 2
    assert answers == run_stream(None, 0, N, None, 3)[0]
    assert len(clears) >= 10, len(clears)


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


@pytest.mark.parametrize("route", ["numpy", "python", "built"])
def test_a_walk_resumes_where_the_lock_step_stopped_and_gives_what_a_walk_from_the_first_module_gives(
    monkeypatch, route
):
    """``CutStates.walk`` from where ``ends_of`` says the lock-step found the first move or head not made (the run
    and head before it) gives what a walk from the first module gives, on the fixed long run, by each route of
    ``ends_of`` (numpy's, :func:`.cut_kernel.ends` as Python, as built); most walks resume past the first module,
    some at the end (every move made: only the tail or the numbers new)."""
    kernel = {"numpy": None, "python": cut_kernel.ends, "built": cut_kernel.AHEAD.get()}[route]
    if route == "built" and kernel is None:
        pytest.skip("the lock-step kernel is not built")
    monkeypatch.setattr(cut_kernel, "kernel", lambda: kernel)
    walk, resumed = cut_states.CutStates.walk, []

    def both(self, ids, ctx, number, start=0):
        found = walk(self, ids, ctx, number, start)
        assert walk(self, ids, ctx, number) == found, (ids, cut_states.resume(start))
        resumed.append(cut_states.resume(start)[2] / len(ids))
        return found

    monkeypatch.setattr(cut_states.CutStates, "walk", both)
    staged, kept, answers = _staged(monkeypatch, 256, 0, N, None, 7)
    assert staged == kept and answers == run_stream(None, 0, N, None, 7)[0]
    past = [share for share in resumed if share > 0]
    assert len(past) >= len(resumed) // 2 and any(share == 1 for share in past), (len(past), len(resumed))


@pytest.mark.parametrize("route", ["numpy", "built"])
def test_a_dof_read_by_the_lock_step_is_the_assemblys_or_minus_one(monkeypatch, route):
    """Every DOF ``BatchLookup._ends`` gives (``ends_of``'s, and those it leaves unread) is the assembly's modules'
    DOF summed, or -1 (a module whose DOF the tables do not hold yet: ``_one`` sums them), on the fixed long run; many
    of the assemblies left to a walk have theirs read, and the answers are one at a time's."""
    kernel = {"numpy": None, "built": cut_kernel.AHEAD.get()}[route]
    if route == "built" and kernel is None:
        pytest.skip("the lock-step kernel is not built")
    monkeypatch.setattr(cut_kernel, "kernel", lambda: kernel)
    ends, seen = batch_decide.BatchLookup._ends, {"unknown": 0, "walked": 0, "read": 0}

    def checked(self, ids):
        columns = ends(self, ids)
        modules = self.certified.ctx.join.modules
        for family, dof, one in zip(columns[0].tolist(), columns[5].tolist(), ids, strict=True):
            if dof < 0:
                seen["unknown"] += 1
                continue
            assert dof == sum(modules[m][1] for m in one), (one, dof)
            seen["walked" if family < 0 else "read"] += 1
        return columns

    monkeypatch.setattr(batch_decide.BatchLookup, "_ends", checked)
    answers, _ = run_stream(256, 0, N, None, 7)
    assert answers == run_stream(None, 0, N, None, 7)[0]
    assert seen["unknown"] >= 1 and seen["walked"] >= 100 and seen["read"] >= N // 4, seen


@given(st.lists(st.tuples(st.integers(0, 2**20), st.integers(0, 2**21 - 1), st.integers(0, 2**21 - 1)), max_size=40))
def test_a_cuts_key_tells_its_numbers_apart_and_holds_its_family(numbers):
    """``cut_verdicts.verdict_key``: one int per (family, head rows, last row) numbers (all a staging can number:
    ``MAX_VERDICTS`` rows and last rows, ``_FAMILIES`` families, and a batch more), the family read back by
    ``>> FAMILY``, the same from numpy's arrays."""
    keys = [cut_verdicts.verdict_key(*n) for n in numbers]
    assert len(set(keys)) == len(set(numbers))
    assert [key >> cut_verdicts.FAMILY for key in keys] == [n[0] for n in numbers]
    arrays = [np.array([n[k] for n in numbers], dtype=np.int64) for k in range(3)]
    assert cut_verdicts.verdict_key(*arrays).tolist() == keys
    assert cut_verdicts.MAX_VERDICTS + 4 * batch_decide.BATCH < 1 << cut_verdicts.ROWS


@pytest.mark.parametrize("where", range(3))
@pytest.mark.parametrize("as_array", [False, True])
def test_a_number_past_its_bits_of_a_cuts_key_is_refused(where, as_array):
    """``verdict_key`` refuses (a TimorError) a family, rows or last-row number past its bits, one int or one entry of
    numpy's columns: unchecked, its key would be another cut's (rows ``1 << ROWS`` is family 1's key) or wrap around
    int64; the largest that fit and the negative marks of numbers not read yet pass."""
    from timor_core.errors import TimorError

    most = [(1 << (63 - cut_verdicts.FAMILY)) - 1, (1 << cut_verdicts.ROWS) - 1, (1 << cut_verdicts.ROWS) - 1]
    fit = [n if k == where else 0 for k, n in enumerate(most)]
    past = [n + 1 if k == where else 0 for k, n in enumerate(most)]
    unread = [-1, -1, 0]

    def key(numbers: list[int]):
        if not as_array:
            return cut_verdicts.verdict_key(*numbers)
        return cut_verdicts.verdict_key(*(np.array([u, n], dtype=np.int64) for u, n in zip(unread, numbers)))

    assert key(fit) is not None and cut_verdicts.verdict_key(*unread) < 0
    with pytest.raises(cut_verdicts.VerdictKeyError) as info:
        key(past)
    assert isinstance(info.value, TimorError)


def test_a_kept_answer_holds_until_its_familys_certificates_change_before_or_at_its_goal():
    """``Verdicts.get`` (inlined by the batched look-up): an answer kept for a cut is read back by its key until the
    family's certificates change for an earlier goal (an added one may cover the cut first), or for its own goal with
    some forgotten; a change for a later goal, or in another family, leaves it."""
    verdicts = cut_verdicts.Verdicts()
    for _ in range(2):
        verdicts.family(3)
    keys = [cut_verdicts.verdict_key(f, verdicts.shape((f, n)), verdicts.last((n,))) for f in (0, 1) for n in (0, 1)]
    verdicts.keep([1, 1, 2, -1], keys, {0: [0, 1, 2, 3]})
    assert [verdicts.get(k) for k in keys] == [1, 1, 2, None]  # (a negative mark is not kept)
    verdicts.changed(0, 1, halved=False)  # goal 1's certificates grew: its own answers hold, later goals' not
    assert [verdicts.get(k) for k in keys] == [1, 1, 2, None]
    verdicts.changed(1, 2, halved=False)
    assert verdicts.get(keys[2]) == 2
    verdicts.changed(0, 0, halved=False)  # an earlier goal's grew: goal 1's answers no longer hold
    assert [verdicts.get(k) for k in keys] == [None, None, 2, None]
    verdicts.keep([1], keys[:1], {0: [0]})
    verdicts.changed(0, 1, halved=True)  # some of goal 1's forgotten: its answer may be gone
    assert verdicts.get(keys[0]) is None and verdicts.get(keys[2]) == 2
