"""The assemblies of a search space cheapest first, streamed: memory grows with what is taken, not with the space.

The constrained exhaustive search in cost order (``ExhaustiveSearch(order="cost")``, ``timor paper exp2``) used to
price every assembly of the space and sort the list: 4.3 M assemblies took 1.2 GB before the first evaluation,
15 M ran out of memory, whatever ``--limit`` said. :func:`by_cost` gives the same sequence lazily.

For costs that are sums over the modules (mass, numJ, moduleCost and their weighted sums: the terms marked
``additive``) it is a best-first walk of the space's automaton: a partial chain is keyed by its cost so far plus the
cheapest completion of its state (exact, in integers: every float is a dyadic rational), so complete chains come
out cheapest first, ties in space order. Each chain's cost is then the very float
:meth:`~timor_core.task.costs.CostFunction.evaluate_serial` gives (what the old sort used), and a chain is released
only when nothing left can have a smaller float cost, so the order is the old one exactly, float rounding included
(:mod:`~.cost_walk`: chains priced and released a band of keys at a time). Taking ``n`` assemblies costs at most
about ``2 * n * depth`` heap operations (a state with few completions takes them as its extensions: a chain reaching
it ends in one step, :func:`_flat_order`) and keeps the frontier of the walk (at most one entry per chain popped: a
chain's extensions are put on it one by one, cheapest first), never the space.

Other costs (a term that builds the assembly) are priced in passes over the space, keeping only the next ``chunk``
cheapest: bounded memory, one pass per ``chunk`` assemblies taken.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import math
import operator
from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

from timor_core.errors import TimorError
from timor_core.search.spaces import cost_walk
from timor_core.search.spaces.cost_walk import FLAT_END, Bands, chain_of, cheapest_completions, term_sizes
from timor_core.search.spaces.space import SerialSpace
from timor_core.task.costs import CostFunction
from timor_core.task.feedback import assembly_cost

__all__ = [
    "BATCH",
    "SPLIT_PREFIXES",
    "additive_values",
    "by_cost",
    "by_cost_indexed",
    "by_cost_indexed_batches",
    "shard_of",
    "split_depth",
]

logger = logging.getLogger(__name__)

_Ranked = tuple[float, int, tuple[str, ...]]  # (cost, space position, module IDs)


def additive_values(db: Any, cost: CostFunction) -> dict[str, Fraction] | None:
    """Each module's exact contribution to ``cost`` if every term is a sum over module properties, else None."""
    terms = cost.terms
    if not terms or not all(getattr(t, "additive", False) for t in terms):
        return None
    out: dict[str, Fraction] = {}
    for module in db:
        total = Fraction(0)
        for t in terms:
            value = t.modules_value([module])
            if value is None or not math.isfinite(value) or not math.isfinite(t.weight):
                return None
            total += Fraction(t.weight) * Fraction(value)
        out[module.id] = total
    return out


def by_cost(
    space: SerialSpace,
    cost: CostFunction | str | None = "mass",
    start: int = 0,
    stop: int | None = None,
    *,
    base_placement: Any = None,
    chunk: int = 100_000,
) -> Iterator[tuple[float, tuple[str, ...]]]:
    """``(cost, ids)`` of the assemblies at space positions ``start .. stop - 1``, cheapest first (ties: space
    order; an assembly whose cost cannot be computed last), lazily; equal to sorting them all by
    ``evaluate_serial``."""
    ranked = by_cost_indexed(space, cost, start, stop, base_placement=base_placement, chunk=chunk)
    return map(operator.itemgetter(0, 2), ranked)  # (price, ids) of each (in C: no generator step an assembly)


def shard_of(index: int, shards: int) -> int:
    """The shard (``0 .. shards - 1``) of space position ``index``: a multiplicative hash, so that neighbours in
    the space (which share most modules and so cost and verdict) spread evenly over the shards."""
    return (((index * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF) >> 32) % shards


def by_cost_indexed(
    space: SerialSpace,
    cost: CostFunction | str | None = "mass",
    start: int = 0,
    stop: int | None = None,
    **options: Any,
) -> Iterator[tuple[float, int, tuple[str, ...]]]:
    """:func:`by_cost` with each assembly's space position: ``(cost, index, ids)``, ascending in ``(cost,
    index)``. ``options``: :func:`by_cost_indexed_batches`' keywords (``base_placement``, ``chunk``, ``shard``);
    ``shard=(r, k)`` keeps the positions of shard ``r`` of ``k`` (:func:`shard_of`) only: the ``k`` shards'
    sequences interleaved by ``(cost, index)`` are the whole sequence."""
    return itertools.chain.from_iterable(by_cost_indexed_batches(space, cost, start, stop, **options))


def by_cost_indexed_batches(
    space: SerialSpace,
    cost: CostFunction | str | None = "mass",
    start: int = 0,
    stop: int | None = None,
    *,
    base_placement: Any = None,
    chunk: int = 100_000,
    shard: tuple[int, int] | None = None,
) -> Iterator[list[tuple[float, int, tuple[str, ...]]]]:
    """:func:`by_cost_indexed` in lists, for a consumer that decides many assemblies a step: the lists one after
    the other are that very sequence. An additive cost's walk gives what each band of keys releases
    (:class:`~.cost_walk.Bands`: the first band is the least key alone; then about :data:`~.cost_walk.BAND`
    assemblies); other costs' lists are 1, 2, 4, ... up to :data:`BATCH` long. Either way taking a few assemblies
    walks the space little further than they."""
    cost_function = assembly_cost(cost if cost is not None else "mass")
    stop = space.count if stop is None else min(stop, space.count)
    if start >= stop:
        return iter(())
    sharded = shard is not None and shard[1] > 1
    values = additive_values(space.db, cost_function)
    if values is None:
        keep = (lambda i, r=shard[0], k=shard[1]: shard_of(i, k) == r) if sharded else None  # type: ignore[index]
        return _in_lists(_passes(space, cost_function, start, stop, base_placement, max(1, int(chunk)), keep))
    return _best_first(space, cost_function, values, start, stop, shard if sharded else None)


def _in_lists(items: Iterator[_Ranked]) -> Iterator[list[_Ranked]]:
    """``items`` in lists of 1, 2, 4, ... up to :data:`BATCH`."""
    size = 1
    while True:
        batch = list(itertools.islice(items, size))
        if not batch:
            return
        yield batch
        size = min(2 * size, BATCH)


SPLIT_PREFIXES = 512
"""A sharded walk deals out the subtrees below its module sequences of one length: the least length with at least
this many sequences per shard (so that a subtree is small against a shard's work)."""


def split_depth(trans: Any, shards: int) -> int:
    """The length of the module sequences whose subtrees a sharded walk hands out (:data:`SPLIT_PREFIXES`)."""
    level, depth = {1: 1}, 0  # state -> how many sequences of this length end in it
    while level and depth < 256:
        depth += 1
        following: dict[int, int] = {}
        total = 0
        for s, paths in level.items():
            for _, b in trans[s]:
                total += paths
                if b != 0:
                    following[b] = following.get(b, 0) + paths
        if total >= SPLIT_PREFIXES * shards:
            return depth
        level = following
    return depth


def _sibling_orders(trans: Any, cum: Any, counts: Any, unit: dict[str, int], cheapest: list) -> list[tuple]:
    """For each state, its transitions in the order the walk takes them: by the cheapest key below them, then by
    position (what the heap's ``(key, first index)`` would give): ``(key step, offset, module, next state, count,
    transition number, the module's value)``."""
    out: list[tuple] = []
    for s, moves in enumerate(trans):
        steps = [(unit[m] + cheapest[b], cum[s][k], m, b, counts[b], k, unit[m]) for k, (m, b) in enumerate(moves)]
        out.append(tuple(sorted(steps, key=lambda e: (e[0], e[1]))))
    return out


class _Frontier:
    """The best-first walk's frontier: entries ``(key, first index, state, prefix value, prefix ids as a linked list
    (m, rest), length, the parent's extensions in walk order, this one's place among them, the parent's value and
    first index)``; a chain's extensions go on it one at a time (:func:`_best_first`)."""

    def __init__(
        self, auto: Any, unit: dict[str, int], cheapest: list, start: int, stop: int, shard: tuple[int, int] | None
    ) -> None:
        self.trans, self.counts, self.cum = auto.trans, auto.counts, auto.cum
        self.start, self.stop = start, stop
        self.mine: int = shard[0] if shard is not None else 0
        self.shards: int = shard[1] if shard is not None else 1
        self.split = split_depth(self.trans, self.shards) if self.shards > 1 else 0
        self.orders = _sibling_orders(self.trans, self.cum, self.counts, unit, cheapest)
        self.suffixes, self.unit = auto.suffixes, unit
        self.flat: list[tuple | None] = [_UNSEEN] * len(self.trans)  # per state, made when first reached
        self.dealt = 0  # subtrees (and shorter chains) dealt out so far
        self.heap: list[tuple] = [(cheapest[1], 0, 1, 0, None, 0, (), 0, 0, 0)]

    def entry(self, steps: tuple, at: int, value: int, first: int, link: Any, length: int) -> tuple | None:
        """The frontier entry of the first extension of the chain ``link`` from ``steps[at]`` on that lies in the
        range (None: none does)."""
        for pos in range(at, len(steps)):
            step, offset, m, b, count, _, gain = steps[pos]
            lo = first + offset
            if lo + count > self.start and lo < self.stop:
                return (value + step, lo, b, value + gain, (m, link), length + 1, steps, pos, value, first)
        return None

    def expand(self, top: tuple) -> None:
        """Put the next sibling and the cheapest extension of the popped chain ``top`` (not complete) on the frontier
        (:func:`_best_first`)."""
        key, first, s, value, link, length, steps, pos, parent_value, parent_first = top
        sibling = self.entry(steps, pos + 1, parent_value, parent_first, link[1] if link is not None else None,
                             length - 1)  # fmt: skip
        if sibling is not None:
            heapq.heappush(self.heap, sibling)
        steps = self.extensions(s, first, length)
        if steps and steps[0][2].__class__ is tuple:  # its completions: their chains share this one's IDs
            link = [chain_of(link)]  # (and the sum of their values, added by ``Bands.completions`` once)
        child = self.entry(steps, 0, value, first, link, length)
        if child is not None:
            heapq.heappush(self.heap, child)

    def extensions(self, s: int, first: int, length: int) -> tuple:
        """The extensions of a chain of ``length`` modules in state ``s`` this shard walks, in walk order: its
        completions (:func:`_flat_order`) where it has few and nothing below it is dealt to shards."""
        if length >= self.split:
            flat = self.flat[s]
            if flat is _UNSEEN:
                flat = self.flat[s] = _flat_order(self.suffixes[s], self.unit) if s != 0 else None
            return flat or self.orders[s]
        own = set()
        for k, (_, b) in enumerate(self.trans[s]):  # dealt in transition order, as the walk reaches them
            lo = first + self.cum[s][k]
            if lo + self.counts[b] <= self.start or lo >= self.stop:
                continue
            if length + 1 == self.split or b == 0:
                self.dealt += 1
                if shard_of(self.dealt, self.shards) != self.mine:
                    continue
            own.add(k)
        return tuple(e for e in self.orders[s] if e[5] in own)


FLAT = 256
"""A state with at most this many completions has them as its extensions (:func:`_flat_order`)."""


_UNSEEN = ()  # (a state whose flat order was not made yet)


def _flat_order(suffixes: tuple | None, unit: dict[str, int]) -> tuple | None:
    """A state's completions as its extensions in walk order if it has at most :data:`FLAT` (else None):
    :func:`_sibling_orders`' entries with a tuple of IDs for the module and :data:`FLAT_END` for the next, so a
    chain reaching the state walks to its end in one step, its frontier entries one per completion taken (not one
    per module), the same order. Made for a state when the walk first reaches it."""
    if suffixes is None or len(suffixes) > FLAT:
        return None
    steps = []
    for k, ids in enumerate(suffixes):  # a completion's offset is its place in space order
        value = sum([unit[m] for m in ids])
        steps.append((value, k, ids, FLAT_END, 1, k, value))
    return tuple(sorted(steps, key=lambda e: (e[0], e[1])))


BATCH = 512
"""The most assemblies :func:`by_cost_indexed_batches` gives in one list for a cost priced in passes (the first
lists are shorter: 1, 2, 4, ...)."""


def _best_first(
    space: SerialSpace,
    cost: CostFunction,
    values: dict[str, Fraction],
    start: int,
    stop: int,
    shard: tuple[int, int] | None,
) -> Iterator[list[_Ranked]]:
    """The best-first walk (module docstring), in lists. ``shard=(r, k)``: only shard r's subtrees, those below
    the module sequences of length :func:`split_depth` (and shorter complete chains) dealt to it by :func:`shard_of`
    of their number as the walk reaches them: every shard walks the shorter sequences in the same order (by key), so
    each deals the same way, and neighbours in the cost order (alike in the work they take) spread over the shards
    (in turn, siblings of one kind would all go to one shard).

    A popped chain puts only its cheapest extension and its own next sibling (in the order of
    :func:`_sibling_orders`) on the frontier, not every extension: a sibling cannot come out before the one
    before it, so the order is the same, and the frontier grows by at most one entry per chain popped. The
    complete chains are priced and released a band of keys at a time (:class:`~.cost_walk.Bands`)."""
    sizes, integral = term_sizes(space.db, cost)
    scale, unit, cheapest, depth, magnitude = cheapest_completions(space._auto.trans, values, sizes)
    exact = integral and magnitude < 2.0**50  # integer terms and sums: every float on the way is exact
    walk = _Frontier(space._auto, unit, cheapest, start, stop, shard)  # the compiled space (as AssemblyIterator)
    bands = Bands(walk, cost, space.db, scale, exact, (depth, len(cost.terms), magnitude))
    heap, pop, expand, flat, leaf = walk.heap, heapq.heappop, walk.expand, bands.completions, bands.leaf
    while heap:
        limit, held = bands.limit(), bands.held
        before = len(held)
        most = before + cost_walk.BAND_MOST  # (a band ends there)
        while heap and heap[0][0] < limit and len(held) < most:
            top = pop(heap)
            if top[2] > 0:
                expand(top)
            elif top[2]:  # a flat state's completion (FLAT_END)
                flat(top, limit)
            else:
                leaf(top)
        out = bands.release(len(held) - before)
        if out:
            yield out


def _passes(
    space: SerialSpace,
    cost: CostFunction,
    start: int,
    stop: int,
    base_placement: Any,
    chunk: int,
    keep: Callable[[int], bool] | None = None,
) -> Iterator[tuple[float, int, tuple[str, ...]]]:
    """Cheapest first for any cost, in passes over the space keeping the next ``chunk`` only (bounded memory)."""
    after: tuple[float, int] | None = None
    while True:
        worst: list[tuple[float, int, tuple[str, ...]]] = []  # max-heap of the chunk (negated keys)
        for k, ids in enumerate(space.iter(start=start, stop=stop)):
            if keep is not None and not keep(start + k):
                continue
            try:
                price = float(cost.evaluate_serial(space.db, ids, base_placement))
            except TimorError:
                price = math.inf
            if price != price:
                price = math.inf
            index = start + k
            if after is not None and (price, index) <= after:
                continue
            if len(worst) < chunk:
                heapq.heappush(worst, (-price, -index, ids))
            elif (price, index) < (-worst[0][0], -worst[0][1]):
                heapq.heapreplace(worst, (-price, -index, ids))
        if not worst:
            return
        batch = sorted((-p, -i, ids) for p, i, ids in worst)
        worst = []
        yield from batch
        after = (batch[-1][0], batch[-1][1])
        if len(batch) < chunk:
            return
