"""The ``ik`` filter, stopping at the first failing goal, tries first the goals the family filter found no witness
for (s50b-ik: on ``obstacles_4`` 24 chains reached g1 and g3 within the proofs' slacks, not g2, and failed g2's IK
after g1's had succeeded). Each goal's IK is seeded by its index, so the verdict and the goals that fail stay."""

from __future__ import annotations

import numpy as np
import pytest

from timor_core import ModulesDB
from timor_core.search import FilterConfig
from timor_core.search.filtering.filter_state import Candidate, TaskContext
from timor_core.search.filtering.filters import AssemblyFilter, IKFilter
from timor_core.task import Task

IDS = ("base", "J", "L_100", "J", "L_250", "J", "L_100", "J", "I_200", "gripper")
TOL = {"toleranceProjection": ["x", "y", "z", "Theta_R"], "tolerance": [[-0.001, 0.001]] * 3 + [[0.0, 0.785]]}


@pytest.fixture(scope="module")
def task_and_db() -> tuple[Task, ModulesDB]:
    """Goals g1 and g3 at the arm's poses of two configurations, g2 3 m away (no configuration reaches it)."""
    db = ModulesDB.from_name("robco_like")
    ctx = TaskContext(Task.from_json_data(_task([np.eye(4)] * 3)), db, "mass", FilterConfig())
    c = _candidate(ctx)
    rng = np.random.default_rng(3)
    poses = [c.robot.fk(c.robot.random_configuration(rng)) for _ in range(2)]
    far = np.eye(4)
    far[:3, 3] = (3.0, 0.0, 0.5)
    return Task.from_json_data(_task([poses[0], far, poses[1]])), db


def _task(poses: list[np.ndarray]) -> dict:
    goals = [{"ID": f"g{k + 1}", "type": "at", "constraints": [], "goalPose": {"nominal": T.tolist(), **TOL}}
             for k, T in enumerate(poses)]  # fmt: skip
    return {"header": {"ID": "goal_order"}, "goals": goals}


def _candidate(ctx: TaskContext, reached: set[int] = frozenset()) -> Candidate:  # type: ignore[assignment]
    c = Candidate(IDS, ctx)
    assert AssemblyFilter()(c) and c.build_robot()
    c.reached = set(reached)
    return c


@pytest.mark.parametrize("stop_early", [True, False])
def test_the_goals_without_a_witness_come_first(task_and_db, stop_early):
    task, db = task_and_db
    ctx = TaskContext(task, db, "mass", FilterConfig(stop_early=stop_early))
    plain, witnessed = _candidate(ctx), _candidate(ctx, {0, 2})
    assert not IKFilter()(plain) and not IKFilter()(witnessed)  # the same verdict either way
    assert plain.reason_key == witnessed.reason_key == "g2: unreachable"
    assert plain.goals["g1"].success  # task order: g1's IK ran (and succeeded) before g2's failed
    if stop_early:
        assert "g1" not in witnessed.goals and "g3" not in witnessed.goals  # g2 first: nothing else ran
    else:  # every goal is tried, in task order, with the same outcome per goal
        assert list(witnessed.goals) == ["g1", "g2", "g3"]
        for g in ("g1", "g2", "g3"):
            assert witnessed.goals[g].success == plain.goals[g].success
            assert witnessed.goals[g].q == plain.goals[g].q
    assert IKFilter().order(_candidate(ctx, {0, 1, 2})) == range(3)  # all witnessed: the task's order
