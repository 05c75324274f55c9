"""Completed positions of a long search as sorted, disjoint ``[start, stop)`` ranges (compact checkpoints)."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence

__all__ = ["merge_ranges", "runs", "DoneRanges"]


def merge_ranges(ranges: Iterable[Sequence[int]]) -> list[list[int]]:
    """Sorted, disjoint, non-adjacent ``[start, stop)`` ranges covering the given ones."""
    out: list[list[int]] = []
    for a, b in sorted((int(a), int(b)) for a, b in ranges if int(b) > int(a)):
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return out


def runs(seqs: Iterable[int]) -> list[list[int]]:
    """The runs of consecutive integers in ``seqs`` as ``[start, stop)`` ranges."""
    out: list[list[int]] = []
    for s in sorted(seqs):
        if out and s == out[-1][1]:
            out[-1][1] = s + 1
        else:
            out.append([s, s + 1])
    return out


class DoneRanges:
    """A set of integers (completed positions of a search) held as merged ranges."""

    def __init__(self, ranges: Iterable[Sequence[int]] = ()) -> None:
        self.ranges = merge_ranges(ranges)
        self._starts = [a for a, _ in self.ranges]

    def add(self, ranges: Iterable[Sequence[int]]) -> None:
        self.ranges = merge_ranges([*self.ranges, *ranges])
        self._starts = [a for a, _ in self.ranges]

    def __contains__(self, seq: int) -> bool:
        k = bisect_right(self._starts, seq) - 1
        return k >= 0 and seq < self.ranges[k][1]

    def count(self) -> int:
        return sum(b - a for a, b in self.ranges)
