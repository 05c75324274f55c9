"""The balls of an arm's body and how they are put on its chain (the body model the sweep proofs take, see
:mod:`.arm_body` for the two routes to it): a shape's balls (:func:`shape_balls`), a body's (:func:`body_balls`),
bodies' in the world (:func:`body_points`), and the :class:`ArmSweep` of a revolute chain given by its joints'
frames and those balls (:func:`sweep_from_frames`; its joints' part :func:`chain_joints`, the balls placed on the
links :func:`placed_balls`, shared with the per-task sweeps of :class:`~.arm_body.ModuleSweeps`).

A shape's balls (:func:`shape_balls`): a cylinder of radius ``R`` and half-length ``H`` holds a ball of radius
``min(R, H - |s|)`` around its axis point at ``s`` from its centre, a capsule one of radius ``R`` around every
point of its axis, a sphere itself, a box one of its smallest half side around points of its longest axis.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import coal
import numpy as np

from timor_core.search.filtering.proof_chain import PoseChain, chain_from_frames
from timor_core.search.filtering.sweep_bound import ArmSweep

__all__ = [
    "ChainJoints", "body_balls", "body_points", "chain_joints", "placed_balls", "shape_balls", "sweep_from_frames",
]  # fmt: skip


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
    joints = chain_joints(origins, axes, chain)
    if joints is None:
        return None
    moved, fixed = placed_balls(joints, points, owners, rho)
    return ArmSweep(chain, *moved, *fixed, joints.groups, joints.signs)


@dataclass(frozen=True)
class ChainJoints:
    """What a chain's :class:`ArmSweep` takes from its joints alone (not from its TCP): ``link_of`` and ``groups``
    (:func:`_followed`), the ``signs`` of the joints' axes against their groups', the frames (dof, 4, 4) of the
    chain's joints (q = 0) the balls are put in."""

    link_of: np.ndarray
    groups: np.ndarray
    signs: np.ndarray
    frames: np.ndarray


def chain_joints(origins: np.ndarray, axes: np.ndarray, chain: PoseChain) -> ChainJoints | None:
    """:class:`ChainJoints` of the chain (None: its joints are not found among the given ones): rows 0 to dof - 1 of
    ``chain.steps`` alone, the same for every TCP."""
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
    return ChainJoints(link_of, groups, signs, frames)


def placed_balls(
    joints: ChainJoints, points: np.ndarray, owners: np.ndarray, rho: np.ndarray
) -> tuple[tuple[np.ndarray, np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The balls (world ``points``, ``owners``, ``rho``: :func:`sweep_from_frames`) placed on the chain: the moved
    ones in their link's frame ``(points, links, rho)``, the fixed ones ``(points, rho)`` in the world (ball by
    ball: the balls of a chain placed in parts are those placed at once)."""
    links = joints.link_of[np.asarray(owners, dtype=int) + 1] if len(owners) else np.zeros(0, dtype=int)
    points = np.asarray(points, dtype=float).reshape(-1, 3)
    rho = np.asarray(rho, dtype=float)
    fixed, moved = links == -1, links >= 0
    frames = joints.frames
    local = np.einsum("pji,pj->pi", frames[links[moved], :3, :3], points[moved] - frames[links[moved], :3, 3])
    return (local.reshape(-1, 3), links[moved].astype(int), rho[moved]), (points[fixed].reshape(-1, 3), rho[fixed])


def _followed(origins: np.ndarray, axes: np.ndarray, chain: PoseChain) -> tuple[np.ndarray, np.ndarray] | None:
    """Which of the chain's joints turns the body after each given joint (``link_of[i + 1]`` for joint i, -1: the
    base's body; -2: left out): joints on one line with the one before are merged into it, so the body after the
    last joint of such a group turns with the merged angle; the body between two joints of a group turns by the
    first alone, which the merged angle does not fix: left out. Also the chain's joint each given joint is merged
    into. None if the chain's joints are not found among the given ones (not expected)."""
    unit = (axes / np.linalg.norm(axes, axis=1)[:, None]).tolist()  # (compared as lists: np.array_equal's verdicts)
    kept: list[int] = []
    at, along, dof = chain.origins.tolist(), chain.axes.tolist(), chain.dof
    for i, o in enumerate(origins.tolist()):
        if len(kept) < dof and o == at[len(kept)] and unit[i] == along[len(kept)]:
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


def body_points(bodies: Sequence[tuple[np.ndarray, Any, int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The balls of ``bodies`` (world pose, body, owner joint: :func:`~.quick_reach.walk_chain`'s) in the world:
    centres (P, 3), owners (P,), radii (P,)."""
    balls = [(body_balls(body), pose, owner) for pose, body, owner in bodies]
    balls = [b for b in balls if len(b[0][1])]
    if not balls:
        return np.zeros((0, 3)), np.zeros(0, dtype=int), np.zeros(0)
    counts = [len(r) for (_, r), _, _ in balls]
    poses = np.repeat(np.array([pose for _, pose, _ in balls]), counts, axis=0)
    local = np.concatenate([p for (p, _), _, _ in balls])
    points = np.einsum("pij,pj->pi", poses[:, :3, :3], local) + poses[:, :3, 3]
    owners = np.repeat([owner for _, _, owner in balls], counts)
    return points, owners, np.concatenate([r for (_, r), _, _ in balls])
