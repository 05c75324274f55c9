"""Hostile input, second round (issue 26): the surfaces added after the first hardening.

Every case below crashed, hung, forked hundreds of processes or gave a raw Python error before; each now gives a
typed error naming the argument, field or parameter and the value, before any work starts. One hypothesis fuzz
test per surface runs under a memory cap and a time cap (``hostile.memory_cap`` / ``hostile.time_cap``); the
cost order and the search node's task paths have theirs in test_cost_order.py and test_trusted_tasks.py.
"""

from __future__ import annotations

import math
import os

import numpy as np
import pytest
from hostile import memory_cap, time_cap
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core.cli.app import main
from timor_core.errors import InputError, TimorError
from timor_core.kinematics.ompl_planning import ompl_available, ompl_path
from timor_core.kinematics.planning import PLANNERS, PlannerConfig, joint_path, rrt_connect
from timor_core.limits import available_cores, cap_workers, limits, override_limits
from timor_core.model.parametric import KINDS, ParametricModule
from timor_core.ros.launch_arguments import ASSEMBLY_ARGUMENTS, MOVEIT_ARGUMENTS, AssemblyLaunch, MoveItLaunch
from timor_core.search import ExhaustiveSearch, GeneticSearch, paper_exp2_space

# -- counts and limits: checked before any work, workers capped by the machine --------------------------------------


@pytest.mark.parametrize(
    "args, needle",
    [
        (["srdf", "geometric_primitive_modules", "base", "J2", "eef", "--samples", "1000000000000"], "max_samples"),
        (["moveit-config", "geometric_primitive_modules", "base", "J2", "eef", "-o", "x", "--samples", "0"], "samples"),
        (["bringup", "geometric_primitive_modules", "base", "J2", "eef", "-o", "x", "--samples", "10**12"], "samples"),
        (["paper", "exp2", "--task", "t.json", "--limit", "1000000000000"], "max_search_evals"),
        (["paper", "exp1", "--db", "x", "--limit", "0"], "max_search_evals"),
        (["paper", "exp2", "--task", "t.json", "--workers", "1000"], "max_workers"),
        (["search", "t.json", "--db", "x", "--workers", "0"], "max_workers"),
        (["search", "t.json", "--db", "x", "--generations", "10000000"], "max_generations"),
        (["search", "t.json", "--db", "x", "--population", "1"], "max_population"),
        (["search", "t.json", "--db", "x", "--trials", "100000"], "max_trials"),
        (["search", "t.json", "--db", "x", "--early-stop", "0"], "max_generations"),
        (["search", "t.json", "--db", "x", "--budget-evals", "1" + "0" * 5000], "max_search_evals"),
        (["search", "t.json", "--db", "x", "--budget-seconds", "inf"], "max_search_seconds"),
        (["search", "t.json", "--db", "x", "--max-dof", "33"], "max_dof"),
        (["search", "t.json", "--db", "x", "--workers", "²"], "max_workers"),
    ],
)
def test_cli_counts_are_refused_at_parse_time_naming_the_limit(capsys, args, needle):
    with pytest.raises(SystemExit) as stop:
        main(args)
    assert stop.value.code == 2
    last = capsys.readouterr().err.strip().splitlines()[-1]
    assert last.startswith("error: ") and needle in last, last


def test_worker_counts_are_capped_by_the_machine_unless_forced():
    cores = available_cores()
    assert cap_workers(None) == cores and cap_workers(cores + 50) == cores and cap_workers(1) == 1
    with override_limits(force_workers=True):
        assert cap_workers(cores + 50) == cores + 50
    for bad in (-1, limits().max_workers + 1, 2.5, "4", True, math.nan):
        with pytest.raises(InputError, match="workers"):
            cap_workers(bad)


def test_searches_refuse_bad_worker_counts_before_any_work(robco):
    with pytest.raises(InputError, match="workers"):
        ExhaustiveSearch(paper_exp2_space(robco), workers=10**6)
    with pytest.raises(InputError, match="workers"):
        GeneticSearch(robco, workers=-3)
    with pytest.raises(InputError, match="early_stop"):
        GeneticSearch(robco, early_stop=10**9)


def test_force_workers_comes_from_the_environment_too():
    import subprocess
    import sys

    code = "from timor_core.limits import limits; print(limits().force_workers)"
    env = dict(os.environ, TIMOR_FORCE_WORKERS="yes")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "True"
    env["TIMOR_FORCE_WORKERS"] = "maybe"
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "TIMOR_FORCE_WORKERS" in out.stderr


# -- the planners ----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, name",
    [
        ({"time_limit": 1e12}, "time_limit"),
        ({"time_limit": math.inf}, "time_limit"),
        ({"time_limit": math.nan}, "time_limit"),
        ({"time_limit": 0}, "time_limit"),
        ({"check_resolution": 1e-300}, "check_resolution"),
        ({"check_resolution": math.inf}, "check_resolution"),
        ({"step": -1}, "step"),
        ({"max_iterations": 10**12}, "max_iterations"),
        ({"shortcut_iterations": -1}, "shortcut_iterations"),
        ({"goal_bias": 2}, "goal_bias"),
        ({"planner": ["PRM"]}, "planner"),
    ],
)
def test_planner_settings_are_bounded_and_finite(fields, name):
    with pytest.raises(InputError, match=f"PlannerConfig.{name}") as err:
        PlannerConfig(**fields)
    assert "got" in str(err.value)


def _free(q) -> bool:
    return True


def test_a_resolution_too_fine_for_the_joint_range_is_refused_before_planning():
    lower, upper = np.full(2, -1e6), np.full(2, 1e6)
    for plan in (rrt_connect, joint_path):
        with pytest.raises(InputError, match="check_resolution.*max_edge_checks"):
            plan(np.zeros(2), np.ones(2), _free, lower, upper, config=PlannerConfig(planner="timor"))


@pytest.mark.skipif(not ompl_available(), reason="OMPL (the planning extra) is not installed")
def test_ompl_refusals_are_typed():
    with pytest.raises(InputError, match="time_limit"):
        ompl_path(np.zeros(2), np.ones(2), _free, -np.ones(2) * 3, np.ones(2) * 3, time_limit=math.inf)
    with pytest.raises(InputError, match="OMPL's RRTConnect refused"):  # OMPL's own RuntimeError: bounds inverted
        ompl_path(np.zeros(2), np.ones(2), _free, np.ones(2) * 3, -np.ones(2) * 3, time_limit=0.5)


@pytest.mark.skipif(not ompl_available(), reason="OMPL (the planning extra) is not installed")
@pytest.mark.parametrize("planner", ["PRM", "RRTstar"])
def test_anytime_planners_solve_a_free_motion_in_one_second(planner):
    """With time_limit=inf they returned no path; inf is refused now and a finite limit solves it."""
    with pytest.raises(InputError):
        PlannerConfig(planner=planner, time_limit=math.inf)
    config = PlannerConfig(planner=planner, time_limit=1.0)
    box = np.full(2, 3.0)
    path = joint_path(np.zeros(2), np.array([1.0, -1.0]), lambda q: abs(q[0] - 0.5) > 0.1 or q[1] < -2, -box, box,
                      rng=0, config=config)  # fmt: skip
    assert path is not None and np.allclose(path[-1], [1.0, -1.0])


_HOSTILE = st.one_of(st.floats(), st.integers(-(10**30), 10**30), st.none(), st.text(max_size=3), st.booleans())


def _mostly(valid):
    """Mostly ``valid`` values, sometimes a hostile one: so that accepted settings get exercised too."""
    return st.one_of(valid, valid, valid, _HOSTILE)


@settings(max_examples=60, deadline=None)
@given(
    st.fixed_dictionaries(
        {},
        optional={
            "planner": st.one_of(st.sampled_from(PLANNERS), st.text(max_size=5)),
            "max_iterations": _mostly(st.integers(0, 3000)),
            "step": _mostly(st.floats(1e-4, 3.0)),
            "check_resolution": _mostly(st.floats(1e-3, 1.0)),
            "goal_bias": _mostly(st.floats(0, 1)),
            "shortcut_iterations": _mostly(st.integers(0, 200)),
            "time_limit": _mostly(st.floats(0.01, 0.5)),
        },
    )
)
def test_fuzz_planner_settings(fields):
    """Any settings: refused with a typed error naming the field, or a plan that ends (here within 0.5 s each)."""
    with override_limits(max_plan_seconds=0.5, max_plan_iterations=20_000), memory_cap(), time_cap(60):
        try:
            config = PlannerConfig(**fields)
        except InputError as exc:
            assert "PlannerConfig." in str(exc)
            return
        if config.planner != "timor" and not ompl_available():
            return
        box = np.full(2, 3.0)
        blocked = lambda q: not (abs(q[0] - 0.5) < 0.1 and q[1] > -2.5)  # noqa: E731 (a wall with a gap)
        try:
            path = joint_path(np.zeros(2), np.array([1.0, 0.0]), blocked, -box, box, rng=0, config=config)
        except TimorError:
            return
    assert path is None or np.allclose(path[-1], [1.0, 0.0])


# -- launch arguments ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, needle",
    [
        ({"search_workers": "²"}, "search_workers"),
        ({"search_workers": "9" * 5000}, "search_workers"),
        ({"search_workers": "٣"}, "search_workers"),
        ({"config_dir": "/tmp/a\x00b"}, "config_dir"),
        ({"config_dir": "~nosuchuser/x"}, "config_dir"),
        ({"config_dir": "x" * 5000}, "config_dir"),
        ({"config_dir": "/tmp/" + "x" * 300}, "config_dir"),
        ({"config_dir": ""}, "config_dir"),
        ({"rvis": "false"}, "rvis"),
        ({"modules": "base\x00 eef"}, "modules"),
    ],
)
def test_moveit_launch_arguments_are_refused_naming_the_argument(args, needle):
    with pytest.raises(InputError, match="launch argument") as err:
        MoveItLaunch.from_arguments(args)
    assert needle in str(err.value)


_KEYS = st.one_of(st.sampled_from([*ASSEMBLY_ARGUMENTS, *MOVEIT_ARGUMENTS]), st.text(max_size=8))
_VALUES = st.one_of(
    st.sampled_from(["true", "false", "1", "²", "~nosuchuser/x", "/dev/null", "base J2 eef", "", "64", "0"]),
    st.text(max_size=40),
    st.text(alphabet="9", min_size=4000, max_size=6000),
)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.dictionaries(_KEYS, _VALUES, max_size=4), st.booleans())
def test_fuzz_launch_arguments(args, moveit):
    with memory_cap(), time_cap(60):
        try:
            plan = (MoveItLaunch if moveit else AssemblyLaunch).from_arguments(args)
        except InputError as exc:
            assert "launch argument" in str(exc)
            return
    base = plan.base if isinstance(plan, MoveItLaunch) else plan
    assert 1 <= base.search_workers <= limits().max_workers and base.assembly.robot.dof >= 0


# -- parametric modules ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: ParametricModule("orthogonal_link", "o", (0.05, 0.1, 0.1), x_rotation=math.inf), "x_rotation"),
        (lambda: ParametricModule("orthogonal_joint", "o", (0.05, 0.1, 0.1), x_rotation=math.nan), "x_rotation"),
        (lambda: ParametricModule("cylinder_link", "c", (1e200, 1e200)), "radius"),
        (lambda: ParametricModule("cylinder_link", "c", (0.05, 1e200)), "length"),
        (lambda: ParametricModule("cylinder_link", "c", (0.05, 10**400)), "parameters"),
        (lambda: ParametricModule("cylinder_link", "c", ("0.05", 0.1)), "parameters"),
        (lambda: ParametricModule("cylinder_link", "c", (0.05, 0.1), density=1e300), "density"),
        (lambda: ParametricModule("cylinder_link", "c", (0.05, 0.1), density="heavy"), "density"),
        (lambda: ParametricModule("cylinder_link", "c", (1e-300, 0.1)), "radius"),
        (lambda: ParametricModule("cylinder_link", "c", (0.05, 0.1), limits=((0, 1), "ab")), "limits"),
        (lambda: ParametricModule("cylinder_link", "c", (0.05, 0.1), connector_size=(math.inf,)), "connector_size"),
        (lambda: ParametricModule("dh_joint", "d", (0.05, 0.1, 0.1, 0.0), joint=[1]), "joint"),
    ],
)
def test_parametric_errors_name_the_parameter(make, name):
    with pytest.raises(InputError) as err:
        make().freeze()
    assert err.value.path == name or name in str(err.value)
    assert "bodies" not in str(err.value)


_PARAM = st.one_of(st.floats(), st.floats(0, 5), st.integers(-(10**400), 10**400), st.text(max_size=3), st.none())


@st.composite
def _parameters(draw, kind_names):
    kind = draw(kind_names)
    n = len(KINDS[kind])
    params = draw(st.one_of(st.lists(st.floats(1e-3, 2.0), min_size=n, max_size=n), st.lists(_PARAM, max_size=5)))
    if draw(st.booleans()) and params:  # one hostile value among good ones
        params[draw(st.integers(0, len(params) - 1))] = draw(_PARAM)
    return kind, params


@settings(max_examples=150, deadline=None)
@given(
    spec=_parameters(st.sampled_from(sorted(KINDS))),
    x_rotation=_mostly(st.floats(-7, 7)),
    density=_mostly(st.floats(1e-3, 1e7)),
    convention=st.sampled_from(["DH", "MDH", "XYZ"]),
)
def test_fuzz_parametric_modules(spec, x_rotation, density, convention):
    kind, params = spec
    with memory_cap(), time_cap(60):
        try:
            module = ParametricModule(
                kind, "m", tuple(params), x_rotation=x_rotation, density=density, convention=convention
            ).freeze()
        except InputError as exc:
            assert "parametric module 'm'" in str(exc)
            return
    assert all(math.isfinite(b.mass) for b in module.bodies)
