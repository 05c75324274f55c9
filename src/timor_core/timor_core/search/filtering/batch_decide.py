"""Many assemblies of the cost-ordered stream decided by the certificate look-up at once (issue 38, item 1).

Why: on ``five_joints`` 40,103 assemblies come before the optimum in the cost order and 99 % of them are refused
by a certificate look-up (:mod:`.certified`); one at a time, through the evaluator, the funnel and the stream's
loops, that cost several times the walk's own step. Certificates change only when a proof runs, and a proof runs
only at an assembly the look-up does not decide: so every assembly of a batch before the first one it does not
decide is decided against the same certificates as one at a time. :meth:`BatchLookup.refusals` takes a batch in
order: each assembly's kept head and tail (:mod:`.kept_heads`), the limits and the bound as
:meth:`~.certified.CertifiedRefusal.decision` checks them, and then, per family (the rotations; a batch holds a
few), the distances of all its cuts to the family's certificates of each goal in one step (the compiled
:mod:`.cover_kernel` where it is built, else numpy's: :mod:`.batch_cover`). An assembly
covered, or not, by more than :data:`SLACK` is decided so; one within it of a margin (where another order of the
same additions could change the last bit) takes the one-at-a-time look-up. The answer is the first goal (task
order) a certificate covers: the one-at-a-time answer (property test in ``tests/test_batch_decide.py``).

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
from timor_core.search.filtering.cut_verdicts import Verdicts
from timor_core.search.filtering.family_proof import FamilyProofs

__all__ = ["BATCH", "SLACK", "BatchLookup"]

BATCH = 256
"""Assemblies a consumer takes from the stream per batch."""
STATES = True
"""Stage a batch by :mod:`.cut_states` (False: each assembly by :meth:`BatchLookup._scalar`, the older way)."""
_RECENT = 4  # certificates that covered a family's last cuts, tried first
_FAMILIES = 512  # families numbered (more: all are forgotten, with the cuts staged)
_NOTHING: Any = None  # (not staged yet: typed as anything)
_SERIALS = itertools.count()  # (of the certificates tried first: ``Head.sums`` names them so)
_NUMBERINGS = itertools.count()  # (one per numbering of families, over all look-ups: heads may be shared)


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
        self._heads: list[Any] = []  # (their kept heads and last rows: the cut rows are the head's and the last)
        self._lasts: list[tuple] = []
        self._state: list[int] = []
        self._keys: list[tuple[int, int, int]] = []  # (their cuts' keys in ``_verdicts``)
        self._verdicts = Verdicts()  # answers per cut by value, for the cuts equal to one answered before
        self._key: tuple | None = None  # (proofs, segments known, bound) they were staged with
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
        self._ends: dict[tuple, dict] = {}  # per entry connector and carried length: ``Head.ends``
        # per certificate tried first (family number, goal, index, ``forgotten``): its serial (``Head.sums`` key)
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
        that one one at a time and then asks for the rest (what was staged for them is kept while the segments,
        the proofs and the bound are the same; a family's answers while its certificates are)."""
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
        cannot decide from the kept heads and tails (made here from the segments known, as ``Kept.cut`` keeps
        them); those staged by the last call for the same assemblies kept (same segments, proofs and bound)."""
        cr = self.certified
        ctx, kept = cr.ctx, cr.kept
        proofs = ctx.family_proofs or FamilyProofs.of(ctx)
        kept.use(proofs)
        key = (proofs, len(proofs.segments.steps), bound)
        if len(self._certs) >= _FAMILIES or proofs is not self._proofs or self._verdicts.full():  # (a few a task)
            self._proofs = proofs
            for table in (self._numbers, self._recent, self._serials):
                table.clear()
            del self._certs[:], self._signs[:]
            self._verdicts.clear()
            self._key = None
            self._numbering = next(_NUMBERINGS)  # (the stagings kept on heads name the old numbers)
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
        if not extend or self._broke:
            return
        self._extend(proofs, items, same, bound)

    def _extend(
        self, proofs: FamilyProofs, items: Sequence[tuple[float, Sequence[str]]], same: int, bound: float
    ) -> None:
        """:meth:`_stage`'s cuts from ``items[same]`` on: by the automata of :mod:`.cut_states` in numpy steps where
        their entries are made and the limits and bound pass at once (:meth:`_scalar`'s inline test), the others one
        by one in order (:meth:`_one`): the same family, rows, last row and answer as :meth:`_scalar` gives."""
        fresh, states = items[same:], self._states
        if not STATES or not fresh:
            self._scalar(proofs, fresh, bound)
            return
        if states.stamp != self._numbering:
            states.clear(self._numbering, self._verdicts)
        ids = list(map(itemgetter(1), fresh))
        family, rows, last, heads, lasts, dofs, lengths = states.ends_of(ids)
        bounds, prices = limits(), list(map(itemgetter(0), fresh))
        tests = (bounds.max_modules, bounds.max_dof, bound, *self._passing(bounds.max_modules, bounds.max_dof, bound))
        _, _, _, fewest, (least, most), top = tests
        quick = (family >= 0) & (lengths <= fewest) & (dofs >= least) & (dofs <= most)
        if set(map(type, prices)) == {float}:  # (the inline test: float prices)
            price = np.array(prices)
            quick &= (price > -math.inf) & (price < top)
        else:
            quick[:] = False
        found = [family.tolist(), rows.tolist(), last.tolist(), heads.tolist(), lasts.tolist()]
        at = 0
        for k in np.flatnonzero(~quick).tolist():
            done = self._one(proofs, fresh[k], k, found, int(dofs[k]), tests)
            if done is not None:  # (staged by ``_scalar``, or the staging stops here)
                self._bulk(ids, found, at, k)
                if done is False or self._scalar(proofs, [fresh[k]], bound):
                    return
                at = k + 1
        self._bulk(ids, found, at, len(fresh))

    def _one(self, proofs: FamilyProofs, item: tuple, k: int, found: list[list[int]], dof: int, tests: tuple) -> Any:
        """:meth:`_extend`'s way for its ``k``-th assembly, not staged at once: its entries made in ``found``
        (:meth:`.CutStates.walk`) and the limits and bound tested as :meth:`_scalar` tests them (``tests``: the limits,
        the bound and :meth:`_passing`'s): None, staged so;
        True: take it :meth:`_scalar`'s way; False: the staging stops here."""
        price, ids = item
        if found[0][k] < 0:
            segments, joiner = proofs.segments, self.certified.ctx.join
            tables = (segments.kinds, segments.steps, joiner.modules, joiner.pairs)
            walked = self._states.walk(ids, tables, self._family)
            if walked is None:
                return True
            for column, value in zip(found, walked, strict=True):
                column[k] = value
            dof = sum([joiner.modules[m][1] for m in ids])
        n, (most_modules, most_dof, bound, fewest, (least, most), top) = len(ids), tests
        if not (n <= fewest and least <= dof <= most and price.__class__ is float and -math.inf < price < top) and not (
            n <= most_modules and dof <= most_dof and self.certified.passes(n, dof, price, bound)
        ):
            self._broke = True
            return False
        return None

    def _bulk(self, ids: list[Sequence[str]], found: list[list[int]], at: int, end: int) -> None:
        """Stage the assemblies ``ids[at:end]`` by their numbers (``found``: :meth:`.CutStates.ends_of`'s), each
        with an equal cut's answer (:mod:`.cut_verdicts`) or ``PENDING``."""
        if at >= end:
            return
        family, rows, last, heads, lasts = (column[at:end] for column in found)
        keys = list(zip(family, rows, last))
        self._ids += ids[at:end]
        self._families += family
        self._heads += map(self._states.heads.__getitem__, heads)
        self._lasts += map(self._states.lasts.__getitem__, lasts)
        self._keys += keys
        epochs = self._verdicts.epochs  # (``Verdicts.get``, inline: an equal cut's answer, if it still holds)
        self._state += [
            PENDING if got is None or epochs[key[0]][got[0]] != got[1] else got[0]
            for got, key in zip(map(self._verdicts.answers.get, keys), keys)
        ]

    def _family(self, rotations: tuple[bytes, ...], last: bytes) -> int:
        """The number of the family ``(rotations, last)`` (numbered now if new)."""
        number = self._numbers.get((rotations, last))
        return self._number(self._proofs, rotations, last) if number is None else number  # type: ignore[arg-type]

    def _scalar(self, proofs: FamilyProofs, items: Sequence[tuple[float, Sequence[str]]], bound: float) -> bool:
        """:meth:`_extend`'s cuts one assembly at a time (True: it stopped at one). Per assembly only its last
        joint, its head (by the IDs up to it; or its parent's, :meth:`_straight`), its last row and DOF by the IDs
        from the joint on (``Head.ends``: one per entry connector and carried length) and its family's number by the
        last rotation (``Head.numbers``), read once by :meth:`_staging` as ``Kept.known``, ``Kept.end`` and
        :meth:`_number` read them, valid while the segments, heads, tails and numbers are the same (the stamps); an
        equal cut's answer (:mod:`.cut_verdicts`)."""
        cr = self.certified
        segments, heads, passes = proofs.segments, cr.kept.heads, cr.passes
        kinds, count, numbering = segments.kinds, len(segments.steps), self._numbering
        stamp = (numbering, count, cr.kept.clears)
        bounds = limits()
        most_modules, most_dof = bounds.max_modules, bounds.max_dof
        fewest, most, top = self._passing(most_modules, most_dof, bound)
        staged_ids, families, state = self._ids, self._families, self._state
        staged_heads, lasts, keys, verdicts = self._heads, self._lasts, self._keys, self._verdicts
        get_kind, get_head, low, answers, epochs = kinds.get, heads.get, -math.inf, verdicts.answers, verdicts.epochs
        least_dof, most_dof_too = most
        for price, ids in items:
            tupled = ids if ids.__class__ is tuple else tuple(ids)
            at = len(tupled) - 1
            kind = get_kind(tupled[at]) if at >= 0 else None
            while kind is False:  # (the last joint, as ``Kept.known`` finds it; None: not plain or not known)
                at -= 1
                kind = get_kind(tupled[at]) if at >= 0 else None
            got = number = head = _NOTHING
            if kind:
                head = get_head(tupled[: at + 1])
                if head is not None and head.seen == count and head.ends is not None:
                    got = head.ends.get(tupled[at:])
                    if got is not None and got[0] == stamp:
                        number = head.numbers.get(got[2])
                        if number is None or number[0] != numbering:  # (a new family of a head staged)
                            number = self._renumber(proofs, head, got[2])
                elif head is None:  # (not kept: its parent's, where the run to the last joint is straight)
                    head, got, number = self._straight(proofs, tupled, at, stamp)
            if number is None:
                head, got, number = self._staging(proofs, tupled, price, bound, stamp, head is not None)
                if head is None:
                    self._broke = True
                    break
            n, dof = len(tupled), head.dof + got[3]
            # (the limits and ``passes``, at once where they hold for a float price: else as ``decision`` asks)
            if not (
                n <= fewest and least_dof <= dof <= most_dof_too and price.__class__ is float and low < price < top
            ) and not (n <= most_modules and dof <= most_dof and passes(n, dof, price, bound)):
                self._broke = True
                break
            shape = head.shape
            if shape[0] != numbering:  # (the head's rows by value: ``Verdicts.shape``)
                shape = head.shape = (numbering, verdicts.shape(head.rows))
            key = (number[1], shape[1], got[4])
            found = answers.get(key)  # (``Verdicts.get``, inline: an equal cut's answer, if it still holds)
            staged_ids.append(ids)
            families.append(number[1])
            staged_heads.append(head)
            lasts.append(got[1])
            keys.append(key)
            state.append(found[0] if found is not None and epochs[key[0]][found[0]] == found[1] else PENDING)
        return self._broke

    def _passing(self, most_modules: int, most_dof: int, bound: float) -> tuple[float, tuple[float, float], float]:
        """The modules, DOF range and prices (below the last) that both the limits and ``passes`` take at once."""
        cfg = self.certified.ctx.config
        fewest = min(most_modules, math.inf if cfg.max_modules is None else cfg.max_modules)
        least = -math.inf if cfg.min_dof is None else cfg.min_dof
        most = min(most_dof, math.inf if cfg.max_dof is None else cfg.max_dof)
        return fewest, (least, most), (bound if cfg.bound else math.inf)

    def _renumber(self, proofs: FamilyProofs, head: Any, last: bytes) -> tuple[int, int]:
        """The family number of a staged head's assembly whose last rotation is ``last``, kept on the head."""
        number = self._numbers.get((head.rotations, last))
        if number is None:
            number = self._number(proofs, head.rotations, last)
        found = head.numbers[last] = (self._numbering, number)
        return found

    def _staging(
        self, proofs: FamilyProofs, ids: tuple[str, ...], price: float, bound: float, stamp: tuple, kept_head: bool
    ) -> Any:
        """An assembly's head, ``(stamp, last row, last rotation, DOF after the joint)`` and ``(numbering, family
        number)`` the way ``decision`` reads them, kept on the head (module docstring; head None: not decided from
        kept heads and tails; ``kept_head`` False: its head is not kept, as ``Kept.known`` would find)."""
        kept = self.certified.kept
        found = kept.known(proofs, ids) if kept_head else None
        if found is None and price is not None:
            passes = self.certified.passes
            found = kept.grow(proofs, ids, self.certified.ctx.join, lambda n, dof: passes(n, dof, price, bound))
        if found is None:
            found = self._kept(proofs, ids, price, bound)
            if found is None:
                return None, None, None
        head, key, _ = found
        last = kept.end(*found)
        number = self._numbers.get((head.rotations, last[0]))
        if number is None:
            number = self._number(proofs, head.rotations, last[0])
        got = (stamp, last[2], last[0], kept.tails[key][1], self._verdicts.last(last[2]))
        if head.seen == stamp[1]:
            if head.ends is None:
                head.ends = self._ends.setdefault((head.entry, head.carry), {})
            head.ends[key[0]] = got
            head.numbers[last[0]] = (stamp[0], number)
            self.certified.kept.straighten(head, ids, got)
        return head, got, (stamp[0], number)

    def _straight(self, proofs: FamilyProofs, ids: tuple[str, ...], at: int, stamp: tuple) -> Any:
        """:meth:`_staging` of an assembly whose head is not kept from the head's parent where the run between them
        is straight (``Kept.straight``: no head made); ``(parent, got, number)`` as :meth:`_staging` returns them
        (with the DOF after the parent's joint), or ``(None, None, None)``: not kept so."""
        found = self.certified.kept.straight(proofs.segments.kinds, ids, at, stamp)
        if found is None:
            return None, None, None
        parent, got = found
        number = parent.numbers.get(got[2])
        if number is None or number[0] != stamp[0]:
            number = self._renumber(proofs, parent, got[2])
        return parent, got, number

    def _number(self, proofs: FamilyProofs, rotations: tuple[bytes, ...], last: bytes) -> int:
        """A new family's number."""
        number = self._numbers[rotations, last] = len(self._certs)
        certs = proofs.family_of((*rotations, last))
        self._certs.append(certs)
        self._signs.append(tuple([(c.size, c.forgotten) for c in certs]))  # (as covered: this call covers its cuts)
        self._verdicts.family(len(certs))
        return number

    def _kept(self, proofs: FamilyProofs, ids: tuple[str, ...], price: float, bound: float) -> Any:
        """``decision``'s way for an assembly whose head or tail is not kept, as far as it goes without a segment
        not known yet: its head, tail key and last segment, now kept (None: stop here)."""
        cr = self.certified
        join = cr.ctx.join(ids)
        if join is None:
            return None
        price = cr.ctx.cost.evaluate_modules(join.modules) if price is None else price
        if not cr.passes(len(ids), join.dof, price, bound):
            return None
        return cr.kept.keep(proofs, ids, join)

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
        heads, lasts, flat = self._heads, self._lasts, itertools.chain.from_iterable  # (fromiter: fewer steps)
        return np.fromiter(flat(flat([(*heads[j].rows, lasts[j]) for j in at])), float).reshape(len(at), -1, 3)

    def _covered(self, fid: int, goal: int, certs: Any, at: list[int]) -> list[int]:
        """Mark the staged cuts ``at`` that ``certs`` (goal ``goal``'s of family ``fid``) cover by more than
        :data:`SLACK` (``UNSURE`` those within it of a margin); the others left. The certificates that covered the
        family's last cuts are tried first (:func:`~.family_proof.distance`: most are covered by one of them), the
        others by numpy for the cuts they leave. A certificate's distance to a cut is its distance to the head's
        rows (once per head and certificate, kept on the head by the certificate's serial number:
        :func:`~.family_proof.distance` adds the rows in order) plus the last row's; where the head's alone reaches
        the margin, the whole does too (the sums only grow), and where the last row's alone reaches the margin less
        :data:`SLACK`, so does the whole (the head's is not computed then): the same answers."""
        state, heads, lasts = self._state, self._heads, self._lasts
        recent = self._recent.get((fid, goal))
        if recent is None or recent[0] != certs.forgotten:  # (halved: those may be forgotten)
            recent = self._recent[fid, goal] = [certs.forgotten]
        left, sqrt = at, math.sqrt
        for rest, (px, py, pz), margin, serial in recent[1:]:
            more = []
            room = margin - SLACK
            for j in left:
                qx, qy, qz = lasts[j]
                dx, dy, dz = px - qx, py - qy, pz - qz
                root = sqrt(dx * dx + dy * dy + dz * dz)
                if root < room:  # (else d + root >= root >= room whatever the head's d: not covered, d not needed)
                    d = heads[j].sums.get(serial)
                    if d is None:
                        d = head_sum(heads[j], serial, rest, margin)
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
