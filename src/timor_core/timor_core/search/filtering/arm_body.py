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

The balls themselves and :func:`sweep_from_frames` are in :mod:`.arm_balls` (re-exported here); here are the two
routes to them and, per search task, :class:`ModuleSweeps`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin

from timor_core.common.transforms import ROT_X_PI, inv
from timor_core.kinematics.reach import joint_path
from timor_core.search.filtering.arm_balls import (
    ChainJoints,
    body_balls,
    body_points,
    chain_joints,
    placed_balls,
    shape_balls,
    sweep_from_frames,
)
from timor_core.search.filtering.proof_chain import JointSteps, PoseChain, chain_from_frames, chain_to_tcp, joint_steps
from timor_core.search.filtering.quick_reach import REVOLUTE, module_frames, next_entry, walk_chain, walk_module
from timor_core.search.filtering.sweep_bound import ArmSweep

__all__ = [
    "ModuleSweeps", "body_balls", "body_points", "module_sweep", "robot_sweep", "shape_balls", "sweep_from_frames",
]  # fmt: skip

Z_AXIS = (0.0, 0.0, 1.0)


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
    origins = np.array([f[:3, 3] for f in frames])
    axes = np.array([f[:3, 2] for f in frames])
    return sweep_from_frames(origins, axes, tcp, *body_points(bodies))


@dataclass(frozen=True)
class _Step:
    """A module prefix walked as :func:`~.quick_reach.walk_chain` walks it: the joints' world frames so far, the last
    module's entry body pose and name and its bodies' poses from that (:func:`~.quick_reach.module_frames`), the
    last module with a joint (-1: none), and the last module's bodies (world pose, body, owner joint), whose balls
    are placed per chain part at once (:func:`body_points`: the head's, the tail's)."""

    frames: tuple[np.ndarray, ...]
    pose: np.ndarray
    entry: str
    rel: dict[str, np.ndarray]
    last_joint: int
    bodies: tuple[tuple[np.ndarray, Any, int], ...]


@dataclass(frozen=True)
class _Head:
    """What the chains with the same modules up to their last joint's share: their :class:`ChainJoints`, the balls of
    those modules placed (``moved``: points, links, radii; ``fixed``: points, radii), and their
    :class:`~.reach_proof.PoseChain`'s joints (origins, unit axes: the merged ones; ``wrist``: its
    ``wrist_radii``)."""

    joints: ChainJoints
    moved: tuple[np.ndarray, np.ndarray, np.ndarray]
    fixed: tuple[np.ndarray, np.ndarray]
    origins: np.ndarray
    axes: np.ndarray
    wrist: np.ndarray
    steps: JointSteps
    tail_frame: np.ndarray

    def chain(self, tcp: np.ndarray) -> PoseChain:
        """The :class:`~.reach_proof.PoseChain` of these joints to ``tcp`` (what
        :func:`~.proof_chain.chain_from_frames` gives: the same function makes its radii and offset; its steps from
        the joints' part made once, :func:`~.proof_chain.joint_steps`)."""
        return chain_to_tcp(self.origins, self.axes, self.wrist, tcp, self.steps)


@dataclass(frozen=True)
class _Tail:
    """The modules of a chain from its last joint's on, seen from that module's entry body (q = 0): the TCP's pose
    ``tcp`` (4x4) and the balls of the modules after it (``points`` (P, 3), ``rho`` (P,)), all on the last link."""

    tcp: np.ndarray
    points: np.ndarray
    rho: np.ndarray


MAX_PREFIXES = 1 << 15  # module prefixes kept per task (more: all are forgotten)


class ModuleSweeps:
    """:func:`module_sweep` of the serial chains of one search task (at its base ``placement``) from how their
    modules join (a ``filter_state.SerialJoin``: the modules and the connector each is entered by), no assembly
    built: per chain *head* (its modules to its last joint's, walked once per prefix) the joints' part
    (:class:`ChainJoints`, :class:`~.proof_chain.JointSteps`) and the head's balls placed, per *tail* (the modules from
    the last joint's on, and how they are entered; the same for every head) the TCP and the balls seen from that
    module's entry body (:class:`_Tail`), once each.

    Why: on ``obstacles_4`` (issue 38) 308 chains of 9-10 modules took a sweep, ~0.25 ms each (their assembly built,
    walked, every ball placed), but they share 64 heads and a few tails (an extension, the gripper); a chain then
    adds its TCP (one product), its :class:`~.reach_proof.PoseChain` (radii, offset and the last step) and its tail's
    balls moved into its last joint's frame (one product). The same sweep as :func:`module_sweep` up to rounding
    (the tail's products are grouped otherwise: ``tests/test_module_sweep.py`` compares them to 1e-12 m)."""

    def __init__(self, db: Any, placement: np.ndarray | None) -> None:
        self.db = db
        self.world = np.eye(4) if placement is None else np.asarray(placement, dtype=float)
        self.steps: dict[tuple[str, ...], _Step | None] = {}
        self.heads: dict[tuple[str, ...], _Head | None] = {}
        self.tails: dict[tuple[tuple[str, ...], tuple[str, ...]], _Tail | None] = {}
        self.plain: dict[int, tuple[Any, bool, bool]] = {}  # id(module): (module, its joints fit, it has one)
        self.exits: dict[tuple[str, str, str], str] = {}  # (module, its entry, next module): its exit to that one

    def sweep(self, ids: tuple[str, ...], join: Any) -> ArmSweep | None:
        """:func:`module_sweep` of the chain of ``ids`` joined as ``join`` says (``join.modules``, ``.entries``)."""
        last = self._last_joint(join)
        if last is None:
            return None
        key = ids[: last + 1]
        tail = self._tail(ids, join, last)
        step = self._step(ids, join, last) if tail is not None else None
        if tail is None or step is None:
            return None
        tcp = step.pose @ tail.tcp
        head = self.heads[key] if key in self.heads else self._head(ids, key, step, tcp)
        if head is None:
            return None
        chain = head.chain(tcp)
        points, links, rho = head.moved
        if len(tail.rho):  # (the tail's balls in the last joint's frame: its pose from the module's entry, once)
            local = tail.points @ head.tail_frame[:3, :3].T + head.tail_frame[:3, 3]
            points, links = np.concatenate([points, local]), np.concatenate([links, np.full(len(local), chain.dof - 1)])
            rho = np.concatenate([rho, tail.rho])
        return ArmSweep(chain, points, links, rho, *head.fixed, head.joints.groups, head.joints.signs)

    def _last_joint(self, join: Any) -> int | None:
        """The index of the chain's last module with a joint; None where there is none, or a module has more than
        one joint or one not revolute about its z axis."""
        last = None
        for i, module in enumerate(join.modules):
            plain = self.plain.get(id(module))
            if plain is None or plain[0] is not module:
                joints = module.joints
                ok = len(joints) <= 1 and all(j.type in REVOLUTE and tuple(j.axis) == Z_AXIS for j in joints)
                plain = self.plain[id(module)] = (module, ok, bool(joints))
            if not plain[1]:
                return None
            last = i if plain[2] else last
        return last

    def _tail(self, ids: tuple[str, ...], join: Any, last: int) -> _Tail | None:
        """The chain's :class:`_Tail` (kept under its modules from the last joint's on, and how they are entered);
        None where its last module has not one tool frame."""
        key = (ids[last:], tuple(join.entries[last:]))
        if key in self.tails:
            return self.tails[key]
        modules, entries = join.modules, join.entries
        pose, entry = np.eye(4), modules[last].connectors[entries[last]].body_id
        rel = module_frames(modules[last], entry)[0]
        bodies: list = []
        for i in range(last + 1, len(ids)):
            nxt = modules[i].connectors[entries[i]]
            pose = pose @ next_entry(modules[i - 1], entry, self._exit(ids[i - 1], entries[i - 1], ids[i]), rel, nxt)
            entry = nxt.body_id
            rel, _, placed = walk_module(modules[i], entry, pose, 0, True)  # (no joint: every body on the last link)
            bodies.extend(placed)
        tools = [c for c in modules[-1].eef_connectors if c.id != entries[-1]]
        tail = None
        if len(tools) == 1:
            points, _, rho = body_points(bodies)
            tail = _Tail(pose @ rel[tools[0].body_id] @ tools[0].pose, points, rho)
        self.tails[key] = tail
        return tail

    def _head(self, ids: tuple[str, ...], key: tuple[str, ...], step: _Step, tcp: np.ndarray) -> _Head | None:
        """The chain's :class:`_Head` (kept under ``key``: its modules to its last joint's; ``step``: the walk to that
        module; ``tcp``: the chain's, for the merged joints)."""
        origins, axes = (np.array([f[:3, k] for f in step.frames]) for k in (3, 2))
        merged = chain_from_frames(origins, axes, tcp)  # (its steps made once, for it and the head's chains:)
        steps = joint_steps(merged.origins, merged.axes)
        chain = chain_to_tcp(merged.origins, merged.axes, merged.wrist_radii, tcp, steps)
        joints = chain_joints(origins, axes, chain)
        head = None
        if joints is not None:
            last = step.last_joint
            bodies = [body for b in range(last + 1) for body in self.steps[ids[: b + 1]].bodies]  # type: ignore[union-attr]
            placed = placed_balls(joints, *body_points(bodies))
            origins, axes, wrist = (np.array(a) for a in (chain.origins, chain.axes, chain.wrist_radii))
            for a in (origins, axes, wrist):
                a.setflags(write=False)  # (shared by the chains of this head)
            tail_frame = inv(joints.frames[-1]) @ step.pose
            head = _Head(joints, *placed, origins, axes, wrist, steps, tail_frame)
        self.heads[key] = head
        return head

    def _step(self, ids: tuple[str, ...], join: Any, i: int) -> _Step | None:
        """The walk to module ``i`` (kept per prefix; the modules' joints are checked before: :meth:`_last_joint`)."""
        key = ids[: i + 1]
        if key in self.steps:
            return self.steps[key]
        if len(self.steps) > MAX_PREFIXES:
            self.steps, self.heads, self.tails = {}, {}, {}
        module, step = join.modules[i], None
        if i == 0:  # (every module's joints were checked first: _last_joint)
            connector = module.connectors[join.entries[0]]
            step = _walked(module, self.world @ ROT_X_PI @ inv(connector.pose), connector.body_id, (), -1, 0)
        elif (before := self._step(ids, join, i - 1)) is not None:
            prev, nxt = join.modules[i - 1], module.connectors[join.entries[i]]
            pose = before.pose @ next_entry(prev, before.entry, self._exit(ids[i - 1], join.entries[i - 1], ids[i]),
                                            before.rel, nxt)  # fmt: skip
            step = _walked(module, pose, nxt.body_id, before.frames, before.last_joint, i)
        self.steps[key] = step
        return step

    def _exit(self, a: str, entry: str, b: str) -> str:
        """The connector of module ``a`` (entered by ``entry``) joined to module ``b``: the one free connector of
        ``a`` that fits ``b`` (as ``ModuleAssembly.from_serial_modules`` joins them; the join found it one)."""
        key = (a, entry, b)
        found = self.exits.get(key)
        if found is None:
            found = self.exits[key] = next(ca for ca, _ in self.db.connections_between(a, b) if ca != entry)
        return found


def _walked(module: Any, pose: np.ndarray, entry: str, frames: tuple, last_joint: int, i: int) -> _Step:
    """``module`` (the ``i``-th) walked from its entry body ``entry`` at ``pose`` (the walk so far: ``frames``, the
    last module with a joint ``last_joint``) by :func:`~.quick_reach.walk_module`, the step
    :func:`~.quick_reach.walk_chain` takes: its joint frames appended, its bodies' world poses with the joint each
    moves after."""
    rel, joints, bodies = walk_module(module, entry, pose, len(frames) - 1, True)
    return _Step((*frames, *joints), pose, entry, rel, i if joints else last_joint, tuple(bodies))


def _walk(assembly: Any, placement: np.ndarray | None) -> tuple[list[np.ndarray], np.ndarray, list] | None:
    """:func:`~.quick_reach.joint_frames`' walk (the same products), also giving each body's world pose and the
    joint (index, -1: none) after which it moves: ``(joint frames, TCP pose, [(pose, body, joint)])``; None also
    where a joint's axis is not z."""
    if any(tuple(j.axis) != Z_AXIS for m in assembly.modules for j in m.joints):
        return None
    bodies: list = []
    walked = walk_chain(assembly, placement, bodies)
    return None if walked is None else (walked[0], walked[1], bodies)
