"""The unseen-task generator of issue 38 (``benchmarks/unseen_tasks.py``): reproducible from its seed, every kind
it promises (turned and moved scenes, spread goals, several obstacles clear of the goals, goals near a reach
boundary, an unsolvable one the space bound proves), and tasks the library loads."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from timor_core import ModuleAssembly
from timor_core.search import paper_exp2_space
from timor_core.search.filtering.space_reach import space_reach, unreachable_goals
from timor_core.task import Task

REPO = Path(__file__).resolve().parents[3]
GENERATOR = REPO / "benchmarks" / "unseen_tasks.py"
pytestmark = pytest.mark.skipif(
    not (REPO / "benchmarks" / "unseen_tasks.py").is_file() or not (REPO.parent / "shared").is_dir(),
    reason="needs the repository's benchmarks/ and the shared user-study task",
)


def _generator():
    spec = importlib.util.spec_from_file_location("unseen_tasks", GENERATOR)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gen():
    return _generator()


@pytest.fixture(scope="module")
def tasks(gen):
    return gen.generate(38)


def _base(data: dict) -> np.ndarray:
    return np.asarray(data["constraints"][0]["pose"]["nominal"], dtype=float)


def _goal_positions(data: dict) -> list[np.ndarray]:
    return [np.asarray(g["goalPose"]["nominal"], dtype=float)[:3, 3] for g in data["goals"]]


def test_the_same_seed_gives_the_same_tasks_and_another_seed_others(gen, tasks, tmp_path):
    again = gen.generate(38)
    assert json.dumps(again, sort_keys=True) == json.dumps(tasks, sort_keys=True)
    other = gen.generate(39)
    assert all(json.dumps(other[k]) != json.dumps(tasks[k]) for k in tasks)
    paths = gen.write(38, tmp_path)
    assert [p.stem for p in paths] == list(gen.KINDS)
    assert json.loads(paths[0].read_text()) == tasks[gen.KINDS[0]]


def test_every_kind_is_a_task_the_library_loads_with_its_scene_turned_and_moved(gen, tasks):
    assert list(tasks) == list(gen.KINDS) and len(tasks) >= 8
    for name, data in tasks.items():
        task = Task.from_json_data(data)
        assert task.id == name and task.goals
        base = _base(data)
        turned = math.degrees(math.atan2(base[1, 0], base[0, 0])) % 360
        assert 20 - 1e-9 <= turned <= 340 + 1e-9, name
        from timor_core.task.feedback import task_base_placement

        assert np.allclose(np.asarray(task_base_placement(task), dtype=float), base), name


def test_the_turned_user_study_is_the_user_study_seen_from_its_base(gen, tasks):
    study = json.loads(gen.USER_STUDY.read_text())
    data = tasks["turned_user_study"]
    inv = np.linalg.inv(_base(data))
    for mine, theirs in zip(data["goals"], study["goals"], strict=True):
        local = inv @ np.asarray(mine["goalPose"]["nominal"])
        assert np.allclose(local, theirs["goalPose"]["nominal"], atol=1e-9)
    for mine, theirs in zip(data["obstacles"], study["obstacles"], strict=True):
        local = inv @ np.asarray(mine["collision"][0]["pose"])
        assert np.allclose(local, theirs["collision"][0]["pose"], atol=1e-9)


@pytest.mark.parametrize("name, boxes", [("obstacles_3", 3), ("obstacles_4", 4)])
def test_several_obstacles_clear_of_every_goal_and_of_the_base(gen, tasks, name, boxes):
    data = tasks[name]
    assert len(data["obstacles"]) == boxes
    base = _base(data)
    for o in data["obstacles"]:
        (c,) = o["collision"]
        T = np.asarray(c["pose"])
        size = np.array([c["parameters"][k] for k in "xyz"])
        for p in _goal_positions(data):
            assert gen._clear(T, size, [p], 0.12), (o["ID"], p)
        column = [base[:3, 3] + base[:3, 2] * z for z in np.linspace(0.0, 0.4, 9)]
        assert gen._clear(T, size, column, 0.2)


def test_spread_goals_point_four_ways_from_the_base(tasks):
    data = tasks["spread_goals"]
    base = _base(data)
    local = [np.linalg.inv(base) @ np.append(p, 1.0) for p in _goal_positions(data)]
    angles = sorted(math.atan2(v[1], v[0]) for v in local)
    gaps = np.diff([*angles, angles[0] + 2 * math.pi])
    assert len(angles) == 4 and gaps.min() > math.radians(30), np.degrees(gaps)


def test_boundary_goals_lie_near_their_reference_arms_reach(gen, tasks, robco):
    def reach(ids):
        return ModuleAssembly.from_serial_modules(robco, ids).robot.reach()

    for name, ids, share in (("boundary", gen.LONG_ARM, 0.92), ("boundary_high", gen.THREE_JOINTS, 0.9)):
        data = tasks[name]
        far = np.linalg.norm(_goal_positions(data)[0] - _base(data)[:3, 3])
        assert share * reach(ids) <= far <= reach(ids) + 1e-9, name


def test_only_the_unsolvable_task_is_proven_out_of_reach_and_its_goal_is_beyond_the_space(gen, tasks, robco):
    space = paper_exp2_space(robco)
    assert space_reach(space) == pytest.approx(gen.SPACE_REACH)
    for name, data in tasks.items():
        found = unreachable_goals(space, Task.from_json_data(data))
        assert bool(found) == (name == "unsolvable"), (name, found)
    far = np.linalg.norm(_goal_positions(tasks["unsolvable"])[1] - _base(tasks["unsolvable"])[:3, 3])
    assert far > gen.SPACE_REACH + 0.1 - 1e-9
