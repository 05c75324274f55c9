"""The exhaustive search (``exhaustive``: every assembly of a space, in index order or cheapest first) and its
cost order in shards, each worker walking its own part (``shards`` on Dask, ``local_shards`` on this machine's
processes, ``shard_worker`` the loop, ``shard_share`` the certificates passed between the shards).

May import from timor_core: errors, limits, common, model, kinematics, task, search.spaces, search.filtering,
search.evaluation, search.dask_cluster.
"""
