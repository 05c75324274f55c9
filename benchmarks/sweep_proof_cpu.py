#!/usr/bin/env python3
"""The sweep proofs' CPU in a cost-ordered search, two library trees in alternation, and a replay of one search's
sweep proofs both ways (issue 38 item 1: the sweep proof's levels in one compiled call, ``sweep_fused.py``).

    python benchmarks/sweep_proof_cpu.py /tmp/unseen38/obstacles_4.json --before /tmp/old/src/timor_core --rounds 5
    python benchmarks/sweep_proof_cpu.py /tmp/unseen38/obstacles_4.json --replay --rounds 5
    python benchmarks/sweep_proof_cpu.py /tmp/unseen38/obstacles_4.json --before /tmp/old/src/timor_core --warm

With ``--before``: each round runs ``ExhaustiveSearch(order="cost", workers=1)`` on experiment 2's space in a fresh
process (``nice -n 5``, ``TIMOR_COMPILED=1``: ``cost_order_cpu.alternated``) with ``--before``'s ``src/timor_core``
and this checkout's, the order swapped every round; timed by ``time.process_time``: the search, and within it
``sweep_proof.sweep_certificate`` (every sweep proof) and the family filter's sweep proofs (``early_refusal``: all,
and those that refused the chain, with the ``FamilyProofs.refusal`` of those chains before it); ``--warm``: each
timed search comes after one not timed, in its process. With ``--replay`` (this checkout, one process): one
search records every ``sweep_certificate`` call's arguments and result; the calls are replayed with the levels a
kernel call per step (``sweep_kernel`` None) and with the fused call (the ahead-built kernel, or numba's), the
proofs compared (verdict, boxes, link, refused boxes to the last bit), then both ways timed over all calls,
alternating, ``--rounds`` rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

from cost_order_cpu import alternated


def search(task: str, calls: list | None = None, warm: bool = False) -> dict:
    """One cost-ordered search (1 worker) in this process (``warm``: after one search of it not timed): its CPU
    seconds, its sweep proofs' and their count, the evaluations; the family filter's sweep proofs
    (``filters.early_refusal``: every call, and those that refused the chain, with the family's reach proofs'
    ``FamilyProofs.refusal`` the chain went through first); every ``sweep_certificate`` call (arguments, proof)
    appended to ``calls`` where given."""
    from timor_core import ModulesDB
    from timor_core.search import paper_exp2_space
    from timor_core.search.exhaustive_search.exhaustive import ExhaustiveSearch
    from timor_core.search.filtering import family_proof, filters, sweep_proof
    from timor_core.task import Task

    real, spent = sweep_proof.sweep_certificate, [0.0, 0]
    early, refusal = filters.early_refusal, family_proof.FamilyProofs.refusal
    path: dict[str, float] = {key: 0 if key.endswith("_calls") else 0.0 for key in PATH}
    last = [0.0]

    def timed(*args, **options):
        t = time.process_time()
        proof = real(*args, **options)
        spent[0], spent[1] = spent[0] + time.process_time() - t, spent[1] + 1
        if calls is not None:
            calls.append((args, options, proof))
        return proof

    def refused(*args, **options):
        t = time.process_time()
        found = refusal(*args, **options)
        last[0] = time.process_time() - t
        return found

    def swept(*args, **options):
        t = time.process_time()
        found = early(*args, **options)
        dt = time.process_time() - t
        path["early"], path["early_calls"] = path["early"] + dt, path["early_calls"] + 1
        if found is not None:
            path["swept"], path["swept_calls"] = path["swept"] + dt, path["swept_calls"] + 1
            path["swept_refusal"] += last[0]
        return found

    db = ModulesDB.from_name("robco_like")
    space, problem = paper_exp2_space(db), Task.from_json_file(task)
    if warm:
        ExhaustiveSearch(space, cost="mass", workers=1, progress=False, order="cost").optimize(problem, db)
    found = ExhaustiveSearch(space, cost="mass", workers=1, progress=False, order="cost")
    sweep_proof.sweep_certificate, filters.early_refusal = timed, swept
    family_proof.FamilyProofs.refusal = refused  # type: ignore[method-assign]
    try:
        c0 = time.process_time()
        r = found.optimize(problem, db)
        cpu = time.process_time() - c0
    finally:
        sweep_proof.sweep_certificate, filters.early_refusal = real, early
        family_proof.FamilyProofs.refusal = refusal  # type: ignore[method-assign]
    return {"cpu": cpu, "sweep": spent[0], "calls": spent[1], "evaluations": r.evaluations, **path}


PATH = ("early", "early_calls", "swept", "swept_calls", "swept_refusal")
"""What :func:`search` reports of the family filter's sweep proofs: ``early_refusal``'s CPU seconds and calls, those
of the calls that refused the chain, and those chains' ``FamilyProofs.refusal`` CPU seconds."""


def _differs(a, b) -> bool:
    """Whether two sweep proofs differ: verdict, boxes, link, refused boxes (every array to the last bit)."""
    if a is None or b is None:
        return a is not b
    if (a.boxes, a.link, a.leaves is None) != (b.boxes, b.link, b.leaves is None):
        return True
    fields = ("centres", "half", "weights", "excess") if a.leaves is not None else ()
    return any(getattr(a.leaves, f).tobytes() != getattr(b.leaves, f).tobytes() for f in fields)


def replay(task: str, rounds: int) -> None:
    """Record one search's sweep proofs, replay them both ways (see the module docstring)."""
    from timor_core.common import compiled
    from timor_core.search.filtering import sweep_fused, sweep_proof

    compiled.use_compiled(True)
    calls: list = []
    search(task, calls)
    fused, real = sweep_fused.sweep_kernel(jit=True), sweep_proof.sweep_kernel

    def run(way: bool) -> list:
        sweep_proof.sweep_kernel = (lambda: fused) if way else (lambda: None)
        try:
            return [sweep_proof.sweep_certificate(*args, **options) for args, options, _ in calls]
        finally:
            sweep_proof.sweep_kernel = real

    plain, both = run(False), run(True)
    proven = sum(p is not None for p in plain)
    started = sum(options.get("start") is not None for _, options, _ in calls)
    with_leaves = sum(p is not None and p.leaves is not None for p in plain)
    own = sum(_differs(p, r) for p, (_, _, r) in zip(plain, calls, strict=True))
    print(f"{len(calls)} sweep proofs ({proven} proven, {started} started, {with_leaves} with their boxes kept):",
          f"{sum(map(_differs, plain, both))} differ between the two ways, {own} from the search's own")  # fmt: skip
    times: dict[bool, list[float]] = {False: [], True: []}
    for k in range(rounds):
        for way in (False, True) if k % 2 == 0 else (True, False):
            t = time.process_time()
            run(way)
            times[way].append(time.process_time() - t)
    for way, name in ((False, "a kernel call per step"), (True, "fused")):
        print(f"{name:24} CPU s {' '.join(f'{x:.4f}' for x in times[way])}, median {statistics.median(times[way]):.4f}")


#: one search of the task (argv[1]) with the tree on PYTHONPATH, by this file's :func:`search`: its figures as JSON
HERE = Path(__file__).resolve()
CHILD = f"import json, runpy, sys; sys.path.insert(0, {str(HERE.parent)!r})\n" + (
    f"print(json.dumps(runpy.run_path({str(HERE)!r})['search'](sys.argv[1], warm='--warm' in sys.argv[2:])))"
)


def alternate(task: str, before: str, rounds: int, warm: bool = False) -> None:
    """The search and its sweep proofs' CPU, ``before``'s tree and this one in alternation
    (``cost_order_cpu.alternated``; ``warm``: each timed search after one not timed, in its process)."""
    out: dict[str, list[dict]] = {}
    for k, _, name, r in alternated([task], before, rounds, CHILD, *(["--warm"] if warm else [])):
        out.setdefault(name, []).append(r)
        print(f"{k} {name:6} search {r['cpu']:.3f} s, sweep proofs {r['sweep']:.4f} s ({r['calls']} calls),",
              f"early_refusal {r['early']:.4f} s ({r['early_calls']} calls; refused {r['swept_calls']}:",
              f"{r['swept']:.4f} s, their family refusal {r['swept_refusal']:.4f} s), {r['evaluations']} evaluated,",
              f"load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    for name, runs in out.items():
        keys = ("cpu", "sweep", "early", "swept", "swept_refusal")
        cpu, sweep, early, swept, before_it = (statistics.median(r[key] for r in runs) for key in keys)
        print(f"{name:6} median search {cpu:.3f} s, sweep proofs {sweep:.4f} s, early_refusal {early:.4f} s",
              f"(refused chains {swept:.4f} s + their family refusal {before_it:.4f} s),",
              f"evaluations {sorted({r['evaluations'] for r in runs})}")  # fmt: skip


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("task", help="a task file")
    p.add_argument("--before", help="the other src/timor_core (alternated with this checkout's)")
    p.add_argument("--replay", action="store_true", help="replay one search's sweep proofs both ways")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--warm", action="store_true", help="time each search after one not timed (in its process)")
    args = p.parse_args()
    if args.replay:
        replay(args.task, args.rounds)
    if args.before:
        alternate(args.task, args.before, args.rounds, args.warm)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
