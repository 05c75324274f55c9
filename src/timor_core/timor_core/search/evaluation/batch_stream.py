"""The one-worker stream of a cost-ordered search in batches: the certificate look-up's refusals decided and counted
many at a time (issue 38, item 1).

Why: in one process each assembly of the cost order went through ~10 Python layers (the stream's loops, the stop
test twice, the evaluator, an :class:`~.evaluate.Evaluation`, two funnels), several times the look-up itself, and
on ``five_joints`` 99 % of its 40,103 assemblies are refused by that look-up. :func:`stream_priced` takes the
stream (:class:`PricedItems`) in batches while no bound is known (no valid assembly yet, no bound given: the stop
rule of the cost order cannot hold and nothing is cut by the bound): the first assemblies of a batch the look-up
refuses (:class:`~.batch_decide.BatchLookup`) are counted at once (:class:`Refusals`), the next one is taken as
``ParallelEvaluator`` takes it one at a time, with its stop tests. The answers, counts and funnel are those of one
at a time (``tests/test_batch_decide.py``); only the funnel's seconds are the batch's.
"""

from __future__ import annotations

import contextlib
import gc
import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from timor_core.search.filtering.batch_decide import BATCH

__all__ = ["GC_YOUNG", "PricedItems", "Refusals", "collector_eased", "stream_priced"]

#: allocations between collections of the youngest generation during a walk (Python's: 700). ``five_joints``' and
#: ``obstacles_4``'s searches leave fewer than this alive (at 20,000 the collector ran 5 and 2 times, ~0.02-0.03 s:
#: each run scans every object the walk keeps, the kept heads' dictionaries and the frontier), so none runs during
#: them; a longer walk's cyclic garbage still goes every this many allocations (bounded memory)
GC_YOUNG = 200_000


class PricedItems:
    """``(seq, ids)`` of a cost-ordered stream of ``(price, ids)``, numbered from ``first``; ``last`` is the price of
    the last one taken (the cost order's stop rule reads it). :meth:`peek` looks ahead without taking."""

    def __init__(self, ranked: Iterable[tuple[float, Sequence[str]]], first: int = 0) -> None:
        self.ranked = iter(ranked)
        self.seq, self.last = first, -math.inf
        self.ahead: list[tuple[float, Sequence[str]]] = []

    def __iter__(self) -> PricedItems:
        return self

    def __next__(self) -> tuple[int, Sequence[str]]:
        item = self.ahead.pop(0) if self.ahead else next(self.ranked)
        self.last, seq = item[0], self.seq
        self.seq += 1
        return seq, item[1]

    def peek(self, n: int) -> list[tuple[float, Sequence[str]]]:
        """The next ``n`` (or fewer: the rest) ``(price, ids)``, not taken."""
        if len(self.ahead) < n:
            self.ahead.extend(islice(self.ranked, n - len(self.ahead)))
        return self.ahead[:n]

    def skip(self, n: int) -> None:
        """Take the next ``n`` (peeked) without returning them."""
        self.last = self.ahead[n - 1][0]
        del self.ahead[:n]
        self.seq += n


@dataclass
class Refusals:
    """``count`` assemblies in a row refused by the certificate look-up (the family filter), counted without their
    evaluations: their reason keys counted and the seconds (CPU taken as wall, as ``Evaluator.certified`` does)."""

    count: int
    reasons: dict[str, int]
    seconds: float

    def __len__(self) -> int:
        return self.count


@contextlib.contextmanager
def collector_eased() -> Iterator[None]:
    """A cost order's walk with Python's garbage collector eased (unless it is off or something is frozen already):
    what is alive at the start is frozen (it lives through the walk: no need to look at it again and again) and the
    youngest generation is collected every ``GC_YOUNG`` allocations instead of 700 (the walk's short-lived tuples);
    as before afterwards, with what the walk left alive in the oldest generation (frozen and unfrozen at once: the
    next allocation would otherwise collect the youngest generation, all of the walk's kept heads, answers and
    frontier, ~0.03 s on ``five_joints``, just before they are dropped; cyclic garbage among them goes at the next
    full collection). ``five_joints``' shard: the collector's CPU during the walk 0.08 s -> 0.02 s -> 0."""
    if not gc.isenabled() or gc.get_freeze_count():
        yield
        return
    saved = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(max(saved[0], GC_YOUNG), *saved[1:])
    try:
        yield
    finally:
        gc.set_threshold(*saved)
        gc.freeze()  # (the young with the rest: unfrozen into the oldest generation, not scanned by the next young one)
        gc.unfreeze()


def stream_priced(
    local: Any, items: PricedItems, bound: Callable[[], float], stop: Callable[[], bool], batch: int = BATCH
) -> Iterator[Any]:
    """``ParallelEvaluator.stream`` of ``items`` with one worker (``local``: its ``Evaluator``): lists of
    evaluations, and :class:`Refusals` (module docstring). ``stop()`` is tested before each assembly is taken and
    again before it is evaluated, as one at a time; within a run of refusals (where only the deadline can end it)
    once per batch. The garbage collector is eased meanwhile (:func:`collector_eased`)."""
    with collector_eased():
        yield from _priced(local, items, bound, stop, batch)


def _priced(
    local: Any, items: PricedItems, bound: Callable[[], float], stop: Callable[[], bool], batch: int
) -> Iterator[Any]:
    """:func:`stream_priced`'s loop."""
    lookup = local.lookup
    while not stop():
        if lookup.on and bound() == math.inf:
            chunk = items.peek(batch)
            if not chunk:
                return
            n, reasons, spent = lookup.refused(chunk, math.inf)
            if n:
                items.skip(n)
                yield Refusals(n, reasons, spent)
                if n == len(chunk) or stop():
                    continue
        item = next(items, None)  # one at a time: ParallelEvaluator._uncut's and _stream_here's steps
        if item is None:
            return
        seq, ids = item
        ev = local.cut(ids, bound(), seq)
        if ev is not None:
            yield [ev]
            continue
        if stop():
            return
        yield [local(ids, bound(), seq)]
