"""The local descent of the genetic search: from the best robot of a stalled trial, try every cheaper design one or
two structural moves away, cheapest first, and move to the cheapest valid one until none is left.

Why: the genetic operators change genes one at a time, but near the optimum a cheaper valid robot is often a
compound step away (two links merged into one *and* a neighbouring link lengthened). Every intermediate design is
invalid or heavier, so under the bound (everything no cheaper than the best is scored as reaching nothing) the GA
never sees a gradient towards it. An exact search of the two-move neighbourhood finds it; evaluating the cheaper
candidates in ascending cost order means every candidate above the first valid one is cut by the bound, so the
descent costs about as many IK runs as there are candidates lighter than its result.

A move on the modules between base and end effector: replace one module by another of its kind (joint by joint,
link by link), remove one, insert one anywhere, or merge two neighbouring links into one link.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

__all__ = ["Descent", "DescentStep", "design_moves", "largest_drop"]

Design = tuple[str, ...]


def design_moves(
    design: Sequence[str],
    joints: Sequence[str],
    links: Sequence[str],
    value: Mapping[str, float] | None = None,
    limit: float = math.inf,
) -> set[Design]:
    """Every design one move from ``design`` (``(base, ..., eef)``; base and end effector stay), unchecked; with
    ``value`` (an additive cost's value per module), only the moves that change the cost by less than ``limit``
    (the change computed from ``value``, before the design is built)."""
    w = value if value is not None else dict.fromkeys((*joints, *links, *design), 0.0)
    base, inner, eef = design[0], list(design[1:-1]), design[-1]
    link_set = set(links)
    out: set[tuple[str, ...]] = set()
    for i, m in enumerate(inner):
        for other in links if m in link_set else joints:
            if other != m and w[other] - w[m] < limit:
                out.add((*inner[:i], other, *inner[i + 1 :]))
        if -w[m] < limit:
            out.add((*inner[:i], *inner[i + 1 :]))
        if i + 1 < len(inner) and m in link_set and inner[i + 1] in link_set:
            for other in links:
                if w[other] - w[m] - w[inner[i + 1]] < limit:
                    out.add((*inner[:i], other, *inner[i + 2 :]))
    for i in range(len(inner) + 1):
        for other in (*joints, *links):
            if w[other] < limit:
                out.add((*inner[:i], other, *inner[i:]))
    return {(base, *x, eef) for x in out}


def largest_drop(joints: Sequence[str], links: Sequence[str], value: Callable[[str], float]) -> float:
    """An upper bound of how much one move (:func:`design_moves`) can lower an *additive* cost (a design's cost is
    the sum of ``value`` over its modules): the largest of a removal, a replacement, a merge and an insertion,
    widened by a relative 1e-9 for the float sums. It lets a neighbourhood skip designs too costly to lead below a
    bound in the moves left (:meth:`Descent.neighbourhood`)."""
    kinds = [[float(value(m)) for m in kind] for kind in (joints, links) if kind]
    every = [w for kind in kinds for w in kind]
    drops = [max(every), -min(every)]  # remove one; insert one
    drops += [max(kind) - min(kind) for kind in kinds]  # replace one by another of its kind
    if links:
        w = [float(value(m)) for m in links]
        drops.append(2 * max(w) - min(w))  # merge two neighbouring links into one
    top = max(0.0, *drops)
    return top + 1e-9 * (1.0 + top + sum(abs(v) for v in every))


@dataclass
class DescentStep:
    """One round of the descent: its centre, the move radius, how many cheaper candidates it passed to evaluate."""

    centre: Design
    radius: int
    evaluated: int
    improved_to: Design | None = None


@dataclass
class Descent:
    """A variable-neighbourhood descent over designs (radius 1, then 2; back to 1 after every improvement).

    Args:
        joints, links: the module IDs a slot may hold.
        admissible: True for designs the search may propose (encodable and valid for the GA).
        cost_of: the assembly-level cost of a design (cheap; no IK).
        evaluate: evaluates designs under a bound and returns, per design, its cost if it is valid (else None);
            it stays within the caller's budget (may return fewer results, which ends the descent).
        radius: the largest neighbourhood (1 or 2).
        batch: designs per evaluate call (the ascending order is kept across calls).
        values: for an additive cost, its value per joint and link module (a design costs a constant plus their
            sum): a neighbourhood with a bound then makes only the moves that can still lead below it in the moves
            left (the same designs below the bound, found with less work; issue 38: the three-move ring of a
            four-joint arm took ~7 s of CPU). None: every move of every admissible design is followed (any cost).
    """

    joints: Sequence[str]
    links: Sequence[str]
    admissible: Callable[[Design], bool]
    cost_of: Callable[[Design], float]
    evaluate: Callable[[list[Design], float], list[float | None]]
    radius: int = 2
    batch: int = 20
    steps: list[DescentStep] = field(default_factory=list)
    values: Mapping[str, float] | None = None
    out_of_budget: bool = False
    tried: set[Design] = field(default_factory=set)

    def __post_init__(self) -> None:
        v = self.values
        self.max_drop = None if v is None else largest_drop(self.joints, self.links, lambda m: v[m])

    def neighbourhood(self, centre: Design, radius: int, below: float = math.inf) -> set[Design]:
        """The admissible designs at most ``radius`` moves from ``centre`` (without it), by admissible steps; with
        ``below``, only those cheaper than ``below`` (the same ones as filtering the whole neighbourhood).

        With ``values`` (an additive cost) the ``k``-th move from a design ``d`` is made only if it leaves the cost
        below ``below + (radius - k) * max_drop`` (:func:`largest_drop`: no move lowers it by more): on a shortest
        admissible path to a design cheaper than ``below`` every step does, so no such design is lost, and the
        hopeless ones are never built, priced or checked."""
        prune = self.max_drop is not None and below < math.inf
        ring, seen = {centre}, {centre}
        for k in range(1, radius + 1):
            nxt: set[Design] = set()
            for d in ring:
                if prune:
                    c = self.cost_of(d)
                    limit = below + (radius - k) * self.max_drop - c  # type: ignore[operator]
                    near = design_moves(
                        d, self.joints, self.links, self.values, limit + 1e-9 * (1 + abs(below) + abs(c))
                    )
                else:
                    near = design_moves(d, self.joints, self.links)
                for e in near:
                    if e in seen or e in nxt:
                        continue
                    if k == radius and below < math.inf and self.cost_of(e) >= below:
                        continue  # the last ring: too costly, and nothing is built on it
                    if self.admissible(e):
                        nxt.add(e)
            seen |= nxt
            ring = nxt
        seen.discard(centre)
        return seen if below == math.inf else {d for d in seen if self.cost_of(d) < below}

    def run(self, start: Design, start_cost: float, limit: float = math.inf) -> tuple[Design, float]:
        """Descend from a valid design, looking only at designs cheaper than ``limit`` too (e.g. a better design
        known elsewhere); the cheapest valid design reached and its cost (``start`` and ``min(start_cost, limit)``
        if none)."""
        centre, best = tuple(start), min(float(start_cost), limit)
        radius = 1
        while radius <= self.radius and not self.out_of_budget:
            found = self._round(centre, best, radius)
            if found is None:
                radius += 1
                continue
            centre, best = found
            radius = 1
        return centre, best

    def escape(self, start: Design, start_cost: float, radius: int, cap: int) -> tuple[Design, float]:
        """From a local optimum of the ordinary descent: one round at the wider ``radius`` (first improvement: the
        designs nearest below ``start_cost`` first, so the first valid one ends it; at most about ``cap``
        evaluations), then the ordinary descent from what it found; ``start`` and ``start_cost`` if nothing valid
        is cheaper. The wide ring is large (radius 3 around a four-joint design: ~180,000 designs, ~23,000-47,000
        of them cheaper), so one capped round, never a loop."""
        found = self._round(tuple(start), float(start_cost), radius, first=True, cap=cap)
        return (tuple(start), float(start_cost)) if found is None else self.run(found[0], found[1])

    def _round(
        self, centre: Design, bound: float, radius: int, first: bool = False, cap: int | None = None
    ) -> tuple[Design, float] | None:
        """Evaluate the cheaper designs around ``centre`` in ascending cost; the cheapest valid one, if any.
        ``first``: in descending cost instead, ending with the batch that holds the first valid one (or once
        ``cap`` designs were evaluated)."""
        near = self.neighbourhood(centre, radius, bound) - self.tried  # each design is evaluated once per descent
        priced = sorted(((c, d) for d in near if (c := self.cost_of(d)) < bound), reverse=first)
        step = DescentStep(centre, radius, 0)
        self.steps.append(step)
        best: tuple[Design, float] | None = None
        limit = bound
        for k in range(0, len(priced), max(1, self.batch)):
            designs = [d for c, d in priced[k : k + self.batch] if c < limit]
            if not designs:
                break
            values = self.evaluate(designs, limit)
            step.evaluated += len(values)
            self.tried.update(designs[: len(values)])
            for d, v in zip(designs, values):
                if v is not None and v < limit:
                    best, limit = (d, v), v
            if len(values) < len(designs):
                self.out_of_budget = True
                break
            if first and (best is not None or (cap is not None and step.evaluated >= cap)):
                break
        if best is not None:
            step.improved_to = best[0]
        return best
