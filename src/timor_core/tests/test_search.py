"""Configuration search: filters (with reasons and a funnel), evaluate, exhaustive and random search, parallel
evaluation (identical results with 1 and 2 workers), JSON results; on a synthetic task whose goals a known
3-DOF robot reaches, and on the user-study task when ../shared is present."""

from __future__ import annotations

import copy
import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from timor_core import ModuleAssembly, ModulesDB
from timor_core.errors import InputError
from timor_core.search import (
    DEFAULT_FILTER_NAMES,
    Budget,
    Evaluator,
    ExhaustiveSearch,
    FilterChain,
    FilterConfig,
    Optimizer,
    ParallelEvaluator,
    RandomSearch,
    SearchResult,
    SerialSpace,
    SpaceOptions,
    evaluate,
)
from timor_core.search.filtering.filters import reason_category
from timor_core.task import Task

SHARED = Path(__file__).resolve().parents[3].parent / "shared"
USER_STUDY = SHARED / "data" / "cobra" / "tasks" / "user_study.json"
needs_user_study = pytest.mark.skipif(not USER_STUDY.is_file(), reason=f"user-study task not found at {USER_STUDY}")

KNOWN = ("base", "J", "L_250", "J", "I_200", "J", "gripper")  # in SMALL, 3 DOF, 10.36 kg
ARM = ("base", "J", "L_250", "J", "L_250", "J", "gripper")
SMALL = SpaceOptions(
    dof_min=1,
    dof_max=3,
    first_is_joint=True,
    modules=("J", "L_100", "L_250", "I_200"),
    max_links_between_joints=1,
    max_links_after_last_joint=1,
)  # 84 assemblies
FAST = FilterConfig(ik_tries=10)  # fewer kinematic IK restarts: quick failures on unreachable goals
TOL = {"toleranceProjection": ["x", "y", "z", "Theta_R"], "tolerance": [[-0.002, 0.002]] * 3 + [[0.0, 0.3]]}


def synthetic_task(goal_poses, obstacles=(), constraints=(), gravity=(0.0, 0.0, -9.81), tid="synthetic") -> Task:
    goals = [
        {"ID": f"g{k}", "type": "at", "goalPose": {"nominal": np.asarray(T).tolist(), **TOL}}
        for k, T in enumerate(goal_poses)
    ]
    data = {
        "header": {"ID": tid, "taskName": tid, "gravity": list(gravity)},
        "obstacles": [
            {
                "ID": oid,
                "collision": [{"type": "box", "parameters": dict(zip("xyz", size)), "pose": pose.tolist()}],
            }
            for oid, size, pose in obstacles
        ],
        "goals": goals,
        "constraints": list(constraints),
    }
    return Task.from_json_data(copy.deepcopy(data))


def _at(xyz) -> np.ndarray:
    T = np.eye(4)
    T[:3, 3] = xyz
    return T


FLOOR = ("floor", (3.0, 3.0, 0.1), _at((0.0, 0.0, -0.06)))


# one worker builds the module's search result once for all the tests here (xdist spreads a module's tests)
pytestmark = pytest.mark.xdist_group("search")


@pytest.fixture(scope="module")
def space(robco) -> SerialSpace:
    return SerialSpace(robco, SMALL)


@pytest.fixture(scope="module")
def known_robot(robco):
    return ModuleAssembly.from_serial_modules(robco, KNOWN).robot


@pytest.fixture(scope="module")
def known_qs(known_robot) -> list[np.ndarray]:
    """Two configurations of the known robot, free of self-collision, TCP well above the floor."""
    rng = np.random.default_rng(5)
    out = []
    while len(out) < 2:
        q = known_robot.random_configuration(rng)
        if not known_robot.has_self_collision(q) and known_robot.fk(q)[2, 3] > 0.15:
            out.append(q)
    return out


@pytest.fixture(scope="module")
def task(known_robot, known_qs) -> Task:
    """Two at goals: the known robot's TCP poses (reachable by construction), and a floor."""
    return synthetic_task([known_robot.fk(q) for q in known_qs], obstacles=[FLOOR])


@pytest.fixture(scope="module")
def result(space, task, robco) -> SearchResult:
    return ExhaustiveSearch(space, cost="mass", filters=FAST, workers=1, progress=False).optimize(task, robco)


def check_solution(db, ids, goals_q, task: Task) -> None:
    """The assembly reaches every goal within its tolerance, free of collisions, at the stored and at fresh IK."""
    robot = ModuleAssembly.from_serial_modules(db, ids).robot
    for k, goal in enumerate(task.goals):
        q = np.asarray(goals_q[goal.id], dtype=float)
        assert goal.goal_pose.valid(robot.fk(q))
        assert not robot.has_collision(q, task)
        assert robot.within_limits(q)
        fresh = robot.ik(goal.goal_pose, task=task, rng=k, details=True)
        assert fresh.success, fresh.reason
        assert goal.goal_pose.valid(robot.fk(fresh.q))
        assert not robot.has_collision(fresh.q, task)


# -- evaluate and the filters ------------------------------------------------------------------------


def test_known_robot_is_valid_and_evaluation_is_deterministic(task, robco, known_robot):
    ev = evaluate(KNOWN, task, robco, "mass", FAST)
    assert ev.valid and ev.failed_filter is None and ev.reason == ""
    assert ev.cost == pytest.approx(known_robot.mass)
    assert set(ev.goals) == {"g0", "g1"} and all(g.success for g in ev.goals.values())
    assert len(ev.timings) == len(DEFAULT_FILTER_NAMES)
    again = evaluate(KNOWN, task, robco, "mass", FAST)
    assert again.goals == ev.goals  # same seed, same configurations
    other = evaluate(KNOWN, task, robco, "mass", FAST, rng=7)
    assert other.valid
    check_solution(robco, KNOWN, ev.q, task)


def test_evaluate_accepts_references_and_round_trips(task, robco, tmp_path):
    path = task.to_json_file(tmp_path / "synthetic.json")
    a = evaluate(KNOWN, task, robco, "mass", FAST)
    b = evaluate(KNOWN, path, "robco_like", "mass", FAST)  # loaded once per process, as a worker does
    assert b.valid and b.goals == a.goals and b.cost == a.cost
    assert type(a).from_json(a.to_json()) == a


def test_every_filter_fails_with_its_reason_in_the_funnel(robco, known_robot, known_qs):
    T = known_robot.fk(known_qs[0])
    reachable = synthetic_task([T])
    T_arm = ModuleAssembly.from_serial_modules(robco, ARM).robot.fk([0.3, 1.0, 0.5])  # joint 2 holds a lever
    config = FilterConfig(ik_tries=10, max_modules=7, retries=1)
    cases = [  # (task, ids, bound, expected filter, expected reason key)
        (reachable, ("base", "nope", "gripper"), math.inf, "assembly", "cannot assemble: UnknownModuleError"),
        (reachable, KNOWN, 0.0, "bound", "cost not below the best found"),
        (reachable, ("base", "J", "I_200", "J", "I_200", "J", "L_100", "gripper"), math.inf, "limits", None),
        (reachable, ("base", "J"), math.inf, "robot", "no robot model: AssemblyError"),
        (synthetic_task([_at((5.0, 0.0, 0.3))]), KNOWN, math.inf, "workspace", "g0: outside workspace"),
        (synthetic_task([_at((0.1, 0.0, 0.2))]), ("base", "J", "gripper"), math.inf, "ik", "g0: no solution found"),
        # the same with the proof of search.reach_proof (the default): refused before any IK
        (
            synthetic_task([_at((0.1, 0.0, 0.2))]),
            ("base", "J", "gripper"),
            math.inf,
            "workspace",
            "g0: no configuration reaches it",
        ),
        # the exhaustive search's family filter (FilterConfig.family_proof): the same proof, before the robot is built
        (
            synthetic_task([_at((0.1, 0.0, 0.25))]),
            ("base", "J", "gripper"),
            math.inf,
            "family",
            "g0: no configuration reaches it",
        ),
        (
            synthetic_task([T], obstacles=[("block", (0.12, 0.12, 0.12), _at(T[:3, 3]))]),
            KNOWN,
            math.inf,
            "ik_task",
            "g0: every configuration within its tolerance collides with an obstacle",  # search.sweep_proof
        ),
        (synthetic_task([T_arm], gravity=(0.0, 0.0, -9810.0)), ARM, math.inf, "torques", None),
        (
            synthetic_task([T], constraints=[{"type": "validJointAngles", "limits": [[-0.01] * 3, [0.01] * 3]}]),
            KNOWN,
            math.inf,
            "joint_limits",
            "g0: validJointAngles",
        ),
    ]
    seen = {}
    for task, ids, bound, name, key in cases:
        proof = name != "ik"  # the kinematic IK's own failure: the proof would refuse that robot first
        cfg = replace(config, family_proof=True) if name == "family" else config
        chain = FilterChain(task, robco, "mass", cfg if proof else replace(cfg, proof_budget=0))
        c = chain(ids, bound)
        assert c.failed_filter == name, (name, c.failed_filter, c.reason)
        assert c.reason and c.reason_key
        if key is not None:
            assert c.reason_key == key, c.reason
        # the funnel counts the candidate in every filter up to the failing one, and names the reason
        assert chain.funnel.reasons[name][c.reason_key] == 1
        k = DEFAULT_FILTER_NAMES.index(name)
        assert all(chain.funnel.passed[n] == 1 for n in DEFAULT_FILTER_NAMES[:k])
        assert all(chain.funnel.entered[n] == 0 for n in DEFAULT_FILTER_NAMES[k + 1 :])
        seen[name] = c.reason_key
    assert set(seen) == set(DEFAULT_FILTER_NAMES)
    assert seen["limits"] == "too many modules"
    assert seen["torques"].startswith("g0: torque limit of joint")


def test_reason_categories():
    assert reason_category("collision with obstacle wall (in 3 of 5 reached configurations)") == (
        "collision with obstacle wall"
    )
    not_found = "no solution found (the closest pose found misses the tolerance by 12 mm and 3 deg)"
    assert reason_category(not_found) == "no solution found"
    assert reason_category("torque limit of joint m1_J (97.1 > 80.0) (in 2 of 2)") == "torque limit of joint m1_J"
    assert reason_category("validJointAngles: joint m1_J at 1 outside [0, 0.5]") == "validJointAngles"


def test_trajectory_costs_are_refused(space, task, robco):
    with pytest.raises(InputError, match="cyc"):
        ExhaustiveSearch(space, cost="cyc", workers=1, progress=False).optimize(task, robco)


def test_space_and_db_must_match(space, task, primitives):
    with pytest.raises(InputError, match="module set"):
        ExhaustiveSearch(space, workers=1, progress=False).optimize(task, primitives)


# -- exhaustive search ---------------------------------------------------------------------------------


def test_exhaustive_search_finds_a_valid_assembly_no_heavier_than_the_known_one(result, space, task, robco):
    known_cost = ModuleAssembly.from_serial_modules(robco, KNOWN).mass
    assert result.found and result.stopped == "exhausted"
    assert result.best_cost <= known_cost + 1e-9
    assert result.best_ids in space and result.best_seq == space.index(result.best_ids)
    assert result.evaluations == len(space) == result.funnel.total
    assert result.valid >= 1 and result.next_seq == len(space)
    assert result.improvements and result.improvements[-1]["cost"] == result.best_cost
    assert result.history[-1]["best_cost"] == result.best_cost
    check_solution(robco, result.best_ids, result.best_q, task)


def test_the_funnel_explains_every_rejection_and_the_bound_skips(result):
    f = result.funnel
    assert f.names == list(DEFAULT_FILTER_NAMES)
    for name in f.names:
        assert sum(f.reasons[name].values()) == f.failed(name)
        assert f.entered[name] == f.passed[name] + f.failed(name)
    assert f.failed("bound") > 0 and f.reasons["bound"]["cost not below the best found"] == f.failed("bound")
    assert f.failed("family") > 0  # the exhaustive search proves goals out of reach per family of chains
    assert all(k.endswith("no configuration reaches it") for k in f.reasons["family"])
    assert all(k.endswith(("outside workspace", "no configuration reaches it")) for k in f.reasons["workspace"])
    assert f.valid == result.valid
    rows = f.rows()
    assert [r["name"] for r in rows] == f.names and "reasons" in rows[0]
    assert "bound" in f.summary() and "best:" in result.summary()


def test_one_and_two_workers_give_identical_results(result, space, task, robco):
    two = ExhaustiveSearch(space, filters=FAST, workers=2, progress=False).optimize(task, robco)
    assert two.workers == 2
    assert (two.best_ids, two.best_cost, two.best_seq) == (result.best_ids, result.best_cost, result.best_seq)
    assert two.best_goals == result.best_goals
    assert two.evaluations == result.evaluations and two.stopped == result.stopped
    # the same per-assembly verdicts through the batch interface a GA would use
    batch = [space[i] for i in range(0, len(space), 3)]
    with ParallelEvaluator(task, robco, "mass", FAST, workers=2) as pe:
        parallel = pe.evaluate_batch(batch)
    local = Evaluator(task, robco, "mass", FAST)
    for k, (ids, ev) in enumerate(zip(batch, parallel)):
        assert ev.ids == ids and ev.seq == k
        ref = local(ids, seq=k)
        assert (ev.valid, ev.failed_filter, ev.reason_key, ev.goals) == (
            ref.valid,
            ref.failed_filter,
            ref.reason_key,
            ref.goals,
        )


def test_cost_order_finds_the_optimum_and_stops_early(result, space, task, robco):
    by_cost = ExhaustiveSearch(space, filters=FAST, workers=1, progress=False, order="cost").optimize(task, robco)
    assert by_cost.best_cost == pytest.approx(result.best_cost)
    assert by_cost.best_ids == result.best_ids
    assert by_cost.stopped == "bound" and by_cost.evaluations < result.evaluations


def test_budgets_and_resuming(result, space, task, robco):
    first = ExhaustiveSearch(space, filters=FAST, workers=1, progress=False).optimize(task, robco, Budget(40))
    assert first.evaluations == 40 and first.stopped == "max_evaluations" and first.next_seq == 40
    rest = ExhaustiveSearch(
        space,
        filters=FAST,
        workers=1,
        progress=False,
        start=first.next_seq,
        bound=first.best_cost if first.found else math.inf,
    ).optimize(task, robco)
    assert rest.evaluations == len(space) - 40 and rest.stopped == "exhausted"
    best = min((r for r in (first, rest) if r.found), key=lambda r: (r.best_cost, r.best_seq))
    assert (best.best_ids, best.best_cost) == (result.best_ids, result.best_cost)
    timed = ExhaustiveSearch(space, filters=FAST, workers=1, progress=False).optimize(task, robco, Budget(max_time=0))
    assert timed.stopped == "max_time" and timed.evaluations == 0 and timed.next_seq == 0
    with pytest.raises(InputError):
        Budget(max_evaluations=-1)


def test_json_round_trip(result, tmp_path):
    path = result.to_json_file(tmp_path / "out" / "result.json")
    back = SearchResult.from_json_file(path)
    assert back.to_json_data() == result.to_json_data()
    assert (back.best_ids, back.best_cost, back.best_goals) == (result.best_ids, result.best_cost, result.best_goals)
    assert back.funnel == result.funnel
    assert sorted(p.name for p in path.parent.iterdir()) == ["result.json"]  # atomic: no temp files left
    bad = tmp_path / "bad.json"
    bad.write_text('{"version": 99}')
    with pytest.raises(InputError, match="version"):
        SearchResult.from_json_file(bad)


def test_random_search_through_the_same_interface(space, task, robco, result):
    search = RandomSearch(space, cost="mass", filters=FAST, seed=3, workers=1, progress=False)
    assert isinstance(search, Optimizer) and isinstance(ExhaustiveSearch(space), Optimizer)
    partial = search.optimize(task, robco, Budget(max_evaluations=30))
    assert partial.evaluations == 30 and partial.stopped == "max_evaluations" and partial.optimizer == "RandomSearch"
    assert partial.funnel.total == 30
    full = search.optimize(task, robco, None)  # the whole space in random order: the same optimum
    assert full.evaluations == len(space) and full.best_cost == pytest.approx(result.best_cost)
    check_solution(robco, full.best_ids, full.best_q, task)


# -- the user-study task -------------------------------------------------------------------------------


@needs_user_study
def test_user_study_search(robco):
    task = Task.from_json_file(USER_STUDY)
    known = ("base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper")  # valid, 11.02 kg
    space = SerialSpace(
        robco,
        SpaceOptions(
            dof_min=3,
            dof_max=3,
            first_is_joint=True,
            modules=("J", "L_150", "L_250", "I_100"),
            max_links_between_joints=1,
            max_links_after_last_joint=1,
        ),
    )  # 64 assemblies
    assert known in space
    ev = evaluate(known, task, robco)
    assert ev.valid, ev.reason
    res = ExhaustiveSearch(space, workers=1, progress=False, order="cost").optimize(task, robco)
    assert res.found and res.best_cost <= ev.cost + 1e-9
    check_solution(robco, res.best_ids, res.best_q, task)
    reasons = {k for name in res.funnel.names for k in res.funnel.reasons[name]}
    # out of reach: proven per family of chains (search.family_proof) or by the distance bounds
    assert any(k.endswith(("outside workspace", "no configuration reaches it")) for k in reasons)
    assert res.funnel.failed("family") > 0


@needs_user_study
@pytest.mark.slow
def test_user_study_search_with_two_workers(robco):
    task = Task.from_json_file(USER_STUDY)
    space = SerialSpace(
        robco,
        SpaceOptions(
            dof_min=3,
            dof_max=3,
            first_is_joint=True,
            modules=("J", "L_150", "L_250", "I_100"),
            max_links_between_joints=1,
            max_links_after_last_joint=1,
        ),
    )
    one = ExhaustiveSearch(space, workers=1, progress=False).optimize(task, robco)
    two = ExhaustiveSearch(space, workers=2, progress=False).optimize(task, robco)
    assert one.found and (one.best_ids, one.best_cost, one.best_goals) == (two.best_ids, two.best_cost, two.best_goals)


def test_embedded_db_is_loaded_once_per_process():
    from timor_core.search import load_db

    assert load_db("robco_like") is load_db("robco_like")
    assert isinstance(load_db("robco_like"), ModulesDB)


def _follow_task(poses) -> Task:
    trajectory = [{"nominal": np.asarray(T).tolist(), **TOL} for T in poses]
    data = {
        "header": {"ID": "follow", "taskName": "follow"},
        "obstacles": [],
        "goals": [{"ID": "f", "type": "follow", "trajectory": {"pose": trajectory}}],
        "constraints": [],
    }
    return Task.from_json_data(data)


def test_follow_goals_are_filtered_along_their_whole_trajectory(robco, known_robot, known_qs):
    """Issue 13 item 11: a follow trajectory that leaves the workspace, or passes a pose no configuration reaches,
    fails in the search filters (before: only its first pose was looked at, so it passed)."""
    q0, q1 = known_qs
    along = [known_robot.fk(q0 + (q1 - q0) * s) for s in np.linspace(0, 1, 9)]
    config = FilterConfig(ik_tries=20, stop_early=True)
    ok = FilterChain(_follow_task(along), robco, "mass", config)(KNOWN, math.inf)
    assert ok.failed_filter is None, ok.reason

    leaves = [*along[:5], _at((4.0, 0.0, 0.5)), *along[5:]]  # one pose far outside the workspace
    c = FilterChain(_follow_task(leaves), robco, "mass", config)(KNOWN, math.inf)
    assert c.failed_filter == "workspace" and "pose 5 of its trajectory" in c.reason
    assert FilterChain(synthetic_task([leaves[0]]), robco, "mass", config)(KNOWN, math.inf).failed_filter is None

    inside = known_robot.fk(q0)  # within reach, but turned so no configuration of the 3-axis arm matches it
    inside[:3, :3] = np.diag([1.0, -1.0, -1.0]) @ inside[:3, :3]
    twisted = [*along[:4], inside, *along[4:]]
    config_all = FilterConfig(ik_tries=20, follow_samples=len(twisted))
    c = FilterChain(_follow_task(twisted), robco, "mass", config_all)(KNOWN, math.inf)
    assert c.failed_filter == "ik" and "pose 4 of its trajectory" in c.reason, c.reason
    with pytest.raises(InputError, match="follow_samples"):
        FilterConfig(follow_samples=-1)
