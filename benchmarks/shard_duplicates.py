#!/usr/bin/env python3
"""How much of a 2-worker search's proof work duplicates the other shard's (issue 38 item 1, s55-share).

    TIMOR_COMPILED=1 python benchmarks/shard_duplicates.py TASK.json [--replay]

One 2-worker cost-ordered search, every family proof of each shard logged (``FamilyProofs._prove``: goal, family,
translations, start, margin, kept boxes, monotonic times, CPU). Per shard: proofs of a chain and goal the other shard
proved too; proofs of a chain a certificate of the other shard covered before the proof began (what a faster
exchange would save), while one of its proofs ran (what "I am proving this" would save) or at any time (the cost
order's race: the other proved a chain of the family later); started proofs for which the other shard's kept boxes
(of proofs ended before, its last :data:`~.family_proof.STARTS` of the goal and family) held a start where its own
held none, or a nearer one. ``--replay``: those proofs run again in this process (warm, best of 5) from their own
start and from the other's nearest: the CPU the other's boxes would save (their direct effect only: a proof started
elsewhere keeps other boxes, widens to another margin). Measurement only (patches made here).
"""

from __future__ import annotations

import argparse
import math
import os
import pickle
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from timor_core import ModulesDB
from timor_core.paper.experiments import exp2_space
from timor_core.search import ExhaustiveSearch, FilterConfig
from timor_core.search.exhaustive_search import local_shards
from timor_core.search.filtering import family_proof
from timor_core.search.filtering.family_certificates import distance
from timor_core.search.filtering.proof_chain import chain_of_steps
from timor_core.search.filtering.reach_proof import pose_proof
from timor_core.task.feedback import load_task

# one folder for the parent and its shards (the environment carries it to a spawned shard); removed at the end
OUT = Path(os.environ.setdefault("SHARD_DUPLICATES_OUT", tempfile.mkdtemp(prefix="shard-duplicates-")))
LOG: list[dict] = []
KEPT: dict[int, int] = {}  # id of a kept Boxes -> its proof's place in LOG
_PROVE, _RUN = family_proof.FamilyProofs._prove, local_shards.run_shard


def _prove(self: Any, k: int, cut: Any, witnesses: list) -> Any:
    start, levels = self._near(k, cut), self.distances.levels(cut.gaps)
    t0, c0 = time.monotonic(), time.process_time()
    proof = _PROVE(self, k, cut, witnesses)
    t1, c1 = time.monotonic(), time.process_time()
    kept = self.starts[(k, cut.rotations)][0][1] if proof is not None else None
    if kept is not None:
        KEPT[id(kept)] = len(LOG)
    LOG.append({"k": k, "rot": cut.rotations, "rows": cut.rows, "gaps": cut.gaps, "t0": t0, "t1": t1, "cpu": c1 - c0,
                "start": None if start is None else (KEPT.get(id(start[0])), start[1]), "kept": kept,
                "margin": None if proof is None else proof.margin, "steps": family_proof._steps(cut),
                "goal": self.goals[k], "budget": self.budget, "levels": levels})  # fmt: skip
    return proof


def _run_shard(job: Any, hub: Any = None) -> Any:
    try:
        return _RUN(job, hub)
    finally:
        (OUT / f"{job.index}.pkl").write_bytes(pickle.dumps(LOG))


def _others_start(r: dict, other: list[dict]) -> tuple[Any, float] | None:
    """The other shard's kept boxes nearest ``r``'s chain (as ``FamilyProofs._near`` picks among its own)."""
    slack, best = family_proof.ROTATION_SLACK * (r["gaps"] + 1), None
    key = (r["k"], r["rot"])
    mine = [o for o in other if (o["k"], o["rot"]) == key and o["kept"] is not None and o["t1"] < r["t0"]]
    for o in mine[-family_proof.STARTS :]:
        d = distance(o["rows"], r["rows"]) + slack
        if d < o["kept"].floor and (best is None or d < best[1]):
            best = (o["kept"], d)
    return best


def _covered(r: dict, other: list[dict], when: str) -> bool:
    """Whether a certificate of the other shard covers ``r``'s chain, made ``when`` ("before" its proof began,
    "during": while it began, "after": once it began)."""
    slack = family_proof.ROTATION_SLACK * (r["gaps"] + 1)
    for o in other:
        if (o["k"], o["rot"]) != (r["k"], r["rot"]) or o["margin"] is None or o["margin"] <= slack:
            continue
        at = o["t1"] < r["t0"] if when == "before" else o["t0"] < r["t0"] <= o["t1"] if when == "during" else True
        if at and distance(o["rows"], r["rows"]) < o["margin"] - slack:
            return True
    return False


def _replay(r: dict, start: Any, rounds: int = 5) -> float:
    best = math.inf
    for _ in range(rounds):
        chain, t = chain_of_steps(*r["steps"]), time.perf_counter()
        pose_proof(chain, r["goal"][0], r["goal"][1], r["budget"], widen=family_proof.WIDEN, witnesses=[], kept=[],
                   widen_budget=family_proof.WIDEN_BUDGET, start=start, levels=r["levels"])  # fmt: skip
        best = min(best, time.perf_counter() - t)
    return best


def report(logs: list[list[dict]], replay: bool) -> None:
    for s, log in enumerate(logs):
        other = logs[1 - s]
        same = sum(any((o["k"], o["rot"], o["rows"]) == (r["k"], r["rot"], r["rows"]) for o in other) for r in log)
        before = sum(_covered(r, other, "before") for r in log)
        during = sum(_covered(r, other, "during") and not _covered(r, other, "before") for r in log)
        ever = sum(_covered(r, other, "ever") for r in log)
        new = nearer = 0
        own_s = others_s = 0.0
        for r in log:
            theirs = _others_start(r, other)
            own = None if r["start"] is None else (log[r["start"][0]]["kept"], r["start"][1])
            if theirs is None or (own is not None and own[1] <= theirs[1]):
                continue
            new, nearer = new + (own is None), nearer + (own is not None)
            if replay:
                own_s, others_s = own_s + _replay(r, own), others_s + _replay(r, theirs)
        started = sum(r["start"] is not None for r in log)
        print(
            f"shard {s}: {len(log)} proofs ({started} started), {sum(r['cpu'] for r in log):.3f} CPU-s; the same "
            f"chain and goal proven by the other: {same}; covered by the other's certificate before: {before}, "
            f"by one being proven: {during}, at any time: {ever}; the other's boxes would start {new} unstarted, "
            f"{nearer} nearer"
        )
        if replay:
            print(f"   replayed: {own_s * 1e3:.1f} ms from their own starts, {others_s * 1e3:.1f} ms from the other's")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("task")
    p.add_argument("--replay", action="store_true")
    args = p.parse_args()
    family_proof.FamilyProofs._prove = _prove  # type: ignore[method-assign]
    local_shards.run_shard = _run_shard
    db = ModulesDB.from_name("robco_like")
    search = ExhaustiveSearch(exp2_space(db), "mass", FilterConfig(seed=0), workers=2, progress=False, order="cost")
    result = search.optimize(load_task(args.task, False), db, None)
    print(f"{Path(args.task).stem}: best {result.best_cost} at {result.best_seq}, {result.evaluations} evaluated")
    report([pickle.loads((OUT / f"{n}.pkl").read_bytes()) for n in (0, 1)], args.replay)


if __name__ == "__main__":
    try:
        main()
    finally:
        shutil.rmtree(OUT, ignore_errors=True)
