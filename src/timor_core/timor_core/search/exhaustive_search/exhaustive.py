"""Constrained exhaustive search: every assembly of a :class:`~.space.SerialSpace` through the filter chain, with
the best-so-far bound ("a lighter valid robot is already known") skipping assemblies that cannot win.

>>> from timor_core import ModulesDB
>>> from timor_core.task import Task
>>> from timor_core.search import Budget, ExhaustiveSearch, paper_exp2_space
>>> db = ModulesDB.from_name("robco_like")
>>> search = ExhaustiveSearch(paper_exp2_space(db), cost="mass", workers=None)   # all cores
>>> result = search.optimize(Task.from_json_file("tasks/user_study.json"), db, budget=Budget(max_time=600))
>>> result.best_ids, result.best_cost, result.funnel.summary()                  # doctest: +SKIP
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from timor_core.errors import InputError
from timor_core.limits import cap_workers
from timor_core.model.db import ModulesDB
from timor_core.search.evaluation.batch_stream import PricedItems
from timor_core.search.evaluation.evaluate import cost_descriptor, load_task
from timor_core.search.evaluation.optimizer import Budget, check_db, run_space_search, space_info
from timor_core.search.evaluation.parallel import resolve_workers
from timor_core.search.evaluation.result import SearchResult, task_goal_records
from timor_core.search.filtering.filters import FilterConfig
from timor_core.search.filtering.space_reach import unreachable_goals
from timor_core.search.spaces.cost_order import by_cost
from timor_core.search.spaces.space import SerialSpace
from timor_core.task import Task
from timor_core.task.costs import CostFunction
from timor_core.task.feedback import task_base_placement

__all__ = ["ExhaustiveSearch"]


class ExhaustiveSearch:
    """Evaluates the assemblies of a space in space order (positions ``start`` .. ``stop - 1``).

    The bound filter compares each assembly's cost with the best valid cost known when it is evaluated, so
    once a light valid robot is found, heavier ones are skipped before their robot model is even built. The
    result is the valid assembly of least cost (ties: the smallest space index), independent of ``workers``.

    Args:
        space: the :class:`~.space.SerialSpace` to search.
        cost: an assembly-level cost (descriptor or CostFunction; default the mass).
        filters: a :class:`~.filters.FilterConfig` (None: the defaults).
        workers: processes (None: all cores; 1: in this process).
        progress: show a progress bar (assemblies/s, best cost, pass rate per filter).
        start, stop: a slice of the space (e.g. to continue a search from ``result.next_seq``).
        bound: only assemblies cheaper than this count as valid (e.g. the best cost of an earlier run).
        order: ``"space"`` (the space's order; ``seq`` is the space index) or ``"cost"``: cheapest first, streamed
            (:func:`~.cost_order.by_cost`: memory grows with the assemblies taken, not with the space), and the
            search stops as soon as the rest cannot beat the best (``stopped="bound"``): the first valid assembly
            is the optimum. ``seq`` is then the position in the cost order (ties: space order).
        evaluator: evaluate elsewhere than on a local process pool, e.g. on a Dask cluster
            (:class:`~.cluster.DaskEvaluator`; then ``workers`` is ignored).
    """

    def __init__(
        self,
        space: SerialSpace,
        cost: CostFunction | str | None = "mass",
        filters: FilterConfig | None = None,
        workers: int | None = None,
        progress: bool = True,
        start: int = 0,
        stop: int | None = None,
        bound: float = math.inf,
        order: str = "space",
        mp_context: Any = None,
        evaluator: Any = None,
    ) -> None:
        if not isinstance(space, SerialSpace):
            raise InputError("ExhaustiveSearch needs a SerialSpace", value=type(space).__name__)
        self.space = space
        self.cost = cost
        config = filters if filters is not None else FilterConfig()
        # family proofs on unless the caller said otherwise (FilterConfig.family_proof)
        self.config = config if config.family_proof is not None else replace(config, family_proof=True)
        cap_workers(workers)  # refuse a bad count before any work
        self.workers = workers
        self.progress = progress
        self.start = int(start)
        self.stop = space.count if stop is None else min(int(stop), space.count)
        self.bound = float(bound)
        if order not in ("space", "cost"):
            raise InputError("order must be 'space' or 'cost'", value=order)
        self.order = order
        self.mp_context = mp_context
        self.evaluator = evaluator

    def optimize(self, task: Task, db: ModulesDB | None = None, budget: Budget | int | None = None) -> SearchResult:
        """Search the space for ``task``; ``db`` must be the space's module set (default: it)."""
        db = self.space.db if db is None else db
        check_db(self.space, db)
        task = load_task(task)
        t0 = time.perf_counter()
        out_of_reach = unreachable_goals(self.space, task)
        if out_of_reach:  # proven for every assembly of the space: nothing to enumerate
            return self._unreachable(task, db, out_of_reach, time.perf_counter() - t0)
        sharded = self._in_shards(task, db, budget)
        if sharded is not None:
            return sharded
        it = self.space.iter(start=self.start, stop=self.stop)
        stop_if = None
        items: Iterable[tuple[int, Any]]
        if self.order == "space":
            items = ((self.start + k, ids) for k, ids in enumerate(it))
            first = self.start
        else:
            t0 = time.perf_counter()
            ranked = by_cost(self.space, self.cost, self.start, self.stop, base_placement=task_base_placement(task))
            prepare = time.perf_counter() - t0
            priced = PricedItems(ranked)  # (seq, ids); its last price for the stop rule; batches of one worker's

            def stop_if(result: SearchResult) -> bool:
                return result.best_cost is not None and priced.last >= result.best_cost

            items, first = priced, 0
        result = run_space_search(
            self,
            "ExhaustiveSearch",
            items,
            max(0, self.stop - self.start),
            task,
            db,
            budget,
            bound=self.bound,
            first_seq=first,
            settings=self._settings(),
            mp_context=self.mp_context,
            stop_if=stop_if,
            evaluator=self.evaluator,
        )
        if self.order == "cost":  # sorting by cost is part of the search
            result.wall_time += prepare
            result.settings["prepare_time"] = prepare
        return result

    def _in_shards(self, task: Task, db: ModulesDB, budget: Budget | int | None) -> SearchResult | None:
        """The cost-ordered search in shards, each walking its own part of the cost order: one per Dask worker of the
        evaluator (:mod:`.shards`), or one per worker process of this machine (:mod:`.local_shards`); None: the one
        stream (see :func:`_shardable`)."""
        if self.order != "cost":
            return None
        on_dask = getattr(self.evaluator, "shards", False) and _shardable(self.evaluator, budget)
        local = resolve_workers(self.workers) if self.evaluator is None and _shardable(None, budget) else 1
        if not on_dask and local < 2:
            return None
        from timor_core.search.exhaustive_search.shards import ShardedSearch, sharded_cost_search

        search = ShardedSearch(self.space, task, db, self.cost, self.config, self.start, self.stop, self.bound,
                               Budget.of(budget).max_time, self.progress, self._settings())  # fmt: skip
        if on_dask:
            return sharded_cost_search(self.evaluator, search)
        from timor_core.search.exhaustive_search.local_shards import local_sharded_search

        return local_sharded_search(search, local, self.mp_context)

    def _settings(self) -> dict[str, Any]:
        """The search's settings as its result reports them."""
        return {
            "start": self.start,
            "stop": self.stop,
            "bound": None if math.isinf(self.bound) else self.bound,
            "order": self.order,
        }

    def _unreachable(self, task: Task, db: ModulesDB, goals: list, seconds: float) -> SearchResult:
        """The result of a search that needs no evaluation: a goal lies beyond every assembly's reach
        (:func:`~.space_reach.unreachable_goals`); ``stopped="unreachable"``, the reasons in ``settings``."""
        result = SearchResult(
            optimizer="ExhaustiveSearch",
            task_id=task.id,
            db_name=db.name,
            cost=cost_descriptor(self.cost),
            space=space_info(self.space),
            settings={"filters": self.config.to_json(), **self._settings(), "unreachable": [g.text() for g in goals]},
            task_goals=task_goal_records(task),
        )
        result.wall_time = seconds
        result.stopped = "unreachable"
        result.next_seq = self.stop  # every assembly is decided: none reaches the goal
        result.history.append({"evaluations": 0, "time": seconds, "best_cost": None})
        return result


def _shardable(evaluator: Any, budget: Budget | int | None) -> bool:
    """The cost-ordered search can run as shards on the evaluator's workers: no evaluation budget (the first ``n``
    of the cost order need the one stream) and no resumed checkpoint of the streamed route."""
    resumed = getattr(evaluator, "resumed_route", None)
    return Budget.of(budget).max_evaluations is None and resumed in (None, "cost-shards")
