"""timor_ros.parameters: a module set as ROS parameters (``modules.<key>``), module edits by parameter, and the
assembly node's settings; pure Python, so fuzzed here without a ROS graph."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core import ModulesDB
from timor_core.errors import InputError, TimorError
from timor_ros.parameters import (
    check_node_settings,
    db_from_parameters,
    db_to_parameters,
    db_with_module_parameters,
    module_param_key,
    module_param_name,
)


@pytest.fixture(scope="module")
def db() -> ModulesDB:
    return ModulesDB.from_name("geometric_primitive_modules")


def test_param_keys_are_deterministic_and_distinct():
    assert module_param_key("J2") == "J2"
    assert module_param_name("i_45") == "modules.i_45"
    odd = ["L-250", "L.250", "L 250", "L_250", "Ä", "a/b"]
    keys = [module_param_key(i) for i in odd]
    assert len(set(keys)) == len(keys)
    assert all(k.replace("_", "").isalnum() and k.isascii() for k in keys)
    assert keys == [module_param_key(i) for i in odd]


def test_db_round_trips_through_parameters(db):
    params = db_to_parameters(db)
    assert list(params) == [module_param_name(i) for i in db.ids]
    back = db_from_parameters(list(db.ids), params, name=db.name, base_dir=db.base_dir)
    assert [m.to_json() for m in back] == [m.to_json() for m in db]
    assert db_to_parameters(back) == params


def test_db_from_parameters_checks_ids(db):
    params = db_to_parameters(db)
    params[module_param_name("J1")] = params[module_param_name("J2")]
    with pytest.raises(InputError, match="expected 'J1'"):
        db_from_parameters(list(db.ids), params)
    with pytest.raises(InputError, match="no parameter"):
        db_from_parameters(["nope"], params)


def test_module_edits_add_replace_and_refuse_naming_the_parameter(db):
    j2 = db.by_id("J2").to_json()
    j2["header"]["ID"] = "J2b"
    new, added = db_with_module_parameters(db, {"modules.J2b": json.dumps(j2)})
    assert added == ["J2b"] and new.ids[-1] == "J2b" and "J2b" not in db
    with pytest.raises(InputError, match="modules.J2b"):
        db_with_module_parameters(db, {"modules.J3": json.dumps(j2)})
    with pytest.raises(InputError, match="modules.J2b: .*invalid JSON"):
        db_with_module_parameters(db, {"modules.J2b": "{"})
    with pytest.raises(InputError, match="not a module parameter"):
        db_with_module_parameters(db, {"db_name": "{}"})
    with pytest.raises(InputError, match="must be a string"):
        db_with_module_parameters(db, {"modules.J2b": 3})


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.text(max_size=15), st.text(max_size=30) | st.integers(), max_size=3))
def test_any_module_edit_is_applied_or_refused_with_a_timor_error(db, updates):
    try:
        new, added = db_with_module_parameters(db, updates)
    except TimorError:
        return
    assert set(added) <= set(new.ids) and list(new.ids)[: len(db.ids)] == list(db.ids)


@pytest.mark.parametrize(
    ("settings_", "needle"),
    [({"prefix": "a b"}, "prefix"), ({"srdf_samples": 0}, "srdf_samples"), ({"seed": -1}, "srdf_seed"),
     ({"timeout": 0}, "service_timeout"), ({"plugin": "x y"}, "plugin")],
)  # fmt: skip
def test_bad_node_settings_are_refused(settings_, needle):
    good = {"prefix": "", "srdf_samples": 10, "seed": 0, "timeout": 1.0}
    check_node_settings(**good)
    with pytest.raises(InputError, match=needle):
        check_node_settings(**{**good, **settings_})
