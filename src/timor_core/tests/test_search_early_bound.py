"""The bound applied before an assembly is built (Evaluator.cut, ParallelEvaluator's stream): costs summed from
the modules equal the assembly's to the last bit, and searches give the same results, funnels and verdicts with
and without it (1 and 2 workers), on test_search's synthetic task."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search import FAST, SMALL, known_qs, known_robot, space, task  # noqa: F401  (fixtures)

from timor_core import ModuleAssembly, ModulesDB
from timor_core.search import Evaluator, ExhaustiveSearch, SerialSpace
from timor_core.search.evaluation.evaluate import Evaluation
from timor_core.task.costs import CostFunction

DB = ModulesDB.from_name("robco_like")
SPACE = SerialSpace(DB, SMALL)


@settings(max_examples=60, deadline=None)
@given(
    index=st.integers(0, SPACE.count - 1), descriptor=st.sampled_from(["mass", "numJ", "moduleCost", "mass_0.7,numJ_2"])
)
def test_cost_from_the_modules_equals_the_assemblys_exactly(index, descriptor):
    ids = SPACE[index]
    cost = CostFunction.from_descriptor(descriptor)
    quick = cost.evaluate_modules([DB.by_id(m) for m in ids])
    assert quick == cost.evaluate_assembly(ModuleAssembly.from_serial_modules(DB, ids))  # bit-equal, not approx


def test_costs_that_need_the_assembly_or_a_trajectory_give_none():
    modules = [DB.by_id(m) for m in ("base", "J", "gripper")]
    assert CostFunction.from_descriptor("cyc").evaluate_modules(modules) is None
    assert CostFunction.from_descriptor("mass,cyc").evaluate_modules(modules) is None


def test_cut_says_what_the_bound_filter_says(task, robco):  # noqa: F811
    ev = Evaluator(task, robco, "mass", FAST)
    ids = SPACE[5]
    mass = ModuleAssembly.from_serial_modules(robco, ids).mass
    assert ev.cut(ids, mass + 1e-9) is None  # cheaper than the bound: evaluate in full
    cut = ev.cut(ids, mass, seq=7)
    assert isinstance(cut, Evaluation)
    full = Evaluator(task, robco, "mass", FAST)
    full._early_bound = False  # the filter chain's own verdict
    ref = full(ids, mass, seq=7)
    assert (cut.valid, cut.cost, cut.failed_filter, cut.reason, cut.reason_key, cut.seq) == (
        ref.valid,
        ref.cost,
        ref.failed_filter,
        ref.reason,
        ref.reason_key,
        ref.seq,
    )
    assert ev.cut(("base", "nope", "gripper"), 0.0) is None  # unknown module: the assembly filter names it


@pytest.mark.parametrize("workers", [1, 2])
@pytest.mark.parametrize("order", ["space", "cost"])
def test_searches_are_the_same_with_and_without_the_early_bound(space, task, robco, monkeypatch, workers, order):  # noqa: F811
    def search():
        return ExhaustiveSearch(space, filters=FAST, workers=workers, progress=False, order=order).optimize(task, robco)

    fast = search()
    with monkeypatch.context() as m:
        m.setattr(Evaluator, "cut", lambda self, ids, bound, seq=-1: None)
        slow = search()
    assert (fast.best_ids, fast.best_cost, fast.best_seq, fast.stopped) == (
        slow.best_ids,
        slow.best_cost,
        slow.best_seq,
        slow.stopped,
    )
    if workers > 1 and order == "cost":  # shards: how far each walks past the best depends on when it learns it
        assert min(fast.evaluations, slow.evaluations) >= fast.best_seq + 1 - workers
        return
    assert fast.evaluations == slow.evaluations
    if workers > 1:  # which assemblies meet a lowered bound depends on when the workers report: only results
        return
    for name in fast.funnel.names:
        assert fast.funnel.entered[name] == slow.funnel.entered[name], name
        assert fast.funnel.reasons[name] == slow.funnel.reasons[name], name
    if order == "space":
        assert fast.funnel.failed("bound") > 0


def test_evaluate_serial_builds_the_assembly_only_when_it_must():
    class Modules(CostFunction):  # an assembly-level cost that is not a sum over module properties
        name = "modules"
        needs = "assembly"

        def assembly_value(self, assembly):
            return float(len(assembly.module_ids)) ** 2

    ids = SPACE[7]
    assert Modules().evaluate_modules([DB.by_id(m) for m in ids]) is None
    assert Modules(2.0).evaluate_serial(DB, ids) == 2.0 * len(ids) ** 2
    mass = CostFunction.from_descriptor("mass")
    assert mass.evaluate_serial(DB, ids) == mass.evaluate_assembly(ModuleAssembly.from_serial_modules(DB, ids))
