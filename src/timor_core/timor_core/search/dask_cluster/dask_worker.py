"""What runs inside a Dask worker process for :class:`~.cluster.DaskEvaluator`: one filter chain per search, and
the best cost so far, broadcast to every worker while their chunks run.

A chunk carries the bound known when it was sent; chunks already running would otherwise go on evaluating
assemblies that a result found elsewhere since has made useless (in a cost-ordered search, everything after the
first valid assembly). The client therefore pushes each improvement to every worker (``client.run`` of
:func:`publish_bound`, executed on the worker's event loop while its task thread works), and a chunk reads it
before each assembly (:func:`shared_bound`).

Ties stay sound: the search's answer is the valid assembly of least ``(cost, seq)``. An assembly is skipped by a
broadcast cost only when the assembly that set it comes earlier in the sequence; a best found later in the
sequence skips only strictly costlier ones. So the result equals the in-process search's, whatever the timing.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from timor_core.search.evaluation.evaluate import Evaluation, Evaluator
from timor_core.search.evaluation.parallel import WorkerSpec

__all__ = [
    "worker_evaluator",
    "proofs_made",
    "run_chunk",
    "publish_bound",
    "shared_best",
    "shared_bound",
    "bound_from_best",
    "forget_bound",
]

_EVALUATORS: dict[WorkerSpec, Evaluator] = {}
_SHARED: dict[str, tuple[float, int]] = {}  # search token -> (best valid cost, its position)
_MAX_SEARCHES = 64


def worker_evaluator(spec: WorkerSpec) -> Evaluator:
    """One evaluator (filter chain) per search per worker process; DB and task come from the process caches."""
    ev = _EVALUATORS.get(spec)
    if ev is None:
        if len(_EVALUATORS) >= 4:
            _EVALUATORS.clear()
        ev = _EVALUATORS[spec] = spec.evaluator()
    return ev


def proofs_made() -> int:
    """The family proofs made in this process by the cached evaluators (:mod:`.family_proof`; for the benchmarks)."""
    return sum(getattr(ev.chain.ctx.family_proofs, "proofs", 0) for ev in _EVALUATORS.values())


def publish_bound(token: str, cost: float, seq: int) -> None:
    """Record a valid assembly's ``(cost, seq)`` for search ``token`` if it beats the one known here."""
    old = _SHARED.get(token)
    if old is None or (cost, seq) < old:
        if old is None and len(_SHARED) >= _MAX_SEARCHES:
            _SHARED.clear()  # finished searches are forgotten; a missing entry only means no shared skip
        _SHARED[token] = (float(cost), int(seq))


def forget_bound(token: str) -> None:
    """Drop search ``token``'s shared bound (the search has ended)."""
    _SHARED.pop(token, None)


def shared_best(token: str) -> tuple[float, int] | None:
    """The best ``(cost, seq)`` broadcast for search ``token`` (None: none yet)."""
    return _SHARED.get(token)


def shared_bound(token: str | None, seq: int, bound: float) -> float:
    """The bound for the assembly at ``seq``: ``bound``, lowered by the broadcast best of search ``token``.

    A best at an earlier position skips costs equal to it; one at a later position only higher costs (its
    ``nextafter``), so that among equal costs the earliest position still wins.
    """
    return bound_from_best(_SHARED.get(token) if token is not None else None, seq, bound)


def bound_from_best(best: tuple[float, int] | None, seq: int, bound: float) -> float:
    """``bound`` lowered by the best ``(cost, position)`` found (None: none): to its cost for an assembly after it,
    to just above it for one before it (ties go to the earlier position)."""
    if best is None:
        return bound
    cost, at = best
    return min(bound, cost if at < seq else math.nextafter(cost, math.inf))


def run_chunk(
    spec: WorkerSpec,
    items: Sequence[tuple[int, Sequence[str]]],
    bound: float,
    lower_bound: bool = True,
    token: str | None = None,
    deadline: float | None = None,
) -> list[Evaluation]:
    """Evaluate ``(seq, ids)`` pairs in order against ``bound``, the shared bound of ``token`` (if any) and, with
    ``lower_bound``, the valid ones found earlier in this chunk. ``deadline`` (a ``time.time()``; None: none): the
    chunk ends there, with the evaluations made so far (the positions left out are not done)."""
    evaluator = worker_evaluator(spec)
    out = []
    for seq, ids in items:
        if deadline is not None and time.time() >= deadline:
            break
        b = shared_bound(token, seq, bound)
        ev = evaluator(ids, b, seq)
        if lower_bound and ev.valid and ev.cost is not None and ev.cost < bound:
            bound = ev.cost
        out.append(ev)
    return out
