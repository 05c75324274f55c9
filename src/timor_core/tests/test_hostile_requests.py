"""The request handling behind the ROS 2 nodes, fuzzed without ROS (issue 12).

``assembly_from_ids_or_json`` + ``describe`` is what ``set_assembly`` runs, ``module_from_json_text`` +
``db_with_modules`` what a module edit through ``set_parameters`` runs (its parameter names: timor_ros's tests).
Any request gives a description or a TimorError, quickly, within a memory cap;
never another exception (the node's guard would still answer, but a bug would hide behind it).
"""

from __future__ import annotations

import json
import time

from hostile import memory_cap
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core import TimorError
from timor_core.ros.robot_description import (
    assembly_from_ids_or_json,
    db_with_modules,
    describe,
    module_from_json_text,
)

IDS = ["base", "J1", "J2", "P1", "i_15", "i_30", "i_45", "l_15", "l_30", "l_45", "eef"]
TEXT = st.text(max_size=30) | st.sampled_from(["[" * 70 + "]" * 70, '{"a": 1, "a": 2}', "1" * 500, "NaN", "{"])
ASSEMBLY_JSON = st.fixed_dictionaries(
    {"moduleOrder": st.lists(st.sampled_from(IDS) | st.text(max_size=5), max_size=8)},
    optional={
        "moduleConnection": st.lists(
            st.lists(st.integers(-2, 9) | st.text(max_size=25) | st.none(), min_size=0, max_size=5), max_size=8
        ),
        "baseConnection": st.lists(st.lists(st.integers(-1, 3) | st.text(max_size=10), max_size=3), max_size=2),
        "basePose": st.lists(st.lists(st.lists(st.floats(), max_size=4), max_size=4), max_size=2),
    },
)


def _answer(db, modules, text) -> None:
    start = time.monotonic()
    with memory_cap():
        try:
            desc = describe(assembly_from_ids_or_json(db, modules, text), srdf_samples=20)
        except TimorError:
            pass
        else:
            assert "<robot" in desc.urdf
    assert time.monotonic() - start < 10


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.sampled_from(IDS) | st.text(max_size=8), max_size=10))
def test_fuzz_set_assembly_by_module_ids(primitives, modules):
    _answer(primitives, modules, "")


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ASSEMBLY_JSON)
def test_fuzz_set_assembly_by_json(primitives, data):
    _answer(primitives, [], json.dumps(data))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(TEXT)
def test_fuzz_set_assembly_by_any_text(primitives, text):
    _answer(primitives, [], text)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(TEXT, max_size=3))
def test_fuzz_module_edits(primitives, texts):
    with memory_cap():
        try:
            db_with_modules(primitives, [module_from_json_text(t) for t in texts])
        except TimorError:
            pass
