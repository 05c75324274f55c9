"""The family certificates passed between the local shards of a search (:mod:`.local_shards`): a one-way pipe per
ordered pair of shards, written and read by the shards themselves.

Why pipes and not process queues: a ``multiprocessing.Queue`` pickles and writes in a feeder thread of the sending
process, which competes with the shard's own thread for the interpreter; with ~200 batches a search the two
shards of ``obstacles_4`` spent 0.014-0.026 s of CPU each in the exchange (the reads, ~60 us each, and the learning)
besides the feeder threads, and ~6 % more CPU in all than with these pipes (benchmarks/README.md, s51-pipe). A
write into a pipe returns once its bytes are in the pipe, so a sender counts a message as sent only after it is
there, and the reader, taking as many as are counted, never waits.

A pipe holds only so much (64 KiB on Linux, one page where a user has used up their pipe pages): a writer whose
reader has stopped reading (its shard ended) would block for ever once it is full. So each sender writes only while
the bytes it has sent and the reader has not taken stay within half the pipe's size (:attr:`Mailboxes.limit`);
what does not fit waits in the sender until it does (at most :data:`MAX_PENDING` lessons; more, the oldest are
dropped: sharing only saves proofs, a certificate is sound wherever it was proven, :mod:`.shard_share`).
"""

from __future__ import annotations

import marshal
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from timor_core.search.filtering.family_proof import FamilyProofs, Lesson

try:
    import fcntl
except ImportError:  # (not POSIX: no pipe sizes to ask)
    fcntl = None  # type: ignore[assignment]

__all__ = ["CHUNK", "MAX_PENDING", "MailLink", "Mailboxes", "packed", "pipe_size", "unpacked"]

CHUNK = 8  # lessons per message at most (fewer where a message of this many would not fit the pipe's limit)
MAX_PENDING = 4096  # lessons a sender keeps for a reader that does not take them (more: the oldest are dropped)
_HEADER = 8  # bytes a message takes in the pipe besides its own (``Connection.send_bytes``' length, generously)
_F_GETPIPE_SZ = 1032  # Linux's fcntl command for a pipe's size
_LEAST_PIPE = 4096  # bytes a pipe holds at least, where its size cannot be asked


def packed(lessons: list[Lesson]) -> bytes:
    """Lessons as bytes for a pipe: ``marshal`` of plain values, the translations as their float64 bytes (exact).
    Why not ``pickle``: a lesson's array pickled and unpickled took ~25 and ~20 us in a shard (numpy's reduction),
    ~1 us each so; both ends are forks of one interpreter, so ``marshal``'s version is theirs."""
    return marshal.dumps([(int(e.goal), e.rotations, np.ascontiguousarray(e.translations, float).tobytes(),
                           float(e.margin)) for e in lessons])  # fmt: skip


def unpacked(data: bytes) -> list[Lesson]:
    """The lessons of :func:`packed` (their translations read-only views of ``data``)."""
    return [Lesson(goal, rotations, np.frombuffer(t, float).reshape(-1, 3), margin)
            for goal, rotations, t, margin in marshal.loads(data)]  # fmt: skip


def pipe_size(connection: Any) -> int:
    """How many bytes the pipe of ``connection`` holds (Linux's ``F_GETPIPE_SZ``; elsewhere one page)."""
    if fcntl is None:
        return _LEAST_PIPE
    try:
        return max(int(fcntl.fcntl(connection.fileno(), _F_GETPIPE_SZ)), _LEAST_PIPE)
    except (OSError, ValueError):
        return _LEAST_PIPE


@dataclass
class Mailboxes:
    """The channels between ``k`` shards: ``pipes[s * k + r]`` the (reader, writer) of the pipe from shard ``s`` to
    shard ``r`` (None where ``s == r``); in shared memory per pair the messages and bytes sent (each written by the
    sender only) and the bytes taken (by the reader only); ``limit``: the bytes in flight per pipe at most."""

    k: int
    pipes: list[Any]
    sent: Any
    sent_bytes: Any
    taken_bytes: Any
    limit: int

    @classmethod
    def make(cls, ctx: Any, k: int) -> Mailboxes:
        """The mailboxes of ``k`` shards, made with the multiprocessing context ``ctx`` before they start."""
        pipes = [None if s == r else ctx.Pipe(duplex=False) for s in range(k) for r in range(k)]
        sizes = [pipe_size(p[1]) for p in pipes if p is not None]
        limit = min(sizes, default=_LEAST_PIPE) // 2
        return cls(k, pipes, ctx.RawArray("q", k * k), ctx.RawArray("q", k * k), ctx.RawArray("q", k * k), limit)

    def close(self) -> None:
        """Close this process's ends of every pipe (the parent's, once the shards have ended)."""
        for pipe in self.pipes:
            if pipe is not None:
                pipe[0].close()
                pipe[1].close()


@dataclass
class MailLink:
    """Shard ``index``'s end (:class:`~.shard_share.CertificateLink`'s methods): :meth:`exchange` takes what the
    others sent and sends what its proofs learnt since, at once (a look costs a few reads of shared memory where
    nothing came)."""

    proofs: FamilyProofs
    index: int
    mail: Mailboxes
    taken: list[int] = field(default_factory=list)  # messages taken from each shard
    pending: dict[int, list[Lesson]] = field(default_factory=dict)  # per other shard, the lessons not sent yet
    waiting: bool = False  # some of ``pending`` are not sent yet

    def __post_init__(self) -> None:
        if self.proofs.lessons is None:  # (its proofs keep what they learn from now on: else nothing would be sent)
            self.proofs.share()
        self.taken = [0] * self.mail.k
        self.pending = {r: [] for r in range(self.mail.k) if r != self.index}
        self.proofs.inbox = self.receive  # (asked before each proof: what came during an evaluation is not proven)

    def exchange(self, final: bool = False) -> None:
        """Learn what came; send what was learnt here, as far as each pipe has room (``final``: the same). Most
        calls find nothing either way (three a walked assembly, ~1,000 a shard): those read one count per other
        shard and return."""
        self.receive()
        if self.proofs.lessons or self.waiting:  # (else nothing learnt here since, nothing left to send)
            self._post()

    def receive(self) -> bool:
        """Learn what the other shards sent since (True: something came)."""
        mail, me, k, taken, came = self.mail, self.index, self.mail.k, self.taken, False
        for s in self.pending:
            i = s * k + me
            while taken[s] < mail.sent[i]:
                data = mail.pipes[i][0].recv_bytes()
                taken[s] += 1
                mail.taken_bytes[i] += len(data) + _HEADER
                self.proofs.learn(unpacked(data))
                came = True
        return came

    def _post(self) -> None:
        """Send what the proofs learnt since (and what waits), as far as each pipe has room."""
        batch = self.proofs.share()
        for r, pending in self.pending.items():
            pending.extend(batch)
            del pending[:-MAX_PENDING]
            if pending:
                self._send(r, pending)
        self.waiting = any(self.pending.values())

    def _send(self, r: int, pending: list[Lesson]) -> None:
        """Write ``pending``'s lessons to shard ``r`` in messages of at most :data:`CHUNK` while they fit the
        pipe's limit; what is written is removed from ``pending`` (a lesson too big for the limit alone: dropped)."""
        mail, i = self.mail, self.index * self.mail.k + r
        size = CHUNK
        while pending:
            data = packed(pending[:size])
            room = mail.limit - (mail.sent_bytes[i] - mail.taken_bytes[i])
            if len(data) + _HEADER > room:
                if len(data) + _HEADER > mail.limit and size > 1:
                    size = max(1, size // 2)
                elif len(data) + _HEADER > mail.limit:
                    del pending[:1]
                else:
                    return  # no room now: the next exchange tries again
                continue
            mail.pipes[i][1].send_bytes(data)
            mail.sent_bytes[i] += len(data) + _HEADER
            mail.sent[i] += 1
            del pending[:size]

    def close(self) -> None:
        """Send what fits, and let the proofs stop keeping what they learn. What came is not learnt: this shard's
        walk has ended (its process ends with it)."""
        self._post()
        self.proofs.lessons = self.proofs.inbox = None
