"""The batched look-up's cheaper staging (search.filtering.kept_heads ``Kept.grow``, issue 38 item 1): a head grown
from its kept parent with the joiner's pairs read so far is the head, tail and last segment that ``Kept.keep`` makes
after a full join, to the last bit, on the cost order of a task whose optimum has five joints; where it cannot (a
parent, pair or segment not known yet, the limits or the bound) it says so and the caller takes the full way."""

from __future__ import annotations

import functools
import itertools
import json
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core import ModulesDB
from timor_core.model.assembly import ModuleAssembly
from timor_core.search import FilterConfig, paper_exp2_space
from timor_core.search.evaluation.evaluate import Evaluator
from timor_core.search.filtering.family_proof import FamilyProofs
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
