"""Task constraints in the CoBRA format: what must hold over a whole solution (or during a goal)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.errors import FormatError, ValidationError
from timor_core.kinematics.frames import FrameTree
from timor_core.kinematics.pose import ToleratedPose

__all__ = [
    "Constraint",
    "JointLimits",
    "SelfCollisionFree",
    "CollisionFree",
    "AllGoalsFulfilled",
    "GoalOrder",
    "GoalOrderConstraint",
    "BasePlacement",
    "ValidJointAngles",
    "EndEffector",
    "GenericConstraint",
    "TASK_LEVEL_ONLY",
    "constraint_from_json",
    "CONSTRAINT_TYPES",
]

JOINT_PARTS = ("q", "dq", "ddq", "tau")


@dataclass(eq=False)
class Constraint:
    """Base class: a constraint knows its CoBRA ``type`` and writes itself back losslessly."""

    extra: dict = field(default_factory=dict, kw_only=True)
    type_name: ClassVar[str] = ""

    def body_json(self) -> dict:
        """Type-specific fields."""
        return {}

    def to_json(self) -> dict:
        """The CoBRA JSON of this constraint."""
        return {"type": self.type_name, **self.body_json(), **self.extra}

    @classmethod
    def from_json(cls, data: Any, path: str = "$", frames: FrameTree | None = None) -> Constraint:
        """A constraint from its CoBRA JSON, as the reference's ``EndEffector.from_json``; called on a subclass,
        JSON of another type is a FormatError naming the expected type."""
        constraint = constraint_from_json(data, path, frames)
        if not isinstance(constraint, cls):
            raise FormatError(f"expected a constraint of type {cls.type_name!r}", path=f"{path}.type",
                              value=constraint.type_name or data.get("type"))  # fmt: skip
        return constraint


@dataclass(eq=False)
class JointLimits(Constraint):
    """Joint position (q), velocity (dq), acceleration (ddq) and torque (tau) limits of the robot hold."""

    parts_json: list[str] = field(default_factory=lambda: ["q", "dq", "tau"])
    type_name: ClassVar[str] = "joint"

    @property
    def parts(self) -> frozenset[str]:
        """The limited quantities (duplicates in the file are harmless)."""
        return frozenset(self.parts_json)

    def body_json(self) -> dict:
        return {"parts": list(self.parts_json)}


@dataclass(eq=False)
class SelfCollisionFree(Constraint):
    """The robot never collides with itself (per the module set's ignore mode)."""

    type_name: ClassVar[str] = "selfCollisionFree"


@dataclass(eq=False)
class CollisionFree(Constraint):
    """The robot never collides with an obstacle (optionally keeping a safety margin, in metres)."""

    safety_margin: float | None = None
    type_name: ClassVar[str] = "collisionFree"

    def body_json(self) -> dict:
        return {} if self.safety_margin is None else {"safetyMargin": self.safety_margin}


@dataclass(eq=False)
class AllGoalsFulfilled(Constraint):
    """Every goal of the task is achieved."""

    type_name: ClassVar[str] = "allGoalsFulfilled"


@dataclass(eq=False)
class GoalOrder(Constraint):
    """The listed goals are achieved in this order."""

    order: list[str] = field(default_factory=list)
    type_name: ClassVar[str] = "allGoalsFulfilledInOrder"

    def body_json(self) -> dict:
        return {"order": list(self.order)}


#: timor-python's name of :class:`GoalOrder`.
GoalOrderConstraint = GoalOrder


@dataclass(eq=False)
class BasePlacement(Constraint):
    """The robot's base must be placed within a tolerance around a nominal pose."""

    pose: ToleratedPose | None = None
    type_name: ClassVar[str] = "basePlacement"

    def body_json(self) -> dict:
        return {"pose": self.pose.to_json()} if self.pose is not None else {}


@dataclass(eq=False)
class ValidJointAngles(Constraint):
    """Joint angles within [lower, upper]; ``coterminal`` compares angles mapped to [-π, π) first."""

    limits: np.ndarray = field(default_factory=lambda: np.zeros((2, 0)))
    coterminal: bool = False
    type_name: ClassVar[str] = "validJointAngles"

    def valid(self, q: np.ndarray) -> bool:
        """Check one configuration (a ValidationError if the limits are not one per joint of the robot)."""
        q = np.asarray(q, dtype=float)
        if q.shape[-1:] != self.limits.shape[1:]:
            raise ValidationError(
                f"the validJointAngles constraint gives limits for {self.limits.shape[1]} joints, "
                f"but the robot has {q.shape[-1] if q.ndim else 0}",
                value=self.limits.tolist(),
            )
        if self.coterminal:
            q = np.mod(q + np.pi, 2 * np.pi) - np.pi
        return bool(np.all(q >= self.limits[0]) and np.all(q <= self.limits[1]))

    def body_json(self) -> dict:
        return {"limits": self.limits.tolist(), "coterminal": self.coterminal}


@dataclass(eq=False)
class EndEffector(Constraint):
    """The TCP keeps within a tolerated pose and/or within bounds of its speed (m/s) and angular speed (rad/s).

    JSON: ``{"type": "endEffector", "pose"?: tolerated pose, "v_min"?, "v_max"?, "o_min"?, "o_max"?}``; the
    bounds apply to the norms of the TCP's linear and angular velocity in the world frame.
    """

    pose: ToleratedPose | None = None
    velocity_lim: tuple[float, float] = (-np.inf, np.inf)
    rotation_velocity_lim: tuple[float, float] = (-np.inf, np.inf)
    type_name: ClassVar[str] = "endEffector"

    def violation(self, tcp: np.ndarray, twist: np.ndarray) -> str | None:
        """Why a TCP pose (4x4) and twist ([v; ω], world frame) break the constraint, or None if they do not."""
        v, w = float(np.linalg.norm(twist[:3])), float(np.linalg.norm(twist[3:]))
        (v_lo, v_hi), (w_lo, w_hi) = self.velocity_lim, self.rotation_velocity_lim
        if not v_lo <= v <= v_hi:
            return f"TCP speed {v:.4g} m/s outside [{v_lo:.4g}, {v_hi:.4g}]"
        if not w_lo <= w <= w_hi:
            return f"TCP angular speed {w:.4g} rad/s outside [{w_lo:.4g}, {w_hi:.4g}]"
        if self.pose is not None and not self.pose.valid(tcp):
            return "TCP pose outside the constraint's tolerance"
        return None

    def body_json(self) -> dict:
        out: dict[str, Any] = {"pose": self.pose.to_json()} if self.pose is not None else {}
        for key, value in zip(("v_min", "v_max", "o_min", "o_max"), (*self.velocity_lim, *self.rotation_velocity_lim)):
            if np.isfinite(value):
                out[key] = float(value)
        return out


TASK_LEVEL_ONLY = (
    "allGoalsFulfilled",
    "allGoalsFulfilledInOrder",
    "basePlacement",
    "goalsBySameRobot",
    "validAssembly",
)
"""Constraint types that describe the whole task (goal order, base placement, ...), never one goal."""


@dataclass(eq=False)
class GenericConstraint(Constraint):
    """Constraint types timor stores but does not evaluate (``goalsBySameRobot``, ``endEffector``, ...)."""

    type_value: str = ""

    def to_json(self) -> dict:
        return {"type": self.type_value, **self.extra}


_KNOWN_OPAQUE = ("goalsBySameRobot", "alwaysTrue", "validAssembly")
CONSTRAINT_TYPES = (
    "joint",
    "selfCollisionFree",
    "collisionFree",
    "allGoalsFulfilled",
    "allGoalsFulfilledInOrder",
    "basePlacement",
    "validJointAngles",
    "endEffector",
    *_KNOWN_OPAQUE,
)


def constraint_from_json(data: Any, path: str, frames: FrameTree | None = None, owner: str = "") -> Constraint:
    """Parse one constraint; unknown types raise FormatError naming the JSON path and the type."""
    d = jf.obj(data, path)
    ctype = jf.string(jf.req(d, "type", path), f"{path}.type")
    if owner.startswith("goal.") and ctype in TASK_LEVEL_ONLY:
        raise ValidationError(
            "a task-level constraint cannot belong to a goal (put it in the task's constraints)",
            path=f"{path}.type",
            value=ctype,
        )
    if ctype == "joint":
        return _joint_limits(d, path)
    if ctype == "selfCollisionFree":
        return SelfCollisionFree(extra=_rest(d))
    if ctype == "collisionFree":
        margin = jf.number(d["safetyMargin"], f"{path}.safetyMargin", min_value=0.0) if "safetyMargin" in d else None
        return CollisionFree(safety_margin=margin, extra=_rest(d, "safetyMargin"))
    if ctype == "allGoalsFulfilled":
        return AllGoalsFulfilled(extra=_rest(d))
    if ctype == "allGoalsFulfilledInOrder":
        order = [
            jf.string(g, f"{path}.order[{i}]")
            for i, g in enumerate(jf.array(jf.req(d, "order", path), f"{path}.order"))
        ]
        return GoalOrder(order=order, extra=_rest(d, "order"))
    if ctype == "basePlacement":
        name = f"{owner}.constraint.base" if owner else "constraint.base"
        pose = ToleratedPose.from_json(jf.req(d, "pose", path), f"{path}.pose", frames, name)
        return BasePlacement(pose=pose, extra=_rest(d, "pose"))
    if ctype == "validJointAngles":
        return _valid_joint_angles(d, path)
    if ctype == "endEffector":
        return _end_effector(d, path, frames, f"{owner}.constraint.eef" if owner else "constraint.eef")
    if ctype in _KNOWN_OPAQUE:
        return GenericConstraint(type_value=ctype, extra=_rest(d))
    raise FormatError(
        f"unknown constraint type (expected one of {', '.join(CONSTRAINT_TYPES)})", path=f"{path}.type", value=ctype
    )


def _rest(d: dict, *keys: str) -> dict:
    """The fields of a constraint's JSON other than its type and ``keys`` (kept as they are)."""
    return {k: v for k, v in d.items() if k not in ("type", *keys)}


def _joint_limits(d: dict, path: str) -> JointLimits:
    parts = [jf.string(p, f"{path}.parts[{i}]") for i, p in enumerate(jf.array(d.get("parts", []), f"{path}.parts"))]
    for i, p in enumerate(parts):
        if p not in JOINT_PARTS:
            raise FormatError(
                f"unknown joint limit part (expected {', '.join(JOINT_PARTS)})", path=f"{path}.parts[{i}]", value=p
            )
    return JointLimits(parts_json=parts, extra=_rest(d, "parts"))


def _valid_joint_angles(d: dict, path: str) -> ValidJointAngles:
    limits = np.asarray(jf.array(jf.req(d, "limits", path), f"{path}.limits"), dtype=object)
    if limits.ndim != 2 or limits.shape[0] != 2:
        raise FormatError("limits must be [[lower...], [upper...]]", path=f"{path}.limits", value=d["limits"])
    lim = np.vstack([jf.vector(list(row), f"{path}.limits[{i}]") for i, row in enumerate(d["limits"])])
    if np.any(lim[0] > lim[1]):
        raise ValidationError("inverted joint angle limits", path=f"{path}.limits", value=d["limits"])
    coterminal = jf.boolean(d.get("coterminal", False), f"{path}.coterminal")
    return ValidJointAngles(limits=lim, coterminal=coterminal, extra=_rest(d, "limits", "coterminal"))


def _end_effector(d: dict, path: str, frames: FrameTree | None, name: str) -> EndEffector:
    eef_pose = ToleratedPose.from_json(d["pose"], f"{path}.pose", frames, name) if "pose" in d else None
    bounds = []
    for low, high in (("v_min", "v_max"), ("o_min", "o_max")):
        lo = jf.number(d[low], f"{path}.{low}", allow_inf=True) if low in d else -np.inf
        hi = jf.number(d[high], f"{path}.{high}", allow_inf=True) if high in d else np.inf
        if lo > hi:
            raise ValidationError(f"{low} > {high}: the constraint could never hold", path=f"{path}.{low}", value=lo)
        bounds.append((lo, hi))
    return EndEffector(
        pose=eef_pose,
        velocity_lim=bounds[0],
        rotation_velocity_lim=bounds[1],
        extra=_rest(d, "pose", "v_min", "v_max", "o_min", "o_max"),
    )
