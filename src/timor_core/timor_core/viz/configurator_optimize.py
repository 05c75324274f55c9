"""The configurator's genetic algorithm in the background: its settings, its progress as the page shows it, and
the run (a thread that can be stopped), seeded with the design on screen."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from timor_core.errors import InputError, TimorError
from timor_core.model.db import ModulesDB
from timor_core.task import Task

__all__ = ["ConfiguratorError", "OptimizeSettings", "OptimizeProgress", "OptimizeRun", "ga_seed_genes"]

logger = logging.getLogger(__name__)


class ConfiguratorError(TimorError):
    """An edit of the design that cannot be done (no such slot, nothing to undo, no free connector, ...)."""


# -- the genetic algorithm in the background -----------------------------------------------------------


@dataclass(frozen=True)
class OptimizeSettings:
    """Settings of a GA run from the configurator (small defaults: it runs while the user watches)."""

    generations: int = 20
    population: int = 16
    max_dof: int = 6
    min_dof: int = 1
    seed: int = 0
    cost: str = "mass"
    workers: int = 1


@dataclass
class OptimizeProgress:
    """What a running GA has done so far; ``done`` once it has ended (``stopped`` says how, ``error`` if it failed)."""

    generation: int = 0
    generations: int = 0
    evaluated: int = 0
    best_cost: float | None = None
    best_ids: tuple[str, ...] | None = None
    best_q: dict[str, list[float] | None] = field(default_factory=dict)
    elapsed: float = 0.0
    done: bool = False
    stopped: str = ""
    error: str = ""
    seeded: bool = False

    @property
    def text(self) -> str:
        """A readable status line."""
        best = "none yet" if self.best_ids is None else f"{' '.join(self.best_ids)} (cost {self.best_cost:.6g})"
        state = "running" if not self.done else (f"failed: {self.error}" if self.error else f"done ({self.stopped})")
        return (
            f"{state}; generation {self.generation}/{self.generations}, evaluated {self.evaluated},"
            f" {self.elapsed:.1f} s; best: {best}"
        )


def ga_seed_genes(ga: Any, chain: Sequence[str]) -> np.ndarray | None:
    """The GA chromosome of a serial chain, or None if it has none (:meth:`~timor_core.search.GeneticSearch.encode`)."""
    return ga.encode(chain)


class OptimizeRun:
    """A GA (timor_core.search.GeneticSearch) started from a design in a background thread, with live progress."""

    def __init__(
        self,
        task: Task,
        db: ModulesDB,
        start: Sequence[str] | None = None,
        settings: OptimizeSettings | None = None,
        on_update: Callable[[OptimizeProgress], None] | None = None,
    ) -> None:
        self.task = task
        self.db = db
        self.start_chain = tuple(start) if start else None
        self.settings = settings or OptimizeSettings()
        self.on_update = on_update
        self.progress = OptimizeProgress(generations=self.settings.generations)
        self.result = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0
        self.ga = self._make_ga()

    def _make_ga(self):
        from timor_core.search import FilterConfig, GeneticSearch

        s = self.settings
        base = eef = None
        if self.start_chain:
            first, last = self.db.by_id(self.start_chain[0]), self.db.by_id(self.start_chain[-1])
            base = first.id if first.is_base else None
            eef = last.id if last.is_end_effector else None
        ga = GeneticSearch(
            self.db,
            cost=s.cost,
            max_dof=s.max_dof,
            min_dof=s.min_dof,
            generations=s.generations,
            population=s.population,
            seed=s.seed,
            filters=FilterConfig(seed=s.seed),
            workers=s.workers,
            progress=False,
            base=base,
            eef=eef,
            initial=[self.start_chain] if self.start_chain else None,
            on_batch=self._on_batch,
            stop=self._stop,
        )
        self.progress.seeded = bool(ga.initial)
        return ga

    @property
    def running(self) -> bool:
        """True while the GA thread runs."""
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> OptimizeRun:
        """Start the GA thread (once)."""
        if self._thread is not None:
            raise ConfiguratorError("this optimization was already started")
        if not self.task.goals:
            raise InputError(f"the task {self.task.id!r} has no goals: nothing to optimize for", value=self.task.id)
        self._t0 = time.perf_counter()
        self._thread = threading.Thread(target=self._run, name="timor-configurator-ga", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ask the GA to stop after the current generation."""
        self._stop.set()

    def join(self, timeout: float | None = None) -> OptimizeProgress:
        """Wait for the thread to end; the final progress."""
        if self._thread is not None:
            self._thread.join(timeout)
        return self.progress

    def _publish(self, **changes: Any) -> None:
        with self._lock:
            for k, v in changes.items():
                setattr(self.progress, k, v)
            self.progress.elapsed = time.perf_counter() - self._t0
            snapshot = replace(self.progress, best_q=dict(self.progress.best_q))
        if self.on_update is not None:
            try:
                self.on_update(snapshot)
            except Exception:  # noqa: BLE001  (a broken page must not end the search)
                logger.exception("the optimize progress callback failed")

    def _on_batch(self, result: Any, trial: int) -> None:
        generation = sum(1 for h in result.history if h.get("trial") == trial)
        self._publish(
            generation=generation,
            evaluated=result.evaluations,
            best_cost=result.best_cost,
            best_ids=None if result.best_ids is None else tuple(result.best_ids),
            best_q=dict(result.best_q),
        )

    def _run(self) -> None:
        try:
            result = self.ga.optimize(self.task, self.db)
        except Exception as exc:  # noqa: BLE001  (reported on the page)
            logger.exception("the GA failed")
            self._publish(done=True, error=f"{type(exc).__name__}: {exc}")
            return
        self.result = result
        generations = sum(1 for h in result.history if "trial" in h)
        self._publish(
            done=True,
            generation=generations,
            evaluated=result.evaluations,
            best_cost=result.best_cost,
            best_ids=None if result.best_ids is None else tuple(result.best_ids),
            best_q=dict(result.best_q),
            stopped="stopped" if self._stop.is_set() else result.stopped,
        )
