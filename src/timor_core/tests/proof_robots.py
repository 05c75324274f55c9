"""The hypothesis strategies of a random robot of the embedded sets, shared by the proofs' property tests
(``test_family_proof.py``, ``test_sweep_proof.py``): which set, where in its small serial space, the seed of the
test's random numbers and how far its base is moved; and the unseen tasks those tests run the filters on."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import random_placement, reach_test_spaces
from hypothesis import strategies as st

from timor_core import ModuleAssembly
from timor_core.task import Task

GENERATOR = Path(__file__).resolve().parents[3] / "benchmarks" / "unseen_tasks.py"

DBS, SPACES = reach_test_spaces()

#: a robot of one of the embedded sets: the set, the pick in its space (a fraction of its count), the seed
ROBOT = dict(
    name=st.sampled_from(sorted(DBS)),
    pick=st.floats(0, 1, exclude_max=True),
    seed=st.integers(0, 2**31),
)
#: :data:`ROBOT` and how far its base is moved (:func:`conftest.random_placement`; 0: not moved)
ROBOTS = dict(**ROBOT, spread=st.sampled_from([0.0, 0.3]))


def assembly_of(name: str, pick: float, rng: np.random.Generator, spread: float) -> tuple[ModuleAssembly, Any]:
    """The assembly :data:`ROBOTS` draw (``rng`` made from their seed) and its base placement (None: not moved)."""
    space = SPACES[name]
    ids = space[int(pick * space.count)]
    placement = random_placement(rng, spread) if spread else None
    return ModuleAssembly.from_serial_modules(DBS[name], ids, base_placement=placement), placement


def unseen_task(name: str) -> Task:
    """The unseen task ``name`` of ``benchmarks/unseen_tasks.py`` (seed 38); skips where the benchmarks are absent."""
    if not GENERATOR.is_file():
        pytest.skip("needs the repository's benchmarks/")
    spec = importlib.util.spec_from_file_location("unseen_tasks", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return Task.from_json_data(module.generate(38)[name])
