"""Evaluating assemblies on a Dask distributed cluster, with retries of lost work and resumable checkpoints.

:class:`DaskEvaluator` has the interface of :class:`~.parallel.ParallelEvaluator` (``stream``, ``evaluate_batch``,
``start``, ``close``, a context manager), so every optimizer can use it::

    from timor_core.search import DaskEvaluator, ExhaustiveSearch

    with DaskEvaluator("tcp://scheduler:8786", checkpoint="run.ckpt.json") as de:   # or DaskEvaluator(n_workers=8)
        result = ExhaustiveSearch(space, evaluator=de).optimize(task, db)

Without an address a ``LocalCluster`` is started (worker processes on the loopback interface, one thread each,
no dashboard) and closed with the evaluator. Assemblies travel as ``(seq, ids)`` tuples of module IDs, in chunks;
each worker process loads the module set and the task once and keeps one filter chain per search. A worker lost
mid-run has its chunks run again elsewhere. Every ``checkpoint_every`` completed chunks (and at the end) the
evaluator writes a checkpoint atomically (completed positions as ranges, counts, funnel, best evaluation);
``resume=path`` skips the completed positions and reports their progress to the search (:meth:`restore`), so the
union of the runs covers the space exactly once. The cost-ordered exhaustive search does not stream through here:
each worker walks a shard of the space itself (:mod:`.shards`; ``shards=False``: stream it in chunks). Needs
``dask[distributed]`` (``pip install timor-core[cluster]``).
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import islice, repeat
from pathlib import Path
from typing import Any

from timor_core.common.fileio import write_json
from timor_core.errors import InputError, explain
from timor_core.model.db import ModulesDB
from timor_core.search.dask_cluster.checkpoint import (
    CHECKPOINT_VERSION,
    read_checkpoint,
    refuse_changed,
    search_digests,
)
from timor_core.search.dask_cluster.dask_connect import (
    CONNECT_TIMEOUT,
    ClusterConnection,
    ClusterError,
    import_distributed,
    scheduler_address,
)
from timor_core.search.dask_cluster.dask_worker import forget_bound, publish_bound, run_chunk
from timor_core.search.evaluation.evaluate import DBRef, Evaluation, TaskRef, cost_descriptor
from timor_core.search.evaluation.parallel import STOP_GRACE, ParallelEvaluator, WorkerSpec
from timor_core.search.evaluation.result import SearchResult
from timor_core.search.filtering.filters import Filter, FilterConfig, Funnel
from timor_core.search.spaces.ranges import DoneRanges, merge_ranges, runs
from timor_core.task import Task
from timor_core.task.costs import CostFunction

__all__ = ["DaskEvaluator", "ClusterError", "CHECKPOINT_VERSION", "merge_ranges"]


@dataclass
class _Flight:
    """The state of one stream on the cluster: what is left to submit, what is out, the bound shared so far."""

    it: Iterator[tuple[int, tuple[str, ...]]]
    get_bound: Callable[[], float]
    should_stop: Callable[[], bool]
    spec: Any
    window: int
    token: str | None
    pending: Any
    deadline: float | None = None  # a ``time.time()`` the chunks carry (None: none)
    inflight: set[Any] = field(default_factory=set)
    exhausted: bool = False
    shared: tuple[float, int] | None = None


class DaskEvaluator(ClusterConnection, ParallelEvaluator):
    """Evaluates streams of assemblies for one task on a Dask cluster.

    Args:
        scheduler: a scheduler address (``"tcp://host:8786"``; a ``dask://`` prefix is accepted; read by
            :func:`~.dask_connect.scheduler_address`), or None to start a local cluster of ``n_workers`` processes
            (closed with the evaluator).
        n_workers: worker processes of the local cluster.
        task, db, cost, config, filters: as for :class:`~.parallel.ParallelEvaluator`; may be left out and set
            by :meth:`bind` (what an optimizer does when given ``evaluator=``).
        chunk_size: assemblies per chunk (None: adapted so that one chunk takes about ``target_chunk_time``).
        checkpoint: a JSON file written every ``checkpoint_every`` completed chunks and at the end.
        resume: a checkpoint to continue from (its completed positions are skipped); by default also the file
            the new checkpoints are written to.
        retries: how often a chunk whose evaluation raised is tried again (chunks of lost workers are
            rescheduled by the scheduler in any case).
        connect_timeout: seconds for each wait of reaching the scheduler (connect, handshake, first answer)
            before :class:`ClusterError`.
        in_flight: chunks out on the cluster at once (None: two per worker).
        shards: the cost-ordered exhaustive search runs one shard per worker (:mod:`.shards`), reporting every
            ``report_every`` seconds (progress, checkpoints); False: streamed from the client in chunks.
    """

    def __init__(
        self,
        scheduler: str | None = None,
        n_workers: int = 2,
        *,
        task: Task | TaskRef | str | Path | None = None,
        db: ModulesDB | DBRef | str | Path | None = None,
        cost: CostFunction | str | None = "mass",
        config: FilterConfig | None = None,
        filters: Sequence[Filter] | None = None,
        chunk_size: int | None = None,
        target_chunk_time: float = 0.5,
        max_chunk: int = 512,
        checkpoint: str | Path | None = None,
        checkpoint_every: int = 10,
        resume: str | Path | None = None,
        retries: int = 2,
        connect_timeout: float = CONNECT_TIMEOUT,
        in_flight: int | None = None,
        shards: bool = True,
        report_every: float = 2.0,
    ) -> None:
        self._setup(task, db, cost, config, filters, n_workers, target_chunk_time, max_chunk, None)
        self.scheduler = scheduler_address(scheduler)
        self.n_workers = max(1, int(n_workers))
        self.chunk_size = None if chunk_size is None else max(1, int(chunk_size))
        self.checkpoint = Path(checkpoint) if checkpoint is not None else (Path(resume) if resume else None)
        self.checkpoint_every = max(1, int(checkpoint_every))
        self.retries = int(retries)
        self.connect_timeout = float(connect_timeout)
        self.in_flight = None if in_flight is None else max(1, int(in_flight))
        self.max_in_flight = 0  # the most chunks out at once (bounded by ``in_flight``)
        self.shards, self.report_every = bool(shards), max(0.05, float(report_every))
        self._cluster: Any = None
        self._client: Any = None
        self._depth = 0
        self._reset_progress()
        self._resumed: dict | None = None
        self._fresh_resume = False
        self.resume_path = Path(resume) if resume is not None else None
        self._space: Any = None  # what fixes the positions of the bound search (set by restore)
        self._digests: dict[str, str] | None = None
        if resume is not None and Path(resume).is_file():
            self._load_checkpoint(Path(resume))

    # -- binding to a search -----------------------------------------------------------------------
    def bind(
        self,
        task: Task | TaskRef | str | Path,
        db: ModulesDB | DBRef | str | Path,
        cost: CostFunction | str | None = "mass",
        config: FilterConfig | None = None,
        filters: Sequence[Filter] | None = None,
    ) -> DaskEvaluator:
        """Set the task, module set, cost and filters for a new search (keeps the cluster).

        The progress of an earlier search is forgotten, except a checkpoint just loaded by ``resume``.
        """
        if self._fresh_resume:
            self._fresh_resume = False
        else:
            self._reset_progress()
            self._resumed = None

        self._task, self._db = task, db
        self.cost = cost_descriptor(cost)
        self.config = config if config is not None else FilterConfig()
        self.filters = tuple(filters) if filters is not None else None
        self._local = None
        self._space, self._digests = None, None
        return self

    def search_digests(self, space: Any = None) -> dict[str, str]:
        """The digests of the bound search (:func:`~.checkpoint.search_digests`); ``space``: what fixes its
        positions (kept for the later calls of this search)."""
        if space is not None and space != self._space:
            self._space, self._digests = space, None
        if self._digests is None:
            local = self.local
            self._digests = search_digests(local.task, local.db, self.cost, self.config, self.filters, self._space)
        return self._digests

    def worker_spec(self) -> WorkerSpec:
        """What a worker needs to evaluate for the bound search (module set, task, cost, filters)."""
        if self._task is None or self._db is None:
            raise InputError("DaskEvaluator needs a task and a module set (give them, or call bind)", value=None)
        local = self.local
        return WorkerSpec(DBRef.of(local.db), TaskRef.of(local.task), self.cost, self.config, self.filters)

    # -- progress and checkpoints ------------------------------------------------------------------
    def _reset_progress(self) -> None:
        self._done = DoneRanges()
        self._evaluations = 0
        self._valid = 0
        self._funnel: Funnel | None = None
        self._best: Evaluation | None = None
        self._chunks = 0

    def _record(self, evaluations: Sequence[Evaluation]) -> None:
        self._done.add(runs(ev.seq for ev in evaluations))
        if self._funnel is None:
            self._funnel = Funnel(self.filter_names)
        for ev in evaluations:
            self._evaluations += 1
            self._funnel.record_evaluation(ev)
            if ev.valid and ev.cost is not None:
                self._valid += 1
                if self._best is None or ev.rank < self._best.rank:
                    self._best = ev
        self._chunks += 1

    def checkpoint_data(self) -> dict:
        """The checkpoint: completed position ranges, counts, funnel and best valid evaluation so far."""
        local = self.local
        return {
            "version": CHECKPOINT_VERSION,
            "kind": "timor-search-checkpoint",
            "task": local.task.id,
            "db": local.db.name,
            "cost": self.cost,
            "digests": self.search_digests(),
            "done": self._done.ranges,
            "evaluations": self._evaluations,
            "valid": self._valid,
            "chunks": self._chunks,
            "funnel": None if self._funnel is None else self._funnel.to_json(),
            "best": None if self._best is None else self._best.to_json(),
        }

    def write_checkpoint(self, path: str | Path | None = None) -> Path | None:
        """Write the checkpoint (atomically) to ``path`` or the configured file; None if there is none."""
        path = path if path is not None else self.checkpoint
        if path is None:
            return None
        return write_json(path, self.checkpoint_data(), indent=1)

    def _load_checkpoint(self, path: Path) -> None:
        d = read_checkpoint(path)
        try:
            if d.get("route") is not None:  # a sharded cost-order search's (:mod:`.shards` reads it)
                if not isinstance(d.get("states"), list) or not d["states"]:
                    raise ValueError("a sharded search's checkpoint without shard states")
                self._resumed, self._fresh_resume = d, True
                return
            self._done = DoneRanges(d["done"])
            self._evaluations = int(d["evaluations"])
            self._valid = int(d["valid"])
            self._chunks = int(d.get("chunks", 0))
            self._funnel = Funnel.from_json(d["funnel"], "$.funnel") if d.get("funnel") is not None else None
            self._best = Evaluation.from_json(d["best"], "$.best") if d.get("best") is not None else None
        except (KeyError, TypeError, ValueError, IndexError, AttributeError, RecursionError) as exc:
            raise ClusterError(f"cannot resume from {path}: {explain(exc)}", file=path) from None
        self._resumed = d
        self._fresh_resume = True

    @property
    def resumed_route(self) -> str | None:
        """None without a resumed checkpoint, else how its search ran: ``"stream"`` or ``"cost-shards"``."""
        return None if self._resumed is None else str(self._resumed.get("route") or "stream")

    @property
    def shard_checkpoint(self) -> dict | None:
        """The resumed checkpoint if it is a sharded cost-order search's (:mod:`.shards`), else None."""
        return self._resumed if self._resumed is not None and self._resumed.get("route") else None

    @property
    def done_ranges(self) -> list[list[int]]:
        """Completed positions (including resumed ones) as ``[start, stop)`` ranges."""
        return [list(r) for r in self._done.ranges]

    def restore(self, result: SearchResult) -> int:
        """Note the search's space (what fixes its positions: the result's space and order; the range too in the
        cost order, whose positions count from its start), then put a resumed checkpoint's progress into the fresh
        result; returns the positions already done."""
        settings = result.settings or {}
        space = [(result.space or {}).get("fingerprint"), settings.get("order")]
        if settings.get("order") == "cost":
            space += [settings.get("start"), settings.get("stop")]
        digests = self.search_digests(space)
        d = self._resumed
        if d is None:
            return 0
        if d.get("route"):
            raise ClusterError("a sharded cost-order search's checkpoint: resume it with order='cost'", value=None)
        refuse_changed(d.get("digests"), digests, self.resume_path)
        result.evaluations += self._evaluations
        result.valid += self._valid
        if self._funnel is not None:
            result.funnel = result.funnel.merge(self._funnel)
        if self._best is not None:
            result.consider(self._best)
            result.improvements.append(
                {
                    "evaluations": 0,
                    "time": 0.0,
                    "cost": self._best.cost,
                    "ids": list(self._best.ids),
                    "seq": self._best.seq,
                    "resumed": True,
                }
            )
        return self._done.count()

    def _chunk_bound(self, first_seq: int, bound: float) -> float:
        # a resumed best may come from later positions than this chunk: let equal costs through so that ties
        # still go to the smaller position (only results of earlier positions may skip by equal cost)
        best = self._best if self._resumed is not None else None
        if best is not None and best.cost is not None and first_seq < best.seq and bound >= best.cost:
            return math.nextafter(best.cost, math.inf)
        return bound

    # -- evaluation --------------------------------------------------------------------------------
    @contextmanager
    def _batch_scope(self) -> Iterator[None]:
        """Around :meth:`evaluate_batch` (e.g. a GA generation): no checkpoints, the stream's progress reset before
        and after."""
        saved, self.checkpoint = self.checkpoint, None
        self._reset_progress()
        self._resumed = None
        try:
            yield
        finally:
            self.checkpoint = saved
            self._reset_progress()

    def _next_size(self) -> int:
        return self.chunk_size if self.chunk_size is not None else self._chunk_size()

    def stream(
        self,
        items: Iterable[tuple[int, Sequence[str]]],
        bound: Callable[[], float] | float = math.inf,
        stop: Callable[[], bool] | None = None,
        lower_bound: bool = True,
        max_chunk: int | None = None,
        deadline: float | None = None,
    ) -> Iterator[list[Evaluation]]:
        """Evaluate ``(seq, ids)`` pairs on the cluster; yields lists of evaluations as chunks complete.

        Positions already done (a resumed checkpoint, or earlier streams of this evaluator) are skipped. At most
        ``in_flight`` chunks (default two per worker) are out at a time, so ``items`` is read only as far as the
        workers get: a stream of any length runs in bounded memory. With ``lower_bound`` each valid result is
        broadcast to every worker at once (:mod:`.dask_worker`), so running chunks skip what it makes useless.
        ``deadline`` (a ``time.perf_counter()``, as for :meth:`ParallelEvaluator.stream`): every chunk carries it and
        ends there after the evaluation it is in; the stream waits at most ``STOP_GRACE`` seconds past it, then
        cancels what is still out (a worker in one long evaluation, or compiling numba's kernels) and ends.
        """
        distributed = import_distributed()
        left = None if deadline is None else deadline - time.perf_counter()
        flight = _Flight(
            it=((int(s), tuple(ids)) for s, ids in items if int(s) not in self._done),
            get_bound=bound if callable(bound) else repeat(float(bound)).__next__,
            should_stop=stop if stop is not None else (lambda: False),
            spec=self.worker_spec(),
            window=self.in_flight or 2 * self.cluster_workers(),
            token=uuid.uuid4().hex if lower_bound else None,
            pending=distributed.as_completed(timeout=None if left is None else max(0.0, left + STOP_GRACE)),
            deadline=None if left is None else time.time() + left,
        )
        since = 0
        try:
            while True:
                self._fill(flight, lower_bound, max_chunk)
                if not flight.inflight:
                    return
                try:
                    fut = next(flight.pending)
                except TimeoutError:  # past the deadline and its grace: what is still out is cancelled
                    self.abandoned = True
                    return
                flight.inflight.discard(fut)
                evaluations = fut.result()
                self._learn(evaluations)
                self._record(evaluations)
                self._share_best(flight, evaluations)
                since += 1
                if since >= self.checkpoint_every:
                    since = 0
                    self.write_checkpoint()
                yield evaluations
        finally:
            self._land(flight)

    def _fill(self, flight: _Flight, lower_bound: bool, max_chunk: int | None) -> None:
        """Submit chunks until ``flight.window`` are out, the items run out or the caller says stop."""
        while not flight.exhausted and len(flight.inflight) < flight.window:
            if flight.should_stop():
                flight.exhausted = True
                return
            size = self._next_size() if max_chunk is None else max(1, min(self._next_size(), max_chunk))
            chunk = list(islice(flight.it, size))
            if not chunk:
                flight.exhausted = True
                return
            b = self._chunk_bound(chunk[0][0], flight.get_bound())
            fut = self.client.submit(
                run_chunk,
                flight.spec,
                chunk,
                b,
                lower_bound,
                flight.token,
                flight.deadline,
                pure=False,
                retries=self.retries,
            )
            flight.inflight.add(fut)
            flight.pending.add(fut)
            self.max_in_flight = max(self.max_in_flight, len(flight.inflight))

    def _share_best(self, flight: _Flight, evaluations: list[Evaluation]) -> None:
        """Broadcast a chunk's best valid result to every worker when it beats the one shared so far."""
        if flight.token is None:
            return
        found = min(((ev.cost, ev.seq) for ev in evaluations if ev.valid and ev.cost is not None), default=None)
        if found is not None and (flight.shared is None or found < flight.shared):
            flight.shared = found
            self.client.run(publish_bound, flight.token, found[0], found[1], on_error="ignore")

    def _land(self, flight: _Flight) -> None:
        """End a stream: cancel what is still out, let the workers forget its bound, write the checkpoint."""
        if flight.inflight and self._client is not None:
            self.client.cancel(list(flight.inflight))  # one call, answered before the client may close
        if flight.shared is not None and self._client is not None:
            try:
                self.client.run(forget_bound, flight.token, on_error="ignore")
            except Exception:  # noqa: BLE001 - the cluster is going away; its workers forget with it
                pass
        if self._chunks:
            self.write_checkpoint()
