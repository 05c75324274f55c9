"""Goals out of every assembly's reach (search.space_reach): the bound is sound (property test over random robots,
base placements and configurations of the embedded sets and, when present, the real IMPROV set), tight on a
stretched arm, and lets the constrained search answer a task nothing can solve without enumerating the space."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import IMPROV_FILE, anywhere_configuration, random_placement, reach_test_spaces
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core import ModuleAssembly, ModulesDB
from timor_core.cli.app import main
from timor_core.search import ExhaustiveSearch, SerialSpace, paper_exp2_space, science2019_options
from timor_core.search.filtering.space_reach import module_span, space_reach, unreachable_goals
from timor_core.task.feedback import load_task


def load_task_data(data: dict):
    from timor_core.task import Task

    return Task.from_json_data(data)


TASKS = Path(__file__).parent / "data" / "exp2_tasks"
UNREACHABLE = TASKS / "unreachable.json"
DBS, SPACES = reach_test_spaces()
if IMPROV_FILE.is_file():
    DBS["IMPROV"] = ModulesDB.from_json_file(IMPROV_FILE)
    SPACES["IMPROV"] = SerialSpace(DBS["IMPROV"], science2019_options())


@settings(max_examples=60, deadline=None)
@given(
    name=st.sampled_from(sorted(SPACES)),
    pick=st.floats(0, 1, exclude_max=True),
    seed=st.integers(0, 2**31),
    spread=st.sampled_from([0.0, 0.3, 4.0]),
)
def test_no_assembly_reaches_beyond_the_space_bound(name, pick, seed, spread):
    """Any assembly, any base placement, any configuration (prismatic joints within their travel): the TCP lies
    within the sum of its modules' spans, and that within the space's bound, of the base placement."""
    space = SPACES[name]
    ids = space[int(pick * space.count)]
    rng = np.random.default_rng(seed)
    placement = random_placement(rng, spread)
    robot = ModuleAssembly.from_serial_modules(DBS[name], ids, base_placement=placement).robot
    own = sum(module_span(DBS[name][m]) for m in ids)
    bound = space_reach(space)
    assert own <= bound + 1e-12
    for _ in range(20):
        q = anywhere_configuration(robot, rng)
        distance = float(np.linalg.norm(robot.fk(q)[:3, 3] - placement[:3, 3]))
        assert distance <= own + 1e-9, (ids, q.tolist())


def test_the_bound_is_reached_by_the_stretched_arm(robco):
    """Experiment 2's space: base, five joints each followed by the 0.4 m tube, the gripper; at q = 0 it stands
    straight up, exactly as far as the bound says (2.94 m)."""
    space = paper_exp2_space(robco)
    assert space_reach(space) == pytest.approx(0.06 + 5 * 0.15 + 5 * 0.4 + 0.13)
    ids = ("base", *(["J", "I_400"] * 5), "gripper")
    assert ids in space
    tcp = ModuleAssembly.from_serial_modules(robco, ids).robot.fk(np.zeros(5))[:3, 3]
    assert np.linalg.norm(tcp) == pytest.approx(space_reach(space))


def test_module_span_of_a_prismatic_joint_adds_its_travel(primitives):
    spans = {m.id: module_span(m) for m in primitives}
    prismatic = [m for m in primitives if any(j.type == "prismatic" for j in m.joints)]
    assert prismatic, "the primitive set has a prismatic joint module"
    for m in prismatic:
        travel = max(max(abs(j.limits.lower), abs(j.limits.upper)) for j in m.joints if j.type == "prismatic")
        assert spans[m.id] >= travel > 0


@pytest.mark.parametrize("order", ["cost", "space"])
def test_a_task_nothing_can_solve_is_answered_without_enumerating(robco, order):
    task = load_task(UNREACHABLE)
    result = ExhaustiveSearch(paper_exp2_space(robco), "mass", workers=1, progress=False, order=order).optimize(task)
    assert result.stopped == "unreachable" and result.evaluations == 0 and result.best_ids is None
    (why,) = result.settings["unreachable"]
    assert why.startswith("goal g2 is 5.025 m from the base") and "2.940 m" in why
    assert "goal g2 is 5.025 m" in result.summary()
    data = json.loads(json.dumps(result.to_json_data()))
    assert data["stopped"] == "unreachable"


def test_the_bound_is_measured_from_the_base_placement(robco, tmp_path):
    """The same goal 5 m from the origin, with the base placed 3 m towards it: no longer provably out of reach."""
    data = json.loads(UNREACHABLE.read_text())
    space = paper_exp2_space(robco)
    assert [g.goal for g in unreachable_goals(space, load_task(UNREACHABLE))] == ["g2"]
    placed = [[1.0, 0.0, 0.0, 3.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]
    data["constraints"] = [{"type": "basePlacement", "pose": {"nominal": placed}}]
    data["goals"] = [g for g in data["goals"] if g["ID"] == "g2"]
    (tmp_path / "moved.json").write_text(json.dumps(data))
    assert unreachable_goals(space, load_task(tmp_path / "moved.json")) == []


def test_every_other_new_task_may_be_reachable(robco):
    space = paper_exp2_space(robco)
    for path in sorted(TASKS.glob("*.json")):
        if path != UNREACHABLE:
            assert unreachable_goals(space, load_task(path)) == [], path.name


def test_cli_exp2_names_the_unreachable_goal(capsys):
    code = main(["paper", "exp2", "--task", str(UNREACHABLE), "--algorithm", "constrained", "--workers", "1"])
    out = capsys.readouterr().out
    assert code in (0, 1)
    assert "0 assemblies" in out and "goal g2 is 5.025 m from the base" in out


def test_the_search_refuses_an_assembly_too_short_for_a_goal_without_building_it(robco):
    """The ``robot`` filter leaves the model unbuilt when the modules alone prove a goal out of reach; the
    ``workspace`` filter refuses it with the reason the built robot gives."""
    from timor_core.kinematics.ik import outside_workspace
    from timor_core.search import FilterChain

    task = load_task(TASKS / "moved_goals.json")
    chain = FilterChain(task, robco, "mass")
    short = ("base", "J", "I_50", "gripper")  # g1 is 0.53 m from the base
    c = chain(short, np.inf)
    assert c.robot is None and c.failed_filter == "workspace" and c.reason_key == "g1: outside workspace"
    robot = ModuleAssembly.from_serial_modules(robco, short).robot
    assert f"(reach bound {robot.reach():.3f} m)" in c.reason
    for g in task.goals:
        assert outside_workspace(robot, robot.tcp, np.asarray(g.goal_pose.world), g.goal_pose.tolerance) > 0
    # the task's optimum: built, and valid
    c = chain(("base", "J", "L_200", "J", "L_100", "J", "L_100", "J", "gripper"), np.inf)
    assert c.robot is not None and c.failed_filter is None


@pytest.mark.parametrize("name", ["moved_goals", "more_goals", "obstacle_middle", "base_moved"])
def test_the_bounds_from_the_modules_give_the_built_robots_verdict(robco, name):
    """Random assemblies of experiment 2's space, with the task's base moved and turned: the workspace verdict
    and reason with the robot unbuilt (``stop_early``, the search's default) are those of the built robot
    (``stop_early=False`` builds every robot)."""
    from timor_core.search import FilterChain, FilterConfig
    from timor_core.search.filtering.filters import AssemblyFilter, LimitsFilter, RobotFilter, WorkspaceFilter
    from timor_core.search.filtering.quick_reach import quick_chain

    data = json.loads((TASKS / f"{name}.json").read_text())
    rng = np.random.default_rng(len(name))
    placement = random_placement(rng, 0.3)
    data["constraints"] = [{"type": "basePlacement", "pose": {"nominal": placement.tolist()}}]
    task = load_task_data(data)
    filters = [AssemblyFilter(), LimitsFilter(), RobotFilter(), WorkspaceFilter()]
    quick = FilterChain(task, robco, "mass", FilterConfig(), filters)
    built = FilterChain(task, robco, "mass", FilterConfig(stop_early=False), filters)
    space = paper_exp2_space(robco)
    refused = 0
    for i in rng.integers(0, space.count, 150):
        ids = space[int(i)]
        a, b = quick(ids, np.inf), built(ids, np.inf)
        assert b.robot is not None
        assert (a.failed_filter, a.reason_key, a.reason) == (b.failed_filter, b.reason_key, b.reason), ids
        refused += a.failed_filter == "workspace"
        assert (a.robot is None) == (a.failed_filter == "workspace")
        qc = quick_chain(ModuleAssembly.from_serial_modules(robco, ids, base_placement=placement), placement)
        assert qc is not None and qc.reach == pytest.approx(b.robot.reach())
    assert refused > 20


OPTIMA = {  # the lightest robot of experiment 2's space per new task (both search orders; benchmarks/README.md)
    "moved_goals": ("base", "J", "L_200", "J", "L_100", "J", "L_100", "J", "gripper"),
    "base_moved": ("base", "J", "L_200", "J", "L_100", "J", "L_100", "J", "gripper"),  # the same, moved and turned
    "more_goals": ("base", "J", "L_100", "J", "L_150", "J", "L_250", "J", "L_100", "gripper"),
    "obstacle_middle": ("base", "J", "L_100", "J", "L_100", "J", "L_100", "J", "L_100", "J", "gripper"),
}


@pytest.mark.parametrize("name", sorted(OPTIMA))
def test_the_optimum_of_each_new_task_reaches_every_goal(robco, capsys, name):
    """`timor solve` on the optimum the searches found: every goal reached (task-aware IK, then checked)."""
    ids = OPTIMA[name]
    assert ids in paper_exp2_space(robco)
    path = TASKS / f"{name}.json"
    assert main(["solve", str(path), "--db", "robco_like", "--json", "--modules", *ids]) == 0
    goals = json.loads(capsys.readouterr().out)["goals"]
    assert goals and all(g["reached"] for g in goals), goals


@pytest.mark.slow
def test_the_cost_order_finds_the_optimum_of_a_new_task(robco):
    """The cheapest-first search on the goals-moved task: the optimum above, verified (about 10-20 s)."""
    from timor_core.paper.experiments import exp2

    (run,) = exp2(robco, load_task(TASKS / "moved_goals.json"), algorithms=("constrained",), workers=1).runs
    assert run.best_ids == OPTIMA["moved_goals"] and run.ok
