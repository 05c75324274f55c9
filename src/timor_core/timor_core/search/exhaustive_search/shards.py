"""The cost-ordered exhaustive search on a Dask cluster, one shard of the space per worker, each worker walking
its own shard cheapest first (:mod:`.shard_worker`): the client only starts the shards, passes each shard's best
on to every worker, and gathers the results.

Streaming the cost order from the client (:meth:`~.cluster.DaskEvaluator.stream`) costs the client and the
scheduler a task, a few dozen milliseconds of CPU, per chunk; on a machine with as many cores as workers they
compete with the workers. Here a search is ``k`` tasks (``k`` = the workers; a resumed checkpoint keeps its
``k``) and a few events: each shard's best (at most ``k``) and a progress report per shard every
``report_every`` seconds. The answer is the in-process search's: the valid assembly of least ``(cost,
position)`` (see :mod:`.shard_worker`); its position in the cost order (``best_seq``) is counted after the
shards end by walking the cost order up to it (no evaluation: ~10 µs per assembly before it).

Checkpoints (``DaskEvaluator(checkpoint=...)``) hold each shard's state (candidates taken, counts, funnel,
best), written at most every ``report_every`` seconds and at the end; ``resume=`` continues each shard after
the candidates it had taken. A worker lost mid-run has its shard run again from the last start (its counts
are the rerun's: nothing is counted twice); the other shards go on.

The client side (:func:`run_shards`) runs on any :class:`ShardExecutor`: :class:`DaskShards` here, and
:class:`~.local_shards.LocalShards` for this machine's processes (no checkpoints there), so the two routes are one
implementation.
"""

from __future__ import annotations

import json
import math
import queue
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from timor_core.common.fileio import write_json
from timor_core.model.db import ModulesDB
from timor_core.search.dask_cluster.checkpoint import CHECKPOINT_VERSION, refuse_changed
from timor_core.search.dask_cluster.cluster import ClusterError, DaskEvaluator
from timor_core.search.dask_cluster.dask_worker import forget_bound, publish_bound
from timor_core.search.evaluation.evaluate import cost_descriptor
from timor_core.search.evaluation.optimizer import space_info
from timor_core.search.evaluation.parallel import STOP_GRACE
from timor_core.search.evaluation.progress import Progress
from timor_core.search.evaluation.result import SearchResult, task_goal_records
from timor_core.search.exhaustive_search.shard_worker import ShardJob, ShardState, run_shard
from timor_core.search.filtering.filters import FilterConfig
from timor_core.search.filtering.funnel import Funnel
from timor_core.search.spaces.cost_order import by_cost_indexed
from timor_core.search.spaces.space import SerialSpace
from timor_core.task import Task
from timor_core.task.costs import CostFunction
from timor_core.task.feedback import task_base_placement

__all__ = [
    "SHARD_ROUTE", "DaskShards", "ShardExecutor", "ShardedSearch", "cost_rank", "rank_from_tails", "run_shards",
    "sharded_cost_search", "sharded_result", "WORKER_PRELOAD",
]  # fmt: skip

#: what the fork server of a local cluster's forked workers imports (``forked_workers(WORKER_PRELOAD)``, from
#: :mod:`timor_core.search.dask_cluster.dask_connect`): the worker side of the searches and their compiled kernels
WORKER_PRELOAD = "timor_core.search.exhaustive_search.worker_preload"

#: the ``route`` of a checkpoint written by :func:`sharded_cost_search`
SHARD_ROUTE = "cost-shards"


def cost_rank(
    space: SerialSpace, cost: Any, start: int, stop: int, base_placement: Any, until: int | tuple[float, int]
) -> int:
    """How many assemblies come before space position ``until`` in the cost order of positions ``start .. stop -
    1`` (or, given a ``(cost, position)``, before that key): the in-process search's ``seq`` of it."""
    n = 0
    for price, index, _ in by_cost_indexed(space, cost, start, stop, base_placement=base_placement):
        if index == until if isinstance(until, int) else (price, index) >= until:
            return n
        n += 1
    return n


def rank_from_tails(states: list[ShardState], index: int) -> int | None:
    """The best's position in the whole cost order from the shards' counts and last keys (:attr:`ShardState.tail`),
    or None if a shard's tail does not reach back before it (then :func:`cost_rank` walks the order)."""
    key = next((k for s in states for k in s.tail if k[1] == index), None)
    if key is None:
        return None
    n = 0
    for s in states:
        if not _reached(s, key):
            return None  # (keys of its stream before the best it never took: a count of the taken misses them)
        after = sum(1 for k in s.tail if k >= key)
        if after == len(s.tail) and len(s.tail) < s.taken:
            return None  # the keys before the tail are not known to come before the best
        n += s.taken - after
    return n


def _reached(state: ShardState, key: tuple[float, int]) -> bool:
    """The shard took every key of its stream before ``key``: it ran out, or took or stopped at one not before it.
    Why: a shard stopped by the deadline, cancelled (its last report stands) or never started took only some of
    them; its ``taken`` then counts fewer than the cost order holds before the best (:func:`cost_rank` counts them)."""
    return (
        state.stopped == "exhausted"
        or (bool(state.tail) and state.tail[-1] >= key)
        or (state.next is not None and state.next >= key)
    )


@dataclass(frozen=True)
class ShardedSearch:
    """A cost-ordered exhaustive search to run in shards, as ``ExhaustiveSearch(order="cost")`` hands it to either
    route (:func:`sharded_cost_search` on Dask, :func:`~.local_shards.local_sharded_search` on local processes):
    positions ``start .. stop - 1`` of ``space`` for ``task``, the bound, the time budget, the progress bar and the
    settings the result reports."""

    space: SerialSpace
    task: Task
    db: ModulesDB
    cost: CostFunction | str | None = "mass"
    config: FilterConfig | None = None
    start: int = 0
    stop: int | None = None
    bound: float = math.inf
    max_time: float | None = None
    progress: bool = True
    settings: dict | None = None

    @property
    def end(self) -> int:
        """The first position after the search (``stop``, at most the space's count)."""
        return self.space.count if self.stop is None else min(self.stop, self.space.count)

    def new_result(self) -> SearchResult:
        """The result before any shard has run: what was searched, the filter settings, the first history point."""
        result = SearchResult(
            "ExhaustiveSearch",
            self.task.id,
            self.db.name,
            cost_descriptor(self.cost),
            space=space_info(self.space),
            task_goals=task_goal_records(self.task),
        )
        result.settings = {"filters": (self.config or FilterConfig()).to_json(), **(self.settings or {})}
        result.history.append({"evaluations": 0, "time": 0.0, "best_cost": None})
        return result


class ShardExecutor(Protocol):
    """Where the shards of one search run, ``concurrent.futures``-like: ``submit`` returns a future (``result``,
    ``add_done_callback``, ``cancel``) of a shard's final state (JSON); the shards' reports arrive on ``events``
    as ``("event", {"kind", "shard", "state"})``. :class:`DaskShards` (a Dask ``Client``) and
    :class:`~.local_shards.LocalShards` (this machine's processes) are the two."""

    k: int  # the shards (one per worker slot, or a resumed checkpoint's)
    checkpoint: Path | None
    resume_path: Path | None
    report_every: float
    filter_names: list[str]

    def open(self, token: str, topic: str, events: queue.Queue) -> None: ...
    def submit(self, job: ShardJob) -> Any: ...
    def share(self, token: str, best: tuple[float, int]) -> None: ...
    def cancel(self, futures: list[Any], timed_out: bool) -> None: ...
    def close(self, token: str, topic: str) -> None: ...


class DaskShards:
    """The shards on a Dask cluster's workers (:class:`ShardExecutor`): one per worker thread, each pinned to its
    own; the best passed on by ``client.run``, the reports as Dask events."""

    def __init__(self, de: DaskEvaluator, resumed: dict | None) -> None:
        self.de = de
        info = de.client.scheduler_info().get("workers", {})
        self.slots: list[str | None] = [a for a in sorted(info) for _ in range(int(info[a].get("nthreads", 1)))]
        self.k = len(resumed["states"]) if resumed is not None else max(1, len(self.slots))
        self.slots = self.slots or [None]
        self.checkpoint, self.resume_path = de.checkpoint, de.resume_path
        self.report_every, self.filter_names = de.report_every, de.filter_names

    def open(self, token: str, topic: str, events: queue.Queue) -> None:
        self.de.client.subscribe_topic(topic, lambda event: events.put(("event", event[1])))

    def submit(self, job: ShardJob) -> Any:
        w = self.slots[job.index % len(self.slots)]
        return self.de.client.submit(run_shard, job, key=f"timor-shard-{job.index}-{job.token}", pure=False,
                                     workers=None if w is None else [w], allow_other_workers=True,
                                     retries=self.de.retries)  # fmt: skip

    def share(self, token: str, best: tuple[float, int]) -> None:
        self.de.client.run(publish_bound, token, *best, on_error="ignore")

    def cancel(self, futures: list[Any], timed_out: bool) -> None:
        self.de.client.cancel(futures)
        self.de.abandoned = self.de.abandoned or timed_out

    def close(self, token: str, topic: str) -> None:
        client = self.de.client
        client.unsubscribe_topic(topic)
        try:
            client.run(forget_bound, token, on_error="ignore")
        except Exception:  # noqa: BLE001 - the cluster is going away; its workers forget with it
            pass


class _Run:
    """One sharded search's client side: the shards' latest states, the shared best, events, checkpoints."""

    def __init__(self, ex: ShardExecutor, space: SerialSpace, header: dict, resumed: dict | None, t0: float) -> None:
        self.ex, self.space, self.header = ex, space, header
        if resumed is not None:
            refuse_changed(resumed.get("digests"), header["digests"], ex.resume_path)
            for key in ("task", "db", "cost", "space", "start", "stop"):
                if resumed.get(key) != header[key]:
                    raise ClusterError(f"the checkpoint is of another search ({key} differs)", value=resumed.get(key))
            self.states = [ShardState.from_json(s, f"$.states[{i}]") for i, s in enumerate(resumed["states"])]
        else:
            self.states = [ShardState(r) for r in range(ex.k)]
        self.resumed = resumed is not None
        self.token = uuid.uuid4().hex
        self.topic = f"timor-shards-{self.token}"
        self.events: queue.Queue = queue.Queue()
        self.shared: tuple[float, int] | None = None
        self.found: dict[int, float] = {}  # position of each shard's best -> seconds until the client had it
        self.initial = {s.best.seq for s in self.states if s.best is not None}
        self.t0 = t0
        self.saved = time.monotonic()
        self.give_up: float | None = None  # a ``time.time()``: the jobs' deadline + STOP_GRACE (None: none)

    @property
    def k(self) -> int:
        return len(self.states)

    def share(self, state: ShardState, again: bool = False, tell: bool = True) -> None:
        """Pass a shard's best on to every worker if it beats the one shared (``again``: re-send the shared one,
        for a worker that replaced a lost one; ``tell=False``: only note it, no shard is left to tell)."""
        best, improved = state.best, False
        if best is not None and best.cost is not None:
            if best.seq not in self.initial:
                self.found.setdefault(best.seq, time.perf_counter() - self.t0)
            if self.shared is None or (best.cost, best.seq) < self.shared:
                self.shared, improved = (best.cost, best.seq), True
        if self.shared is None or not tell or not (improved or again):
            return
        self.ex.share(self.token, self.shared)

    def checkpoint(self, force: bool = False) -> None:
        path = self.ex.checkpoint
        if path is None or not (force or time.monotonic() - self.saved >= self.ex.report_every):
            return
        self.saved = time.monotonic()
        write_json(path, {**self.header, "shards": self.k, "states": [s.to_json() for s in self.states]}, indent=1)

    def launch(self, spec: Any, bound: float, deadline: float | None) -> list[Any]:
        self.ex.open(self.token, self.topic, self.events)
        self.give_up = None if deadline is None else deadline + STOP_GRACE
        for state in self.states:
            self.share(state)
        futures = []
        for r, state in enumerate(self.states):
            job = ShardJob(spec, self.space.options.canonical_json(), r, self.k, self.token, self.topic,
                           self.header["start"], self.header["stop"], bound, deadline, self.ex.report_every,
                           state.text() if self.resumed else None, self.space.fingerprint)  # fmt: skip
            fut = self.ex.submit(job)
            fut.add_done_callback(lambda f, r=r: self.events.put(("done", r, f)))
            futures.append(fut)
        return futures

    def wait(self, futures: list[Any], bar: Progress) -> str:
        """Take events until every shard has ended, or ``STOP_GRACE`` seconds past the jobs' deadline (a shard in one
        long evaluation, or compiling numba's kernels, never sees it: it is cancelled, its last report stands); why
        the search stopped."""
        pending = set(range(self.k))
        shown = sum(s.evaluations for s in self.states)
        try:
            while pending:
                left = None if self.give_up is None else max(0.0, self.give_up - time.time())
                try:
                    item = self.events.get(timeout=left)
                except queue.Empty:
                    self.ex.cancel(futures, timed_out=True)
                    return "max_time"
                if item[0] == "done":
                    r = item[1]
                    self.states[r] = ShardState.from_json(item[2].result())
                    pending.discard(r)
                    self.share(self.states[r], tell=bool(pending))
                else:
                    msg = item[1]
                    r = int(msg["shard"])
                    if r not in pending:
                        continue  # a late report of a shard already ended
                    self.states[r] = ShardState.from_json(json.loads(msg["state"]))
                    self.share(self.states[r], again=msg["kind"] == "progress")
                self.checkpoint()
                total = sum(s.evaluations for s in self.states)
                if bar.bar is not None:
                    shared = None if self.shared is None else self.shared[0]
                    bar.update(total - shown, merged_funnel(self.ex.filter_names, self.states), shared)
                shown = total
        except KeyboardInterrupt:
            self.ex.cancel(futures, timed_out=False)
            return "interrupted"
        except BaseException:  # a shard failed (after its retries): the others are of no use any more
            self.ex.cancel(futures, timed_out=False)
            raise
        reasons = {s.stopped for s in self.states}
        if "max_time" in reasons:
            return "max_time"
        return "exhausted" if reasons == {"exhausted"} else "bound"


def run_shards(ex: ShardExecutor, search: ShardedSearch, result: SearchResult, header: dict, resumed: dict | None,
               spec: Any, t0: float) -> SearchResult:  # fmt: skip
    """The one sharded search, on any :class:`ShardExecutor`: start a shard per slot, pass the best on, take the
    reports until every shard has ended, then sum them into ``result``."""
    run = _Run(ex, search.space, header, resumed, t0)
    result.settings.update(prepare_time=0.0, shards=run.k)
    result.funnel = type(result.funnel)(ex.filter_names)
    max_time = search.max_time
    deadline = None if max_time is None else time.time() + max_time - (time.perf_counter() - t0)
    futures = run.launch(spec, search.bound, deadline)
    bar = Progress(header["stop"] - header["start"], search.progress, desc="ExhaustiveSearch")
    try:
        stopped = run.wait(futures, bar)
    finally:
        run.checkpoint(force=True)
        ex.close(run.token, run.topic)
        bar.close()
    return sharded_result(result, run, stopped, search.space, search.task, t0)


def sharded_cost_search(de: DaskEvaluator, search: ShardedSearch) -> SearchResult:
    """``ExhaustiveSearch(order="cost", evaluator=de).optimize(...)`` with the shards on ``de``'s workers (see the
    module's description); the same best assembly, cost and ``best_seq`` as the in-process search."""
    t0 = time.perf_counter()
    space, task, db, start, stop = search.space, search.task, search.db, search.start, search.end
    de.bind(task, db, search.cost, search.config)
    resumed = de.shard_checkpoint
    header = {
        "version": CHECKPOINT_VERSION,
        "kind": "timor-search-checkpoint",
        "route": SHARD_ROUTE,
        "task": task.id,
        "db": db.name,
        "cost": cost_descriptor(search.cost),
        "space": space.fingerprint,
        "start": start,
        "stop": stop,
        "digests": de.search_digests([space.fingerprint, SHARD_ROUTE, start, stop]),
    }
    result = search.new_result()
    with de:
        de.start()
        result.workers = de.workers
        return run_shards(DaskShards(de, resumed), search, result, header, resumed, de.worker_spec(), t0)


def merged_funnel(names: list[str], states: list[ShardState]) -> Funnel:
    """One funnel of the filters ``names`` with every shard's counts and reasons added up."""
    funnel = Funnel(names)
    for s in states:
        if s.funnel is not None:
            funnel.merge(s.funnel)
    return funnel


def sharded_result(result: SearchResult, run: Any, stopped: str, space: SerialSpace, task: Task,
                   t0: float) -> SearchResult:  # fmt: skip
    """Sum the shards' states into the result; the best's position in the whole cost order. ``run``: the shards'
    ``states``, the search's ``header`` (start, stop), ``found`` (when each shard's best was known, s) and
    ``initial`` (the positions of bests from a resumed checkpoint)."""
    start, stop = run.header["start"], run.header["stop"]
    for s in run.states:
        result.evaluations += s.evaluations
        result.valid += s.valid
        result.cpu_time += s.cpu
        if s.funnel is not None:
            result.funnel.merge(s.funnel)
    bests = [s.best for s in run.states if s.best is not None]
    placement = task_base_placement(task)
    if bests:
        best = min(bests, key=lambda ev: ev.rank)
        index = best.seq
        rank = rank_from_tails(run.states, index)
        best.seq = rank if rank is not None else cost_rank(space, result.cost, start, stop, placement, index)
        result.consider(best)
        seen = run.found.get(index, 0.0)  # when the client heard of it (0: from the resumed checkpoint)
        result.improvements.append(
            {"evaluations": result.evaluations, "time": seen, "cost": best.cost, "ids": list(best.ids)}
            | {"seq": best.seq, **({"resumed": True} if index in run.initial else {})}
        )
    wall = time.perf_counter() - t0
    if stopped == "interrupted":
        result.next_seq = None
    elif stopped == "exhausted":
        result.next_seq = stop - start
    elif result.best_seq is not None and stopped == "bound":
        result.next_seq = result.best_seq + 1  # the later positions cannot beat it
    else:
        nexts = [s.next for s in run.states if s.next is not None and s.stopped != "exhausted"]
        # no shard got to say where it stopped (stopped before its process started): nothing is decided, so a
        # continuation starts at the beginning
        result.next_seq = cost_rank(space, result.cost, start, stop, placement, min(nexts)) if nexts else 0
    result.stopped = stopped
    result.wall_time = wall
    result.history.append({"evaluations": result.evaluations, "time": wall, "best_cost": result.best_cost})
    return result
