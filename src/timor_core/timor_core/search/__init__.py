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

from timor_core.search.cluster import ClusterError, DaskEvaluator
from timor_core.search.evaluate import DBRef, Evaluation, Evaluator, TaskRef, evaluate, load_db, load_task
from timor_core.search.exhaustive import ExhaustiveSearch
from timor_core.search.filter_chain import FilterChain
from timor_core.search.filters import (
    DEFAULT_FILTER_NAMES,
    Candidate,
    Filter,
    FilterConfig,
    Funnel,
    GoalIK,
    default_filters,
)
from timor_core.search.ga import GAConfig, GeneticSearch, trial_histories
from timor_core.search.iterator import STATE_VERSION, AssemblyIterator, canonical, iter_chromosomes, to_chromosome
from timor_core.search.optimizer import Budget, Optimizer, RandomSearch, run_search
from timor_core.search.parallel import ParallelEvaluator
from timor_core.search.presets import (
    PRESETS,
    load_space,
    paper_exp2_options,
    paper_exp2_space,
    science2019_options,
    science2019_space,
)
from timor_core.search.result import SearchResult
from timor_core.search.rules import BUILTIN_CLASSES, SearchSpaceError, SpaceOptions
from timor_core.search.space import SerialSpace

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
    "GAConfig",
    "GeneticSearch",
    "trial_histories",
    "DaskEvaluator",
    "ClusterError",
]
