"""GAConfig: the GA's settings as one frozen, checked object; ``GeneticSearch(db, config=...)`` and the keyword
arguments build the same search and find the same robots."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_search import FAST, FLOOR, KNOWN, synthetic_task

from timor_core import ModuleAssembly
from timor_core.errors import InputError, TimorError
from timor_core.search import GAConfig, GeneticSearch

MODULES = ("J", "L_100", "L_250", "I_200")
KW = dict(n_slots=7, max_dof=3, population=8, generations=3, filters=FAST, workers=1, progress=False, modules=MODULES)


def test_config_and_keywords_build_the_same_search(robco):
    by_config = GeneticSearch(robco, config=GAConfig(**KW))
    by_keywords = GeneticSearch(robco, **KW)
    assert by_config.ga_config == by_keywords.ga_config
    assert by_config.settings() == by_keywords.settings()
    assert by_config.gene_space == by_keywords.gene_space and by_config.config is FAST
    assert by_keywords.ga_config.modules == MODULES  # a tuple, immutable like the rest


def test_config_is_frozen_and_not_mixed_with_keywords(robco):
    config = GAConfig(max_dof=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_dof = 4  # type: ignore[misc]
    with pytest.raises(InputError, match=r"\['max_dof', 'population'\]"):
        GeneticSearch(robco, max_dof=4, population=10, config=config)
    assert GeneticSearch(robco, max_dof=6, config=config).max_dof == 3  # a default value is no conflict


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("n_slots", 0, "n_slots must be an integer"),
        ("population", 1, "population must be an integer"),
        ("seed", -1, "seed must be an integer"),
        ("trials", True, "trials must be an integer"),
        ("early_stop", 0, "early_stop must be an integer"),
        ("mutation_probability", 1.5, r"mutation_probability must be in \[0, 1\]"),
        ("mutation_probability", "x", r"mutation_probability must be in \[0, 1\]"),
        ("penalty", float("nan"), "penalty must be a finite number"),
        ("elitism", 20, "elitism must be an integer"),
        ("local_search", 3, "local_search must be 0, 1 or 2"),
        ("local_search_after", 0, "local_search_after must be an integer"),
        ("workers", -3, "workers must be an integer"),
    ],
)
def test_bad_settings_name_the_field_and_value(field, value, message):
    with pytest.raises(TimorError, match=message) as err:
        GAConfig(**{field: value})
    assert repr(value) in str(err.value)


def test_min_dof_above_max_dof_is_refused():
    with pytest.raises(InputError, match=r"min_dof \(4\) must not exceed max_dof \(3\)"):
        GAConfig(min_dof=4, max_dof=3)


@settings(max_examples=60, deadline=None)
@given(population=st.integers(2, 200), elitism=st.integers(-5, 205))
def test_elitism_is_accepted_exactly_below_the_population(population, elitism):
    if 0 <= elitism < population:
        assert GAConfig(population=population, elitism=elitism).elitism == elitism
    else:
        with pytest.raises(InputError, match="elitism"):
            GAConfig(population=population, elitism=elitism)


def test_config_and_keywords_find_the_same_robots(robco):
    robot = ModuleAssembly.from_serial_modules(robco, KNOWN).robot
    rng = np.random.default_rng(5)
    poses = []
    while len(poses) < 2:
        q = robot.random_configuration(rng)
        if not robot.has_self_collision(q) and robot.fk(q)[2, 3] > 0.15:
            poses.append(robot.fk(q))
    task = synthetic_task(poses, obstacles=[FLOOR])
    a = GeneticSearch(robco, config=GAConfig(**KW, seed=4)).optimize(task, robco)
    b = GeneticSearch(robco, **KW, seed=4).optimize(task, robco)
    assert a.evaluations == b.evaluations > 0
    assert a.best_ids == b.best_ids and a.best_cost == b.best_cost
    assert [p["best_fitness_cost"] for p in a.history] == [p["best_fitness_cost"] for p in b.history]
