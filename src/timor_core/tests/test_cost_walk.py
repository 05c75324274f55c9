"""The cost order's walk prices and releases its chains a band of keys at a time (issue 38 item 1).

Why: the walk took ~4 us an assembly of CPU one assembly at a time (a heap pop, a sibling push, the cost through
``CostFunction``'s layers, a reorder heap), and ``five_joints`` walks 40,103 assemblies before its optimum. Now a
flat state's completions below a band's limit are priced in one list (``cost_walk.Bands``: ``evaluate_serial``'s
own arithmetic, ``cost_walk.price_function``) and the band is released by one sort. These tests hold the stream to
its definition: every assembly of the range (or of the shard) sorted by ``(evaluate_serial, position)``, the shards
dealt as the walk's definition deals them, any band size; and each price to ``evaluate_serial``'s float, bit for bit.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import struct
from fractions import Fraction

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core import ModulesDB
from timor_core.search import SerialSpace, paper_exp2_options
from timor_core.search.spaces import cost_order, cost_walk
from timor_core.search.spaces.cost_order import (
    additive_values,
    by_cost_indexed,
    by_cost_indexed_batches,
    shard_of,
    split_depth,
)
from timor_core.task.costs import CostFunction, ModuleCost, NumJoints, RobotMass

# (dof_max, links): 1 .. 1,463 assemblies (robco), and slices of bigger ones (a flat state below a prefix, not the root)
SHAPES = [(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (3, 0), (3, 1), (3, 2), (5, 1)]
WEIGHTS = st.one_of(
    st.sampled_from([1.0, -1.0, 0.1, 0.3, 2.5, 1e-9, 7.0, 0.0]),
    st.floats(-10, 10, allow_nan=False, allow_infinity=False),
)


def _bits(x: float) -> bytes:
    return struct.pack("<d", x)


@functools.cache
def _loaded() -> ModulesDB:
    """robco_like as loaded, never handed out (nothing computed on it): what ``_db`` copies (loading the set took
    ~12 ms of CPU, a copy ~1 ms; the tests below ask for ~160 sets of other masses)."""
    return ModulesDB.from_name("robco_like")


@functools.lru_cache(maxsize=64)
def _db(masses: tuple[float, ...] | None) -> ModulesDB:
    """robco_like, its modules' masses replaced by ``masses`` (None: as they are): non-integer ones with long binary
    expansions, integer ones (the walk's exact case) and ties."""
    if masses is None:
        return ModulesDB.from_name("robco_like")
    db = copy.deepcopy(_loaded())
    for module, mass in zip(db, masses):
        module.__dict__["mass"] = mass  # (Module.mass is a cached property)
    return db


def _space(db: ModulesDB, shape: tuple[int, int]) -> SerialSpace:
    dof, links = shape
    options = dataclasses.replace(
        paper_exp2_options(), dof_max=dof, max_links_between_joints=links, max_links_after_last_joint=links
    )
    return SerialSpace(db, options)


def _plain(space: SerialSpace, cost: CostFunction, positions) -> list:
    """The definition: the assemblies at ``positions`` sorted by ``(evaluate_serial, position)``."""
    return sorted((cost.evaluate_serial(space.db, space[i]), i, tuple(space[i])) for i in positions)


def _cheapest(trans, values: dict, s: int, memo: dict) -> Fraction:
    if s not in memo:
        memo[s] = Fraction(0) if s == 0 else min(values[m] + _cheapest(trans, values, b, memo) for m, b in trans[s])
    return memo[s]


def _dealt(space: SerialSpace, cost: CostFunction, start: int, stop: int, k: int) -> dict[int, int]:
    """The shard of each position by the walk's definition (``cost_order._best_first``), written out: the chains
    shorter than the split (``split_depth``) whose subtrees meet the range, by (exact key, first position, length);
    each one's extensions in transition order; those of the split's length, and the complete ones, numbered as met
    and dealt by ``shard_of`` of their number."""
    auto = space._auto
    trans, cum, counts = auto.trans, auto.cum, auto.counts
    values = additive_values(space.db, cost)
    split, memo = split_depth(trans, k), {}
    chains, stack = [], [(1, Fraction(0), 0, 0)]  # (state, value, first position, length)
    while stack:
        s, value, lo, length = stack.pop()
        if s == 0 or length >= split or lo + counts[s] <= start or lo >= stop:
            continue
        chains.append((value + _cheapest(trans, values, s, memo), lo, length, s))
        stack += [(b, value + values[m], lo + cum[s][j], length + 1) for j, (m, b) in enumerate(trans[s])]
    shard, number = {}, 0
    for _, lo, length, s in sorted(chains):
        for j, (_, b) in enumerate(trans[s]):
            first = lo + cum[s][j]
            if first + counts[b] <= start or first >= stop or not (length + 1 == split or b == 0):
                continue
            number += 1
            shard.update((i, shard_of(number, k)) for i in range(max(first, start), min(first + counts[b], stop)))
    return shard


@st.composite
def costs(draw) -> CostFunction:
    """Additive costs: one term or several, weighted (a composed cost's own weight too: the layered pricing)."""
    kinds = draw(st.lists(st.sampled_from([RobotMass, NumJoints, ModuleCost]), min_size=1, max_size=3))
    terms = [kind(draw(WEIGHTS)) for kind in kinds]
    cost = terms[0] if len(terms) == 1 else sum(terms[1:], terms[0])
    return draw(st.sampled_from([cost, 2.5 * cost, -cost])) if len(terms) > 1 else cost


MASSES = st.one_of(
    st.none(),
    st.lists(st.floats(0.01, 5, allow_nan=False), min_size=13, max_size=13).map(tuple),
    st.lists(st.integers(0, 4).map(float), min_size=13, max_size=13).map(tuple),  # integers: exact keys, many ties
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    masses=MASSES,
    shape=st.sampled_from(SHAPES),
    cost=costs(),
    start=st.integers(0, 2**31),
    length=st.one_of(st.none(), st.integers(0, 1500)),
    shards=st.integers(1, 3),
    band=st.sampled_from([(1, 1), (1, 4), (3, 12), (64, 256), (cost_walk.BAND, cost_walk.BAND_MOST)]),
    flat=st.sampled_from([0, 2, cost_order.FLAT]),
    prefixes=st.sampled_from([1, 5, cost_order.SPLIT_PREFIXES]),
)
def test_the_stream_is_the_plain_sort_and_the_shards_are_dealt_as_defined(
    monkeypatch, masses, shape, cost, start, length, shards, band, flat, prefixes
):
    """Any additive cost (non-integer and integer masses, weighted and composed terms, ties), any range, any number
    of shards, any band sizes and flat-state cap: each shard's stream is its positions sorted by ``(evaluate_serial,
    position)``, to the last bit; the shards' positions are the range's, dealt as the walk's definition deals them;
    the lists of ``by_cost_indexed_batches`` one after the other are the stream."""
    monkeypatch.setattr(cost_walk, "BAND", band[0])
    monkeypatch.setattr(cost_walk, "BAND_MOST", band[1])
    monkeypatch.setattr(cost_order, "FLAT", flat)
    monkeypatch.setattr(cost_order, "SPLIT_PREFIXES", prefixes)
    space = _space(_db(masses), shape)
    start = start % space.count if space.count > 2000 else start % 200
    if length is None:  # the rest of a small space; 1,500 of a big one
        length = space.count if space.count <= 2000 else 1500
    stop = min(space.count, start + length)
    dealt = _dealt(space, cost, start, stop, shards) if shards > 1 else dict.fromkeys(range(start, stop), 0)
    assert sorted(dealt) == list(range(start, stop))
    for r in range(shards):
        shard = (r, shards) if shards > 1 else None
        stream = [(p, i, tuple(ids)) for p, i, ids in by_cost_indexed(space, cost, start, stop, shard=shard)]
        mine = [i for i in range(start, stop) if dealt[i] == r]
        expected = _plain(space, cost, mine)
        assert [(_bits(p), i, ids) for p, i, ids in stream] == [(_bits(p), i, ids) for p, i, ids in expected]
        lists = list(by_cost_indexed_batches(space, cost, start, stop, shard=shard))
        assert all(lists) and [(p, i, tuple(ids)) for b in lists for p, i, ids in b] == stream


@settings(max_examples=200, deadline=None)
@given(
    masses=MASSES,
    cost=costs(),
    chain=st.lists(st.integers(0, 12), min_size=1, max_size=14),
)
def test_the_price_is_evaluate_serials_float(masses, cost, chain):
    """``price_function`` (the arithmetic of ``evaluate_serial`` without the layers) gives its very float, and so
    does the band's price of a completion (its prefix summed once, where ``sum`` folds)."""
    db = _db(masses)
    ids = tuple(db.ids[k] for k in chain)
    expected = cost.evaluate_serial(db, ids)
    assert _bits(cost_walk.price_function(cost, db)(ids)) == _bits(expected)
    fold = cost_walk.plain_term(cost, db)
    if cost_walk.FOLDS and fold is not None:
        weight, get = fold
        for cut in range(len(ids)):
            price = weight * float(sum(map(get, ids[cut:]), sum(map(get, ids[:cut]))))
            assert _bits(price) == _bits(expected)


@pytest.mark.skipif(not cost_walk.FOLDS, reason="sum compensates on this Python (3.12+): nothing is folded")
@given(st.lists(st.one_of(st.floats(allow_nan=False), st.integers(-(2**70), 2**70)), max_size=12), st.integers(0, 12))
def test_sum_folds_where_the_walk_says_so(values, cut):
    """``FOLDS``: ``sum`` of a list is ``sum`` of its tail started from ``sum`` of its head (floats, ints, mixed)."""
    head, tail = values[:cut], values[cut:]
    whole, folded = sum(values), sum(tail, sum(head))
    assert type(whole) is type(folded)
    assert whole == folded or (whole != whole and folded != folded)
    if isinstance(whole, float):
        assert _bits(whole) == _bits(folded) or whole != whole


def test_the_first_list_is_short_and_the_lists_stay_bounded(robco):
    """Taking one assembly of experiment 2's space walks one band of the least key (not the space), and no list is
    longer than a band can make (``BAND_MOST`` plus one flat state's completions plus what was held)."""
    space = SerialSpace(robco, paper_exp2_options())
    lists = by_cost_indexed_batches(space, "mass")
    first = next(lists)
    assert 1 <= len(first) <= 8
    sizes = [len(b) for _, b in zip(range(40), lists)]
    assert max(sizes) <= 2 * cost_walk.BAND_MOST + cost_order.FLAT
