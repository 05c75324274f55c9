"""Many assemblies of the cost-ordered stream decided by the certificate look-up at once (issue 38, item 1).

Why: on ``five_joints`` 40,103 assemblies come before the optimum in the cost order and 99 % of them are refused
by a certificate look-up (:mod:`.certified`); one at a time, through the evaluator, the funnel and the stream's
loops, that cost several times the walk's own step. Certificates change only when a proof runs, and a proof runs
only at an assembly the look-up does not decide: so every assembly of a batch before the first one it does not
decide is decided against the same certificates as one at a time. :meth:`BatchLookup.refusals` takes a batch in
order: each assembly's cut (its head's rows and rotations, its last row) read from the segments known by the
automata of :mod:`.cut_states` in numpy steps, the limits and the bound as
:meth:`~.certified.CertifiedRefusal.decision` checks them, and then, per family (the rotations; a batch holds a
few), the distances of all its cuts to the family's certificates of each goal in one step (the compiled
:mod:`.cover_kernel` where it is built, else numpy's: :mod:`.batch_cover`). An assembly covered, or not, by more
than :data:`SLACK` is decided so; one within it of a margin (where another order of the same additions could
change the last bit) takes the one-at-a-time look-up. The answer is the first goal (task order) a certificate
covers: the one-at-a-time answer (property test in ``tests/test_batch_decide.py``).

It stops before the first assembly it cannot decide without the filter chain (a proof to run, a bound or limit
that refuses it) or without computing a segment not known yet (that stores the segment, and the value stored may
differ in the last bit from the one an earlier assembly's chain would store): the caller takes that one one at a
time and goes on.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from collections.abc import Sequence
from operator import eq, is_not, itemgetter, lt
from typing import Any

import numpy as np

from timor_core.limits import limits
from timor_core.search.filtering import cover_kernel
from timor_core.search.filtering.batch_cover import NONE, PENDING, UNSURE, added, covered, mark
from timor_core.search.filtering.batch_distances import SLACK, distances, head_sum
from timor_core.search.filtering.certified import CertifiedRefusal
from timor_core.search.filtering.cut_states import CutStates
from timor_core.search.filtering.cut_verdicts import Verdicts, verdict_key
from timor_core.search.filtering.family_proof import FamilyProofs

__all__ = ["BATCH", "SLACK", "BatchLookup"]

BATCH = 256
"""Assemblies a consumer takes from the stream per batch."""
_RECENT = 4  # certificates that covered a family's last cuts, tried first
_FAMILIES = 512  # families numbered (more: all are forgotten, with the cuts staged)
_FEW = 32  # (new assemblies :meth:`BatchLookup._ends` leaves unread: numpy's steps cost more than their walks)
_UNREAD = (1, 0, 0, 0, 0, 1, 0, 0)  # (less 1 in ``ends_of``'s columns of those: family and DOF -1, not read)
_SERIALS = itertools.count()  # (of the certificates tried first: ``ValueHead.sums`` names them so)
_NUMBERINGS = itertools.count()  # (one per numbering of families, over all look-ups: ``CutStates.stamp``)


class BatchLookup:
    """:meth:`refusals`: the certificate look-up's answers for a run of assemblies (module docstring).
    ``funnel``: the evaluator's, where :meth:`refused` counts them; ``early_bound``: the evaluator cuts by the bound
    before the look-up (then a finite bound is left to it)."""

    def __init__(self, certified: CertifiedRefusal, funnel: Any = None, early_bound: bool = False) -> None:
        self.certified, self.funnel, self.early_bound = certified, funnel, early_bound
        self.on = certified.on
        self.counts = [0, 0]  # assemblies decided by the batched distances, by the one-at-a-time look-up
        # staged by the last call, from the assembly after the last one answered: IDs, family, cut rows, answer
        self._ids: list[Sequence[str]] = []
        self._families: list[int] = []  # (the family's number in ``_numbers``)
        # (their heads and last rows in ``_states``: the cut rows are the head's and the last)
        self._heads: list[int] = []
        self._lasts: list[int] = []
        self._state: list[int] = []
        self._keys: list[int] = []  # (their cuts' keys in ``_verdicts``)
        self._verdicts = Verdicts()  # answers per cut by value, for the cuts equal to one answered before
        self._key: tuple | None = None  # (proofs, bound) they were staged with
        self._count = 0  # (segments known when the staging stopped)
        self._ahead: tuple | None = None  # (``CutStates.ends_of`` of the assemblies after the stop, their IDs)
        self._broke = False  # the staging stopped at a cut it cannot stage
        self._fresh = 0  # the cuts staged from here on are not covered yet
        self._proofs: FamilyProofs | None = None  # the proofs whose families are numbered
        self._numbers: dict[tuple, int] = {}  # per family (head rotations, last rotation) seen: its number
        self._certs: list[list[Any]] = []  # per family number: its certificates per goal (``family_of``)
        self._signs: list[tuple] = []  # per family number: its certificates' (size, forgotten) per goal, as covered
        # per family number and goal: ``forgotten`` of its certificates, then (translations, margin) of those that
        # covered its last cuts, newest first
        self._recent: dict[tuple[int, int], list[Any]] = {}
        self._numbering = next(_NUMBERINGS)  # this numbering of families (:meth:`_extend`'s stamp)
        # per certificate tried first (family number, goal, index, ``forgotten``): its serial (``ValueHead.sums`` key)
        self._serials: dict[tuple, int] = {}
        self._states = CutStates()  # (:meth:`_extend`'s automaton)

    def refused(self, items: Sequence[tuple[float, Sequence[str]]], bound: float) -> tuple[int, dict[str, int], float]:
        """How many of the first ``items`` (``(price, ids)``) the look-up refuses (:meth:`refusals`), their reason
        keys counted and the seconds spent, counted in ``funnel`` as ``Evaluator.refused`` counts them one by one
        (the seconds of the batch); none where the evaluator would cut by a finite bound first."""
        if not self.on or (self.early_bound and bound != math.inf):
            return 0, {}, 0.0
        t0 = time.perf_counter()
        goals = self.refusals(items, bound)
        answer = self.certified.answer
        reasons = {answer(g)[1]: n for g, n in Counter(goals).items()}
        spent = time.perf_counter() - t0
        if goals and self.funnel is not None:
            self.funnel.record_failures("family", reasons, spent)
        return len(goals), reasons, spent

    def refusals(self, items: Sequence[tuple[float, Sequence[str]]], bound: float) -> list[int]:
        """The goal (index) :meth:`~.certified.CertifiedRefusal.decision` refuses for each of the first ``items``
        (``(price, ids)``, ``price`` the cost's value of the modules) up to the first it does not refuse or that
        needs a segment not known yet (module docstring): fewer than ``items`` if it stopped there. The caller takes
        that one one at a time and then asks for the rest (what was staged for them is kept while the proofs and
        the bound are the same; a family's answers while its certificates are)."""
        if not self.on or not items:
            return []
        out: list[int] = []
        changes = self._changes()  # (before the staging: it reads the answers kept per cut, ``_verdicts``)
        self._stage(items, bound, len(self._ids) < len(items) // 2)  # (else those staged before suffice for now)
        while True:
            self._cover(*changes)
            changes = ({}, {})
            if self._resolve(items, bound, out) or self._broke or len(out) == len(items):
                break
            self._stage(items, bound, True)  # every cut staged was refused: stage the rest
        drop = len(out) + 1  # (the next one: the caller's, one at a time)
        for kept in (self._ids, self._families, self._heads, self._lasts, self._state, self._keys):
            del kept[:drop]
        self._fresh = max(0, self._fresh - drop)
        return out

    def _resolve(self, items: Sequence[tuple[float, Sequence[str]]], bound: float, out: list[int]) -> bool:
        """Add to ``out`` the answers of the staged cuts from ``len(out)`` on (runs of goals: :func:`_negative`); True:
        stopped at one not refused."""
        staged, decision = self._state, self.certified.decision
        j = len(out)
        while j < len(staged):
            end = _negative(staged, j)
            out += staged[j:end]
            self.counts[0] += end - j
            if end == len(staged) or staged[end] != UNSURE:  # (within the slack: one at a time)
                return end < len(staged)
            price, ids = items[end]
            found = decision(ids, bound, price)
            if found is None:
                return True
            out.append(found[1])
            self.counts[1] += 1
            j = end + 1
        return False

    def _stage(self, items: Sequence[tuple[float, Sequence[str]]], bound: float, extend: bool) -> None:
        """Each assembly's cut rows and family (head rotations, last rotation) in order, until one the look-up
        cannot decide from the segments known (:meth:`_extend`); those staged by the last call for the same
        assemblies kept (same proofs and bound: a segment learnt changes no cut staged, the segments known stay;
        it may let the staging go past where it stopped)."""
        ctx = self.certified.ctx
        proofs = ctx.family_proofs or FamilyProofs.of(ctx)
        key, count = (proofs, bound), len(proofs.segments.steps)
        if len(self._certs) >= _FAMILIES or proofs is not self._proofs or self._verdicts.full():  # (a few a task)
            self._proofs = proofs
            for table in (self._numbers, self._recent, self._serials):
                table.clear()
            del self._certs[:], self._signs[:]
            self._verdicts.clear()
            self._key = None
            self._numbering = next(_NUMBERINGS)  # (``CutStates``' numbers are the old ones)
        staged_ids, same = self._ids, 0
        if key == self._key:  # (the first not staged for these very IDs, found in C)
            most = min(len(staged_ids), len(items))
            others = map(is_not, staged_ids[:most], map(itemgetter(1), items[:most]))
            same = next(itertools.compress(itertools.count(), others), most)
        if same < len(staged_ids) or key != self._key:
            self._key, self._broke = key, False
            for kept_list in (staged_ids, self._families, self._heads, self._lasts, self._state, self._keys):
                del kept_list[same:]
            self._fresh = min(self._fresh, same)
        if count != self._count:
            self._count, self._broke = count, False
        if not extend or self._broke:
            return
        states = self._states
        if states.stamp != self._numbering or states.full():  # (the staged cuts' heads are its numbers: staged anew)
            states.clear(self._numbering, self._verdicts)
            for kept_list in (staged_ids, self._families, self._heads, self._lasts, self._state, self._keys):
                del kept_list[:]
            same = self._fresh = 0
        self._extend(proofs, items, same, bound)

    def _extend(
        self, proofs: FamilyProofs, items: Sequence[tuple[float, Sequence[str]]], same: int, bound: float
    ) -> None:
        """:meth:`_stage`'s cuts from ``items[same]`` on: by the automata of :mod:`.cut_states` in numpy steps where
        their entries are made and the limits and bound pass at once (``passes`` for a float price), the others one
        by one in order (:meth:`_one`), up to the first not staged."""
        fresh, states = items[same:], self._states
        if not fresh:
            return
        ids = list(map(itemgetter(1), fresh))
        family, rows, last, heads, lasts, dofs, lengths, resumes = self._ends(ids)
        bounds, prices = limits(), list(map(itemgetter(0), fresh))
        tests = (bounds.max_modules, bounds.max_dof, bound, *self._passing(bounds.max_modules, bounds.max_dof, bound))
        _, _, _, fewest, (least, most), top = tests
        quick = (family >= 0) & (dofs >= 0) & (lengths <= fewest) & (dofs >= least) & (dofs <= most)
        if set(map(type, prices)) == {float}:  # (the test at once: float prices)
            price = np.array(prices)
            quick &= (price > -math.inf) & (price < top)
        else:
            quick[:] = False
        keys = verdict_key(family, rows, last)  # (those not read yet: made by their walks)
        found = [column.tolist() for column in (family, rows, last, heads, lasts, keys)]  # (Python's steps on lists)
        segments, join = proofs.segments, self.certified.ctx.join
        tables = (segments.kinds, segments.steps, join.modules, join.pairs)
        slow = np.flatnonzero(~quick)
        for k, dof, start in zip(slow.tolist(), dofs[slow].tolist(), resumes[slow].tolist(), strict=True):
            if not self._one(tables, fresh[k], k, found, (dof, start), tests):
                self._broke = True
                self._bulk(ids, found, k)
                arrays = (family, rows, last, heads, lasts)  # (kept as arrays: :meth:`_ends` joins them in numpy)
                for array, column in zip(arrays, found[:5], strict=True):
                    array[k] = column[k]
                self._ahead = (states.clears, ids[k:], [column[k:] for column in (*arrays, dofs, lengths, resumes)])
                return
        self._bulk(ids, found, len(fresh))

    def _ends(self, ids: list[Sequence[str]]) -> list[np.ndarray]:
        """``CutStates.ends_of(ids)``; for those the last call read after its stop (the same IDs from its stop or
        the one after, the same states) what it read, so that each is read once wherever the stops fall; a few new
        ones (fewer than :data:`_FEW`) left unread (family and DOF -1: :meth:`_one` walks them if the staging gets
        there)."""
        states, ahead, known = self._states, self._ahead, 0
        if ahead is not None and ahead[0] == states.clears and ids:
            skip = 1 if len(ahead[1]) > 1 and ahead[1][1] is ids[0] else 0  # (the stop taken one at a time)
            seen = ahead[1][skip:]
            most = min(len(seen), len(ids))
            known = next(itertools.compress(itertools.count(), map(is_not, seen[:most], ids[:most])), most)
            columns = [column[skip : skip + known] for column in ahead[2]]
        if not known:
            return list(states.ends_of(ids))
        if known < len(ids) - _FEW:
            return [np.concatenate([a, b]) for a, b in zip(columns, states.ends_of(ids[known:]), strict=True)]
        unread = np.zeros(len(ids) - known, dtype=np.int64)
        return [np.concatenate([column, unread - unknown]) for column, unknown in zip(columns, _UNREAD, strict=True)]

    def _one(self, tables: tuple, item: tuple, k: int, found: list[list[int]], read: tuple, tests: tuple) -> bool:
        """:meth:`_extend`'s way for its ``k``-th assembly, not staged at once: its entries made in ``found``
        (:meth:`.CutStates.walk` from where ``ends_of`` read up to, ``read``: its DOF (-1: not read) and where the
        walk resumes; where one cannot be made from what the joiner has read, after its join, which reads the modules
        and pairs) and the limits and bound tested as ``decision`` tests them (``tests``: the limits, the bound and
        :meth:`_passing`'s; ``tables``: :meth:`.CutStates.walk`'s). False: not staged (the staging stops here: the
        caller takes it)."""
        price, ids = item
        dof, start = read
        if found[0][k] < 0:
            walked = self._states.walk(ids, tables, self._family, start)
            if walked is None and self.certified.ctx.join(ids) is not None:  # (None: the join's limits, or not one way)
                walked = self._states.walk(ids, tables, self._family, start)
            if walked is None:  # (a module without one plain joint, none, or a segment not known yet)
                return False
            family, rows, last, found[3][k], found[4][k] = walked
            found[0][k], found[1][k], found[2][k], found[5][k] = family, rows, last, verdict_key(family, rows, last)
        if dof < 0:  # (not read: ``ends_of`` reads it where every module's DOF is known)
            modules = tables[2]
            dof = sum([modules[m][1] for m in ids])
        n, (most_modules, most_dof, bound, fewest, (least, most), top) = len(ids), tests
        return (n <= fewest and least <= dof <= most and price.__class__ is float and -math.inf < price < top) or (
            n <= most_modules and dof <= most_dof and self.certified.passes(n, dof, price, bound)
        )

    def _bulk(self, ids: list[Sequence[str]], found: list[list[int]], end: int) -> None:
        """Stage the assemblies ``ids[:end]`` by their numbers (``found``: :meth:`.CutStates.ends_of`'s and their
        cuts' keys), each with an equal cut's answer (:mod:`.cut_verdicts`) or ``PENDING``."""
        family, _, _, heads, lasts, keys = (column[:end] for column in found)
        self._ids += ids[:end]
        self._families += family
        self._heads += heads
        self._lasts += lasts
        self._keys += keys
        answers = map(self._verdicts.answers.get, keys)  # (``Verdicts.get``, inline: an equal cut's, if it holds)
        self._state += [PENDING if got is None or got[2][got[0]] != got[1] else got[0] for got in answers]

    def _family(self, rotations: tuple[bytes, ...], last: bytes) -> int:
        """The number of the family ``(rotations, last)`` (numbered now if new)."""
        number = self._numbers.get((rotations, last))
        return self._number(self._proofs, rotations, last) if number is None else number  # type: ignore[arg-type]

    def _passing(self, most_modules: int, most_dof: int, bound: float) -> tuple[float, tuple[float, float], float]:
        """The modules, DOF range and prices (below the last) that both the limits and ``passes`` take at once."""
        cfg = self.certified.ctx.config
        fewest = min(most_modules, math.inf if cfg.max_modules is None else cfg.max_modules)
        least = -math.inf if cfg.min_dof is None else cfg.min_dof
        most = min(most_dof, math.inf if cfg.max_dof is None else cfg.max_dof)
        return fewest, (least, most), (bound if cfg.bound else math.inf)

    def _number(self, proofs: FamilyProofs, rotations: tuple[bytes, ...], last: bytes) -> int:
        """A new family's number."""
        number = self._numbers[rotations, last] = len(self._certs)
        certs = proofs.family_of((*rotations, last))
        self._certs.append(certs)
        self._signs.append(tuple([(c.size, c.forgotten) for c in certs]))  # (as covered: this call covers its cuts)
        self._verdicts.family(len(certs))
        return number

    def _changes(self) -> tuple[dict[int, int], dict[int, list[int]]]:
        """The families whose certificates changed since they were last covered (added or halved): per family the
        first goal whose did (-1: some were halved), and per family only added to, its sizes before; the answers
        kept per cut that no longer hold so are marked (:meth:`~.cut_verdicts.Verdicts.changed`)."""
        signs, verdicts = self._signs, self._verdicts
        changed: dict[int, int] = {}
        sizes: dict[int, list[int]] = {}
        for fid, certs in enumerate(self._certs):
            sign = tuple([(c.size, c.forgotten) for c in certs])
            if sign != signs[fid]:
                was, signs[fid] = signs[fid], sign
                first = min(k for k, (a, b) in enumerate(zip(was, sign)) if a != b)
                added = len(was) == len(sign) and all(a[1] == b[1] for a, b in zip(was, sign, strict=True))
                changed[fid] = first if added else -1
                verdicts.changed(fid, first, not added)
                if added:
                    sizes[fid] = [size for size, _ in was]
        return changed, sizes

    def _cover(self, changed: dict[int, int], sizes: dict[int, list[int]]) -> None:
        """Per family, the first goal whose certificates cover each staged cut (``UNSURE``: within :data:`SLACK`
        of a margin first; ``NONE``: none covers it), for the cuts staged since the last call that no equal cut's
        answer decided (:mod:`.cut_verdicts`) and those of the families whose certificates changed since
        (:meth:`_changes`; only their new certificates: :func:`.batch_cover.added`); each cut's answer kept for the
        equal cuts to come. By the compiled kernel where it is built (all the certificates, one call per goal), else
        by :meth:`_covered`."""
        state, families = self._state, self._families
        groups: dict[int, list[int]] = {}
        grown: dict[int, list[int]] = {}  # (cuts of those families: only the new certificates can change them)
        fresh = self._fresh if changed else 0  # (those of the changed families, picked in C)
        for j in itertools.compress(range(fresh), map(changed.__contains__, families[:fresh])):
            fid = families[j]  # (a cut covered by a goal up to ``changed[fid]`` still is: certificates added)
            if not 0 <= state[j] <= changed[fid]:
                (grown if fid in sizes and state[j] != UNSURE else groups).setdefault(fid, []).append(j)
        kernel = cover_kernel.kernel()  # (None: numpy's route)
        for fid, at in grown.items():
            marks = added(kernel, self._certs[fid], sizes[fid], self._rows(at), [state[j] for j in at])
            for j, found in zip(at, marks, strict=True):
                state[j] = found
        pending = map(eq, state[self._fresh :], itertools.repeat(PENDING))  # (picked in C: most have an answer)
        for j in itertools.compress(itertools.count(self._fresh), pending):
            groups.setdefault(families[j], []).append(j)
        self._fresh = len(state)
        for fid, at in groups.items():
            if kernel is not None:  # (compiled: all goals of the family, one call each)
                for j, found in zip(at, covered(kernel, self._certs[fid], self._rows(at)), strict=True):
                    state[j] = found
                continue
            for j in at:
                state[j] = PENDING
            for goal, certs in enumerate(self._certs[fid]):
                if certs.size:
                    at = self._covered(fid, goal, certs, at)
                    if not at:
                        break
            for j in at:
                if state[j] == PENDING:
                    state[j] = NONE
        self._verdicts.keep(state, self._keys, groups, grown)

    def _rows(self, at: list[int]) -> np.ndarray:
        """The cut rows of the staged cuts ``at`` (one family's: (n, gaps, 3)), the head's rows and the last."""
        heads, lasts, flat = self._states.heads, self._states.lasts, itertools.chain.from_iterable  # (fromiter)
        head_of, last_of = self._heads, self._lasts
        rows = [(*heads[head_of[j]].rows, lasts[last_of[j]]) for j in at]  # type: ignore[union-attr]
        return np.fromiter(flat(flat(rows)), float).reshape(len(at), -1, 3)

    def _covered(self, fid: int, goal: int, certs: Any, at: list[int]) -> list[int]:
        """Mark the staged cuts ``at`` that ``certs`` (goal ``goal``'s of family ``fid``) cover by more than
        :data:`SLACK` (``UNSURE`` those within it of a margin); the others left. The certificates that covered the
        family's last cuts are tried first (:func:`~.family_proof.distance`: most are covered by one of them), the
        others by numpy for the cuts they leave. A certificate's distance to a cut is its distance to the head's
        rows (once per head and certificate, kept on the head by the certificate's serial number:
        :func:`~.family_proof.distance` adds the rows in order) plus the last row's; where the head's alone reaches
        the margin, the whole does too (the sums only grow), and where the last row's alone reaches the margin less
        :data:`SLACK`, so does the whole (the head's is not computed then): the same answers."""
        state, head_of, last_of = self._state, self._heads, self._lasts
        heads, lasts = self._states.heads, self._states.lasts
        recent = self._recent.get((fid, goal))
        if recent is None or recent[0] != certs.forgotten:  # (halved: those may be forgotten)
            recent = self._recent[fid, goal] = [certs.forgotten]
        left, sqrt = at, math.sqrt
        for rest, (px, py, pz), margin, serial in recent[1:]:
            more = []
            room = margin - SLACK
            for j in left:
                qx, qy, qz = lasts[last_of[j]]
                dx, dy, dz = px - qx, py - qy, pz - qz
                root = sqrt(dx * dx + dy * dy + dz * dz)
                if root < room:  # (else d + root >= root >= room whatever the head's d: not covered, d not needed)
                    head = heads[head_of[j]]
                    d = head.sums.get(serial)  # type: ignore[union-attr]
                    if d is None:
                        d = head_sum(head, serial, rest, margin)
                    if d < margin and d + root < room:
                        state[j] = goal
                        continue
                more.append(j)
            left = more
            if not left:
                return left
        if not left:
            return left
        size = certs.size
        clear, near, first = distances(certs.points[:size], certs.margins[:size], self._rows(left))
        out = mark(state, left, clear, near, goal)
        for k in dict.fromkeys(first[clear].tolist()):
            near = certs.points[k].tolist()
            serial = self._serials.setdefault((fid, goal, k, certs.forgotten), next(_SERIALS))
            recent.insert(1, (near[:-1], near[-1], float(certs.margins[k]), serial))
        del recent[1 + _RECENT :]
        return out


def _negative(marks: list[int], at: int) -> int:
    """The first index from ``at`` on whose mark is negative (not a goal), else ``len(marks)`` (in C)."""
    found = itertools.compress(itertools.count(at), map(lt, marks[at:], itertools.repeat(0)))
    return next(found, len(marks))
