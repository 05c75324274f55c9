"""The batched look-up's staging of a batch in numpy steps: each assembly's cut read by two small automata over its
module IDs, with states by value (:mod:`.batch_decide`, issue 38 item 1).

Why: per assembly the staging read its last joint, its head (by the IDs up to that joint, or its parent's for a
straight run), the last row by the IDs after it and the family number: ~10 dictionary look-ups and a dozen Python
steps (``five_joints``: ~2.2 us an assembly, 40,103 assemblies), and an assembly's head IDs are seen only ~3 times,
so much of it was first-sight work (heads grown, straight runs noted). Here a batch is read in a few numpy steps
per module position (:meth:`CutStates.ends_of`), by tables that fill once for all assemblies alike:

* the *run*: the IDs since the last joint (or the base) and the connectors its first and its last module are
  entered by; a module extends it (each neighbouring pair joins in one way, given the first's entry: ``_Joiner``),
  a joint closes it into a segment (the key ``Kept`` and ``_Segments`` read) and starts the next: a few dozen runs
  whatever the heads;
* the *head* by value: the rotation keys, rows and carried length of the merged segments up to the last joint
  (:func:`~.segments.merged_head`'s step per segment, the same arithmetic in the same order: the same rows to the
  last bit); a head and a segment give the next head;
* at the end, the last run's segment (the tail) carried by the head's length (:func:`~.segments.carried`'s row), the
  family ``(head rotations, tail rotation)`` numbered by the look-up, and the cut's key in ``Verdicts`` (family,
  head rows and last row numbered by value), from per-head and per-tail numbers.

An entry is made the first time an assembly needs it (:meth:`CutStates.walk`) from the segments and joins known;
one not known yet (a module or pair the joiner has not read, a segment not known, a module without one plain joint)
is not made: the caller takes that assembly its older way. Segments known stay the same (``_Segments`` keeps a
key's first value), so the entries hold while the proofs do, the numbers while the look-up's numbering does
(:meth:`CutStates.clear`)."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from timor_core.search.filtering import cut_kernel

__all__ = ["MAX_CELLS", "MAX_STATES", "CutStates", "Table", "ValueHead", "resume"]

MAX_STATES = 1 << 18
"""Heads, runs and last rows made: more, and all are forgotten and made anew (the same numbers: they are read from
the look-up and its ``Verdicts``)."""
MAX_CELLS = 1 << 22
"""Cells of the tables in all (8 bytes each: 32 MiB): more, the same (a table is dense, rows by the next power of
two of its columns: a module set with many segments fills it long before :data:`MAX_STATES` states)."""

_NONE, _START = 0, 1  # (a state not made; the run and head of no module read)
_LOW = (1 << 32) - 1  # (a move: the next run in the low 32 bits, the segment it closes above them)


class ValueHead:
    """A head by value (what of :class:`~.kept_heads.Head` a cut reads): rotation keys, rows and carried length;
    ``parent``: the head it was grown from (one segment less, its rows the first of ``rows``); ``sums``: per
    certificate a batch tried, its distance to ``rows`` (``batch_distances.head_sum``)."""

    __slots__ = ("carry", "parent", "rotations", "rows", "sums")

    def __init__(self, rotations: tuple, rows: tuple, carry: float, parent: ValueHead | None) -> None:
        self.rotations, self.rows, self.carry, self.parent = rotations, rows, carry, parent
        self.sums: dict[int, float] = {}


def resume(start: int) -> tuple[int, int, int]:
    """``(head, run, module position)`` of a walk's start as :meth:`CutStates.ends_of` packs it (0: the first module's,
    head and run :data:`_START`): ``(head - 1) << 40 | (run - 1) << 16 | position``."""
    return (start >> 40) + 1, ((start >> 16) & 0xFFFFFF) + 1, start & 0xFFFF


class Table:
    """A table of integers ``[row, column]`` (0: not made), grown as entries are set, flat for numpy's steps:
    ``flat[row << bits | column]``."""

    def __init__(self) -> None:
        self.bits = 4
        self.flat = np.zeros(64 << self.bits, dtype=np.int64)
        self.entries: dict[tuple[int, int], int] = {}  # (the same, for Python's look-ups)

    def fit(self, row: int, column: int) -> None:
        """Room for ``[row, column]`` (rows doubled, columns to the next power of two: entries kept)."""
        rows, bits = len(self.flat) >> self.bits, self.bits
        while column >> bits:
            bits += 1
        if row < rows and bits == self.bits:
            return
        grown = np.zeros((max(rows, 2 * row), 1 << bits), dtype=np.int64)
        grown[:rows, : 1 << self.bits] = self.flat.reshape(rows, -1)
        self.flat, self.bits = grown.reshape(-1), bits

    def put(self, row: int, column: int, value: int) -> None:
        """Set ``[row, column]``."""
        if column >> self.bits or (row << self.bits) >= len(self.flat):  # (else it fits: most puts)
            self.fit(row, column)
        self.flat[(row << self.bits) | column] = self.entries[row, column] = value


class _Numbers(dict):
    """Value -> a number from 1, given on first sight (module IDs: 0 is past an assembly's end)."""

    def __missing__(self, key: Any) -> int:
        number = self[key] = len(self) + 1
        return number


class CutStates:
    """The automata and numbers (module docstring); ``ends_of`` reads a batch, ``walk`` makes what one assembly
    needs. Per head (numbered from 2; 1: none yet) its :class:`ValueHead` and rows number; per (carry, tail) the
    last row and its number; per (head rotations, tail) the family number + 1."""

    def __init__(self) -> None:
        self.clear(None)

    def clear(self, stamp: Any, verdicts: Any = None) -> None:
        """Forget everything (``stamp``: what the numbers hold for: the look-up's numbering; ``verdicts``: its
        ``Verdicts``, which number the rows)."""
        self.stamp, self.verdicts = stamp, verdicts
        self.clears = getattr(self, "clears", -1) + 1  # (what was read before holds while this is the same)
        self.codes = _Numbers()  # module ID -> code
        self.runs: list[tuple] = [(), ((), None, None)]  # per run: its IDs, its first's and its last's entries
        self.run_numbers: dict[tuple, int] = {}
        self.segments: list[Any] = [None]  # per segment number (from 1): the segment
        self.segment_numbers: dict[tuple, int] = {}  # per key (IDs, entry)
        self.heads: list[ValueHead | None] = [None, None]
        self.head_numbers: dict[tuple, int] = {}  # per (rotations, rows, carry)
        self.rotations, self.carries = _Numbers(), _Numbers()  # per head: numbers of its rotations and carry
        self.head_parts = np.zeros((64, 3), dtype=np.int64)  # per head: rotations, carry and rows numbers + 1
        self.parts: list[list[int]] = [[0, 0, 0], [0, 0, 0]]  # (the same, for Python's look-ups)
        self.tail_of: dict[int, int] = {}  # per run: its tail's number (``ending``, for Python's look-ups)
        self.tails: list[Any] = [None]  # per tail number: the last segment
        self.lasts: list[Any] = [None]  # per last row number (from 1): the row
        self.numbered = np.zeros(64, dtype=np.int64)  # per last row number: its number in ``Verdicts``
        self.numbers_of: list[int] = [0]  # (the same, for Python's look-ups)
        self.dofs = Table()  # [code, 0]: the module's DOF + 1 (0: not known yet)
        self.moves = Table()  # [run, code]: the next run | the segment it closes (0: none) << 32
        self.grown = Table()  # [head, segment]: the next head ([head, 0]: the head)
        self.ending = np.zeros(64, dtype=np.int64)  # per run: its tail's number (0: not made)
        self.family, self.last = Table(), Table()  # [rotations, tail]: family + 1; [carry, tail]: last row number
        self.moves.put(_START, 0, _START)
        self.grown.put(_START, 0, _START)

    def full(self) -> bool:
        """Whether the states and numbers reached :data:`MAX_STATES`, or the tables :data:`MAX_CELLS` (then
        :meth:`clear` them: bounded memory)."""
        tables = (self.dofs, self.moves, self.grown, self.family, self.last)
        return (len(self.heads) + len(self.runs) + len(self.lasts) >= MAX_STATES
                or sum(len(t.flat) for t in tables) >= MAX_CELLS)  # fmt: skip

    def ends_of(self, ids: Sequence[Sequence[str]]) -> tuple[np.ndarray, ...]:
        """Per assembly of ``ids``: its family number (-1: an entry not made yet: :meth:`walk`), the numbers of its
        head's rows and of its last row in ``Verdicts``, its head and last row (here), DOF (-1: some module's not
        known yet), number of modules and where its walk resumes (:func:`resume`: the first module whose move or
        next head is not made, or the end, with the run and head before it); a few numpy steps per module position,
        or one call of :mod:`.cut_kernel` where it is built."""
        lengths = np.fromiter(map(len, ids), dtype=np.int64, count=len(ids))
        flat = np.fromiter(map(self.codes.__getitem__, itertools.chain.from_iterable(ids)), dtype=np.int64)
        self.moves.fit(0, len(self.codes))
        self.dofs.fit(len(self.codes), 0)
        compiled = cut_kernel.kernel()
        if compiled is not None:  # (the same steps, one call: :mod:`.cut_kernel`)
            out = np.empty((7, len(ids)), dtype=np.int64)
            tables = (self.moves, self.grown, self.dofs, self.family, self.last)
            widths = np.array([t.bits for t in tables], dtype=np.int64)
            compiled(flat, lengths, *(t.flat for t in tables), widths, self.ending, self.head_parts, self.numbered, out)
            family, rows, numbers, head, last, dofs, resumes = out
            return family - 1, rows - 1, numbers, head, last, dofs, lengths, resumes
        width = int(lengths.max(initial=0))
        codes = np.zeros((len(ids), width), dtype=np.int64)
        codes[np.arange(width) < lengths[:, None]] = flat
        run = np.full(len(ids), _START, dtype=np.int64)
        head = run.copy()
        moves, grown = self.moves.flat, self.grown.flat
        bits, head_bits = self.moves.bits, self.grown.bits
        at = np.full(len(ids), -1, dtype=np.int64)  # (where the first move not made is: the walk resumes there)
        resumes = np.zeros(len(ids), dtype=np.int64)
        for k, column in enumerate(codes.T):
            move = moves[(run << bits) | column]
            grew = grown[(head << head_bits) | (move >> 32)]
            missed = ((move == 0) | (grew == 0)) & (at < 0)
            at[missed], resumes[missed] = k, ((head[missed] - 1) << 40) | ((run[missed] - 1) << 16) | k
            head, run = grew, move & _LOW
        whole = at < 0
        resumes[whole] = ((head[whole] - 1) << 40) | ((run[whole] - 1) << 16) | lengths[whole]
        tail, parts = self.ending[run], self.head_parts[head]
        family = self.family.flat[(parts[:, 0] << self.family.bits) | tail]
        last = self.last.flat[(parts[:, 1] << self.last.bits) | tail]
        family[(head <= _START) | (last == 0) | (parts[:, 2] == 0)] = 0
        dofs = self.dofs.flat[codes << self.dofs.bits]  # (DOF + 1, 0: not known; past the end code 0, row 0: 0)
        dofs = np.where((dofs == 0).sum(axis=1) > width - lengths, -1, (dofs.sum(axis=1) - lengths))
        return family - 1, parts[:, 2] - 1, self.numbered[last], head, last, dofs, lengths, resumes

    def walk(self, ids: Sequence[str], ctx: Any, number: Callable[[tuple, bytes], int], start: int = 0) -> tuple | None:
        """``ids``' family and row numbers, head and last row (as :meth:`ends_of`), the entries it needs made where
        not yet; None: one cannot be made from what is known (the caller joins the assembly, which reads its modules
        and pairs, and walks again; else the staging stops there).
        ``ctx``: ``(kinds, steps, units, pairs)`` (the segments' and joiner's tables); ``number``: a family's
        number (the look-up's); ``start``: where :meth:`ends_of` says the walk resumes (:func:`resume`; 0: from
        the first module), read by these very tables (what they hold stays while :attr:`clears` does)."""
        head, run, at = (start >> 40) + 1, ((start >> 16) & 0xFFFFFF) + 1, start & 0xFFFF  # (:func:`resume`)
        moves, grown, codes, low = self.moves.entries, self.grown.entries, self.codes, _LOW
        for m in ids[at:] if at else ids:
            code = codes[m]
            move = moves.get((run, code)) or self._step(run, m, code, ctx)
            if not move:
                return None
            segment = move >> 32
            if segment:
                head = grown.get((head, segment)) or self._grow(head, segment)
            run = move & low
        tail = self.tail_of.get(run) or self._tail(run, ctx[1])
        if head <= _START or not tail:
            return None
        parts = self.parts[head]
        rotations, carry, rows = parts
        if not rows:  # (numbered once an assembly ends with the head, as the look-up numbers them)
            rows = parts[2] = self.head_parts[head, 2] = self.verdicts.shape(self.heads[head].rows) + 1  # type: ignore[union-attr]
        family = self.family.entries.get((rotations, tail))
        if not family:
            family = number(self.heads[head].rotations, self.tails[tail][0]) + 1  # type: ignore[union-attr]
            self.family.put(rotations, tail, family)
        last = self.last.entries.get((carry, tail)) or self._last(head, carry, tail)
        return family - 1, rows - 1, self.numbers_of[last], head, last

    def _step(self, run: int, m: str, code: int, ctx: Any) -> int:
        """The move from ``run`` by module ``m``: the next run and the segment it closes if a joint (``<< 32``),
        made now (0: not from what is known)."""
        kinds, steps, units, pairs = ctx
        ids, first, entry = self.runs[run]
        unit, kind = units.get(m), kinds.get(m)
        if unit is None or kind is None:
            return _NONE
        if run == _START:  # the first module: its one base connector (the join's first entry)
            entry = first = unit[2]
        else:  # each neighbouring pair joins in one way, given the first's entry (``_Joiner``)
            entry = pairs.get((ids[-1], entry, m))
        if entry is None:
            return _NONE
        self.dofs.put(code, 0, unit[1] + 1)
        ids, number = (*ids, m), 0
        if kind:  # a joint: the segment from the last one (or the base) ends here, the next starts
            segment = steps.get((ids, first))
            if segment is None:
                return _NONE
            known = self.segment_numbers.get((ids, first))
            number = len(self.segments) if known is None else known
            if known is None:
                self.segment_numbers[ids, first] = number
                self.segments.append(segment)
                self.grown.fit(0, number)
            value = ((m,), entry, entry)
        else:
            value = (ids, first, entry)
        found = self.run_numbers.get(value)
        if found is None:
            found = self.run_numbers[value] = len(self.runs)
            self.runs.append(value)
            self.moves.put(found, 0, found)  # (past the end: the same run)
            if found >= len(self.ending):
                self.ending = np.concatenate([self.ending, np.zeros_like(self.ending)])
        move = found | number << 32
        self.moves.put(run, code, move)
        return move

    def _grow(self, head: int, segment: int) -> int:
        """The head after ``head`` and one more segment, by value: :func:`~.segments.merged_head`'s step (the first
        segment never merged); numbered now."""
        rotation, _, row, axial = self.segments[segment]
        parent = self.heads[head]
        rotations: tuple
        rows: tuple
        if parent is None:
            rotations, rows, carry = (rotation,), (row,), 0.0
        else:
            rotations, rows, carry = parent.rotations, parent.rows, parent.carry
            if axial is not None:
                carry += axial
            else:
                if carry:
                    row, carry = (row[0], row[1], row[2] + carry), 0.0
                rotations, rows = (*rotations, rotation), (*rows, row)
        found = self.head_numbers.get((rotations, rows, carry))
        if found is None:
            found = self.head_numbers[rotations, rows, carry] = len(self.heads)
            self.heads.append(ValueHead(rotations, rows, carry, parent))
            if found >= len(self.head_parts):
                self.head_parts = np.concatenate([self.head_parts, np.zeros_like(self.head_parts)])
            parts = [self.rotations[rotations], self.carries[carry], 0]
            self.head_parts[found, 0], self.head_parts[found, 1] = parts[:2]
            self.parts.append(parts)
            self.grown.put(found, 0, found)
            if parts[0] == len(self.rotations):  # (a new rotations number: its row)
                self.family.fit(parts[0], 0)
            if parts[1] == len(self.carries):
                self.last.fit(parts[1], 0)
        self.grown.put(head, segment, found)
        return found

    def _tail(self, run: int, steps: dict) -> int:
        """The number of the run's segment as the last one (made now; 0: not known, or no joint read)."""
        ids, first, _ = self.runs[run]
        last = steps.get((ids, first)) if ids and first is not None else None
        if last is None:
            return 0
        number = self.ending[run] = self.tail_of[run] = len(self.tails)
        self.tails.append(last)
        self.family.fit(0, number)
        self.last.fit(0, number)
        return number

    def _last(self, head: int, carry: int, tail: int) -> int:
        """The number of the tail's last row carried by the head's length (:func:`~.segments.carried`'s row), made
        now, with its number in ``verdicts``."""
        row, length = self.tails[tail][2], self.heads[head].carry  # type: ignore[union-attr]
        if length:
            row = (row[0], row[1], row[2] + length)
        number = len(self.lasts)
        self.lasts.append(row)
        if number >= len(self.numbered):
            self.numbered = np.concatenate([self.numbered, np.zeros_like(self.numbered)])
        self.numbered[number] = found = self.verdicts.last(row)
        self.numbers_of.append(found)
        self.last.put(carry, tail, number)
        return number
