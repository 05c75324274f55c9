"""The cost order's assemblies decided by the certificate look-up in batches (search.filtering.batch_decide, issue 38
item 1) answer as one at a time: the same first goal covered (or none) for every assembly of a real stream, with
certificates added where the look-up leaves an assembly to the chain (as a proof would add them), some of them at
a margin equal to a later cut's distance to the last bit (the borderline the batch leaves to the one-at-a-time
look-up), a bound, and families' certificates halved; the one-worker stream and a shard's counts are the ones of
one at a time."""

from __future__ import annotations

import functools
import itertools
import json
import math
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core import ModulesDB
from timor_core.model.assembly import ModuleAssembly
from timor_core.search import FilterConfig, paper_exp2_space
from timor_core.search.evaluation import parallel
from timor_core.search.evaluation.evaluate import Evaluator
from timor_core.search.exhaustive_search import shard_worker
from timor_core.search.exhaustive_search.exhaustive import ExhaustiveSearch
from timor_core.search.exhaustive_search.shard_worker import ShardState
from timor_core.search.filtering import batch_decide, cover_kernel, cut_verdicts, family_proof
from timor_core.search.filtering.family_proof import FamilyProofs, Lesson, distance
from timor_core.search.spaces.cost_order import by_cost
from timor_core.task import Task

TASKS = Path(__file__).parent / "data" / "exp2_tasks"
N = 2500


@functools.lru_cache(maxsize=1)
def _stream() -> tuple:
    """The first ``N`` assemblies of experiment 2's space in cost order (``obstacle_middle``: its optimum has five
    joints, most of these are refused by a look-up once certificates are known) and each one's cut (rotations,
    translations, rows; None: none), read by an evaluator of its own: ``(db, task, items, cuts)``."""
    db = ModulesDB.from_name("robco_like")
    task = Task.from_json_data(json.loads((TASKS / "obstacle_middle.json").read_text()))
    items = tuple(itertools.islice(by_cost(paper_exp2_space(db), "mass"), N))
    cr = Evaluator(task, db, "mass", FilterConfig(family_proof=True))._certified
    proofs, place = FamilyProofs.of(cr.ctx), cr.ctx.placement
    cuts = []
    for _, ids in items:
        join = cr.ctx.join(ids)
        cut = None
        if join is not None:
            cut = proofs.cut_serial(ids, join, lambda ids=ids: ModuleAssembly.from_serial_modules(db, ids, place))
        cuts.append(None if cut is None else (cut.rotations, cut.translations.copy(), cut.rows))
    return db, task, items, tuple(cuts)


def _lessons(i: int, cuts: tuple, rng: np.random.Generator) -> list[Lesson]:
    """What a proof at assembly ``i`` teaches in this test: a certificate at its own cut for goal 0 or 1, its
    margin drawn, or the distance of the next cut of its family to the last bit (borderline: covered or not by
    that bit), or one bit more."""
    if cuts[i] is None:
        return []
    rotations, translations, rows = cuts[i]
    goal, kind = int(rng.integers(2)), int(rng.integers(4))
    margin = float(rng.uniform(0.01, 0.3))
    if kind >= 2:
        later = next((c for c in cuts[i + 1 : i + 200] if c is not None and c[0] == rotations), None)
        if later is not None:
            margin = distance(rows, later[2])
            margin = math.nextafter(margin, math.inf) if kind == 3 else margin
    return [Lesson(goal, rotations, translations, margin)] if margin > 0 else []


def run_stream(
    batch: int | None, start: int, length: int, bound_at: int | None, seed: int, max_dof: int | None = None
) -> tuple[list, list[int]]:
    """Every assembly of the stream's ``start .. start + length`` decided by the look-up, one at a time
    (``batch`` None) or in batches of ``batch``; where it decides nothing below the bound, the lessons of
    :func:`_lessons` are learnt (``max_dof``: the limits' DOF bound, None: the default). The answers ``(position, goal
    or None)`` and the batch's counts."""
    db, task, items, cuts = _stream()
    limits = {} if max_dof is None else {"max_dof": max_dof}
    ev = Evaluator(task, db, "mass", FilterConfig(family_proof=True, **limits))
    cr, lookup = ev._certified, ev.lookup
    proofs = FamilyProofs.of(cr.ctx)
    rng = np.random.default_rng(seed)
    run = items[start : start + length]
    bound = math.inf if bound_at is None else run[min(bound_at, len(run) - 1)][0]
    out: list[tuple[int, int | None]] = []
    at = 0
    while at < len(run):
        if batch is not None:
            for goal in lookup.refusals(run[at : at + batch], bound):
                out.append((at, goal))
                at += 1
            if at == len(run):
                break
        price, ids = run[at]
        found = cr.decision(ids, bound, price)
        out.append((at, None if found is None else found[1]))
        if found is None and price < bound:
            proofs.learn(_lessons(start + at, cuts, rng))
        at += 1
    return out, lookup.counts


ROUTES = ["numpy", "python", "built"]


def _route(monkeypatch: pytest.MonkeyPatch, route: str) -> None:
    """The cover by numpy (no kernel), by :func:`.cover_kernel.cover` as Python (what is built), or as built (the
    suite's builds: ``make test``; numpy's where none is)."""
    if route != "built":
        monkeypatch.setattr(cover_kernel, "kernel", lambda: None if route == "numpy" else cover_kernel.cover)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batch=st.sampled_from([1, 2, 7, 64, 256]),
    start=st.integers(0, N - 200),
    length=st.integers(1, 1500),
    bound_at=st.one_of(st.none(), st.integers(0, 1500)),
    seed=st.integers(0, 2**32 - 1),
    cap=st.sampled_from([4, 8192]),
)
@pytest.mark.parametrize("route", ROUTES)
def test_the_batched_look_up_answers_as_one_at_a_time(monkeypatch, route, batch, start, length, bound_at, seed, cap):
    """A run of the cost order decided in batches gives every assembly the one-at-a-time answer (the first goal a
    certificate covers, or none), with certificates learnt where an assembly is left to the chain (the batch then
    goes on with the ones after it: what it staged for them is kept, the families that changed are covered again),
    borderline margins, a bound that stops the batch, and (cap 4) families' older certificates forgotten; by each
    route of the cover (:func:`_route`)."""
    _route(monkeypatch, route)
    monkeypatch.setattr(family_proof, "MAX_CERTIFICATES", cap)
    one, _ = run_stream(None, start, length, bound_at, seed)
    many, _ = run_stream(batch, start, length, bound_at, seed)
    assert many == one


@pytest.mark.parametrize("route", ROUTES)
def test_the_property_tests_runs_decide_most_in_batches_and_some_borderline_one_at_a_time(monkeypatch, route):
    """The property test's comparison on one fixed long run (so that it shows what the property test exercises,
    whatever hypothesis draws): most assemblies are decided by the batched distances, and some cut lies within the
    slack of a margin (taken by the one-at-a-time look-up); by each route of the cover."""
    _route(monkeypatch, route)
    one, _ = run_stream(None, 0, N, None, 7)
    many, counts = run_stream(256, 0, N, None, 7)
    assert many == one
    assert counts[0] >= N // 2 and counts[1] >= 1, counts


def test_an_assembly_past_the_dof_limit_offered_again_is_not_refused(monkeypatch):
    """A staging that walked an assembly's family but could not read its DOF (a module's not known yet) and stopped
    there because the assembly fails the DOF limit: offered again (as after a segment learnt while the caller took
    the one before it), the look-up answers as one at a time, None (its DOF is summed where the lock-step left it;
    the review of s52-look found it refused by a certificate past the limit)."""
    db, task, items, cuts = _stream()
    ev = Evaluator(task, db, "mass", FilterConfig(family_proof=True, max_dof=2))
    cr, lookup = ev._certified, ev.lookup
    proofs, rng, hits = FamilyProofs.of(cr.ctx), np.random.default_rng(7), []
    one = batch_decide.BatchLookup._one

    def spy(self, tables, item, k, found, read, tests):
        before = found[0][k]
        staged = one(self, tables, item, k, found, read, tests)
        if not staged and before < 0 and found[0][k] >= 0 and read[0] < 0:
            hits.append(item[1])
        return staged

    monkeypatch.setattr(batch_decide.BatchLookup, "_one", spy)
    run, at, bound = items[:N], 0, math.inf
    while at < len(run) and not hits:
        at += len(lookup.refusals(run[at : at + 256], bound))
        if hits or at == len(run):
            break
        price, ids = run[at]
        if cr.decision(ids, bound, price) is None and price < bound:
            proofs.learn(_lessons(at, cuts, rng))
        at += 1
    assert hits  # (the case arises in this run)
    k = next(i for i in range(len(run)) if run[i][1] is hits[0])
    lookup._broke, lookup._count = False, -1  # (as a segment learnt meanwhile: the staging starts again at k)
    again = lookup.refusals(run[k : k + 256], bound)
    assert cr.decision(run[k][1], bound, run[k][0]) is None
    assert not again


def test_a_recent_certificate_costs_a_head_sum_only_where_the_last_row_leaves_room(monkeypatch):
    """The certificates tried first (``BatchLookup._covered``) are tried by the cut's last row first: a head's sum
    is computed only where that row's distance to the certificate's last row is below the margin less the slack (a
    cut beyond it is not covered whatever its head's sum: the sums are >= 0 and float addition is monotone), and
    the answers stay those of one at a time on the fixed long run."""
    _route(monkeypatch, "numpy")  # (the compiled cover tries every certificate: no recent ones, no head sums)
    real, looked = batch_decide.head_sum, []

    def spy(head, serial, rest, margin):
        caller = sys._getframe(1)
        if caller.f_code.co_name == "_covered":
            looked.append(caller.f_locals["root"] < caller.f_locals["room"])
        return real(head, serial, rest, margin)

    monkeypatch.setattr(batch_decide, "head_sum", spy)
    one, _ = run_stream(None, 0, N, None, 7)
    many, counts = run_stream(256, 0, N, None, 7)
    assert many == one
    assert len(looked) > 100 and all(looked), (len(looked), looked.count(False))


@pytest.mark.parametrize("cap", [2, 8192])
def test_an_equal_cuts_answer_is_taken_while_its_certificates_hold(monkeypatch, cap):
    """Most of the fixed long run's assemblies are answered by an equal cut's answer (``cut_verdicts``: staged
    with their goal, not covered again) and every answer is the one-at-a-time one, with certificates added to goals
    before the kept answers' (cap 8192) and families' certificates halved again and again (cap 2: a covering
    certificate forgotten; fails if a halved goal's answers are kept, and with certificates added if the later
    goals' are)."""
    monkeypatch.setattr(family_proof, "MAX_CERTIFICATES", cap)
    real, reused = batch_decide.BatchLookup._extend, []

    def spy(self, proofs, items, same, bound):
        before = len(self._state)
        real(self, proofs, items, same, bound)
        reused.extend(goal for goal in self._state[before:] if goal >= 0)

    monkeypatch.setattr(batch_decide.BatchLookup, "_extend", spy)
    for seed in (0, 1):
        one, _ = run_stream(None, 0, N, None, seed)
        many, _ = run_stream(256, 0, N, None, seed)
        assert many == one
    assert len(reused) >= N // 2 and 1 in reused, (len(reused), set(reused))


def test_the_answers_kept_are_bounded_and_forgotten_with_the_family_numbers(monkeypatch):
    """Past ``MAX_VERDICTS`` answers and numbered rows the look-up numbers its families anew (everything kept per
    cut forgotten with the old numbers): bounded memory, and every answer still the one-at-a-time one."""
    monkeypatch.setattr(cut_verdicts, "MAX_VERDICTS", 64)
    most, full = [], cut_verdicts.Verdicts.full

    def watched(self):
        most.append(len(self.answers) + len(self.rows) + len(self.lasts))
        return full(self)

    monkeypatch.setattr(cut_verdicts.Verdicts, "full", watched)
    one, _ = run_stream(None, 0, N, None, 5)
    many, counts = run_stream(256, 0, N, None, 5)
    assert many == one and counts[0] >= N // 2
    assert most.count(0) >= 5 and max(most) < 64 + 256 * 3, (most.count(0), max(most))  # (emptied again and again)


def test_assemblies_whose_heads_are_equal_by_value_share_one_head_of_the_automata(monkeypatch):
    """The automata of ``cut_states`` number heads by value (rotations, rows, carried length): links of the same
    length in another order, and a straight run (a joint on the line of the one before: the rows are the parent's,
    the carried length longer), give a head already made, so the fixed long run's staged assemblies have far fewer
    heads than head IDs (modules up to the last joint); every answer is the one-at-a-time one (fails where heads
    are numbered by their IDs)."""
    real, seen = batch_decide.BatchLookup._extend, []

    def spy(self, proofs, items, same, bound):
        before = len(self._ids)
        real(self, proofs, items, same, bound)
        heads = [self._states.heads[h] for h in self._heads[before:]]  # (kept alive: ``id`` below)
        seen.extend(zip(map(tuple, self._ids[before:]), heads, strict=True))

    monkeypatch.setattr(batch_decide.BatchLookup, "_extend", spy)
    for seed in (0, 3):
        one, _ = run_stream(None, 0, N, None, seed)
        many, _ = run_stream(256, 0, N, None, seed)
        assert many == one
        names = {ids[: max(i for i, m in enumerate(ids) if m == "J") + 1] for ids, _ in seen}
        heads = {id(head) for _, head in seen}
        assert len(seen) >= N // 2 and len(heads) <= len(names) // 2, (len(seen), len(heads), len(names))
        seen.clear()


def test_the_staging_of_the_assemblies_after_a_stop_is_kept_for_the_next_call(monkeypatch):
    """After a batch stops (an assembly left to the chain), the next call's assemblies that were staged already for
    these very IDs are not staged again (``_stage``'s ``same``, found in C): on the fixed long run most calls start
    after such a run, and every answer is the one-at-a-time one (fails where the kept staging is dropped: ``same``
    0, or where one staged for other IDs is kept: the answers differ)."""
    real, kept = batch_decide.BatchLookup._extend, []

    def spy(self, proofs, items, same, bound):
        assert all(a is b[1] for a, b in zip(self._ids[:same], items, strict=False))
        kept.append(same)
        real(self, proofs, items, same, bound)

    monkeypatch.setattr(batch_decide.BatchLookup, "_extend", spy)
    one, _ = run_stream(None, 0, N, None, 7)
    many, _ = run_stream(256, 0, N, None, 7)
    assert many == one
    assert sum(1 for same in kept if same > 0) >= 5 and sum(kept) >= N // 4, kept
    kept.clear()
    db, task, items, _ = _stream()  # a call for other assemblies than those staged: none of their staging is kept
    ev = Evaluator(task, db, "mass", FilterConfig(family_proof=True))
    proofs, at = FamilyProofs.of(ev._certified.ctx), 0
    while at < 600:  # (certificates learnt at the first 600's own cuts: most of the later ones are covered)
        at += len(ev.lookup.refusals(items[at:600], math.inf)) + 1
        found = ev._certified.decision(items[at - 1][1], math.inf, items[at - 1][0])
        proofs.learn(_lessons(at - 1, _stream()[3], np.random.default_rng(at)) if found is None else [])
    first = ev.lookup.refusals(items[600:856], math.inf)
    other = ev.lookup.refusals(items[603:859], math.inf)  # (staged: from 600 + len(first) + 1 on, not 603's)
    assert kept[-1] == 0 and len(first) > 20 and len(other) > 20, (kept[-2:], len(first), len(other))
    decision = ev._certified.decision
    assert other == [decision(ids, math.inf, price)[1] for price, ids in items[603 : 603 + len(other)]]


@given(st.lists(st.sampled_from([0, 1, 2, batch_decide.PENDING, batch_decide.UNSURE, batch_decide.NONE])), st.data())
def test_a_run_of_goals_ends_at_the_first_negative_mark(marks, data):
    """``_negative`` (the end of a run of staged answers that are goals, found in C) is the first index from ``at``
    on whose mark is below 0, else the length."""
    at = data.draw(st.integers(0, len(marks)))
    expected = next((j for j in range(at, len(marks)) if marks[j] < 0), len(marks))
    assert batch_decide._negative(marks, at) == expected


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    runs=st.lists(st.tuples(st.booleans(), st.integers(0, 40)), min_size=1, max_size=40),
    long_tail=st.integers(1, 9),
)
def test_a_shards_refusals_counted_many_at_once_count_as_one_by_one(monkeypatch, runs, long_tail):
    """``ShardState.refused_many`` leaves the taken keys (the tail, trimmed as one by one trims it), the counts and
    the funnel's counts as ``ShardState.refused`` one by one does."""
    monkeypatch.setattr(shard_worker, "LONG_TAIL", long_tail)
    names = ["assembly", "bound", "limits", "family", "robot"]
    one, many = ShardState(0), ShardState(0)
    k = 0
    for bulk, n in runs:
        keys = [(float(k + i), k + i) for i in range(n)]
        reasons = [f"g{(k + i) % 3}: no configuration reaches it" for i in range(n)]
        k += n
        for key, reason in zip(keys, reasons, strict=True):
            one.refused(key, reason, 0.001, names)
        if bulk or n != 1:
            counted = {r: reasons.count(r) for r in dict.fromkeys(reasons)}
            many.refused_many(keys, counted, 0.001 * n, names)
        else:
            many.refused(keys[0], reasons[0], 0.001, names)
    assert (many.taken, many.evaluations, many.tail) == (one.taken, one.evaluations, one.tail)
    if one.funnel is not None:
        assert many.funnel is not None
        assert (many.funnel.entered, many.funnel.passed, many.funnel.reasons) == (
            one.funnel.entered,
            one.funnel.passed,
            one.funnel.reasons,
        )


@pytest.mark.slow
@pytest.mark.parametrize("task_name", ["base_moved", "moved_goals"])
def test_the_one_worker_search_in_batches_is_the_one_at_a_time_search(monkeypatch, task_name):
    """The cost-ordered search in one process with its stream taken in batches and one at a time (the stream not
    recognised as a cost order's): the same optimum, position, count, next position, stop and funnel counts."""
    db = ModulesDB.from_name("robco_like")
    task = Task.from_json_data(json.loads((TASKS / f"{task_name}.json").read_text()))

    def search():
        return ExhaustiveSearch(paper_exp2_space(db), "mass", workers=1, progress=False, order="cost").optimize(task)

    batched = search()
    monkeypatch.setattr(parallel, "PricedItems", type("NotPriced", (), {}))
    plain = search()
    for r in (batched, plain):
        assert r.best_ids is not None
    keys = ("best_ids", "best_cost", "best_seq", "evaluations", "next_seq", "stopped", "valid")
    assert [getattr(batched, k) for k in keys] == [getattr(plain, k) for k in keys]
    f, g = batched.funnel, plain.funnel
    assert (f.entered, f.passed, f.reasons) == (g.entered, g.passed, g.reasons)
    assert f.failed("family") > 0
