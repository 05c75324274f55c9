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
from timor_core.search.evaluate import cost_descriptor, load_db, load_task
from timor_core.search.filters import Filter, FilterConfig
from timor_core.search.parallel import ParallelEvaluator, Progress
from timor_core.search.result import SearchResult
from timor_core.search.space import SerialSpace
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
    if evaluator is not None:
        pe = evaluator.bind(task, db, cost, config, filters)
    else:
        n = cap_workers(workers)
        if total is not None:  # never more processes than assemblies to evaluate (``--limit 1 --workers 1000``)
            n = max(1, min(n, total))
        pe = ParallelEvaluator(task, db, cost, config, filters, workers=n, mp_context=mp_context)
    result = SearchResult(
        optimizer=name,
        task_id=task.id,
        db_name=db.name,
        cost=cost_descriptor(cost),
        workers=pe.workers,
        space=space,
        settings={"filters": config.to_json(), **(settings or {})},
    )
    result.funnel = type(result.funnel)(pe.filter_names)
    limit = float(bound)
    t0 = time.perf_counter()
    deadline = None if budget.max_time is None else t0 + budget.max_time
    bar: Progress | None = None
    done = 0
    last_point = 0.0

    def current_bound() -> float:
        return min(limit, result.best_cost) if result.best_cost is not None else limit

    def out_of_time() -> bool:
        return deadline is not None and time.perf_counter() >= deadline

    early = False

    def should_stop() -> bool:
        nonlocal early
        if stop_if is not None and stop_if(result):
            early = True
        return early or out_of_time()

    def point() -> dict:
        return {"evaluations": result.evaluations, "time": time.perf_counter() - t0, "best_cost": result.best_cost}

    if hasattr(pe, "restore"):
        done = pe.restore(result)
    result.history.append(point())
    stopped = "exhausted"
    try:
        with pe:
            pe.start()  # fork the workers before the progress bar starts its monitor thread
            bar = Progress(total, progress, desc=name)
            for evaluations in pe.stream(items, current_bound, should_stop):
                for ev in evaluations:
                    result.evaluations += 1
                    result.cpu_time += ev.cpu
                    result.funnel.record_evaluation(ev)
                    if ev.valid:
                        result.valid += 1
                        if ev.cost < limit and result.consider(ev):
                            result.history.append(point())
                            result.improvements.append({**point(), "cost": ev.cost, "ids": list(ev.ids), "seq": ev.seq})
                done += len(evaluations)
                now = time.perf_counter() - t0
                if now - last_point >= 1.0:
                    last_point = now
                    result.history.append(point())
                bar.update(len(evaluations), result.funnel, result.best_cost)
        more = full_total is None or done < full_total
        if more and early:
            stopped = "bound"
        elif more and out_of_time():
            stopped = "max_time"
        elif more and budget.max_evaluations is not None and done >= budget.max_evaluations:
            stopped = "max_evaluations"
    except KeyboardInterrupt:
        stopped = "interrupted"
    finally:
        if bar is not None:
            bar.update(0, result.funnel, result.best_cost, force=True)
            bar.close()
    result.wall_time = time.perf_counter() - t0
    result.stopped = stopped
    result.next_seq = first_seq + done if stopped != "interrupted" else None
    result.history.append(point())
    return result


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
        return run_search(
            "RandomSearch",
            items,
            n,
            task,
            db,
            cost=self.cost,
            config=self.config,
            workers=self.workers,
            progress=self.progress,
            budget=budget,
            space=space_info(self.space),
            settings={"samples": n, "seed": self.seed},
        )


def check_db(space: SerialSpace, db: ModulesDB) -> None:
    if db is not space.db and (db.name != space.db.name or db.ids != space.db.ids):
        raise InputError(
            f"the module set {db.name!r} is not the one the search space was built on ({space.db.name!r})",
            value=db.name,
        )
