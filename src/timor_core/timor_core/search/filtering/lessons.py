"""The family certificates passed between the workers of a parallel search (:mod:`.parallel`).

Why: each worker keeps its own :class:`~.family_proof.FamilyProofs`, and the cost order hands a family's members
to whichever worker is free; without sharing, two workers prove what one process proves once. Each chunk a
worker returns carries what its proofs learnt (:meth:`~.family_proof.FamilyProofs.share`); the parent logs it
(:class:`LessonLog`), and every chunk it sends carries the log's batches some worker may not have seen yet; a
worker learns each batch once, and not its own (:class:`LessonInbox`). A certificate refuses only what its own
chain's proof would, whoever proved it, so the verdicts are those of one process; only which worker proves what,
and so the funnel's counts, change.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from timor_core.search.filtering.family_proof import FamilyProofs, Lesson

__all__ = ["Batch", "LessonInbox", "LessonLog", "worker_proofs"]


@dataclass(frozen=True)
class Batch:
    """What one worker (process ID ``origin``) learnt during one chunk; ``index`` its place in the parent's log."""

    index: int
    origin: int
    lessons: list[Lesson]


class LessonLog:
    """The parent's log of batches, cut to those some worker has not acknowledged. Only the ``workers`` processes
    whose chunks returned last count: a worker the pool replaced (its process gone) must not hold the log back for
    ever. (Were a live worker pushed out of that window by one gone since, it would only miss some lessons, and
    prove those chains itself: the verdicts never depend on what a worker was taught.)"""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.batches: list[Batch] = []
        self.acks: dict[int, int] = {}  # worker process ID: the last batch index it has taken, last returned last
        self.next = 0

    def add(self, origin: int, lessons: list[Lesson], upto: int) -> None:
        """A chunk's return: the worker's new lessons, and the last batch it had taken when it ran."""
        self.acks[origin] = max(upto, self.acks.pop(origin, -1))
        while len(self.acks) > self.workers:  # the process that returned longest ago: gone (replaced by the pool)
            del self.acks[next(iter(self.acks))]
        if lessons:
            self.batches.append(Batch(self.next, origin, lessons))
            self.next += 1

    def pending(self) -> list[Batch]:
        """The batches to send with the next chunk: all those not yet taken by every worker."""
        if len(self.acks) >= self.workers:
            seen = min(self.acks.values())
            self.batches = [b for b in self.batches if b.index > seen]
        return list(self.batches)


class LessonInbox:
    """A worker's side: which batches it has taken."""

    def __init__(self, origin: int) -> None:
        self.origin = origin
        self.upto = -1

    def take(self, proofs: FamilyProofs, batches: list[Batch]) -> None:
        """Learn every batch not taken yet, except this worker's own."""
        for batch in batches:
            if batch.index > self.upto:
                if batch.origin != self.origin:
                    proofs.learn(batch.lessons)
                self.upto = batch.index


def worker_proofs(ctx: Any) -> FamilyProofs | None:
    """A search task's family proofs where its family filter is on (``filter_state.TaskContext``), else None."""
    if not ctx.config.family_filter or not ctx.goals:
        return None
    return FamilyProofs.of(ctx)
