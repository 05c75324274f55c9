"""The batched look-up's cheaper staging (search.filtering.kept_heads ``Kept.grow``, issue 38 item 1): a head grown
from its kept parent with the joiner's pairs read so far is the head, tail and last segment that ``Kept.keep`` makes
after a full join, to the last bit, on the cost order of a task whose optimum has five joints; where it cannot (a
parent, pair or segment not known yet, the limits or the bound) it says so and the caller takes the full way. A
head's distance to a certificate, from its parent's (``batch_distances.head_sum``), is the distance of its rows."""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core import ModulesDB
from timor_core.model.assembly import ModuleAssembly
from timor_core.search import FilterConfig, paper_exp2_space
from timor_core.search.evaluation.evaluate import Evaluator
from timor_core.search.filtering.batch_distances import head_sum
from timor_core.search.filtering.family_proof import FamilyProofs, distance
from timor_core.search.filtering.kept_heads import Kept
from timor_core.search.spaces.cost_order import by_cost
from timor_core.task import Task

TASKS = Path(__file__).parent / "data" / "exp2_tasks"
N = 3000


@functools.lru_cache(maxsize=1)
def _setting() -> tuple:
    """The first ``N`` assemblies of ``obstacle_middle``'s cost order and a look-up's context whose segments are
    all known for them (each one cut once): ``(db, items, ctx, proofs)``."""
    db = ModulesDB.from_name("robco_like")
    task = Task.from_json_data(json.loads((TASKS / "obstacle_middle.json").read_text()))
    items = tuple(itertools.islice(by_cost(paper_exp2_space(db), "mass"), N))
    ctx = Evaluator(task, db, "mass", FilterConfig(family_proof=True))._certified.ctx
    proofs = FamilyProofs.of(ctx)
    for _, ids in items:
        join = ctx.join(ids)
        if join is not None:
            proofs.cut_serial(ids, join, lambda ids=ids: ModuleAssembly.from_serial_modules(db, ids, ctx.placement))
    return db, items, ctx, proofs


def _same(a: tuple | None, b: tuple | None, kept_a: Kept, kept_b: Kept) -> None:
    """Two ``(head, tail key, last segment)`` are the same: every field of the heads (the steps' arrays to the
    last bit), the key, the segment and the tail kept for it."""
    assert (a is None) == (b is None)
    if a is None or b is None:
        return
    (ha, ka, la), (hb, kb, lb) = a, b
    assert ka == kb and la is lb
    assert kept_a.tails[ka] == kept_b.tails[kb]
    plain = ("modules", "entry", "dof", "keys", "rotations", "rows", "carry")
    assert [getattr(ha, f) for f in plain] == [getattr(hb, f) for f in plain]
    assert all(x is y for x, y in zip(ha.segments, hb.segments, strict=True)) and len(ha.segments) == len(hb.segments)
    assert len(ha.parts) == len(hb.parts)
    for p, q in zip(ha.parts, hb.parts, strict=True):
        assert p.dtype == q.dtype and np.array_equal(p, q)


def _grown(start: int, step: int, count: int, most: int) -> int:
    """Keep the heads of ``count`` assemblies from ``start`` on, every ``step``-th, once with ``Kept.keep`` after a
    full join and once with ``Kept.grow`` where it can (else ``keep``), the bound and limits passing those of at
    most ``most`` modules; every one the same (:func:`_same`). How many new heads ``grow`` made."""
    _, items, ctx, proofs = _setting()
    full, fast = Kept(ctx, None), Kept(ctx, None)
    grown = 0
    for _, ids in items[start : start + step * count : step]:
        join = ctx.join(ids)
        if join is None or len(ids) > most:
            assert fast.grow(proofs, ids, ctx.join, lambda n, dof: n <= most) is None
            continue
        a = full.keep(proofs, ids, join)
        heads = len(fast.heads)
        b = fast.grow(proofs, ids, ctx.join, lambda n, dof: n <= most)
        grown += len(fast.heads) - heads
        if b is None:
            b = fast.keep(proofs, ids, join)
        _same(a, b, full, fast)
        assert fast.known(proofs, ids) is not None if b is not None else True
    return grown


@settings(max_examples=30, deadline=None)
@given(start=st.integers(0, N - 1), step=st.integers(1, 7), count=st.integers(1, 600), most=st.integers(3, 12))
def test_a_head_grown_from_its_parent_is_the_head_kept_after_a_full_join(start, step, count, most):
    """Any run of the cost order (every ``step``-th assembly, so that a head's parent is kept or not): where
    ``grow`` gives a head, tail and last segment, they are ``keep``'s after the full join (fields, arrays to the last
    bit); where the limits or the bound refuse an assembly, ``grow`` keeps nothing for it."""
    _grown(start, step, count, most)


def test_most_heads_of_the_cost_order_are_grown():
    """On one fixed run (what the property test exercises, whatever hypothesis draws): most new heads are grown from
    their parents, not joined in full."""
    _, items, ctx, proofs = _setting()
    heads = Kept(ctx, None)
    for _, ids in items:
        join = ctx.join(ids)
        if join is not None:
            heads.keep(proofs, ids, join)
    assert _grown(0, 1, N, 12) >= len(heads.heads) // 2 > 100


def _heads(start: int, count: int) -> list:
    """The heads of ``count`` assemblies of the stream from ``start`` on, grown from their parents where they can be
    (else kept after a full join), in the stream's order (each once)."""
    _, items, ctx, proofs = _setting()
    kept, out = Kept(ctx, None), {}
    for _, ids in items[start : start + count]:
        join = ctx.join(ids)
        if join is not None:
            found = kept.grow(proofs, ids, ctx.join, lambda n, dof: True) or kept.keep(proofs, ids, join)
            if found is not None:
                out[id(found[0])] = found[0]
    return list(out.values())


@settings(max_examples=30, deadline=None)
@given(
    start=st.integers(0, N - 1),
    count=st.integers(1, 500),
    seed=st.integers(0, 2**32 - 1),
    order=st.sampled_from(["walk", "reversed", "shuffled"]),
)
def test_a_heads_distance_from_its_parents_is_the_distance_of_its_rows(start, count, seed, order):
    """``head_sum`` of a head (its parent's sum, kept on the parent, plus the row the head adds) to a certificate's
    rows is ``distance`` of the head's rows to the last bit, for certificates near the heads' rows (their rows moved
    a little) whose margins are drawn or equal to a partial sum of a head's distance (where ``distance`` stops
    exactly there), whatever order the heads are asked in (parents' sums kept first or not)."""
    heads = _heads(start, count)
    rng = np.random.default_rng(seed)
    if order == "reversed":
        heads.reverse()
    elif order == "shuffled":
        heads = [heads[i] for i in rng.permutation(len(heads))]
    serials = itertools.count(1 << 40)
    certificates: dict[int, list] = {}  # per count of rows: (serial, rows, margin)
    for head in heads:
        rows = len(head.rows)
        if rows not in certificates:
            certificates[rows] = []
            for _ in range(4):
                model = heads[int(rng.integers(len(heads)))].rows
                if len(model) < rows:
                    model = head.rows
                rest = [[v + float(rng.normal(0.0, 0.05)) for v in row] for row in model[:rows]]
                margin = float(rng.uniform(0.0, 0.6))
                if rng.integers(2):  # (a partial sum: distance stops at it exactly)
                    k = int(rng.integers(1, rows + 1))
                    margin = distance(rest[:k], head.rows[:k])
                certificates[rows].append((next(serials), rest, margin))
        for serial, rest, margin in certificates[rows]:
            assert head_sum(head, serial, rest, margin) == distance(rest, head.rows, margin)


def test_most_heads_of_the_cost_order_have_a_parent_whose_sums_their_own_extend():
    """On one fixed run (what the property test exercises): most heads are grown from a parent, and their rows are
    the parent's with at most one row more (where ``head_sum`` adds to the parent's)."""
    heads = _heads(0, N)
    grown = [h for h in heads if h.parent is not None]
    assert len(grown) >= len(heads) // 2 > 100
    assert all(h.rows[: len(h.parent.rows)] == h.parent.rows and len(h.rows) - len(h.parent.rows) <= 1 for h in grown)
    assert any(len(h.rows) == len(h.parent.rows) for h in grown)  # (a joint on the line of the one before: merged)


def test_a_run_is_kept_per_entry_connector():
    """``Kept.grow``'s runs (how the modules from a head's parent's joint on join) are kept per IDs and the
    connector the first is entered by: the same IDs entered otherwise join otherwise (another entry for the last
    joint), and each is read from the joiner once (a joiner that joins the same modules in two ways by entry)."""
    _, _, ctx, _ = _setting()
    kept = Kept(ctx, None)
    units = {"J": ("joint", 1, None), "L": ("link", 0, None), "E": ("end", 0, None)}
    pairs = {("J", "a", "L"): "p", ("L", "p", "J"): "q", ("J", "q", "E"): "r",
             ("J", "b", "L"): "s", ("L", "s", "J"): "t", ("J", "t", "E"): "u"}  # fmt: skip
    ids = ("B", "J", "L", "J", "E")
    joiner = SimpleNamespace(modules=units, pairs=pairs)
    a, b = kept.run(ids, 1, 3, "a", joiner), kept.run(ids, 1, 3, "b", joiner)
    assert a == ("q", ("link", "joint"), 1, ("end",), 0) and b == ("t", ("link", "joint"), 1, ("end",), 0)
    joiner.pairs = {}  # (read once: kept)
    assert kept.run(ids, 1, 3, "a", joiner) == a and kept.run(ids, 1, 3, "b", joiner) == b
    assert kept.run(ids, 1, 3, "c", joiner) is None and len(kept.runs) == 2  # (a pair not read: nothing kept)
