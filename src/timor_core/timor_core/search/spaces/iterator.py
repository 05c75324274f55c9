"""Lazy, memory-flat, resumable iterators over the assemblies of a :class:`~.space.SerialSpace`.

An :class:`AssemblyIterator` walks the space's automaton depth-first, keeping only the current
path (a few tuples), and yields each assembly as a tuple of module IDs (base first, end effector
last). Its :meth:`~AssemblyIterator.state` is a small JSON-able dict; ``space.iter(resume=state)``
(or ``AssemblyIterator(space, resume=state)``) continues exactly after the last yielded assembly.

Chromosome helpers: a GA encodes a chain in a fixed number of slots, with ``empty`` slots ('0');
:func:`canonical` drops the empty slots, so ``J-L1-0-L1-0-0-J`` and ``J-L1-0-0-0-L1-J`` (the same
robot) map to the same tuple, and :func:`iter_chromosomes` yields each robot of a space once.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Iterator, Sequence
from itertools import islice
from typing import Any

from timor_core.errors import InputError
from timor_core.search.spaces.rules import SearchSpaceError

SerialSpace = Any  # a timor_core.search.spaces.space.SerialSpace (it imports this module)

__all__ = ["AssemblyIterator", "canonical", "to_chromosome", "iter_chromosomes", "STATE_VERSION"]

STATE_VERSION = 1


class AssemblyIterator(Iterator[tuple[str, ...]]):
    """Iterates positions ``start`` .. ``stop - 1`` of a space, in the space's order.

    Args:
        space: the :class:`~.space.SerialSpace` to walk.
        start, stop: a slice of the space (e.g. one shard per worker); ``stop=None`` is the end.
        resume: a dict from :meth:`state` of an iterator over the same space; overrides start/stop.
    """

    def __init__(
        self, space: SerialSpace, *, start: int = 0, stop: int | None = None, resume: dict[str, Any] | None = None
    ) -> None:
        self.space = space
        n = space.count
        if resume is not None:
            start, stop = _check_state(space, resume)
        for name, v in (("start", start), ("stop", stop)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
                raise SearchSpaceError(f"{name} must be a non-negative integer", path=f"$.{name}", value=v)
        self._stop = n if stop is None else min(stop, n)
        self._index = min(start, self._stop)
        self._gen = _walk(space, self._index, self._stop)

    def __iter__(self) -> AssemblyIterator:
        return self

    def __next__(self) -> tuple[str, ...]:
        item = next(self._gen)  # StopIteration ends us too
        self._index += 1
        return item

    def __length_hint__(self) -> int:
        return self._stop - self._index

    @property
    def position(self) -> int:
        """The space position of the next assembly (= how many precede it in the space)."""
        return self._index

    def state(self) -> dict[str, Any]:
        """A small JSON-able dict; ``space.iter(resume=state)`` continues after the last yielded item."""
        return {
            "version": STATE_VERSION,
            "space": self.space.fingerprint,
            "next": self._index,
            "stop": self._stop,
        }


def _check_state(space: SerialSpace, state: Any) -> tuple[int, int]:
    if not isinstance(state, dict):
        raise SearchSpaceError("a resume state must be the dict returned by state()", path="$", value=state)
    if state.get("version") != STATE_VERSION:
        raise SearchSpaceError(
            f"unsupported resume state version (expected {STATE_VERSION})", path="$.version", value=state.get("version")
        )
    if state.get("space") != space.fingerprint:
        raise SearchSpaceError(
            f"the resume state belongs to another search space (this one is {space.fingerprint})",
            path="$.space",
            value=state.get("space"),
        )

    def position(key: str) -> int:
        v = state.get(key)
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= space.count:
            raise SearchSpaceError(f"{key} must be an integer in 0..{space.count}", path=f"$.{key}", value=v)
        return v

    return position("next"), position("stop")


def _walk(space: SerialSpace, start: int, stop: int) -> Iterator[tuple[str, ...]]:
    """Yield assemblies ``start`` .. ``stop - 1`` by a depth-first walk of the automaton.

    Memory: one frame per chain position. States with few completions hand out their cached
    suffix tuples, so the per-assembly work is mostly one tuple concatenation (done in C by map).
    """
    remaining = stop - start
    if remaining <= 0:
        return
    auto = space._auto
    trans, cum, suf = auto.trans, auto.cum, auto.suffixes
    # descend to position `start`
    stack: list[list[Any]] = []  # frames [transitions, chosen k, prefix before the choice]
    prefix: tuple[str, ...] = ()
    s, i = 1, start
    while suf[s] is None:
        c = cum[s]
        k = bisect_right(c, i) - 1
        i -= c[k]
        tr = trans[s]
        stack.append([tr, k, prefix])
        m, s = tr[k]
        prefix = (*prefix, m)
    while True:
        sufs = suf[s]
        assert sufs is not None  # the descent stops at a state with cached suffixes
        left = len(sufs) - i
        if left >= remaining:
            yield from map(prefix.__add__, islice(sufs, i, i + remaining))
            return
        remaining -= left
        yield from map(prefix.__add__, islice(sufs, i, None) if i else sufs)
        i = 0
        # backtrack to the next untried transition, then descend along first choices
        while True:
            frame = stack[-1]  # never empty here: remaining > 0 means more assemblies follow
            tr = frame[0]
            k = frame[1] + 1
            if k < len(tr):
                frame[1] = k
                break
            stack.pop()
        m, s = tr[k]
        prefix = (*frame[2], m)
        while suf[s] is None:
            tr = trans[s]
            stack.append([tr, 0, prefix])
            m, s = tr[0]
            prefix = (*prefix, m)


# -- chromosomes (slot representations with empty slots) -----------------------------------------
def canonical(chromosome: Iterable[str], empty: str = "0") -> tuple[str, ...]:
    """The chain a slot chromosome stands for: its genes with every ``empty`` slot dropped.

    ``canonical("J L1 0 L1 0 0 J".split()) == canonical("J L1 0 0 0 L1 J".split()) == ("J", "L1", "L1", "J")``.
    """
    return tuple(str(g) for g in chromosome if g != empty)


def to_chromosome(ids: Sequence[str], n_slots: int, empty: str = "0") -> tuple[str, ...]:
    """The canonical slot form of a chain: its modules, then ``empty`` up to ``n_slots`` slots."""
    if len(ids) > n_slots:
        raise InputError(f"a chain of {len(ids)} modules does not fit into {n_slots} slots", value=list(ids))
    return (*ids, *(empty,) * (n_slots - len(ids)))


def iter_chromosomes(
    space: SerialSpace, n_slots: int, empty: str = "0", *, strip: tuple[int, int] = (1, 1)
) -> Iterator[tuple[str, ...]]:
    """Each robot of ``space`` whose middle fits into ``n_slots`` slots, once, in canonical slot form.

    ``strip`` drops that many modules from the front and back of each chain first (default: the base
    and the end effector, which a GA usually fixes). Equivalent chromosomes (same genes, empty slots
    elsewhere) are never produced twice: only the form with all empty slots at the end is yielded.
    """
    a, b = strip
    for ids in space:
        genes = ids[a : len(ids) - b]
        if len(genes) <= n_slots:
            yield to_chromosome(genes, n_slots, empty)
