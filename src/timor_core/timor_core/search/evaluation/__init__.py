"""Assemblies evaluated: one through the filter chain and the cost (``evaluate``), many on this machine's worker
processes (``parallel``), a sequence under a budget keeping the best (``optimizer``: the optimizer interface,
``run_search``, ``Budget``, the random search), the progress bar (``progress``) and the result (``result``).

May import from timor_core: errors, limits, common, model, kinematics, task, search.spaces, search.filtering.
"""
