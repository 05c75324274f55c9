"""The genetic algorithm: configuration and PyGAD's loop (``ga``), the chromosome (``ga_coding``), one run's
fitness, cache and budget (``ga_run``) and the local descent from a stalled trial's best (``ga_local``).

May import from timor_core: errors, limits, common, model, kinematics, task, search.spaces, search.filtering,
search.evaluation.
"""
