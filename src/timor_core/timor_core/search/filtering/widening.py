"""The widening of a reach proof (:func:`~.reach_proof.pose_proof`): once a goal is proven out of reach, the boxes
refused with little to spare are cut further for a larger margin, the distance within which a chain of the same
family is refused by a look-up (:mod:`.family_proof`).

Why level by level: the chains of a family lie at the distances their links' lengths make (robco_like: 0.05 m
apart), so a margin between two such distances covers no more chains than the lower one. The widening aims at the
least level above the margin it has (cutting only the boxes below it), then the next, and stops where a box
centre at the goal's orientation shows that no margin can exceed the next level (no sound bound refuses a box
holding that centre with more to spare than its miss). ``five_joints``' and ``obstacles_4``' searches cut so
~25-40 % fewer boxes for the same verdicts; before a family has two certificates that close, it widens as before.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.search.filtering.proof_kernel import ahead_kernel, halve_boxes, measure_boxes
from timor_core.search.filtering.proof_numpy import BoxGoal

__all__ = ["LEVEL_STEP", "SPLITS", "Boxes", "Distances", "Levels", "widened"]

SPLITS = 2  # a box left is cut into 2**2 (in a proof's levels and in its widening)
LEVEL_STEP = 1e-6  # m: distances between certificates are rounded up to this (Distances)


@dataclass(frozen=True)
class Boxes:
    """What a proof leaves for a proof of a nearby chain of its family (:func:`~.reach_proof.pose_proof`'s
    ``start``): the boxes of joint angles it refused with less than ``floor`` to spare in position (``centres``,
    ``half``, the ``weights`` to cut them by, their ``excess``, m); every other box of the whole turn was refused
    with at least ``floor`` to spare or by rotation alone. A chain whose TCP stays within ``d`` of this one's at
    every configuration (the same orientations) has each box refused with ``excess - d`` to spare, the rest with
    ``floor - d``."""

    centres: np.ndarray
    half: np.ndarray
    weights: np.ndarray
    excess: np.ndarray
    floor: float


@dataclass(frozen=True)
class Levels:
    """What a widening aims at: the margins worth having (m, ascending, the proof's ``extra`` included), and the
    least miss at the goal's orientation of a centre measured so far (one value, lowered as boxes are measured;
    None: no levels, the widening aims at its ``widen`` at once, as far as its budget goes)."""

    levels: Sequence[float]
    upper: list[float] | None
    extra: float

    def aim(self, margin: float, widen: float) -> float | None:
        """The excess the boxes are cut to next: the least level above ``margin`` (the proof's, ``extra`` not
        included), at most ``widen``; None where no level above ``margin`` is within reach of the centres measured
        (a margin can exceed none of their misses)."""
        if self.upper is None:
            return widen
        top = self.upper[0] + self.extra
        for level in self.levels:
            if level > margin + self.extra:
                return min(level - self.extra, widen) if level < top else None
        return None

    def measure(self, steps: Any, goal: BoxGoal, centres: np.ndarray, half: np.ndarray) -> tuple:
        """:func:`~.proof_kernel.measure_boxes`, lowering ``upper`` by the centres' misses at the goal's orientation
        where it is kept."""
        if self.upper is None:
            return measure_boxes(steps, centres, half, goal)
        values = np.empty(len(centres))
        out = measure_boxes(steps, centres, half, goal, values)
        if len(values):
            self.upper[0] = min(self.upper[0], float(values.min()))
        return out


def widened(steps: Any, goal: BoxGoal, tight: list, spend: tuple[float, int], floor: float, levels: Levels) -> Boxes:
    """The boxes refused with less than ``widen`` to spare (``tight``: centres, half-widths, excess, weights;
    ``spend``: ``widen`` and the budget) of the chain of ``steps``, cut further (at most ``budget`` boxes) for a
    larger margin (a part of a box is refused with at least what the box was: it lies inside it; and with what its
    own measure gives if that is more), level by level of ``levels`` (the boxes below the next level are cut until
    none is, then the next level's) while the next level is within reach: the parts still below ``widen`` (sorted
    by excess, least first) and the least excess of the others and of ``floor`` (every box refused outside
    ``tight``)."""
    widen, budget = spend
    if not tight:
        n = len(steps[0]) - 1
        return Boxes(np.empty((0, n)), np.empty((0, n)), np.empty((0, n)), np.empty(0), floor)
    centres, half, excess, weights = (np.concatenate([t[k] for t in tight]) for k in range(4))
    used = 0
    while len(centres):
        aim = levels.aim(min(floor, float(excess.min())), widen)
        cut = excess < (aim if aim is not None else -math.inf)
        if not cut.any() or used + int(np.count_nonzero(cut)) * 2**SPLITS > budget:
            break
        children, child_half = halve_boxes(centres[cut], half[cut], weights[cut], SPLITS)
        used += len(children)
        child_excess, _, child_weights = levels.measure(steps, goal, children, child_half)
        child_excess = np.maximum(child_excess, np.repeat(excess[cut], 2**SPLITS))
        done = child_excess >= widen
        if done.any():
            floor = min(floor, float(child_excess[done].min()))
        parts = zip((centres, half, excess, weights), (children, child_half, child_excess, child_weights))
        centres, half, excess, weights = (np.concatenate([a[~cut], b[~done]]) for a, b in parts)
    order = np.argsort(excess, kind="stable")
    return Boxes(centres[order], half[order], weights[order], excess[order], floor)


class Distances:
    """The distances below ``top`` (m) seen between certificates of a family (any goals), rounded up to
    :data:`LEVEL_STEP`: what :meth:`levels` makes a proof's widening aim at (``allowance``: the look-up's, m per
    gap and one more, :mod:`.family_proof`). What was proven decides them, not which proofs ran."""

    def __init__(self, top: float, allowance: float) -> None:
        self.top, self.step, self.allowance = top, LEVEL_STEP, allowance
        self.seen: set[float] = set()  # in steps
        self.made: dict[int, tuple[float, ...]] = {}  # :meth:`levels` per number of gaps, while ``seen`` holds

    def note(self, families: Iterable[Any], translations: np.ndarray) -> None:
        """The distances (sums over the gaps) from a chain about to become a certificate (``translations``) to the
        certificates of its family (each with ``size`` and ``points``): compiled where built
        (:func:`~.proof_kernel.distance_steps`, numpy's values for fewer than 8 gaps), else numpy's."""
        gaps, size = len(translations), len(self.seen)
        parts = [c for c in families if c.size and c.points.shape[1] == gaps]
        kernel = ahead_kernel("distance_steps") if parts and gaps < 8 else None
        if kernel is not None:  # (one call per goal's certificates: ~2 us against numpy's ~20 a chain)
            t = np.ascontiguousarray(translations, dtype=np.float64)
            for c in parts:
                out = np.empty(c.size)
                self.seen.update(out[: kernel(c.points, c.size, t, self.top, self.step, out)].tolist())
        elif parts:  # (the goals' certificates at once: each distance is a row's own sums, whatever rows are beside it)
            points = np.concatenate([c.points[: c.size] for c in parts])
            d = np.sqrt(((points - translations) ** 2).sum(axis=2)).sum(axis=1)
            self.seen.update(np.ceil(d[d < self.top] / self.step).tolist())  # (a set: no np.unique needed)
        if len(self.seen) > size:
            self.made.clear()

    def levels(self, gaps: int) -> tuple[float, ...]:
        """The margins worth widening a proof of a chain of ``gaps`` steps to: just above each distance seen (one
        step more for the rounding, and the look-up's allowance), and ``top``; none before any distance is seen."""
        if not self.seen:
            return ()
        made = self.made.get(gaps)
        if made is None:
            allowance = self.allowance * (gaps + 1)
            levels = sorted((k + 1.0) * self.step + allowance for k in self.seen)
            made = self.made[gaps] = (*(level for level in levels if level < self.top), self.top)
        return made
