#!/usr/bin/env python3
"""How many sweep proofs a certificate look-up could spare (issue 38 item 1: sweep certificates as the family
certificates of the reach proofs): one cost-ordered search (1 worker, the second of its process) records every
sweep proof whose boxes it keeps (``SweepStarts.add``: the chain's goal, family, cut, IDs, the modules its body
needed, its refused boxes), then counts, in the search's order, the chains an earlier proof would have covered.

    python benchmarks/sweep_cover_potential.py /tmp/unseen38/obstacles_4.json
    python benchmarks/sweep_cover_potential.py /tmp/unseen38/obstacles_4.json --widen 0.0501 0.1001 --rounds 3

The rule: a proof refusing every box by position with at least ``m`` to spare (``m`` its least finite excess; boxes
refused by rotation alone hold for the family) covers a chain of its goal and family within ``d < m`` (``d`` the
family certificates' distance with their rotation slack) whose modules are the proof's up to those its body needed
(where its body refused boxes: the same balls at the same places), or any chain of the family where its body refused
none. With ``--widen W``: the recorded proofs replayed in order, each chain spared where an earlier proof made with
``W`` more position slack covers it (``d < W``), else such a proof tried (started from the kept widened proofs,
:class:`SweepStarts`) and, where undecided, the plain one; against the plain replay (CPU and boxes, alternating).
"""

from __future__ import annotations

import argparse
import functools
import math
import time

import numpy as np

SLACK = 1e-7  # m per joint gap: family_proof.ROTATION_SLACK (a certificate's distance adds it per gap, + 1)


def record(task: str) -> list[dict]:
    """The kept sweep proofs of the task's second search (dicts)."""
    from timor_core import ModulesDB
    from timor_core.search import paper_exp2_space
    from timor_core.search.exhaustive_search.exhaustive import ExhaustiveSearch
    from timor_core.search.filtering import sweep_proof
    from timor_core.search.filtering.sweep_starts import SweepStarts
    from timor_core.task import Task

    db = ModulesDB.from_name("robco_like")
    space, problem = paper_exp2_space(db), Task.from_json_file(task)
    kept: list[dict] = []
    last: dict = {}
    real_cert, real_modules, real_add = sweep_proof.sweep_certificate, sweep_proof.body_modules, SweepStarts.add

    def cert(*args, **options):
        last["call"] = (args, options)
        return real_cert(*args, **options)

    def modules(mods, sweep, link):
        last["modules"] = [bool(m.joints) for m in mods]
        return real_modules(mods, sweep, link)

    def add(self, k, cut, ids, end, leaves):
        if end is not None and last.get("call") is not None:
            args, _ = last["call"]
            excess = leaves.excess
            by_position = excess[np.isfinite(excess) & (excess < 1e299)]
            kept.append({
                "k": k, "cut": cut, "ids": tuple(ids), "end": end, "args": args, "joints": last["modules"],
                "least": float(by_position.min()) if len(by_position) else math.inf,
                "body": int(((excess >= 1e299) & np.isfinite(excess)).sum()), "boxes": len(excess),
            })  # fmt: skip
        return real_add(self, k, cut, ids, end, leaves)

    def run() -> int:
        return ExhaustiveSearch(space, cost="mass", workers=1, progress=False, order="cost").optimize(problem, db)

    run()
    sweep_proof.sweep_certificate, sweep_proof.body_modules, SweepStarts.add = cert, modules, add  # type: ignore
    try:
        evaluations = run().evaluations
    finally:
        sweep_proof.sweep_certificate, sweep_proof.body_modules = real_cert, real_modules
        SweepStarts.add = real_add  # type: ignore[method-assign]
    print(f"{evaluations} evaluated, {len(kept)} sweep proofs kept")
    return kept


def distance(a: dict, b: dict) -> float:
    """The family certificates' distance of two recorded chains, with the rotation slack."""
    ta, tb = np.asarray(a["cut"].rows), np.asarray(b["cut"].rows)
    return float(np.sqrt(((ta - tb) ** 2).sum(axis=1)).sum()) + SLACK * (len(a["cut"].rotations) + 1)


def same_body(proof: dict, chain: dict) -> bool:
    """The chain has the modules of the proof's chain up to those its body needed."""
    return chain["ids"][: proof["end"] + 1] == proof["ids"][: proof["end"] + 1]


def potential(kept: list[dict]) -> None:
    """Print the least excesses, the nearest earlier proven chains and the chains the rule covers."""
    if not kept:
        return
    least = np.array([r["least"] for r in kept])
    print("least position excess (mm), quantiles 0/.1/.25/.5/.75/.9/1:",
          np.round(np.quantile(least, [0, 0.1, 0.25, 0.5, 0.75, 0.9, 1]) * 1e3, 4))  # fmt: skip
    covered, family, near_same, near_family = 0, 0, [], []
    for i, r in enumerate(kept):
        ours = [q for q in kept[:i] if q["k"] == r["k"] and q["cut"].rotations == r["cut"].rotations]
        d = [distance(q, r) for q in ours]
        same = [x for q, x in zip(ours, d, strict=True) if same_body(q, r)]
        covered += any(x < q["least"] for q, x in zip(ours, d, strict=True) if same_body(q, r))
        family += any(x < q["least"] and (q["body"] == 0 or same_body(q, r)) for q, x in zip(ours, d, strict=True))
        near_same.append(min(same, default=math.inf))
        near_family.append(min(d, default=math.inf))
    print(f"covered by an earlier proof: {covered} of {len(kept)} (same modules up to its body),",
          f"{family} (or any of the family where its body refused no box)")  # fmt: skip
    for name, near in (("same modules", near_same), ("family", near_family)):
        near_ = np.array(near)
        finite = near_[np.isfinite(near_)]
        print(f"nearest earlier proven chain ({name}), mm, quantiles 0/.1/.25/.5/.75/.9:",
              np.round(np.quantile(finite, [0, 0.1, 0.25, 0.5, 0.75, 0.9]) * 1e3, 2) if len(finite) else "-",
              f"none: {int((~np.isfinite(near_)).sum())}")  # fmt: skip


def _prove(r: dict, starts, widen: float):
    """A recorded chain's sweep proof with ``widen`` more position slack, started from ``starts`` where it can, its
    boxes kept there; the proof and whether its body needed modules it has (its certificate can be kept)."""
    from types import SimpleNamespace

    from timor_core.search.filtering import reach_proof, sweep_proof

    sweep_proof.box_goal = functools.partial(reach_proof.box_goal, extra=widen)
    try:
        sweep, obstacles, goal, tolerance, margin, budget = r["args"]
        prove = functools.partial(sweep_proof.sweep_certificate, sweep, obstacles, goal, tolerance, margin, budget)
        near = starts.near(r["k"], r["cut"], r["ids"])
        proof = None if near is None else prove(start=near[:2], leaves=True)
        shared = 0 if proof is None else near[2]
        proof = proof if proof is not None else prove(leaves=True)
        end = None
        if proof is not None:
            mods = [SimpleNamespace(joints=j) for j in r["joints"]]
            end = sweep_proof.body_modules(mods, sweep, proof.link)
            if end is not None:
                end = max(end, shared - 1)
                starts.add(r["k"], r["cut"], r["ids"], end, proof.leaves)
        return proof, end
    finally:
        sweep_proof.box_goal = reach_proof.box_goal


def replay(kept: list[dict], widen: float) -> tuple[float, list[int], int, int]:
    """CPU seconds, boxes of the proven widened and plain proofs, chains spared and widened proofs proven, in the
    search's order (``widen`` 0: the plain proofs as the search made them)."""
    from timor_core.search.filtering.sweep_starts import SweepStarts

    plain, wide, certificates = SweepStarts(), SweepStarts(), []
    boxes, spared, proven = [0, 0], 0, 0
    t = time.process_time()
    for r in kept:
        if widen and any(same_body(q, r) and q["k"] == r["k"] and q["cut"].rotations == r["cut"].rotations
                         and distance(q, r) < widen for q in certificates):  # fmt: skip
            spared += 1
            continue
        if widen:
            proof, end = _prove(r, wide, widen)
            if proof is not None:
                proven, boxes[0] = proven + 1, boxes[0] + proof.boxes
                if end is not None:
                    certificates.append({**r, "end": end})
                continue
        proof, _ = _prove(r, plain, 0.0)
        boxes[1] += 0 if proof is None else proof.boxes
    return time.process_time() - t, boxes, spared, proven


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("task", help="a task file")
    p.add_argument("--widen", type=float, nargs="*", default=[], help="position slacks (m) to replay with")
    p.add_argument("--rounds", type=int, default=1)
    args = p.parse_args()
    kept = record(args.task)
    potential(kept)
    for k in range(args.rounds if args.widen else 0):
        for widen in [0.0, *args.widen] if k % 2 == 0 else [*args.widen[::-1], 0.0]:
            cpu, boxes, spared, proven = replay(kept, widen)
            print(f"round {k} widen {widen * 1e3:6.1f} mm: CPU {cpu:.3f} s, boxes of proven proofs",
                  f"{sum(boxes)} (widened {boxes[0]}, plain {boxes[1]}),",
                  f"spared {spared} of {len(kept)}, widened proofs proven {proven}", flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
