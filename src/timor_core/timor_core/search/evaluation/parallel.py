"""Evaluating many assemblies on all local cores, sharing the best-so-far bound, with a progress bar.

:class:`ParallelEvaluator` owns a process pool (``concurrent.futures.ProcessPoolExecutor``) whose initializer
loads the module set and the task once per worker (:func:`~.evaluate.load_db`, :func:`~.evaluate.load_task`)
and builds one filter chain. Assemblies travel as ``(seq, ids)`` tuples in chunks; every chunk carries the
best valid cost known when it is sent (the bound), and a worker lowers it further within the chunk. Chunks are
sent in sequence order and sized so that one takes about ``target_chunk_time`` seconds. ``workers=1`` evaluates
in this process, one assembly at a time, with the same code.

Results do not depend on the number of workers: each assembly's verdict is deterministic (seeded by its IDs),
and the best assembly is the one of least ``(cost, seq)`` — an assembly is only ever skipped by the bound when a
valid assembly earlier in the sequence costs no more. The funnel's ``bound`` counts (how many assemblies were
skipped, and therefore how many reached the later filters) do depend on timing.
"""

from __future__ import annotations

import logging
import math
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import Any

from timor_core.errors import InputError
from timor_core.limits import cap_workers
from timor_core.model.db import ModulesDB
from timor_core.search.evaluation.batch_stream import PricedItems, stream_priced
from timor_core.search.evaluation.evaluate import DBRef, Evaluation, Evaluator, TaskRef, cost_descriptor
from timor_core.search.filtering.family_proof import Lesson
from timor_core.search.filtering.filters import Filter, FilterConfig
from timor_core.search.filtering.lessons import Batch, LessonInbox, LessonLog, worker_proofs
from timor_core.task import Task
from timor_core.task.costs import CostFunction

__all__ = ["ParallelEvaluator", "WorkerSpec", "default_context", "resolve_workers", "STOP_GRACE"]

logger = logging.getLogger(__name__)

STOP_GRACE = 1.0
"""Seconds a stream waits past its deadline for the chunks still out; then their workers are ended (a worker busy
with one long evaluation, or compiling numba's kernels, never sees the deadline)."""


def resolve_workers(workers: int | None) -> int:
    """``None``/``0``: all cores available to this process; otherwise 1..``max_workers``, cut to the cores unless
    the ``force_workers`` limit is set (:func:`timor_core.limits.cap_workers`)."""
    return cap_workers(workers)


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker needs, picklable: references to the module set and the task, cost, settings."""

    db: DBRef
    task: TaskRef
    cost: str
    config: FilterConfig
    filters: tuple[Filter, ...] | None = None

    def evaluator(self) -> Evaluator:
        return Evaluator(self.task, self.db, self.cost, self.config, self.filters)


_WORKER: Evaluator | None = None
_INBOX: LessonInbox | None = None


def _init_worker(spec: WorkerSpec) -> None:
    global _WORKER, _INBOX
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and shuts the pool down
    _WORKER = spec.evaluator()
    _INBOX = LessonInbox(os.getpid())


def _run_chunk(
    items: list[tuple[int, tuple[str, ...]]], bound: float, lower_bound: bool = True, batches: list[Batch] | None = None
) -> tuple[list[Evaluation], int, int, list[Lesson]]:
    """One chunk evaluated in a worker, after learning the other workers' family certificates (:mod:`.lessons`):
    its evaluations, the worker's process ID, the last batch it has taken, and what its proofs learnt."""
    assert _WORKER is not None and _INBOX is not None, "worker not initialised"
    proofs = worker_proofs(_WORKER.chain.ctx)
    if proofs is not None and batches:
        _INBOX.take(proofs, batches)
    evaluations = _WORKER.evaluate_chunk(items, bound, lower_bound)
    return evaluations, _INBOX.origin, _INBOX.upto, proofs.share() if proofs is not None else []


def _stream_callables(
    bound: Callable[[], float] | float, stop: Callable[[], bool] | None
) -> tuple[Callable[[], float], Callable[[], bool]]:
    """A stream's ``bound`` and ``stop`` arguments as functions (a fixed bound, never stop when ``None``)."""
    get_bound = bound if callable(bound) else (lambda b=float(bound): b)
    should_stop = stop if stop is not None else (lambda: False)
    return get_bound, should_stop


def _ping() -> bool:
    return _WORKER is not None


def default_context() -> multiprocessing.context.BaseContext | None:
    """The start method of worker processes: fork where safe (Linux, one thread), else forkserver if there is
    one (None: the platform's default)."""
    # fork is fastest (workers inherit the imported modules) but unsafe once the parent runs other threads
    if sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    if "forkserver" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("forkserver")
    return None


class ParallelEvaluator:
    """Evaluates streams of assemblies for one task on ``workers`` processes (1: in this process).

    Use as a context manager (the pool starts on first use and stops on exit)::

        with ParallelEvaluator(task, db, "mass", workers=None) as pe:
            for evaluations in pe.stream(enumerate(space), bound=lambda: best):
                ...

    Args:
        task, db, cost, config, filters: as for :class:`~.evaluate.Evaluator` (custom ``filters`` must be
            picklable to be used with several workers).
        workers: processes (None: all cores).
        target_chunk_time: seconds of work per chunk (chunk sizes adapt to the measured speed).
        max_chunk: the largest chunk.
        mp_context: a multiprocessing context (default: fork on Linux when single-threaded, else forkserver).
    """

    def __init__(
        self,
        task: Task | TaskRef | str | Path,
        db: ModulesDB | DBRef | str | Path,
        cost: CostFunction | str | None = "mass",
        config: FilterConfig | None = None,
        filters: Sequence[Filter] | None = None,
        workers: int | None = None,
        target_chunk_time: float = 0.1,
        max_chunk: int = 512,
        mp_context: Any = None,
    ) -> None:
        self._setup(task, db, cost, config, filters, workers, target_chunk_time, max_chunk, mp_context)

    def _setup(
        self,
        task: Task | TaskRef | str | Path | None,
        db: ModulesDB | DBRef | str | Path | None,
        cost: CostFunction | str | None,
        config: FilterConfig | None,
        filters: Sequence[Filter] | None,
        workers: int | None,
        target_chunk_time: float,
        max_chunk: int,
        mp_context: Any,
    ) -> None:
        """What the constructor does; a subclass that is given the task and module set later passes None."""
        self.workers = resolve_workers(workers)
        self.config = config if config is not None else FilterConfig()
        self.cost = cost_descriptor(cost)
        self.filters = tuple(filters) if filters is not None else None
        self.target_chunk_time = float(target_chunk_time)
        self.max_chunk = int(max_chunk)
        self.mp_context = mp_context
        self._task, self._db = task, db
        self._local: Evaluator | None = None
        self._pool: ProcessPoolExecutor | None = None
        self._avg = 0.0  # running mean seconds per assembly
        self._n = 0

    # -- set-up ------------------------------------------------------------------------------------
    @property
    def local(self) -> Evaluator:
        """The in-process evaluator (also used to validate the inputs before any worker starts)."""
        if self._local is None:
            if self._task is None or self._db is None:
                raise InputError(f"{type(self).__name__} needs a task and a module set", value=None)
            self._local = Evaluator(self._task, self._db, self.cost, self.config, self.filters)
        return self._local

    @property
    def filter_names(self) -> list[str]:
        return self.local.chain.names

    def _ensure_pool(self) -> ProcessPoolExecutor:
        if self._pool is None:
            local = self.local
            spec = WorkerSpec(DBRef.of(local.db), TaskRef.of(local.task), self.cost, self.config, self.filters)
            ctx = self.mp_context if self.mp_context is not None else default_context()
            self._pool = ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_init_worker, initargs=(spec,))
        return self._pool

    def start(self) -> ParallelEvaluator:
        """Start the worker processes now (and wait until they are ready); a no-op with one worker.

        Call it before starting other threads (a progress bar's monitor, say): the pool forks only while this
        process is single-threaded.
        """
        if self.workers > 1 and self._pool is None:
            pool = self._ensure_pool()
            for fut in [pool.submit(_ping) for _ in range(self.workers)]:
                fut.result()
        return self

    def close(self, cancel: bool = False) -> None:
        """Stop the worker processes."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=cancel)
            self._pool = None

    def _abandon(self) -> None:
        """End the worker processes now, whatever they are doing (a stream past its deadline and grace)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        # ProcessPoolExecutor has no public way to end busy workers before Python 3.14's terminate_workers()
        for process in list((getattr(pool, "_processes", None) or {}).values()):
            process.terminate()
        pool.shutdown(wait=False, cancel_futures=True)

    def __enter__(self) -> ParallelEvaluator:
        self.local  # noqa: B018  (fail early on bad inputs)
        return self

    def __exit__(self, exc_type, *_: Any) -> None:
        self.close(cancel=exc_type is not None)

    # -- chunking ----------------------------------------------------------------------------------
    def _learn(self, evaluations: Sequence[Evaluation]) -> None:
        for ev in evaluations:
            self._n += 1
            self._avg += (ev.time - self._avg) / min(self._n, 200)  # a mean that forgets slowly

    def _chunk_size(self) -> int:
        if self._n < 4:
            return 4
        return max(1, min(self.max_chunk, int(self.target_chunk_time / max(self._avg, 1e-6))))

    # -- evaluation --------------------------------------------------------------------------------
    def stream(
        self,
        items: Iterable[tuple[int, Sequence[str]]],
        bound: Callable[[], float] | float = math.inf,
        stop: Callable[[], bool] | None = None,
        lower_bound: bool = True,
        max_chunk: int | None = None,
        deadline: float | None = None,
    ) -> Iterator[list[Evaluation]]:
        """Evaluate ``(seq, ids)`` pairs; yields lists of evaluations as they complete (not in order).

        ``bound()`` is read whenever a chunk is sent (give the caller's best cost so far); ``stop()`` ends
        the stream early (chunks already sent still complete and are yielded). ``lower_bound``: a worker lowers
        the bound within its chunk as it finds valid assemblies (False: the verdicts do not depend on how the
        items are split into chunks, i.e. on the number of workers). ``max_chunk`` caps the chunk size (a small
        batch is then spread over every worker instead of filling one chunk). ``deadline`` (a
        ``time.perf_counter()`` value): chunks still out ``STOP_GRACE`` seconds after it are given up and the
        workers ended, so the stream ends then whatever they do.
        """
        # the generator itself is returned (no delegating frame per item); nothing runs before the first next()
        if self.workers == 1:
            if isinstance(items, PricedItems):  # a cost order's stream: its look-up refusals in batches
                return stream_priced(self.local, items, *_stream_callables(bound, stop))
            return self._stream_here(items, bound, stop)
        return self._stream_pool(items, bound, stop, lower_bound, max_chunk, deadline)

    def _stream_here(
        self,
        items: Iterable[tuple[int, Sequence[str]]],
        bound: Callable[[], float] | float,
        stop: Callable[[], bool] | None,
    ) -> Iterator[list[Evaluation]]:
        """:meth:`stream` with ``workers=1``: one assembly at a time, in this process."""
        get_bound, should_stop = _stream_callables(bound, stop)
        it = iter(items)
        local = self.local
        cut: list[Evaluation] = []  # cut by the bound before they are built, reported in batches
        for seq, ids in self._uncut(it, get_bound, cut, should_stop):
            if cut:
                yield cut[:]
                cut.clear()
            if should_stop():
                return
            ev = local(ids, get_bound(), seq)
            self._learn((ev,))
            yield [ev]
        if cut:
            yield cut

    def _stream_pool(
        self,
        items: Iterable[tuple[int, Sequence[str]]],
        bound: Callable[[], float] | float,
        stop: Callable[[], bool] | None,
        lower_bound: bool,
        max_chunk: int | None,
        deadline: float | None = None,
    ) -> Iterator[list[Evaluation]]:
        """:meth:`stream` on the process pool: chunks sent in sequence order, at most two per worker out."""
        get_bound, should_stop = _stream_callables(bound, stop)
        it = iter(items)
        pool = self._ensure_pool()
        inflight: set[Future] = set()
        exhausted = False
        cut: list[Evaluation] = []  # cut by the bound here, before a worker builds them (Evaluator.cut)
        it = self._uncut(it, get_bound, cut, should_stop)
        log = LessonLog(self.workers)
        try:
            while True:
                while not exhausted and len(inflight) < 2 * self.workers:
                    if should_stop():
                        exhausted = True
                        break
                    size = self._chunk_size() if max_chunk is None else max(1, min(self._chunk_size(), max_chunk))
                    chunk = [(int(s), tuple(ids)) for s, ids in islice(it, size)]
                    if cut:
                        yield cut[:]
                        cut.clear()
                    if not chunk:
                        exhausted = True
                        break
                    inflight.add(pool.submit(_run_chunk, chunk, get_bound(), lower_bound, log.pending()))
                if not inflight:
                    return
                timeout = None if deadline is None else max(0.0, deadline + STOP_GRACE - time.perf_counter())
                done, inflight = wait(inflight, timeout=timeout, return_when=FIRST_COMPLETED)
                if not done:  # past the deadline and its grace: what is still out is given up
                    self._abandon()
                    return
                for fut in done:
                    evaluations, origin, upto, lessons = fut.result()
                    log.add(origin, lessons, upto)
                    self._learn(evaluations)
                    yield evaluations
        except BaseException:
            for fut in inflight:
                fut.cancel()
            self.close(cancel=True)
            raise

    def _uncut(
        self,
        items: Iterator[tuple[int, Sequence[str]]],
        bound: Callable[[], float],
        cut: list[Evaluation],
        stop: Callable[[], bool],
    ) -> Iterator[tuple[int, Sequence[str]]]:
        """``items`` without those the bound cuts from their modules alone (their evaluations go to ``cut``), until
        ``stop()`` (checked before each item: a search that may end early must not cut through the rest)."""
        local = self.local
        while not stop():
            item = next(items, None)
            if item is None:
                return
            seq, ids = item
            ev = local.cut(ids, bound(), seq)
            if ev is None:
                yield seq, ids
            else:
                cut.append(ev)

    def evaluate_batch(
        self,
        batch: Sequence[Sequence[str]],
        bound: float = math.inf,
        stop: Callable[[], bool] | None = None,
        deadline: float | None = None,
    ) -> list[Evaluation]:
        """Evaluate a list of assemblies (e.g. a GA generation); results in input order, ``seq`` = position.

        Every assembly is judged against ``bound`` alone, so the verdicts do not depend on the number of workers.
        ``stop``, ``deadline``: as for :meth:`stream`; the assemblies they leave out are None in the list.
        """
        out: list[Evaluation | None] = [None] * len(batch)
        spread = max(1, math.ceil(len(batch) / (4 * self.workers)))  # ~4 chunks per worker: balanced load
        with self._batch_scope():
            chunks = self.stream(enumerate(batch), bound, stop, lower_bound=False, max_chunk=spread, deadline=deadline)
            for evaluations in chunks:
                for ev in evaluations:
                    out[ev.seq] = ev
        return out  # type: ignore[return-value]

    def _batch_scope(self) -> AbstractContextManager[None]:
        """What :meth:`evaluate_batch` runs in (nothing here; the Dask evaluator leaves its checkpoints out)."""
        return nullcontext()

    def evaluate_batch_isolated(
        self,
        batch: Sequence[Sequence[str]],
        bound: float = math.inf,
        stop: Callable[[], bool] | None = None,
        deadline: float | None = None,
    ) -> list[Evaluation | None]:
        """``evaluate_batch``; if it raises (a bug in a filter), each assembly alone, an error making it invalid."""
        if not batch:
            return []
        try:
            return self.evaluate_batch(batch, bound, stop, deadline)  # type: ignore[return-value]
        except Exception:  # noqa: BLE001  (one bad assembly must not end the search)
            logger.info("a batch evaluation failed; evaluating its assemblies one by one", exc_info=True)
        out: list[Evaluation | None] = []
        for seq, ids in enumerate(batch):
            if stop is not None and stop():
                out.extend([None] * (len(batch) - seq))
                break
            try:
                out.append(self.local(ids, bound, seq))
            except Exception as exc:  # noqa: BLE001
                reason = f"evaluation error: {type(exc).__name__}: {exc}"
                name = self.filter_names[0]
                out.append(
                    Evaluation(
                        tuple(ids), False, failed_filter=name, reason=reason, reason_key="evaluation error", seq=seq
                    )
                )
        return out
