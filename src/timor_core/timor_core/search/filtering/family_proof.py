"""One proof for many assemblies: a goal out of reach of every chain whose links differ a little in length.

Why: on tasks other than the user study, most of the assemblies the cost order takes are light arms that cannot
reach a goal at its orientation, and proving that one assembly at a time (:mod:`.reach_proof`, ~1-2 ms each) was
most of the search (``obstacle_middle``: 26,566 proofs). Those arms come in families: the same joints turned the
same way, with links of other lengths in between.

Cut a serial chain of revolute joints at its joint frames (q = 0): ``T(q) = A_0 Rz(q_1) A_1 ... Rz(q_n) A_n``,
``A_0`` the first joint's frame in the world, ``A_k`` joint k's frame to joint k+1's, ``A_n`` the last joint's
frame to the TCP. Two chains whose ``A_k`` have the same rotations (a family) put their TCP at the same orientation
for every q, and their TCP positions, and their last joints' origins seen from the TCP, differ by at most
``d = sum_k |t_k - t'_k|`` (``t_k`` the translations). A joint on one line with the joint before (``J J``,
``J I_50 J`` in robco_like) is merged into it first (:func:`merged`: over whole turns the chain reaches the same
poses), so a five-joint arm with two such pairs is in the family of the three-joint arm it turns like, and one
proof covers both (``five_joints``: 1,306 proofs -> 619). A proof for one chain (:func:`~.reach_proof.pose_proof`)
refused every box of joint angles with more than its ``margin`` to spare in position, or by rotation alone; so it
refuses the boxes of every chain of its family within ``d < margin``, and that chain cannot reach the goal either.

:class:`FamilyProofs` keeps these certificates (translations and margin) per goal and family: an assembly within
``d < margin`` of a proven one is refused by a look-up, any other is proven (or not) on its own and, if proven,
becomes a certificate. Sound whatever the order of the assemblies (property test in ``tests/test_family_proof.py``).
Every chain no certificate covers is proven (compiled, ~2 ms, a proof costs less than the failing IK run it spares).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.search.filtering import cover_kernel
from timor_core.search.filtering.family_certificates import Certificates, Lesson, distance
from timor_core.search.filtering.proof_chain import PoseChain, chain_of_steps
from timor_core.search.filtering.quick_reach import REVOLUTE, joint_frames
from timor_core.search.filtering.reach_proof import Proof, pose_proof, reaching
from timor_core.search.filtering.segments import Segment, merged
from timor_core.search.filtering.widening import Boxes, Distances

__all__ = ["COVERED", "Cut", "FamilyProofs", "Lesson", "Refusal", "Segment", "chain_segments", "cut_chain",
           "distance", "merged"]  # fmt: skip

ROTATION_DECIMALS = 9  # rotations of one family agree to 5e-10 per entry ...
ROTATION_SLACK = 1e-7  # m per joint gap: ... which moves a point 3 m away by < 1e-8 m: allowed for generously
AXIAL = 1e-12  # a step this close to Tz(l) Rz(phi) (per entry) puts the next joint on its joint's line: merged (a
# merged chain is within 1e-11 m of the one it stands for; one more ROTATION_SLACK per certificate covers it)
WIDEN = 0.25  # m: a proof's tight boxes are cut further until they spare this (0.15 covered the chains 0.10 away) ...
WIDEN_BUDGET = 4096  # ... or this many more boxes are spent
MAX_CERTIFICATES = 8192  # kept per goal and family (more: the older half is forgotten)
WITNESSES = 8  # the last configurations that ended a proof (a witness), kept per goal and family, tried first
STARTS = 8  # proofs' boxes kept per goal and family, for chains near (1, 2, 4, 8: five_joints' proofs 0.78-0.59 s)
COVERED = (  # the reason the family filter gives for a goal a certificate covers
    "no configuration reaches it within its tolerance (proven for a chain of its family within the proof's margin)"
)
MAX_KEPT_BOXES = 100_000  # boxes kept in all (<= 18 MB for 7 joints); more: all are forgotten (bounded memory)


class Cut:
    """A chain cut at its joint frames: ``steps`` (n + 1, 4, 4) the ``A_k``, ``translations`` (n + 1, 3) theirs,
    ``rotations`` a key of their rotations (equal keys: equal rotations to 5e-10 per entry: one family). A cut made
    from cached segments (:meth:`of_segments`) makes its arrays only when asked: a look-up needs ``rows`` alone."""

    def __init__(self, rotations: tuple[bytes, ...], translations: np.ndarray, steps: np.ndarray) -> None:
        self.rotations = rotations
        self.__dict__["translations"], self.__dict__["steps"] = translations, steps

    @classmethod
    def of_segments(cls, segments: Sequence[Segment]) -> Cut:
        """The cut of the chain of these segments (:data:`Segment`), joints on one line with the one before merged
        into it (:func:`merged`)."""
        for k in range(1, len(segments) - 1):
            if segments[k][3] is not None:
                segments = merged(segments)
                break
        cut = cls.__new__(cls)
        cut.rotations, steps, cut.__dict__["rows"], _ = zip(*segments, strict=True)
        cut.__dict__["parts"] = steps
        return cut

    @functools.cached_property
    def steps(self) -> np.ndarray:
        return np.array(self.__dict__["parts"])

    @functools.cached_property
    def translations(self) -> np.ndarray:
        """The steps' translations (n + 1, 3): from ``rows`` where the cut has them (the same floats; a look-up
        needs no steps made), else from the steps."""
        rows = self.__dict__.get("rows")
        return self.steps[:, :3, 3].copy() if rows is None else np.array(rows, dtype=float)

    @functools.cached_property
    def rows(self) -> tuple[tuple[float, ...], ...]:
        """The translations as tuples of floats (the same values)."""
        return tuple(tuple(r) for r in self.translations.tolist())

    @functools.cached_property
    def chain(self) -> PoseChain:
        """The chain for :func:`~.reach_proof.pose_proof` (made when a proof needs it), in this cut's angles."""
        return chain_of_steps(*_steps(self))

    @property
    def gaps(self) -> int:
        return len(self.rotations)


def cut_chain(assembly: Any, placement: np.ndarray | None) -> Cut | None:
    """The :class:`Cut` of a serial assembly of one-joint revolute modules at ``placement`` (None: not such a
    chain, see :func:`~.quick_reach.joint_frames`), joints on one line with the joint before merged into it
    (:func:`merged`)."""
    segments = chain_segments(assembly, placement)
    return None if segments is None else Cut.of_segments(segments)


def chain_segments(assembly: Any, placement: np.ndarray | None) -> list[Segment] | None:
    """The :data:`Segment` of each ``A_k`` of a serial assembly at ``placement``, none merged (None: not such a
    chain, see :func:`~.quick_reach.joint_frames`)."""
    walked = joint_frames(assembly, placement)
    if walked is None:
        return None
    frames = np.array([*walked[0], walked[1]])
    rot, pos = frames[:, :3, :3], frames[:, :3, 3]
    # A_0 = the first joint's frame; A_k = F_k^-1 F_k+1 (rotation R_k^T R_k+1, translation R_k^T (p_k+1 - p_k))
    steps = np.zeros_like(frames)
    steps[:, 3, 3] = 1.0
    steps[0] = frames[0]
    steps[1:, :3, :3] = np.einsum("kji,kjl->kil", rot[:-1], rot[1:])
    steps[1:, :3, 3] = np.einsum("kji,kj->ki", rot[:-1], pos[1:] - pos[:-1])
    return [segment(a) for a in steps]


def segment(step: np.ndarray) -> Segment:
    """The :data:`Segment` of one step ``A_k`` (4x4)."""
    key = (np.round(step[:3, :3], ROTATION_DECIMALS) + 0.0).tobytes()  # + 0.0: no -0.0
    row = tuple(step[:3, 3].tolist())
    off = max(abs(step[0, 2]), abs(step[1, 2]), abs(step[2, 0]), abs(step[2, 1]), abs(step[2, 2] - 1.0))
    axial = float(step[2, 3]) if off <= AXIAL and abs(row[0]) <= AXIAL and abs(row[1]) <= AXIAL else None
    return key, step, row, axial


def _steps(cut: Cut) -> tuple[np.ndarray, np.ndarray]:
    """The rotations (n + 1, 3, 3) and translations (n + 1, 3) of a cut's steps ``A_k``, in C order (as the kernels
    take them), made once per cut (the witnesses' descents and the proof's chain take them)."""
    found = cut.__dict__.get("split")
    if found is None:
        found = cut.__dict__["split"] = (np.ascontiguousarray(cut.steps[:, :3, :3]), cut.steps[:, :3, 3].copy())
    return found


class _Segments:
    """The ``A_k`` of an assembly from the modules between its joints, each computed once: ``A_k`` depends only on
    the modules from joint k's to joint k+1's and the connector the first of them is entered by (the rest follow:
    a serial assembly joins each neighbouring pair in one way), ``A_0`` also on the base placement. The first value
    computed for a key is kept and every cut is made of the kept values: the same segment computed in another
    assembly (another place in the world) can differ in the last bit, and a chain with twice the same key (``J J``
    twice) would otherwise have a cut of its own values that no later look-up of the same chain gives."""

    def __init__(self, placement: np.ndarray | None) -> None:
        self.placement = placement
        self.steps: dict[tuple, Segment] = {}  # per modules and entry connector
        self.kinds: dict[str, bool | None] = {}  # module ID: has a joint (None: not one revolute joint at most)

    def cut(self, assembly: Any) -> Cut | None:
        if assembly.base_connector[0] != 0:
            return None
        entries = [assembly.base_connector[1]] + [c[3] for c in assembly.connections]
        return self.cut_serial(tuple(assembly.module_ids), assembly.modules, entries, lambda: assembly)

    def cut_serial(
        self, ids: tuple[str, ...], modules: Sequence[Any], entries: Sequence[str], assembly: Callable[[], Any]
    ) -> Cut | None:
        kinds, get = self.kinds, self.steps.get
        found, a = [], 0
        for b, m in enumerate(ids):
            kind = kinds[m] if m in kinds else self._kind(m, modules[b])
            if kind:  # a joint: the segment from the previous one (or the base) ends here
                found.append(get((ids[a : b + 1], entries[a])))
                a = b
            elif kind is None:
                return None
        if not found:
            return None
        found.append(get((ids[a:], entries[a])))
        if None not in found:
            return Cut.of_segments(found)  # type: ignore[arg-type]
        segments = chain_segments(assembly(), self.placement)
        if segments is None:
            return None
        joints = [i for i, m in enumerate(ids) if kinds[m]]
        starts, ends = [0, *joints], [*joints, len(ids) - 1]
        keys = [(ids[a : b + 1], entries[a]) for a, b in zip(starts, ends, strict=True)]
        keep = self.steps.setdefault  # a segment known stays: the cut is the known segments' (see the class)
        return Cut.of_segments([keep(k, seg) for k, seg in zip(keys, segments, strict=True)])

    def _kind(self, m: str, module: Any) -> bool | None:
        plain = len(module.joints) <= 1 and all(j.type in REVOLUTE for j in module.joints)
        kind = self.kinds[m] = bool(module.joints) if plain else None
        return kind


@dataclass(frozen=True)
class Refusal:
    """A goal proven out of reach of an assembly: which goal (index), the boxes its own proof took (0: refused by
    a certificate of its family)."""

    goal: int
    boxes: int


class FamilyProofs:
    """Per goal (4x4 pose, tolerance) and family, the certificates of proven chains (see the module docstring);
    :meth:`refusal` answers for one assembly."""

    def __init__(self, goals: list[tuple[np.ndarray, Any]], budget: int, placement: np.ndarray | None = None) -> None:
        self.goals = [(np.asarray(g, dtype=float), tol) for g, tol in goals]
        self.segments = _Segments(placement)
        self.budget = int(budget)
        self.cover = cover_kernel.kernel()  # the certificates' look-ups' screen (None: numpy's alone)
        self.certificates: dict[tuple[int, tuple[bytes, ...]], Certificates] = {}
        self.families: dict[tuple[bytes, ...], list[Certificates]] = {}  # per family, the certificates per goal
        self.covered = [Refusal(k, 0) for k in range(len(self.goals))]
        self.proofs = 0  # branch-and-bound runs (for the benchmarks)
        self.lessons: list[Lesson] | None = None  # what it learns, kept for others once :meth:`share` is called
        # asked before each proof: take the other shards' certificates that came (True: some did; None: none to ask)
        self.inbox: Callable[[], bool] | None = None
        self.witnesses: dict[tuple[int, tuple[bytes, ...]], list[np.ndarray]] = {}  # per goal and family
        self.starts: dict[tuple[int, tuple[bytes, ...]], list[tuple[Any, Boxes]]] = {}  # the same
        self.started, self.kept_boxes = 0, 0  # proofs started from kept boxes (for the benchmarks); boxes kept
        self.distances = Distances(WIDEN, ROTATION_SLACK)  # between certificates of a family: the widening's levels
        self.scores: dict[tuple[bytes, ...], list[float]] = {}  # per family, goal: the last proof's margin (-1: none)

    @classmethod
    def of(cls, ctx: Any) -> FamilyProofs:
        """A search task's (a ``filter_state.TaskContext``: its goals, base placement and proof budget), made on
        first use and kept on it."""
        if ctx.family_proofs is None:
            goals = [(g.world, g.pose.tolerance) for g in ctx.goals]
            ctx.family_proofs = cls(goals, ctx.config.proof_budget, ctx.placement)
        return ctx.family_proofs

    def share(self) -> list[Lesson]:
        """What it has learnt since the last call (the first call starts keeping it)."""
        out, self.lessons = self.lessons or [], []
        return out

    def learn(self, lessons: list[Lesson]) -> None:
        """Take another's certificates as its own (sound: a certificate refuses what its family member's proof
        would, whoever proved it)."""
        for lesson in lessons:
            if len(lesson.translations) != len(lesson.rotations):
                continue
            self.distances.note(self.family_of(lesson.rotations), lesson.translations)
            self._certificates(lesson.goal, lesson.rotations).add(lesson.translations, lesson.margin)

    def cut(self, assembly: Any) -> Cut | None:
        """:func:`cut_chain` of an assembly at the placement given, from the segments seen where it can."""
        return self.segments.cut(assembly)

    def cut_serial(self, ids: tuple[str, ...], join: Any, assembly: Callable[[], Any]) -> Cut | None:
        """:meth:`cut` of the serial assembly of ``ids`` from how its modules join (``join.modules``, the connectors
        ``join.entries`` each is entered by: a ``filter_state.SerialJoin``); ``assembly()`` builds the assembly,
        called only if a segment was not seen before."""
        return self.segments.cut_serial(ids, join.modules, join.entries, assembly)

    def refusal(
        self, cut: Cut, reached: set[int] | None = None, witnessed: dict[int, np.ndarray] | None = None
    ) -> Refusal | None:
        """A goal no configuration of ``cut``'s chain reaches: the first (task order) a certificate of its family
        covers, else the first its own proof refuses, tried by the margins of their last proofs in the family
        (largest first, undecided last, task order on a tie: the largest margin covers the most chains;
        ``obstacles_4``'s proofs 438 -> 342); None if none. The goals (indices) found reached within the proofs'
        slacks (a witness: no sound bound refuses them) are added to ``reached``.

        A goal that one of the last witnesses of the family's proofs reaches on this chain too (tried by the chain's
        own poses, :func:`~.reach_proof.reaches`) is not proven: its proof would end undecided (a configuration
        within the slacks lies in a box no bound refuses), at a witness or sooner. The configurations found so (in
        the joint angles of ``cut.chain``) are put in ``witnessed`` per goal, where given. Before each proof the
        certificates other shards sent since are taken (:attr:`inbox`, where set): if one covers the chain, the first
        goal one covers is the answer (a shard proved chains that another's certificate, made during this evaluation,
        covered: up to 11 of ~200 proofs a shard)."""
        found = self.family_of(cut.rotations)
        for k, certs in enumerate(found):
            if certs.size and certs.covers(cut, self.cover):
                return self.covered[k]
        slack = ROTATION_SLACK * (cut.gaps + 1)  # (+ 1: the merged joints' error, AXIAL)
        scores = self.scores.get(cut.rotations)
        if scores is None:
            scores = self.scores[cut.rotations] = [0.0] * len(found)
        for k in sorted(range(len(found)), key=scores.__getitem__, reverse=True):  # (stable: task order on a tie)
            certs, (goal, tolerance) = found[k], self.goals[k]
            seen = self.witnesses.setdefault((k, cut.rotations), [])
            witness = reaching(_steps(cut), np.array(seen), goal, tolerance) if seen else None
            if witness is not None:
                scores[k] = -1.0
                if reached is not None:
                    reached.add(k)
                if witnessed is not None:
                    witnessed[k] = witness
                continue
            if self.inbox is not None and self.inbox():  # (another shard's certificates came since the look-up)
                learnt = self.certified(cut)
                if learnt is not None:
                    return learnt
            self.proofs += 1
            new: list[np.ndarray] = []
            proof = self._prove(k, cut, new)
            scores[k] = -1.0 if proof is None else proof.margin
            if proof is not None:
                if proof.margin > slack:
                    self._add(certs, k, cut, proof.margin - slack)
                return Refusal(k, proof.boxes)
            if new and len(new[0]) == cut.gaps - 1:  # (the same joints as the cut's, none merged besides)
                seen.insert(0, new[0])
                del seen[WITNESSES:]
                if witnessed is not None:
                    witnessed[k] = new[0]
            if new and reached is not None:
                reached.add(k)
        return None

    def _prove(self, k: int, cut: Cut, witnesses: list[np.ndarray]) -> Proof | None:
        """:func:`~.reach_proof.pose_proof` of goal ``k`` for ``cut``'s chain, started from the kept boxes of a proven
        chain of its family within their floor (:meth:`_near`; why: most proofs are of chains a little beyond a
        certificate's margin). Undecided so, it is not run again from the whole turn: such reruns ended undecided too
        (a box centre near the goal, mostly) in 26 of 26 cases on ``five_joints`` and 17 of 18 on ``obstacles_4``,
        ~2,000-3,700 boxes each (s49: the proofs' boxes 630,068 -> 576,360 and 564,319 -> 512,032, no refusal lost
        in either search)."""
        (goal, tolerance), levels = self.goals[k], self.distances.levels(cut.gaps)  # (the widening's, see widening)
        kept: list[Boxes] = []
        start = self._near(k, cut)
        proof = pose_proof(cut.chain, goal, tolerance, self.budget, widen=WIDEN, widen_budget=WIDEN_BUDGET,
                           witnesses=witnesses, start=start, kept=kept, levels=levels)  # fmt: skip
        self.started += start is not None
        if proof is not None:
            starts = self.starts.setdefault((k, cut.rotations), [])
            starts.insert(0, (cut.rows, kept[-1]))
            self.kept_boxes += len(kept[-1].excess) - sum(len(b.excess) for _, b in starts[STARTS:])
            del starts[STARTS:]
            if self.kept_boxes > MAX_KEPT_BOXES:
                self.starts, self.kept_boxes = {}, 0
        return proof

    def _near(self, k: int, cut: Cut) -> tuple[Boxes, float] | None:
        """The kept :class:`~.reach_proof.Boxes` of goal ``k`` and ``cut``'s family nearest ``cut`` (``d``: the
        certificates' metric and allowance, below their floor: the TCPs stay within ``d``) with ``d``, or None."""
        best, slack, rows = None, ROTATION_SLACK * (cut.gaps + 1), cut.rows  # (:func:`distance`: numpy's sum)
        for t, boxes in self.starts.get((k, cut.rotations), ()):
            d = distance(t, rows, min(boxes.floor, math.inf if best is None else best[1]) - slack) + slack
            if d < boxes.floor and (best is None or d < best[1]):
                best = (boxes, d)
        return best

    def certified(self, cut: Cut) -> Refusal | None:
        """The first goal (task order) a certificate of ``cut``'s family covers (None: none does; :meth:`refusal`
        would prove the goals): :meth:`refusal`'s answer where that is a look-up."""
        for k, certs in enumerate(self.family_of(cut.rotations)):
            if certs.size and certs.covers(cut, self.cover):
                return self.covered[k]
        return None

    def family(self, cut: Cut) -> list[Any]:
        """The certificates of ``cut``'s family per goal (the very lists :meth:`certified` reads; each has ``size``,
        ``points``, ``margins``, ``last``: the one that covered last, and ``forgotten``)."""
        return self.family_of(cut.rotations)

    def family_of(self, rotations: tuple[bytes, ...]) -> list[Any]:
        """:meth:`family` of the cuts of these rotations (``Cut.rotations``), without a cut."""
        found = self.families.get(rotations)
        if found is None:
            found = self.families[rotations] = [self._certificates(k, rotations) for k in range(len(self.goals))]
        return found

    def _add(self, certs: Certificates, k: int, cut: Cut, margin: float) -> None:
        self.distances.note(self.family_of(cut.rotations), cut.translations)
        certs.add(cut.translations, margin)
        if self.lessons is not None:
            self.lessons.append(Lesson(k, cut.rotations, cut.translations, margin))

    def _certificates(self, k: int, rotations: tuple[bytes, ...]) -> Certificates:
        key = (k, rotations)
        certs = self.certificates.get(key)
        if certs is None:
            certs = self.certificates[key] = Certificates(len(rotations), MAX_CERTIFICATES)
        return certs
