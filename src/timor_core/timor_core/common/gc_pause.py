"""The cyclic garbage collector paused while big acyclic structures are built or written.

Building a model of 100,000 links, or its JSON, allocates millions of objects and makes no reference cycles; the
collector, triggered by the allocations, would scan all of them again and again (about half the CPU time of a
100,000-link import, tree and write). Plain reference counting still frees everything.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["paused_gc"]


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic collector for the ``with`` block, then restore its state (nested uses are fine)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
