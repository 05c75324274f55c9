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

from .iterator import STATE_VERSION, AssemblyIterator, canonical, iter_chromosomes, to_chromosome
from .presets import paper_exp2_options, paper_exp2_space, science2019_options, science2019_space
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
]
