"""Compatibility suite (issue 13 item 12): the reference toolbox's tests/test_collisions.py (timor-python 1.1.1)
ported to timor_core (the Panda from example-robot-data, IMPROV from ../shared)."""

from __future__ import annotations

import numpy as np
from test_ref_robot_setup import panda, panda_paths  # noqa: F401  (fixtures)

from timor_core import ModuleAssembly
from timor_core.task import Task

IMPROV_SIX = ("1", "21", "4", "21", "5", "23", "7", "12")


def test_assembly_to_robot_collisions(primitives, improv):
    """ref: test_collisions.py::test_assembly_to_robot_collisions"""
    # deliberate difference: timor_core's embedded geometric primitives are its own design, not the reference's,
    # so "rigid always collides" does not carry over; the intent does: fewer ignored pairs, more collisions
    simple = ModuleAssembly.from_serial_modules(primitives, ("base", "J2", "i_30", "J1", "l_15", "eef"))
    robots = [simple.to_pin_robot(ignore_collisions=m) for m in ("rigid", "via_joint", "rigid_via_joint")]
    pairs = [len(r.collision_pairs) for r in robots]
    assert pairs[0] > pairs[1] > pairs[2]
    rng = np.random.default_rng(123)
    qs = [robots[0].random_configuration(rng) for _ in range(200)]
    hits = [sum(r.has_self_collision(q) for q in qs) for r in robots]
    assert hits[0] >= hits[1] >= hits[2] and hits[0] > hits[2]

    assembly = ModuleAssembly.from_serial_modules(improv, IMPROV_SIX)
    every = assembly.to_pin_robot(ignore_collisions="rigid")
    neighbours = assembly.to_pin_robot(ignore_collisions="via_joint")
    fewest = assembly.to_pin_robot(ignore_collisions="rigid_via_joint")
    known_free = (
        np.zeros(6),
        np.array((0, 0, np.pi / 2, 0, 0, -np.pi / 2)),
        np.array((0, -np.pi / 4, np.pi / 8, np.pi / 8, -np.pi / 6, 0)),
    )
    for q in known_free:  # IMPROV needs the rigid_via_joint rule to move free of collisions
        assert every.has_self_collision(q) and neighbours.has_self_collision(q)
        assert not fewest.has_self_collision(q) and not assembly.robot.has_self_collision(q)
    assert any(fewest.has_self_collision(fewest.random_configuration(rng)) for _ in range(1000))


def test_robot_self_collision(panda):  # noqa: F811
    """ref: test_collisions.py::test_robot_self_collision"""
    # deliberate difference: q = 0 is outside the Panda's fourth joint range and folds it onto itself with the
    # example-robot-data meshes; the Panda's "ready" pose with open fingers is the collision-free reference pose
    neutral = np.array([0, -np.pi / 4, 0, -3 * np.pi / 4, 0, np.pi / 2, np.pi / 4, 0.04, 0.04])
    assert not panda.has_self_collision(neutral)
    rng = np.random.default_rng(5)
    q = next(q for q in (panda.random_configuration(rng) for _ in range(10_000)) if panda.has_self_collision(q))
    assert not panda.has_self_collision(neutral) and panda.has_self_collision(q)  # stateless: nothing remembered


def test_task_collisions(panda):  # noqa: F811
    """ref: test_collisions.py::test_task_collisions"""
    empty = Task.from_json_data({"header": {"ID": "Collision Test"}, "obstacles": [], "goals": []})
    rng = np.random.default_rng(123)
    qs = [panda.random_configuration(rng) for _ in range(100)]
    self_collides = [panda.has_self_collision(q) for q in qs]
    ready = np.array([0, -np.pi / 4, 0, -3 * np.pi / 4, 0, np.pi / 2, np.pi / 4, 0.04, 0.04])
    assert not panda.has_collision(ready, empty)
    assert [panda.has_collision(q, empty) for q in qs] == self_collides
    sphere = np.eye(4)
    sphere[:3, 3] = (0.5, 0.5, 0.3)
    task = Task.from_json_data(
        {
            "header": {"ID": "Collision Test"},
            "obstacles": [
                {"ID": "sphere", "collision": [{"type": "sphere", "parameters": {"r": 0.3}, "pose": sphere.tolist()}]}
            ],
            "goals": [],
        }
    )
    margins = (0.0, 0.1, 0.2, 0.5)
    counts = dict.fromkeys(margins, 0)
    for q, own in zip(qs, self_collides):
        if own:
            assert panda.has_collision(q, task)
            continue
        for margin in margins:
            if panda.has_collision(q, task, margin=margin):
                hits = panda.collisions(q, task, margin=margin)
                assert {h.kind for h in hits} == {"obstacle"} and all("sphere" in h.describe() for h in hits)
                counts[margin] += 1
    assert all(counts[a] <= counts[b] for a in margins for b in margins if a <= b)  # more margin, more hits
    assert counts[0.5] > counts[0.0]
