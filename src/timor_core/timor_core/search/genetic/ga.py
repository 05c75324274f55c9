"""A genetic algorithm (PyGAD) over serial assemblies, as in the Timor paper.

A chromosome has ``n_slots`` genes that alternate joint and link slots (gene 0, 2, 4, ... a joint module,
gene 1, 3, ... a link module); every slot but the first may be empty. The base and the end effector are
fixed. Decoding drops the empty slots (:func:`~.iterator.canonical`) and frames the rest with base and end
effector; a decoding without a joint, with too many (or too few) degrees of freedom, or with a neighbour pair
that does not connect, gets the worst fitness without evaluation. Otherwise the fitness is
``-(cost + penalty * goals not reached)`` from :func:`~.evaluate.evaluate` (a whole generation per batch,
on ``workers`` processes), cached by the decoded assembly.

Designs to start from (``initial``) go into the first trial's population; ``on_batch`` sees the partial result
after each evaluated batch (a live progress report) and setting ``stop`` ends the search after the current
batch with ``stopped == "canceled"``.

>>> from timor_core import ModulesDB
>>> from timor_core.search import GAConfig, GeneticSearch
>>> db = ModulesDB.from_name("robco_like")
>>> config = GAConfig(cost="mass", max_dof=5, generations=50, population=40, seed=0, trials=3)
>>> ga = GeneticSearch(db, config=config)      # or GeneticSearch(db, max_dof=5, ...) with the same keywords
>>> result = ga.optimize(task, db)                          # doctest: +SKIP
>>> trial_histories(result)[0][-1]["best_cost"]            # doctest: +SKIP
"""

from __future__ import annotations

import logging
import math
import numbers
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from timor_core.errors import InputError
from timor_core.limits import cap_workers, check_int, check_number, limits
from timor_core.model.db import ModulesDB
from timor_core.search.evaluation.evaluate import Evaluation, cost_descriptor, load_db, load_task
from timor_core.search.evaluation.optimizer import Budget
from timor_core.search.evaluation.parallel import ParallelEvaluator
from timor_core.search.evaluation.progress import Progress
from timor_core.search.evaluation.result import SearchResult, task_goal_records
from timor_core.search.filtering.filters import FilterConfig, Funnel
from timor_core.search.genetic.ga_coding import EMPTY, ChromosomeCoding
from timor_core.search.genetic.ga_local import DescentStep
from timor_core.search.genetic.ga_run import PYGAD_LOG, GARun, OutOfTimeError
from timor_core.task import Task
from timor_core.task.costs import CostFunction

__all__ = ["GAConfig", "GeneticSearch", "trial_histories", "EMPTY"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class GAConfig:
    """The settings of a :class:`GeneticSearch`, checked when built (an :class:`~timor_core.errors.InputError`
    naming the field and the value); one object to keep, compare and pass on instead of 23 keyword arguments.

    Args:
        cost: an assembly-level cost (descriptor or CostFunction; default the mass).
        n_slots: genes per chromosome (alternating joint / link slots, the first a joint).
        max_dof, min_dof: bounds of the degrees of freedom (others are invalid and never evaluated).
        generations, population: PyGAD's ``num_generations`` and ``sol_per_pop``.
        seed: the GA's seed (trial ``t`` uses ``seed`` and ``t``); the IK seed is ``filters.seed``.
        trials: independent runs; the result is the best over all, with one history per trial.
        early_stop: stop a trial when the best fitness has not changed for this many generations (None: never).
        filters: a :class:`~.filters.FilterConfig` (None: the defaults). With its ``bound`` (the default), a robot no
            lighter than the best valid one found before the current generation is scored as reaching no goal
            without running its IK (the paper's "lighter solution already found"): on the user study,
            500-generation trials became 2.5-3x faster and found as light or lighter robots (5 seeds).
        workers: processes (None: all cores; 1: in this process).
        progress: show a progress bar.
        penalty: added to the cost per goal not reached (default: larger than any plausible cost, 1e6).
        mutation_probability: per gene.
        elitism: the best individuals carried over unchanged into each generation (more: fewer new robots to
            evaluate per generation, faster convergence, less exploration; the reference toolbox keeps 5).
        local_search: the radius (0, 1 or 2 moves) of the descent (:class:`~.ga_local.Descent`) run from a trial's
            best robot once it has not improved for ``local_search_after`` generations; its result replaces the
            population's worst. On the user study (10 seeds, 500 generations) the optimum was reached by 3 of 10
            trials without it: their best robots were two moves from it.
        base, eef: module IDs of the fixed base and end effector (None: the module set's only one).
        modules: the joint and link modules the slots may hold (None: all of the module set).
        initial: designs (module IDs, base first, end effector last) placed first into the first trial's initial
            population (the rest is random; at most ``population`` of them). A design that cannot be encoded as
            a chromosome (:meth:`GeneticSearch.encode`) or is not valid (:meth:`GeneticSearch.is_valid`) is
            skipped with a logged warning; ``GeneticSearch.initial`` holds the designs that were kept.
        on_batch: called as ``on_batch(result, trial)`` after each evaluated batch (one per generation) with the
            partial result; an exception it raises is logged and never ends the search.
        stop: checked before and after each batch; once set, the search ends promptly (no further evaluation)
            with ``result.stopped == "canceled"``.
    """

    cost: CostFunction | str | None = "mass"
    n_slots: int = 13
    max_dof: int = 6
    generations: int = 50
    population: int = 20
    seed: int = 0
    trials: int = 1
    early_stop: int | None = None
    filters: FilterConfig | None = None
    workers: int | None = None
    progress: bool = True
    min_dof: int = 1
    penalty: float = 1e6
    mutation_probability: float = 0.15
    elitism: int = 1
    local_search: int = 2
    local_search_after: int = 20
    base: str | None = None
    eef: str | None = None
    modules: Sequence[str] | None = None
    initial: Sequence[Sequence[str]] | None = None
    on_batch: Callable[[SearchResult, int], None] | None = None
    stop: threading.Event | None = None

    def __post_init__(self) -> None:
        lim = limits()
        for name, lo, hi in (
            ("n_slots", 1, lim.max_modules),
            ("max_dof", 1, lim.max_dof),
            ("min_dof", 0, lim.max_dof),
            ("generations", 1, lim.max_generations),
            ("population", 2, lim.max_population),
            ("trials", 1, lim.max_trials),
            ("seed", 0, 2**63 - 1),
        ):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise InputError(f"{name} must be an integer in {lo}..{hi}", value=v)
        if self.min_dof > self.max_dof:
            raise InputError(f"min_dof ({self.min_dof}) must not exceed max_dof ({self.max_dof})", value=self.min_dof)
        if self.early_stop is not None:
            check_int(self.early_stop, "early_stop", 1, "max_generations")
        p = self.mutation_probability
        if not isinstance(p, numbers.Real) or not 0.0 <= p <= 1.0:
            raise InputError("mutation_probability must be in [0, 1]", value=p)
        cap_workers(self.workers)  # refuse a bad count before any work
        e, population = self.elitism, self.population
        if isinstance(e, bool) or not isinstance(e, int) or not 0 <= e < population:
            raise InputError(f"elitism must be an integer in [0, population {population})", value=e)
        if self.local_search not in (0, 1, 2) or isinstance(self.local_search, bool):
            raise InputError("local_search must be 0, 1 or 2 (moves)", value=self.local_search)
        check_int(self.local_search_after, "local_search_after", 1, "max_generations")
        object.__setattr__(self, "seed", int(self.seed))
        for name in ("modules", "initial"):  # immutable like the rest
            if getattr(self, name) is not None:
                object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "penalty", check_number(self.penalty, "penalty", 0.0, 1e300))
        object.__setattr__(self, "mutation_probability", float(p))


_DEFAULTS = {f.name: f.default for f in fields(GAConfig)}


class GeneticSearch(ChromosomeCoding):
    """A PyGAD genetic algorithm over serial assemblies of ``db`` (implements the Optimizer protocol).

    ``GeneticSearch(db, config=GAConfig(...))``; the keyword arguments of :class:`GAConfig` may be given instead
    (``GeneticSearch(db, max_dof=5)``), not both. ``db``: the module set (its single base and end effector are
    used unless ``base``/``eef`` are given). The settings are also attributes (``self.max_dof``, ...);
    ``self.config`` is the :class:`~.filters.FilterConfig`, as for the other optimizers, and ``self.ga_config``
    the whole :class:`GAConfig`.
    """

    def __init__(
        self,
        db: ModulesDB,
        cost: CostFunction | str | None = "mass",
        n_slots: int = 13,
        max_dof: int = 6,
        generations: int = 50,
        population: int = 20,
        seed: int = 0,
        trials: int = 1,
        early_stop: int | None = None,
        filters: FilterConfig | None = None,
        workers: int | None = None,
        progress: bool = True,
        *,
        min_dof: int = 1,
        penalty: float = 1e6,
        mutation_probability: float = 0.15,
        elitism: int = 1,
        local_search: int = 2,
        local_search_after: int = 20,
        base: str | None = None,
        eef: str | None = None,
        modules: Sequence[str] | None = None,
        initial: Sequence[Sequence[str]] | None = None,
        on_batch: Callable[[SearchResult, int], None] | None = None,
        stop: threading.Event | None = None,
        config: GAConfig | None = None,
    ) -> None:
        loose = {k: v for k, v in locals().items() if k not in ("self", "db", "config")}  # GAConfig's fields
        self.db = load_db(db)
        given = sorted(k for k, v in loose.items() if _differs(v, _DEFAULTS[k]))
        if config is None:
            config = GAConfig(**loose)
        elif given:
            raise InputError(f"give the GA's settings either as config or as keyword arguments {given}", value=given)
        self.ga_config = config
        self._take_settings(config)
        self._pick_modules(config)
        self._seed_designs(config.initial or ())
        # statistics of the last optimize()
        self.cache: dict[tuple[str, ...], Evaluation] = {}
        self.cache_hits = 0
        self.invalid = 0
        self.evaluated: list[tuple[str, ...]] = []
        self.descents: list[list[DescentStep]] = []

    def _take_settings(self, c: GAConfig) -> None:
        """The checked settings as plain attributes (the chromosome coding and GARun read them)."""
        self.cost = c.cost
        self.n_slots, self.max_dof, self.min_dof = c.n_slots, c.max_dof, c.min_dof
        self.generations, self.population, self.seed, self.trials = c.generations, c.population, c.seed, c.trials
        self.early_stop = c.early_stop
        self.config = c.filters if c.filters is not None else FilterConfig()
        self.workers, self.progress = c.workers, c.progress
        self.penalty, self.mutation_probability, self.elitism = c.penalty, c.mutation_probability, c.elitism
        self.local_search, self.local_search_after = c.local_search, c.local_search_after
        self.on_batch, self.stop = c.on_batch, c.stop

    def _pick_modules(self, c: GAConfig) -> None:
        """Base, end effector, the joints and links the slots may hold, and each slot's gene space."""
        self.base = self._pick(c.base, self.db.bases, "base")
        self.eef = self._pick(c.eef, self.db.end_effectors, "end effector")
        if c.modules is not None:
            unknown = sorted(set(c.modules) - set(self.db.ids))
            if unknown:
                raise InputError(f"unknown modules {unknown} in the module set {self.db.name!r}", value=unknown)
        allowed = set(self.db.ids if c.modules is None else c.modules)
        self.joints = tuple(m.id for m in self.db.joints if m.id in allowed)
        self.links = tuple(m.id for m in self.db.links if m.id in allowed)
        if not self.joints:
            raise InputError(f"the module set {self.db.name!r} has no joint module", value=self.db.name)
        self._dof = {m.id: m.dof for m in self.db}
        # gene k: 0 = empty, i > 0 = the (i-1)-th joint (even k) or link (odd k); gene 0 is never empty
        self.gene_space: list[list[int]] = []
        for k in range(self.n_slots):
            options = self.joints if k % 2 == 0 else self.links
            self.gene_space.append(list(range(0 if k else 1, len(options) + 1)))

    def _seed_designs(self, designs: Iterable[Sequence[str]]) -> None:
        """Keep the initial designs that encode, are valid and fit into the population (warn about the others)."""
        self.initial: tuple[tuple[str, ...], ...] = ()
        self._initial_genes: list[np.ndarray] = []
        for design in designs:
            ids = tuple(str(m) for m in design)
            genes = self.encode(ids)
            if genes is None:
                logger.warning("the initial design %s cannot be encoded as a chromosome; skipped", " ".join(ids))
            elif not self.is_valid(ids):
                logger.warning("the initial design %s is not valid for this GA; skipped", " ".join(ids))
            elif len(self._initial_genes) >= self.population:
                logger.warning(
                    "more initial designs than the population (%d); skipped %s", self.population, " ".join(ids)
                )
            else:
                self.initial += (ids,)
                self._initial_genes.append(genes)

    # -- chromosomes -------------------------------------------------------------------------------

    # -- the search --------------------------------------------------------------------------------
    def optimize(self, task: Task, db: ModulesDB | None = None, budget: Budget | int | None = None) -> SearchResult:
        """Run ``trials`` GAs for ``task``; the best valid assembly over all of them, one history per trial."""
        import pygad

        db = self.db if db is None else load_db(db)
        if db is not self.db and (db.name != self.db.name or db.ids != self.db.ids):
            raise InputError(
                f"the module set {db.name!r} is not the one the GA was built on ({self.db.name!r})", value=db.name
            )
        task = load_task(task)
        if not task.goals:
            raise InputError(f"the task {task.id!r} has no goals", value=task.id)
        budget = Budget.of(budget)
        self.cache, self.cache_hits, self.invalid, self.evaluated, self.descents = {}, 0, 0, [], []
        pe = ParallelEvaluator(task, self.db, self.cost, self.config, workers=self.workers)
        result = SearchResult(
            optimizer="GeneticSearch",
            task_id=task.id,
            db_name=self.db.name,
            cost=cost_descriptor(self.cost),
            workers=pe.workers,
            settings={"filters": self.config.to_json(), **self.settings()},
            task_goals=task_goal_records(task),
        )
        run = GARun(self, pe, len(task.goals), budget, result, self.on_batch, self.stop)
        stopped = "exhausted"
        try:
            with pe:
                pe.start()
                result.funnel = Funnel(pe.filter_names)
                run.bar = Progress(self.trials * self.generations * self.population, self.progress, desc="GA")
                for trial in range(self.trials):
                    if run.out_of_budget() or run.canceled():
                        break
                    run.new_trial(trial)
                    self._trial(pygad, run)
                    if run.out or run.canceled_flag:
                        break
        except KeyboardInterrupt:
            stopped = "interrupted"
        finally:
            if run.bar is not None:
                run.bar.update(0, result.funnel, result.best_cost, force=True)
                run.bar.close()
        if stopped != "interrupted" and run.canceled_flag:
            stopped = "canceled"
        elif stopped != "interrupted" and (run.out or run.out_of_budget()):
            at_limit = budget.max_evaluations is not None and len(self.evaluated) >= budget.max_evaluations
            stopped = "max_evaluations" if at_limit else "max_time"
        result.wall_time = time.perf_counter() - run.t0
        result.stopped = stopped
        result.settings["cache_hits"] = self.cache_hits
        result.settings["invalid"] = self.invalid
        result.settings["descent_evaluations"] = run.descent_evaluations
        return result

    def _initial_population(self, run: GARun, rng: np.random.Generator) -> np.ndarray | None:
        """The trial's first population: the initial designs (first trial), then random chromosomes; None if the
        time ran out while making it."""
        seeded = [g.copy() for g in self._initial_genes] if run.trial == 0 else []
        fresh = []
        try:
            for k in range(self.population - len(seeded)):
                run.check_clock(k)
                fresh.append(self.random_chromosome(rng))
        except OutOfTimeError:
            return None
        return np.array([*seeded, *fresh], dtype=int)

    def _trial(self, pygad: Any, run: GARun) -> None:
        trial, result = run.trial, run.result
        rng = np.random.default_rng([self.seed & 0xFFFFFFFF, trial])
        initial = self._initial_population(run, rng)
        if initial is None:
            return

        def record(ga: Any) -> None:
            costs = -np.asarray(ga.last_generation_fitness, dtype=float)
            result.history.append(
                {
                    "trial": trial,
                    "generation": run.generation,
                    "evaluations": result.evaluations,
                    "time": time.perf_counter() - run.t0,
                    "best_cost": result.best_cost,
                    "best_fitness_cost": float(costs.min()),
                    "median_cost": float(np.median(costs)),
                    # the lightest valid robot of this trial so far (None: none yet)
                    "trial_best": run.next_best if math.isfinite(run.next_best) else None,
                }
            )

        def on_generation(ga: Any) -> str | None:
            if run.skipped:  # canceled before this generation's batch: nothing to record
                return "stop"
            run.generation += 1
            record(ga)
            if self.local_search and not run.canceled_flag and not run.out:
                run.descend(ga)
            if run.canceled_flag:
                return "stop"
            if run.out or run.out_of_budget():
                run.out = True
                return "stop"
            return None

        ga = pygad.GA(
            num_generations=self.generations,
            num_parents_mating=max(2, self.population // 2),
            fitness_func=run.fitness_batch,
            fitness_batch_size=self.population,
            initial_population=initial,
            gene_type=int,
            gene_space=self.gene_space,
            parent_selection_type="tournament",
            K_tournament=3,
            keep_elitism=self.elitism,
            crossover_type=run.on_the_clock(self.crossover_operator(rng)),
            mutation_type=run.on_the_clock(self.mutation_operator(rng), by_rows=True),
            on_generation=on_generation,
            stop_criteria=None if self.early_stop is None else f"saturate_{self.early_stop}",
            random_seed=(self.seed * 7919 + trial) & 0x7FFFFFFF,
            suppress_warnings=True,
            logger=PYGAD_LOG,
        )
        try:
            ga.run()
        except OutOfTimeError:
            run.out = True

    def settings(self) -> dict:
        extra = {"initial": [list(ids) for ids in self.initial]} if self.initial else {}
        return {
            "base": self.base,
            "eef": self.eef,
            "n_slots": self.n_slots,
            "min_dof": self.min_dof,
            "max_dof": self.max_dof,
            "generations": self.generations,
            "population": self.population,
            "seed": self.seed,
            "trials": self.trials,
            "early_stop": self.early_stop,
            "penalty": self.penalty,
            "mutation_probability": self.mutation_probability,
            "elitism": self.elitism,
            "local_search": self.local_search,
            "local_search_after": self.local_search_after,
            "joints": list(self.joints),
            "links": list(self.links),
            **extra,
        }


def _differs(value: Any, default: Any) -> bool:
    """Whether a keyword argument was given a value other than its default."""
    return value is not default and (type(value) is not type(default) or bool(value != default))


def trial_histories(result: SearchResult) -> list[list[dict]]:
    """The GA's history split by trial: per generation the best valid cost so far (``best_cost``), the best and
    median penalised cost of the population (``best_fitness_cost``, ``median_cost``)."""
    out: dict[int, list[dict]] = {}
    for point in result.history:
        if "trial" in point:
            out.setdefault(int(point["trial"]), []).append(point)
    return [out[k] for k in sorted(out)]
