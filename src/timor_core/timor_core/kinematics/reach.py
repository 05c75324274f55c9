"""A tighter necessary condition for reaching a position than the distance from the base: nested reach bounds.

Why: a configuration search rejects most candidate robots because they cannot reach a goal, and an IK run that
fails costs milliseconds. ``PinRobot.reach`` bounds the TCP's distance from the base; but the first joints' axes
are fixed or move on circles, and the rest of the arm can only reach so far from them. For a chain of revolute
joints with origins ``o_1, o_2, ...`` (``o_k`` on joint k's axis) the TCP lies within ``r_k`` of ``o_k`` in every
configuration, where ``r_k`` is the sum of the (configuration-independent) distances from ``o_k`` along the chain.
So a reachable goal ``g`` satisfies, whatever the joint limits:

1. ``|g - o_1| <= r_1`` (``o_1`` does not move);
2. ``dist(g, C_2) <= r_2``, where ``C_2`` is the circle ``o_2`` describes about joint 1's axis;
3. ``dist(g, S_3) <= r_3``, where ``S_3`` is the surface ``o_3`` sweeps about joints 1 and 2: the distance to a
   circle about joint 2's axis, minimised over joint 1's angle (sampled; the sampling error is bounded by the
   goal's distance from joint 1's axis times half the step, and subtracted, so the test stays sound).

On experiment 2 of the Timor paper (user-study task, robco_like) level 3 rejects two thirds of the robots the
kinematic IK would fail on, at about a tenth of the cost of a failing IK run, and none that can reach the goals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pinocchio as pin

__all__ = [
    "ReachChain",
    "chain_gap",
    "joint_path",
    "outside_workspace",
    "position_slack",
    "reach_chain",
    "reach_gap",
    "workspace_gap",
]

#: samples of joint 1's angle for level 3 (error bound: distance from the axis * pi / SAMPLES)
SAMPLES = 720
COARSE = 8  # the first pass takes every 8th sample
ROUNDING = 1e-9  # m: a stretched arm's tip lies on its bound; rounding must not put it outside
_COS = np.cos(np.linspace(0.0, 2.0 * math.pi, SAMPLES, endpoint=False))
_SIN = np.sin(np.linspace(0.0, 2.0 * math.pi, SAMPLES, endpoint=False))


@dataclass(frozen=True)
class ReachChain:
    """The joints from the base to a frame, at the zero configuration, as far as the nested bounds use them.

    ``origins[k]``, ``axes[k]``: joint k's origin and unit axis in the world; ``radii[k]``: the largest distance
    from ``origins[k]`` to the frame over all configurations. Only the leading revolute joints are kept (a
    prismatic joint moves the origins after it along a line, which these bounds do not model).
    """

    origins: np.ndarray
    axes: np.ndarray
    radii: np.ndarray


def reach_chain(robot: Any, fid: int) -> ReachChain:
    """The :class:`ReachChain` of a robot's frame (cached on the robot)."""
    cache = robot.__dict__.setdefault("_reach_chains", {})
    chain = cache.get(fid)
    if chain is None:
        chain = cache[fid] = _build(robot.model, fid)
    return chain


def joint_path(model: Any, fid: int) -> list[int]:
    """The joints (Pinocchio indices) from the root to frame ``fid``, base first."""
    joints = []
    j = model.frames[fid].parentJoint
    while j > 0:
        joints.append(j)
        j = model.parents[j]
    joints.reverse()
    return joints


def _build(model: Any, fid: int) -> ReachChain:
    frame = model.frames[fid]
    joints = joint_path(model, fid)
    data = model.createData()
    pin.computeJointJacobians(model, data, pin.neutral(model))
    jac = np.asarray(data.J).reshape(6, -1)
    radius = float(np.linalg.norm(frame.placement.translation))
    radii = [0.0] * len(joints)
    for k in range(len(joints) - 1, -1, -1):
        radii[k] = radius
        radius += float(np.linalg.norm(model.jointPlacements[joints[k]].translation)) + _travel(model, joints[k])
    origins, axes, kept = [], [], []
    for k, j in enumerate(joints):
        if not model.joints[j].shortname().startswith("JointModelR") or model.joints[j].nv != 1:
            break  # not revolute: the bounds of the joints after it would not hold
        axis = jac[3:, model.joints[j].idx_v]
        origins.append(np.array(data.oMi[j].translation))
        axes.append(axis / np.linalg.norm(axis))
        kept.append(radii[k])
    return ReachChain(np.array(origins).reshape(-1, 3), np.array(axes).reshape(-1, 3), np.array(kept))


def _travel(model: Any, j: int) -> float:
    """How far joint ``j`` can move the bodies after it away from its origin by itself (0 for a revolute joint,
    the larger end of its limits for a prismatic one, inf for any other kind)."""
    name = model.joints[j].shortname()
    if name.startswith("JointModelR"):
        return 0.0
    if name.startswith("JointModelP") and model.joints[j].nq == 1:
        idx = model.joints[j].idx_q
        end = max(abs(model.lowerPositionLimit[idx]), abs(model.upperPositionLimit[idx]))
        return float(end) if end < 1e300 else math.inf
    return math.inf


def _split(v: np.ndarray, axis: np.ndarray) -> tuple[float, float]:
    """(coordinate along ``axis``, distance from it) of a vector from a point on the axis."""
    h = float(v @ axis)
    return h, float(np.linalg.norm(v - h * axis))


def reach_gap(robot: Any, fid: int, position: np.ndarray, slack: float = 0.0) -> float:
    """How far (m) ``position`` lies outside the nested reach bounds of frame ``fid``, less ``slack`` (0: the
    bounds do not exclude it). A positive value proves that no configuration puts the frame there."""
    return chain_gap(reach_chain(robot, fid), position, slack)


def chain_gap(c: ReachChain, position: np.ndarray, slack: float = 0.0) -> float:
    """:func:`reach_gap` for a :class:`ReachChain` however obtained (e.g. from the modules, before any robot)."""
    g = np.asarray(position, dtype=float)
    slack = slack + ROUNDING
    n = len(c.radii)
    if n == 0:
        return 0.0
    o, a, r = c.origins, c.axes, c.radii
    gaps = [float(np.linalg.norm(g - o[0])) - r[0]]
    if n >= 2:
        hg, rho_g = _split(g - o[0], a[0])
        h2, rho2 = _split(o[1] - o[0], a[0])
        gaps.append(math.hypot(hg - h2, rho_g - rho2) - r[1])
    if n >= 3 and max(gaps) <= slack:  # levels 1 and 2 do not exclude it: level 3
        gaps.append(_level3(c, g, rho_g, slack))
    return max(0.0, max(gaps) - slack)


def _level3(c: ReachChain, g: np.ndarray, rho_g: float, slack: float) -> float:
    """Level 3's gap: coarse samples of joint 1's angle first; all of them only where the coarse ones cannot
    decide (the coarse minimum is within its error bound of the threshold)."""
    o, a = c.origins, c.axes
    v = g - o[0]
    along = float(v @ a[0]) * a[0]
    perp = v - along
    across = np.cross(a[0], perp)
    h3, rho3 = _split(o[2] - o[1], a[1])
    gap = math.inf
    for stride in (COARSE, 1):
        # g rotated by -theta about joint 1's axis, for every sampled theta
        points = (o[0] + along - o[1]) + np.outer(_COS[::stride], perp) - np.outer(_SIN[::stride], across)
        h = points @ a[1]
        rho = np.linalg.norm(points - np.outer(h, a[1]), axis=1)
        nearest = float(np.min(np.hypot(h - h3, rho - rho3))) - c.radii[2]
        error = rho_g * math.pi * stride / SAMPLES
        gap = nearest - error
        if gap > slack or nearest <= slack:  # proven out of reach, or a sample within reach: decided
            break
    return gap


def position_slack(tolerance: Any) -> float:
    """The largest position deviation a tolerance allows (inf if it bounds no position)."""
    parts = {p.projection: p.interval for p in getattr(tolerance, "parts", ())}
    if "r_sph" in parts:
        return parts["r_sph"].high
    if all(a in parts for a in "xyz"):
        return math.sqrt(sum(max(abs(parts[a].low), abs(parts[a].high)) ** 2 for a in "xyz"))
    if "r_cyl" in parts and "z" in parts:
        return math.hypot(parts["r_cyl"].high, max(abs(parts["z"].low), abs(parts["z"].high)))
    return math.inf


def outside_workspace(robot: Any, fid: int, desired: np.ndarray, tolerance: Any) -> float:
    """How far (m) the goal lies beyond the robot's reach, allowing for the tolerance (0 if it may be reachable)."""
    sphere = robot.__dict__.setdefault("_ik_reach_sphere", {}).get(fid)  # kept on the robot, as its reach()
    if sphere is None:
        base = robot.model.frames[1].placement.translation.tolist() if robot.model.nframes > 1 else [0.0, 0.0, 0.0]
        sphere = robot.__dict__["_ik_reach_sphere"][fid] = (base, robot.reach(fid))
    return workspace_gap(sphere[0], sphere[1], desired, tolerance)


def workspace_gap(base: list[float], reach: float, desired: np.ndarray, tolerance: Any) -> float:
    """:func:`outside_workspace` of a robot whose base is at ``base`` and whose frame's reach is ``reach``."""
    slack = _SLACK.get(id(tolerance))
    if slack is None or slack[0] is not tolerance:  # the same tolerance object again: known (it is held)
        if len(_SLACK) > 256:
            _SLACK.clear()
        slack = _SLACK[id(tolerance)] = (tolerance, position_slack(tolerance))
    distance = math.dist(desired[:3, 3].tolist(), base)
    return max(0.0, distance - reach - slack[1])


_SLACK: dict[int, tuple[Any, float]] = {}
