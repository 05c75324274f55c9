"""Arrays a compiled call writes its output into, kept per thread and reused across calls (:func:`thread_arrays`).

Why: the proofs' output arrays (the boxes a reach or sweep proof keeps, ~0.3 MB to a few MB each) made fresh on every
call were mapped and unmapped by the allocator each time, their pages faulted in anew (s54-proof: ~20 us a reach
proof), and in a shard forked for a search every new page is a minor fault and a cold cache line (s54-mem).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable

import numpy as np

__all__ = ["thread_arrays"]

_THREAD = threading.local()


def thread_arrays(
    key: Hashable, rows: int, columns: tuple[int, ...], dtypes: tuple[type, ...]
) -> tuple[np.ndarray, ...]:
    """Arrays of at least ``rows`` rows, one per entry of ``columns`` (0: one value a row (rows,), else (rows, c))
    and ``dtypes``, kept for this thread under ``key`` (the kernels run without the GIL) and grown to twice their
    rows or to ``rows`` when a call needs more. Their contents are the last call's: the caller copies out what it
    keeps before the next call of the same ``key`` in this thread."""
    held = _THREAD.__dict__.setdefault("arrays", {})
    found = held.get(key)
    if found is None or len(found[0]) < rows:
        rows = max(rows, 2 * len(found[0])) if found is not None else rows
        shapes = ((rows, c) if c else rows for c in columns)
        found = held[key] = tuple(np.empty(shape, dtype=d) for shape, d in zip(shapes, dtypes, strict=True))
    return found
