#!/usr/bin/env python3
"""Where a constrained search's CPU goes, in figures that a loaded machine does not blur (issue 39 item 2, beside
``exp2.py --against``): run it under each checkout's library, alternating, e.g.

    for co in OLD NEW; do PYTHONPATH=$co/src/timor_core python benchmarks/exp2_split.py calls TASK.json; done
    for co in OLD NEW; do PYTHONPATH=$co/src/timor_core python benchmarks/exp2_split.py local TASK.json; done
    for co in OLD NEW; do PYTHONPATH=$co/src/timor_core python benchmarks/exp2_split.py dask TASK.json; done

- ``calls``: the cost-ordered search with 1 worker under cProfile (after a warm-up on its first 2,000 positions):
  the number of Python function calls, which does not depend on the load: the same count, the same work.
- ``local``: the cost-ordered search with 2 local workers (shards): CPU seconds of this process (the client) and of
  its children (the shards' processes), ``getrusage``.
- ``dask``: the same on a ``DaskEvaluator(n_workers=2)`` (one shard per worker): CPU of this process (client and the
  local cluster's scheduler) while the cluster starts and during the search, and of its children (nannies and
  workers, start included).
It works with the library before the split of ``search/`` (d663f92) as well.
"""

from __future__ import annotations

import cProfile
import pstats
import resource
import sys
import time


def cpu(who: int) -> float:
    """User + sys seconds of this process (RUSAGE_SELF) or of its waited-for children (RUSAGE_CHILDREN)."""
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def main(mode: str, task_file: str) -> None:
    from timor_core import ModulesDB
    from timor_core.search import ExhaustiveSearch, paper_exp2_space

    try:
        from timor_core.search.evaluation.evaluate import load_task
    except ImportError:  # the library before the split of search/
        from timor_core.search.evaluate import load_task  # type: ignore[no-redef]
    db = ModulesDB.from_name("robco_like")
    task, space = load_task(task_file), paper_exp2_space(db)
    if mode == "calls":
        ExhaustiveSearch(space, workers=1, progress=False, order="cost", stop=2000).optimize(task, db)  # warm-up
        profile = cProfile.Profile()
        profile.enable()
        r = ExhaustiveSearch(space, workers=1, progress=False, order="cost").optimize(task, db)
        profile.disable()
        print(f"calls {pstats.Stats(profile).total_calls}, evaluated {r.evaluations}, best {r.best_cost}")
    elif mode == "local":
        p0, c0, t0 = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN), time.perf_counter()
        r = ExhaustiveSearch(space, workers=2, progress=False, order="cost").optimize(task, db)
        print(f"client {cpu(resource.RUSAGE_SELF) - p0:.2f} s, shards {cpu(resource.RUSAGE_CHILDREN) - c0:.2f} s "
              f"CPU, {time.perf_counter() - t0:.1f} s wall, evaluated {r.evaluations}, best {r.best_cost}")  # fmt: skip
    else:
        from timor_core.search import DaskEvaluator

        p0, c0 = cpu(resource.RUSAGE_SELF), cpu(resource.RUSAGE_CHILDREN)
        with DaskEvaluator(n_workers=2) as de:
            de.start()
            p1, t1 = cpu(resource.RUSAGE_SELF), time.perf_counter()
            r = ExhaustiveSearch(space, progress=False, order="cost", evaluator=de).optimize(task, db)
            p2, t2 = cpu(resource.RUSAGE_SELF), time.perf_counter()
        print(f"client + scheduler: start {p1 - p0:.2f} s, search {p2 - p1:.2f} s; nannies + workers "
              f"{cpu(resource.RUSAGE_CHILDREN) - c0:.2f} s CPU; search {t2 - t1:.1f} s wall, evaluated "
              f"{r.evaluations}, best {r.best_cost}")  # fmt: skip


if __name__ == "__main__":  # (the guard: Dask's nannies start their workers by spawning this file again)
    if len(sys.argv) != 3 or sys.argv[1] not in ("calls", "local", "dask"):
        raise SystemExit(__doc__)
    main(sys.argv[1], sys.argv[2])
