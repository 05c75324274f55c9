"""Connecting to a Dask scheduler, or starting a local cluster, for :class:`~.cluster.DaskEvaluator`.

Without a scheduler address a ``LocalCluster`` is started (worker processes on the loopback interface, one thread
each, no dashboard) and closed with the evaluator (when its outermost ``with`` ends).
"""

from __future__ import annotations

from typing import Any

from timor_core.errors import InputError

__all__ = ["ClusterConnection", "ClusterError", "import_distributed", "LOCAL_CLUSTER_CONFIG"]

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


def import_distributed() -> Any:
    """The ``distributed`` package, or a :class:`ClusterError` saying how to install it."""
    try:
        import distributed
    except ImportError:
        raise ClusterError(
            "the Dask evaluator needs dask[distributed]: pip install 'timor-core[cluster]'", value="distributed"
        ) from None
    return distributed


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
    _task: Any
    local: Any

    @property
    def client(self) -> Any:
        """The ``distributed.Client`` (connecting, or starting the local cluster, on first use)."""
        if self._client is None:
            distributed = import_distributed()
            if self.scheduler is None:
                import logging

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
                try:
                    self._client = distributed.Client(self.scheduler, timeout=self.connect_timeout)
                except (OSError, TimeoutError) as exc:
                    raise ClusterError(
                        f"cannot reach the Dask scheduler at {self.scheduler} within {self.connect_timeout:g} s"
                        f" ({type(exc).__name__})",
                        value=self.scheduler,
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
        """Close the client and, if this evaluator started it, the local cluster."""
        if self._client is not None:
            self._client.close()
            self._client = None
        if self._cluster is not None:
            self._cluster.close()
            self._cluster = None

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
