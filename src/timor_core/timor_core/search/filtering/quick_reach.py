"""The workspace filter's bounds from the modules alone, before the Pinocchio model is built.

Why: on tasks other than the user study most assemblies the cost order tries fail the workspace filter, and each
first paid ~0.4 ms (unloaded) for its robot model. The bounds it checks (``PinRobot.reach`` and the nested
bounds of :mod:`timor_core.kinematics.reach`) need only the joint origins and axes at q = 0 and the TCP, which
follow from the modules' connector and joint poses: a few 4x4 products. :func:`quick_chain` gives them for serial
assemblies of modules with at most one revolute (or continuous) joint each; anything else gets None (the search
then builds the robot and checks as before). The values are those of the built robot (a test compares them on
random assemblies).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.common.transforms import ROT_X_PI, inv
from timor_core.kinematics.reach import ReachChain, chain_gap, position_slack
from timor_core.search.filtering.filter_state import Candidate
from timor_core.search.filtering.proof_chain import PoseChain, chain_from_frames
from timor_core.search.filtering.reach_proof import proof_reason, unreachable_pose
from timor_core.search.filtering.space_reach import module_span

__all__ = [
    "OUTSIDE",
    "REVOLUTE",
    "UNREACHABLE",
    "BodyPose",
    "QuickChain",
    "first_unreachable",
    "joint_frames",
    "module_frames",
    "next_entry",
    "quick_chain",
    "quick_gap",
    "walk_module",
]

REVOLUTE = ("revolute", "continuous")
BodyPose = tuple[np.ndarray, Any, int]
"""a body's world pose (q = 0), the body, and the index of the joint after which it moves (-1: none)"""
OUTSIDE = "outside workspace"
UNREACHABLE = "no configuration reaches it"


@dataclass(frozen=True)
class QuickChain:
    """What the workspace filter needs: the base position, ``PinRobot.reach`` of the TCP and its nested chain."""

    base: np.ndarray
    reach: float
    chain: ReachChain
    tcp_pose: np.ndarray
    """the TCP's 4x4 pose at q = 0 (with ``chain``'s joints: the proof of :mod:`.reach_proof`)"""

    def poses(self) -> PoseChain:
        """The chain for :func:`~.reach_proof.unreachable_pose`."""
        return chain_from_frames(self.chain.origins, self.chain.axes, self.tcp_pose)


def _body_poses(module: Any, entry_body: str, entry_pose: np.ndarray) -> tuple[dict[str, np.ndarray], list]:
    """World poses (q = 0) of the module's bodies from its entry body's, and its joint frames on the way."""
    poses = {entry_body: entry_pose}
    frames = []
    todo = [entry_body]
    while todo:
        b = todo.pop()
        for j in module.joints:
            if j.parent == b and j.child not in poses:
                frame = poses[b] @ j.pose_parent
                poses[j.child] = frame @ j.pose_child
                frames.append(frame)
                todo.append(j.child)
            elif j.child == b and j.parent not in poses:
                frame = poses[b] @ inv(j.pose_child)
                poses[j.parent] = frame @ inv(j.pose_parent)
                frames.append(frame)
                todo.append(j.parent)
    return poses, frames


_RELATIVE: dict[tuple[int, str], tuple[Any, dict[str, np.ndarray], list[np.ndarray]]] = {}
_STEPS: dict[tuple[int, str, str, int], tuple[Any, Any, np.ndarray]] = {}


def module_frames(module: Any, entry_body: str) -> tuple[dict[str, np.ndarray], list[np.ndarray]]:
    """:func:`_body_poses` from the entry body at the identity (bodies and joint frames relative to the entry body),
    once per module and entry body (the module is held with its result, so its id is not reused)."""
    key = (id(module), entry_body)
    hit = _RELATIVE.get(key)
    if hit is None or hit[0] is not module:
        if len(_RELATIVE) > 4096:
            _RELATIVE.clear()
        hit = _RELATIVE[key] = (module, *_body_poses(module, entry_body, np.eye(4)))
    return hit[1], hit[2]


def next_entry(module: Any, entry_body: str, out_id: str, rel: dict[str, np.ndarray], nxt: Any) -> np.ndarray:
    """The next module's entry body pose relative to this module's entry body (cached as :func:`module_frames`)."""
    key = (id(module), entry_body, out_id, id(nxt))
    hit = _STEPS.get(key)
    if hit is None or hit[0] is not module or hit[1] is not nxt:
        out = module.connectors[out_id]
        if len(_STEPS) > 16384:
            _STEPS.clear()
        hit = _STEPS[key] = (module, nxt, rel[out.body_id] @ out.pose @ ROT_X_PI @ inv(nxt.pose))
    return hit[2]


def walk_module(
    module: Any, entry_body: str, pose: np.ndarray, last: int, with_bodies: bool
) -> tuple[dict[str, np.ndarray], list[np.ndarray], list[BodyPose]]:
    """One module of a serial walk entered at ``entry_body`` posed at ``pose`` (``last``: the index of the walk's last
    joint so far, -1: none): its :func:`module_frames` ``rel``, its joints' world frames ``pose @ f`` and (where
    ``with_bodies``) its bodies' world poses ``pose @ rel[body]`` with the joint after which each moves (the entry body
    with the joint before, every other with the module's own), in one place so :func:`walk_chain` and
    ``arm_body.ModuleSweeps`` walk with the very same products."""
    rel, joints = module_frames(module, entry_body)
    frames = [pose @ f for f in joints]
    if not with_bodies:
        return rel, frames, []
    own = last + len(frames)  # with a joint, every body but the entry body lies beyond it
    return rel, frames, [(pose @ rel[b.id], b, last if b.id == entry_body else own) for b in module.bodies]


def joint_frames(assembly: Any, placement: np.ndarray | None) -> tuple[list[np.ndarray], np.ndarray] | None:
    """The world frames (4x4, q = 0, z the axis) of a serial assembly's joints, base first, and its TCP's pose at
    ``placement``; None if the assembly is not a chain of modules with at most one revolute joint each ending in one
    tool frame, or has no joint."""
    return walk_chain(assembly, placement, None)


def walk_chain(
    assembly: Any, placement: np.ndarray | None, bodies: list[BodyPose] | None
) -> tuple[list[np.ndarray], np.ndarray] | None:
    """:func:`joint_frames`; where ``bodies`` is a list, each body's world pose (q = 0) is appended to it as
    ``(pose, body, joint)``, ``joint`` the index of the joint after which it moves (-1: none): one walk, so the
    sweep proofs' bodies (``arm_body``) lie on the very frames the reach bounds use."""
    modules = assembly.modules
    if any(len(m.joints) > 1 or any(j.type not in REVOLUTE for j in m.joints) for m in modules):
        return None
    if [(a, b) for a, _, b, _ in assembly.connections] != [(i, i + 1) for i in range(len(modules) - 1)]:
        return None
    world = np.eye(4) if placement is None else np.asarray(placement, dtype=float)
    base_module, base_id = assembly.base_connector
    if base_module != 0:
        return None
    connector = modules[0].connectors[base_id]
    pose = world @ ROT_X_PI @ inv(connector.pose)
    entry_body = connector.body_id
    frames: list[np.ndarray] = []
    for i, module in enumerate(modules):
        rel, joints, placed = walk_module(module, entry_body, pose, len(frames) - 1, bodies is not None)
        frames.extend(joints)
        if bodies is not None:
            bodies.extend(placed)
        if i + 1 < len(modules):
            _, out_id, _, in_id = assembly.connections[i]
            nxt = modules[i + 1].connectors[in_id]
            pose = pose @ next_entry(module, entry_body, out_id, rel, nxt)
            entry_body = nxt.body_id
        else:
            used = {assembly.connections[i - 1][3]} if i else {base_id}
            tools = [c for c in module.eef_connectors if c.id not in used]
            if len(tools) != 1 or not frames:  # no joint: PinRobot.reach measures such a robot differently
                return None
            return frames, pose @ rel[tools[0].body_id] @ tools[0].pose
    return None


def quick_chain(assembly: Any, placement: np.ndarray | None) -> QuickChain | None:
    """The base position, reach bound and nested reach chain of a serial assembly's TCP at ``placement``; None if
    :func:`joint_frames` gives none."""
    walked = joint_frames(assembly, placement)
    if walked is None:
        return None
    frames, tcp_pose = walked
    origins = [f[:3, 3] for f in frames]
    tcp = tcp_pose[:3, 3]
    base = (np.eye(4) if placement is None else np.asarray(placement, dtype=float))[:3, 3]
    points = [base, *origins, tcp]
    steps = [float(np.linalg.norm(points[k + 1] - points[k])) for k in range(len(points) - 1)]
    radii = [float(sum(steps[k + 1 :])) for k in range(len(origins))]
    axes = np.array([f[:3, 2] for f in frames]).reshape(-1, 3)
    chain = ReachChain(np.array(origins).reshape(-1, 3), axes, np.array(radii))
    return QuickChain(base=np.array(base), reach=float(sum(steps)), chain=chain, tcp_pose=tcp_pose)


def quick_gap(qc: QuickChain, pose: Any) -> float:
    """What ``filters._gap`` gives for the built robot: the distance from the base beyond the reach bound, and the
    nested bounds, each less the tolerance's position slack (0: maybe reachable)."""
    slack = position_slack(pose.tolerance)
    p = np.asarray(pose.world, dtype=float)[:3, 3]
    gap = max(0.0, float(np.linalg.norm(p - qc.base)) - qc.reach - slack)
    return max(gap, chain_gap(qc.chain, p, slack))


def first_unreachable(c: Candidate) -> tuple[str, str, str] | None:
    """``(goal, short reason, reason)`` of the first pose goal (task order) the modules alone prove out of reach, as
    the workspace filter would report it for the built robot: first by the distance bounds, then (every goal within
    them) the first goal by :func:`~.reach_proof.unreachable_pose`; None if the modules prove none (the robot must
    be built). Goals the family filter found reached within its proofs' slacks (``candidate.reached``) are left out:
    no sound bound refuses them. Where no goal is refused it sets ``candidate.within_reach`` (the robot's own
    distance bounds checked every goal left: the workspace filter need not check them again on the robot)."""
    todo = [g for k, g in enumerate(c.ctx.goals) if k not in c.reached or g.path]
    if not todo and c.ctx.config.family_filter:
        c.within_reach = True  # (no goal to check)
        return None
    qc = quick_chain(c.require_assembly(), c.ctx.placement)
    for g in todo:
        poses = (g.pose, *g.path)
        if qc is not None:
            gaps = [quick_gap(qc, p) for p in poses]
            bound = f"reach bound {qc.reach:.3f} m"
        else:  # not a plain chain: the module spans only (sound, weaker)
            base = np.zeros(3) if c.ctx.placement is None else np.asarray(c.ctx.placement, dtype=float)[:3, 3]
            span = sum(module_span(c.ctx.db[m]) for m in c.ids)
            far = [
                float(np.linalg.norm(np.asarray(p.world)[:3, 3] - base)) - position_slack(p.tolerance) for p in poses
            ]
            gaps = [f - span if f > span + 1e-9 else 0.0 for f in far]
            bound = f"module span bound {span:.3f} m"
        worst = int(np.argmax(gaps))
        if gaps[worst] > 0:
            where = f" (pose {worst} of its trajectory)" if g.path else ""
            return g.id, OUTSIDE, f"{gaps[worst]:.3f} m outside the workspace{where} ({bound})"
    c.within_reach = qc is not None  # (the robot's bounds, not the spans alone)
    budget = c.ctx.config.proof_budget
    if qc is None or not budget or c.ctx.config.family_filter:  # the family filter has tried every goal
        return None
    first = c.ctx.goals[0] if c.ctx.goals else None  # the goal the IK tries first (see WorkspaceFilter)
    boxes = None if first is None else unreachable_pose(qc.poses(), first.pose.world, first.pose.tolerance, budget)
    return None if boxes is None or first is None else (first.id, UNREACHABLE, proof_reason(boxes))
