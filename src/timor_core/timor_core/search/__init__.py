"""Configuration search: lazy, countable, resumable iterators over serial assemblies.

>>> from timor_core import ModulesDB
>>> from timor_core.search import paper_exp2_space
>>> space = paper_exp2_space(ModulesDB.from_name("robco_like"))
>>> len(space)
177155
>>> it = space.iter()
>>> first = next(it)            # ('base', 'J', 'gripper')
>>> saved = it.state()          # JSON-able; space.iter(resume=saved) continues after `first`

One package per concern, each importing only from those before it here: :mod:`.spaces` (what is searched, in which
order), :mod:`.filtering` (what rules an assembly out: filters, reach bounds and proofs), :mod:`.evaluation` (an
assembly evaluated, many on local processes, a sequence under a budget, the result), :mod:`.dask_cluster` (a Dask
cluster as the evaluator), :mod:`.exhaustive_search` (the exhaustive search and its cost order in shards) and
:mod:`.genetic` (the GA). This module is the public API.

May import from timor_core: errors, limits, common, model, kinematics, task, search.
"""

from timor_core.search.dask_cluster.cluster import ClusterError, DaskEvaluator
from timor_core.search.evaluation.evaluate import DBRef, Evaluation, Evaluator, TaskRef, evaluate, load_db, load_task
from timor_core.search.evaluation.optimizer import Budget, Optimizer, RandomSearch, run_search
from timor_core.search.evaluation.parallel import ParallelEvaluator
from timor_core.search.evaluation.result import SearchResult
from timor_core.search.exhaustive_search.exhaustive import ExhaustiveSearch
from timor_core.search.filtering.filter_chain import FilterChain
from timor_core.search.filtering.filters import (
    DEFAULT_FILTER_NAMES,
    Candidate,
    Filter,
    FilterConfig,
    Funnel,
    GoalIK,
    default_filters,
)
from timor_core.search.genetic.ga import GAConfig, GeneticSearch, trial_histories
from timor_core.search.spaces.iterator import (
    STATE_VERSION,
    AssemblyIterator,
    canonical,
    iter_chromosomes,
    to_chromosome,
)
from timor_core.search.spaces.presets import (
    PRESETS,
    load_space,
    paper_exp2_options,
    paper_exp2_space,
    science2019_options,
    science2019_space,
)
from timor_core.search.spaces.rules import BUILTIN_CLASSES, SearchSpaceError, SpaceOptions
from timor_core.search.spaces.space import SerialSpace

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
