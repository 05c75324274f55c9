"""The batched look-up's answers kept per cut by value (:mod:`.batch_decide`, issue 38 item 1).

Why: in the cost order many assemblies share their cut to the last bit though not their modules (links of the same
lengths in another order, straight runs that only add to the length carried to the next joint): ``five_joints``'
40,170 staged cuts are 5,721 distinct ones (8,515 heads, 1,693 distinct head rows), ``obstacles_4``'s 14,570 are
4,625. A cut's answer is a function of its family (rotations) and rows and of the family's certificates alone, so
an answer found for one cut is the answer of every equal cut while the certificates it rests on are the same: the
answer goal ``g`` (its certificates cover the cut by more than the slack, none of an earlier goal covers it or comes
within the slack of its margin) holds while goal ``g``'s certificates were not halved (a covering one may be
forgotten) and no certificate was added to a goal before it (one may cover the cut). :meth:`Verdicts.changed` marks
the answers that no longer hold so (a number per family and goal, its epoch, kept with each answer).
"""

from __future__ import annotations

from typing import Any

from timor_core.errors import TimorError

__all__ = ["FAMILY", "MAX_VERDICTS", "ROWS", "VerdictKeyError", "Verdicts", "verdict_key"]

MAX_VERDICTS = 1 << 18
"""Answers and rows numbered: more, and the look-up numbers its families anew (all forgotten: bounded memory)."""
ROWS = 21
"""Bits of a cut's key for each rows number (:func:`verdict_key`): those numbered stay below :data:`MAX_VERDICTS`
and what one staging adds to them (a batch)."""
FAMILY = 2 * ROWS
"""Where a cut's key holds its family number (``key >> FAMILY``)."""


_NUMBERS = 1 << ROWS  # (rows and last rows numbered below it: bits of their own)
_FAMILY_NUMBERS = 1 << (63 - FAMILY)  # (families numbered below it: an int64 key holds them)


class VerdictKeyError(TimorError):
    """A number does not fit in its bits of a cut's key: two cuts' keys could be equal (one's answer taken for the
    other's). Not expected: the look-up numbers anew long before (:data:`MAX_VERDICTS`)."""


def verdict_key(family: Any, rows: Any, last: Any) -> Any:
    """A cut's key in :class:`Verdicts` (ints, or numpy arrays of them): its family number, the number of its head's
    rows and that of its last row in bits of their own (one int: hashed and compared faster than a tuple). Negative
    numbers (not read yet: the key is made again once they are) pass; a number past its bits is a
    :class:`VerdictKeyError`."""
    if isinstance(rows, int):
        if rows >= _NUMBERS or last >= _NUMBERS or family >= _FAMILY_NUMBERS:
            raise VerdictKeyError(f"a cut's numbers {family, rows, last} do not fit in its key")
    elif len(rows) and (max(rows.max(), last.max()) >= _NUMBERS or family.max() >= _FAMILY_NUMBERS):
        raise VerdictKeyError(f"a staging's numbers reach {family.max(), rows.max(), last.max()}: past its key")
    return (family << FAMILY) | (rows << ROWS) | last


class Verdicts:
    """Per cut, keyed by :func:`verdict_key` of its family number, the number of its head's rows and that of its last
    row (rows numbered by value: :meth:`shape`, :meth:`last`), the goal that answered it and the epoch of that family
    and goal then."""

    def __init__(self) -> None:
        self.rows: dict[tuple, int] = {}
        self.lasts: dict[tuple, int] = {}
        self.answers: dict[int, tuple[int, int, list[int]]] = {}  # (goal, its epoch then, the family's epochs)
        self.epochs: list[list[int]] = []  # per family number, per goal

    def clear(self) -> None:
        """Forget everything (the family numbers are new)."""
        self.rows.clear()
        self.lasts.clear()
        self.answers.clear()
        self.epochs.clear()

    def full(self) -> bool:
        """Whether the answers and numbered rows reached :data:`MAX_VERDICTS` (then :meth:`clear` them)."""
        return len(self.answers) + len(self.rows) + len(self.lasts) >= MAX_VERDICTS

    def shape(self, rows: tuple) -> int:
        """The number of a head's rows (equal rows, equal numbers)."""
        return self.rows.setdefault(rows, len(self.rows))

    def last(self, row: tuple) -> int:
        """The number of a last row (equal rows, equal numbers)."""
        return self.lasts.setdefault(row, len(self.lasts))

    def family(self, goals: int) -> None:
        """The next family number's epochs (``goals`` goals)."""
        self.epochs.append([0] * goals)

    def changed(self, family: int, first: int, halved: bool) -> None:
        """The family's certificates changed from goal ``first`` on: the answers of the goals after it no longer hold
        (an added certificate may cover their cuts first), and with ``halved`` (some forgotten) neither do goal
        ``first``'s (its covering certificate may be gone)."""
        epochs = self.epochs[family]
        for goal in range(first if halved else first + 1, len(epochs)):
            epochs[goal] += 1

    def keep(self, answers: list[int], keys: list[int], *covered: dict[int, list[int]]) -> None:
        """Keep the answers of the cuts just covered (``answers[j]`` of each ``j`` of ``covered``' lists, if a
        goal: not one of the negative marks) with their keys."""
        kept, epochs = self.answers, self.epochs
        for groups in covered:
            for at in groups.values():
                for j in at:
                    goal = answers[j]
                    if goal >= 0:  # (the goal, its epoch now and the family's epochs: read back without the key)
                        key = keys[j]
                        row = epochs[key >> FAMILY]
                        kept[key] = (goal, row[goal], row)

    def get(self, key: int) -> int | None:
        """The answer kept for the cut ``key`` if it still holds, else None."""
        found = self.answers.get(key)
        return found[0] if found is not None and found[2][found[0]] == found[1] else None
