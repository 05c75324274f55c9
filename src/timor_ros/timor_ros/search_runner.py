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
from typing import Any

from timor_core import InputError, ModulesDB
from timor_core.common.jsonfields import parse_json_text
from timor_core.search import Budget, FilterConfig, GeneticSearch, SearchResult, load_space, run_search
from timor_core.search.optimizer import space_info
from timor_core.search.presets import PRESETS
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
    budget = Budget(int(budget_evals) or None, float(budget_seconds) or None)
    config = FilterConfig(seed=int(seed))
    cancel = cancel or (lambda: False)
    state: dict[str, Any] = {"last": 0.0, "canceled": False}

    def report(p: Progress, force: bool = False) -> None:
        now = time.monotonic()
        if on_progress is not None and (force or now - state["last"] >= report_every):
            state["last"] = now
            on_progress(p)

    if algorithm == "ga" and space.strip() not in ("", "auto"):
        raise InputError("a space shapes the exhaustive and random search; the GA has its own", value=space)
    if algorithm == "ga":
        result = _ga(task, db, cost, budget, config, int(seed), workers, report, cancel, state)
    else:
        serial = _space(space, db)
        items: Iterable[tuple[int, Sequence[str]]]
        if algorithm == "exhaustive":
            items = enumerate(serial.iter())
        else:
            n = serial.count
            drawn = n if budget.max_evaluations is None else min(n, budget.max_evaluations)
            positions = random.Random(int(seed)).sample(range(n), drawn)
            items = ((k, serial[i]) for k, i in enumerate(positions))
        total = serial.count

        def stop_if(partial: SearchResult) -> bool:
            report(Progress(partial.evaluations, partial.best_cost, partial.best_ids))
            if cancel():
                state["canceled"] = True
            return state["canceled"]

        name = "ExhaustiveSearch" if algorithm == "exhaustive" else "RandomSearch"
        result = run_search(
            name,
            items,
            total,
            task,
            db,
            cost=cost,
            config=config,
            workers=workers,
            progress=False,
            budget=budget,
            space=space_info(serial),
            settings={"seed": int(seed)},
            stop_if=stop_if,
        )
    if state["canceled"]:
        result.stopped = "canceled"
    report(Progress(result.evaluations, result.best_cost, result.best_ids), force=True)
    return result, bool(state["canceled"])


def _ga(task, db, cost, budget, config, seed, workers, report, cancel, state) -> SearchResult:
    stop = threading.Event()

    def on_batch(partial: SearchResult, _trial: int) -> None:
        report(Progress(partial.evaluations, partial.best_cost, partial.best_ids))
        if cancel():
            state["canceled"] = True
            stop.set()

    optimizer = GeneticSearch(
        db, cost=cost, seed=seed, filters=config, workers=workers, progress=False, on_batch=on_batch, stop=stop
    )
    return optimizer.optimize(task, db, budget)


def nan_if_none(x: float | None) -> float:
    return math.nan if x is None else float(x)


def ids_list(ids: Sequence[str] | None) -> list[str]:
    return [str(i) for i in ids] if ids else []
