"""SearchResult: what a configuration search found, how (funnel, history) and how fast; JSON round trip."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from timor_core.common import jsonfields as jf
from timor_core.common.fileio import atomic_write_text
from timor_core.errors import FormatError, InputError
from timor_core.search.filtering.filters import Funnel, GoalIK
from timor_core.task.feedback import held_goal_feedback
from timor_core.task.goals import GOAL_TYPES, Pause, ReturnTo

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.model.db import ModulesDB
    from timor_core.search.evaluation.evaluate import Evaluation
    from timor_core.task import Task

__all__ = ["SearchResult", "RESULT_VERSION", "task_goal_records"]

RESULT_VERSION = 1


@dataclass
class SearchResult:
    """The outcome of :meth:`Optimizer.optimize`.

    Attributes:
        optimizer: the optimizer's description (``"ExhaustiveSearch"``, its settings in ``settings``).
        task_id, db_name, cost: the task's ID, the module set's name, the cost descriptor.
        best_ids, best_cost, best_goals, best_seq: the best valid assembly (None if none was found), its cost,
            its per-goal IK solutions (``q``, ``success``, ``reason``) and its position in the sequence (the
            space index for the exhaustive search).
        funnel: per-filter counts (entered, passed, reasons, time).
        history: points ``{"evaluations", "time", "best_cost"}``: one at each improvement, plus about one per
            second (for plots of the best cost and of throughput over time).
        improvements: ``{"evaluations", "time", "cost", "ids", "seq"}`` at each improvement of the best.
        evaluations: assemblies processed (every filter outcome, including bound skips).
        valid: assemblies that passed every filter.
        wall_time: seconds; cpu_time: CPU seconds spent evaluating, summed over the workers.
        workers: processes used.
        stopped: ``"exhausted"`` (the whole sequence), ``"max_evaluations"``, ``"max_time"``, ``"interrupted"``,
            ``"canceled"`` (a caller's stop event) or ``"unreachable"`` (a goal lies beyond every assembly's reach,
            proven before enumerating: ``settings["unreachable"]`` says which).
        next_seq: where a search over the same sequence would continue (every position before it is done).
        space: a description of the search space (fingerprint, count, options) or None.
        settings: the optimizer's settings (filter config, seed, ...).
        task_goals: the task's goals in task order as :func:`task_goal_records` writes them (ID, type, a pause's
            duration, a returnTo's goal), for :meth:`goal_report`; None in a result written before they were kept.
    """

    optimizer: str
    task_id: str
    db_name: str
    cost: str
    best_ids: tuple[str, ...] | None = None
    best_cost: float | None = None
    best_goals: dict[str, GoalIK] = field(default_factory=dict)
    best_seq: int | None = None
    funnel: Funnel = field(default_factory=lambda: Funnel(()))
    history: list[dict] = field(default_factory=list)
    improvements: list[dict] = field(default_factory=list)
    evaluations: int = 0
    valid: int = 0
    wall_time: float = 0.0
    cpu_time: float = 0.0
    workers: int = 1
    stopped: str = "exhausted"
    next_seq: int | None = None
    space: dict | None = None
    settings: dict = field(default_factory=dict)
    task_goals: list[dict] | None = None

    # -- convenience -------------------------------------------------------------------------------
    @property
    def found(self) -> bool:
        """True if a valid assembly was found."""
        return self.best_ids is not None

    @property
    def rate(self) -> float:
        """Assemblies per second (wall clock)."""
        return self.evaluations / self.wall_time if self.wall_time > 0 else math.nan

    @property
    def best_q(self) -> dict[str, list[float] | None]:
        """Per pose goal, the best assembly's configuration."""
        return {k: g.q for k, g in self.best_goals.items()}

    def best_assembly(self, db: ModulesDB, base_placement=None) -> ModuleAssembly:
        """The best assembly built from ``db`` (InputError, a ValueError, if none was found)."""
        from timor_core.model.assembly import ModuleAssembly

        if self.best_ids is None:
            raise InputError(f"the search for task {self.task_id!r} found no valid assembly")
        return ModuleAssembly.from_serial_modules(db, self.best_ids, base_placement)

    def consider(self, ev: Evaluation) -> bool:
        """Take a valid evaluation as the best if its (cost, seq) is smaller; True if it was taken."""
        if not ev.valid or ev.cost is None:
            return False
        if self.best_cost is not None and (ev.cost, ev.seq) >= (self.best_cost, self.best_seq):
            return False
        self.best_ids, self.best_cost, self.best_goals, self.best_seq = ev.ids, ev.cost, dict(ev.goals), ev.seq
        return True

    def summary(self) -> str:
        """A few readable lines: the best assembly, the numbers, the funnel."""
        head = (
            f"{self.optimizer} on task {self.task_id!r} ({self.db_name}, cost {self.cost or '0'}):"
            f" {self.evaluations} assemblies in {self.wall_time:.2f} s ({self.rate:.1f}/s, {self.workers} worker(s),"
            f" {self.stopped}), {self.valid} valid"
        )
        best = (
            f"best: {' '.join(self.best_ids)} (cost {self.best_cost:.6g})"
            if self.best_ids is not None
            else "no valid assembly found" + "".join(f"; {why}" for why in self.settings.get("unreachable", ()))
        )
        return "\n".join((head, best, self.funnel.summary()))

    def goal_report(self) -> list[dict]:
        """Per goal of the task, in task order, what this result says of the best assembly (none found: ``[]``):
        ``{"id", "type", "reached", "q", "reason"}`` as ``timor solve`` reports them. Pose goals (at, reach,
        follow): the search's IK (``q``, or why not); pause and returnTo: what ``task.feedback.held_goal_feedback``
        says (a returnTo has the configuration of the goal it returns to). A result without ``task_goals``
        (written before they were kept): the pose goals only."""
        if self.best_ids is None:
            return []
        records = self.task_goals if self.task_goals is not None else [{"id": k, "type": ""} for k in self.best_goals]
        out: list[dict] = []
        by_id: dict[str, dict] = {}
        for rec in records:
            gid, kind = rec["id"], rec["type"]
            if kind == "pause":
                entry = held_goal_feedback(Pause(gid, duration=float(rec.get("duration", 0.0))), by_id)
            elif kind == "returnTo":
                entry = held_goal_feedback(ReturnTo(gid, return_to=rec.get("return_to")), by_id)
            elif gid in self.best_goals:
                g = self.best_goals[gid]
                entry = {"id": gid, "reached": g.success, "q": g.q, "reason": g.reason}
            else:
                entry = {"id": gid, "reached": False, "q": None, "reason": f"goal type {kind!r}: not checked"}
            by_id[gid] = entry
            out.append({"type": kind, **entry})
        return out

    def __repr__(self) -> str:
        best = f"{self.best_ids} cost {self.best_cost:.6g}" if self.found else "none"
        return f"SearchResult({self.optimizer}, best={best}, evaluations={self.evaluations}, stopped={self.stopped!r})"

    # -- JSON --------------------------------------------------------------------------------------
    def to_json_data(self) -> dict:
        """The result as JSON data; ``task_goals`` only where the result has them (a result read from a file
        written before they were kept writes back as it was)."""
        data = {
            "version": RESULT_VERSION,
            "optimizer": self.optimizer,
            "task": self.task_id,
            "db": self.db_name,
            "cost": self.cost,
            "best": None
            if self.best_ids is None
            else {
                "ids": list(self.best_ids),
                "cost": self.best_cost,
                "seq": self.best_seq,
                "goals": {k: g.to_json() for k, g in self.best_goals.items()},
            },
            "funnel": self.funnel.to_json(),
            "history": self.history,
            "improvements": self.improvements,
            "evaluations": self.evaluations,
            "valid": self.valid,
            "wall_time": self.wall_time,
            "cpu_time": self.cpu_time,
            "workers": self.workers,
            "stopped": self.stopped,
            "next_seq": self.next_seq,
            "space": self.space,
            "settings": self.settings,
        }
        if self.task_goals is not None:
            data["task_goals"] = self.task_goals
        return data

    @classmethod
    def from_json_data(cls, data: Any, file: Path | None = None) -> SearchResult:
        """A result from its JSON; FormatError/ValidationError naming ``file``, the JSON path and the value."""
        if not isinstance(data, dict):
            raise FormatError("expected a JSON object", file=file, path="$", value=data)
        d = data
        result_keys = {"optimizer", "funnel", "evaluations"} & set(d)
        if not result_keys and not isinstance(d.get("version"), int):  # another kind of file: say which
            raise FormatError(
                f"not a search result (what `timor search -o` writes){_looks_like(d)}", file=file, path="$"
            )
        if d.get("version") != RESULT_VERSION:
            raise FormatError(
                f"unsupported search result version (expected {RESULT_VERSION})",
                file=file,
                path="$.version",
                value=d.get("version"),
            )
        try:
            return _read(d)
        except InputError as exc:
            raise exc.located(file=file) from None

    def to_json_file(self, path: str | Path) -> Path:
        """Write the result as JSON, atomically (temp file, then rename)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(self.to_json_data(), indent=1, allow_nan=False) + "\n")
        return path

    @classmethod
    def from_json_file(cls, path: str | Path) -> SearchResult:
        path = Path(path)
        return cls.from_json_data(jf.load_json_file(path), file=path)


def task_goal_records(task: Task) -> list[dict]:
    """The goals of ``task`` in task order as a result keeps them (:attr:`SearchResult.task_goals`): ``{"id",
    "type"}``, a pause's ``duration`` and a returnTo's ``return_to`` (its goal; left out: the start)."""
    out: list[dict] = []
    for g in task.goals:
        rec: dict[str, Any] = {"id": g.id, "type": g.type_name}
        if isinstance(g, Pause):
            rec["duration"] = g.duration
        elif isinstance(g, ReturnTo) and g.return_to is not None:
            rec["return_to"] = g.return_to
        out.append(rec)
    return out


def _task_goals(data: Any, path: str) -> list[dict] | None:
    """The ``task_goals`` of a result file (None if it has none), each checked: ID, type (a task's goal type), the
    pause's duration, the goal a returnTo returns to."""
    if data is None:
        return None
    out: list[dict] = []
    for i, rec in enumerate(jf.array(data, path)):
        at = f"{path}[{i}]"
        d = jf.obj(rec, at)
        goal: dict[str, Any] = {"id": jf.string(jf.req(d, "id", at), f"{at}.id")}
        goal["type"] = jf.string(jf.req(d, "type", at), f"{at}.type")
        if goal["type"] not in GOAL_TYPES:
            raise FormatError(f"unknown goal type (expected one of {', '.join(GOAL_TYPES)})", path=f"{at}.type",
                              value=goal["type"])  # fmt: skip
        if "duration" in d:
            goal["duration"] = jf.number(d["duration"], f"{at}.duration", min_value=0.0)
        if d.get("return_to") is not None:
            goal["return_to"] = jf.string(d["return_to"], f"{at}.return_to")
        out.append(goal)
    return out


def _looks_like(d: dict) -> str:
    """What a JSON object that is no search result looks like, for the error (`` (it looks like a task)``)."""
    kinds = (
        ("goals", "a task"),
        ("trajectory", "a solution"),
        ("moduleOrder", "an assembly"),
        ("modules", "a module set"),
    )
    return next((f"; it looks like {kind}" for key, kind in kinds if key in d), "")


_POINT_COUNTS = ("evaluations", "generation", "trial")
_POINT_NUMBERS = ("time", "best_fitness_cost", "median_cost")
_POINT_COSTS = ("best_cost", "trial_best", "cost")  # None: no valid assembly yet
_GA_POINT = ("generation", "best_fitness_cost", "median_cost")  # a GA generation's point (it has a "trial")


def _read(d: dict) -> SearchResult:
    """A result's fields, each checked where it is (a result file is input: edited, cut, from elsewhere)."""
    result = SearchResult(
        optimizer=jf.string(jf.req(d, "optimizer", "$"), "$.optimizer"),
        task_id=jf.string(jf.req(d, "task", "$"), "$.task", nonempty=False),  # names, only shown: a set made from data
        db_name=jf.string(jf.req(d, "db", "$"), "$.db", nonempty=False),  # in Python has none (ModulesDB.name "")
        cost=jf.string(jf.req(d, "cost", "$"), "$.cost", nonempty=False),
        funnel=Funnel.from_json(jf.req(d, "funnel", "$"), "$.funnel"),
        history=_points(d.get("history", []), "$.history"),
        improvements=_points(d.get("improvements", []), "$.improvements"),
        evaluations=jf.count(jf.req(d, "evaluations", "$"), "$.evaluations"),
        valid=jf.count(d.get("valid", 0), "$.valid"),
        wall_time=jf.number(d.get("wall_time", 0.0), "$.wall_time", min_value=0.0),
        cpu_time=jf.number(d.get("cpu_time", 0.0), "$.cpu_time", min_value=0.0),
        workers=jf.count(d.get("workers", 1), "$.workers"),
        stopped=jf.string(d.get("stopped", "exhausted"), "$.stopped"),
        next_seq=None if d.get("next_seq") is None else jf.count(d["next_seq"], "$.next_seq"),
        space=None if d.get("space") is None else jf.obj(d["space"], "$.space"),
        settings=_settings(d.get("settings", {})),
        task_goals=_task_goals(d.get("task_goals"), "$.task_goals"),
    )
    best = d.get("best")
    if best is not None:
        best = jf.obj(best, "$.best")
        ids = jf.array(jf.req(best, "ids", "$.best"), "$.best.ids")
        result.best_ids = tuple(jf.string(m, f"$.best.ids[{i}]") for i, m in enumerate(ids))
        result.best_cost = jf.number(jf.req(best, "cost", "$.best"), "$.best.cost")
        result.best_seq = None if best.get("seq") is None else _seq(best["seq"], "$.best.seq")
        goals = jf.obj(best.get("goals", {}), "$.best.goals")
        result.best_goals = {str(k): GoalIK.from_json(v, f"$.best.goals.{k}") for k, v in goals.items()}
    return result


def _seq(value: Any, path: str) -> int:
    """A position in the search's sequence, or -1: an evaluation made outside a search (``evaluate()``'s default,
    which ``SearchResult.consider`` keeps and ``to_json_file`` writes)."""
    return -1 if type(value) is int and value == -1 else jf.count(value, path)


def _points(value: Any, path: str) -> list[dict]:
    """History or improvement points: objects whose counts, times and costs are what plots and resumes read."""
    out = []
    for i, point in enumerate(jf.array(value, path)):
        at = f"{path}[{i}]"
        point = jf.obj(point, at)
        for key in ("evaluations", *(_GA_POINT if "trial" in point else ())):  # what the plots read
            jf.req(point, key, at)
        for key in _POINT_COUNTS:
            if key in point:
                jf.count(point[key], f"{at}.{key}")
        if point.get("seq") is not None:
            _seq(point["seq"], f"{at}.seq")
        for key in (*_POINT_NUMBERS, *_POINT_COSTS):
            if point.get(key) is not None or (key in point and key in _POINT_NUMBERS):
                jf.number(point[key], f"{at}.{key}")
        if "ids" in point:
            for j, m in enumerate(jf.array(point["ids"], f"{at}.ids")):
                jf.string(m, f"{at}.ids[{j}]")
        out.append(point)
    return out


def _settings(value: Any) -> dict:
    """The optimizer's settings: kept as they are, except what a summary or a plot reads."""
    settings = jf.obj(value, "$.settings")
    if "penalty" in settings:  # GAConfig's range: 0 (a GA that does not tell invalid from valid) to 1e300
        jf.number(settings["penalty"], "$.settings.penalty", min_value=0.0)
    if "unreachable" in settings:
        for i, why in enumerate(jf.array(settings["unreachable"], "$.settings.unreachable")):
            jf.string(why, f"$.settings.unreachable[{i}]")
    return dict(settings)
