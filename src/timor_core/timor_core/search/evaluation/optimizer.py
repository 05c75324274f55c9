"""The optimizer interface, the search loop every optimizer shares, and a random search.

An optimizer is anything with ``optimize(task, db, budget) -> SearchResult`` (:class:`Optimizer`). The
exhaustive search (:class:`~.exhaustive.ExhaustiveSearch`) and :class:`RandomSearch` hand a sequence of
assemblies to :func:`run_search`, which evaluates it (in parallel, sharing the best-so-far bound), keeps the
best valid assembly, the funnel and the history, and stops when the sequence or the :class:`Budget` is used up.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from timor_core.errors import InputError
from timor_core.limits import cap_workers, check_count
from timor_core.model.db import ModulesDB
from timor_core.search.evaluation.batch_stream import Refusals
from timor_core.search.evaluation.evaluate import cost_descriptor, load_db, load_task
from timor_core.search.evaluation.parallel import ParallelEvaluator
from timor_core.search.evaluation.progress import Progress
from timor_core.search.evaluation.result import SearchResult, task_goal_records
from timor_core.search.filtering.filters import Filter, FilterConfig
from timor_core.search.spaces.space import SerialSpace
from timor_core.task import Task
from timor_core.task.costs import CostFunction

__all__ = ["Budget", "Optimizer", "run_search", "RandomSearch", "space_info"]


@dataclass(frozen=True)
class Budget:
    """Limits of one search: evaluations (assemblies processed) and/or wall time (s); None is unlimited."""

    max_evaluations: int | None = None
    max_time: float | None = None

    def __post_init__(self) -> None:
        n = self.max_evaluations
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise InputError("max_evaluations must be a non-negative integer or None", value=self.max_evaluations)
        t = self.max_time
        if t is not None and (isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 <= t < math.inf):
            raise InputError("max_time must be a finite number of seconds >= 0, or None", value=t)
        if n is not None:
            check_count(n, "max_search_evals", "the evaluation budget")
        if t is not None:
            check_count(t, "max_search_seconds", "the time budget in seconds")

    @classmethod
    def of(cls, budget: Budget | int | dict | None) -> Budget:
        """A Budget from a Budget, None (unlimited), an int (evaluations) or a dict of the fields."""
        if budget is None:
            return cls()
        if isinstance(budget, Budget):
            return budget
        if isinstance(budget, int) and not isinstance(budget, bool):
            return cls(max_evaluations=budget)
        if isinstance(budget, dict):
            return cls(**budget)
        raise InputError("a budget is a Budget, an int (evaluations), a dict or None", value=budget)


@runtime_checkable
class Optimizer(Protocol):
    """Anything that searches assemblies for a task: ``optimize(task, db, budget) -> SearchResult``."""

    def optimize(self, task: Task, db: ModulesDB, budget: Budget | int | None = None) -> SearchResult: ...


def space_info(space: SerialSpace) -> dict:
    """A JSON-able description of a search space."""
    return {"fingerprint": space.fingerprint, "count": space.count, "options": space.options.to_json()}


def run_search(
    name: str,
    items: Iterable[tuple[int, Sequence[str]]],
    total: int | None,
    task: Task | str | Path,
    db: ModulesDB | str | Path,
    *,
    cost: CostFunction | str | None = "mass",
    config: FilterConfig | None = None,
    filters: Sequence[Filter] | None = None,
    workers: int | None = None,
    progress: bool = True,
    budget: Budget | int | None = None,
    bound: float = math.inf,
    first_seq: int = 0,
    space: dict | None = None,
    settings: dict | None = None,
    mp_context: Any = None,
    stop_if: Callable[[SearchResult], bool] | None = None,
    evaluator: Any = None,
) -> SearchResult:
    """Evaluate a sequence of ``(seq, ids)`` (seq increasing by one from ``first_seq``) and keep the best.

    ``bound``: only assemblies strictly cheaper than this can be valid (e.g. a previous search's best cost).
    ``stop_if(partial_result)``, checked before each chunk is sent, ends the search early with
    ``stopped="bound"`` (e.g. when the rest of a cost-sorted sequence cannot beat the best).
    The result's ``next_seq`` is the first position not evaluated.
    ``evaluator``: an object with ParallelEvaluator's interface and ``bind(task, db, cost, config, filters)``
    (e.g. :class:`~.cluster.DaskEvaluator`) used instead of a local process pool; if it has ``restore(result)``
    (a resumed checkpoint), the progress it returns counts as done.
    """
    budget = Budget.of(budget)
    task = load_task(task)
    db = load_db(db)
    config = config if config is not None else FilterConfig()
    full_total = total
    if budget.max_evaluations is not None:
        items = islice(items, budget.max_evaluations)
        total = budget.max_evaluations if total is None else min(total, budget.max_evaluations)
    pe = (
        evaluator.bind(task, db, cost, config, filters)
        if evaluator is not None
        else _local_evaluator(task, db, cost, config, filters, workers, total, mp_context)
    )
    result = _new_result(name, task, db, cost, pe, space, {"filters": config.to_json(), **(settings or {})})
    loop = _SearchLoop(result, float(bound), budget, stop_if)
    if hasattr(pe, "restore"):
        loop.done = pe.restore(result)
    result.history.append(loop.point())
    loop.finish(loop.run(pe, items, total, progress, name, full_total), first_seq)
    return result


def _local_evaluator(
    task: Task,
    db: ModulesDB,
    cost: CostFunction | str | None,
    config: FilterConfig,
    filters: Sequence[Filter] | None,
    workers: int | None,
    total: int | None,
    mp_context: Any,
) -> ParallelEvaluator:
    """A local process pool of at most ``workers`` processes, never more than assemblies to evaluate."""
    n = cap_workers(workers)
    if total is not None:  # never more processes than assemblies to evaluate (``--limit 1 --workers 1000``)
        n = max(1, min(n, total))
    return ParallelEvaluator(task, db, cost, config, filters, workers=n, mp_context=mp_context)


def _new_result(
    name: str, task: Task, db: ModulesDB, cost: CostFunction | str | None, pe: Any, space: dict | None, settings: dict
) -> SearchResult:
    """An empty result of optimizer ``name``, its funnel counting ``pe``'s filters."""
    result = SearchResult(
        optimizer=name,
        task_id=task.id,
        db_name=db.name,
        cost=cost_descriptor(cost),
        workers=pe.workers,
        space=space,
        settings=settings,
        task_goals=task_goal_records(task),
    )
    result.funnel = type(result.funnel)(pe.filter_names)
    return result


class _SearchLoop:
    """The state of one :func:`run_search` loop: the bound it shares with the workers, the stop tests, the
    assemblies done, and the result it fills in (evaluations, funnel, best, history, improvements)."""

    def __init__(
        self, result: SearchResult, limit: float, budget: Budget, stop_if: Callable[[SearchResult], bool] | None
    ) -> None:
        self.result, self.limit, self.budget, self.stop_if = result, limit, budget, stop_if
        self.t0 = time.perf_counter()
        self.deadline = None if budget.max_time is None else self.t0 + budget.max_time
        self.done = 0
        self.last_point = 0.0
        self.early = False

    def current_bound(self) -> float:
        """Only assemblies strictly cheaper than this can be valid: the given bound or the best so far."""
        best = self.result.best_cost
        return min(self.limit, best) if best is not None else self.limit

    def out_of_time(self) -> bool:
        return self.deadline is not None and time.perf_counter() >= self.deadline

    def should_stop(self) -> bool:
        """Checked before each chunk is sent: ``stop_if`` said so (sticky) or the time is up."""
        if self.stop_if is not None and self.stop_if(self.result):
            self.early = True
        return self.early or self.out_of_time()

    def point(self) -> dict:
        r = self.result
        return {"evaluations": r.evaluations, "time": time.perf_counter() - self.t0, "best_cost": r.best_cost}

    def run(
        self, pe: Any, items: Iterable, total: int | None, progress: bool, name: str, full_total: int | None
    ) -> str:
        """Stream ``items`` through ``pe`` into the result; why the search stopped."""
        stopped = "exhausted"
        bar: Progress | None = None
        try:
            with pe:
                pe.start()  # fork the workers before the progress bar starts its monitor thread
                bar = Progress(total, progress, desc=name)
                for evaluations in pe.stream(items, self.current_bound, self.should_stop, deadline=self.deadline):
                    self.take(evaluations)
                    bar.update(len(evaluations), self.result.funnel, self.result.best_cost)
            more = full_total is None or self.done < full_total
            if more and self.early:
                stopped = "bound"
            elif more and self.out_of_time():
                stopped = "max_time"
            elif more and self.budget.max_evaluations is not None and self.done >= self.budget.max_evaluations:
                stopped = "max_evaluations"
        except KeyboardInterrupt:
            stopped = "interrupted"
        finally:
            if bar is not None:
                bar.update(0, self.result.funnel, self.result.best_cost, force=True)
                bar.close()
        return stopped

    def finish(self, stopped: str, first_seq: int) -> None:
        """Close the result: wall time, why it stopped, the first position not evaluated, a last history point."""
        self.result.wall_time = time.perf_counter() - self.t0
        self.result.stopped = stopped
        self.result.next_seq = first_seq + self.done if stopped != "interrupted" else None
        self.result.history.append(self.point())

    def take(self, evaluations: Sequence[Any]) -> None:
        """Count a chunk of evaluations, keep the best valid one, and add a history point at most once a second."""
        result = self.result
        if isinstance(evaluations, Refusals):  # a batch of the look-up's refusals, counted as one by one
            result.evaluations += evaluations.count
            result.cpu_time += evaluations.seconds
            result.funnel.record_failures("family", evaluations.reasons, evaluations.seconds)
            self.done += evaluations.count
            evaluations = ()
        for ev in evaluations:
            result.evaluations += 1
            result.cpu_time += ev.cpu
            result.funnel.record_evaluation(ev)
            if ev.valid:
                result.valid += 1
                if ev.cost < self.limit and result.consider(ev):
                    result.history.append(self.point())
                    result.improvements.append({**self.point(), "cost": ev.cost, "ids": list(ev.ids), "seq": ev.seq})
        self.done += len(evaluations)
        now = time.perf_counter() - self.t0
        if now - self.last_point >= 1.0:
            self.last_point = now
            result.history.append(self.point())


class RandomSearch:
    """Evaluates assemblies drawn uniformly without replacement from a space (shows the interface is pluggable).

    Args:
        space: a :class:`~.space.SerialSpace`.
        cost: an assembly-level cost (default the mass).
        filters: a :class:`~.filters.FilterConfig` (or None for the defaults).
        samples: how many assemblies to draw (None: as many as the budget allows, at most the whole space).
        seed: the sampling seed (the IK seed is ``filters.seed``).
        workers, progress: as for :class:`~.exhaustive.ExhaustiveSearch`.
    """

    def __init__(
        self,
        space: SerialSpace,
        cost: CostFunction | str | None = "mass",
        filters: FilterConfig | None = None,
        samples: int | None = None,
        seed: int = 0,
        workers: int | None = None,
        progress: bool = True,
    ) -> None:
        self.space = space
        self.cost = cost
        self.config = filters if filters is not None else FilterConfig()
        self.samples = samples
        self.seed = seed
        cap_workers(workers)  # refuse a bad count before any work
        self.workers = workers
        self.progress = progress

    def optimize(self, task: Task, db: ModulesDB, budget: Budget | int | None = None) -> SearchResult:
        check_db(self.space, db)
        budget = Budget.of(budget)
        n = self.space.count if self.samples is None else min(self.samples, self.space.count)
        drawn = n if budget.max_evaluations is None else min(n, budget.max_evaluations)
        positions = random.Random(self.seed).sample(range(self.space.count), drawn)
        items = ((k, self.space[i]) for k, i in enumerate(positions))
        return run_space_search(
            self, "RandomSearch", items, n, task, db, budget, settings={"samples": n, "seed": self.seed}
        )


def run_space_search(
    search: Any, name: str, items: Iterable[tuple[int, Sequence[str]]], total: int | None, task: Task,
    db: ModulesDB, budget: Budget | int | None, **options: Any,
) -> SearchResult:  # fmt: skip
    """:func:`run_search` with a search's own ``cost``, ``config``, ``workers``, ``progress`` and ``space`` (those of
    :class:`RandomSearch` and :class:`~.exhaustive.ExhaustiveSearch`); ``options``: run_search's other keywords."""
    return run_search(name, items, total, task, db, cost=search.cost, config=search.config, workers=search.workers,
                      progress=search.progress, budget=budget, space=space_info(search.space), **options)  # fmt: skip


def check_db(space: SerialSpace, db: ModulesDB) -> None:
    if db is not space.db and (db.name != space.db.name or db.ids != space.db.ids):
        raise InputError(
            f"the module set {db.name!r} is not the one the search space was built on ({space.db.name!r})",
            value=db.name,
        )
