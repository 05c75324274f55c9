"""The family filter's certificate look-up without the chain (search.filtering.certified): the evaluator's
verdicts, costs, goal records and funnel are the chain's own, assembly by assembly, with and without a bound, on the
first assemblies of the cost order of a task whose optimum has five joints (most of them refused by a look-up)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from timor_core import ModulesDB
from timor_core.search import FilterConfig, paper_exp2_space
from timor_core.search.evaluation.evaluate import Evaluator
from timor_core.search.spaces.cost_order import by_cost
from timor_core.task import Task

TASKS = Path(__file__).parent / "data" / "exp2_tasks"


def _verdict(ev) -> tuple:
    goals = {k: v.to_json() for k, v in ev.goals.items()}
    return ev.ids, ev.valid, ev.cost, goals, ev.failed_filter, ev.reason, ev.reason_key, ev.seq, len(ev.timings)


@pytest.mark.parametrize("bound", [math.inf, 12.0])
def test_the_certified_refusal_is_the_chains_verdict(bound):
    """The first 2,500 assemblies of ``obstacle_middle``'s cost order (its optimum has five joints): the evaluator
    with the look-up gives every assembly the verdict, cost, reasons and goal records of the evaluator without it,
    and the same funnel; at least 1,000 of them by the look-up alone (a bound of 12 kg: the heavier ones are
    refused by the bound first, as by the chain)."""
    db = ModulesDB.from_name("robco_like")
    task = Task.from_json_data(json.loads((TASKS / "obstacle_middle.json").read_text()))
    fast, plain = (Evaluator(task, db, "mass", FilterConfig(family_proof=True)) for _ in range(2))
    plain._certified.on = False
    looked_up = 0
    refusal = fast._certified.refusal

    def counted(ids, b):
        nonlocal looked_up
        found = refusal(ids, b)
        looked_up += found is not None
        return found

    fast._certified.refusal = counted  # type: ignore[method-assign]
    for k, (_, ids) in enumerate(by_cost(paper_exp2_space(db), "mass")):
        if k >= 2500:
            break
        a, b = fast(ids, bound, k), plain(ids, bound, k)
        assert _verdict(a) == _verdict(b), ids
    assert looked_up >= 1000
    funnels = [(f.entered, f.passed, f.reasons) for f in (fast.funnel, plain.funnel)]
    assert funnels[0] == funnels[1]
    assert (fast.funnel.failed("bound") > 0) == (bound < math.inf)


def test_a_chain_with_other_filters_is_never_looked_up():
    """A chain whose first filters are not the default four (here without ``limits``), or with a reach limit, or the
    family filter off: the look-up answers nothing, the chain decides."""
    from timor_core.search.filtering.filters import default_filters

    db = ModulesDB.from_name("robco_like")
    task = Task.from_json_data(json.loads((TASKS / "obstacle_middle.json").read_text()))
    others = [f for f in default_filters() if f.name != "limits"]
    for ev in (
        Evaluator(task, db, "mass", FilterConfig(family_proof=True), others),
        Evaluator(task, db, "mass", FilterConfig(family_proof=True, max_reach=3.0)),
        Evaluator(task, db, "mass", FilterConfig(family_proof=False)),
    ):
        assert not ev._certified.on
        assert ev._certified.refusal(("base", "J", "gripper"), math.inf) is None
