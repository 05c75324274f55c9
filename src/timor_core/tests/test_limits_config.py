"""The limits are one configuration object (issue 27): ``Limits``, checked when made, put in force whole or field by
field; the environment is one way to fill it (``Limits.from_environment``), the one the process starts with."""

from __future__ import annotations

import dataclasses

import pytest

from timor_core.errors import InputError
from timor_core.limits import Limits, check_int, limits, override_limits, set_limits


def test_a_limits_object_is_checked_when_it_is_made():
    assert Limits().max_dof == 32
    for bad in (0, -1, float("nan"), float("inf"), True, "48"):
        with pytest.raises(InputError, match="max_dof"):
            Limits(max_dof=bad)
    with pytest.raises(InputError, match="force_workers"):
        Limits(force_workers=1)  # a flag is True or False
    with pytest.raises(InputError, match="max_dof"):
        dataclasses.replace(Limits(), max_dof=-3)


def test_a_limits_object_put_in_force_for_a_block_and_for_the_process():
    before = limits()
    config = Limits(max_dof=48, max_goals=5)
    with override_limits(config) as active:
        assert active is config and limits() is config
        assert check_int(40, "--max-dof", 1, "max_dof") == 40
        with pytest.raises(InputError, match="max_dof"):
            check_int(49, "--max-dof", 1, "max_dof")
    assert limits() is before
    previous = set_limits(config, max_goals=7)
    try:
        assert previous is before and limits().max_dof == 48 and limits().max_goals == 7
    finally:
        set_limits(previous)
    assert limits() is before


def test_unknown_or_wrong_configurations_are_refused():
    with pytest.raises(InputError, match="max_legs"):
        set_limits(max_legs=4)
    with pytest.raises(InputError, match="Limits"):
        set_limits({"max_dof": 48})  # type: ignore[arg-type]


def test_the_environment_fills_a_limits_object():
    env = {"TIMOR_MAX_DOF": "48", "TIMOR_FORCE_WORKERS": "yes", "TIMOR_MAX_PLAN_SECONDS": "1.5", "OTHER": "x"}
    config = Limits.from_environment(env)
    assert (config.max_dof, config.force_workers, config.max_plan_seconds) == (48, True, 1.5)
    assert dataclasses.replace(config, max_dof=32, force_workers=False, max_plan_seconds=600.0) == Limits()
    for name, raw in (("TIMOR_MAX_DOF", "many"), ("TIMOR_MAX_DOF", "0"), ("TIMOR_FORCE_WORKERS", "maybe")):
        with pytest.raises(InputError, match=name.removeprefix("TIMOR_").lower() + "|" + name):
            Limits.from_environment({name: raw})
