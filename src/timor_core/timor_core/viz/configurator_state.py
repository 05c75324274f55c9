"""The configurator's page-independent logic: the design, its undo history, checks and a background GA run.

Nothing here imports viser; the page (:mod:`.configurator`) only renders this state and forwards clicks to it.

>>> from timor_core import ModulesDB
>>> state = DesignState(ModulesDB.from_name("robco_like"))
>>> state.set_slot(1, "J")
>>> state.add_slot("L_250")
>>> state.design.chain
('base', 'J', 'L_250', 'gripper')
>>> state.undo()
True
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from timor_core.errors import TimorError
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB
from timor_core.task import Task
from timor_core.task.costs import CostFunction
from timor_core.task.feedback import assembly_cost, format_feedback, solve_feedback
from timor_core.viz.configurator_optimize import (
    ConfiguratorError,
    OptimizeProgress,
    OptimizeRun,
    OptimizeSettings,
    ga_seed_genes,
)

__all__ = [
    "ConfiguratorError",
    "Attachment",
    "Design",
    "DesignState",
    "GoalResult",
    "CheckResult",
    "check_design",
    "OptimizeSettings",
    "OptimizeProgress",
    "OptimizeRun",
    "ga_seed_genes",
]

logger = logging.getLogger(__name__)


# -- the design ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Attachment:
    """A module attached to a free connector: ``connector`` of assembly module ``parent`` takes ``module``."""

    parent: int
    connector: str
    module: str
    module_connector: str | None = None


@dataclass(frozen=True)
class Design:
    """A serial chain (base first) plus modules attached to free connectors (indexed after the chain)."""

    chain: tuple[str, ...]
    attachments: tuple[Attachment, ...] = ()

    def to_json(self) -> dict:
        """The design as plain JSON."""
        return {
            "chain": list(self.chain),
            "attachments": [
                {
                    "parent": a.parent,
                    "connector": a.connector,
                    "module": a.module,
                    "module_connector": a.module_connector,
                }
                for a in self.attachments
            ],
        }

    @property
    def size(self) -> int:
        """Number of module instances."""
        return len(self.chain) + len(self.attachments)

    def build(self, db: ModulesDB, base_placement: np.ndarray | None = None) -> ModuleAssembly:
        """The assembly of this design (raises a TimorError saying which modules do not fit)."""
        assembly = ModuleAssembly.from_serial_modules(db, self.chain, base_placement)
        for a in self.attachments:
            assembly.add(a.module, (a.parent, a.connector), a.module_connector)
        return assembly

    def remapped(self, mapping: Callable[[int], int | None], chain: Sequence[str]) -> Design:
        """The design with a new chain, attachments re-indexed by ``mapping`` (None drops one and its subtree)."""
        new_index: dict[int, int | None] = {i: mapping(i) for i in range(len(self.chain))}
        kept: list[Attachment] = []
        for k, a in enumerate(self.attachments):
            parent = new_index.get(a.parent)
            if parent is None:
                new_index[len(self.chain) + k] = None
                continue
            new_index[len(self.chain) + k] = len(chain) + len(kept)
            kept.append(replace(a, parent=parent))
        return Design(tuple(chain), tuple(kept))


def _default_chain(db: ModulesDB) -> tuple[str, ...]:
    chain = [db.bases[0].id] if db.bases else [next(iter(db)).id]
    if db.joints:
        chain.append(db.joints[0].id)
    if db.end_effectors:
        chain.append(db.end_effectors[0].id)
    return tuple(chain)


class DesignState:
    """The design being edited, its assembly (or why it cannot be built) and the undo/redo history."""

    def __init__(
        self,
        db: ModulesDB,
        design: Design | Sequence[str] | None = None,
        base_placement: np.ndarray | None = None,
    ) -> None:
        self.db = db
        self.base_placement = base_placement
        if design is None:
            design = Design(_default_chain(db))
        elif not isinstance(design, Design):
            design = Design(tuple(str(m) for m in design))
        self._design = design
        self._undo: list[Design] = []
        self._redo: list[Design] = []
        self._built: tuple[Design, ModuleAssembly | None, str] | None = None

    # -- reading -----------------------------------------------------------------------------------
    @property
    def design(self) -> Design:
        """The current design."""
        return self._design

    def _build(self) -> tuple[ModuleAssembly | None, str]:
        if self._built is None or self._built[0] != self._design:
            try:
                self._built = (self._design, self._design.build(self.db, self.base_placement), "")
            except TimorError as exc:
                self._built = (self._design, None, str(exc))
        return self._built[1], self._built[2]

    @property
    def assembly(self) -> ModuleAssembly | None:
        """The current design's assembly, or None if it cannot be built (see :attr:`error`)."""
        return self._build()[0]

    @property
    def error(self) -> str:
        """Why the current design cannot be built ("" if it can)."""
        return self._build()[1]

    @property
    def can_undo(self) -> bool:
        """True if there is an edit to undo."""
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        """True if there is an undone edit to redo."""
        return bool(self._redo)

    def slot_options(self, k: int) -> tuple[str, ...]:
        """Module IDs offered for chain slot ``k``: bases for slot 0, every other module elsewhere."""
        if k == 0 and self.db.bases:
            return tuple(m.id for m in self.db.bases)
        return tuple(m.id for m in self.db if not m.is_base)

    def free_connectors(self) -> list[tuple[int, str]]:
        """Connectors of the built assembly that are neither used nor the base connector, as (index, connector)."""
        assembly = self.assembly
        if assembly is None:
            return []
        used = {(i, ci) for i, ci, _, _ in assembly.connections} | {(j, cj) for _, _, j, cj in assembly.connections}
        used.add(assembly.base_connector)
        return [
            (i, c.id)
            for i, m in enumerate(assembly.modules)
            for c in m.connectors.values()
            if (i, c.id) not in used and not c.is_base and not c.is_eef
        ]

    def fitting_modules(self, index: int, connector: str) -> tuple[str, ...]:
        """Modules with exactly one connector that fits ``connector`` of assembly module ``index``."""
        assembly = self.assembly
        if assembly is None or not 0 <= index < len(assembly):
            return ()
        parent = assembly.module_ids[index]
        out = []
        for m in self.db:
            options = [cb for ca, cb in self.db.connections_between(parent, m.id) if ca == connector]
            if len(options) == 1:
                out.append(m.id)
        return tuple(out)

    # -- editing -----------------------------------------------------------------------------------
    def _set(self, design: Design) -> bool:
        if design == self._design:
            return False
        self._undo.append(self._design)
        self._redo.clear()
        self._design = design
        return True

    def replace(self, design: Design | Sequence[str]) -> bool:
        """Make ``design`` (or a chain of module IDs) the current design, undoably; False if nothing changed."""
        if not isinstance(design, Design):
            design = Design(tuple(str(m) for m in design))
        for m in (*design.chain, *(a.module for a in design.attachments)):
            self.db.by_id(m)
        return self._set(design)

    def _check_module(self, module_id: str) -> str:
        self.db.by_id(module_id)
        return module_id

    def _check_slot(self, k: int, n: int) -> int:
        if not 0 <= k < n:
            raise ConfiguratorError(f"there is no slot {k}: the chain has slots 0..{n - 1}")
        return k

    def set_slot(self, k: int, module_id: str) -> bool:
        """Put ``module_id`` into chain slot ``k`` (attachments stay where they are)."""
        chain = list(self._design.chain)
        chain[self._check_slot(k, len(chain))] = self._check_module(module_id)
        return self._set(replace(self._design, chain=tuple(chain)))

    def add_slot(self, module_id: str, position: int | None = None) -> bool:
        """Insert a slot holding ``module_id`` at ``position`` (default: before a final end effector, else last)."""
        self._check_module(module_id)
        chain = list(self._design.chain)
        if position is None:
            ends_in_eef = bool(chain) and self.db.by_id(chain[-1]).is_end_effector and len(chain) > 1
            position = len(chain) - 1 if ends_in_eef else len(chain)
        if not 0 <= position <= len(chain):
            raise ConfiguratorError(f"cannot insert at position {position}: the chain has {len(chain)} slots")
        chain.insert(position, module_id)
        new = self._design.remapped(lambda i: i if i < position else i + 1, chain)
        return self._set(new)

    def remove_slot(self, k: int) -> bool:
        """Remove chain slot ``k`` and every module attached to it (the chain keeps at least one slot)."""
        chain = list(self._design.chain)
        self._check_slot(k, len(chain))
        if len(chain) == 1:
            raise ConfiguratorError("the chain needs at least one module")
        del chain[k]
        new = self._design.remapped(lambda i: None if i == k else (i if i < k else i - 1), chain)
        return self._set(new)

    def attach(self, index: int, connector: str, module_id: str, module_connector: str | None = None) -> bool:
        """Attach ``module_id`` to free ``connector`` of assembly module ``index``."""
        self._check_module(module_id)
        if (index, connector) not in self.free_connectors():
            raise ConfiguratorError(f"connector {connector!r} of module {index} is not a free connector of the design")
        candidate = replace(
            self._design,
            attachments=(*self._design.attachments, Attachment(index, connector, module_id, module_connector)),
        )
        candidate.build(self.db, self.base_placement)  # raises ConnectorError if it does not fit
        return self._set(candidate)

    def detach(self, k: int) -> bool:
        """Remove attachment ``k`` and everything attached to it."""
        n = len(self._design.chain)
        atts = self._design.attachments
        if not 0 <= k < len(atts):
            raise ConfiguratorError(f"there is no attachment {k}")
        dropped = {n + k}
        kept: list[Attachment] = []
        new_index: dict[int, int] = {i: i for i in range(n)}
        for j, a in enumerate(atts):
            if j == k or a.parent in dropped:
                dropped.add(n + j)
                continue
            new_index[n + j] = n + len(kept)
            kept.append(replace(a, parent=new_index[a.parent]))
        return self._set(Design(self._design.chain, tuple(kept)))

    def undo(self) -> bool:
        """Go back one edit; False if there is none."""
        if not self._undo:
            return False
        self._redo.append(self._design)
        self._design = self._undo.pop()
        return True

    def redo(self) -> bool:
        """Redo the last undone edit; False if there is none."""
        if not self._redo:
            return False
        self._undo.append(self._design)
        self._design = self._redo.pop()
        return True


# -- checking a design against the task ---------------------------------------------------------------


@dataclass(frozen=True)
class GoalResult:
    """One goal's verdict: reached or not, the configuration that reaches it, and why not."""

    id: str
    reached: bool
    q: tuple[float, ...] | None
    reason: str

    @property
    def text(self) -> str:
        """One readable line, as ``timor solve`` prints it."""
        if self.reached:
            return f"goal {self.id}: reached" + (f" ({self.reason})" if self.reason else "")
        return f"goal {self.id}: NOT reached: {self.reason}"


@dataclass(frozen=True)
class CheckResult:
    """The per-goal feedback of one design (what ``timor solve`` computes), with the cost."""

    design: Design
    goals: tuple[GoalResult, ...]
    cost: float
    cost_descriptor: str
    text: str
    seconds: float = 0.0

    @property
    def reached(self) -> int:
        """Number of goals reached."""
        return sum(1 for g in self.goals if g.reached)

    @property
    def all_reached(self) -> bool:
        """True if every goal is reached."""
        return self.reached == len(self.goals)

    def goal(self, goal_id: str) -> GoalResult:
        """The result of one goal by ID."""
        for g in self.goals:
            if g.id == goal_id:
                return g
        raise ConfiguratorError(f"no goal {goal_id!r} in the check result")

    @property
    def summary(self) -> str:
        """One line: goals reached and the cost."""
        return f"{self.reached} of {len(self.goals)} goal(s) reached; cost ({self.cost_descriptor}): {self.cost:.6g}"


def check_design(
    task: Task,
    assembly: ModuleAssembly,
    design: Design | None = None,
    *,
    seed: int | None = 0,
    cost: CostFunction | str | None = "mass",
) -> CheckResult:
    """Per-goal feedback of ``assembly`` for ``task`` by :func:`timor_core.task.feedback.solve_feedback` (same IK and
    reasons)."""

    cost_function = assembly_cost(cost)
    t0 = time.perf_counter()
    result = solve_feedback(task, assembly, seed=seed, cost=cost_function)
    goals = tuple(
        GoalResult(str(e["id"]), bool(e["reached"]), None if e["q"] is None else tuple(e["q"]), str(e["reason"]))
        for e in result["goals"]
    )
    descriptor = cost_function.descriptor()
    return CheckResult(
        design=design if design is not None else Design(tuple(assembly.module_ids)),
        goals=goals,
        cost=float(result["cost"]),
        cost_descriptor=descriptor or "0",
        text=format_feedback(task, assembly, result, descriptor),
        seconds=time.perf_counter() - t0,
    )
