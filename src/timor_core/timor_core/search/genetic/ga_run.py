"""One ``GeneticSearch.optimize`` call: the fitness of a generation, the evaluations and their cache, the bound and
best robot of the running trial, the budget, and the local descent (:mod:`.ga_local`) of a stalled trial.

Kept apart from :mod:`.ga` (the configuration and PyGAD's loop) so that the fitness bookkeeping reads as one unit.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from timor_core.errors import TimorError
from timor_core.search.evaluation.evaluate import Evaluation
from timor_core.search.evaluation.optimizer import Budget
from timor_core.search.evaluation.parallel import ParallelEvaluator
from timor_core.search.evaluation.progress import Progress
from timor_core.search.evaluation.result import SearchResult
from timor_core.search.filtering.quick_reach import UNREACHABLE
from timor_core.search.genetic.ga_local import Descent
from timor_core.task.feedback import assembly_cost

__all__ = ["GARun", "OutOfTimeError", "PYGAD_LOG"]

logger = logging.getLogger(__name__)

Design = tuple[str, ...]
CLOCK_EVERY = 512
"""Chromosomes made, decoded or mutated between two looks at the clock (a population of 100,000 takes seconds)."""


class OutOfTimeError(TimorError):
    """Raised inside PyGAD's loop when the time budget is spent, ending it at once (caught by the GA's trial)."""


def _not_out_of_budget(record: logging.LogRecord) -> bool:
    return not (record.exc_info and isinstance(record.exc_info[1], OutOfTimeError))


PYGAD_LOG = logging.getLogger(__name__ + ".pygad")
ESCAPE_RADIUS = 3
"""The radius of the wide rounds (:meth:`.ga_local.Descent.escape`) from a trial's valid robots (the best first)
once every valid robot of the trial has had its two-move descent: else the trial idles for the rest of its
generations (issue 38: on ``boundary`` of seed 38, four of ten trials sat at 13.70 kg for ~400 generations while a
lighter robot lay three moves away)."""
ESCAPE_EVALUATIONS = 2000
"""At most about this many evaluations per wide round: on ``boundary`` the first lighter valid robot came within
46-125 of them (nearest below the best first); an uncapped fruitless round evaluated 46,607 (6x the trial's CPU)."""
"""PyGAD's logger: PyGAD logs every exception that passes through its loop, with its traceback; not this one."""
PYGAD_LOG.addFilter(_not_out_of_budget)


class GARun:
    """The state of one optimize() call of a GeneticSearch ``ga`` (its cache and statistics are written on ``ga``).

    Args:
        ga: the GeneticSearch (decode, is_valid, encode, penalty, config, ...).
        pe: the started evaluator; n_goals: the task's goal count; budget: the run's budget.
        result: the result being filled; on_batch, stop: the search's progress callback and stop event.
    """

    def __init__(
        self,
        ga: Any,
        pe: ParallelEvaluator,
        n_goals: int,
        budget: Budget,
        result: SearchResult,
        on_batch: Callable[[SearchResult, int], None] | None,
        stop: threading.Event | None,
    ) -> None:
        self.ga, self.pe, self.n_goals, self.budget, self.result = ga, pe, n_goals, budget, result
        self.on_batch, self.stop = on_batch, stop
        self.worst = ga.penalty * (n_goals + 2)
        self.t0 = time.perf_counter()
        self.deadline = None if budget.max_time is None else self.t0 + budget.max_time
        self.stages = {name: k for k, name in enumerate(pe.filter_names)}
        self.cost_function = assembly_cost(ga.cost)
        self.design_costs: dict[Design, float] = {}
        self.module_values = self.additive_values()
        self.bar: Progress | None = None
        self.out = self.canceled_flag = self.skipped = False
        self.trial = 0
        self.descent_evaluations = 0  # assemblies the descents evaluated (not those they found in the cache)
        self.new_trial(0)

    def new_trial(self, trial: int) -> None:
        """Trials are independent runs: a fresh bound, best robot and descent memory."""
        self.trial = trial
        self.trial_best = self.next_best = math.inf
        self.best_ids: Design = ()
        self.improved_at = self.generation = self.descended_at = 0
        self.searched: set[Design] = set()
        self.valid_designs: dict[Design, float] = {}  # the trial's valid robots (starts of later descents)
        self.escaped: set[Design] = set()  # best robots a wide round (ESCAPE_RADIUS) started from

    # -- budget and cancellation -------------------------------------------------------------------
    def canceled(self) -> bool:
        if self.stop is not None and self.stop.is_set():
            self.canceled_flag = True
        return self.canceled_flag

    def out_of_budget(self) -> bool:
        return self.budget_left(1) == 0

    def budget_left(self, n: int) -> int:
        """How many of ``n`` more evaluations the budget allows."""
        if self.deadline is not None and time.perf_counter() >= self.deadline:
            return 0
        if self.budget.max_evaluations is not None:
            return min(n, max(0, self.budget.max_evaluations - len(self.ga.evaluated)))
        return n

    # -- evaluations -------------------------------------------------------------------------------
    def penalised(self, ev: Evaluation) -> float:
        """Valid: the cost. Invalid: a penalty per goal not reached, then by how far down the filter chain the
        robot came (a robot that failed only its torques is nearer a solution than one out of reach). Its mass
        does not count: preferring light invalid robots breeds small robots that reach nothing."""
        if ev.valid and ev.cost is not None:
            return float(ev.cost)
        reached = sum(1 for g in ev.goals.values() if g.success)
        stage = ev.failed_filter or ""
        if stage == "workspace" and ev.reason_key.endswith(UNREACHABLE):  # proven: stands in for the IK's failure
            stage = "ik"
        left = len(self.stages) - self.stages.get(stage, 0)
        return self.ga.penalty * (self.n_goals - reached) + 0.1 * self.ga.penalty * left / max(1, len(self.stages))

    def lookup(self, ids: Design, bound: float) -> Evaluation | None:
        """The cached evaluation (None: none, or skipped under a bound above ``bound``, so evaluated anew)."""
        cached = self.ga.cache.get(ids)
        if cached is not None and cached.failed_filter == "bound" and (cached.cost or 0.0) < bound:
            return None
        return cached

    def found(self, ids: Design, ev: Evaluation) -> None:
        """Track the trial's cheapest valid robot (and when it last improved)."""
        if ev.valid and ev.cost is not None:
            self.valid_designs[ids] = float(ev.cost)
            if ev.cost < self.next_best:
                self.next_best, self.best_ids, self.improved_at = float(ev.cost), ids, self.generation

    def evaluate(self, batch: list[Design], bound: float) -> list[Evaluation | None]:
        """Evaluate (on the workers) and record: cache, statistics, the result and the trial's best (None: left
        out, the time ran out first)."""
        ga, result = self.ga, self.result
        evaluations = self.pe.evaluate_batch_isolated(batch, bound, self.out_of_budget, self.deadline)
        for ids, ev in zip(batch, evaluations):
            if ev is None:  # left out: the budget ran out first
                self.out = True
                continue
            ev.seq = len(ga.evaluated)
            ga.evaluated.append(ids)
            ga.cache[ids] = ev
            result.evaluations += 1
            result.cpu_time += ev.cpu
            result.funnel.record_evaluation(ev)
            self.found(ids, ev)
            if ev.valid:
                result.valid += 1
                if result.consider(ev):
                    point = {"evaluations": result.evaluations, "time": time.perf_counter() - self.t0}
                    result.improvements.append({**point, "cost": ev.cost, "ids": list(ev.ids), "seq": ev.seq})
        if self.bar is not None:
            self.bar.update(len(evaluations), result.funnel, result.best_cost)
        return evaluations

    def on_the_clock(self, operator: Callable[..., np.ndarray], by_rows: bool = False) -> Callable[..., np.ndarray]:
        """A PyGAD operator that first checks the clock (:class:`OutOfTimeError` once the time is up); ``by_rows``:
        applied to ``CLOCK_EVERY`` rows at a time (mutation, row by row in place), the clock checked between them."""

        def call(rows: np.ndarray, *rest: Any) -> np.ndarray:
            self.check_clock(0)
            if not by_rows:
                return operator(rows, *rest)
            for k in range(0, len(rows), CLOCK_EVERY):
                self.check_clock(0)
                rows[k : k + CLOCK_EVERY] = operator(rows[k : k + CLOCK_EVERY], *rest)
            return rows

        return call

    def check_clock(self, k: int) -> None:
        """Every ``CLOCK_EVERY`` steps of a long loop: :class:`OutOfTimeError` once the time is up."""
        if k % CLOCK_EVERY == 0 and self.deadline is not None and time.perf_counter() >= self.deadline:
            self.out = True
            raise OutOfTimeError

    def fitness_batch(self, pygad_ga: Any, solutions: np.ndarray, indices: Any) -> list[float]:
        """PyGAD's batch fitness: one generation, cached per decoded assembly, the invalid never evaluated."""
        ga = self.ga
        if self.canceled():  # evaluate nothing more; the generation ends the trial
            self.skipped = True
            return [-self.worst] * len(solutions)
        ids_list = []  # (the clock is checked first: time spent in the last batch or since ends PyGAD's loop here)
        for k, genes in enumerate(solutions):
            self.check_clock(k)
            ids_list.append(ga.decode(genes))
        out: list[float | None] = [None] * len(ids_list)
        todo: dict[Design, list[int]] = {}
        # the bound (FilterConfig.bound): a robot no lighter than the best valid one this trial found before this
        # generation cannot improve it; it is scored as reaching no goal, without running its IK. Per trial, so
        # that trials stay independent; fixed for the generation, so that no split of it matters.
        bound = self.trial_best if ga.config.bound else math.inf
        for i, ids in enumerate(ids_list):
            cached = self.lookup(ids, bound)  # (a robot skipped under a lower bound of another trial: anew)
            if not ga.is_valid(ids):
                ga.invalid += 1
                out[i] = -self.worst
            elif cached is not None:
                ga.cache_hits += 1
                out[i] = -self.penalised(cached)
                self.found(ids, cached)
            else:
                if ids in todo:
                    ga.cache_hits += 1
                todo.setdefault(ids, []).append(i)
        batch = list(todo)[: self.budget_left(len(todo))]
        if len(batch) < len(todo):
            self.out = True
        for ids, ev in zip(batch, self.evaluate(batch, bound)):
            if ev is not None:  # (None: the time ran out first; scored as over budget below)
                for i in todo[ids]:
                    out[i] = -self.penalised(ev)
        for i, v in enumerate(out):
            if v is None:  # over budget: not evaluated
                out[i] = -self.worst
        self.trial_best = self.next_best
        if self.on_batch is not None:
            try:
                self.on_batch(self.result, self.trial)
            except Exception:  # noqa: BLE001  (a broken progress report must not end the search)
                logger.exception("the GA's on_batch callback failed")
        self.canceled()
        return out  # type: ignore[return-value]

    # -- the local descent -------------------------------------------------------------------------
    def design_cost(self, ids: Design) -> float:
        """The assembly-level cost of a design (what the bound filter compares), memoised."""
        c = self.design_costs.get(ids)
        if c is None:
            c = self.design_costs[ids] = self.cost_function.evaluate_serial(self.ga.db, ids)
        return c

    def additive_values(self) -> dict[str, float] | None:
        """For an additive cost (a sum over modules, e.g. the mass): its value per joint and link module, so that
        the descent's neighbourhoods skip hopeless designs (:class:`.ga_local.Descent`); None for other costs."""
        if not getattr(self.cost_function, "additive", False):
            return None
        db = self.ga.db
        values = {m: self.cost_function.evaluate_modules([db.by_id(m)]) for m in (*self.ga.joints, *self.ga.links)}
        return None if any(v is None for v in values.values()) else {m: float(v) for m, v in values.items()}  # type: ignore[arg-type]

    def admissible(self, ids: Design) -> bool:
        return self.ga.encode(ids) is not None and self.ga.is_valid(ids)

    def descent_costs(self, designs: list[Design], bound: float) -> list[float | None]:
        """The descent's evaluation: per design its cost if valid, else None; cut short by the budget."""
        if self.canceled():
            return []
        todo = [d for d in designs if self.lookup(d, bound) is None]
        n = self.budget_left(len(todo))
        if n < len(todo):
            self.out = True
            designs, todo = designs[: designs.index(todo[n])], todo[:n]
        self.evaluate(todo, bound)
        self.descent_evaluations += len(todo)
        fresh = set(todo)
        out: list[float | None] = []
        for d in designs:
            ev = self.ga.cache.get(d)
            if ev is None:  # left out: the budget ran out first
                out.append(None)
                continue
            if d not in fresh:  # (a fresh one was counted by evaluate)
                self.ga.cache_hits += 1
                self.found(d, ev)
            out.append(float(ev.cost) if ev.valid and ev.cost is not None else None)
        return out

    def descend(self, pygad_ga: Any) -> None:
        """Once the trial's best robot has not improved for ``local_search_after`` generations: the descent from
        it; after that, one every ``local_search_after`` stalled generations from the trial's next cheapest valid
        robot not yet searched, looking only for robots cheaper than the best (a local optimum of the best's
        two-move neighbourhood is often two moves from the optimum by way of another valid robot). Once none is
        left, one wide round (``ESCAPE_RADIUS`` moves, below the best) per stalled period from the best, then from
        the trial's other valid robots, cheapest first, each once (issue 38: on ``boundary`` seed 9 the best's wide
        round found nothing, a later one from another valid robot reached 12.28 kg). A cheaper result replaces the
        population's worst (and becomes the bound of the next generation)."""
        ga = self.ga
        stalled = min(self.generation - self.improved_at, self.generation - self.descended_at)
        if not self.best_ids or stalled < ga.local_search_after:
            return
        start, escape = self.best_ids, False
        if start in self.searched:
            left = sorted((c, d) for d, c in self.valid_designs.items() if d not in self.searched)
            if left:
                start = left[0][1]
            elif ga.local_search == 2:  # every valid robot's neighbourhood is done: wide rounds, the best first
                if start in self.escaped:  # (then the others, cheapest first; the best itself first on a tie)
                    wide = sorted((c, d) for d, c in self.valid_designs.items() if d not in self.escaped)
                    if not wide:
                        return
                    start = wide[0][1]
                escape = True
                self.escaped.add(start)
            else:
                return
        best = self.next_best
        self.descended_at = self.generation
        descent = Descent(
            ga.joints, ga.links, self.admissible, self.design_cost, self.descent_costs, ga.local_search,
            values=self.module_values,
        )  # fmt: skip
        if escape:
            end, end_cost = descent.escape(start, best, ESCAPE_RADIUS, ESCAPE_EVALUATIONS)
        else:
            end, end_cost = descent.run(start, self.valid_designs[start], limit=best)
        self.searched.update((start, end))
        ga.descents.append(descent.steps)
        if end_cost < best:
            self.trial_best = self.next_best
            self.improved_at = self.generation
            worst_index = int(np.argmin(pygad_ga.last_generation_fitness))
            pygad_ga.population[worst_index] = ga.encode(end)
            pygad_ga.last_generation_fitness[worst_index] = -end_cost
