"""The cost-order walk decides many assemblies per Python step (issue 38 item 1) and answers as one by one.

Why: on ``five_joints`` 40,103 assemblies come before the optimum in the cost order and nearly all of them are refused
by a certificate look-up; the walk and the look-up one assembly at a time were ~27 us an assembly, half the shard's
CPU. The walk now ends a chain in one step where its state has few completions
(:func:`~timor_core.search.spaces.cost_order._flat_orders`). These tests hold each batched step to the one-by-one
step it replaces: the same sequence of ``(cost, position, IDs)``.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core.search import SerialSpace, paper_exp2_options
from timor_core.search.spaces import cost_order
from timor_core.search.spaces.cost_order import by_cost_indexed


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
