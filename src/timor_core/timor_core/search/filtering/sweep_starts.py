"""The boxes of the sweep proofs (:mod:`.sweep_proof`) kept for the proofs of chains near theirs: each proof's
refused boxes (:class:`Leaves`), per goal, family (:mod:`.family_proof`) and the modules its body needed
(:class:`SweepStarts`), and the nearest for a chain (started from so, a proof measures only the boxes its chain may
reach, :func:`~.sweep_proof.sweep_certificate`'s ``start``)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.search.filtering.family_proof import ROTATION_SLACK, Cut, distance
from timor_core.search.filtering.sweep_fused import BODY

__all__ = ["MAX_LEAVES", "Leaves", "SweepStarts"]

MAX_LEAVES = 200_000  # boxes kept for started proofs in all (<= 32 MB for 4 joints); more: all are forgotten


@dataclass(frozen=True)
class Leaves:
    """The boxes of joint angles a sweep proof refused (``centres``, ``half``, the ``weights`` to cut them by), each
    with its ``excess`` (m): refused by position with this to spare, :data:`~.sweep_fused.BODY`: by the body, inf:
    by rotation alone."""

    centres: np.ndarray
    half: np.ndarray
    weights: np.ndarray
    excess: np.ndarray


class SweepStarts:
    """The :class:`Leaves` of sweep proofs, per goal and family (:mod:`.family_proof`) and the modules the body of
    their proof needed (a prefix of the IDs), for the proofs of chains with those modules (:func:`sweep_certificate`'s
    ``start``): the boxes refused by the body are refused for them too (the same balls at the same places), the
    others with ``excess - d`` to spare, ``d`` the chains' ``sum_k |t_k - t'_k|`` over their cuts' translations (as
    a family certificate measures it: their TCPs and last joint origins stay within it). For a chain of the family
    with other modules, the nearest's with the boxes refused by the body open (:func:`_reopened`)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[int, tuple[bytes, ...]], dict[tuple[str, ...], tuple[Any, Leaves]]] = {}
        self.lengths: dict[tuple[int, tuple[bytes, ...]], set[int]] = {}
        self.boxes = 0

    def add(self, k: int, cut: Cut, ids: tuple[str, ...], end: int | None, leaves: Leaves) -> None:
        """Keep a proof of goal ``k`` for the chain of ``ids`` (cut ``cut``) whose body needed the modules up to
        ``end`` (None: all of them; not kept)."""
        if end is None or leaves.centres.shape[1] != cut.gaps - 1:
            return
        if self.boxes + len(leaves.excess) > MAX_LEAVES:
            self.kept, self.lengths, self.boxes = {}, {}, 0
        key = (k, cut.rotations)
        kept = self.kept.setdefault(key, {})
        before = kept.get(ids[: end + 1])
        self.boxes += len(leaves.excess) - (0 if before is None else len(before[1].excess))
        kept[ids[: end + 1]] = (cut.rows, leaves)
        self.lengths.setdefault(key, set()).add(end + 1)

    def near(self, k: int, cut: Cut, ids: tuple[str, ...]) -> tuple[Leaves, float, int] | None:
        """The kept :class:`Leaves` of goal ``k`` nearest the chain of ``ids`` (cut ``cut``) among those it may start
        from, with ``d`` and the number of modules the two share (those the kept proof's body needed); else the
        nearest of the family's with the boxes refused by the body measured again (no modules shared); None if
        none."""
        key = (k, cut.rotations)
        kept = self.kept.get(key)
        if not kept:
            return None
        best, rows, slack = None, cut.rows, ROTATION_SLACK * (cut.gaps + 1)  # (+ 1: merged joints, as family_proof)
        for n in self.lengths[key]:
            found = kept.get(ids[:n])
            if found is not None:
                d = distance(found[0], rows) + slack
                if best is None or d < best[1]:
                    best = (found[1], d, n)
        if best is not None:
            return best
        nearest, least = None, math.inf
        for found in kept.values():  # (a sum stopped at the least so far is not less)
            d = distance(found[0], rows, least)
            if d < least:
                nearest, least = found[1], d
        return None if nearest is None else (_reopened(nearest), least + slack, 0)


def _reopened(leaves: Leaves) -> Leaves:
    """``leaves`` with the boxes refused by the body open (excess -inf: measured again), for a chain of the family
    with other modules; those refused by position keep their excess, those by rotation alone theirs (inf: the
    family's orientations are the same)."""
    body = (leaves.excess >= BODY) & np.isfinite(leaves.excess)
    return dataclasses.replace(leaves, excess=np.where(body, -math.inf, leaves.excess))
