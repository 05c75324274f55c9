"""FilterChain: runs the filters of ``search.filters`` on one assembly after the other, cheapest first, and counts
per filter how many candidates entered, passed and why they failed (a ``Funnel``)."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

from timor_core.errors import InputError
from timor_core.search.filtering.filter_state import Candidate, FilterConfig, TaskContext
from timor_core.search.filtering.filters import Filter, default_filters
from timor_core.search.filtering.funnel import Funnel
from timor_core.task.costs import CostFunction

if TYPE_CHECKING:
    from timor_core.model.db import ModulesDB
    from timor_core.task import Task

__all__ = ["FilterChain"]


class FilterChain:
    """Runs filters in order on a :class:`Candidate`, stopping at the first that fails, and keeps a :class:`Funnel`.

    Args:
        task, db: the task and the module set.
        cost: an assembly-level cost (CostFunction or descriptor, default ``"mass"``); terms that need a
            trajectory are refused (InputError).
        config: a :class:`FilterConfig`.
        filters: the filter objects (default: :func:`default_filters`); custom filters may subclass
            :class:`Filter` and read ``candidate.ctx``.
    """

    def __init__(
        self,
        task: Task,
        db: ModulesDB,
        cost: CostFunction | str | None = "mass",
        config: FilterConfig | None = None,
        filters: Sequence[Filter] | None = None,
    ) -> None:
        self.config = config if config is not None else FilterConfig()
        self.ctx = TaskContext(task, db, cost, self.config)
        self.filters: list[Filter] = list(filters) if filters is not None else default_filters()
        names = [f.name for f in self.filters]
        if len(set(names)) != len(names) or not all(names):
            raise InputError("filters need distinct, non-empty names", value=names)
        self.funnel = Funnel(names)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.filters]

    def candidate(self, ids: Sequence[str], bound: float = math.inf, seed: int | None = None) -> Candidate:
        """A fresh candidate for ``ids`` (``seed``: default ``config.seed``)."""
        s = self.config.seed if seed is None else int(seed)
        return Candidate(tuple(map(str, ids)), self.ctx, bound=float(bound), seed=s)

    def run(self, c: Candidate) -> tuple[bool, list[float]]:
        """Run the filters on a candidate: ``(passed every filter, seconds per entered filter)``."""
        timings: list[float] = []
        clock = time.perf_counter
        for f in self.filters:
            t0 = clock()
            ok = f(c)
            timings.append(clock() - t0)
            if not ok:
                c.failed_filter = f.name
                if not c.reason_key:
                    c.fail(f"{f.name} failed")
                self.funnel.record(f.name, c.reason_key, timings)
                return False, timings
        self.funnel.record(None, "", timings)
        return True, timings

    def __call__(self, ids: Sequence[str], bound: float = math.inf) -> Candidate:
        """Filter one assembly; returns the candidate with its verdict and intermediate results."""
        c = self.candidate(ids, bound)
        self.run(c)
        return c
