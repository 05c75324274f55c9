"""The cost-ordered exhaustive search on this machine's processes in shards, as on a Dask cluster (:mod:`.shards`).

Why: the process pool of :mod:`.parallel` has the parent walk the cost order and send it out in chunks; on a
machine with as many cores as workers the parent's walk and relaying (~1.7 s of CPU on ``obstacle_middle``) take
a core's time from the workers, the family certificates reach the other workers only with the next chunk, and
the chunks in flight when the best is found are evaluated for nothing (~1,000 assemblies). Here each worker
process walks its own shard of the space (:func:`~.cost_order.by_cost_indexed`, a share of its subtrees) and
evaluates it (:func:`~.shard_worker.run_shard`); the best ``(cost, position)`` found lives in shared memory, read
before each assembly, and each shard's new certificates go to the others' queues every ``SHARE_EVERY`` seconds.
The parent only starts the shards and waits. The answer is the in-process search's: the valid assembly of least
``(cost, position)``, its position in the cost order counted as on Dask.
"""

from __future__ import annotations

import json
import math
import multiprocessing
import queue
import signal
import time
import traceback
import uuid
from dataclasses import dataclass, field
from typing import Any

from timor_core.errors import TimorError
from timor_core.search.dask_cluster.dask_worker import bound_from_best
from timor_core.search.evaluation.evaluate import DBRef, TaskRef, cost_descriptor
from timor_core.search.evaluation.optimizer import space_info
from timor_core.search.evaluation.parallel import STOP_GRACE, WorkerSpec, default_context
from timor_core.search.evaluation.progress import Progress
from timor_core.search.evaluation.result import SearchResult
from timor_core.search.exhaustive_search.shard_share import SHARE_EVERY
from timor_core.search.exhaustive_search.shard_worker import ShardJob, ShardState, run_shard
from timor_core.search.exhaustive_search.shards import merged_funnel, sharded_result
from timor_core.search.filtering.filters import FilterConfig
from timor_core.search.spaces.space import SerialSpace

__all__ = ["LocalHub", "local_sharded_search"]


class LocalHub:
    """What a shard shares with the others on this machine (:class:`~.shard_worker.DaskHub`'s methods): the best
    ``(cost, position)`` in a shared array, its reports and final state to the parent's queue, its certificates
    to the other shards' queues."""

    def __init__(self, index: int, best: Any, inboxes: list[Any], reports: Any) -> None:
        self.index, self.best_array, self.inboxes, self.reports = index, best, inboxes, reports

    def best(self) -> tuple[float, int] | None:
        with self.best_array.get_lock():
            cost, at = self.best_array[0], self.best_array[1]
        return None if math.isinf(cost) else (cost, int(at))

    def bound(self, index: int, bound: float) -> float:
        """``bound``, lowered by the best found (:func:`~.dask_worker.bound_from_best`)."""
        return bound_from_best(self.best(), index, bound)

    def found(self, state: ShardState) -> None:
        ev = state.best
        assert ev is not None and ev.cost is not None
        with self.best_array.get_lock():
            if (ev.cost, ev.seq) < (self.best_array[0], self.best_array[1]):
                self.best_array[0], self.best_array[1] = ev.cost, float(ev.seq)
        self.reports.put(("best", self.index, state.text()))

    def progress(self, state: ShardState) -> None:
        self.reports.put(("progress", self.index, state.text()))

    def link(self, proofs: Any) -> _QueueLink | None:
        if proofs is None or len(self.inboxes) < 2:
            return None
        proofs.share()  # from now on it keeps what it learns
        others = [q for r, q in enumerate(self.inboxes) if r != self.index]
        return _QueueLink(proofs, self.inboxes[self.index], others)


@dataclass
class _QueueLink:
    """A shard's certificate exchange (:class:`~.shard_share.CertificateLink`'s methods) through process queues."""

    proofs: Any
    inbox: Any
    others: list[Any]
    sent_at: float = field(default=0.0)

    def exchange(self, final: bool = False) -> None:
        now = time.monotonic()
        if not final and now - self.sent_at < SHARE_EVERY:  # (a look at the queue costs more than an assembly)
            return
        while True:
            try:
                self.proofs.learn(self.inbox.get_nowait())
            except queue.Empty:
                break
        batch = self.proofs.share()
        if batch:
            for q in self.others:
                q.put(batch)
        self.sent_at = now

    def close(self) -> None:
        self.exchange(final=True)
        self.proofs.lessons = None


def _shard_process(job: ShardJob, best: Any, inboxes: list[Any], reports: Any) -> None:
    """A shard's process: run it, put its final state (or why it failed) on the parent's queue."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends the shards
    try:
        state = run_shard(job, LocalHub(job.index, best, inboxes, reports))
        reports.put(("done", job.index, state))
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises it
        reports.put(("error", job.index, traceback.format_exc()))


@dataclass
class _Run:
    """The parent's view of the shards (what :func:`~.shards.sharded_result` reads)."""

    header: dict
    states: list[ShardState]
    found: dict[int, float] = field(default_factory=dict)
    initial: set[int] = field(default_factory=set)


class ShardError(TimorError):
    """A shard's process failed or died (its traceback in the message)."""


def local_sharded_search(
    space: SerialSpace,
    task: Any,
    db: Any,
    *,
    workers: int,
    cost: Any = "mass",
    config: FilterConfig | None = None,
    filters: Any = None,
    start: int = 0,
    stop: int | None = None,
    bound: float = math.inf,
    max_time: float | None = None,
    progress: bool = True,
    settings: dict | None = None,
    mp_context: Any = None,
) -> SearchResult:
    """``ExhaustiveSearch(order="cost", workers=k).optimize(...)`` as ``workers`` shards in processes of this
    machine (see the module's description): the same best assembly, cost and ``best_seq`` as one process."""
    t0 = time.perf_counter()
    stop = space.count if stop is None else min(stop, space.count)
    config = config if config is not None else FilterConfig()
    descriptor = cost_descriptor(cost)
    result = SearchResult("ExhaustiveSearch", task.id, db.name, descriptor, space=space_info(space))
    result.settings = {"filters": config.to_json(), **(settings or {}), "prepare_time": 0.0, "shards": workers}
    result.history.append({"evaluations": 0, "time": 0.0, "best_cost": None})
    result.workers = workers
    spec = WorkerSpec(DBRef.of(db), TaskRef.of(task), cost if isinstance(cost, str) else descriptor, config,
                      tuple(filters) if filters is not None else None)  # fmt: skip
    deadline = None if max_time is None else time.time() + max_time
    jobs = [
        ShardJob(
            spec,
            space.options.canonical_json(),
            r,
            workers,
            uuid.uuid4().hex,
            "",
            start,
            stop,
            bound,
            deadline,
            1.0,
            None,
            space.fingerprint,
        )  # fmt: skip
        for r in range(workers)
    ]
    run = _Run({"start": start, "stop": stop}, [ShardState(r) for r in range(workers)])
    names = spec.evaluator().chain.names
    result.funnel = type(result.funnel)(names)
    bar = Progress(stop - start, progress, desc="ExhaustiveSearch")
    stopped = _run_shards(jobs, run, mp_context, bar, t0, names)
    return sharded_result(result, run, stopped, space, task, t0)


def _run_shards(jobs: list[ShardJob], run: _Run, mp_context: Any, bar: Progress, t0: float, names: list[str]) -> str:
    """Start a process per shard and take their reports until every shard has ended (or ``STOP_GRACE`` seconds past
    the jobs' deadline: a shard busy compiling numba's kernels, or in one long evaluation, never sees it); why the
    search stopped."""
    ctx: Any = mp_context if mp_context is not None else default_context()
    if ctx is None:
        ctx = multiprocessing.get_context()
    best = ctx.Array("d", [math.inf, math.inf])
    inboxes = [ctx.Queue() for _ in jobs]
    reports = ctx.Queue()
    procs = [ctx.Process(target=_shard_process, args=(job, best, inboxes, reports), daemon=True) for job in jobs]
    for p in procs:
        p.start()
    pending, shown = set(range(len(jobs))), 0
    give_up = None if jobs[0].deadline is None else jobs[0].deadline + STOP_GRACE
    try:
        while pending:
            if give_up is not None and time.time() >= give_up:
                return "max_time"  # (the shards still running are ended below; their last reports stand)
            wait = 1.0 if give_up is None else min(1.0, max(0.0, give_up - time.time()))
            try:
                kind, r, text = reports.get(timeout=wait)
            except queue.Empty:
                dead = [r for r in pending if not procs[r].is_alive()]
                if dead:
                    raise ShardError(f"the process of shard {dead[0]} ended without a result") from None
                continue
            if kind == "error":
                raise ShardError(f"shard {r} failed:\n{text}")
            run.states[r] = ShardState.from_json(json.loads(text) if isinstance(text, str) else text)
            if kind == "best":
                run.found.setdefault(run.states[r].best.seq, time.perf_counter() - t0)  # type: ignore[union-attr]
            if kind == "done":
                pending.discard(r)
            if bar.bar is not None:
                total = sum(s.evaluations for s in run.states)
                bar.update(total - shown, merged_funnel(names, run.states), None)
                shown = total
    except KeyboardInterrupt:
        return "interrupted"
    finally:
        for p in procs:
            if p.is_alive():
                p.terminate()
            p.join(timeout=5)
        bar.close()
    reasons = {s.stopped for s in run.states}
    if "max_time" in reasons:
        return "max_time"
    return "exhausted" if reasons == {"exhausted"} else "bound"
