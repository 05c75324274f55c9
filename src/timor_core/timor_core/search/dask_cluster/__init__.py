"""A Dask cluster as the evaluator: the client or a local cluster (``dask_connect``), the evaluator
(``cluster``: ``DaskEvaluator``), the code run on a worker (``dask_worker``) and what a search checkpoint records
(``checkpoint``).

May import from timor_core: errors, limits, common, model, kinematics, task, search.spaces, search.filtering,
search.evaluation.
"""
