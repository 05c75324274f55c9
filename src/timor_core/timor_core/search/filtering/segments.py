"""A chain's segments (the steps ``A_k`` between its joint frames, as :mod:`.family_proof` reads them) and how
joints on one line with the joint before are merged into it: one implementation for the whole chain's cut
(:func:`merged`) and for the cut made from a kept head and one more segment (:mod:`.kept_heads`), so the two give
the same floats by construction."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["Segment", "carried", "merged", "merged_head"]

Segment = tuple[bytes, np.ndarray, tuple[float, ...], float | None]
"""One ``A_k``: its rotation key (equal keys: equal rotations to 5e-10 per entry), the 4x4 step, its translation
as floats, and its length along z if it turns about z only and moves along z only (to
:data:`~.family_proof.AXIAL` per entry: the next joint is on the previous one's line), else None."""


def merged(segments: Sequence[Segment]) -> list[Segment]:
    """The segments with every joint on one line with the joint before merged into it: ``Rz(a) A_k Rz(b) A_k+1``
    with ``A_k = Tz(l) Rz(phi)`` is ``Rz(a + phi + b) Tz(l) A_k+1``, and over whole turns ``a + phi + b`` takes
    every angle ``a`` does, so the chain with ``A_k`` left out and ``Tz(l)`` put before ``A_k+1`` reaches the very
    same poses (its translation's z grows by ``l``). ``A_0`` and the last step are never left out (no joint before /
    after them). Such a chain is in the family of the shorter chain (``J I_50 J L_100 J`` and ``J L_100 J``)."""
    if len(segments) < 2:
        return list(segments)
    head, carry = merged_head(segments[:-1])
    return [*head, carried(segments[-1], carry)]


def merged_head(segments: Sequence[Segment]) -> tuple[list[Segment], float]:
    """:func:`merged` of a chain's segments but the last (``A_0 .. A_n-1``), the same operations in
    the same order: the segments kept, and the length still carried to the last step (0.0: none)."""
    out: list[Segment] = [segments[0]]
    carry = 0.0
    for k in range(1, len(segments)):
        key, step, row, axial = segments[k]
        if axial is not None:
            carry += axial
            continue
        if carry:
            step = step.copy()
            step[2, 3] += carry
            row = (row[0], row[1], row[2] + carry)
            axial, carry = None, 0.0
        out.append((key, step, row, axial))
    return out, carry


def carried(segment: Segment, carry: float) -> Segment:
    """The last step of a merged chain: ``segment`` with the head's carried length put before it."""
    if not carry:
        return segment
    key, step, row, axial = segment
    step = step.copy()
    step[2, 3] += carry
    return key, step, (row[0], row[1], row[2] + carry), (None if axial is None else axial + carry)
