"""One shard of a cost-ordered search, walked and evaluated inside a Dask worker (:mod:`.shards` starts them).

The space is split into ``k`` shards, each a share of the subtrees below the module sequences of one length
(:func:`~.cost_order.split_depth`); a worker walks its shard cheapest first itself
(:func:`~.cost_order.by_cost_indexed`, bounded memory; not the rest of the space) and evaluates it, so nothing but a
handful of messages passes through the client. The order is ``(cost, position)``, the in-process search's, and
a shard stops at its first valid assembly (its own optimum), or when its next candidate does not come before the
best ``(cost, position)`` found by any shard (broadcast to every worker, :mod:`.dask_worker`), or when the user's
bound or the deadline says so. Every assembly before the overall best therefore is evaluated by exactly one
shard, and the answer is the least ``(cost, position)``: the in-process search's.

A shard reports to the client by Dask events (``log_event``): its best at once, its progress every
``report_every`` seconds (for the progress bar and the checkpoints); both are :class:`ShardState` JSON texts.
"""

from __future__ import annotations

import bisect
import json
import math
import time
from dataclasses import dataclass, field, replace
from itertools import islice
from operator import itemgetter
from typing import Any

from timor_core.common import jsonfields as jf
from timor_core.search.dask_cluster.dask_worker import (
    bound_from_best,
    publish_bound,
    shared_best,
    shared_bound,
    worker_evaluator,
)
from timor_core.search.evaluation.batch_stream import collector_eased
from timor_core.search.evaluation.evaluate import Evaluation
from timor_core.search.evaluation.parallel import WorkerSpec
from timor_core.search.exhaustive_search.shard_share import CertificateLink
from timor_core.search.filtering.batch_decide import BATCH
from timor_core.search.filtering.funnel import Funnel
from timor_core.search.filtering.lessons import worker_proofs
from timor_core.search.spaces.cost_order import by_cost_indexed
from timor_core.search.spaces.rules import SearchSpaceError, SpaceOptions
from timor_core.search.spaces.space import SerialSpace
from timor_core.task.feedback import task_base_placement

__all__ = ["DaskHub", "ShardJob", "ShardState", "decidable", "keep_space", "run_shard", "shard_space"]

_SPACES: dict[tuple, SerialSpace] = {}
_PRICE_IDS, _KEY = itemgetter(0, 2), itemgetter(0, 1)  # (price, ids) and (price, position) of (price, position, ids)
#: how many of its last keys a shard reports: enough to count, without walking the cost order again, how many
#: of its candidates come before the overall best (only the few taken before the best reached it come after)
TAIL = 64
#: how many of its last keys a shard keeps: its final state sends those from just before the best known at its end
#: (a shard that ran ahead of the one that found the best took up to a few hundred after it), so that the best's
#: position is counted without walking the cost order again (that walk took the client ~0.8 s on obstacle_middle)
LONG_TAIL = 8192
#: a final tail keeps the keys down to this many ulps below its best's cost (:meth:`ShardState.trim_tail`): equal
#: masses summed in another order differ by a few
NEAR_ULPS = 64


@dataclass(frozen=True)
class ShardJob:
    """Shard ``index`` of ``shards`` of the search ``token`` over space positions ``start .. stop - 1``.

    ``bound``: only costs below it count (the user's); ``deadline``: a ``time.time()`` to stop at (None: none);
    ``resume``: the state (JSON) of an earlier run of this shard to continue from (its ``taken`` candidates are
    skipped, its counts kept); ``topic``: the Dask event topic of the reports.
    """

    spec: WorkerSpec
    space: str  # the SpaceOptions as canonical JSON
    index: int
    shards: int
    token: str
    topic: str
    start: int = 0
    stop: int | None = None
    bound: float = math.inf
    deadline: float | None = None
    report_every: float = 2.0
    resume: str | None = None
    fingerprint: str = ""  # the space's, checked in the worker (the positions must be the client's)


@dataclass
class ShardState:
    """What one shard has done: candidates taken from its stream (each evaluated), counts, funnel, its best,
    why it stopped and the ``(cost, position)`` of the first candidate it did not take (None: none left)."""

    index: int
    taken: int = 0
    evaluations: int = 0
    valid: int = 0
    cpu: float = 0.0
    funnel: Funnel | None = None
    best: Evaluation | None = None
    stopped: str | None = None
    next: tuple[float, int] | None = None
    tail: list[tuple[float, int]] = field(default_factory=list)  # the last taken (cost, position) of this run

    def trim_tail(self, best: tuple[float, float] | None) -> None:
        """At the end of a run: keep the keys from the last one more than :data:`NEAR_ULPS` ulps cheaper than
        ``best`` on (all kept if it is None). Its equals in cost stay: another shard's best of the same cost at an
        earlier position may be the overall one (the shards learn of each other's late), and its rank is counted from
        these keys; so do those a few ulps cheaper: another shard's best may be the same mass summed in another order
        (``obstacles_4``: 13.879999999999999 against 13.88, found after this shard ended in about half the searches;
        the parent then walked the cost order again for the best's rank, 21-48 ms of the search's wall)."""
        if best is not None:
            floor = best[0] - NEAR_ULPS * math.ulp(best[0]) if math.isfinite(best[0]) else best[0]
            self.tail = self.tail[max(0, bisect.bisect_left(self.tail, (floor, -1)) - 1) :]

    def found_report(self) -> ShardState:
        """The state as its best is reported (at once): a copy, its tail trimmed at that best (:meth:`trim_tail`; the
        final state keeps the rest for the best's rank). A shard's whole tail (up to 16,384 keys) took ~45 ms to
        write on the finding shard, before its end, and ~50 ms to read in the parent, while the other shards ran."""
        report = replace(self, tail=list(self.tail))
        if self.best is not None:
            report.trim_tail(self.best.rank)
        return report

    def record(self, key: tuple[float, int], ev: Evaluation, names: list[str]) -> None:
        self.count(key, ev.cpu, names).record_evaluation(ev)
        if ev.valid and ev.cost is not None:
            self.valid += 1
            if self.best is None or ev.rank < self.best.rank:
                self.best = ev

    def refused(self, key: tuple[float, int], reason_key: str, seconds: float, names: list[str]) -> None:
        """:meth:`record` of a refusal by a certificate look-up (``Evaluator.refused``), without its evaluation."""
        self.count(key, seconds, names).record_failure("family", reason_key, seconds)

    def refused_many(
        self, keys: list[tuple[float, int]], reasons: dict[str, int], seconds: float, names: list[str]
    ) -> None:
        """:meth:`refused` of several in order (``reasons``: their reason keys counted; ``seconds``: of them all),
        the tail trimmed as one by one would leave it."""
        tail, n = self.tail, len(keys)
        tail.extend(keys)
        if len(tail) > 2 * LONG_TAIL:  # one by one: trimmed to LONG_TAIL each time it passes 2 * LONG_TAIL
            del tail[: -(LONG_TAIL + (len(tail) - 2 * LONG_TAIL - 1) % (LONG_TAIL + 1))]
        self.taken += n
        self.evaluations += n
        self.cpu += seconds
        if self.funnel is None:
            self.funnel = Funnel(names)
        self.funnel.record_failures("family", reasons, seconds)

    def count(self, key: tuple[float, int], cpu: float, names: list[str]) -> Funnel:
        """Count one candidate taken and evaluated (its ``(cost, position)`` and CPU seconds); the funnel."""
        self.tail.append(key)
        if len(self.tail) > 2 * LONG_TAIL:
            del self.tail[:-LONG_TAIL]
        self.taken += 1
        self.evaluations += 1
        self.cpu += cpu
        if self.funnel is None:
            self.funnel = Funnel(names)
        return self.funnel

    def to_json(self) -> dict:
        return {
            "index": self.index,
            "taken": self.taken,
            "evaluations": self.evaluations,
            "valid": self.valid,
            "cpu": self.cpu,
            "funnel": None if self.funnel is None else self.funnel.to_json(),
            "best": None if self.best is None else self.best.to_json(),
            "stopped": self.stopped,
            "next": None if self.next is None else list(self.next),
            "tail": [list(k) for k in (self.tail if self.stopped is not None else self.tail[-TAIL:])],
        }

    @classmethod
    def from_json(cls, d: dict, path: str = "$") -> ShardState:
        """The inverse of :meth:`to_json`; ``path`` is where ``d`` sits (``$.states[0]`` in a checkpoint): a missing
        or malformed field, its funnel's or best evaluation's too, is a FormatError naming its JSON path."""
        nxt = d.get("next")
        return cls(
            index=_count(d, "index", path),
            taken=_count(d, "taken", path),
            evaluations=_count(d, "evaluations", path),
            valid=_count(d, "valid", path),
            cpu=float(d.get("cpu", 0.0)),
            funnel=None if d.get("funnel") is None else Funnel.from_json(d["funnel"], f"{path}.funnel"),
            best=None if d.get("best") is None else Evaluation.from_json(d["best"], f"{path}.best"),
            stopped=d.get("stopped"),
            next=None if nxt is None else (float(nxt[0]), int(nxt[1])),
            tail=[(float(c), int(i)) for c, i in d.get("tail", ())],
        )

    def text(self) -> str:
        """The state as a JSON text (what travels in events: plain, msgpack-safe)."""
        return json.dumps(self.to_json(), default=float)


def _count(d: dict, key: str, path: str) -> int:
    """The required count ``key`` of the shard state at ``path``, a FormatError naming ``path.key`` if it is not one."""
    return jf.converted(jf.req(d, key, path), f"{path}.{key}", int)


def shard_space(spec: WorkerSpec, options: str) -> SerialSpace:
    """The search space in this process (compiled once per module set and options, or the one :func:`keep_space`
    left)."""
    key = (spec.db.key, options)
    space = _SPACES.get(key)
    if space is None:
        db = worker_evaluator(spec).db
        space = _keep(key, SerialSpace(db, SpaceOptions.from_json(json.loads(options))))
    return space


def keep_space(spec: WorkerSpec, space: SerialSpace) -> None:
    """Let :func:`shard_space` give ``space`` for ``spec``'s module set and ``space``'s options in this process and
    the shards forked from it. Why: each local shard compiled the space its parent had compiled already (~2-3 ms of
    a shard's CPU, :mod:`.local_shards`); with the parent's, the shards' walk prices the assemblies with the very
    space the parent counts the best's position in (:func:`~.shards.cost_rank`)."""
    _keep((spec.db.key, space.options.canonical_json()), space)


def _keep(key: tuple, space: SerialSpace) -> SerialSpace:
    if key not in _SPACES and len(_SPACES) >= 4:
        _SPACES.clear()
    _SPACES[key] = space
    return space


def _report(topic: str, kind: str, state: ShardState) -> None:
    try:
        from distributed import get_worker

        worker = get_worker()
    except (ImportError, ValueError):  # not in a Dask worker (run in a test): nobody to tell
        return
    worker.log_event(topic, {"kind": kind, "shard": state.index, "state": state.text()})


class DaskHub:
    """What a shard shares on a Dask worker: the best broadcast by the client (:mod:`.dask_worker`), reports and
    its best as Dask events, the family certificates by :class:`~.shard_share.CertificateLink`. Another hub
    (:mod:`.local_shards`: processes on this machine) has the same methods."""

    def __init__(self, job: ShardJob) -> None:
        self.job = job

    def best(self) -> tuple[float, int] | None:
        """The best ``(cost, position)`` any shard has found (None: none yet)."""
        return shared_best(self.job.token)

    def bound(self, index: int, bound: float) -> float:
        """The bound for the assembly at ``index`` (:func:`~.dask_worker.shared_bound`)."""
        return shared_bound(self.job.token, index, bound)

    def found(self, state: ShardState) -> None:
        """The shard's first valid assembly: known here at once, and to the client."""
        publish_bound(self.job.token, state.best.cost, state.best.seq)  # type: ignore[union-attr, arg-type]
        _report(self.job.topic, "best", state)

    def progress(self, state: ShardState) -> None:
        _report(self.job.topic, "progress", state)

    def link(self, proofs: Any) -> Any:
        """The certificate link of this shard (None: nothing to share)."""
        job = self.job
        return CertificateLink.open(f"{job.topic}-lessons", job.index, job.shards, proofs)


def run_shard(job: ShardJob, hub: Any = None) -> dict:
    """Walk and evaluate shard ``job.index`` cheapest first (see the module's description); its final state.
    ``hub``: what it shares with the other shards (default: :class:`DaskHub`)."""
    evaluator = worker_evaluator(job.spec)
    names = evaluator.chain.names
    space = shard_space(job.spec, job.space)
    if job.fingerprint and space.fingerprint != job.fingerprint:
        raise SearchSpaceError(
            "the worker's search space is not the client's (another module set or timor version?)",
            value=[space.fingerprint, job.fingerprint],
        )
    state = ShardState.from_json(json.loads(job.resume)) if job.resume else ShardState(job.index)
    state.stopped, state.next, state.tail = None, None, []
    if state.best is not None:  # a shard's first valid assembly ends it: nothing of it is left to do
        state.stopped = "found"
        return state.to_json()
    ranked = by_cost_indexed(
        space,
        job.spec.cost,
        job.start,
        job.stop,
        base_placement=task_base_placement(evaluator.task),
        shard=(job.index, job.shards),
    )
    for _ in range(state.taken):  # resumed: these were decided (cheap to walk again, nothing is evaluated)
        if next(ranked, None) is None:
            break
    hub = DaskHub(job) if hub is None else hub
    link = hub.link(worker_proofs(evaluator.chain.ctx))
    try:
        with collector_eased():
            _walk(job, evaluator, ranked, state, names, link, hub)
    finally:
        if link is not None:
            link.close()
    held = getattr(hub, "held", None)
    if held is not None:  # (its process ends with the shard: freeing these took 2-7 ms of a shard's end, see the hub)
        held += [ranked, state.tail]
    state.trim_tail(_trim_key(hub))
    return state.to_json()


def _trim_key(hub: Any) -> tuple[float, float] | None:
    """The key a shard's final tail is trimmed at (:meth:`ShardState.trim_tail`): the best known, or where another
    shard still walks if that comes first (its best, found later, can be no earlier). Why: a shard that ended at its
    own best while another was still behind it (the user study: 11.08 kg found while the other was at 11.02) kept
    no key before that other's best, and the parent walked the whole cost order again for the best's rank (8-22 ms
    on the user study, 40-100 ms on ``five_joints``, in about half the searches). Hubs that know no places
    (:class:`DaskHub`): the best. The best is read after the places: a shard that has ended (its place read as
    ended) published its best before, so it is known then (read before, a best published while this shard was
    held up between the two reads was missed, and the parent walked the cost order again)."""
    at, behind = getattr(hub, "at", None), getattr(hub, "behind", None)
    if at is not None:
        at((math.inf, math.inf))  # (this shard takes nothing more)
    low = behind() if behind is not None else None
    best = hub.best()
    return low if best is None else best if low is None else min(best, low)


def _walk(job: ShardJob, evaluator: Any, ranked: Any, state: ShardState, names: list[str], link: Any, hub: Any) -> None:
    """Evaluate the shard's stream until a stop rule holds (see the module's description); ``state`` is updated.
    The stream is taken in batches: the first assemblies of a batch the certificate look-up refuses are decided at
    once (:class:`~.batch_decide.BatchLookup`: the answers and counts of one at a time; only those before the best
    known, :func:`decidable`), the next one as before; a batch's assemblies left when the shard stops are not
    counted."""
    walk = _Walk(job, evaluator, state, names, link, hub)
    lookup, limit, place = evaluator.lookup, job.bound, getattr(hub, "at", None)
    while True:
        batch = list(islice(ranked, BATCH))
        if not batch:
            state.stopped = "exhausted"
            return
        if place is not None:
            place(batch[0])  # (the other shards' tails keep what comes from here on: :func:`_trim_key`)
        at, pairs = 0, None
        while at < len(batch):
            run = decidable(batch, at, limit, hub.best()) if lookup.on and not walk.late() else []
            if run:
                if walk.link is not None:
                    walk.link.exchange()
                if pairs is None:  # (made in C, once a batch: a batch is offered again after each one at a time)
                    pairs = list(map(_PRICE_IDS, batch))
                n, reasons, spent = lookup.refused(pairs[at : at + len(run)], limit)
                if n:
                    state.refused_many(list(map(_KEY, run[:n])), reasons, spent, names)
                    at += n
                    walk.report()
                    if at == len(batch):
                        break
            if walk.step(*batch[at]):
                return
            at += 1


def decidable(batch: list[tuple], at: int, limit: float, best: tuple[float, int] | None) -> list[tuple]:
    """The assemblies ``(cost, position, ids)`` of ``batch`` (in that order) from ``at`` on that the batched look-up
    may decide: those cheaper than ``limit`` and before ``best`` in ``(cost, position)``. The bound from the best
    (:func:`~.dask_worker.bound_from_best`) refuses none of them, so the look-up's answer with ``limit`` is one at a
    time's: a shard still behind the one that found the best keeps deciding a batch at a time (it had ~7,400 of
    ``five_joints``' assemblies left one at a time, at 3-4x the cost each)."""
    end = len(batch)
    if best is not None:
        end = bisect.bisect_left(batch, best, at, end)  # (a 3-tuple after its (cost, position): not before it)
    if limit != math.inf:
        end = bisect.bisect_left(batch, (limit,), at, end)  # (the first of cost >= limit)
    return batch[at:end]


class _Walk:
    """One assembly of a shard's walk at a time (:meth:`step`), and what the batches of :func:`_walk` share."""

    def __init__(self, job: ShardJob, evaluator: Any, state: ShardState, names: list[str], link: Any, hub: Any) -> None:
        self.job, self.evaluator, self.state, self.names, self.link, self.hub = job, evaluator, state, names, link, hub
        self.last = time.monotonic()

    def late(self) -> bool:
        """The deadline has passed."""
        return self.job.deadline is not None and time.time() >= self.job.deadline

    def report(self) -> None:
        """The progress report, every ``report_every`` seconds."""
        if time.monotonic() - self.last >= self.job.report_every:
            self.last = time.monotonic()
            self.hub.progress(self.state)

    def step(self, price: float, index: int, ids: Any) -> bool:
        """Evaluate one assembly of the stream, or stop before it (True: stopped; ``state`` says why)."""
        state, hub, limit = self.state, self.hub, self.job.bound
        best = hub.best()
        if price >= limit or (best is not None and (price, index) > best):
            state.stopped, state.next = "bound", (price, index)
            return True
        if self.late():
            state.stopped, state.next = "max_time", (price, index)
            return True
        link = self.link
        if link is not None:
            link.exchange()  # (another shard may have proven this one's family meanwhile)
        bound = limit if best is None else bound_from_best(best, index, limit)  # (hub.bound's, from the best read)
        # the certificate look-up first, as one process does (the batch's look-up left this one: a full evaluation
        # most of the time, so no separate look-up before it, which took as long again)
        state.record((price, index), self.evaluator(ids, bound, index, price=price), self.names)
        if link is not None:
            link.exchange()  # what this one proved, to the others at once (where the link allows)
        if state.best is not None:
            state.stopped = "found"
            hub.found(state.found_report())
            return True
        self.report()
        return False
