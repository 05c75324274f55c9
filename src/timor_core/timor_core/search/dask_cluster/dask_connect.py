"""Connecting to a Dask scheduler, or starting a local cluster, for :class:`~.cluster.DaskEvaluator`.

Without a scheduler address a ``LocalCluster`` is started (worker processes on the loopback interface, one thread
each, no dashboard) and closed with the evaluator (when its outermost ``with`` ends). A scheduler address is read by
:func:`scheduler_address` alone (``tcp://host:port``, no credentials); before Dask connects, :func:`probe_scheduler`
checks within ``CONNECT_TIMEOUT`` seconds that a Dask scheduler answers there: a port that never speaks, an HTTP
server (a Dask dashboard) or junk bytes are refused naming the address, never handed to Dask's reader.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import struct
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

from timor_core.errors import InputError

__all__ = [
    "ClusterConnection",
    "ClusterError",
    "CONNECT_TIMEOUT",
    "forked_workers",
    "import_distributed",
    "LOCAL_CLUSTER_CONFIG",
    "probe_scheduler",
    "scheduler_address",
    "SchedulerError",
]

CONNECT_TIMEOUT = 5.0
"""Seconds for every network wait of reaching a scheduler (connect, Dask's handshake, the first answer)."""
_MAX_HANDSHAKE = 1 << 16
"""Bytes of a scheduler's first message (Dask's handshake is well under 1 kB); more is not a Dask scheduler."""

#: Dask settings of a local cluster: its processes share the machine with the workers, so the periodic work that
#: serves dashboards and task graphs we do not have is turned off or slowed down (a worker's statistical profiler
#: samples the evaluating thread every 10 ms; the scheduler looks for work to steal every 100 ms)
LOCAL_CLUSTER_CONFIG: dict[str, object] = {
    "distributed.worker.profile.enabled": False,
    "distributed.scheduler.work-stealing": False,
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.admin.tick.interval": "200ms",
}


class ClusterError(InputError):
    """The Dask cluster cannot be used: not installed, unreachable scheduler, bad checkpoint."""


class SchedulerError(ClusterError):
    """A scheduler address that is refused or where no Dask scheduler answers (``path``: where it was given)."""


def scheduler_address(text: str | None) -> str | None:
    """The one reader of scheduler addresses: ``tcp://host:port`` (``dask://`` is taken for ``tcp://``), or None
    for None; other schemes, credentials, a path or query, or a port outside 1-65535 raise :class:`SchedulerError`
    (credentials are never repeated in it)."""
    if text is None:
        return None
    if not isinstance(text, str):
        raise SchedulerError("a scheduler address must be a string", path="scheduler", value=type(text).__name__)
    head, at, tail = text.rpartition("@")
    shown = (head[: head.find("://") + 3] if "://" in head else "") + "***@" + tail if at else text
    shown = shown[:200]
    if at:  # user:password@ (or an '@' where none belongs): refused, and never repeated
        raise SchedulerError(f"a scheduler address must not hold credentials (got {shown!r})", path="scheduler")
    address = "tcp://" + text[len("dask://") :] if text.startswith("dask://") else text
    try:
        parts = urlsplit(address)
        port = parts.port
    except ValueError:
        parts, port = None, None
    if parts is None or parts.scheme != "tcp":
        raise SchedulerError(
            "expected a scheduler address like tcp://host:8786 (tcp:// is the only scheme supported)",
            path="scheduler",
            value=shown,
        )
    if (
        not text.isprintable()
        or len(text) > 1000
        or not parts.hostname
        or port is None
        or not 0 < port <= 65535
        or parts.path not in ("", "/")
        or "?" in address
        or "#" in address
    ):
        raise SchedulerError("expected a scheduler address like tcp://host:8786", path="scheduler", value=shown)
    return f"tcp://{parts.netloc}"


def probe_scheduler(address: str, timeout: float = CONNECT_TIMEOUT) -> None:
    """Check that a Dask scheduler answers at ``address`` (``tcp://host:port``): connected and its first message
    read whole within ``timeout`` seconds, a message Dask's handshake could be; else :class:`SchedulerError`."""
    parts = urlsplit(address)
    deadline = time.monotonic() + timeout
    body: bytes | None = b""
    try:
        with socket.create_connection((parts.hostname, parts.port or 0), timeout=timeout) as sock:
            body = _read(sock, 8, deadline)  # the size of Dask's first message (b"": none in time; None: closed)
            if body:
                size = struct.unpack("<Q", body)[0]
                body = _read(sock, size, deadline) if 8 <= size <= _MAX_HANDSHAKE else None
    except TimeoutError:
        body = b""
    except OSError as exc:
        why = "connection refused" if isinstance(exc, ConnectionRefusedError) else f"{exc.strerror or exc}"
        raise SchedulerError(f"cannot reach the Dask scheduler ({why}) at {address}", path="scheduler") from None
    if body == b"":
        raise SchedulerError(f"no answer from a Dask scheduler within {timeout:g} s at {address}", path="scheduler")
    if body is None or not _is_handshake(body):
        raise SchedulerError(f"no Dask scheduler answers (an unexpected first message) at {address}", path="scheduler")


def _read(sock: socket.socket, n: int, deadline: float) -> bytes | None:
    """Exactly ``n`` bytes from ``sock`` before ``deadline``; ``b""`` if the time runs out first, None if the peer
    closes first."""
    out = bytearray()
    while len(out) < n:
        left = deadline - time.monotonic()
        if left <= 0:
            return b""
        sock.settimeout(left)
        try:
            block = sock.recv(n - len(out))
        except TimeoutError:
            return b""
        if not block:
            return None
        out += block
    return bytes(out)


def _is_handshake(body: bytes) -> bool:
    """Whether ``body`` is framed as Dask's first message: a frame count, the frames' sizes, a msgpack map."""
    import msgpack

    count = struct.unpack_from("<Q", body)[0]
    if not 1 <= count <= 16 or len(body) < 8 * (count + 1):
        return False
    sizes = struct.unpack_from(f"<{count}Q", body, 8)
    if 8 * (count + 1) + sum(sizes) != len(body):
        return False
    try:
        header = msgpack.loads(body[8 * (count + 1) : 8 * (count + 1) + sizes[0]])
    except Exception:  # noqa: BLE001 - msgpack raises several unrelated types on junk
        return False
    return isinstance(header, dict)


def import_distributed() -> Any:
    """The ``distributed`` package, or a :class:`ClusterError` saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ClusterError(
            "the Dask evaluator needs dask[distributed]: pip install 'timor-core[cluster]'", value="distributed"
        ) from None
    return distributed


@contextmanager
def forked_workers(*preload: str) -> Iterator[None]:
    """Within: a local cluster started here forks its worker processes from a fork server that has imported
    ``distributed`` and the modules ``preload`` once, instead of spawning each (a fresh interpreter importing them,
    then loading timor's worker code and compiled kernels on its first task: ~1.5 CPU-s a worker). The server is this
    process's multiprocessing fork server: started by the first worker forked, in the environment of that moment
    (Dask's worker variables set), it lives until this process exits, and one already running keeps what it had
    loaded. Workers a nanny starts later (replacing a lost one) are spawned as usual."""
    distributed = import_distributed()
    import dask

    with dask.config.set({"distributed.worker.multiprocessing-method": "forkserver"}):
        context = distributed.utils.get_mp_context()  # where distributed sets its preload list (once a process)
        context.set_forkserver_preload(["distributed", *preload])  # then ours replaces it
        yield


class ClusterConnection:
    """The client of a Dask cluster, made on first use; a context manager (nested ``with`` blocks close it once,
    at the outermost end). The class using it sets ``scheduler``, ``n_workers``, ``connect_timeout``, ``workers``,
    ``_client``, ``_cluster``, ``_depth``, and has ``_task`` and ``local`` (checked on entering)."""

    scheduler: str | None
    n_workers: int
    connect_timeout: float
    workers: int
    _client: Any
    _cluster: Any
    _depth: int
    abandoned: bool = False  # work given up at a deadline may still run on the workers (see :meth:`close`)
    _task: Any
    local: Any

    @property
    def client(self) -> Any:
        """The ``distributed.Client`` (connecting, or starting the local cluster, on first use)."""
        if self._client is None:
            distributed = import_distributed()
            if self.scheduler is None:
                import dask

                with dask.config.set(LOCAL_CLUSTER_CONFIG):  # read by the scheduler and handed to the workers
                    self._cluster = distributed.LocalCluster(
                        n_workers=self.n_workers,
                        threads_per_worker=1,
                        processes=True,
                        host="127.0.0.1",
                        scheduler_port=0,
                        dashboard_address=None,
                        worker_dashboard_address=None,
                        silence_logs=logging.ERROR,
                    )
                self._client = distributed.Client(self._cluster, timeout=self.connect_timeout)
            else:
                probe_scheduler(self.scheduler, self.connect_timeout)
                try:
                    self._client = distributed.Client(self.scheduler, timeout=self.connect_timeout)
                except (OSError, TimeoutError) as exc:
                    raise SchedulerError(
                        f"cannot reach the Dask scheduler at {self.scheduler} within {self.connect_timeout:g} s"
                        f" ({type(exc).__name__})",
                        path="scheduler",
                    ) from None
        return self._client

    @property
    def address(self) -> str:
        """The scheduler's address."""
        return self.client.scheduler.address

    def cluster_workers(self) -> int:
        """The workers the scheduler knows now (at least 1; ``n_workers`` if it cannot say)."""
        try:
            return max(1, len(self.client.scheduler_info().get("workers", {})))
        except Exception:  # noqa: BLE001 - only a sizing hint
            return self.n_workers

    def start(self) -> Any:
        """Connect (or start the local cluster) and wait for at least one worker."""
        client = self.client
        if self._cluster is not None:
            client.wait_for_workers(self.n_workers, timeout=60)
        self.workers = self.cluster_workers()
        return self

    def close(self, cancel: bool = False) -> None:
        """Close the client and, if this evaluator started it, the local cluster: after work was given up at a
        deadline (:attr:`abandoned`) its worker processes are ended first (a closing worker otherwise waits up to
        4 s for the evaluation it is in)."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            if self.abandoned:
                end_local_workers(self._cluster)
            self._cluster.close()
            self._cluster = None
        self.abandoned = False

    def __enter__(self) -> Any:
        self._depth += 1
        if self._task is not None:
            self.local  # noqa: B018  (fail early on bad inputs)
        return self

    def __exit__(self, exc_type, *_: Any) -> None:
        self._depth -= 1
        if self._depth <= 0:
            self._depth = 0
            self.close(cancel=exc_type is not None)


def end_local_workers(cluster: Any) -> None:
    """End the worker processes of a ``LocalCluster`` this process started, whatever they are doing; their nannies
    are told first not to start new ones (``close_gracefully``, what a cluster's shutdown does)."""
    for nanny in list(getattr(cluster, "workers", {}).values()):
        process = getattr(getattr(nanny, "process", None), "process", None)
        pid = getattr(process, "pid", None)
        if not isinstance(pid, int) or pid == os.getpid():
            continue  # a worker in this process (processes=False), or one not started
        nanny.close_gracefully(reason="timor: past the search's deadline")
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:  # already gone
            pass
