"""``CollisionChecker.collisions`` reads every pair's verdict through references it keeps into the checker's
``GeometryData`` (s50b-ik: ~13 us instead of ~65 us a call for 150 pairs; the task-aware IK names the contact of
every try it rejects). The references must follow each new pass: the oracle here reads the results afresh from the
bindings after its own pass, for configurations whose contacts differ from one call to the next."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from timor_core import ModuleAssembly, ModulesDB
from timor_core.common.transforms import translation
from timor_core.kinematics.collision import CollisionChecker, CollisionPair
from timor_core.model.geometry import Box, Sphere
from timor_core.task import Obstacle, Task, TaskHeader

SIX_DOF = ("base", "J1", "J2", "i_30", "J2", "i_30", "J1", "J2", "J1", "eef")


@pytest.fixture(scope="module")
def arm():
    return ModuleAssembly.from_serial_modules(ModulesDB.from_name("geometric_primitive_modules"), SIX_DOF).robot


def _oracle(checker: CollisionChecker, q: np.ndarray) -> list[CollisionPair]:
    """Every colliding pair, read from the bindings after a full pass (the way ``collisions`` read them before)."""
    robot = checker.robot
    pin.computeCollisions(robot.model, robot.data, checker.model, checker.data, q, False)
    objs, obstacles, out = checker.model.geometryObjects, {}, []
    for k in range(checker.n_robot, checker.model.ngeoms):
        name = objs[k].name  # obstacle_<id>_<count>
        obstacles[k] = name[len("obstacle_") : name.rindex("_")]
    for p, r in zip(checker.model.collisionPairs, checker.data.collisionResults):
        if r.isCollision():
            a, b = objs[p.first].name, objs[p.second].name
            kind = "obstacle" if p.second in obstacles else "self"
            out.append(CollisionPair(a, b, kind, obstacles.get(p.second)))
    return out


@pytest.mark.parametrize("margin", [0.0, 0.02], ids=["broad_phase", "margin"])
def test_collisions_follow_each_pass(arm, margin):
    """Contacts of obstacles and of the arm itself, changing from call to call, named as a fresh read names them."""
    rng = np.random.default_rng(5)
    q0 = arm.random_configuration(rng)
    elbow = arm.fk(q0)[:3, 3] * 0.5
    task = Task(
        TaskHeader("names"),
        obstacles=[
            Obstacle("ball", (Sphere(pose=translation(elbow), r=0.12),)),
            Obstacle("wall", (Box(pose=translation((0.25, 0.0, 0.3)), x=0.1, y=0.6, z=0.6),)),
        ],
    )
    checker = CollisionChecker(arm, task.obstacles, margin=margin)
    kinds: set[str] = set()
    changes = 0
    last: list[CollisionPair] | None = None
    for _ in range(150):
        q = arm.random_configuration(rng)
        hits = checker.collisions(q)
        assert hits == _oracle(checker, q)
        assert bool(hits) == checker.in_collision(q)
        kinds.update(h.kind for h in hits)
        changes += last is not None and hits != last
        last = hits
    assert kinds == {"obstacle", "self"}, "the configurations must hit both kinds of contact"
    assert changes > 30, "the contacts must change between calls (stale verdicts would show)"
