"""What a Dask worker of a search loads, imported once by the fork server of forked workers
(:func:`~timor_core.search.dask_cluster.dask_connect.forked_workers` with :data:`.shards.WORKER_PRELOAD`): the workers
forked from it start with the worker code of both routes imported and, where compiled kernels are allowed, the
compiled kernels loaded, rather than each loading them on its first task (~0.8 CPU-s a worker). Importing this module
loads the kernels: that is its purpose."""

from __future__ import annotations

from timor_core.common import compiled
from timor_core.search.exhaustive_search import shard_worker
from timor_core.search.filtering.proof_kernel import load_compiled

__all__ = ["shard_worker"]

if compiled.allowed():
    load_compiled()
