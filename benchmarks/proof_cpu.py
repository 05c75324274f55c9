#!/usr/bin/env python3
"""The reach proofs' CPU in cost-ordered searches, two library trees in alternation (issue 38 item 1).

    python benchmarks/proof_cpu.py --before /tmp/s49-before/src/timor_core --rounds 3 \\
        /tmp/unseen38/five_joints.json /tmp/unseen38/obstacles_4.json

Each search runs ``ExhaustiveSearch(order="cost", workers=1)`` on experiment 2's space in a fresh process
(``nice -n 5``, ``TIMOR_COMPILED=1``), with this checkout's ``src/timor_core`` ("after") and ``--before``'s, one
right after the other, the order swapped every round (``cost_order_cpu.alternated``). Timed with
``time.process_time`` in the process: the family filter's proofs (``FamilyProofs._prove``: ``prove``), its calls
that prove (``FamilyProofs.refusal``: ``refusal``, the certificates' and witnesses' checks included) and the search
call (``search``); counted: the proofs run and the evaluations. Prints every run, then per task and tree the
medians. Remove ``search/filtering/__pycache__`` and build the kernels anew in a tree whose kernels changed (see
benchmarks/README.md, s49-edge).
"""

from __future__ import annotations

import argparse
import os
import statistics

from cost_order_cpu import alternated

CHILD = r"""
import json, sys, time
from timor_core.search.filtering import family_proof
spent = {"prove": 0.0, "refusal": 0.0, "proofs": 0}  # (FamilyProofs.proofs counts the calls of _prove)
def timed(name, function):
    def wrapper(*args, **kwargs):
        t = time.process_time()
        spent["proofs"] += name == "prove"
        try:
            return function(*args, **kwargs)
        finally:
            spent[name] += time.process_time() - t
    return wrapper
family_proof.FamilyProofs._prove = timed("prove", family_proof.FamilyProofs._prove)
family_proof.FamilyProofs.refusal = timed("refusal", family_proof.FamilyProofs.refusal)
from timor_core import ModulesDB
from timor_core.search import paper_exp2_space
from timor_core.search.exhaustive_search.exhaustive import ExhaustiveSearch
from timor_core.task import Task
task = Task.from_json_file(sys.argv[1]); db = ModulesDB.from_name("robco_like"); space = paper_exp2_space(db)
search = ExhaustiveSearch(space, cost="mass", workers=1, progress=False, order="cost")
c0 = time.process_time()
r = search.optimize(task, db)
c1 = time.process_time()
print(json.dumps({"search": c1 - c0, "evaluations": r.evaluations, "cost": r.best_cost, **spent}))
"""
KEYS = ("prove", "refusal", "search")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("tasks", nargs="+", help="task files")
    p.add_argument("--before", required=True, help="the other src/timor_core")
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    out: dict = {}
    for k, task, name, r in alternated(args.tasks, args.before, args.rounds, CHILD):
        out.setdefault((task, name), []).append(r)
        times = " ".join(f"{key} {r[key]:.3f}" for key in KEYS)
        print(f"{k} {task} {name} {times} s, {r['proofs']} proofs, {r['evaluations']} evaluated,"
              f" load {os.getloadavg()[0]:.1f}", flush=True)  # fmt: skip
    for (task, name), runs in sorted(out.items()):
        times = ", ".join(f"{key} {statistics.median(r[key] for r in runs):.3f}" for key in KEYS)
        seen = sorted({(r["proofs"], r["evaluations"]) for r in runs})
        print(f"{task:14} {name:6} median CPU s: {times}; (proofs, evaluations) {seen}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
