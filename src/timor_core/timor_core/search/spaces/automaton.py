"""The automaton of a search space: its options compiled once into a finite automaton and counted by DP.

The states summarise what the rules need to know of a chain prefix (last module and its used connector, degrees of
freedom, links since the last joint, progress through the joint sequences and link patterns, length):
:class:`SpaceCompiler` explores them from the root, prunes the dead ones and counts each state's completions
(:class:`Automaton`: transitions, counts, cumulative counts, completions of small states). Why a file of its own:
how the rules become states is one concept, what :class:`~.space.SerialSpace` does with the counts (positions,
iteration, sampling) another.
"""

from __future__ import annotations

from collections import deque
from typing import Any

from timor_core.limits import Limits, limit_hint, limits
from timor_core.model.db import ModulesDB
from timor_core.search.spaces.rules import ResolvedRules, SearchSpaceError, SpaceOptions

__all__ = ["MAX_STATES", "MAX_STEPS", "SUFFIX_CACHE", "Automaton", "SpaceCompiler", "post_order"]

MAX_STATES = 2_000_000  # refuse option sets whose automaton would be larger than this
MAX_STEPS = Limits.max_space_steps
"""The default of ``limits().max_space_steps``: refuse option sets whose automaton takes more steps to explore: every
state found is tried with every module the space may add, so the states found times those modules bound the work
ahead, and the exploration stops as soon as that exceeds the limit (some 5 s of CPU; ~300,000 states of a 13-module
set). A set of 1,500 links took 19 s and 1 GB for the 11 million steps of the exp2 space, one of 20,000 links ran
into gigabytes; both are refused at once. The limit can be raised (a space of 7 joints over 400 modules took 16 s)."""
SUFFIX_CACHE = 256  # states with at most this many completions keep them as tuples (speed, bounded memory)

_ROOT = ("<root>",)
_TERMINAL = ("<end>",)


class _Patterns:
    """Matching a sequence of modules against alternative patterns (tuples of module sets)."""

    __slots__ = ("patterns", "start")

    def __init__(self, patterns: tuple[tuple[frozenset[str], ...], ...]) -> None:
        self.patterns = patterns
        self.start = frozenset((i, 0) for i in range(len(patterns)))

    def step(self, live: frozenset, module: str) -> frozenset:
        return frozenset((i, k + 1) for i, k in live if k < len(self.patterns[i]) and module in self.patterns[i][k])

    def done(self, live: frozenset) -> bool:
        return any(k == len(self.patterns[i]) for i, k in live)


class SpaceCompiler:
    """Explores the automaton of one (db, resolved rules, options) triple."""

    def __init__(self, db: ModulesDB, rules: ResolvedRules, opt: SpaceOptions) -> None:
        self.db, self.rules, self.opt = db, rules, opt
        self.dof = {m.id: m.dof for m in db}
        self.bases = frozenset(rules.bases)
        self.eefs = frozenset(rules.end_effectors)
        self.joints = rules.joints
        order = {m: k for k, m in enumerate(db.ids)}
        self.candidates = tuple(sorted((*rules.middle, *rules.end_effectors), key=order.__getitem__))
        caps = (opt.max_links_between_joints, opt.max_links_before_first_joint, opt.max_links_after_last_joint)
        known = [c for c in caps if c is not None]
        self.link_clip = max(known) + 1 if known else None  # links beyond every cap are all alike
        self.gap = _Patterns(rules.gap_patterns) if rules.gap_patterns is not None else None
        self.head = _Patterns(rules.head_patterns) if rules.head_patterns is not None else None
        self.tail = _Patterns(rules.tail_patterns) if rules.tail_patterns is not None else None
        self.jseq = _Patterns(rules.joint_sequences) if rules.joint_sequences is not None else None
        self._conn: dict[tuple[str, str, str], str | None] = {}

    # -- connectivity: exactly one free fitting connection, like from_serial_modules --------------
    def connect(self, a: str, used: str, b: str) -> str | None:
        key = (a, used, b)
        try:
            return self._conn[key]
        except KeyError:
            pass
        options = [cb for ca, cb in self.db.connections_between(a, b) if ca != used]
        cb = options[0] if len(options) == 1 else None
        self._conn[key] = cb
        return cb

    def _clip_dof(self, dof: int) -> int:
        return dof if self.opt.dof_max is not None else min(dof, self.opt.dof_min)

    def _clip_links(self, links: int) -> int:
        return 0 if self.link_clip is None else min(links, self.link_clip)

    @staticmethod
    def _within(n: int, cap: int | None) -> bool:
        return cap is None or n <= cap

    # -- the transition function -------------------------------------------------------------------
    # state: (last, used connector, dof, joint-sequence progress, joint seen, links since last joint,
    #         head-or-gap pattern progress, tail pattern progress, length)
    def start(self) -> list[tuple[str, tuple]]:
        out = []
        opt = self.opt
        for b in self.rules.bases:
            dof = self.dof[b]
            if opt.dof_max is not None and dof > opt.dof_max:
                continue
            if opt.max_modules is not None and opt.max_modules < 2:
                continue
            used = self.db[b].base_connectors[0].id
            g = self.head.start if self.head else None
            t = self.tail.start if self.tail else None
            j = self.jseq.start if self.jseq else None
            length = 1 if opt.max_modules is not None else 0
            out.append((b, (b, used, self._clip_dof(dof), j, False, 0, g, t, length)))
        return out

    def step(self, s: tuple, m: str) -> tuple | None:
        last, used, dof, j, seen, links, g, t, length = s
        opt, rules = self.opt, self.rules
        if last in self.bases:  # m is the first module after the base
            if opt.first_is_joint and m not in self.joints:
                return None
            if rules.first_modules is not None and m not in rules.first_modules:
                return None
        if rules.successors is not None and (last, m) not in rules.successors:
            return None
        if opt.max_modules is not None:
            length += 1
            if length + (0 if m in self.eefs else 1) > opt.max_modules:
                return None
        dof += self.dof[m]
        if opt.dof_max is not None and dof > opt.dof_max:
            return None
        cb = self.connect(last, used, m)
        if cb is None:
            return None
        if m in self.eefs:
            if dof < opt.dof_min:
                return None
            if self.jseq is not None and not self.jseq.done(j):
                return None
            if not self._end_segment(seen, links, g, t, at_eef=True):
                return None
            return _TERMINAL
        if m in self.joints:
            if self.jseq is not None:
                j = self.jseq.step(j, m)
                if not j:
                    return None
            if not self._end_segment(seen, links, g, t, at_eef=False):
                return None
            g = self.gap.start if self.gap else None
            t = self.tail.start if self.tail else None
            return (m, cb, self._clip_dof(dof), j, True, 0, g, t, length)
        # a static link: it belongs to the current segment (head, or gap/tail after a joint)
        links += 1
        if g is not None:
            pat = self.gap if seen else self.head
            assert pat is not None  # g tracks the head (before the first joint) or gap patterns, which then exist
            g = pat.step(g, m)
        if t is not None:
            assert self.tail is not None  # t tracks the tail patterns, which then exist
            t = self.tail.step(t, m)
        cap = opt.max_links_between_joints if seen else opt.max_links_before_first_joint
        can_continue = (g is None or bool(g)) and self._within(links, cap)  # ... to a joint (gap or head)
        can_end = (t is None or bool(t)) and self._within(links, opt.max_links_after_last_joint)
        if not seen:
            can_end = can_end and can_continue  # a joint-less chain obeys the head rules as well
        if not (can_continue or can_end):
            return None
        return (m, cb, dof, j, seen, self._clip_links(links), g, t, length)

    def _end_segment(self, seen: bool, links: int, g, t, at_eef: bool) -> bool:
        # g tracks the head (before the first joint) or gap patterns and t the tail patterns: not None only if
        # those patterns exist
        opt = self.opt
        if not at_eef:  # a joint closes the head (before the first joint) or a gap
            cap = opt.max_links_between_joints if seen else opt.max_links_before_first_joint
            pat = self.gap if seen else self.head
            return self._within(links, cap) and (g is None or (pat is not None and pat.done(g)))
        ok = self._within(links, opt.max_links_after_last_joint) and (
            t is None or (self.tail is not None and self.tail.done(t))
        )
        if not seen:  # no joint at all: the links are head and tail at once
            ok = (
                ok
                and self._within(links, opt.max_links_before_first_joint)
                and (g is None or (self.head is not None and self.head.done(g)))
            )
        return ok

    # -- exploration, pruning, counting ----------------------------------------------------------
    def _explore(self) -> list[list[tuple[str, int]]]:
        """The transitions of every state reachable from the root (state 1; state 0 is the terminal)."""
        index: dict[tuple, int] = {_TERMINAL: 0, _ROOT: 1}
        keys: list[tuple] = [_TERMINAL, _ROOT]
        raw: list[list[tuple[str, int]]] = [[], []]

        most_steps = limits().max_space_steps

        def sid(key: tuple) -> int:
            k = index.get(key)
            if k is None:
                k = index[key] = len(keys)
                keys.append(key)
                raw.append([])
                if len(keys) > MAX_STATES:
                    raise SearchSpaceError(
                        f"the search space's automaton exceeds {MAX_STATES} states; tighten the options"
                        " (dof_max, max_links_*, max_modules, patterns)",
                        path="$",
                        value=self.opt.to_json(),
                    )
                if len(keys) * len(self.candidates) > most_steps:  # each state found is tried with every module
                    raise SearchSpaceError(
                        f"the search space's automaton would try more than {most_steps} steps ({len(keys)} states"
                        f" found so far, {len(self.candidates)} modules to try after each); tighten the options"
                        f" (modules, dof_max, max_links_*, max_modules, patterns) or raise the"
                        f" {limit_hint('max_space_steps')}",
                        path="$",
                        value=self.opt.to_json(),
                    )
            return k

        raw[1] = [(b, sid(key)) for b, key in self.start()]
        k = 2
        while k < len(keys):
            s = keys[k]
            out = raw[k]
            for m in self.candidates:
                nxt = self.step(s, m)
                if nxt is not None:
                    out.append((m, sid(nxt)))
            k += 1
        return raw

    def compile(self) -> Automaton:
        raw = self._explore()
        n = len(raw)
        # live states: those from which the terminal is reachable
        preds: list[list[int]] = [[] for _ in range(n)]
        for a in range(n):
            for _, b in raw[a]:
                preds[b].append(a)
        live = bytearray(n)
        live[0] = 1
        queue = deque([0])
        while queue:
            b = queue.popleft()
            for a in preds[b]:
                if not live[a]:
                    live[a] = 1
                    queue.append(a)
        trans = [tuple((m, b) for m, b in raw[a] if live[b]) if live[a] else () for a in range(n)]
        raw, preds = [], []  # free memory before counting
        # topological order of the live part (Kahn); a leftover means a cycle = infinitely many chains
        indeg = [0] * n
        for a in range(n):
            for _, b in trans[a]:
                indeg[b] += 1
        order = [a for a in range(n) if live[a] and indeg[a] == 0]
        for a in order:  # grows while we walk it
            for _, b in trans[a]:
                indeg[b] -= 1
                if indeg[b] == 0:
                    order.append(b)
        if len(order) != sum(live):
            raise SearchSpaceError(
                "the options allow arbitrarily long chains (infinitely many assemblies); bound them with"
                " max_links_between_joints / max_links_before_first_joint / max_links_after_last_joint,"
                " link patterns, or max_modules",
                path="$",
                value=self.opt.to_json(),
            )
        counts = [0] * n
        counts[0] = 1
        for a in reversed(order):
            if a:
                counts[a] = sum(counts[b] for _, b in trans[a])
        return Automaton(trans, counts, n)


class Automaton:
    """The compiled space: live transitions, completion counts, cumulative counts and suffix caches."""

    def __init__(self, trans: list[tuple[tuple[str, int], ...]], counts: list[int], explored: int) -> None:
        n = len(trans)
        self.trans = trans
        self.counts = counts
        self.explored = explored
        self.live_states = sum(1 for a in range(n) if counts[a])
        self.cum: list[tuple[int, ...]] = []
        self.pos: list[dict[str, int]] = []
        for a in range(n):
            acc, cum = 0, []
            for _, b in trans[a]:
                cum.append(acc)
                acc += counts[b]
            self.cum.append(tuple(cum))
            self.pos.append({m: k for k, (m, _) in enumerate(trans[a])})
        # completions as tuples for states with few of them (filled bottom-up, terminal first)
        suf: list[tuple[tuple[str, ...], ...] | None] = [None] * n
        suf[0] = ((),)

        def fill(a: int) -> tuple[tuple[str, ...], ...] | None:
            if suf[a] is None and 0 < counts[a] <= SUFFIX_CACHE:
                out: list[tuple[str, ...]] = []
                for m, b in trans[a]:
                    tail = fill(b)
                    assert tail is not None  # a successor has at least one completion and no more than a
                    out.extend((m, *x) for x in tail)
                suf[a] = tuple(out)
            return suf[a]

        for a in range(n):
            fill(a)
        self.suffixes = suf

    @property
    def total(self) -> int:
        return self.counts[1]


def post_order(trans: Any, root: int = 1, terminal: int = 0) -> list[int]:
    """The states of a compiled space's automaton reachable from ``root``, each after every state it leads to
    (``terminal`` left out): the order in which per-state quantities over completions (cheapest cost, longest
    reach) can be computed from the states' successors. Iterative, since chains may be long."""
    seen, order, stack = {terminal}, [], [root]
    while stack:
        s = stack[-1]
        todo = [b for _, b in trans[s] if b not in seen]
        if todo:
            stack.extend(todo)
            continue
        stack.pop()
        if s not in seen:
            seen.add(s)
            order.append(s)
    return order
