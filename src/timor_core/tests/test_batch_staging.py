"""The batched look-up's staging by automata (search.filtering.cut_states, issue 38 item 1): an assembly walked
by them has the family, head rows and last row that ``Kept.keep`` makes after a full join, to the last bit, on the
cost order of a task whose optimum has five joints, whatever the order the automata's entries were made in; a
head's distance to a certificate, from its parent's (``batch_distances.head_sum``), is the distance of its rows."""

from __future__ import annotations

import functools
import itertools
import json
import struct
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core import ModulesDB
from timor_core.model.assembly import ModuleAssembly
from timor_core.search import FilterConfig, paper_exp2_space
from timor_core.search.evaluation.evaluate import Evaluator
from timor_core.search.filtering.batch_distances import head_sum
from timor_core.search.filtering.cut_states import CutStates
from timor_core.search.filtering.cut_verdicts import Verdicts
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


def _walked(items: tuple, states: CutStates, numbers: dict) -> list:
    """``CutStates.walk`` of each assembly of ``items`` (the setting's context; ``numbers``: the families numbered,
    per rotations): per assembly its ``(family rotations, head, last row)`` or None where it walks to none."""
    _, _, ctx, proofs = _setting()
    tables = (proofs.segments.kinds, proofs.segments.steps, ctx.join.modules, ctx.join.pairs)
    out = []
    for _, ids in items:
        found = states.walk(ids, tables, lambda rotations, last: numbers.setdefault((*rotations, last), len(numbers)))
        if found is None:
            out.append(None)
            continue
        family, _, _, head, last = found
        rotations = next(key for key, number in numbers.items() if number == family)
        out.append((rotations, states.heads[head], states.lasts[last]))
    return out


def _bits(rows: tuple) -> bytes:
    flat = [x for row in rows for x in row]
    return struct.pack(f"{len(flat)}d", *flat)


@settings(max_examples=30, deadline=None)
@given(start=st.integers(0, N - 1), count=st.integers(1, 400), seed=st.integers(0, 2**32 - 1))
def test_a_walk_of_the_automata_is_the_full_joins_cut(start, count, seed):
    """Any run of the cost order, its assemblies walked in any order (the automata's entries made by others first or
    not): where ``CutStates.walk`` gives an assembly's numbers, its family's rotations, head rows and last row are
    those of ``Kept.keep`` after a full join to the last bit (the rows' bits, numbers by value); it gives them for
    every assembly whose join and segments are known (here: all those ``keep`` keeps)."""
    _, items, ctx, proofs = _setting()
    run = list(items[start : start + count])
    np.random.default_rng(seed).shuffle(run)
    states, numbers, kept = CutStates(), {}, Kept(ctx, None)
    states.clear(0, Verdicts())
    for (_, ids), found in zip(run, _walked(tuple(run), states, numbers), strict=True):
        join = ctx.join(ids)
        made = None if join is None else kept.keep(proofs, ids, join)
        assert (found is None) == (made is None), ids
        if made is not None:
            end = kept.end(*made)
            rotations, head, last = found
            assert rotations == (*made[0].rotations, end[0]), ids
            assert _bits(head.rows) == _bits(made[0].rows) and _bits((last,)) == _bits((end[2],)), ids
            assert head.rotations == made[0].rotations and head.carry == made[0].carry


def _heads(start: int, count: int) -> list:
    """The heads of the automata made by walking ``count`` assemblies of the stream from ``start`` on, in the order
    they were made (each head grown from the one before it by one segment)."""
    states = CutStates()
    states.clear(0, Verdicts())
    _walked(_setting()[1][start : start + count], states, {})
    return [head for head in states.heads if head is not None]


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
    """On one fixed run (what the property test exercises): most heads of the automata are grown from a parent,
    and their rows are the parent's with at most one row more (where ``head_sum`` adds to the parent's)."""
    heads = _heads(0, N)
    grown = [h for h in heads if h.parent is not None]
    assert len(grown) >= len(heads) // 2 > 100
    assert all(h.rows[: len(h.parent.rows)] == h.parent.rows and len(h.rows) - len(h.parent.rows) <= 1 for h in grown)
    assert any(len(h.rows) == len(h.parent.rows) for h in grown)  # (a joint on the line of the one before: merged)
