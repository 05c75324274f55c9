"""Experiments of the Timor paper, reproduced with timor_core.

Experiment 1 (Külz, Mayer, Althoff: *Timor Python: A Toolbox for Industrial Modular Robotics*, 2023):
enumerate the search space of Althoff et al., Science Robotics 2019, on the IMPROV module set (32,768
six-DOF serial robots) and generate the URDF of every one. The paper reports 127 s, i.e. 3.9 ms per
assembly, with the reference toolbox on an Intel i7-11700KF (:data:`PAPER_EXP1`).

>>> from timor_core import ModulesDB
>>> from timor_core.paper.experiments import exp1
>>> result = exp1(ModulesDB.from_json_file("IMPROV/modules.json"))     # doctest: +SKIP
>>> result.count, result.seconds, result.ms_per_assembly                 # doctest: +SKIP
(32768, 0.24, 0.0074)

``timor paper exp1 --db IMPROV/modules.json [--json] [--limit N]`` runs the same from the command line.

Experiment 2: find the lightest robot of the RobCo-like module set for the paper's user-study task
(``user_study.json``: two goals, obstacles), once by the constrained exhaustive search over 177,155 assemblies
(at most 5 DOF, a joint first, at most one link between joints and before the end effector) with the
"lighter solution already found" bound, once by the genetic algorithm (13 genes, at most 6 DOF, 500
generations). The paper reports 5.5 min and 21.9 min per GA trial (:data:`PAPER_EXP2`). Every robot reported
is verified independently: the IK configurations found put the TCP within each goal's tolerance, free of
collisions and within the torque and position limits (:func:`timor_core.task.feedback.verify_goal_configurations`).
``timor paper exp2 --task user_study.json [--db robco_like] [--json] [-o DIR]`` runs it.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from itertools import chain

from timor_core.errors import InputError
from timor_core.export.formats.urdf import urdf_of_serial
from timor_core.limits import cap_workers, check_int
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB
from timor_core.search import (
    Budget,
    ExhaustiveSearch,
    FilterConfig,
    GeneticSearch,
    Optimizer,
    SearchSpaceError,
    SerialSpace,
    paper_exp2_options,
    science2019_options,
)
from timor_core.search.evaluation.result import SearchResult
from timor_core.search.genetic.ga import trial_histories
from timor_core.task import Task
from timor_core.task.feedback import verify_goal_configurations

__all__ = [
    "EXP1_COUNT",
    "EXP2_COUNT",
    "PAPER_EXP1",
    "PAPER_EXP2",
    "Exp1Result",
    "Exp2Run",
    "Exp2Result",
    "exp1",
    "exp1_space",
    "exp2",
    "exp2_space",
]

EXP1_COUNT = 32_768
"""Size of the Science Robotics 2019 IMPROV space."""

PAPER_EXP1 = {"count": EXP1_COUNT, "seconds": 127.0, "ms_per_assembly": 3.9, "cpu": "Intel i7-11700KF"}
"""Experiment 1 as the Timor paper reports it (reference toolbox)."""


@dataclass(frozen=True)
class Exp1Result:
    """What experiment 1 measured: URDFs generated, wall-clock seconds, milliseconds per assembly."""

    count: int
    seconds: float
    ms_per_assembly: float

    def to_json(self) -> dict:
        """``{"count", "seconds", "ms_per_assembly"}``."""
        return asdict(self)

    def summary(self) -> str:
        """One readable line, with the paper's figures for comparison."""
        p = PAPER_EXP1
        return (
            f"experiment 1: {self.count} URDFs of the Science Robotics 2019 IMPROV space in {self.seconds:.2f} s"
            f" ({self.ms_per_assembly:.3f} ms per assembly; paper, reference toolbox on an {p['cpu']}:"
            f" {p['count']} in {p['seconds']:.0f} s, {p['ms_per_assembly']} ms per assembly)"
        )


def exp1_space(db: ModulesDB) -> SerialSpace:
    """The Science Robotics 2019 space on ``db``; InputError unless ``db`` is the IMPROV set (or alike).

    ``db`` must hold every module the space uses (base '1', PB21/PB23, the links, end effector L3)
    and give exactly 32,768 assemblies; the five modules the space leaves out may be absent.
    """
    opt = science2019_options()
    needed = dict.fromkeys(
        chain(opt.bases or (), opt.end_effectors or (), *opt.classes.values(), *(opt.joint_sequences or ()))
    )
    where = f"module set {db.name!r}"
    missing = [m for m in needed if m not in db]
    if missing:
        raise InputError(
            f"{where} is not the IMPROV set: the Science Robotics 2019 space needs modules"
            f" {', '.join(needed)}; missing: {', '.join(missing)}",
            file=db.source,
        )
    opt = replace(opt, exclude=tuple(m for m in opt.exclude if m in db))  # left out anyway: may be absent
    try:
        space = SerialSpace(db, opt)
    except SearchSpaceError as exc:
        raise InputError(f"{where} does not fit the Science Robotics 2019 space: {exc}", file=db.source) from None
    if space.count != EXP1_COUNT:
        raise InputError(
            f"{where} gives {space.count} assemblies in the Science Robotics 2019 space, not {EXP1_COUNT}:"
            " it is not the IMPROV set (modules or connectors differ)",
            file=db.source,
        )
    return space


def exp1(db: ModulesDB, *, limit: int | None = None) -> Exp1Result:
    """Experiment 1: enumerate the space and build the URDF string of every assembly, timed.

    Timed: compiling the space (:func:`exp1_space`), iterating it, and for every assembly
    :func:`~timor_core.export.formats.urdf.urdf_of_serial` ``(db, ids)``, which gives the text of
    ``ModuleAssembly.from_serial_modules(db, ids).to_urdf()`` from strings compiled once per module set
    (compiled on the first assemblies, inside the timing). Not timed: loading ``db``.
    ``limit`` stops after the first ``limit`` assemblies of the space's order (quick runs).
    """
    if limit is not None:
        check_int(limit, "limit", 1, "max_search_evals")
    t0 = time.perf_counter()
    space = exp1_space(db)
    count = 0
    for ids in space.iter(stop=limit):
        urdf_of_serial(db, ids)
        count += 1
    seconds = time.perf_counter() - t0
    return Exp1Result(count=count, seconds=seconds, ms_per_assembly=seconds / count * 1e3)


# -- experiment 2 -----------------------------------------------------------------------------------

EXP2_COUNT = 177_155
"""Size of the experiment-2 space on the RobCo-like set: 11 + 11² + ... + 11⁵."""

PAPER_EXP2 = {"count": EXP2_COUNT, "constrained_minutes": 5.5, "ga_minutes_per_trial": 21.9, "generations": 500}
"""Experiment 2 as the Timor paper reports it (reference toolbox)."""

EXP2_ALGORITHMS = ("constrained", "ga")


@dataclass(frozen=True)
class Exp2Run:
    """One search of experiment 2: what it found, how long it took, and the independent check of the robot.

    ``verified`` holds one entry per goal (:func:`timor_core.task.feedback.verify_goal_configurations`); ``ok`` is True
    only if a robot was found and every goal checks out. ``result`` is the full SearchResult (history, funnel).
    """

    algorithm: str
    seconds: float
    evaluations: int
    workers: int
    best_ids: tuple[str, ...] | None
    best_mass: float | None
    verified: tuple[dict, ...]
    settings: dict
    result: SearchResult | None = None

    @property
    def trial_best(self) -> tuple[float | None, ...]:
        """GA: the lightest valid robot's mass of each trial (None: the trial found none); else ()."""
        if self.algorithm != "ga" or self.result is None:
            return ()

        out = []
        for history in trial_histories(self.result):
            found = [h["trial_best"] for h in history if h.get("trial_best") is not None]
            out.append(min(found) if found else None)
        return tuple(out)

    def hits(self, optimum: float) -> int:
        """GA: how many trials found a robot at or below ``optimum`` (5 g of rounding allowed). Lighter counts: the
        GA's space is wider than the constrained search's (up to six joints, links in a row)."""
        return sum(1 for b in self.trial_best if b is not None and b <= optimum + 0.005)

    @property
    def ok(self) -> bool:
        """A robot was found and it reaches every goal, free of collisions and within its limits."""
        return self.best_ids is not None and bool(self.verified) and all(v["ok"] for v in self.verified)

    def to_json(self) -> dict:
        """Plain JSON (without the full search result)."""
        d = {f: getattr(self, f) for f in ("algorithm", "seconds", "evaluations", "workers", "best_mass")}
        d["best_ids"] = list(self.best_ids) if self.best_ids is not None else None
        d["verified"] = list(self.verified)
        d["ok"] = self.ok
        d["settings"] = self.settings
        if self.algorithm == "ga":
            d["trial_best"] = list(self.trial_best)
        return d

    def summary(self) -> str:
        """One readable line."""
        name = {"constrained": "constrained search", "ga": "genetic algorithm"}[self.algorithm]
        head = f"{name}: {self.evaluations} assemblies in {self.seconds:.1f} s ({self.workers} worker(s))"
        if self.best_ids is None:
            why = (self.result.settings.get("unreachable") or []) if self.result is not None else []
            return head + "; no valid robot found" + "".join(f" ({w}: no robot of the space can)" for w in why)
        check = (
            "verified: reaches every goal, collision-free, within limits"
            if self.ok
            else "NOT VERIFIED: " + ("; ".join(f"{v['id']}: {v['reason']}" for v in self.verified if not v["ok"]))
        )
        return head + f"; best {' '.join(self.best_ids)}, {self.best_mass:.2f} kg ({check})"


@dataclass(frozen=True)
class Exp2Result:
    """Both searches of experiment 2 (or the one asked for)."""

    task_id: str
    db_name: str
    count: int
    runs: tuple[Exp2Run, ...]

    def to_json(self) -> dict:
        """``{"task", "db", "count", "runs": [...], "paper": PAPER_EXP2}``."""
        return {
            "task": self.task_id,
            "db": self.db_name,
            "count": self.count,
            "runs": [r.to_json() for r in self.runs],
            "paper": PAPER_EXP2,
        }

    def summary(self) -> str:
        """Readable lines, with the paper's figures for comparison."""
        p = PAPER_EXP2
        lines = [
            f"experiment 2: task {self.task_id!r}, module set {self.db_name!r}, {self.count} assemblies (<= 5 DOF)"
        ]
        lines += ["  " + r.summary() for r in self.runs]
        exhaustive = next((r for r in self.runs if r.algorithm == "constrained" and r.best_mass is not None), None)
        for run in (r for r in self.runs if r.algorithm == "ga" and r.best_mass is not None):
            optimum = exhaustive.best_mass if exhaustive is not None else run.best_mass
            what = "the constrained search's optimum" if exhaustive is not None else "the best of all trials"
            trials = run.trial_best
            found = sum(1 for b in trials if b is not None)
            assert optimum is not None
            lines.append(
                f"  GA trials at or below {what} ({optimum:.2f} kg): {run.hits(optimum)} of {len(trials)};"
                f" trials finding a valid robot: {found} of {len(trials)}"
            )
        lines.append(
            f"  paper (reference toolbox): constrained search {p['constrained_minutes']} min,"
            f" GA {p['ga_minutes_per_trial']} min per trial of {p['generations']} generations"
        )
        return "\n".join(lines)


def exp2_space(db: ModulesDB) -> SerialSpace:
    """The experiment-2 space on ``db``; InputError unless ``db`` has a base, an end effector and joints."""
    where = f"module set {db.name!r}"
    if not db.bases or not db.end_effectors:
        raise InputError(f"{where} needs a base and an end effector module for experiment 2", file=db.source)
    if not db.joints:
        raise InputError(f"{where} has no joint module: experiment 2 searches serial arms", file=db.source)
    try:
        return SerialSpace(db, paper_exp2_options())
    except SearchSpaceError as exc:
        raise InputError(f"{where} does not fit the experiment-2 space: {exc}", file=db.source) from None


def _check_exp2_args(
    task: Task, algorithms: tuple[str, ...], order: str, limit: int | None, workers: int | None
) -> None:
    """InputError for a bad argument of :func:`exp2`, before the space is built."""
    unknown = [a for a in algorithms if a not in EXP2_ALGORITHMS]
    if unknown or not algorithms:
        raise InputError(f"algorithms must be among {EXP2_ALGORITHMS}", value=list(algorithms))
    if not task.goals:
        raise InputError(f"the task {task.id!r} has no goals: nothing to search for", value=task.id)
    if order not in ("space", "cost"):
        raise InputError('order must be "space" or "cost"', value=order)
    if limit is not None:
        check_int(limit, "limit", 1, "max_search_evals")
    cap_workers(workers)


def exp2(
    db: ModulesDB,
    task: Task,
    *,
    algorithms: tuple[str, ...] = EXP2_ALGORITHMS,
    workers: int | None = None,
    generations: int = 500,
    population: int = 20,
    trials: int = 1,
    seed: int = 0,
    order: str = "cost",
    limit: int | None = None,
    progress: bool = False,
) -> Exp2Result:
    """Experiment 2: the constrained search and/or the GA on ``task``, each timed and its best robot verified.

    ``order``: the constrained search's order, ``"cost"`` (the default: the lightest first, priced from the modules
    and streamed in bounded memory by :func:`timor_core.search.spaces.cost_order.by_cost`; the first valid robot is the
    optimum, and the search stops once no assembly left is lighter, having shown that none of the 177,155 is a
    lighter valid robot) or ``"space"`` (as the paper iterates: the bound only starts to skip assemblies once a
    valid robot is found, at position 67,743 here). ``limit`` evaluates only the first ``limit`` assemblies of the
    constrained search (quick runs; 1 .. the ``max_search_evals`` limit, and never more workers than ``limit``).
    Timed: the search alone
    (not loading the task or the module set).
    """

    _check_exp2_args(task, algorithms, order, limit, workers)
    space = exp2_space(db)
    config = FilterConfig(seed=seed)
    runs = []
    for algorithm in algorithms:
        optimizer: Optimizer
        if algorithm == "constrained":
            optimizer = ExhaustiveSearch(space, "mass", config, workers=workers, progress=progress, order=order)
            settings = {"order": order, "limit": limit}
            budget = Budget(limit, None)
        else:
            optimizer = GeneticSearch(
                db,
                cost="mass",
                n_slots=13,
                max_dof=6,
                generations=generations,
                population=population,
                seed=seed,
                trials=trials,
                filters=config,
                workers=workers,
                progress=progress,
            )
            settings = {"generations": generations, "population": population, "trials": trials, "genes": 13}
            budget = None
        t0 = time.perf_counter()
        result = optimizer.optimize(task, db, budget)
        seconds = time.perf_counter() - t0
        runs.append(_exp2_run(algorithm, seconds, result, task, db, {**settings, "seed": seed}))
    return Exp2Result(task_id=task.id, db_name=db.name, count=space.count, runs=tuple(runs))


def _exp2_run(algorithm: str, seconds: float, result: SearchResult, task: Task, db: ModulesDB, settings) -> Exp2Run:
    verified: tuple[dict, ...] = ()
    if result.best_ids is not None:
        assembly = ModuleAssembly.from_serial_modules(db, result.best_ids)
        q = {goal_id: g.q for goal_id, g in result.best_goals.items() if g.success}
        verified = tuple(verify_goal_configurations(task, assembly, q))
    return Exp2Run(
        algorithm=algorithm,
        seconds=seconds,
        evaluations=result.evaluations,
        workers=result.workers,
        best_ids=result.best_ids,
        best_mass=result.best_cost,
        verified=verified,
        settings=settings,
        result=result,
    )
