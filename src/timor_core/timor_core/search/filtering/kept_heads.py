"""The certificate look-up's kept heads and tails (:mod:`.certified`): an assembly decided from the join and cut of
its modules up to the last joint (its head, seen before) and of the rest (its tail, seen before behind another head).

Why: in the cost order most assemblies share their head with a few others that end otherwise (``five_joints``:
40,103 assemblies, 8,489 heads), and joining and cutting each one in full was most of its look-up. A serial
assembly's join is its head's followed by its tail's (each neighbouring pair joins in one way, given the connector
the first is entered by); its cut is its head's segments merged (:func:`~.family_proof.merged`) followed by the last
segment, the one from the last joint to the TCP, with the head's carried length added. Both are read here from the
very segments :meth:`~.family_proof.FamilyProofs.cut_serial` reads (a head is checked again whenever segments were
added, which is the only time a kept one can be replaced), with the same arithmetic in the same order: the same
cut to the last bit, and so the same answer (``tests/test_certified.py`` compares them).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, cast

from timor_core.limits import limits
from timor_core.search.filtering.family_proof import Cut, FamilyProofs, Refusal, distance
from timor_core.search.filtering.segments import Segment, carried, merged_head

__all__ = ["Head", "Kept", "MAX_KEPT", "Tail"]

MAX_KEPT = 65_536
"""Heads (and tails) kept: more, and all are forgotten and kept anew."""


@dataclass(slots=True, eq=False)
class Head:
    """The modules up to an assembly's last joint: their modules, the connector the last of them is entered by,
    their DOF, the keys and segments of their steps as read, the merged steps (rotation keys, 4x4 steps,
    translations), the length the last step takes on, and how many segments there were when they were read;
    ``families``: what :meth:`Kept.certified` found for assemblies with this head (hints, each stamped with what it
    holds for)."""

    modules: tuple[Any, ...]
    entry: str
    dof: int
    keys: tuple[tuple, ...]
    segments: tuple[Segment, ...]
    rotations: tuple[bytes, ...]
    parts: tuple[Any, ...]
    rows: tuple[tuple[float, ...], ...]
    carry: float
    seen: int
    families: dict[bytes, list] = field(default_factory=dict)  # per last rotation: goal 0's certificates, a hint


Tail = tuple[tuple[Any, ...], int]
"""The modules after an assembly's last joint and their DOF."""


class Kept:
    """The heads and tails seen (module docstring); :meth:`decide` answers from them, :meth:`cut` cuts an assembly
    not decided so and keeps its head and tail. ``passes(n, dof, price, bound)``: the bound and limits filters' test
    (:class:`.CertifiedRefusal`)."""

    def __init__(self, ctx: Any, passes: Any) -> None:
        self.ctx, self.passes = ctx, passes
        self.heads: dict[tuple[str, ...], Head] = {}
        self.tails: dict[tuple, Tail] = {}  # per last segment's key: the modules after the joint, their DOF
        self.lasts: dict[tuple, tuple[Segment, Segment]] = {}  # per (last segment's key, carry): it, carried
        self.proofs: FamilyProofs | None = None  # the proofs of the heads kept

    def decide(
        self, proofs: FamilyProofs, ids: tuple[str, ...], bound: float, price: float | None
    ) -> tuple[float | None, Refusal | None] | None:
        """``(price, refusal)`` of an assembly whose head and tail are kept (refusal None: the look-up refuses
        nothing, a limit or the bound passes it on or the join fails), else None (not kept: take the full way)."""
        self.use(proofs)
        known = self.known(proofs, ids)
        if known is None:
            return None
        head, key, last = known
        tail = self.tails[key]
        n, dof = len(ids), head.dof + tail[1]
        bounds = limits()
        if not (n <= bounds.max_modules and dof <= bounds.max_dof):  # the join's checks
            return price, None
        if price is None:
            price = self.ctx.cost.evaluate_modules(head.modules + tail[0])
        if not self.passes(n, dof, price, bound):
            return price, None
        found = self.lasts.get((key, head.carry))  # (:meth:`end`, inline)
        end = found[1] if found is not None and found[0] is last else self.end(head, key, last)
        entry = head.families.get(end[0])
        if entry is not None and entry[1] is not None:  # the hint (:meth:`certified`), without making the cut
            forgotten, rows, margin = entry[1]
            if forgotten == entry[0].forgotten and distance(rows, (*head.rows, end[2]), margin) < margin:
                return price, proofs.covered[0]
        return price, self.certified(proofs, head, _cut(head, end))

    def use(self, proofs: FamilyProofs) -> None:
        """Answer for ``proofs`` from now on: the heads kept for others are forgotten (heads keep certificates of the
        proofs they were decided by)."""
        if proofs is not self.proofs:
            self.heads.clear()
            self.proofs = proofs

    def certified(self, proofs: FamilyProofs, head: Head, cut: Cut) -> Refusal | None:
        """``proofs.certified(cut)`` of a cut from a kept head; keeps on the head, per family, the certificate of
        goal 0 that covered it, which :meth:`decide` tries first for the head's next member of the family (they
        differ in the last step alone: one certificate often covers them all). While the family's certificates were
        not halved (``forgotten``), its index names the same certificate, and a certificate of goal 0 covering a cut
        makes goal 0 the first goal covered: the answer of ``proofs.certified``. Only for fewer than 8 steps, where
        :func:`~.family_proof.distance` gives numpy's value to the last bit."""
        found = proofs.certified(cut)
        if found is None or found.goal != 0 or len(cut.rows) >= 8:
            return found
        rotation = cut.rotations[-1]
        entry = head.families.get(rotation)
        first = entry[0] if entry is not None else proofs.family(cut)[0]
        near, at = first.near, first.last  # (the one that covered it: ``covers`` keeps it, and its floats if read)
        rows, margin = near if near is not None else (first.points[at].tolist(), float(first.margins[at]))
        head.families[rotation] = [first, (first.forgotten, rows, margin)]
        return found

    def known(self, proofs: FamilyProofs, ids: tuple[str, ...]) -> tuple[Head, tuple, Segment] | None:
        """The kept head of ``ids``, its last segment's key and that segment if its head and tail are kept and the
        head's segments are still the ones known (else None)."""
        segments = proofs.segments
        kinds, steps = segments.kinds, segments.steps
        at = len(ids) - 1
        while True:  # the last joint
            if at < 0:
                return None
            kind = kinds.get(ids[at])
            if kind:
                break
            if kind is None:
                return None
            at -= 1
        head = self.heads.get(ids[: at + 1])  # (:meth:`_kept`, inline: this runs for every assembly)
        if head is None or (head.seen != len(steps) and not self._still(ids[: at + 1], head, steps)):
            return None
        key = (ids[at:], head.entry)
        last = steps.get(key)
        return None if last is None or key not in self.tails else (head, key, last)

    def joined(self, head: Head, key: tuple, last: Segment) -> Cut:
        """The cut of a kept head and its last segment (what ``Cut.of_segments`` of all its segments gives)."""
        return _cut(head, self.end(head, key, last))

    def end(self, head: Head, key: tuple, last: Segment) -> Segment:
        """The last segment with the head's carried length (:func:`~.segments.carried`), made once."""
        found = self.lasts.get((key, head.carry))
        if found is None or found[0] is not last:
            found = self.lasts[key, head.carry] = (last, carried(last, head.carry))
        return found[1]

    def _still(self, ids: tuple[str, ...], head: Head, steps: dict) -> bool:
        """Whether the head of ``ids`` still has the segments it was made of (segments were added since it was read;
        if not, it is forgotten)."""
        if any(steps.get(k) is not s for k, s in zip(head.keys, head.segments, strict=True)):
            del self.heads[ids]
            return False
        head.seen = len(steps)
        return True

    def cut(
        self, proofs: FamilyProofs, ids: tuple[str, ...], join: Any, assembly: Any
    ) -> tuple[Cut, Head | None] | None:
        """``proofs.cut_serial(ids, join, assembly)`` (the same cut), with the assembly's head and tail kept: from
        the segments known if every one is (they are then read once), else by ``cut_serial``; and the head kept
        (None: none), for :meth:`certified`."""
        found = self.keep(proofs, ids, join)
        if found is not None:
            return self.joined(*found), found[0]
        cut = proofs.cut_serial(ids, join, assembly)
        if cut is None:
            return None
        found = self.keep(proofs, ids, join)
        return cut, (None if found is None else found[0])

    def keep(self, proofs: FamilyProofs, ids: tuple[str, ...], join: Any) -> tuple[Head, tuple, Segment] | None:
        """Keep the head and tail of an assembly (``join``: its ``SerialJoin``) if every segment of it is known:
        the head, its last segment's key and that segment (None: a module or segment not known)."""
        segments = proofs.segments
        kinds, steps = segments.kinds, segments.steps
        joints = []
        for i, m in enumerate(ids):
            kind = kinds.get(m)
            if kind is None:
                return None
            if kind:
                joints.append(i)
        if not joints:
            return None
        at, entries = joints[-1], join.entries
        key = (ids[at:], entries[at])
        last = steps.get(key)
        if last is None:
            return None
        head = self._kept(ids[: at + 1], steps)
        if head is None:
            head = self._head(ids, joints, join, steps)
            if head is None:
                return None
            self._store(ids[: at + 1], head)
        if key not in self.tails:
            self.tails[key] = (tuple(join.modules[at + 1 :]), join.dof - head.dof)
        return head, key, last

    def _store(self, ids: tuple[str, ...], head: Head) -> None:
        """Keep ``head`` for ``ids`` (past :data:`MAX_KEPT` heads, tails or last segments all are forgotten first)."""
        if max(len(self.heads), len(self.tails), len(self.lasts)) >= MAX_KEPT:
            self.heads.clear()
            self.tails.clear()
            self.lasts.clear()
        self.heads[ids] = head

    def _kept(self, ids: tuple[str, ...], steps: dict) -> Head | None:
        """The head kept for ``ids`` (modules up to a joint) if its segments are still the ones known."""
        head = self.heads.get(ids)
        return None if head is None or (head.seen != len(steps) and not self._still(ids, head, steps)) else head

    def _head(self, ids: tuple[str, ...], joints: list[int], join: Any, steps: dict) -> Head | None:
        """The head of ``ids`` (joints at ``joints``) from the segments known: the kept head up to the joint before
        followed by one segment where that is kept, else every segment (None: a segment not known)."""
        at, entries, units = joints[-1], join.entries, self.ctx.join.modules  # units: per ID its module, DOF, base
        parent = None if len(joints) < 2 else self._kept(ids[: joints[-2] + 1], steps)
        if parent is None:
            keys = tuple((ids[a : b + 1], entries[a]) for a, b in zip([0, *joints[:-1]], joints, strict=True))
            got = tuple(steps.get(k) for k in keys)
            if None in got:
                return None
            found = cast(tuple[Segment, ...], got)
            kept, carry = merged_head(found)
            rotations, parts, rows, _ = zip(*kept, strict=True)
            return Head(tuple(join.modules[: at + 1]), entries[at], sum([units[m][1] for m in ids[: at + 1]]), keys,
                        found, rotations, parts, rows, carry, len(steps))  # fmt: skip
        dof = parent.dof + sum([units[m][1] for m in ids[joints[-2] + 1 : at + 1]])
        return self._child(parent, ids, joints[-2], at, (tuple(join.modules[: at + 1]), entries[at], dof), steps)

    def _child(self, parent: Head, ids: tuple[str, ...], prev: int, at: int, own: tuple, steps: dict) -> Head | None:
        """The head of ``ids`` up to its joint at ``at`` from its parent's (up to the joint at ``prev``) followed by
        one segment (:func:`~.segments.merged_head`'s step for one more; None: that segment not known); ``own``:
        the head's modules, entry connector and DOF."""
        key = (ids[prev : at + 1], parent.entry)
        seg = steps.get(key)
        if seg is None:
            return None
        carry, (rotation, step, row, axial) = parent.carry, seg  # merged_head's step for one more segment
        rotations, parts, rows = parent.rotations, parent.parts, parent.rows
        if axial is not None:
            carry += axial
        else:
            if carry:
                step = step.copy()
                step[2, 3] += carry
                row, carry = (row[0], row[1], row[2] + carry), 0.0
            rotations, parts, rows = (*rotations, rotation), (*parts, step), (*rows, row)
        modules, entry, dof = own
        return Head(modules, entry, dof, (*parent.keys, key), (*parent.segments, seg), rotations, parts, rows, carry,
                    len(steps))  # fmt: skip


def _cut(head: Head, end: Segment) -> Cut:
    """The cut of a kept head followed by its last segment ``end`` (carried)."""
    cut = Cut.__new__(Cut)
    cut.rotations = (*head.rotations, end[0])
    cut.__dict__["parts"], cut.__dict__["rows"] = (*head.parts, end[1]), (*head.rows, end[2])
    return cut
