"""The cost-order walk decides many assemblies per Python step (issue 38 item 1) and answers as one by one.

Why: on ``five_joints`` 40,103 assemblies come before the optimum in the cost order and nearly all of them are refused
by a certificate look-up; the walk and the look-up one assembly at a time were ~27 us an assembly, half the shard's
CPU. The walk now ends a chain in one step where its state has few completions
(:func:`~timor_core.search.spaces.cost_order._flat_order`), and a kept head tries first the certificate that
covered its last member (``kept_heads.Kept.certified``). These tests hold each to the one-by-one step it replaces:
the same sequence of ``(cost, position, IDs)``, the same answer of the look-up.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core import ModulesDB
from timor_core.model.assembly import ModuleAssembly
from timor_core.search import FilterConfig, SerialSpace, paper_exp2_options, paper_exp2_space
from timor_core.search.evaluation.evaluate import Evaluator
from timor_core.search.filtering import family_proof
from timor_core.search.filtering.family_proof import FamilyProofs, Lesson
from timor_core.search.spaces import cost_order
from timor_core.search.spaces.cost_order import by_cost, by_cost_indexed
from timor_core.task import Task

TASKS = Path(__file__).parent / "data" / "exp2_tasks"


def _space(db, **changes) -> SerialSpace:
    return SerialSpace(db, dataclasses.replace(paper_exp2_options(), **changes))


def _walk(space: SerialSpace, flat: int, cost: str, start: int, stop: int | None, shard) -> list:
    saved = cost_order.FLAT
    cost_order.FLAT = flat
    try:
        return list(by_cost_indexed(space, cost, start, stop, shard=shard))
    finally:
        cost_order.FLAT = saved


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    dof_max=st.integers(1, 3),
    links=st.integers(0, 1),
    cost=st.sampled_from(["mass", "numJ", "moduleCost", "mass,numJ_0.3", "mass_0.1,moduleCost_-1"]),
    flat=st.sampled_from([1, 2, 5, 17, 256]),
    start=st.integers(0, 300),
    length=st.one_of(st.none(), st.integers(0, 2000)),
    shard=st.one_of(st.none(), st.tuples(st.integers(0, 2), st.integers(2, 3)).filter(lambda s: s[0] < s[1])),
)
def test_a_chain_ended_in_one_step_gives_the_walk_one_module_at_a_time(
    robco, dof_max, links, cost, flat, start, length, shard
):
    """Completions taken as one extension (any cap on their number) give the very sequence the walk gives one
    module at a time (cap 0), shards and slices included: costs to the last bit, positions, IDs."""
    space = _space(robco, dof_max=dof_max, max_links_between_joints=links, max_links_after_last_joint=links)
    stop = None if length is None else start + length
    assert _walk(space, flat, cost, start, stop, shard) == _walk(space, 0, cost, start, stop, shard)


def test_the_experiment_2_walk_takes_five_joint_arms_in_the_same_order(robco):
    """The walk of the paper's space (its deepest states have the five-joint arms' tails), unsharded and in two
    shards, is the one-module-at-a-time walk for its first 8,000 assemblies."""
    space = _space(robco)
    for shard in (None, (1, 2)):
        flat = list(zip(range(8_000), by_cost_indexed(space, "mass", shard=shard)))
        saved = cost_order.FLAT
        cost_order.FLAT = 0
        try:
            plain = list(zip(range(8_000), by_cost_indexed(space, "mass", shard=shard)))
        finally:
            cost_order.FLAT = saved
        assert flat == plain


@pytest.mark.parametrize("flat", [0, 256])
def test_the_walk_with_or_without_flat_completions_is_sorted(robco, flat):
    """Both walks release in ascending ``(cost, position)`` (a flat completion is not released early)."""
    space = _space(robco, dof_max=3)
    ranked = _walk(space, flat, "mass", 0, None, None)
    assert len(ranked) == space.count
    assert [(c, i) for c, i, _ in ranked] == sorted((c, i) for c, i, _ in ranked)


@functools.lru_cache(maxsize=1)
def _heads() -> tuple:
    """The first 3,000 assemblies of experiment 2's space in cost order (``obstacle_middle``'s optimum has five
    joints) grouped by head (modules up to the last joint), heads of at least three: ``(db, items, groups)``."""
    db = ModulesDB.from_name("robco_like")
    items = tuple(itertools.islice(by_cost(paper_exp2_space(db), "mass"), 3000))
    groups: dict[tuple[str, ...], list[int]] = {}
    for k, (_, ids) in enumerate(items):
        at = max(i for i, m in enumerate(ids) if db.by_id(m).joints)
        groups.setdefault(ids[: at + 1], []).append(k)
    return db, items, tuple(tuple(g) for g in groups.values() if len(g) >= 3)


def _one_by_one(cr, proofs, ids: tuple[str, ...], bound: float) -> tuple | None:
    """The look-up without kept heads or hints: the whole chain's join, price, cut and ``proofs.certified``."""
    ctx = cr.ctx
    join = ctx.join(ids)
    price = ctx.cost.evaluate_modules(join.modules)
    if not cr.passes(len(ids), join.dof, price, bound):
        return None
    cut = proofs.cut_serial(ids, join, lambda: ModuleAssembly.from_serial_modules(ctx.db, ids, ctx.placement))
    found = None if cut is None else proofs.certified(cut)
    return None if found is None else (float(price), found.goal)


HINTED: list[int] = []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["look", "look", "learn", "flood"]),
            st.integers(0, 10**6),  # which head (of two an example)
            st.integers(0, 10**6),  # which of its assemblies
            st.sampled_from([0, 0, 1]),  # the goal a certificate is for
            st.floats(0.01, 0.4),  # its margin
            st.sampled_from([math.inf, math.inf, 0.5]),  # the bound (0.5: just above the assembly's cost)
        ),
        min_size=10,
        max_size=200,
    ),
    first=st.integers(0, 10**6),
    cap=st.sampled_from([4, 6, 8192]),
)
def test_a_heads_covering_certificate_tried_first_gives_the_one_by_one_answer(monkeypatch, ops, first, cap):
    """Members of a few heads looked up in any order with certificates learnt between them (at a member's own
    translations, any margin, goal 0 or 1) and, with a cap of 4 or 6 certificates a family and goal, the older half
    of them forgotten again and again (``flood``: as many certificates far away): every answer of the look-up
    (which tries the certificate that covered a head's last member first) is the one-by-one look-up's (cost and
    first goal covered, or none)."""
    monkeypatch.setattr(family_proof, "MAX_CERTIFICATES", cap)
    db, items, heads = _heads()
    task = Task.from_json_data(json.loads((TASKS / "obstacle_middle.json").read_text()))
    cr = Evaluator(task, db, "mass", FilterConfig(family_proof=True))._certified
    proofs, place = FamilyProofs.of(cr.ctx), cr.ctx.placement
    plain = proofs.certified
    calls = [0]

    def counted(cut):
        calls[0] += 1
        return plain(cut)

    proofs.certified = counted  # type: ignore[method-assign]
    looks = 0
    for op, h, member, goal, margin, bound in ops:
        group = heads[(first + h % 2) % len(heads)]
        price, ids = items[group[member % len(group)]]
        bound = bound if bound != 0.5 else price + 0.5
        if op == "look":
            before = calls[0]
            found = cr.decision(ids, bound, price)
            looks += calls[0] == before and found is not None
            assert found == _one_by_one(cr, proofs, ids, bound), ids
        elif op == "flood":  # certificates far away, as many as the cap: the family's older half is forgotten
            cut = proofs.cut_serial(ids, cr.ctx.join(ids), lambda: ModuleAssembly.from_serial_modules(db, ids, place))
            if cut is not None:
                proofs.learn([Lesson(goal, cut.rotations, cut.translations + 10.0, margin)] * min(cap, 8))
        else:
            cut = proofs.cut_serial(ids, cr.ctx.join(ids), lambda: ModuleAssembly.from_serial_modules(db, ids, place))
            if cut is not None:
                proofs.learn([Lesson(goal, cut.rotations, cut.translations, margin)])
    HINTED.append(looks)


def test_the_property_tests_look_ups_are_answered_from_hints():
    """The property test above, run on ten op lists drawn as its strategy draws them but from a fixed seed (so the
    count does not depend on the examples hypothesis drew in this run, nor on whether the property test ran before
    in this worker): some of its look-ups are answered from a head's hint alone, so it tests the hints."""
    rng = np.random.default_rng(0)
    HINTED.clear()
    inner = test_a_heads_covering_certificate_tried_first_gives_the_one_by_one_answer.hypothesis.inner_test  # type: ignore[attr-defined]
    for _ in range(10):
        ops = [
            (
                str(rng.choice(["look", "look", "learn", "flood"])),
                int(rng.integers(10**6)),
                int(rng.integers(10**6)),
                int(rng.choice([0, 0, 1])),
                float(rng.uniform(0.01, 0.4)),
                float(rng.choice([math.inf, math.inf, 0.5])),
            )
            for _ in range(int(rng.integers(10, 201)))
        ]
        with pytest.MonkeyPatch.context() as patch:
            inner(monkeypatch=patch, ops=ops, first=int(rng.integers(10**6)), cap=int(rng.choice([4, 6, 8192])))
    assert sum(HINTED) >= 20, HINTED
