"""The family certificates of a sharded search, shared between its workers (:mod:`.shard_worker` uses it).

Why: much of a cost-ordered search on tasks other than the user study is the family filter's proofs
(:mod:`.family_proof`), and a proof made in one worker covers chains of the same family in every shard (the shards
deal out small subtrees of the space, :func:`~.cost_order.by_cost_indexed`, so a family's members land on every
worker; a shard per family would not balance: one family can take a third of the work). Unshared, two shards made
26 % more proofs than one process (``more_goals``, 1,405 against 1,111 with the proofs of 2026-11-26 evening), and
the 2-worker search was held to 1.6x; shared, 1-8 % more (benchmarks/README.md).

Each shard's worker sends what its :class:`~.family_proof.FamilyProofs` learns (proven chains,
:class:`~.family_proof.Lesson`) as a Dask event at most every ``SHARE_EVERY`` seconds to the
other shards' topics; each shard's worker client subscribes to its own, so the scheduler passes a batch straight
on to the other workers (not through the search's client). Batches arrive on the worker's event loop and wait in a
queue; the shard's thread adds them between two assemblies, so the tables are only ever changed by the thread
that reads them. A certificate is sound wherever it was proven (same goals, proof budget and base placement: the
same search), so the answer does not depend on what arrives when; sharing only saves proofs.
"""

from __future__ import annotations

import collections
import os
import time
import uuid
from typing import Any

import numpy as np

from timor_core.search.filtering.family_proof import FamilyProofs, Lesson

__all__ = ["SHARE_EVERY", "CertificateLink", "decode", "encode", "link_counts"]

SHARE_EVERY = 0.05  # s between two batches of one worker (each: one event through the scheduler, ~0.5 ms of its CPU)
_ORIGIN = uuid.uuid4().hex  # with the process id: the sender of a batch (a worker ignores its own batches, its shards
# share its tables already); the id tells apart workers forked from one process that imported this module (a fork
# server's, dask_connect.forked_workers), which share the uuid: with the uuid alone each ignored the others' batches
_COUNTS = {"sent": 0, "received": 0}  # certificates sent from and received in this process


def _sender() -> str:
    """This process's name on the batches it sends."""
    return f"{_ORIGIN}-{os.getpid()}"


def link_counts() -> dict[str, int]:
    """How many certificates this process has sent to other workers and received from them (for tests and
    benchmarks)."""
    return dict(_COUNTS)


def encode(lessons: list[Lesson]) -> dict:
    """Lessons as plain data (msgpack-safe, exact: floats travel as doubles, rotation keys as bytes, each family's
    once per batch)."""
    families: dict[tuple[bytes, ...], int] = {}
    rows = []
    for e in lessons:
        f = families.setdefault(e.rotations, len(families))
        rows.append([e.goal, f, e.translations.ravel().tolist(), e.margin])
    return {"families": [list(r) for r in families], "lessons": rows}


def decode(batch: dict) -> list[Lesson]:
    """The inverse of :func:`encode`."""
    families = [tuple(bytes(r) for r in rotations) for rotations in batch["families"]]
    out = []
    for goal, f, translations, margin in batch["lessons"]:
        t = np.asarray(translations, dtype=float).reshape(-1, 3)
        out.append(Lesson(int(goal), families[f], t, float(margin)))
    return out


class CertificateLink:
    """One shard's end of the sharing: :meth:`exchange` between two assemblies, :meth:`close` at the end."""

    def __init__(self, topic: str, shard: int, shards: int, worker: Any, client: Any, proofs: FamilyProofs) -> None:
        self.worker, self.client, self.proofs = worker, client, proofs
        self.topic = f"{topic}-{shard}"  # each shard's own: the scheduler sends a batch to the other shards only
        self.others = [f"{topic}-{r}" for r in range(shards) if r != shard]
        self.inbox: collections.deque = collections.deque()
        self.sent_at = 0.0
        client.subscribe_topic(self.topic, self._arrived)

    @classmethod
    def open(cls, topic: str, shard: int, shards: int, proofs: FamilyProofs | None) -> CertificateLink | None:
        """The link of shard ``shard`` of ``shards`` running in a Dask worker whose search proves families
        (``proofs``: its :class:`~.family_proof.FamilyProofs`, see :func:`~.lessons.worker_proofs`); None outside a
        worker, without proofs or alone (nothing to share)."""
        if proofs is None or shards < 2:
            return None
        try:
            from distributed import get_client, get_worker

            worker = get_worker()
            client = get_client()
        except (ImportError, ValueError):
            return None
        proofs.share()  # from now on it keeps what it learns
        return cls(topic, shard, shards, worker, client, proofs)

    def _arrived(self, event: tuple[float, dict]) -> None:  # on the worker's event loop
        msg = event[1]
        if msg.get("from") != _sender():
            self.inbox.append(msg["batch"])

    def exchange(self, final: bool = False) -> None:
        """Learn what the other workers sent; send what was learnt here since the last batch (at most every
        ``SHARE_EVERY`` s; ``final``: now)."""
        proofs = self.proofs
        while self.inbox:
            lessons = decode(self.inbox.popleft())
            _COUNTS["received"] += len(lessons)
            proofs.learn(lessons)
        now = time.monotonic()
        if final or now - self.sent_at >= SHARE_EVERY:
            batch = proofs.share()
            if batch:
                self.worker.log_event(self.others, {"from": _sender(), "batch": encode(batch)})
                _COUNTS["sent"] += len(batch)
            self.sent_at = now

    def close(self) -> None:
        """Send the last batch, stop listening, and let the proofs stop keeping what they learn."""
        self.exchange(final=True)
        self.proofs.lessons = None
        try:
            self.client.unsubscribe_topic(self.topic)
        except Exception:  # noqa: BLE001 - the worker's client is closing: nothing more will arrive anyway
            pass
