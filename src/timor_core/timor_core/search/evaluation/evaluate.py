"""Evaluate one assembly for a task: the single entry point of the exhaustive search, random search and GA.

``evaluate(ids, task, db, cost, config, rng)`` runs the :mod:`.filters` chain and returns an :class:`Evaluation`
(plain data, picklable and JSON-able): valid or not, the assembly-level cost, per-goal IK configurations, and the
filter that failed with its reason. In a worker process, ``task`` and ``db`` may be given as references
(:class:`TaskRef` / :class:`DBRef`, or a module set's name or path, a task file's path); they are loaded once per
process (:func:`load_db`, :func:`load_task`) and the filter chain is cached, so calling ``evaluate`` per assembly
costs nothing extra.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.errors import InputError, TimorError
from timor_core.model.db import ModulesDB
from timor_core.search.evaluation.refs import DBRef, TaskRef, load_db, load_task
from timor_core.search.filtering.batch_decide import BatchLookup
from timor_core.search.filtering.certified import CertifiedRefusal
from timor_core.search.filtering.filter_chain import FilterChain
from timor_core.search.filtering.filters import Filter, FilterConfig, Funnel, GoalIK
from timor_core.task import Task
from timor_core.task.costs import CostFunction

__all__ = [
    "Evaluation",
    "Evaluator",
    "evaluate",
    "DBRef",
    "TaskRef",
    "load_db",
    "load_task",
]


# -- the result of one evaluation ------------------------------------------------------------------


@dataclass
class Evaluation:
    """The verdict on one assembly.

    Attributes:
        ids: the module IDs (base first).
        valid: True if it passed every filter.
        cost: the assembly-level cost (None if the assembly could not be built).
        goals: per pose goal (by ID): the IK configuration ``q``, ``success`` and ``reason`` (a goal may be
            missing when an earlier filter or goal failed first).
        failed_filter: the name of the filter that rejected it (None if valid).
        reason: why, in full (``"goal g1: collision with obstacle wall (in 3 of 3 reached configurations)"``).
        reason_key: the short form counted in the funnel (``"g1: collision with obstacle wall"``).
        seq: its position in the optimizer's sequence (the space index for the exhaustive search); ties in cost
            go to the smaller ``seq``.
        time: seconds spent (wall clock); ``timings``: seconds per filter entered; ``cpu``: CPU seconds of the
            evaluating process.
    """

    ids: tuple[str, ...]
    valid: bool
    cost: float | None = None
    goals: dict[str, GoalIK] = field(default_factory=dict)
    failed_filter: str | None = None
    reason: str = ""
    reason_key: str = ""
    seq: int = -1
    time: float = 0.0
    timings: tuple[float, ...] = ()
    cpu: float = 0.0

    @property
    def rank(self) -> tuple[float, int]:
        """Sort key of valid evaluations: (cost, seq)."""
        return (math.inf if self.cost is None else self.cost, self.seq)

    @property
    def q(self) -> dict[str, list[float] | None]:
        """Per goal, the configuration (None where IK did not run)."""
        return {k: g.q for k, g in self.goals.items()}

    def to_json(self) -> dict:
        return {
            "ids": list(self.ids),
            "valid": self.valid,
            "cost": self.cost,
            "goals": {k: g.to_json() for k, g in self.goals.items()},
            "failed_filter": self.failed_filter,
            "reason": self.reason,
            "reason_key": self.reason_key,
            "seq": self.seq,
            "time": self.time,
            "timings": list(self.timings),
            "cpu": self.cpu,
        }

    @classmethod
    def from_json(cls, data: Any, path: str = "$") -> Evaluation:
        """The inverse of :meth:`to_json`; a missing or malformed field is a FormatError naming its JSON path
        (``path``: where ``data`` sits in its file, ``$.best`` in a checkpoint)."""
        d = jf.obj(data, path)
        goals = jf.obj(d.get("goals", {}), f"{path}.goals")
        timings = jf.array(d.get("timings", []), f"{path}.timings")
        return cls(
            ids=tuple(str(m) for m in jf.array(jf.req(d, "ids", path), f"{path}.ids")),
            valid=bool(jf.req(d, "valid", path)),
            cost=None if d.get("cost") is None else jf.converted(d["cost"], f"{path}.cost", float),
            goals={str(k): GoalIK.from_json(v, f"{path}.goals.{k}") for k, v in goals.items()},
            failed_filter=d.get("failed_filter"),
            reason=d.get("reason", ""),
            reason_key=d.get("reason_key", ""),
            seq=jf.converted(d.get("seq", -1), f"{path}.seq", int),
            time=jf.converted(d.get("time", 0.0), f"{path}.time", float),
            timings=tuple(jf.converted(t, f"{path}.timings[{i}]", float) for i, t in enumerate(timings)),
            cpu=jf.converted(d.get("cpu", 0.0), f"{path}.cpu", float),
        )


_CHAINS: OrderedDict[tuple, tuple[Any, Any, FilterChain]] = OrderedDict()
_MAX_CHAINS = 8


def cost_descriptor(cost: CostFunction | str | None) -> str:
    if cost is None:
        return "mass"
    return cost.descriptor() if isinstance(cost, CostFunction) else str(cost)


def _chain(task: Task, db: ModulesDB, cost: CostFunction | str | None, config: FilterConfig) -> FilterChain:
    key = (id(task), id(db), cost_descriptor(cost), config)
    entry = _CHAINS.get(key)
    if entry is not None and entry[0] is task and entry[1] is db:
        _CHAINS.move_to_end(key)
        return entry[2]
    chain = FilterChain(task, db, cost, config)
    _CHAINS[key] = (task, db, chain)
    while len(_CHAINS) > _MAX_CHAINS:
        _CHAINS.popitem(last=False)
    return chain


def _seed(rng: Any, default: int) -> int:
    if rng is None:
        return default
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(2**32))
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        return int(rng)
    raise InputError("rng must be None, an int seed or a numpy Generator", value=type(rng).__name__)


def _evaluation(chain: FilterChain, ids: Sequence[str], bound: float, seq: int, seed: int | None) -> Evaluation:
    t0, c0 = time.perf_counter(), time.process_time()
    c = chain.candidate(ids, bound, seed)
    valid, timings = chain.run(c)
    return Evaluation(
        ids=c.ids,
        valid=valid,
        cost=c.cost,
        goals=c.goals,
        failed_filter=c.failed_filter,
        reason=c.reason,
        reason_key=c.reason_key,
        seq=seq,
        time=time.perf_counter() - t0,
        timings=tuple(timings),
        cpu=time.process_time() - c0,
    )


def evaluate(
    ids: Sequence[str],
    task: Task | TaskRef | str | Path,
    db: ModulesDB | DBRef | str | Path,
    cost: CostFunction | str | None = "mass",
    config: FilterConfig | FilterChain | None = None,
    rng: int | np.random.Generator | None = None,
    bound: float = math.inf,
    seq: int = -1,
) -> Evaluation:
    """Run the filter chain on one assembly (a tuple of module IDs) for a task.

    Args:
        ids: module IDs, base first, end effector last.
        task, db: objects, or references loaded once per process (a task file, a module set name or path,
            :class:`TaskRef`, :class:`DBRef`).
        cost: an assembly-level cost (descriptor or CostFunction; default the mass).
        config: a :class:`FilterConfig`, or a ready :class:`FilterChain` (then ``task``/``db``/``cost`` are its own).
        rng: the IK seed (default ``config.seed``); a Generator contributes one draw.
        bound: the best valid cost known; the ``bound`` filter rejects assemblies whose cost is not below it.
        seq: the position in the caller's sequence (stored in the result; used to break cost ties).
    """
    if isinstance(config, FilterChain):
        chain = config
    else:
        chain = _chain(load_task(task), load_db(db), cost, config if config is not None else FilterConfig())
    return _evaluation(chain, ids, bound, seq, _seed(rng, chain.config.seed))


class _Lookup(BatchLookup):
    """The batched look-up, noting the IDs (the very object) of the assembly it stopped at (``stopped``; None: it did
    not look), which the caller evaluates next: by the chain alone (``obstacles_4``: 613 of 632 such look-ups found
    nothing, ~28 us each); its family filter looks up the same certificates (and any learnt since) and gives the
    verdict, cost, reasons and records :meth:`Evaluator.certified` gives (``tests/test_certified.py``)."""

    stopped: Sequence[str] | None = None

    def refused(self, items: Sequence[tuple[float, Sequence[str]]], bound: float) -> tuple[int, dict[str, int], float]:
        """:meth:`BatchLookup.refused`, forgetting the last stop first (it notes a new one where it looks)."""
        self.stopped = None
        return super().refused(items, bound)

    def refusals(self, items: Sequence[tuple[float, Sequence[str]]], bound: float) -> list[int]:
        """:meth:`BatchLookup.refusals` (reached only where the look-up looks), noting the assembly it stopped at."""
        out = super().refusals(items, bound)
        self.stopped = items[len(out)][1] if self.on and len(out) < len(items) else None
        return out


class Evaluator:
    """A reusable evaluator (one filter chain, with its funnel) for many assemblies of one task.

    ``evaluator(ids, bound)`` evaluates one assembly; :meth:`evaluate_chunk` evaluates a list in order, lowering
    the bound whenever it finds a valid one (what a worker does with one chunk).
    """

    def __init__(
        self,
        task: Task | TaskRef | str | Path,
        db: ModulesDB | DBRef | str | Path,
        cost: CostFunction | str | None = "mass",
        config: FilterConfig | None = None,
        filters: Sequence[Filter] | None = None,
    ) -> None:
        self.task = load_task(task)
        self.db = load_db(db)
        self.config = config if config is not None else FilterConfig()
        self.chain = FilterChain(self.task, self.db, cost, self.config, filters)
        names = self.chain.names
        # the bound can be applied before the assembly is built: the default chain (assembly, then bound) and a
        # cost that is a sum over module properties (mass, numJ, moduleCost)
        self._early_bound = self.config.bound and names[:2] == ["assembly", "bound"]
        self._certified = CertifiedRefusal(self.chain)
        self.lookup = _Lookup(self._certified, self.chain.funnel, self._early_bound)  # many at once
        self._reasons: dict[tuple[float, float], str] = {}

    def cut(self, ids: Sequence[str], bound: float, seq: int = -1) -> Evaluation | None:
        """The bound filter's verdict without building the assembly, if the cost is known from the modules alone
        and is not below ``bound`` (else None: evaluate in full). Counted in the funnel like the filter's."""
        if not self._early_bound or bound == math.inf:
            return None
        try:
            value = self.cost.evaluate_modules([self.db.by_id[m] for m in ids])
        except TimorError:  # an unknown module: the assembly filter reports it
            return None
        if value is None or not math.isfinite(value) or value < bound:
            return None
        key = "cost not below the best found"
        self.chain.funnel.record("bound", key, (0.0, 0.0))
        reason = self._reasons.get((value, bound))
        if reason is None:  # the same few sums against the same bound, over and over: formatted once
            if len(self._reasons) > 4096:
                self._reasons.clear()
            reason = self._reasons[value, bound] = f"cost {value:.6g} is not below the best valid {bound:.6g} found"
        return Evaluation(
            tuple(str(m) for m in ids),
            False,
            value,
            failed_filter="bound",
            reason=reason,
            reason_key=key,
            seq=seq,
            timings=(0.0, 0.0),
        )

    @property
    def funnel(self) -> Funnel:
        return self.chain.funnel

    @property
    def cost(self) -> CostFunction:
        return self.chain.ctx.cost

    def certified(
        self, ids: Sequence[str], bound: float, seq: int = -1, price: float | None = None
    ) -> Evaluation | None:
        """The family filter's verdict by a certificate look-up alone, without the chain (:mod:`.certified`: the
        same evaluation the chain gives, counted in the funnel as it counts it); None: evaluate in full. ``price``:
        the cost's ``evaluate_modules`` of the modules if the caller has it."""
        t0 = time.perf_counter()
        found = self._certified.refusal(ids, bound, price)
        if found is None:
            return None
        cost, goal, record, key, reason = found
        spent = time.perf_counter() - t0
        timings = (0.0, 0.0, 0.0, spent)
        self.chain.funnel.record("family", key, timings)
        # its CPU time is taken as its wall time: a look-up takes ~10 us, process_time() ~2 us a call
        return Evaluation(tuple(map(str, ids)), False, cost, {goal: record}, "family", reason, key, seq, spent,
                          timings, spent)  # fmt: skip

    def refused(self, ids: Sequence[str], bound: float, price: float | None = None) -> tuple[str, float] | None:
        """The reason key and seconds of an assembly the certificate look-up refuses, counted in the funnel as
        :meth:`certified` counts it, without its :class:`Evaluation` (for a caller that only counts refusals: a
        shard's walk); None: call the evaluator (also where the bound could refuse it before the look-up)."""
        if self._early_bound and bound != math.inf:
            return None
        t0 = time.perf_counter()
        found = self._certified.decision(ids, bound, price)
        if found is None:
            return None
        key = self._certified.answer(found[1])[1]
        spent = time.perf_counter() - t0
        self.chain.funnel.record_failure("family", key, spent)
        return key, spent

    def __call__(
        self,
        ids: Sequence[str],
        bound: float = math.inf,
        seq: int = -1,
        seed: int | None = None,
        price: float | None = None,
    ) -> Evaluation:
        """Evaluate one assembly; ``price``: its cost as ``cost.evaluate_serial`` gives it, if the caller has it (the
        cost-ordered walk does), so that the look-up need not price it again. The assembly the batched look-up
        (:attr:`lookup`) last stopped at goes to the chain without a look-up of its own (see :class:`_Lookup`)."""
        cut = self.cut(ids, bound, seq)
        if cut is None and ids is not self.lookup.stopped:
            cut = self.certified(ids, bound, seq, price)
        return cut if cut is not None else _evaluation(self.chain, ids, bound, seq, seed)

    def evaluate_chunk(
        self, items: Iterable[tuple[int, Sequence[str]]], bound: float = math.inf, lower_bound: bool = True
    ) -> list[Evaluation]:
        """Evaluate ``(seq, ids)`` pairs in order; with ``lower_bound`` each valid result lowers the bound for the
        rest (a sequential search); without, every assembly is judged against ``bound`` alone (a GA generation,
        whose fitness must not depend on how the batch was split)."""
        out = []
        for seq, ids in items:
            ev = self(ids, bound, seq)
            if lower_bound and ev.valid and ev.cost is not None and ev.cost < bound:
                bound = ev.cost
            out.append(ev)
        return out
