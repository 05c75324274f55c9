"""The family filter's look-up without the filter chain: an assembly a family certificate covers, refused with the
chain's own verdict.

Why: on ``five_joints`` 40,103 assemblies come before the optimum in the cost order and 99.8 % of them are refused
by a certificate look-up (:mod:`.family_proof`); running the chain for each (a ``Candidate``, four filters, their
clocks and the funnel's bookkeeping) cost about as much again as the look-up. :class:`CertifiedRefusal` joins the
IDs, prices them, checks the limits and looks the family up as the chain's first four filters do, and answers only
where the chain's answer is that look-up's: otherwise (a proof to run, a bound or limit that refuses, a custom
filter) it answers None and the chain runs as before.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from timor_core.model.assembly import ModuleAssembly
from timor_core.search.filtering.family_proof import FamilyProofs
from timor_core.search.filtering.filter_chain import FilterChain
from timor_core.search.filtering.filter_state import GoalIK
from timor_core.search.filtering.filters import AssemblyFilter, BoundFilter, FamilyFilter, LimitsFilter
from timor_core.search.filtering.quick_reach import UNREACHABLE

__all__ = ["CERTIFIED", "CertifiedRefusal"]

CERTIFIED = (
    "no configuration reaches it within its tolerance (proven for a chain of its family within the proof's margin)"
)
"""The reason the family filter gives for a goal a certificate covers."""
_CHAIN = (AssemblyFilter, BoundFilter, LimitsFilter, FamilyFilter)


class CertifiedRefusal:
    """``refusal(ids, bound)``: ``(cost, goal ID, GoalIK, reason key, reason)`` of an assembly the family filter of
    ``chain`` refuses by a certificate, as the chain would give them (None: run the chain). Only for a chain whose
    first four filters are the default ``assembly``, ``bound``, ``limits`` and ``family`` with the family filter on
    and no reach limit."""

    def __init__(self, chain: FilterChain) -> None:
        self.ctx = ctx = chain.ctx
        cfg = ctx.config
        first = tuple(type(f) for f in chain.filters[:4])
        self.on = first == _CHAIN and cfg.family_filter and bool(ctx.goals) and cfg.max_reach is None
        self.answers: dict[int, tuple[str, str, str]] = {}  # per goal: its ID, reason key and reason

    def refusal(self, ids: Sequence[str], bound: float) -> tuple[float, str, GoalIK, str, str] | None:
        """See the class; ``ids`` a tuple of module IDs."""
        if not self.on:
            return None
        ctx, ids = self.ctx, tuple(ids)
        join = ctx.join(ids)
        if join is None:
            return None
        cfg = ctx.config
        price = ctx.cost.evaluate_modules(join.modules)
        if price is None:
            return None
        cost = float(price)
        if not math.isfinite(cost) or (cfg.bound and cost >= bound):
            return None
        n, dof = len(ids), join.dof
        if cfg.max_modules is not None and n > cfg.max_modules:
            return None
        if (cfg.min_dof is not None and dof < cfg.min_dof) or (cfg.max_dof is not None and dof > cfg.max_dof):
            return None
        proofs = FamilyProofs.of(ctx)
        cut = proofs.cut_serial(ids, join, lambda: _assembly(ctx, ids))
        found = None if cut is None else proofs.certified(cut)
        if found is None:
            return None
        answer = self.answers.get(found.goal)
        if answer is None:
            g = ctx.goals[found.goal]
            answer = self.answers[found.goal] = (g.id, f"{g.id}: {UNREACHABLE}", f"goal {g.id}: {CERTIFIED}")
        return cost, answer[0], GoalIK(None, False, CERTIFIED, FamilyFilter.name), answer[1], answer[2]


def _assembly(ctx: Any, ids: Sequence[str]) -> Any:
    return ModuleAssembly.from_serial_modules(ctx.db, tuple(ids), ctx.placement)
