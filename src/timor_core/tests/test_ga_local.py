"""The local descent of the genetic search (search.ga_local): its moves, its order and what it finds, on a
synthetic landscape where the cost and the valid designs are known, and inside GeneticSearch on the GA tests' task."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_ga import MODULES, SETTINGS

from timor_core.errors import InputError
from timor_core.search import GeneticSearch
from timor_core.search.genetic.ga_local import Descent, design_moves, largest_drop

JOINTS = ("J",)
LINKS = ("A", "B", "C")
MASS = {"base": 1.0, "eef": 1.0, "J": 2.0, "A": 0.1, "B": 0.2, "C": 0.4}


def cost(design) -> float:
    return round(sum(MASS[m] for m in design), 6)


def admissible(design) -> bool:
    inner = design[1:-1]
    return bool(inner) and inner[0] == "J" and 1 <= inner.count("J") <= 3 and len(inner) <= 7


def test_moves_replace_remove_insert_and_merge():
    d = ("base", "J", "A", "B", "J", "eef")
    moves = design_moves(d, JOINTS, LINKS)
    assert all(m[0] == "base" and m[-1] == "eef" for m in moves)
    assert ("base", "J", "C", "B", "J", "eef") in moves  # replace a link by a link
    assert ("base", "J", "B", "J", "eef") in moves  # remove
    assert ("base", "J", "A", "B", "J", "C", "eef") in moves  # insert
    assert ("base", "J", "C", "J", "eef") in moves  # merge two neighbouring links into one
    assert ("base", "J", "J", "B", "J", "eef") not in moves  # a link is never replaced by a joint
    assert d not in moves


@given(st.lists(st.sampled_from(("J", *LINKS)), min_size=1, max_size=6))
def test_every_move_is_one_edit_or_one_merge(inner):
    d = ("base", *inner, "eef")
    for m in design_moves(d, JOINTS, LINKS):
        a, b = list(d[1:-1]), list(m[1:-1])
        assert abs(len(a) - len(b)) <= 1
        # strip the common prefix and suffix: what is left is at most two modules replaced by at most one, or back
        while a and b and a[0] == b[0]:
            a, b = a[1:], b[1:]
        while a and b and a[-1] == b[-1]:
            a, b = a[:-1], b[:-1]
        assert len(a) <= 2 and len(b) <= 1 or len(a) <= 1 and len(b) <= 1


class Landscape:
    """``valid``: the designs that pass; records what is evaluated and under which bound."""

    def __init__(self, valid):
        self.valid = set(valid)
        self.calls: list[tuple[list, float]] = []

    def __call__(self, designs, bound):
        self.calls.append((list(designs), bound))
        return [cost(d) if d in self.valid else None for d in designs]


def _descent(landscape, radius=2, batch=4):
    return Descent(JOINTS, LINKS, admissible, cost, landscape, radius, batch)


def test_descent_takes_a_two_move_step_the_operators_cannot_see():
    start = ("base", "J", "A", "B", "J", "C", "eef")  # 6.7
    target = ("base", "J", "C", "J", "B", "eef")  # 6.6: A B merged into C and C shortened to B (two moves)
    landscape = Landscape([start, target])
    end, end_cost = _descent(landscape).run(start, cost(start))
    assert (end, end_cost) == (target, cost(target))
    evaluated = [(d, b) for designs, b in landscape.calls for d in designs]
    assert all(cost(d) < b for d, b in evaluated)  # never a design the bound would cut
    assert len({d for d, _ in evaluated}) == len(evaluated)  # each design once
    # radius 1 cannot see it
    landscape = Landscape([start, target])
    assert _descent(landscape, radius=1).run(start, cost(start)) == (start, cost(start))


def test_descent_evaluates_cheapest_first_and_stops_at_the_first_valid():
    start = ("base", "J", "C", "J", "C", "eef")  # 5.8
    landscape = Landscape([start])
    descent = _descent(landscape, radius=1, batch=1)
    descent.run(start, cost(start))
    order = [cost(designs[0]) for designs, _ in landscape.calls]
    assert order == sorted(order) and len(order) == len(set(map(tuple, (d for d, _ in landscape.calls))))
    cheaper = {d for d in descent.neighbourhood(start, 1) if cost(d) < cost(start)}
    assert {designs[0] for designs, _ in landscape.calls} == cheaper  # nothing valid: all cheaper ones, once
    # with valid designs, everything above the cheapest valid one is cut by the bound
    valid = sorted(cheaper, key=cost)[len(cheaper) // 2]
    landscape = Landscape([start, valid])
    end, _ = _descent(landscape, radius=1, batch=1).run(start, cost(start))
    first = [designs[0] for designs, _ in landscape.calls]
    assert end == valid and cost(first[-1]) <= cost(valid)


def test_descent_finds_the_cheapest_valid_design_within_two_moves_by_brute_force():
    start = ("base", "J", "B", "J", "C", "eef")
    all_designs = {
        ("base", *inner, "eef")
        for n in range(1, 8)
        for inner in itertools.product(("J", *LINKS), repeat=n)
        if admissible(("base", *inner, "eef"))
    }
    near = _descent(Landscape([])).neighbourhood(start, 2)
    assert near <= all_designs
    for k, valid in enumerate(sorted(near, key=lambda d: (cost(d), d))[:40:3]):
        landscape = Landscape([start, valid])
        end, c = _descent(landscape).run(start, cost(start))
        expected = valid if cost(valid) < cost(start) else start
        assert end == expected and c == cost(expected), k


def test_a_descent_from_another_design_looks_only_below_the_limit():
    """From a heavier valid design (another start of the GA's later descents): only designs cheaper than the best
    known (``limit``) are evaluated, and one two moves away is found."""
    start = ("base", "J", "C", "J", "C", "eef")  # 6.8
    best_known = 6.45
    target = ("base", "J", "A", "J", "B", "eef")  # 6.3: C -> A, C -> B
    near = ("base", "J", "B", "J", "C", "eef")  # 6.6: valid, cheaper than the start, not than the best known
    landscape = Landscape([start, target, near])
    end, end_cost = _descent(landscape).run(start, cost(start), limit=best_known)
    assert (end, end_cost) == (target, cost(target))
    evaluated = [d for designs, _ in landscape.calls for d in designs]
    assert near not in evaluated and all(cost(d) < best_known for d in evaluated)
    # nothing below the limit: the start and the limit come back
    assert _descent(Landscape([start, near])).run(start, cost(start), limit=5.0) == (start, 5.0)


def test_the_wide_round_escapes_a_two_move_local_optimum_nearest_first():
    """Issue 38: a lighter valid design three moves away. The ordinary descent stays at the start; ``escape``
    evaluates the three-move ring from just below the start's cost downwards, stops with the batch of its first
    valid design and descends from it."""
    start = ("base", "J", "C", "J", "C", "J", "C", "eef")  # 9.2
    target = ("base", "J", "A", "J", "A", "J", "A", "eef")  # 8.3: three replacements
    probe = _descent(Landscape([]))
    assert target not in probe.neighbourhood(start, 2) and target in probe.neighbourhood(start, 3)
    assert _descent(Landscape([start, target])).run(start, cost(start)) == (start, cost(start))
    landscape = Landscape([start, target])
    assert _descent(landscape).escape(start, cost(start), 3, 10_000) == (target, cost(target))
    wide = [d for designs, _ in landscape.calls if len(designs) > 0 for d in designs]
    first_batch_end = next(i for i, d in enumerate(wide) if d == target)
    order = [cost(d) for d in wide[: first_batch_end + 1]]
    assert order == sorted(order, reverse=True)  # nearest below the start first
    assert all(cost(d) < cost(start) for d in wide)
    # nothing valid in the ring: the start comes back
    assert _descent(Landscape([start])).escape(start, cost(start), 3, 10_000) == (start, cost(start))
    # the cap: a round ends after the batch that reaches it, found or not
    capped = Landscape([start, target])
    assert _descent(capped, batch=4).escape(start, cost(start), 3, 8) == (start, cost(start))
    assert sum(len(designs) for designs, _ in capped.calls) == 8


def _value(m) -> float:
    return MASS[m]


@given(st.lists(st.sampled_from(("J", *LINKS)), min_size=1, max_size=6))
def test_no_move_lowers_the_cost_by_more_than_the_largest_drop(inner):
    d = ("base", *inner, "eef")
    drop = largest_drop(JOINTS, LINKS, _value)
    assert all(cost(d) - cost(m) <= drop for m in design_moves(d, JOINTS, LINKS))
    # and it is not loose: some move of some design comes within it (removing the joint, 2.0, or a merge, 0.7)
    assert drop < MASS["J"] + 1e-6


@given(st.lists(st.sampled_from(("J", *LINKS)), min_size=1, max_size=6), st.floats(-2.5, 1.0))
def test_moves_under_a_limit_are_the_moves_that_change_the_cost_by_less(inner, limit):
    d = ("base", *inner, "eef")
    near = design_moves(d, JOINTS, LINKS, MASS, limit)
    assert near == {m for m in design_moves(d, JOINTS, LINKS) if cost(m) - cost(d) < limit - 1e-6} | (
        near & {m for m in design_moves(d, JOINTS, LINKS) if abs(cost(m) - cost(d) - limit) <= 1e-6}
    )  # (a change within rounding of the limit may go either way)


@settings(deadline=None, max_examples=60)  # (a three-move ring of a seven-module design: ~0.1 s)
@given(
    st.lists(st.sampled_from(("J", *LINKS)), min_size=1, max_size=5).map(lambda inner: ("base", "J", *inner, "eef")),
    st.integers(1, 3),
    st.floats(-2.0, 0.5),
)
def test_a_pruned_neighbourhood_holds_every_design_below_the_bound(start, radius, below_by):
    """Issue 38 (the wide round's ring cost ~10 s of CPU): with ``max_drop`` the neighbourhood follows only the
    designs that can still lead below the bound; the designs below it are exactly the unpruned ones below it."""
    bound = round(cost(start) + below_by, 6)
    full = _descent(Landscape([])).neighbourhood(start, radius)
    expected = {d for d in full if cost(d) < bound}
    pruned = Descent(JOINTS, LINKS, admissible, cost, Landscape([]), values=MASS)
    assert pruned.neighbourhood(start, radius, bound) == expected
    assert _descent(Landscape([])).neighbourhood(start, radius, bound) == expected  # without max_drop: the same


def test_a_pruning_with_too_small_a_drop_would_lose_designs():
    """The check above can fail: the true drop halved loses the design three moves away (two joints and the link
    removed), since the first removal leaves 6.1 - 2 * 1.0 >= the bound."""
    start = ("base", "J", "J", "A", "J", "eef")  # 8.1
    bound = 4.05  # below it: ("base", "J", "eef") alone
    full = {d for d in _descent(Landscape([])).neighbourhood(start, 3) if cost(d) < bound}
    half = Descent(JOINTS, LINKS, admissible, cost, Landscape([]), values=MASS)
    half.max_drop = largest_drop(JOINTS, LINKS, _value) / 2
    assert full == {("base", "J", "eef")} and half.neighbourhood(start, 3, bound) == set()


def test_descent_stops_when_the_budget_is_out():
    start = ("base", "J", "C", "J", "C", "eef")
    calls = []

    def evaluate(designs, bound):
        calls.append(designs)
        return [None] * (len(designs) - 1)  # one short: out of budget

    descent = _descent(evaluate)
    assert descent.run(start, cost(start)) == (start, cost(start))
    assert descent.out_of_budget and len(calls) == 1


def test_wide_rounds_go_on_from_the_other_valid_robots_cheapest_first(monkeypatch):
    """Issue 38 (``boundary`` seed 9 stopped at 13.70 kg: the best's wide round found nothing and the trial idled):
    once every valid robot had its two-move descent, one wide round per stalled period from the best, then from the
    trial's other valid robots, cheapest first, each once and each looking below the best; then nothing more."""
    from types import SimpleNamespace

    from timor_core.search.genetic import ga_run

    calls = []

    class Recorder:
        def __init__(self, *args, **kwargs):
            self.steps = []

        def escape(self, start, start_cost, radius, cap):
            calls.append(("escape", start, start_cost, radius))
            return start, start_cost

        def run(self, start, start_cost, limit):
            calls.append(("run", start, limit, None))
            return start, start_cost

    monkeypatch.setattr(ga_run, "Descent", Recorder)
    run = object.__new__(ga_run.GARun)  # the descent's bookkeeping alone, without a search around it
    run.ga = SimpleNamespace(local_search=2, local_search_after=1, joints=JOINTS, links=LINKS, descents=[])
    run.module_values = None
    run.new_trial(0)
    best, second, third = ("base", "J", "A", "eef"), ("base", "J", "B", "eef"), ("base", "J", "C", "eef")
    run.valid_designs = {third: cost(third), best: cost(best), second: cost(second)}
    run.best_ids, run.next_best = best, cost(best)
    run.searched = {best, second, third}  # every valid robot's two-move descent is done
    for generation in range(1, 7):
        run.generation = generation
        run.descend(None)
    radius = ga_run.ESCAPE_RADIUS
    assert calls == [("escape", d, cost(best), radius) for d in (best, second, third)]


# -- inside GeneticSearch -----------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{"local_search": 3}, {"local_search": -1}, {"local_search_after": 0}])
def test_bad_local_search_arguments(robco, kwargs):
    with pytest.raises(InputError):
        GeneticSearch(robco, **{**SETTINGS, "modules": MODULES, **kwargs})


def test_ga_descends_from_a_stalled_best_and_keeps_its_bookkeeping(robco):
    from dataclasses import replace

    import numpy as np
    from test_ga import FLOOR, KNOWN, synthetic_task

    from timor_core import ModuleAssembly

    robot = ModuleAssembly.from_serial_modules(robco, KNOWN).robot
    rng, qs = np.random.default_rng(5), []
    while len(qs) < 2:  # the GA tests' task: two goals the known robot reaches
        q = robot.random_configuration(rng)
        if not robot.has_self_collision(q) and robot.fk(q)[2, 3] > 0.15:
            qs.append(q)
    task = synthetic_task([robot.fk(q) for q in qs], obstacles=[FLOOR])
    kw = {**SETTINGS, "modules": MODULES, "generations": 6, "initial": [KNOWN]}  # found at once, then it stalls
    ga = GeneticSearch(robco, **{**kw, "local_search_after": 2})
    result = ga.optimize(task, robco)
    assert result.best_ids is not None
    assert len(set(ga.evaluated)) == len(ga.evaluated) == result.evaluations  # each assembly evaluated once
    assert ga.descents, "a trial whose best stalled for 2 generations descends"
    steps = [s for run in ga.descents for s in run]
    assert 0 < result.settings["descent_evaluations"] <= sum(s.evaluated for s in steps)
    assert all(s.centre[0] == ga.base and s.centre[-1] == ga.eef for s in steps)
    # later descents (one per stalled period) start from the trial's other valid robots, not again from the best
    # (without the bound, so that the trial finds more than one valid robot here)
    unbound = replace(SETTINGS["filters"], bound=False)
    longer = GeneticSearch(robco, **{**kw, "generations": 12, "local_search_after": 2, "filters": unbound})
    longer.optimize(task, robco)
    starts = [run[0].centre for run in longer.descents if run[0].radius < 3]
    assert len(starts) == len(set(starts)) >= 2
    # once none is left, at most one wide round (ESCAPE_RADIUS) per best robot
    wide = [run[0].centre for run in longer.descents if run[0].radius == 3]
    assert len(wide) == len(set(wide))
    off = GeneticSearch(robco, **{**kw, "local_search": 0})
    assert off.optimize(task, robco).best_ids is not None
    assert not off.descents and off.settings()["local_search"] == 0
