"""A proof that every configuration putting the TCP within a goal's tolerance drives the arm into an obstacle:
the reach proof's branch and bound over the joint angles (:mod:`.reach_proof`), where a box of joint angles is
also refused when some point of the arm's body lies inside an obstacle box for *every* configuration of it.

Why: on ``obstacles_4`` (issue 38) 124 four-joint arms reach a goal's tolerance only through an obstacle; the
reach proof cannot refuse them (the TCP gets there), so the task-aware IK spent its 150 restarts on each (~22 ms
compiled) before it gave up, and a failed IK is only a heuristic refusal. This proves it.

The arm's body: every cylinder, capsule, sphere and box of the robot's collision model holds balls of radius
``rho`` around points of its axis (a cylinder of radius ``R`` and half-length ``H``: around the axis point at ``s``
from its centre, ``rho = min(R, H - |s|)``; a box: around its centre, its smallest half side). Such a point ``P`` on
the link after joint k moves, over a box of joint angles (centre ``c``, half-widths ``h``), by at most
``r = sum_{i <= k} 2 sin(h_i / 2) dist(P(c), axis_i(c))`` from ``P(c)`` (the sequential bound of
:mod:`.reach_proof`: turn the joints one after the other; while joint i turns, ``P`` keeps its distance from its
axis). The signed distance to a convex obstacle grows by at most the distance moved, so where
``sd(P(c)) + r < rho + margin - PENETRATION`` the ball around ``P`` reaches at least ``PENETRATION`` into the obstacle
(or within the safety margin of it) at every configuration of the box: the IK's collision check refuses them all.
Only obstacle boxes are used (any other obstacle is left out: the proof only gets weaker), only revolute chains;
joints on one line with the one before are merged as in the reach proof, and the body between two merged joints
(turned by the first alone, which the merged angle does not fix) is left out.

The boxes left by both bounds are halved as in the reach proof until none is left (proven: no collision-free
configuration reaches the goal, whatever the IK's effort) or the budget is spent or most survive a level
(undecided). Joint limits are ignored (whole turns): the proof holds for any. The bound per box, in numpy and
compiled: :mod:`.sweep_bound`. Property tests:
``tests/test_sweep_proof.py`` (a configuration the collision checker calls free is never inside a refused box;
a pose the arm reaches free of the obstacles is never refused).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import coal
import numpy as np
import pinocchio as pin

from timor_core.kinematics.reach import joint_path, position_slack
from timor_core.search.filtering.proof_kernel import halve_boxes, measure_boxes
from timor_core.search.filtering.proof_numpy import BoxGoal
from timor_core.search.filtering.reach_proof import ROT_WEIGHT, PoseChain, chain_from_frames, rotation_slack
from timor_core.search.filtering.sweep_bound import (
    PENETRATION,
    ArmSweep,
    ObstacleBoxes,
    certain_collision,
    certain_collision_numpy,
    fixed_collision,
)

if TYPE_CHECKING:
    from timor_core.search.filtering.filter_state import Candidate, PoseGoal

__all__ = [
    "ArmSweep", "ObstacleBoxes", "PENETRATION", "arm_sweep", "certain_collision", "certain_collision_numpy",
    "collision_refusal", "fixed_collision", "likely_refusal", "obstacle_boxes", "sweep_proof", "sweep_reason",
]  # fmt: skip

EPS = 1e-8  # m: rounding
ANGLE_EPS = 1e-6
FIRST_SPLITS = 8
SPLITS = 2
GIVE_UP = 0.9
BUDGET = 8192


def obstacle_boxes(task: Any) -> ObstacleBoxes:
    """The boxes among a task's obstacles' collision shapes (world poses); others are left out."""
    centres, rotations, half = [], [], []
    for obstacle in getattr(task, "obstacles", ()):
        for g in obstacle.collision:
            for shape, pose in g.coal_shapes():
                if isinstance(shape, coal.Box):
                    pose = np.asarray(pose, dtype=float)
                    centres.append(pose[:3, 3])
                    rotations.append(pose[:3, :3])
                    half.append(np.asarray(shape.halfSide, dtype=float))
    return ObstacleBoxes(
        np.array(centres).reshape(-1, 3), np.array(rotations).reshape(-1, 3, 3), np.array(half).reshape(-1, 3)
    )


def _balls(shape: Any) -> list[tuple[np.ndarray, float]]:
    """Points in the shape's frame with the radius of a ball around each that the shape holds."""
    if isinstance(shape, (coal.Cylinder, coal.Capsule)):
        r, h = float(shape.radius), float(shape.halfLength)
        if isinstance(shape, coal.Capsule):
            ends = h
            count = max(1, int(math.ceil(2 * ends / max(r, 1e-3))) + 1)
            return [(np.array([0.0, 0.0, s]), r) for s in np.linspace(-ends, ends, count)]
        if h <= r:
            return [(np.zeros(3), h)]
        count = int(math.ceil(2 * (h - r) / r)) + 1
        return [(np.array([0.0, 0.0, s]), min(r, h - abs(s))) for s in np.linspace(-(h - r), h - r, count)]
    if isinstance(shape, coal.Sphere):
        return [(np.zeros(3), float(shape.radius))]
    if isinstance(shape, coal.Box):
        half = np.asarray(shape.halfSide, dtype=float)
        r = float(half.min())
        axis = int(np.argmax(half))
        reach = float(half[axis]) - r
        count = int(math.ceil(2 * reach / max(r, 1e-3))) + 1 if reach > 0 else 1
        out = []
        for s in np.linspace(-reach, reach, count):
            p = np.zeros(3)
            p[axis] = s
            out.append((p, r))
        return out
    return []


def arm_sweep(robot: Any) -> ArmSweep | None:
    """The :class:`ArmSweep` of a robot's chain to its TCP, cached on the robot; None if a joint on the way is not a
    one-axis revolute joint, or the chain has no joint."""
    cache = robot.__dict__
    if "_arm_sweep" not in cache:
        cache["_arm_sweep"] = _build_sweep(robot)
    return cache["_arm_sweep"]


def _build_sweep(robot: Any) -> ArmSweep | None:
    model = robot.model
    joints = joint_path(model, robot.tcp)
    if not joints or any(not model.joints[j].shortname().startswith("JointModelR") or model.joints[j].nv != 1
                         for j in joints):  # fmt: skip
        return None
    q0 = pin.neutral(model)
    data = model.createData()
    pin.computeJointJacobians(model, data, q0)
    pin.updateFramePlacements(model, data)
    jac = np.asarray(data.J).reshape(6, -1)
    axes = np.array([jac[3:, model.joints[j].idx_v] for j in joints], dtype=float)
    origins = np.array([data.oMi[j].translation for j in joints], dtype=float)
    chain = chain_from_frames(origins, axes, np.array(data.oMf[robot.tcp].homogeneous))
    found = _followed(joints, origins, axes, chain)
    if found is None:
        return None
    index, groups = found
    signs = np.sign(np.einsum("ij,ij->i", axes, chain.axes[groups]))
    rotations, translations = chain.steps
    frames = [np.eye(4)]
    frames[0][:3, :3], frames[0][:3, 3] = rotations[0], translations[0]
    for k in range(1, chain.dof):
        step = np.eye(4)
        step[:3, :3], step[:3, 3] = rotations[k], translations[k]
        frames.append(frames[-1] @ step)
    gm = robot.collision
    gdata = pin.GeometryData(gm)
    pin.updateGeometryPlacements(model, data, gm, gdata, q0)
    points, links, rho, fixed, fixed_rho = [], [], [], [], []
    for obj, placement in zip(gm.geometryObjects, gdata.oMg, strict=True):
        if obj.parentJoint not in index:
            continue  # not on the chain to the TCP, or turned by a joint merged with the next
        k = index[obj.parentJoint]
        world = np.array(placement.homogeneous)
        for p, r in _balls(obj.geometry):
            if r <= 0:
                continue
            w = world[:3, :3] @ p + world[:3, 3]
            if k < 0:
                fixed.append(w)
                fixed_rho.append(r)
            else:
                points.append(frames[k][:3, :3].T @ (w - frames[k][:3, 3]))
                links.append(k)
                rho.append(r)
    return ArmSweep(
        chain,
        np.array(points).reshape(-1, 3),
        np.array(links, dtype=int),
        np.array(rho, dtype=float),
        np.array(fixed).reshape(-1, 3),
        np.array(fixed_rho, dtype=float),
        groups,
        signs,
    )


def _followed(
    joints: list[int], origins: np.ndarray, axes: np.ndarray, chain: PoseChain
) -> tuple[dict[int, int], np.ndarray] | None:
    """Which of the chain's joints (index; -1: none, the base's body) turns the body after each Pinocchio joint:
    joints on one line with the one before are merged into it (:func:`~.reach_proof.chain_from_frames`,
    ``E_k(a) E_i(b) = E_k(a +- b)``), so the body after the last joint of such a group turns with the merged angle;
    the body between two joints of a group turns by the first alone, which the merged angle does not fix: left out
    (the proof only gets weaker). Also the chain's joint each robot joint is merged into. None if the chain's joints
    are not found among the robot's (not expected)."""
    unit = axes / np.linalg.norm(axes, axis=1)[:, None]
    kept: list[int] = []
    for i in range(len(joints)):
        j = len(kept)
        if j < chain.dof and np.array_equal(origins[i], chain.origins[j]) and np.array_equal(unit[i], chain.axes[j]):
            kept.append(i)
    if len(kept) != chain.dof or not kept or kept[0] != 0:
        return None
    index, groups = {0: -1}, np.zeros(len(joints), dtype=int)
    for g in range(len(kept)):
        last = kept[g + 1] - 1 if g + 1 < len(kept) else len(joints) - 1
        index[joints[last]] = g
        groups[kept[g] : last + 1] = g
    return index, groups


def _target(chain: PoseChain, goal: np.ndarray, tolerance: Any) -> BoxGoal:
    g = np.asarray(goal, dtype=float)
    length = float(np.linalg.norm(chain.offset))
    direction = (g[:3, :3] @ chain.offset) / length if length > 0 else np.zeros(3)
    slack = position_slack(tolerance) + EPS
    theta = rotation_slack(tolerance) + ANGLE_EPS
    return BoxGoal(g[:3, 3], g[:3, :3].T, slack, theta, direction, length, (0.0, 0.0), ROT_WEIGHT)


def sweep_proof(
    sweep: ArmSweep,
    obstacles: ObstacleBoxes,
    goal: np.ndarray,
    tolerance: Any,
    margin: float = 0.0,
    budget: int = BUDGET,
) -> int | None:
    """The number of boxes of joint angles that proved every configuration putting the TCP within ``tolerance`` of
    ``goal`` (4x4, world) in collision with an obstacle box (see the module docstring); None: undecided."""
    if fixed_collision(sweep, obstacles, margin):
        return 1
    if not len(obstacles):
        return None
    chain = sweep.chain
    target = _target(chain, goal, tolerance)
    weights = chain.radii + ROT_WEIGHT
    centres, half = halve_boxes(np.zeros((1, chain.dof)), np.full((1, chain.dof), math.pi), weights, FIRST_SPLITS)
    used = 0
    while True:
        used += len(centres)
        excess, _, box_weights = measure_boxes(chain.steps, centres, half, target)
        keep = excess <= 0
        if keep.any():
            hit = certain_collision(sweep, obstacles, centres[keep], half[keep], margin)
            keep[np.flatnonzero(keep)[hit]] = False
        if not keep.any():
            return used
        if keep.mean() > GIVE_UP or used + int(keep.sum()) * 2**SPLITS > budget:
            return None
        centres, half = halve_boxes(centres[keep], half[keep], box_weights[keep], SPLITS)


def sweep_reason(boxes: int) -> str:
    """The reason the search gives for a goal :func:`sweep_proof` proved out of reach free of the obstacles."""
    return (
        "every configuration within its tolerance collides with an obstacle (proven over"
        f" {boxes} boxes of joint angles)"
    )


def collision_refusal(c: Candidate, goal: PoseGoal, q: list[float] | None, index: int | None = None) -> str | None:
    """Why no configuration of the candidate's robot reaches ``goal`` free of the task's obstacle boxes (proven:
    :func:`sweep_proof` within ``FilterConfig.proof_budget`` boxes), or None (undecided, or not tried). Tried only
    where the kinematic IK's configuration ``q`` collides (else the task-aware IK, seeded with it, succeeds at once),
    and not again for a goal (``index``) it was tried for on this robot (:func:`likely_refusal`)."""
    ctx = c.ctx
    if not ctx.config.proof_budget or q is None or index in c.swept:
        return None
    if ctx.obstacle_boxes is None:
        ctx.obstacle_boxes = obstacle_boxes(ctx.task)
    if not len(ctx.obstacle_boxes):
        return None
    robot = c.require_robot()
    if not robot.has_collision(np.asarray(q, dtype=float), ctx.task, ctx.margin):
        return None
    return _swept(c, index, goal, early=False)


def likely_refusal(c: Candidate, index: int, goal: PoseGoal) -> str | None:
    """Why :func:`sweep_proof` proves ``goal`` (the ``index``-th) out of reach free of the obstacles for the
    candidate's robot, tried only where it proved so for other chains of its family (``candidate.family``) more
    often than it failed here, and where the filters stop at a failure; else None. Run before the goal's IK: a chain
    refused later by the same proof is refused now, without its IK runs (the verdict is the same: the proof is
    sound, and the ``ik_task`` filter runs it at that goal where the kinematic IK's configuration collides, as every
    one within the tolerance does)."""
    ctx = c.ctx
    if not ctx.sweeps or not ctx.config.stop_early or not ctx.config.proof_budget or index in c.swept:
        return None
    record = ctx.sweeps.get((index, c.family))
    return _swept(c, index, goal, early=True) if record is not None and record[0] > record[1] else None


def _swept(c: Candidate, index: int | None, goal: PoseGoal, early: bool) -> str | None:
    """:func:`sweep_proof` for the candidate's robot and ``goal``, kept in the family's record (proven, or tried
    early in vain)."""
    ctx = c.ctx
    if index is not None:
        c.swept.add(index)
    sweep = arm_sweep(c.require_robot())
    if sweep is None:
        return None
    boxes = sweep_proof(sweep, ctx.obstacle_boxes, goal.world, goal.pose.tolerance, ctx.margin, ctx.config.proof_budget)
    if index is not None and c.family is not None and (boxes is not None or early):
        record = ctx.sweeps.setdefault((index, c.family), [0, 0])
        record[0 if boxes is not None else 1] += 1
    return None if boxes is None else sweep_reason(boxes)
