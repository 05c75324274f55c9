"""The balls of an arm's body as the sweep proofs (:mod:`.sweep_proof`) take them, and their :class:`ArmSweep`: from
a built robot's collision model (:func:`robot_sweep`), or from the modules alone, before any robot is built
(:func:`module_sweep`).

Why: on ``obstacles_4`` (issue 38) 122 chains passed a robot build (~0.8 ms) and two kinematic IK runs before the
sweep proof refused them at their third goal; the proof needs only the joints' origins and axes at q = 0, the TCP
and the collision bodies, which the modules give as they give the workspace filter its bounds
(:mod:`.quick_reach`: a few 4x4 products per module). Both routes hand the same numbers (up to rounding: the
modules' products against Pinocchio's) to one function, :func:`sweep_from_frames`, so the proofs they feed are the
same proof; ``tests/test_module_sweep.py`` compares them on random chains and checks the modules' against the
robot's collision checker.

A shape's balls (:func:`shape_balls`): a cylinder of radius ``R`` and half-length ``H`` holds a ball of radius
``min(R, H - |s|)`` around its axis point at ``s`` from its centre, a capsule one of radius ``R`` around every
point of its axis, a sphere itself, a box one of its smallest half side around points of its longest axis.
"""

from __future__ import annotations

import math
from typing import Any

import coal
import numpy as np
import pinocchio as pin

from timor_core.kinematics.reach import joint_path
from timor_core.search.filtering.quick_reach import walk_chain
from timor_core.search.filtering.reach_proof import PoseChain, chain_from_frames
from timor_core.search.filtering.sweep_bound import ArmSweep

__all__ = ["body_balls", "module_sweep", "robot_sweep", "shape_balls", "sweep_from_frames"]

Z_AXIS = (0.0, 0.0, 1.0)


def shape_balls(shape: Any) -> list[tuple[np.ndarray, float]]:
    """Points in the shape's frame with the radius of a ball around each that the shape holds (see the module
    docstring; other shapes: none)."""
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


_BODIES: dict[int, tuple[Any, np.ndarray, np.ndarray]] = {}


def body_balls(body: Any) -> tuple[np.ndarray, np.ndarray]:
    """The balls of a body's collision geometry in the body's frame: centres (P, 3), radii (P,) (those of radius
    > 0; once per body, held with it so that its id is not reused)."""
    hit = _BODIES.get(id(body))
    if hit is None or hit[0] is not body:
        points, rho = [], []
        for g in body.collision:
            for shape, pose in g.coal_shapes():
                pose = np.asarray(pose, dtype=float)
                for p, r in shape_balls(shape):
                    if r > 0:
                        points.append(pose[:3, :3] @ p + pose[:3, 3])
                        rho.append(r)
        if len(_BODIES) > 4096:
            _BODIES.clear()
        hit = _BODIES[id(body)] = (body, np.array(points).reshape(-1, 3), np.array(rho, dtype=float))
    return hit[1], hit[2]


def sweep_from_frames(
    origins: np.ndarray, axes: np.ndarray, tcp: np.ndarray, points: np.ndarray, owners: np.ndarray, rho: np.ndarray
) -> ArmSweep | None:
    """The :class:`ArmSweep` of a revolute chain given by its joints' world ``origins`` and ``axes`` (q = 0, base
    first), the TCP's 4x4 pose and the balls of its body: world centres ``points`` (P, 3), radii ``rho`` (P,) and
    ``owners`` (P,): the joint (index into ``origins``) whose turn moves each, -1 for none (the base's body).
    Joints on one line with the one before are merged (:func:`~.reach_proof.chain_from_frames`); the balls turned
    by a joint merged with the next are left out (the merged angle does not fix them: the proof only gets weaker).
    None if the chain's joints are not found among the given ones (not expected)."""
    chain = chain_from_frames(origins, axes, tcp)
    found = _followed(origins, axes, chain)
    if found is None:
        return None
    link_of, groups = found
    signs = np.sign(np.einsum("ij,ij->i", axes, chain.axes[groups]))
    rotations, translations = chain.steps
    frames = np.empty((chain.dof, 4, 4))
    frames[0] = np.eye(4)
    frames[0][:3, :3], frames[0][:3, 3] = rotations[0], translations[0]
    for k in range(1, chain.dof):
        step = np.eye(4)
        step[:3, :3], step[:3, 3] = rotations[k], translations[k]
        frames[k] = frames[k - 1] @ step
    links = link_of[np.asarray(owners, dtype=int) + 1] if len(owners) else np.zeros(0, dtype=int)
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    rho = np.asarray(rho, dtype=float)
    fixed, moved = links == -1, links >= 0
    local = np.einsum("pji,pj->pi", frames[links[moved], :3, :3], points[moved] - frames[links[moved], :3, 3])
    return ArmSweep(chain, local.reshape(-1, 3), links[moved].astype(int), rho[moved], points[fixed].reshape(-1, 3),
                    rho[fixed], groups, signs)  # fmt: skip


def _followed(origins: np.ndarray, axes: np.ndarray, chain: PoseChain) -> tuple[np.ndarray, np.ndarray] | None:
    """Which of the chain's joints turns the body after each given joint (``link_of[i + 1]`` for joint i, -1: the
    base's body; -2: left out): joints on one line with the one before are merged into it, so the body after the
    last joint of such a group turns with the merged angle; the body between two joints of a group turns by the
    first alone, which the merged angle does not fix: left out. Also the chain's joint each given joint is merged
    into. None if the chain's joints are not found among the given ones (not expected)."""
    unit = axes / np.linalg.norm(axes, axis=1)[:, None]
    kept: list[int] = []
    for i in range(len(origins)):
        j = len(kept)
        if j < chain.dof and np.array_equal(origins[i], chain.origins[j]) and np.array_equal(unit[i], chain.axes[j]):
            kept.append(i)
    if len(kept) != chain.dof or not kept or kept[0] != 0:
        return None
    link_of = np.full(len(origins) + 1, -2, dtype=int)
    link_of[0] = -1
    groups = np.zeros(len(origins), dtype=int)
    for g in range(len(kept)):
        last = kept[g + 1] - 1 if g + 1 < len(kept) else len(origins) - 1
        link_of[last + 1] = g
        groups[kept[g] : last + 1] = g
    return link_of, groups


def robot_sweep(robot: Any) -> ArmSweep | None:
    """The :class:`ArmSweep` of a built robot's chain to its TCP (Pinocchio's joint frames at q = 0, its coal
    collision model); None if a joint on the way is not a one-axis revolute joint, or the chain has no joint."""
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
    gm = robot.collision
    gdata = pin.GeometryData(gm)
    pin.updateGeometryPlacements(model, data, gm, gdata, q0)
    position = {j: i for i, j in enumerate(joints)}
    position[0] = -1
    points, owners, rho = [], [], []
    for obj, placement in zip(gm.geometryObjects, gdata.oMg, strict=True):
        if obj.parentJoint not in position:
            continue  # not on the chain to the TCP
        world = np.array(placement.homogeneous)
        for p, r in shape_balls(obj.geometry):
            if r > 0:
                points.append(world[:3, :3] @ p + world[:3, 3])
                owners.append(position[obj.parentJoint])
                rho.append(r)
    tcp = np.array(data.oMf[robot.tcp].homogeneous)
    return sweep_from_frames(origins, axes, tcp, np.array(points).reshape(-1, 3), np.array(owners, dtype=int),
                             np.array(rho, dtype=float))  # fmt: skip


def module_sweep(assembly: Any, placement: np.ndarray | None) -> ArmSweep | None:
    """The :class:`ArmSweep` of a serial assembly at ``placement`` from its modules alone (their joint frames and
    collision bodies at q = 0, as :func:`~.quick_reach.joint_frames` walks them); None if it is not a chain of
    modules with at most one revolute joint each (about its frame's z axis) ending in one tool frame, or has no
    joint (the robot's :func:`robot_sweep` then decides)."""
    walked = _walk(assembly, placement)
    if walked is None:
        return None
    frames, tcp, bodies = walked
    balls = [(body_balls(body), pose, owner) for pose, body, owner in bodies]
    balls = [b for b in balls if len(b[0][1])]
    origins = np.array([f[:3, 3] for f in frames])
    axes = np.array([f[:3, 2] for f in frames])
    if not balls:
        return sweep_from_frames(origins, axes, tcp, np.zeros((0, 3)), np.zeros(0, dtype=int), np.zeros(0))
    counts = [len(r) for (_, r), _, _ in balls]
    poses = np.repeat(np.array([pose for _, pose, _ in balls]), counts, axis=0)
    local = np.concatenate([p for (p, _), _, _ in balls])
    points = np.einsum("pij,pj->pi", poses[:, :3, :3], local) + poses[:, :3, 3]
    owners = np.repeat([owner for _, _, owner in balls], counts)
    return sweep_from_frames(origins, axes, tcp, points, owners, np.concatenate([r for (_, r), _, _ in balls]))


def _walk(assembly: Any, placement: np.ndarray | None) -> tuple[list[np.ndarray], np.ndarray, list] | None:
    """:func:`~.quick_reach.joint_frames`' walk (the same products), also giving each body's world pose and the
    joint (index, -1: none) after which it moves: ``(joint frames, TCP pose, [(pose, body, joint)])``; None also
    where a joint's axis is not z."""
    if any(tuple(j.axis) != Z_AXIS for m in assembly.modules for j in m.joints):
        return None
    bodies: list = []
    walked = walk_chain(assembly, placement, bodies)
    return None if walked is None else (walked[0], walked[1], bodies)
