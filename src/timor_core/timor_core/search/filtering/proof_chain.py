"""The chains a reach proof (:mod:`.reach_proof`) works on: a serial chain of revolute joints at q = 0, from a robot
(Pinocchio's model), from its joints' origins and axes, or from its steps ``A_k`` (``T(q) = A_0 Rz(q_1) A_1 ...
Rz(q_n) A_n``), and its poses at configurations.

Why a file of its own: the proof's levels and the chains they run on are two concepts; the chains are also the
sweep proof's, the family certificates' and the workspace bounds' (:mod:`.sweep_proof`, :mod:`.sweep_bound`,
:mod:`.arm_body`, :mod:`.family_proof`, :mod:`.quick_reach`, which import them from here).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pinocchio as pin

from timor_core.kinematics.reach import joint_path
from timor_core.search.filtering.proof_numpy import chain_frames

__all__ = [
    "COAXIAL", "ChainPoses", "JointSteps", "PoseChain", "chain_from_frames", "chain_of_steps", "chain_poses",
    "chain_to_tcp", "joint_steps", "pose_chain", "steps_to",
]  # fmt: skip

COAXIAL = 1e-10  # m or sine: two joint axes this close to one line are one (EPS covers the difference)


@dataclass(frozen=True)
class PoseChain:
    """A serial chain of revolute joints at q = 0, as the proof needs it.

    ``origins[i]``, ``axes[i]``: joint i's origin and unit axis in the world; ``tcp``: the TCP's 4x4 pose;
    ``radii[i]``: the largest distance from ``origins[i]`` to the TCP; ``wrist_radii[i]``: to the last joint's
    origin; ``offset``: the last joint's origin seen from the TCP, in the TCP's frame (``w = p + R @ offset``).
    """

    origins: np.ndarray
    axes: np.ndarray
    tcp: np.ndarray
    radii: np.ndarray
    wrist_radii: np.ndarray
    offset: np.ndarray
    radii_of_steps: ClassVar[bool] = False
    """Whether ``radii`` are the lengths of ``steps``' translations after each joint, summed from the TCP back (a
    chain of :func:`chain_of_steps`: the compiled proof makes them so itself, :func:`~.proof_fused.turn_weights`)."""

    @functools.cached_property
    def steps(self) -> tuple[np.ndarray, np.ndarray]:
        """The chain cut at frames whose z axes are the joints' (q = 0): rotations (n + 1, 3, 3) and translations
        (n + 1, 3) of ``A_0`` (world to joint 1), ``A_k`` (joint k to joint k + 1) and ``A_n`` (joint n to the
        TCP), so that ``T(q) = A_0 Rz(q_1) A_1 ... Rz(q_n) A_n`` (:func:`chain_poses`). Joint k's frame: x the unit
        ``a x e`` (``e`` the world's x axis, its y where ``a`` is near x), y ``a x x``; each step ``F_k^-1 F_k+1``
        by the rigid inverse, in floats (numpy's cross products and 4x4 inverses took 0.31 ms a chain). A chain of
        :func:`chain_of_steps` has the steps it was made of instead (its joints' frames another x axis each)."""
        return steps_to(joint_steps(self.origins, self.axes), self.tcp)

    @property
    def dof(self) -> int:
        return len(self.radii)


def pose_chain(robot: Any, fid: int | None = None) -> PoseChain | None:
    """The :class:`PoseChain` from the base to frame ``fid`` (default the TCP), cached on the robot; None if a joint
    on the way is not a one-axis revolute joint (or there is none): no proof for such robots."""
    fid = robot.tcp if fid is None else fid
    cache = robot.__dict__.setdefault("_pose_chains", {})
    if fid not in cache:
        cache[fid] = _build(robot.model, fid)
    return cache[fid]


def _build(model: Any, fid: int) -> PoseChain | None:
    joints = joint_path(model, fid)
    if not joints or any(not model.joints[j].shortname().startswith("JointModelR") for j in joints):
        return None
    if any(model.joints[j].nv != 1 for j in joints):
        return None
    data = model.createData()
    pin.computeJointJacobians(model, data, pin.neutral(model))
    pin.updateFramePlacements(model, data)
    jac = np.asarray(data.J).reshape(6, -1)
    axes = np.array([jac[3:, model.joints[j].idx_v] for j in joints], dtype=float)
    origins = np.array([data.oMi[j].translation for j in joints], dtype=float)
    return chain_from_frames(origins, axes, np.array(data.oMf[fid].homogeneous))


def chain_from_frames(origins: np.ndarray, axes: np.ndarray, tcp: np.ndarray) -> PoseChain:
    """The :class:`PoseChain` of revolute joints with these origins and axes (world, q = 0; ``axes`` need not be
    unit vectors) and the TCP's 4x4 pose at q = 0: the radii are the sums of the distances along the chain. Joints
    on one line with the joint before are merged into it (``E_i(a) E_j(b) = E_i(a +- b)``; the search goes over
    whole turns), which takes a dimension off the search for arms like ``J I_50 J``."""
    origins = np.asarray(origins, dtype=float).reshape(-1, 3)
    axes = np.asarray(axes, dtype=float).reshape(-1, 3)
    axes = axes / np.linalg.norm(axes, axis=1)[:, None]
    tcp = np.asarray(tcp, dtype=float)
    # a joint on the same line as the one before adds nothing a whole turn of that one does not: dropped
    kept = [0]
    for i in range(1, len(origins)):
        a, o = axes[kept[-1]], origins[kept[-1]]
        if _off_line(a, axes[i]) > COAXIAL or _off_line(a, origins[i] - o) > COAXIAL:
            kept.append(i)
    if len(kept) < len(origins):
        origins, axes = origins[kept], axes[kept]
    steps = np.linalg.norm(np.diff(origins, axis=0), axis=1)
    wrist = np.array([float(steps[i:].sum()) for i in range(len(origins))])
    return chain_to_tcp(origins, axes, wrist, tcp)


def chain_to_tcp(
    origins: np.ndarray, axes: np.ndarray, wrist: np.ndarray, tcp: np.ndarray, joints: JointSteps | None = None
) -> PoseChain:
    """The :class:`PoseChain` of merged revolute joints (``origins``, unit ``axes``, their ``wrist`` radii: the
    distances along the chain to the last joint) to the TCP's 4x4 pose ``tcp``: the radii and offset from it (the
    chains of one set of joints to several TCPs share the joints' part, :class:`~.arm_body.ModuleSweeps`); with
    the joints' :class:`JointSteps`, its steps are made now from them (the same numbers, the joints' part once)."""
    last, at = origins[-1], tcp[:3, 3]
    gap = at - last
    radii = wrist + math.sqrt(gap.dot(gap))  # (the root: np.linalg.norm's of the same dot)
    chain = PoseChain.__new__(PoseChain)  # (a dataclass's fields without its __init__'s setattr per field)
    offset = tcp[:3, :3].T @ (last - at)
    chain.__dict__.update(origins=origins, axes=axes, tcp=tcp, radii=radii, wrist_radii=wrist, offset=offset)
    if joints is not None:
        chain.__dict__["steps"] = steps_to(joints, tcp)  # (the cached property's place)
    return chain


@dataclass(frozen=True)
class JointSteps:
    """What :attr:`PoseChain.steps` takes from the joints alone (the same for every TCP): the steps ``A_0`` to
    ``A_n-1`` (rotations, translations, as lists) and the last joint's frame (columns) and origin."""

    rotations: list
    translations: list
    frame: Sequence[Sequence[float]]
    origin: list[float]

    @functools.cached_property
    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """``rotations`` and ``translations`` as arrays, made once (every chain's steps begin with them)."""
        return np.array(self.rotations), np.array(self.translations)


def joint_steps(origins: np.ndarray, axes: np.ndarray) -> JointSteps:
    """The :class:`JointSteps` of joints with these ``origins`` and unit ``axes`` (world, q = 0)."""
    frames: list[Sequence[Sequence[float]]] = [_joint_frame(a) for a in axes.tolist()]
    points = origins.tolist()
    rotations, translations = [[list(r) for r in zip(*frames[0], strict=True)]], [points[0]]
    for k in range(1, len(frames)):
        _step(frames[k - 1], frames[k], points[k], points[k - 1], rotations, translations)
    return JointSteps(rotations, translations, frames[-1], points[-1])


def steps_to(joints: JointSteps, tcp: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:attr:`PoseChain.steps` of the joints of ``joints`` to the TCP's 4x4 pose ``tcp``: theirs and ``A_n``."""
    rotations: list = []  # (the last step; the joints' own made once, :attr:`JointSteps.arrays`)
    translations: list = []
    after = list(zip(*tcp[:3, :3].tolist(), strict=True))  # columns
    _step(joints.frame, after, tcp[:3, 3].tolist(), joints.origin, rotations, translations)
    (rot, trans), n = joints.arrays, len(joints.rotations)
    out_rot, out_trans = np.empty((n + 1, 3, 3)), np.empty((n + 1, 3))
    out_rot[:n], out_trans[:n], out_rot[n], out_trans[n] = rot, trans, rotations[0], translations[0]
    return out_rot, out_trans


def _step(
    before: Sequence, after: Sequence, p: list[float], o: list[float], rotations: list, translations: list
) -> None:
    """Append the step from the frame ``before`` at ``o`` to the frame ``after`` at ``p`` (``F_k^-1 F_k+1``)."""
    d = (p[0] - o[0], p[1] - o[1], p[2] - o[2])
    rotations.append([[_dot(u, v) for v in after] for u in before])
    translations.append([_dot(u, d) for u in before])


def chain_of_steps(rotations: np.ndarray, translations: np.ndarray) -> PoseChain:
    """The :class:`PoseChain` of ``T(q) = A_0 Rz(q_1) A_1 ... Rz(q_n) A_n`` (the ``A_k``' rotations (n + 1, 3, 3) and
    translations (n + 1, 3); no two joints on one line) with these as its :attr:`~PoseChain.steps`: its angles are
    these frames' (a proof, over whole turns, holds for any), and no frames are rebuilt from the axes. Its origins,
    axes and TCP pose are made when first read (a proof reads its steps, radii and offset alone: the frames' products
    were ~60 % of the chain's making, once per family proof)."""
    rotations, translations = np.ascontiguousarray(rotations), np.ascontiguousarray(translations)
    n = len(rotations) - 1
    chain = _StepsChain.__new__(_StepsChain)  # (its radii made when first read: a started proof reads none)
    chain.__dict__.update(offset=-rotations[n].T @ translations[n], steps=(rotations, translations))
    return chain


class _StepsChain(PoseChain):
    """A :class:`PoseChain` made of its steps (:func:`chain_of_steps`): the joints' origins and axes and the TCP's pose
    at q = 0 are the steps' products, its radii their lengths' sums, made when first read."""

    radii_of_steps = True

    @property
    def dof(self) -> int:
        """The joints' count: one step fewer than the steps (the last step leads to the TCP)."""
        return len(self.steps[0]) - 1

    @functools.cached_property
    def radii(self) -> np.ndarray:  # type: ignore[override]
        translations = self.steps[1]
        lengths = np.sqrt((translations[1:] ** 2).sum(axis=1))  # joint to joint, and the last joint to the TCP
        radii = np.cumsum(lengths[::-1])[::-1]
        self.__dict__["wrist_radii"] = radii - lengths[-1]  # (the wrist radii with them)
        return radii

    @functools.cached_property
    def wrist_radii(self) -> np.ndarray:  # type: ignore[override]
        self.radii  # noqa: B018 (made with the radii)
        return self.__dict__["wrist_radii"]

    @functools.cached_property
    def _frames(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        rotations, translations = self.steps
        n, at, frame = len(rotations) - 1, translations[0], rotations[0]
        origins, axes, tcp = np.empty((n, 3)), np.empty((n, 3)), np.eye(4)
        for k in range(n):
            origins[k], axes[k] = at, frame[:, 2]
            at, frame = at + frame @ translations[k + 1], frame @ rotations[k + 1]
        tcp[:3, :3], tcp[:3, 3] = frame, at
        return origins, axes, tcp

    @functools.cached_property
    def origins(self) -> np.ndarray:  # type: ignore[override]
        return self._frames[0]

    @functools.cached_property
    def axes(self) -> np.ndarray:  # type: ignore[override]
        return self._frames[1]

    @functools.cached_property
    def tcp(self) -> np.ndarray:  # type: ignore[override]
        return self._frames[2]


def _joint_frame(a: list[float]) -> list[tuple[float, float, float]]:
    """The columns x, y, z of a joint's frame (z its unit axis ``a``; see :attr:`PoseChain.steps`)."""
    ax, ay, az = a
    if abs(ax) < 0.9:  # a x (1, 0, 0)
        x = (0.0, az, -ay)
    else:  # a x (0, 1, 0)
        x = (-az, 0.0, ax)
    norm = math.sqrt(x[0] * x[0] + x[1] * x[1] + x[2] * x[2])
    xx, xy, xz = x[0] / norm, x[1] / norm, x[2] / norm
    return [(xx, xy, xz), (ay * xz - az * xy, az * xx - ax * xz, ax * xy - ay * xx), (ax, ay, az)]


def _dot(u: Sequence[float], v: Sequence[float]) -> float:
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2]


def _off_line(a: np.ndarray, v: np.ndarray) -> float:
    """``|a x v|`` for 3-vectors (how far ``v`` leaves the line of the unit vector ``a``), without numpy's overhead."""
    ax, ay, az = a.tolist()
    vx, vy, vz = v.tolist()
    return math.sqrt((ay * vz - az * vy) ** 2 + (az * vx - ax * vz) ** 2 + (ax * vy - ay * vx) ** 2)


@dataclass(frozen=True)
class ChainPoses:
    """:func:`chain_poses` for M configurations: ``frames`` (M, 3, 3), row k the TCP's axis k in the world;
    ``tcp`` (M, 3); ``wrist`` (M, 3), the last joint's origin."""

    frames: np.ndarray
    tcp: np.ndarray
    wrist: np.ndarray


def chain_poses(chain: PoseChain, q: np.ndarray) -> ChainPoses:
    """The TCP's frames and positions and the last joint's origins for configurations ``q`` (M, n) (angles from
    q = 0), joint 1 first: ``T = A_0 Rz(q_1) A_1 ... Rz(q_n) A_n`` (:attr:`PoseChain.steps`,
    :func:`~.proof_numpy.chain_frames`)."""
    rotations, translations = chain.steps
    rot, tcp, _, origins = chain_frames(rotations, translations, np.atleast_2d(np.asarray(q, dtype=float)))
    return ChainPoses(np.swapaxes(rot, 1, 2), tcp, origins[:, -1].copy())
