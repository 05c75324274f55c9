"""The certificate look-up's distances for many cuts at once (:mod:`.batch_decide`, issue 38 item 1): a head's
distance to a certificate from its parent's (:func:`head_sum`), and numpy's distances of many cuts to many
certificates (:func:`distances`), with the additions in the order of :func:`~.family_proof.distance`."""

from __future__ import annotations

from typing import Any

import numpy as np

from timor_core.search.filtering.family_proof import distance

__all__ = ["SLACK", "distances", "head_sum", "sums"]

SLACK = 1e-9
"""m: a cut whose distance to a certificate is this close to the certificate's margin is decided one at a time."""
_CELLS = 1 << 14  # (cut, certificate) pairs per numpy step (bounded memory: ~3 MB for 8 gaps)


def head_sum(head: Any, serial: int, rest: list[list[float]], margin: float) -> float:
    """``distance(rest[:n], head.rows, margin)`` (``n`` the head's rows; ``rest``: a certificate's rows but its
    last, ``serial`` its number), kept on the head by the serial: the parent's (kept on it the same way, for all its
    children) plus the one row the head adds, the very additions :func:`~.family_proof.distance` makes in the same
    order (and where the parent's reaches ``margin``, that value: where ``distance`` stops)."""
    parent, rows = head.parent, head.rows
    if parent is None or not 0 <= len(rows) - len(parent.rows) <= 1:
        d = distance(rest[: len(rows)], rows, margin)
    else:
        d = parent.sums.get(serial)
        if d is None:
            d = head_sum(parent, serial, rest, margin)
        if len(rows) > len(parent.rows) and d < margin:
            d += distance(rest[len(rows) - 1 : len(rows)], rows[-1:])  # one row from 0.0: its root, bit for bit
    head.sums[serial] = d
    return d


def distances(points: np.ndarray, margins: np.ndarray, cuts: np.ndarray) -> tuple[np.ndarray, ...]:
    """Per cut (``cuts``: (n, gaps, 3)): a certificate (``points`` (m, gaps, 3), ``margins``) covers it by more than
    :data:`SLACK`; if none does, one's distance is within :data:`SLACK` of its margin; the certificate whose
    distance is furthest below its margin (the distance of ``_Certificates.covers``, numpy's operations)."""
    n = len(cuts)
    step = max(1, _CELLS // n)
    if len(margins) <= step:
        d = sums(points, cuts) - margins
        first = d.argmin(axis=1)
        least = d[np.arange(n), first]
    else:
        least, first = np.full(n, np.inf), np.zeros(n, dtype=np.intp)
        for a in range(0, len(margins), step):
            p, m = points[a : a + step], margins[a : a + step]
            d = sums(p, cuts) - m
            at = d.argmin(axis=1)
            low = d[np.arange(n), at]
            better = low < least
            least[better], first[better] = low[better], a + at[better]
    return least < -SLACK, np.abs(least) <= SLACK, first


def sums(points: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """``sum_k |cut_k - point_k|`` per cut and certificate (n, m): the additions in the order of
    :func:`~.family_proof.distance` (``(dx^2 + dy^2) + dz^2``, then the gaps one after the other), each over all
    pairs at once (numpy's reductions over short axes cost a call per pair)."""
    diff = points[None] - cuts[:, None]
    diff *= diff
    roots = np.sqrt(diff[..., 0] + diff[..., 1] + diff[..., 2])
    total = roots[..., 0].copy()
    for k in range(1, roots.shape[2]):
        total += roots[..., k]
    return total
