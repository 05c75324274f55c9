"""Collision checking of a robot against itself and a task's obstacles, with a safety margin.

One Pinocchio geometry model holds the robot's collision geometry and the obstacles (attached to the
world); its pairs are the robot's self-collision pairs (per the module set's ignore mode) plus every
robot × obstacle pair. Coal shapes are shared, so building a checker is cheap.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import coal
import numpy as np
import pinocchio as pin

from timor_core.errors import InputError

PinRobot = Any  # timor_core.kinematics.robot.PinRobot (it imports this module)
Obstacle = Any  # a task obstacle (timor_core.task.Obstacle, a higher layer): .id and .collision
__all__ = ["CollisionPair", "CollisionChecker", "configure_requests", "check_margin", "joint_distance"]

MAX_MARGIN = 10.0
"""Largest accepted safety margin in metres (a larger one makes every configuration collide)."""


def check_margin(margin: float) -> float:
    """A safety margin as a float in [0, MAX_MARGIN] m, or an InputError naming it."""
    if isinstance(margin, bool) or not isinstance(margin, (int, float, np.integer, np.floating)):
        raise InputError("the safety margin must be a number of metres", value=margin)
    m = float(margin)
    if not 0.0 <= m <= MAX_MARGIN:  # refuses NaN too
        raise InputError(f"the safety margin must be between 0 and {MAX_MARGIN:g} m", value=margin)
    return m


def configure_requests(
    data: pin.GeometryData,
    margin: float = 0.0,
    model: pin.GeometryModel | None = None,
    margin_from: int = 0,
) -> None:
    """Make every collision request of a GeometryData stateless (and apply a safety margin).

    By default coal seeds GJK with the guess cached from the previous query; with one GeometryData
    reused across configurations that made verdicts depend on the order of calls (seen on 28 of
    3000 configurations, some with 7 cm penetration). The flag is deprecated but still honoured.
    Given the GeometryModel, GJK starts instead from the bounding volumes' centres (their local AABBs are
    computed here): stateless too, and ~15% faster on IMPROV robots (same verdicts on 9000 configurations of
    three robots). Pairs with a triangle mesh (BVH) keep the default guess: coal tests a mesh triangle by
    triangle, and those triangles have no bounding volume (it raised "computeLocalAABB must have been called").
    With ``model``, the margin applies only to pairs whose second geometry has an index >= ``margin_from``
    (the obstacles): a safety margin keeps the robot away from its surroundings, it does not inflate the robot.
    Every request asks for the contact (``enable_contact``): without it coal 3's GJK stops early and calls some
    penetrating convex pairs free (a cylinder 2-15 mm inside a box: 18-20 of 13,000-14,500 penetrating pairs near
    contact, with either guess), and an IK that rejects colliding tries picks exactly those (issue 38: the search's
    optimum on ``obstacles_4`` of seed 38 held an arm link 2 mm inside an obstacle). With it: none missed, ~10 %
    more time per check.
    """
    is_mesh: list[bool] = []
    if model is not None:
        for obj in model.geometryObjects:
            obj.geometry.computeLocalAABB()
            is_mesh.append(isinstance(obj.geometry, coal.BVHModelBase))
    pairs = model.collisionPairs if model is not None else None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for k, req in enumerate(data.collisionRequests):
            req.enable_cached_gjk_guess = False
            req.enable_contact = True  # sound verdicts: see above
            pair = pairs[k] if pairs is not None else None
            if pair is not None and not (is_mesh[pair.first] or is_mesh[pair.second]):
                req.gjk_initial_guess = coal.GJKInitialGuess.BoundingVolumeGuess
            if margin and (pair is None or pair.second >= margin_from):
                req.security_margin = margin


@dataclass(frozen=True)
class CollisionPair:
    """Two colliding geometries; ``obstacle`` is the obstacle's ID for robot–obstacle contacts."""

    robot_geometry: str
    other: str
    kind: str  # 'self' or 'obstacle'
    obstacle: str | None = None

    def describe(self) -> str:
        """A sentence for users."""
        if self.kind == "obstacle":
            return f"{self.robot_geometry} collides with obstacle {self.obstacle}"
        return f"self-collision between {self.robot_geometry} and {self.other}"


class CollisionChecker:
    """Checks a robot's configurations against self-collision and obstacles (with ``margin`` metres)."""

    def __init__(
        self,
        robot: PinRobot,
        obstacles: Iterable[Obstacle] = (),
        margin: float = 0.0,
        self_collision: bool = True,
    ) -> None:
        self.robot = robot
        self.margin = check_margin(margin)
        robot._ensure_pairs()
        gm = pin.GeometryModel()
        for obj in robot.collision.geometryObjects:
            gm.addGeometryObject(obj)
        n_robot = gm.ngeoms
        self._obstacle_of: dict[int, str] = {}
        for obstacle in obstacles:
            count = 0
            for g in obstacle.collision:
                for shape, pose in g.coal_shapes():
                    idx = gm.addGeometryObject(
                        pin.GeometryObject(f"obstacle_{obstacle.id}_{count}", 0, 0, pin.SE3(pose), shape)
                    )
                    self._obstacle_of[idx] = obstacle.id
                    count += 1
        n = gm.ngeoms
        active = np.zeros((n, n), dtype=bool)
        if self_collision:
            for p in robot.collision.collisionPairs:
                active[p.first, p.second] = True
        if n > n_robot and n_robot:
            active[:n_robot, n_robot:] = True
        gm.setCollisionPairs(active)
        self.model = gm
        self.data = pin.GeometryData(gm)
        configure_requests(self.data, self.margin, gm, margin_from=n_robot)
        # the AABB broad phase knows no safety margin: use it only without one
        self._broadphase = (
            None if self.margin else pin.BroadPhaseManager_NaiveCollisionManager(robot.model, gm, self.data)
        )
        self.n_robot = n_robot
        # per pair, what a contact is named, and its result (references into ``self.data``, whose vector is made
        # once: read through one C-level map, a pass's verdicts cost ~13 us for 150 pairs instead of ~65 us)
        names = [obj.name for obj in gm.geometryObjects]  # (once: an object read through the bindings costs ~1 us)
        self._named = [(names[p.first], names[p.second], p.second in self._obstacle_of,
                        self._obstacle_of.get(p.second)) for p in gm.collisionPairs]  # fmt: skip
        self._results = list(self.data.collisionResults)
        self._names = names
        self._obstacle_pairs: tuple[Any, Any, list, list] | None = None  # (first_hit's model, data, results, names)

    @property
    def n_obstacle_geometries(self) -> int:
        """Number of obstacle collision shapes."""
        return self.model.ngeoms - self.n_robot

    def in_collision(self, q: np.ndarray) -> bool:
        """True if any checked pair collides (or comes closer than the margin) at q."""
        q = self.robot.check_q(q)
        if self._broadphase is not None:
            return bool(pin.computeCollisions(self.robot.model, self.robot.data, self._broadphase, q, True))
        return bool(pin.computeCollisions(self.robot.model, self.robot.data, self.model, self.data, q, True))

    def collisions(self, q: np.ndarray) -> list[CollisionPair]:
        """Every colliding pair at q, with the obstacle named for robot–obstacle contacts."""
        q = self.robot.check_q(q)
        pin.computeCollisions(self.robot.model, self.robot.data, self.model, self.data, q, False)
        out = []
        for (a, b, obstacle, oid), hit in zip(self._named, map(_IS_COLLISION, self._results)):
            if hit:
                out.append(CollisionPair(a, b, "obstacle", oid) if obstacle else CollisionPair(a, b, "self"))
        return out

    def first_hit(self, q: np.ndarray) -> CollisionPair | None:
        """The pair of :meth:`collisions` the task-aware IK names for a rejected configuration: the first colliding
        robot–obstacle pair (in the pairs' order), else the first colliding pair; None if none collides. Why: the
        IK names every try it rejects (~50-150 a goal on ``obstacles_4``, issue 38), and this checks the obstacles'
        pairs alone, in order up to the first contact (a model of those pairs, made on first use): ~11 us instead
        of ~22 us for every pair with the contacts of all, and ~12 us to read them. The same pair: each pair's
        verdict depends only on its two geometries' placements and its request, which both models set alike
        (:func:`configure_requests`); every pair only where no obstacle's is hit."""
        q = self.robot.check_q(q)
        if self._obstacle_pairs is None:
            self._obstacle_pairs = self._obstacles_only()
        model, data, results, named = self._obstacle_pairs
        if named and pin.computeCollisions(self.robot.model, self.robot.data, model, data, q, True):
            # (the pass stopped at its first contact: the pairs before it are this pass's, free)
            k = next(k for k, hit in enumerate(map(_IS_COLLISION, results)) if hit)
            return CollisionPair(*named[k])
        hits = self.collisions(q)
        return hits[0] if hits else None

    def _obstacles_only(self) -> tuple[Any, Any, list, list]:
        """The robot–obstacle pairs of this checker's model alone, in the same order, with the same requests: the
        model, its data, its results and each pair's :class:`CollisionPair` fields."""
        gm = pin.GeometryModel()
        for obj in self.model.geometryObjects:
            gm.addGeometryObject(obj)
        n, n_robot = gm.ngeoms, self.n_robot
        active = np.zeros((n, n), dtype=bool)
        active[:n_robot, n_robot:] = True
        gm.setCollisionPairs(active)
        data = pin.GeometryData(gm)
        configure_requests(data, self.margin, gm, margin_from=n_robot)
        names, named = self._names, []
        for p in gm.collisionPairs:
            named.append((names[p.first], names[p.second], "obstacle", self._obstacle_of[p.second]))
        return gm, data, list(data.collisionResults), named


_IS_COLLISION = coal.CollisionResult.isCollision


def joint_distance(model: pin.Model) -> np.ndarray:
    """Number of movable joints on the tree path between any two joints (universe = 0)."""
    nj = model.njoints
    parents = list(model.parents)
    depth = [0] * nj
    for j in range(1, nj):
        depth[j] = depth[parents[j]] + 1
    D = np.zeros((nj, nj), dtype=int)
    ancestors = []
    for j in range(nj):
        chain = [j]
        while chain[-1] != 0:
            chain.append(parents[chain[-1]])
        ancestors.append(chain)
    for a in range(nj):
        set_a = set(ancestors[a])
        for b in range(a + 1, nj):
            lca = next(x for x in ancestors[b] if x in set_a)
            D[a, b] = D[b, a] = depth[a] + depth[b] - 2 * depth[lca]
    return D
