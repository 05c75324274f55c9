"""timor_core's configuration search with progress reports and cancellation (no ROS here).

The exhaustive and random searches run through :func:`timor_core.search.run_search`, whose ``stop_if`` hook
sees the partial result before each evaluation (workers=1) or chunk; the GA's ``on_batch`` hook sees it after
each evaluated generation. Both report progress and poll ``cancel()``; a cancel ends the search (the GA through
its ``stop`` event) with a partial result and ``stopped="canceled"``."""

from __future__ import annotations

import math
import random
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from timor_core import InputError, ModulesDB
from timor_core.common.jsonfields import parse_json_text
from timor_core.search import Budget, FilterConfig, GeneticSearch, SearchResult, load_space, run_search
from timor_core.search.evaluation.optimizer import space_info
from timor_core.search.spaces.presets import PRESETS
from timor_core.task import Task

__all__ = ["ALGORITHMS", "Progress", "load_task_request", "search"]

ALGORITHMS = ("exhaustive", "random", "ga")


@dataclass(frozen=True)
class Progress:
    evaluated: int
    best_cost: float | None
    best_ids: tuple[str, ...] | None


def load_task_request(task_json: str = "", task_path: str = "", task_name: str = "") -> Task:
    """A task from JSON text or, if that is empty, from a file (an absolute path: the node's working folder is
    not the caller's), or else an embedded task by name. Read within timor_core's limits (size, depth; regular
    files only)."""
    if task_json.strip():
        return Task.from_json_data(parse_json_text(task_json, what="task JSON"))
    if task_path.strip():
        path = Path(task_path)
        if not path.is_absolute():
            raise InputError(
                "task_path must be an absolute path (the search node's working folder is not yours)", value=task_path
            )
        return Task.from_json_file(path)
    if task_name.strip():
        return Task.from_name(task_name.strip())
    raise InputError("give a task as task_json, task_path or task_name")


def _space(spec: str, db: ModulesDB):
    """The search space of a request: a preset name (empty: auto) or the JSON text of SpaceOptions."""
    spec = spec.strip() or "auto"
    if spec.startswith("{"):
        return load_space(parse_json_text(spec, what="space JSON"), db)
    if spec not in PRESETS:  # a request names a preset or sends JSON; it never names a file on the node's machine
        raise InputError(f"space must be one of {', '.join(PRESETS)} or SpaceOptions as JSON text", value=spec)
    return load_space(spec, db)


class _Watch:
    """What a running search reports: progress at most every ``every`` seconds (and once at the end), and whether
    ``cancel()`` asked it to stop."""

    def __init__(self, on_progress: Callable[[Progress], None] | None, cancel: Callable[[], bool], every: float):
        self.on_progress, self.cancel, self.every = on_progress, cancel, every
        self.last = 0.0
        self.canceled = False

    def report(self, partial: SearchResult, force: bool = False) -> None:
        now = time.monotonic()
        if self.on_progress is not None and (force or now - self.last >= self.every):
            self.last = now
            self.on_progress(Progress(partial.evaluations, partial.best_cost, partial.best_ids))

    def stop_if(self, partial: SearchResult) -> bool:
        """Report, then poll ``cancel()``: True once the search should stop."""
        self.report(partial)
        self.canceled = self.canceled or bool(self.cancel())
        return self.canceled


def _check_request(task: Task, algorithm: str, budget_seconds: float, budget_evals: int, seed: int, space: str) -> None:
    """Refuse a search request's bad values before anything runs (InputError naming the field)."""
    if not (isinstance(budget_seconds, (int, float)) and 0 <= budget_seconds < math.inf):
        raise InputError("budget_seconds must be a finite number >= 0 (0: no time limit)", value=budget_seconds)
    if not (isinstance(budget_evals, int) and budget_evals >= 0):
        raise InputError("budget_evals must be an integer >= 0 (0: no limit)", value=budget_evals)
    if not (isinstance(seed, int) and seed >= 0):
        raise InputError("seed must be an integer >= 0", value=seed)
    if algorithm not in ALGORITHMS:
        raise InputError(f"algorithm must be one of {', '.join(ALGORITHMS)}", value=algorithm)
    if not task.goals:
        raise InputError(f"the task {task.id!r} has no goals: nothing to search for")
    if algorithm == "ga" and space.strip() not in ("", "auto"):
        raise InputError("a space shapes the exhaustive and random search; the GA has its own", value=space)


def search(
    task: Task,
    db: ModulesDB,
    *,
    algorithm: str = "exhaustive",
    cost: str = "mass",
    budget_seconds: float = 0.0,
    budget_evals: int = 0,
    seed: int = 0,
    workers: int = 1,
    space: str = "",
    on_progress: Callable[[Progress], None] | None = None,
    cancel: Callable[[], bool] | None = None,
    report_every: float = 0.2,
) -> tuple[SearchResult, bool]:
    """Run a search; returns the result and whether it was canceled. ``on_progress`` is called at most every
    ``report_every`` seconds and once at the end; ``cancel()`` is polled between evaluations. ``space`` (exhaustive
    and random search): a preset name (empty: auto) or SpaceOptions as JSON text."""
    algorithm = algorithm or "exhaustive"
    _check_request(task, algorithm, budget_seconds, budget_evals, seed, space)
    budget = Budget(int(budget_evals) or None, float(budget_seconds) or None)
    config = FilterConfig(seed=int(seed))
    watch = _Watch(on_progress, cancel or (lambda: False), report_every)
    if algorithm == "ga":
        result = _ga(task, db, cost, budget, config, int(seed), workers, watch)
    else:
        result = _serial_search(task, db, algorithm, space, cost, budget, config, int(seed), workers, watch)
    if watch.canceled:
        result.stopped = "canceled"
    watch.report(result, force=True)
    return result, watch.canceled


def _serial_search(
    task: Task, db: ModulesDB, algorithm: str, space: str, cost: str, budget: Budget, config: FilterConfig,
    seed: int, workers: int, watch: _Watch,
) -> SearchResult:  # fmt: skip
    """The exhaustive search (every assembly of the space in order) or the random one (a sample without repeats)."""
    serial = _space(space, db)
    items: Iterable[tuple[int, Sequence[str]]]
    if algorithm == "exhaustive":
        items = enumerate(serial.iter())
    else:
        n = serial.count
        drawn = n if budget.max_evaluations is None else min(n, budget.max_evaluations)
        positions = random.Random(seed).sample(range(n), drawn)
        items = ((k, serial[i]) for k, i in enumerate(positions))
    name = "ExhaustiveSearch" if algorithm == "exhaustive" else "RandomSearch"
    return run_search(
        name,
        items,
        serial.count,
        task,
        db,
        cost=cost,
        config=config,
        workers=workers,
        progress=False,
        budget=budget,
        space=space_info(serial),
        settings={"seed": seed},
        stop_if=watch.stop_if,
    )


def _ga(
    task: Task, db: ModulesDB, cost: str, budget: Budget, config: FilterConfig, seed: int, workers: int, watch: _Watch
) -> SearchResult:
    stop = threading.Event()

    def on_batch(partial: SearchResult, _trial: int) -> None:
        if watch.stop_if(partial):
            stop.set()

    optimizer = GeneticSearch(
        db, cost=cost, seed=seed, filters=config, workers=workers, progress=False, on_batch=on_batch, stop=stop
    )
    return optimizer.optimize(task, db, budget)


def nan_if_none(x: float | None) -> float:
    return math.nan if x is None else float(x)


def ids_list(ids: Sequence[str] | None) -> list[str]:
    return [str(i) for i in ids] if ids else []
