"""A family's certificates for one goal (:mod:`.family_proof`): the proven chains' translations and margins, and
whether one of them covers a chain (``d < margin``, ``d`` the :func:`distance` of their translations).

Why a file of its own: the certificates and their look-up are one concept, the proofs that make them another
(``family_proof.py`` was at the files' line limit). The look-up screens with the batched look-up's compiled cover
step (:func:`.cover_kernel.cover`, one chain): on the unseen tasks almost every chain that reaches the family filter
is covered by none of its family's certificates (``obstacles_4``: 1,910 of 1,929 look-ups, ~22 certificates each),
and numpy's distances took ~6 us a look-up where the compiled call takes ~0.4 us. Where that call finds a certificate
covering the chain, or one within its slack of covering it, numpy's exact look-up decides as before: the same
answers, the same certificate remembered (``tests/test_family_certificates.py``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.errors import InputError
from timor_core.search.filtering.cover_kernel import PENDING

__all__ = ["Certificates", "Lesson", "distance"]

_ENDS = np.ones(1, dtype=np.int64)  # (the cover step's goals per cut: goal 0 alone)


def distance(a: Sequence[Sequence[float]], b: Sequence[Sequence[float]], stop: float = math.inf) -> float:
    """``sum_k |a_k - b_k|`` of two rows of 3-vectors in floats: for fewer than 8 rows the value of numpy's
    ``np.sqrt(((a - b) ** 2).sum(axis=1)).sum()`` to the last bit (the same operations in the same order: numpy
    adds fewer than 8 terms one after the other; tests/test_lazy_filters.py compares them). Stops once the sum
    reaches ``stop`` (the partial sums only grow) and returns that partial sum."""
    d, sqrt = 0.0, math.sqrt
    for (px, py, pz), (qx, qy, qz) in zip(a, b, strict=True):
        dx, dy, dz = px - qx, py - qy, pz - qz
        d += sqrt(dx * dx + dy * dy + dz * dz)
        if d >= stop:
            break
    return d


class Certificates:
    """A family's proven chains for one goal: translations (m, gaps, 3) and margins (m,), grown in place up to
    ``cap`` (more: the older half is forgotten)."""

    def __init__(self, gaps: int, cap: int) -> None:
        self.cap = cap
        self.points = np.empty((16, gaps, 3))
        self.margins = np.empty(16)
        self.size = 0
        self.last = 0  # the certificate that covered the last chain covered (the next one is often its neighbour)
        self.forgotten = 0  # times the older half was forgotten (a certificate's index names it while this holds)
        self.near: tuple[list[list[float]], float] | None = None  # that one's translations (floats) and margin

    def covers(self, cut: Any, kernel: Any = None) -> bool:
        """Whether a certificate covers ``cut`` (a ``family_proof.Cut`` of this family). ``kernel``:
        :func:`.cover_kernel.cover` as built, or None: where it finds every certificate more than its slack from
        covering, none does (its distances are numpy's up to rounding far below the slack); else numpy's decide."""
        if not self.size or (kernel is not None and self._clear(kernel, cut)):
            return False
        if self.last < self.size and self._covered_by_last(cut):
            return True
        t = cut.translations
        d = np.sqrt(((self.points[: self.size] - t) ** 2).sum(axis=2)).sum(axis=1)
        hits = d < self.margins[: self.size]
        if not hits.any():
            return False
        self.last, self.near = int(hits.argmax()), None
        return True

    def _clear(self, kernel: Any, cut: Any) -> bool:
        """The compiled cover step left ``cut`` pending: no certificate covers it or comes within the slack."""
        marks = np.full(1, PENDING, dtype=np.int64)
        cuts = np.ascontiguousarray(cut.translations, dtype=np.float64)[None]
        if cuts.shape[1:] != self.points.shape[1:]:  # (the kernel would read past the rows: numpy's route raises)
            raise InputError("a cut looked up among certificates of another number of gaps", value=cuts.shape[1])
        return bool(kernel(self.points, self.margins, 0, self.size, cuts, _ENDS, 0, marks))

    def _covered_by_last(self, cut: Any) -> bool:
        """The last certificate covers ``cut``, by :func:`distance` where it gives numpy's value (fewer than 8
        gaps): a look-up, most often the only one, without numpy's per-call overhead."""
        if len(cut.rotations) >= 8:
            last = self.points[self.last]
            return bool(np.sqrt(((last - cut.translations) ** 2).sum(axis=1)).sum() < self.margins[self.last])
        if self.near is None:
            self.near = (self.points[self.last].tolist(), float(self.margins[self.last]))
        rows, margin = self.near
        return distance(rows, cut.rows, margin) < margin

    def add(self, t: np.ndarray, margin: float) -> None:
        """A proven chain's translations ``t`` (gaps, 3) with its margin; at ``cap`` the older half is forgotten
        first (the newest certificates cover the chains the cost order brings next)."""
        if self.size == self.cap:  # forget the older half
            keep, self.near, self.forgotten = self.cap // 2, None, self.forgotten + 1
            self.points[:keep] = self.points[self.size - keep : self.size]
            self.margins[:keep] = self.margins[self.size - keep : self.size]
            self.size = keep
        if self.size == len(self.margins):
            self.points = np.concatenate([self.points, np.empty_like(self.points)])
            self.margins = np.concatenate([self.margins, np.empty_like(self.margins)])
        self.points[self.size], self.margins[self.size] = t, margin
        self.size += 1


@dataclass(frozen=True)
class Lesson:
    """What one ``family_proof.FamilyProofs`` learnt about a chain, for another's (each worker of a parallel search
    keeps its own): a certificate (``margin``) for ``goal`` and the family ``rotations``."""

    goal: int
    rotations: tuple[bytes, ...]
    translations: np.ndarray
    margin: float
