"""The batched certificate look-up's cover of a family's staged cuts (:mod:`.batch_decide`, issue 38 item 1): by the
compiled :func:`.cover_kernel.cover` where it is built (one call per goal for all the cuts), else by numpy's
:func:`.batch_distances.distances` (``BatchLookup._covered`` for new cuts, :func:`added` here for new certificates).
The marks are the same either way: a goal, :data:`UNSURE` or :data:`NONE` (``tests/test_batch_cover.py``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from timor_core.search.filtering.batch_distances import distances
from timor_core.search.filtering.cover_kernel import NONE, PENDING, UNSURE

__all__ = ["NONE", "PENDING", "UNSURE", "added", "covered", "mark"]


def covered(kernel: Any, certs: Sequence[Any], cuts: np.ndarray) -> list[int]:
    """Per cut (``cuts``: (n, gaps, 3)): the first goal whose certificates (``certs``: per goal, a family's) cover it
    by more than the slack, :data:`UNSURE` where one is within the slack of its margin first, else :data:`NONE`
    (``kernel``: :func:`.cover_kernel.cover` as built)."""
    marks = np.full(len(cuts), PENDING, dtype=np.int64)
    ends = np.full(len(cuts), len(certs), dtype=np.int64)
    for goal, c in enumerate(certs):
        if c.size and not kernel(c.points, c.margins, 0, c.size, cuts, ends, goal, marks):
            break
    return [NONE if m == PENDING else m for m in marks.tolist()]


def added(kernel: Any, certs: Sequence[Any], sizes: list[int], cuts: np.ndarray, marks: list[int]) -> list[int]:
    """The marks of a family's cuts (``cuts``; ``marks``: each :data:`NONE` or a goal) covered again after its
    certificates were only added to since (``sizes``: per goal, how many there were then). A cut went past a goal
    only where no certificate of it covered it and none was within the slack of its margin, so over all of the
    goal's certificates the least distance less margin is the new ones' wherever that is below the slack: the new
    certificates alone of the goals before its mark decide as all of them would. ``kernel`` None: numpy's."""
    ends = [len(sizes) if m == NONE else m for m in marks]  # (the goals that may come first)
    out = list(marks)
    if kernel is not None:
        fresh = np.full(len(marks), PENDING, dtype=np.int64)
        limits = np.array(ends, dtype=np.int64)
        for goal, c in enumerate(certs[: max(ends, default=0)]):
            if c.size > sizes[goal] and not kernel(c.points, c.margins, sizes[goal], c.size, cuts, limits, goal, fresh):
                break
        return [m if f == PENDING else f for m, f in zip(out, fresh.tolist(), strict=True)]
    left = list(range(len(marks)))
    for goal, c in enumerate(certs):
        left = [i for i in left if goal < ends[i]]
        if not left:
            break
        if c.size == sizes[goal]:
            continue
        clear, near, _ = distances(c.points[sizes[goal] : c.size], c.margins[sizes[goal] : c.size], cuts[left])
        left = mark(out, left, clear, near, goal)
    return out


def mark(marks: list[int], at: list[int], clear: np.ndarray, near: np.ndarray, goal: int) -> list[int]:
    """Mark the cuts ``at`` by numpy's :func:`.batch_distances.distances` for goal ``goal`` (``clear``, ``near``: per
    cut of ``at``): ``goal`` where covered, :data:`UNSURE` where within the slack; those neither, in order."""
    left = []
    for j, c, n in zip(at, clear.tolist(), near.tolist(), strict=True):
        if c:
            marks[j] = goal
        elif n:
            marks[j] = UNSURE
        else:
            left.append(j)
    return left
