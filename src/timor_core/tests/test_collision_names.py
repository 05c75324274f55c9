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


@pytest.mark.parametrize("margin", [0.0, 0.02], ids=["broad_phase", "margin"])
def test_the_first_hit_is_the_pair_the_ik_names_from_every_contact(arm, margin):
    """``first_hit`` (the robot–obstacle pairs alone, stopping at the first contact) names the pair the task-aware IK
    named from every contact: the first obstacle's contact in the pairs' order, else the first contact, else None;
    over configurations hitting no obstacle, one, several and only the arm itself, two obstacles ahead of the arm in
    the pairs' order and two checkers of one robot (each with its own model of the obstacles' pairs)."""
    rng = np.random.default_rng(11)
    q0 = arm.random_configuration(rng)
    elbow = arm.fk(q0)[:3, 3] * 0.5
    obstacles = [
        Obstacle("ball", (Sphere(pose=translation(elbow), r=0.12),)),
        Obstacle("wall", (Box(pose=translation((0.25, 0.0, 0.3)), x=0.1, y=0.6, z=0.6),)),
        Obstacle("post", (Box(pose=translation((-0.2, 0.2, 0.2)), x=0.08, y=0.08, z=0.8),)),
    ]
    checkers = [CollisionChecker(arm, obstacles, margin=margin), CollisionChecker(arm, obstacles[1:], margin=margin)]
    seen = {"none": 0, "self only": 0, "one obstacle": 0, "several obstacles": 0}
    for k in range(300):
        checker = checkers[k % 2]
        q = arm.random_configuration(rng)
        hits = checker.collisions(q)
        named = [h for h in hits if h.kind == "obstacle"]
        expected = named[0] if named else (hits[0] if hits else None)
        assert checker.first_hit(q) == expected, (k, hits)
        kinds = {h.obstacle for h in named}
        seen["none" if not hits else "self only" if not named else "one obstacle" if len(kinds) == 1 else
             "several obstacles"] += 1  # fmt: skip
    assert all(seen.values()), seen
