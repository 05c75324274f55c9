"""The family filter's look-up without the filter chain: an assembly a family certificate covers, refused with the
chain's own verdict.

Why: on ``five_joints`` 40,103 assemblies come before the optimum in the cost order and 99.8 % of them are refused
by a certificate look-up (:mod:`.family_proof`); running the chain for each (a ``Candidate``, four filters, their
clocks and the funnel's bookkeeping) cost about as much again as the look-up. :class:`CertifiedRefusal` joins the
IDs, prices them, checks the limits and looks the family up as the chain's first four filters do, and answers only
where the chain's answer is that look-up's: otherwise (a proof to run, a bound or limit that refuses, a custom
filter) it answers None and the chain runs as before.

Most assemblies of the cost order share their modules up to the last joint (the head) with others that only end
otherwise (``five_joints``: 40,103 assemblies, 8,489 heads). A head's join and merged cut are kept, and so is how a
tail (the modules from the last joint on, entered by one connector) joins, so an assembly whose head and tail were
seen is decided from the two (:class:`_Kept`) without joining or cutting it again: the same cost, DOF and cut to the
last bit, read from the same segments (a kept head is checked again once the segments changed), and so the same
answer (property test in ``tests/test_certified.py``). Anything not kept takes the full way, which keeps it.
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
from timor_core.search.filtering.kept_heads import Kept
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
        self.kept = Kept(ctx, self.passes)

    def refusal(
        self, ids: Sequence[str], bound: float, price: float | None = None
    ) -> tuple[float, str, GoalIK, str, str] | None:
        """See the class; ``ids`` a tuple of module IDs; ``price``: the cost's ``evaluate_modules`` of these modules
        if the caller has it (else it is computed)."""
        found = self.decision(ids, bound, price)
        if found is None:
            return None
        goal, key, reason = self.answer(found[1])
        return found[0], goal, GoalIK(None, False, CERTIFIED, FamilyFilter.name), key, reason

    def decision(self, ids: Sequence[str], bound: float, price: float | None = None) -> tuple[float, int] | None:
        """:meth:`refusal`'s cost and the index of the goal refused (None: run the chain), without its records."""
        if not self.on:
            return None
        ctx = self.ctx
        ids = ids if ids.__class__ is tuple else tuple(ids)
        proofs = ctx.family_proofs or FamilyProofs.of(ctx)
        known = self.kept.decide(proofs, ids, bound, price)
        if known is not None:
            price, found = known
        else:
            join = ctx.join(ids)
            if join is None:
                return None
            price = ctx.cost.evaluate_modules(join.modules) if price is None else price
            if not self.passes(len(ids), join.dof, price, bound):
                return None
            made = self.kept.cut(proofs, ids, join, lambda: _assembly(ctx, ids))
            if made is None:
                return None
            cut, head = made
            found = proofs.certified(cut) if head is None else self.kept.certified(proofs, head, cut)
        return None if found is None else (float(price), found.goal)  # type: ignore[arg-type]

    def answer(self, goal: int) -> tuple[str, str, str]:
        """The goal's ID, the reason key and the reason of a refusal of goal ``goal`` (an index) by a certificate."""
        answer = self.answers.get(goal)
        if answer is None:
            g = self.ctx.goals[goal]
            answer = self.answers[goal] = (g.id, f"{g.id}: {UNREACHABLE}", f"goal {g.id}: {CERTIFIED}")
        return answer

    def passes(self, n: int, dof: int, price: float | None, bound: float) -> bool:
        """The bound and limits filters pass an assembly of ``n`` modules, ``dof`` and cost ``price``."""
        if price is None:
            return False
        cfg, cost = self.ctx.config, float(price)
        if not math.isfinite(cost) or (cfg.bound and cost >= bound):
            return False
        if cfg.max_modules is not None and n > cfg.max_modules:
            return False
        return not ((cfg.min_dof is not None and dof < cfg.min_dof) or (cfg.max_dof is not None and dof > cfg.max_dof))


def _assembly(ctx: Any, ids: Sequence[str]) -> Any:
    return ModuleAssembly.from_serial_modules(ctx.db, tuple(ids), ctx.placement)
