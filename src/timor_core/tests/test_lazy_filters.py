"""The filters up to ``family`` work from the module IDs (search.filter_state.SerialJoin) and build the assembly only
for candidates that go on: for random ID sequences of both embedded module sets (chains of their spaces, the same
disturbed, and sequences that cannot be assembled) they give the same verdict, reason, cost (to the last bit), DOF
and family cut as building the assembly first; the certificate look-up's float distance is numpy's to the last bit;
and the default chain gives the same verdicts, reasons and costs as a chain that builds every assembly."""

from __future__ import annotations

import json
import math
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import random_placement, reach_test_spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core import ModuleAssembly
from timor_core.errors import TimorError
from timor_core.search import FilterChain, FilterConfig, paper_exp2_space
from timor_core.search.filtering.family_proof import FamilyProofs, cut_chain, distance
from timor_core.search.filtering.filter_state import Candidate, SerialJoin, TaskContext
from timor_core.search.filtering.filters import AssemblyFilter, BoundFilter, FamilyFilter, LimitsFilter
from timor_core.task import Task

TASKS = Path(__file__).parent / "data" / "exp2_tasks"
DBS, SPACES = reach_test_spaces()
COSTS = ["mass", "numJ", "moduleCost", "mass_0.37,numJ_1.3,moduleCost_0.001"]


@st.composite
def id_sequences(draw) -> tuple[str, tuple[str, ...]]:
    """A module set's name and IDs: a chain of its space, maybe disturbed (a module replaced, inserted, removed,
    two swapped, an unknown ID), or modules drawn at random (mostly not a chain)."""
    name = draw(st.sampled_from(sorted(DBS)))
    db, space = DBS[name], SPACES[name]
    all_ids = sorted(db.ids)
    if draw(st.booleans()):
        ids = list(draw(st.lists(st.sampled_from(all_ids), min_size=0, max_size=9)))
    else:
        ids = list(space[draw(st.integers(0, space.count - 1))])
        for _ in range(draw(st.integers(0, 2))):
            how = draw(st.sampled_from(["replace", "insert", "remove", "swap", "unknown"]))
            at = draw(st.integers(0, len(ids) - 1)) if ids else 0
            if how == "replace" and ids:
                ids[at] = draw(st.sampled_from(all_ids))
            elif how == "insert":
                ids.insert(at, draw(st.sampled_from(all_ids)))
            elif how == "remove" and ids:
                del ids[at]
            elif how == "swap" and len(ids) > 1:
                other = draw(st.integers(0, len(ids) - 1))
                ids[at], ids[other] = ids[other], ids[at]
            elif how == "unknown":
                ids.insert(at, "no such module")
    return name, tuple(ids)


def _task() -> Task:
    return Task.from_json_data(json.loads((TASKS / "more_goals.json").read_text()))


TASK = _task()


@settings(max_examples=150, deadline=None)
@given(drawn=id_sequences(), cost=st.sampled_from(COSTS), seed=st.integers(0, 2**31))
def test_the_ids_give_what_the_assembly_gives(drawn, cost, seed):
    """The ``assembly`` filter's verdict and reason, the ``bound`` filter's cost, the DOF and the family cut from
    the IDs are those from the assembly built first."""
    name, ids = drawn
    db = DBS[name]
    placement = random_placement(np.random.default_rng(seed), 0.3) if seed % 2 else None
    ctx = TaskContext(TASK, db, cost, FilterConfig(bound=False))
    ctx.placement = placement
    try:
        eager: ModuleAssembly | None = ModuleAssembly.from_serial_modules(db, ids, placement)
        why = None
    except TimorError as exc:
        eager, why = None, (f"cannot assemble: {type(exc).__name__}", f"cannot assemble: {exc}")
    c = Candidate(ids, ctx)
    ok = AssemblyFilter()(c)
    assert c.assembly is None or eager is None  # built only where the IDs did not join
    if eager is None:
        assert not ok and (c.reason_key, c.reason) == why
        return
    assert ok and c.join is not None
    assert c.join == SerialJoin.of(eager) and c.join.dof == eager.dof
    assert BoundFilter()(c) and c.cost == float(ctx.cost.evaluate_assembly(eager))
    assert LimitsFilter()(c)
    built = c.require_assembly()
    assert built.module_ids == eager.module_ids and built.connections == eager.connections
    assert built.base_connector == eager.base_connector
    # the family cut: from nothing cached, then from segments of other chains (two FamilyProofs, the same history)
    lazy, plain = FamilyProofs([], 1, placement), FamilyProofs([], 1, placement)
    space = SPACES[name]
    for k in np.random.default_rng(seed).integers(0, space.count, 12):
        other = ModuleAssembly.from_serial_modules(db, space[int(k)], placement)
        lazy.cut_serial(tuple(other.module_ids), SerialJoin.of(other), lambda a=other: a)
        plain.cut(other)
    for a, b in ((lazy.cut_serial(ids, c.join, c.require_assembly), plain.cut(eager)),):
        assert (a is None) == (b is None) == (cut_chain(eager, placement) is None)
        if a is not None and b is not None:
            assert a.rotations == b.rotations and a.rows == b.rows
            assert np.array_equal(a.translations, b.translations) and np.array_equal(a.steps, b.steps)
            assert a.rows == tuple(map(tuple, b.translations.tolist()))


@settings(max_examples=200, deadline=None)
@given(
    rows=st.integers(1, 7),
    seed=st.integers(0, 2**31),
    scale=st.sampled_from([1e-6, 1e-3, 0.05, 0.3, 2.0]),
    spread=st.sampled_from([0.0, 1e-9, 1e-4, 0.01, 0.5]),
)
def test_the_float_distance_is_numpys(rows, seed, scale, spread):
    """:func:`distance` gives numpy's sum of row norms to the last bit for fewer than 8 rows (the certificate
    look-up compares it with a margin exactly as ``covers`` compares numpy's), and stops at ``stop``."""
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(rows, 3)) * scale
    b = a + rng.normal(size=(rows, 3)) * spread
    expected = np.sqrt(((a - b) ** 2).sum(axis=1)).sum()
    got = distance(a.tolist(), b.tolist())
    assert got == expected and math.copysign(1.0, got) == math.copysign(1.0, float(expected))
    if expected > 0:
        stop = float(expected) / 2
        partial = distance(a.tolist(), b.tolist(), stop)
        assert stop <= partial <= expected


class _EagerAssembly(AssemblyFilter):
    """The ``assembly`` filter as it was: every assembly built."""

    def __call__(self, c: Candidate) -> bool:
        try:
            c.assembly = ModuleAssembly.from_serial_modules(c.ctx.db, c.ids, c.ctx.placement)
        except TimorError as exc:
            return c.fail(f"cannot assemble: {type(exc).__name__}", f"cannot assemble: {exc}")
        return True


def test_the_chain_gives_what_building_every_assembly_gives():
    """Assemblies spread over experiment 2's space (and some that cannot be assembled), through the filters up to
    ``family`` with the certificates they leave: the same verdicts, reasons and costs whether the assembly filter
    joins the IDs or builds every assembly; the assembly is built only for those that pass."""
    db = DBS["robco_like"]
    space = paper_exp2_space(db)
    config = FilterConfig(family_proof=True)
    lazy = FilterChain(TASK, db, "mass", config, [AssemblyFilter(), BoundFilter(), LimitsFilter(), FamilyFilter()])
    eager = FilterChain(TASK, db, "mass", config, [_EagerAssembly(), BoundFilter(), LimitsFilter(), FamilyFilter()])
    picks = [space[int(k)] for k in np.linspace(0, space.count - 1, 400)]
    picks += [("base", "J", "gripper", "J"), ("J", "base", "gripper"), ("base", "nope", "gripper"), ()]
    built = new_segments = 0
    for ids in picks:
        seen = len(FamilyProofs.of(lazy.ctx).segments.steps) if lazy.ctx.family_proofs is not None else 0
        a, b = lazy(ids), eager(ids)
        assert (a.failed_filter, a.reason_key, a.reason, a.cost) == (b.failed_filter, b.reason_key, b.reason, b.cost)
        assert {k: g.to_json() for k, g in a.goals.items()} == {k: g.to_json() for k, g in b.goals.items()}
        built += a.assembly is not None
        new_segments += len(FamilyProofs.of(lazy.ctx).segments.steps) > seen
    assert lazy.funnel == eager.funnel and lazy.funnel.failed("family") > 100
    assert lazy.funnel.failed("assembly") == 4
    assert built == new_segments < len(picks) / 2  # built only to cut a chain with segments not seen before


def test_a_chain_without_the_assembly_filter_says_so():
    """The filters that read the join or the assembly refuse a candidate no ``assembly`` filter has joined."""
    from timor_core.errors import InputError

    c = Candidate(
        ("base", "J", "gripper"), TaskContext(TASK, DBS["robco_like"], "mass", FilterConfig(family_proof=True))
    )
    for f in (BoundFilter(), LimitsFilter(), FamilyFilter()):
        with pytest.raises(InputError, match="'assembly' filter must come earlier"):
            f(c)
    c.assembly = ModuleAssembly.from_serial_modules(c.ctx.db, c.ids)  # set by another filter: its join is used
    assert BoundFilter()(c) and c.require_join() == SerialJoin.of(c.assembly)


@pytest.mark.parametrize("cost", ["numJ", "mass_2,moduleCost"])
def test_a_cost_without_a_module_sum_is_taken_from_the_assembly(cost):
    """A cost term that is no sum over the modules (``modules_value`` None) is evaluated on the assembly, built
    for it; a sum gives the same value from the modules."""
    from timor_core.task.costs import CostFunction

    class Reach(CostFunction):
        name = "reachLike"
        needs = "assembly"

        def assembly_value(self, assembly):
            return float(len(assembly.connections)) * 0.1

    db = DBS["robco_like"]
    ids = ("base", "J", "L_100", "J", "gripper")
    for fn, expected_built in ((Reach(), True), (CostFunction.from_descriptor(cost), False)):
        c = Candidate(ids, TaskContext(TASK, db, fn, FilterConfig(bound=False)))
        assert AssemblyFilter()(c) and BoundFilter()(c)
        eager = ModuleAssembly.from_serial_modules(db, ids)
        assert c.cost == float(fn.evaluate_assembly(eager)) and (c.assembly is not None) == expected_built


@settings(max_examples=60, deadline=None)
@given(
    ids=st.lists(st.sampled_from(["base", "J", "L_100", "I_300", "gripper", "x"]), min_size=1, max_size=12),
    seed=st.one_of(st.integers(0, 2**32 + 5), st.just(0), st.integers(2**63, 2**64)),
    stage=st.sampled_from(["ik", "ik_task", "torques", "joint_limits", "robot"]),
    goal=st.integers(0, 40),
    attempt=st.integers(0, 5),
)
def test_a_candidates_generator_is_that_of_its_words_as_a_list(ids, seed, stage, goal, attempt):
    """``Candidate.rng`` hands numpy its entropy words as a uint32 array (faster to coerce than a list of ints): the
    generator is the one of the same words as a list, its state and its draws, for any assembly, seed (wider than 32
    bits: masked), stage, goal and attempt."""
    c = Candidate(tuple(ids), None, seed=seed)  # type: ignore[arg-type]  (rng reads only the IDs and the seed)
    got = c.rng(stage, goal, attempt)
    crc = zlib.crc32("\0".join(ids).encode())
    stages = {"ik": 1, "ik_task": 2, "torques": 3, "joint_limits": 4}
    want = np.random.default_rng([seed & 0xFFFFFFFF, crc, stages.get(stage, 0), goal, attempt])
    assert got.bit_generator.state == want.bit_generator.state
    assert got.random(4).tobytes() == want.random(4).tobytes()
