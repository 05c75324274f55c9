"""Configuration search: lazy, countable, resumable iterators over serial assemblies.

>>> from timor_core import ModulesDB
>>> from timor_core.search import paper_exp2_space
>>> space = paper_exp2_space(ModulesDB.from_name("robco_like"))
>>> len(space)
177155
>>> it = space.iter()
>>> first = next(it)            # ('base', 'J', 'gripper')
>>> saved = it.state()          # JSON-able; space.iter(resume=saved) continues after `first`
"""

from .cluster import ClusterError, DaskEvaluator
from .evaluate import DBRef, Evaluation, Evaluator, TaskRef, evaluate, load_db, load_task
from .exhaustive import ExhaustiveSearch
from .filters import (
    DEFAULT_FILTER_NAMES,
    Candidate,
    Filter,
    FilterChain,
    FilterConfig,
    Funnel,
    GoalIK,
    default_filters,
)
from .ga import GeneticSearch, trial_histories
from .iterator import STATE_VERSION, AssemblyIterator, canonical, iter_chromosomes, to_chromosome
from .optimizer import Budget, Optimizer, RandomSearch, run_search
from .parallel import ParallelEvaluator
from .presets import PRESETS, load_space, paper_exp2_options, paper_exp2_space, science2019_options, science2019_space
from .result import SearchResult
from .rules import BUILTIN_CLASSES, SearchSpaceError, SpaceOptions
from .space import SerialSpace

__all__ = [
    "SpaceOptions",
    "SerialSpace",
    "AssemblyIterator",
    "SearchSpaceError",
    "BUILTIN_CLASSES",
    "STATE_VERSION",
    "canonical",
    "to_chromosome",
    "iter_chromosomes",
    "science2019_options",
    "science2019_space",
    "paper_exp2_options",
    "paper_exp2_space",
    "load_space",
    "PRESETS",
    # configuration search: filters, evaluation, optimizers, results
    "FilterConfig",
    "FilterChain",
    "Filter",
    "Candidate",
    "GoalIK",
    "Funnel",
    "default_filters",
    "DEFAULT_FILTER_NAMES",
    "Evaluation",
    "Evaluator",
    "evaluate",
    "DBRef",
    "TaskRef",
    "load_db",
    "load_task",
    "ParallelEvaluator",
    "Budget",
    "Optimizer",
    "run_search",
    "RandomSearch",
    "ExhaustiveSearch",
    "SearchResult",
    "GeneticSearch",
    "trial_histories",
    "DaskEvaluator",
    "ClusterError",
]
