"""The exact prices and the release side of the cost-ordered walk (:func:`~.cost_order.by_cost_indexed`).

The walk (:mod:`~.cost_order`) pops partial chains by an exact integer key; here each complete chain gets the very
float :meth:`~timor_core.task.costs.CostFunction.evaluate_serial` gives (:func:`price_function`: the same arithmetic
without the cost's layers) and leaves in ``(float cost, position)`` order when nothing left can come before it, a
band of keys at a time (:class:`Bands`): a flat state's completions (sorted already) below the band's limit priced
in one list, the band released by one sort.
"""

from __future__ import annotations

import bisect
import functools
import heapq
import logging
import sys
from collections.abc import Callable
from fractions import Fraction
from itertools import repeat
from math import lcm
from operator import add, mul
from typing import Any

from timor_core.search.spaces.space import post_order
from timor_core.task.costs import ComposedCost, CostFunction, ModuleCost, NumJoints, RobotMass

__all__ = [
    "BAND",
    "FLAT_END",
    "FOLDS",
    "Bands",
    "chain_of",
    "cheapest_completions",
    "plain_term",
    "price_function",
    "term_sizes",
]

logger = logging.getLogger(__name__)

EPS = 2.0**-52
FLAT_END = -1
"""The next state of a flat order's completion (:func:`~.cost_order._flat_order`): the end, told apart from a
module's step to the terminal state (0) by the walk's loop without reading the step."""
Ranked = tuple[float, int, tuple[str, ...]]  # (cost, space position, module IDs)


def term_sizes(db: Any, cost: CostFunction) -> tuple[dict[str, Fraction], bool]:
    """Each module's sum over the cost's terms of ``|weight * value|`` (the float error of a chain's cost grows with
    these, not with the module's net value: terms that cancel leave a net value near 0 and the terms' rounding), and
    whether every such term value is an integer."""
    sizes: dict[str, Fraction] = {}
    integral = True
    for module in db:
        total = Fraction(0)
        for t in cost.terms:
            part = Fraction(t.weight) * Fraction(t.modules_value([module]) or 0.0)  # not None: additive_values
            integral = integral and part.denominator == 1
            total += abs(part)
        sizes[module.id] = total
    return sizes, integral


def cheapest_completions(
    trans: Any, values: dict[str, Fraction], sizes: dict[str, Fraction]
) -> tuple[int, dict[str, int], list, int, float]:
    """For the walk: the common denominator of the modules' values, each module's value in its units, the cheapest
    completion of each state (in those units), the longest chain and the largest sum of the terms' sizes
    (:func:`term_sizes`) over chains."""
    scale = 1
    for v in values.values():
        scale = lcm(scale, v.denominator)
    unit = {m: int(v * scale) for m, v in values.items()}
    n = len(trans)
    cheapest: list[int | None] = [None] * n  # cheapest completion of each state, in units of 1/scale
    largest = [Fraction(0)] * n  # largest sum of the terms' sizes over the completions (for the float error bound)
    depth = [0] * n
    cheapest[0] = 0
    for s in post_order(trans):
        cheapest[s] = min(unit[m] + cheapest[b] for m, b in trans[s])  # type: ignore[operator]
        largest[s] = max(sizes[m] + largest[b] for m, b in trans[s])
        depth[s] = 1 + max(depth[b] for _, b in trans[s])
    return scale, unit, cheapest, depth[1], float(largest[1])


_MODULE_VALUE: dict[type, str] = {RobotMass: "mass", NumJoints: "dof", ModuleCost: "cost"}  # what modules_value sums


def plain_term(cost: CostFunction, db: Any) -> tuple[float, Callable[[str], Any]] | None:
    """``(weight, module ID -> value)`` if ``cost`` is exactly :class:`RobotMass`, :class:`NumJoints` or
    :class:`ModuleCost` (whose ``evaluate_modules`` is ``weight * float(sum(values))``), else None."""
    name = _MODULE_VALUE.get(type(cost))
    return None if name is None else (cost.weight, {m.id: getattr(m, name) for m in db}.__getitem__)


def price_function(cost: CostFunction, db: Any) -> Callable[[tuple[str, ...]], float]:
    """A function of a chain's module IDs giving the very float :meth:`CostFunction.evaluate_serial` gives, by its
    own arithmetic without the layers: for a :func:`plain_term` ``weight * float(sum(values))`` over the same
    module values in the same order (``sum`` of a ``map`` adds what ``sum`` of the list adds); for their
    :class:`ComposedCost` of weight 1 the terms' floats summed as :meth:`ComposedCost.modules_value` sums them; any
    other cost through ``evaluate_modules``."""
    if type(cost) is ComposedCost and cost.weight == 1.0:  # its terms are its own (reweighted by 1.0: the same)
        parts = [plain_term(t, db) for t in cost.terms]
        sums = tuple(p for p in parts if p is not None)
        if len(sums) == len(parts):
            return lambda ids: 1.0 * float(sum([w * float(sum(map(get, ids))) for w, get in sums]))
    plain = plain_term(cost, db)
    if plain is not None:
        weight, get = plain
        return lambda ids: weight * float(sum(map(get, ids)))
    modules = {m.id: m for m in db}

    def layered(ids: tuple[str, ...]) -> float:
        value = cost.evaluate_modules([modules[m] for m in ids])  # (evaluate_serial's, without its look-ups)
        return float(value) if value is not None else float(cost.evaluate_serial(db, ids))

    return layered


def chain_of(link: Any) -> tuple[str, ...]:
    """The module IDs of a frontier entry's linked list ``(m, rest)``."""
    ids: list[str] = []
    while link is not None:
        m, link = link
        ids.append(m)
    ids.reverse()
    return tuple(ids)


class Bands:
    """The walk's complete chains, priced and released in ``(float cost, position)`` order, a band of keys at a
    time: the frontier's entries with keys below a limit are popped in the walk's order (a flat state's completions
    below it all at once: :meth:`completions`), their chains priced into ``held``, which is sorted (in C) and
    released up to what the frontier's least key can still give (exactly, for integer sums; else with the float
    margin ``slack``). The order is the one sort of every chain by ``(float cost, position)``: a chain leaves only
    when nothing left can come before it, and ``held`` is sorted. The band's width (in key units) doubles while a
    band gives fewer than :data:`BAND` chains (the first: the least key alone, so that taking a few assemblies walks
    little further) and halves when it gives :data:`BAND_MOST`, where a band ends early (the walk stays lazy and
    small whatever the keys' spacing; where a band ends does not change the order, only how far it walked).

    ``frontier``: the walk's (:func:`~.cost_order.by_cost_indexed`'s: ``heap``, ``entry``, ``start``, ``stop``)."""

    def __init__(self, frontier: Any, cost: CostFunction, db: Any, scale: int, exact: bool,
                 margin: tuple[int, int, float]) -> None:  # fmt: skip
        self.heap, self.entry = frontier.heap, frontier.entry
        self.start, self.stop = frontier.start, frontier.stop
        self.price_of, self.fold = price_function(cost, db), _fold(cost, db)
        self.scale, self.exact = scale, exact
        self.depth, self.terms, self.magnitude = margin  # (longest chain, terms, largest sum of term sizes)
        self.slack = 0.0 if exact else self.widened(self.magnitude)
        self.held: list[Ranked] = []  # priced chains not released yet
        self.flat_columns: dict[int, tuple] = {}  # id of a flat order -> its columns (:meth:`columns`)
        self.kept: list[tuple] = []
        self.width = 1  # of the next band, in key units

    def widened(self, magnitude: float) -> float:
        """The float margin for sums of terms of at most ``magnitude``."""
        return 4.0 * (self.depth + self.terms + 4) * EPS * magnitude + 1e-300

    def limit(self) -> int:
        """The key below which the next band takes the frontier's entries."""
        return self.heap[0][0] + self.width

    def release(self, made: int) -> list[Ranked]:
        """After a band that priced ``made`` chains: the held chains nothing left can come before, in order."""
        self.width = self.width * 2 if made < BAND else max(1, self.width // 2) if made >= BAND_MOST else self.width
        held, heap = self.held, self.heap
        held.sort()  # ((cost, position) decide: positions differ)
        if not heap:
            self.held = []
            return held
        top = heap[0]
        cut = bisect.bisect_left(held, (top[0] / self.scale - self.slack, top[1] if self.exact else -1))
        out = held[:cut]
        del held[:cut]
        return out

    def completions(self, top: tuple, limit: int) -> None:
        """Price the completions of a flat state (:func:`~.cost_order._flat_order`; ``top``'s ``link`` is ``(IDs,
        [prefix IDs, their values' sum once known])``) from ``top`` on whose keys are below ``limit``, in the range;
        put the next on the frontier. For a weight of 1 on float values (mass) each chain is made in one step from its
        completion's row (values, offset, IDs): one chain alone (~40 % of the calls on ``five_joints``) without a
        list, more in one comprehension; other folds by :meth:`priced`."""
        _, _, _, _, link, length, steps, pos, value, base = top
        parent = link[1]
        keys, offsets, ids, _, rows = self.flat_columns.get(id(steps)) or self.columns(steps)
        end = bisect.bisect_left(keys, limit - value, pos)
        if base < self.start or base + len(keys) > self.stop:  # (offsets are 0 .. len - 1)
            self.ranged(top, end)
            return
        if not rows:
            self.priced(top, end)
        else:  # price_function's arithmetic, written out, the prefix's sum once (FOLDS): sum(values, prefix's sum)
            if len(parent) == 1:  # (the prefix's sum, once a prefix: ``_Frontier.expand`` leaves it to be added)
                parent.append(sum(map(self.fold[1], parent[0])))  # type: ignore[index]
            prefix, start = parent
            if end == pos + 1:
                v, o, i = rows[pos]
                self.held.append((sum(v, start), base + o, prefix + i))
            else:
                self.held += [(sum(v, start), base + o, prefix + i) for v, o, i in rows[pos:end]]
            if self.exact:
                made = self.held[len(self.held) - (end - pos) :]  # (the chains just made)
                self.check([value + step for step in keys[pos:end]], [r[0] for r in made], [r[2] for r in made])
        if end < len(keys):  # the next completion, as Frontier.entry makes it
            key = value + keys[end]
            heapq.heappush(self.heap, (key, base + offsets[end], FLAT_END, key, (ids[end], parent), length, steps, end,
                                       value, base))  # fmt: skip

    def priced(self, top: tuple, end: int) -> None:
        """:meth:`completions`' chains from ``top`` to ``end`` (all in the range) for a cost without a fold or with
        a weight: lists made in C (``map``, ``zip``)."""
        _, _, _, _, link, _, steps, pos, value, base = top
        parent = link[1]
        prefix = parent[0]
        keys, offsets, ids, values, _ = self.flat_columns[id(steps)]
        chains = list(map(add, repeat(prefix), ids[pos:end]))
        if self.fold is None:
            prices: Any = map(self.price_of, chains)
        else:  # price_function's arithmetic, written out, the prefix's sum once (FOLDS)
            if len(parent) == 1:  # (the prefix's sum, once a prefix: ``_Frontier.expand`` leaves it to be added)
                parent.append(sum(map(self.fold[1], prefix)))
            prices = map(sum, values[pos:end], repeat(parent[1]))
            if self.fold[0] is not None:  # (a weight of 1 on floats: weight * float(x) is x)
                prices = map(self.fold[0], map(float, prices))
        if self.exact:
            prices = list(prices)
            self.check([value + step for step in keys[pos:end]], prices, chains)
        self.held += zip(prices, map(add, offsets[pos:end], repeat(base)), chains)

    def ranged(self, top: tuple, end: int) -> None:
        """:meth:`completions` of a flat state whose completions are not all in the range: those up to ``end``
        that are, one at a time; the next in the range on the frontier."""
        _, _, _, _, link, length, steps, pos, value, base = top
        parent, start, stop = link[1], self.start, self.stop
        for k in range(pos, end):
            if start <= base + steps[k][1] < stop:
                chain = parent[0] + steps[k][2]
                price = self.price_of(chain)
                if self.exact:
                    self.check([value + steps[k][0]], [price], [chain])
                self.held.append((price, base + steps[k][1], chain))
        following = self.entry(steps, end, value, base, parent, length - 1)
        if following is not None:
            heapq.heappush(self.heap, following)

    def columns(self, steps: tuple) -> tuple[list[int], list[int], list[tuple[str, ...]], list[tuple], list[tuple]]:
        """A flat order's key steps, offsets, IDs, (for :attr:`fold`) its modules' values and (for a fold without
        a weight) its rows ``(values, offset, IDs)`` (made once a flat order)."""
        columns = self.flat_columns.get(id(steps))
        if columns is None:
            get = self.fold[1] if self.fold is not None else None
            values = [tuple(map(get, e[2])) for e in steps] if get is not None else []
            offsets, ids = [e[1] for e in steps], [e[2] for e in steps]
            rows = list(zip(values, offsets, ids)) if self.fold is not None and self.fold[0] is None else []
            columns = ([e[0] for e in steps], offsets, ids, values, rows)
            self.flat_columns[id(steps)] = columns
            self.kept.append(steps)  # (its id stays its own)
        return columns

    def leaf(self, top: tuple) -> None:
        """Price the complete chain ``top`` (walked one module at a time); put its next sibling on the frontier."""
        key, first, _, _, link, length, steps, pos, parent_value, parent_first = top
        chain = chain_of(link)
        price = self.price_of(chain)
        if self.exact:
            self.check([key], [price], [chain])
        self.held.append((price, first, chain))
        sibling = self.entry(steps, pos + 1, parent_value, parent_first, link[1], length - 1)
        if sibling is not None:
            heapq.heappush(self.heap, sibling)

    def check(self, keys: list[int], prices: list[float], chains: list[tuple[str, ...]]) -> None:
        """An integer sum's float is its key; if not (it cannot happen), order by the float safely from now on."""
        for key, price, chain in zip(keys, prices, chains):
            if price != key:
                logger.warning("cost order: %r costs %r, not %d; ordering with a float margin", chain, price, key)
                self.exact = False
                self.slack = self.widened(max(self.magnitude, abs(price)))
                return


def _fold(cost: CostFunction, db: Any) -> tuple[Callable[[float], float] | None, Callable[[str], Any]] | None:
    """For a :func:`plain_term` where ``sum`` folds (:data:`FOLDS`): ``(the weight's product or None for a weight of
    1 on float values, module ID -> value)``; else None."""
    plain = plain_term(cost, db) if FOLDS else None
    if plain is None:
        return None
    weight, get = plain
    unweighted = weight == 1.0 and all(type(get(m.id)) is float for m in db)
    return (None if unweighted else functools.partial(mul, weight)), get


BAND = 1024
"""A band of the walk's keys takes about this many chains at least (:class:`Bands`; its width doubles until then)."""
BAND_MOST = 4 * BAND
"""A band ends once it has priced this many chains (a larger one walked further than asked and sorted more: 40,103
assemblies of experiment 2's space took 96-111 ms of CPU with 16,384 or 65,536, 72 ms with 4,096)."""


FOLDS = sys.version_info < (3, 12) and sum([1e100, 1.0, -1e100]) == 0.0
"""``sum`` adds left to right in plain floats (CPython up to 3.11; 3.12 compensates), its running value all it
carries: ``sum(b, sum(a)) == sum(a + b)``, so a chain's sum is its prefix's sum plus its completion's values."""
