"""The cost-ordered exhaustive search on this machine's processes in shards, as on a Dask cluster (:mod:`.shards`).

Why: the process pool of :mod:`.parallel` has the parent walk the cost order and send it out in chunks; on a
machine with as many cores as workers the parent's walk and relaying (~1.7 s of CPU on ``obstacle_middle``) take
a core's time from the workers, the family certificates reach the other workers only with the next chunk, and
the chunks in flight when the best is found are evaluated for nothing (~1,000 assemblies). Here each worker
process walks its own shard of the space (:func:`~.cost_order.by_cost_indexed`, a share of its subtrees) and
evaluates it (:func:`~.shard_worker.run_shard`); the best ``(cost, position)`` found lives in shared memory, read
before each assembly, and each shard's new certificates go to the others' queues right after the proof that made
them (:mod:`.shard_mail`).
The parent only starts the shards and waits: with the client loop of a Dask search (:func:`~.shards.run_shards`),
this module only being the executor (:class:`LocalShards`). The answer is the in-process search's: the valid
assembly of least ``(cost, position)``, its position in the cost order counted as on Dask.
"""

from __future__ import annotations

import importlib
import math
import multiprocessing
import queue
import signal
import threading
import time
import traceback
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

from timor_core.errors import TimorError
from timor_core.kinematics import ik_kernel
from timor_core.search.dask_cluster.dask_worker import bound_from_best, worker_evaluator
from timor_core.search.evaluation.evaluate import DBRef, TaskRef, cost_descriptor
from timor_core.search.evaluation.parallel import WorkerSpec, default_context
from timor_core.search.evaluation.result import SearchResult
from timor_core.search.exhaustive_search.shard_mail import Mailboxes, MailLink
from timor_core.search.exhaustive_search.shard_worker import ShardJob, ShardState, keep_space, run_shard
from timor_core.search.exhaustive_search.shards import ShardedSearch, run_shards
from timor_core.search.filtering import cover_kernel, cut_kernel, proof_kernel
from timor_core.search.filtering.filters import FilterConfig

__all__ = ["LocalHub", "LocalShards", "ShardError", "ShardProcesses", "local_sharded_search", "settle", "warm"]


class LocalHub:
    """What a shard shares with the others on this machine (:class:`~.shard_worker.DaskHub`'s methods): the best
    ``(cost, position)`` in a shared array, its reports and final state to the parent's queue, its certificates
    through the shards' pipes (:mod:`.shard_mail`)."""

    def __init__(
        self, index: int, best: Any, mail: Mailboxes, reports: Any, places: Any = None, held: list | None = None
    ) -> None:
        self.index, self.best_array, self.mail, self.reports = index, best, mail, reports
        self.raw, self.lock = best.get_obj(), best.get_lock()  # read under one lock (not one per item)
        self.places = places  # per shard, the (cost, position) its walk is at (shared, written by that shard only)
        # what the shard leaves here is never freed: its process ends with it (without freeing, ``os._exit``). Why:
        # freeing the walk's frontier and the keys of its tail at its end took 2-7 ms (``five_joints``; 2 ms on
        # ``obstacles_4``, 0.5 ms on the user study), on the search's wall for the last shard to end
        self.held = held

    def best(self) -> tuple[float, int] | None:
        with self.lock:
            cost, at = self.raw[0], self.raw[1]
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

    def at(self, key: tuple) -> None:
        """Where this shard's walk is: every ``(cost, position)`` it takes from now on comes at or after ``key``."""
        if self.places is not None:
            self.places[2 * self.index], self.places[2 * self.index + 1] = key[0], key[1]

    def behind(self) -> tuple[float, float] | None:
        """The least key another shard may still take, from where they said they are (None: none: all ended). Read
        without a lock: a shard's place only grows, so a value read late is lower than its place, never higher."""
        if self.places is None:
            return None
        places = self.places
        keys = [(places[2 * r], places[2 * r + 1]) for r in range(len(places) // 2) if r != self.index]
        low = min(keys, default=(math.inf, math.inf))
        return None if math.isinf(low[0]) and low[0] > 0 else low

    def link(self, proofs: Any) -> MailLink | None:
        if proofs is None or self.mail.k < 2:
            return None
        return MailLink(proofs, self.index, self.mail)  # (its proofs keep what they learn from now on)


def _shard_process(n: int, fn: Any, job: ShardJob, results: Any) -> None:
    """A shard's process: run it, put its final state (or why it failed) on the executor's queue."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent handles Ctrl-C and ends the shards
    try:
        results.put((n, True, fn(job)))
    except BaseException:  # noqa: BLE001 - reported to the parent, which raises it
        results.put((n, False, traceback.format_exc()))


def _local_shard(job: ShardJob) -> dict:
    """Shard ``job`` with the hub of this machine's processes (set up by :class:`ShardProcesses`)."""
    best, mail, reports, places = _SHARED
    return run_shard(job, LocalHub(job.index, best, mail, reports, places, held=_HELD))


_SHARED: list[Any] = []  # in a shard's process: the best array, the mailboxes, the reports queue and the places
_HELD: list[Any] = []  # in a shard's process: what its end leaves unfreed (:class:`LocalHub`)


#: s: how often the parent's threads that take the shards' results and reports look whether the search has ended.
#: Why not a ``None`` put on their queues to wake them: a put starts a feeder thread in the parent, which outlived
#: the search (so the next search of the process saw threads and started its shards by a forkserver: each imported
#: and loaded all again, the user study's second 2-worker search 2.1 s instead of 0.18 s), and could wait for ever
#: for the queue's write lock held by a shard ended meanwhile (then the watcher woke only at its 0.2 s timeout).
WAKE = 0.02
_ENDING: list[threading.Thread] = []  # the threads of ended searches, each ending within WAKE s (see :func:`settle`)


def settle() -> None:
    """Wait for the threads of the searches ended in this process to end (WAKE s at most; 1 s if one hangs). Why: a
    search does not wait for them (that took up to 2 x WAKE s of every search), the next one does, before it
    chooses how to start its shards (fork only with no other thread alive, :func:`~.parallel.default_context`)."""
    while _ENDING:
        _ENDING.pop().join(timeout=1)


class ShardError(TimorError):
    """A shard's process failed or died (its traceback in the message)."""


class ShardProcesses(Executor):
    """A process per submitted call, with ``concurrent.futures``' interface; unlike a ``ProcessPoolExecutor`` it
    ends the calls still running when shut down (a shard past the deadline), and says which one died."""

    def __init__(self, ctx: Any, shared: tuple) -> None:
        self.ctx, self.shared, self.results = ctx, shared, ctx.Queue()
        self.procs: list[Any] = []
        self.futures: list[Future[Any]] = []
        self.closed = False
        self.watcher = threading.Thread(target=self._watch, daemon=True)
        self.watcher.start()

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future[Any]:
        n, fut = len(self.procs), Future[Any]()
        fut.set_running_or_notify_cancel()
        self.futures.append(fut)
        proc = self.ctx.Process(target=_start_shard, args=(n, fn, args[0], self.results, self.shared), daemon=True)
        self.procs.append(proc)
        proc.start()
        return fut

    def _watch(self) -> None:
        """Set each future from its process's result, or a ShardError once its process ended without one."""
        while not self.closed:
            try:
                item = self.results.get(timeout=WAKE)
            except queue.Empty:
                if not self._ended_without_result():
                    return
                continue
            except (EOFError, OSError):  # the queue closed under us: shutting down
                return
            self._take(item)

    def _take(self, item: tuple[int, bool, Any]) -> None:
        n, ok, value = item
        if self.futures[n].done():
            return
        if ok:
            self.futures[n].set_result(value)
        else:
            self.futures[n].set_exception(ShardError(f"shard {n} failed:\n{value}"))

    def _ended_without_result(self) -> bool:
        """A ShardError for each shard whose process ended without putting a result; False if the queue closed.
        The queue is read again first: a process's result is in the pipe before it ends (its queue's feeder thread
        is joined at its exit), but it may have arrived between the read that found nothing and the look at the
        exit code (a failing shard's traceback was reported as "ended without a result" in a CI run)."""
        ended = [n for n, (p, f) in enumerate(zip(self.procs, self.futures)) if not f.done() and p.exitcode is not None]
        if not ended:
            return True
        while True:
            try:
                self._take(self.results.get(timeout=WAKE))
            except queue.Empty:
                break
            except (EOFError, OSError):
                return False
        for n in ended:
            if not self.futures[n].done():
                self.futures[n].set_exception(ShardError(f"the process of shard {n} ended without a result"))
        return True

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """End the processes still running (their futures then never complete) and the watcher."""
        if self.closed:
            return
        self.closed = True
        for p in self.procs:
            if p.is_alive():
                p.terminate()
            p.join(timeout=5)
            if p.is_alive():  # SIGTERM not acted on: a process left behind would hold the interpreter's exit
                p.kill()
                p.join(timeout=5)
        _ENDING.append(self.watcher)  # (it sees ``closed`` within WAKE s; nothing is put here: see WAKE)
        # what is left in the queues goes unread: the exit must not wait to flush it into a full pipe (a
        # finished search printed its answer, then its process hung at exit in a clean-clone CI run)
        for q in (self.results, self.shared[2]):  # (shared[1]: the shards' pipes, written without threads)
            q.cancel_join_thread()
        self.shared[1].close()


def _start_shard(n: int, fn: Any, job: ShardJob, results: Any, shared: tuple) -> None:
    _SHARED[:] = shared
    _shard_process(n, fn, job, results)


class LocalShards:
    """The shards on this machine's processes (:class:`~.shards.ShardExecutor`): the best in a shared array that
    the shards read before each assembly, their reports through a process queue, their certificates through pipes
    (:mod:`.shard_mail`)."""

    checkpoint: Path | None = None  # (no checkpoints on this machine)
    resume_path: Path | None = None
    report_every = 1.0

    def __init__(self, workers: int, mp_context: Any, spec: WorkerSpec) -> None:
        settle()
        ctx: Any = mp_context if mp_context is not None else default_context()
        ctx = ctx if ctx is not None else multiprocessing.get_context()
        forked = ctx.get_start_method() == "fork"
        self.k, self.filter_names = workers, (warm(spec) if forked else spec.evaluator()).chain.names
        self.best = ctx.Array("d", [math.inf, math.inf])
        self.reports = ctx.Queue()
        places = ctx.RawArray("d", [-math.inf] * (2 * workers))  # (not started: anywhere; :meth:`LocalHub.at`)
        self.pool = ShardProcesses(ctx, (self.best, Mailboxes.make(ctx, workers), self.reports, places))
        self.pump: threading.Thread | None = None
        self.open_ = False

    def open(self, token: str, topic: str, events: queue.Queue) -> None:
        self.open_ = True
        self.pump = threading.Thread(target=self._pump, args=(events,), daemon=True)
        self.pump.start()

    def _pump(self, events: queue.Queue) -> None:
        """The shards' reports, passed on as the events of a Dask search."""
        while self.open_:
            try:
                item = self.reports.get(timeout=WAKE)
            except queue.Empty:
                continue
            except (EOFError, OSError):
                return
            kind, r, text = item
            events.put(("event", {"kind": kind, "shard": r, "state": text}))

    def submit(self, job: ShardJob) -> Future[Any]:
        return self.pool.submit(_local_shard, job)

    def share(self, token: str, best: tuple[float, int]) -> None:
        with self.best.get_lock():
            if best < (self.best[0], self.best[1]):
                self.best[0], self.best[1] = best[0], float(best[1])

    def cancel(self, futures: list[Any], timed_out: bool) -> None:
        self.pool.shutdown(cancel_futures=True)

    def close(self, token: str, topic: str) -> None:
        self.open_ = False
        self.pool.shutdown(cancel_futures=True)
        if self.pump is not None:
            _ENDING.append(self.pump)  # (it sees ``open_`` unset within WAKE s)


def warm(spec: WorkerSpec) -> Any:
    """What each shard would load for itself on its first assemblies, loaded once in this process before the shards
    fork from it (they inherit it): the search's evaluator (:func:`~.dask_worker.worker_evaluator`'s, which the
    shards then find in their cache), the robot building of the IK (``kinematics.build`` and ``.collision``, ~8 ms
    of CPU and 14 ms of wall time a process) and the kernels built ahead of time. The evaluator."""
    for module in ("timor_core.kinematics.build", "timor_core.kinematics.collision"):
        importlib.import_module(module)
    for kernels in (proof_kernel.AHEAD, ik_kernel.AHEAD, cover_kernel.AHEAD, cut_kernel.AHEAD):
        kernels.get()
    return worker_evaluator(spec)


def local_sharded_search(search: ShardedSearch, workers: int, mp_context: Any = None) -> SearchResult:
    """``ExhaustiveSearch(order="cost", workers=k).optimize(...)`` as ``workers`` shards in processes of this
    machine (:func:`~.shards.run_shards` on :class:`LocalShards`): the same best assembly, cost and ``best_seq``
    as one process."""
    t0 = time.perf_counter()
    config = search.config if search.config is not None else FilterConfig()
    cost = search.cost if isinstance(search.cost, str) else cost_descriptor(search.cost)
    result = search.new_result()
    result.workers = workers
    spec = WorkerSpec(DBRef.of(search.db), TaskRef.of(search.task), cost, config)
    keep_space(spec, search.space)  # (forked shards take it: not compiled again in each)
    ex = LocalShards(workers, mp_context, spec)
    return run_shards(ex, search, result, {"start": search.start, "stop": search.end}, None, spec, t0)
