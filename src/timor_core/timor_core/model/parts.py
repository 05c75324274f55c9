"""The parts of a CoBRA module: connectors (and when two fit), bodies, joints and their limits, the header.

Immutable dataclasses; :mod:`timor_core.model.module` assembles them into modules and parses them from JSON.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np

from timor_core.common.transforms import IDENTITY
from timor_core.model.geometry import Geometry, pose_json

if TYPE_CHECKING:
    pass

__all__ = [
    "GENDERS",
    "RESERVED_CONNECTOR_TYPES",
    "JOINT_TYPES",
    "Z_AXIS",
    "LIMIT_KEYS",
    "Connector",
    "Body",
    "JointLimits",
    "Joint",
    "ModuleHeader",
    "connectors_compatible",
    "pose_json",
]

GENDERS = ("m", "f", "h")
RESERVED_CONNECTOR_TYPES = ("base", "eef")
JOINT_TYPES = ("revolute", "continuous", "prismatic", "fixed")
_MATING = {("m", "f"), ("f", "m"), ("h", "h")}
#: The CoBRA joint axis (in the joint frame).
Z_AXIS: tuple[float, float, float] = (0.0, 0.0, 1.0)


@dataclass(frozen=True, eq=False)
class Connector:
    """A mechanical interface of a body; its frame's z axis points away from the module."""

    id: str
    body_id: str
    pose: np.ndarray
    gender: str
    type: str
    size: tuple[float, ...] = ()
    extra: dict = field(default_factory=dict)

    @property
    def is_base(self) -> bool:
        """True for the connector that mounts a base module to the world."""
        return self.type == "base"

    @property
    def is_eef(self) -> bool:
        """True for an end-effector (tool) connector."""
        return self.type == "eef"

    def to_json(self) -> dict:
        """The CoBRA JSON of this connector."""
        return {
            "ID": self.id,
            "pose": pose_json(self.pose),
            "gender": self.gender,
            "type": self.type,
            "size": [float(s) for s in self.size],
            **self.extra,
        }


def connectors_compatible(a: Connector, b: Connector) -> bool:
    """σ_c: two connectors fit when type and size agree and the genders mate (m/f or h/h).

    The reserved types ``base`` (to the world) and ``eef`` (the tool flange) never join two modules.
    """
    return (
        a.type == b.type
        and a.type not in RESERVED_CONNECTOR_TYPES
        and a.size == b.size
        and (a.gender, b.gender) in _MATING
    )


@dataclass(frozen=True, eq=False)
class Body:
    """A rigid body: inertial parameters (about the centre of mass), connectors and geometry."""

    id: str
    mass: float
    inertia: np.ndarray
    r_com: np.ndarray
    connectors: tuple[Connector, ...] = ()
    visual: tuple[Geometry, ...] = ()
    collision: tuple[Geometry, ...] = ()
    extra: dict = field(default_factory=dict)

    @property
    def shown(self) -> tuple[Geometry, ...]:
        """The geometry to draw: the visual geometry, or the collision geometry where a body has no visual.

        The reference toolbox draws such bodies with their collision geometry; without the fallback a robot of
        primitive modules had empty URDF visuals and an empty viewer.
        """
        return self.visual if self.visual else self.collision

    def to_json(self) -> dict:
        """The CoBRA JSON of this body."""
        out: dict[str, Any] = {
            "ID": self.id,
            "mass": self.mass,
            "inertia": pose_json(self.inertia),
            "r_com": [float(v) for v in self.r_com],
            "connectors": [c.to_json() for c in self.connectors],
        }
        if self.visual or "visual" in self.extra.get("_present", ()):
            out["visual"] = [g.to_json() for g in self.visual]
        if self.collision or "collision" in self.extra.get("_present", ()):
            out["collision"] = [g.to_json() for g in self.collision]
        out.update({k: v for k, v in self.extra.items() if k != "_present"})
        return out


LIMIT_KEYS = frozenset(("positionLower", "positionUpper", "velocity", "acceleration", "peakTorque"))
"""Joint limit keys; each may be unlimited (left out, or ``Infinity`` as Python's json module writes it)."""


@dataclass(frozen=True)
class JointLimits:
    """Joint limits; absent values are infinite. Units: rad or m, per s, per s², N·m or N."""

    lower: float = -math.inf
    upper: float = math.inf
    velocity: float = math.inf
    acceleration: float = math.inf
    torque: float = math.inf


@dataclass(frozen=True, eq=False)
class Joint:
    """A joint between two bodies of a module: T_child = T_parent · pose_parent · M(q) · pose_child.

    M(q) rotates about (revolute, continuous) or translates along (prismatic) the joint frame's ``axis``: z in
    CoBRA; an imported URDF keeps its own axis (JSON ``axis``, a timor extension), so its link frames stay its own.
    """

    id: str
    type: str
    parent: str
    child: str
    pose_parent: np.ndarray = field(default_factory=lambda: IDENTITY)
    pose_child: np.ndarray = field(default_factory=lambda: IDENTITY)
    limits_json: dict = field(default_factory=dict)
    gear_ratio: float | None = None
    motor_inertia: float | None = None
    friction_coulomb: float | None = None
    friction_viscous: float | None = None
    passive: bool | None = None
    extra: dict = field(default_factory=dict)
    axis: tuple[float, float, float] = Z_AXIS

    @property
    def actuated(self) -> bool:
        """True for joints that add a degree of freedom (everything but fixed)."""
        return self.type != "fixed"

    @cached_property
    def limits(self) -> JointLimits:
        """The limits as numbers (infinite where the JSON gives none; continuous joints have none)."""
        lim = self.limits_json
        lower = lim.get("positionLower", -math.inf)
        upper = lim.get("positionUpper", math.inf)
        if self.type == "continuous":
            lower, upper = -math.inf, math.inf
        return JointLimits(
            lower=lower,
            upper=upper,
            velocity=lim.get("velocity", math.inf),
            acceleration=lim.get("acceleration", math.inf),
            torque=lim.get("peakTorque", math.inf),
        )

    def to_json(self) -> dict:
        """The CoBRA JSON of this joint."""
        out: dict[str, Any] = {"ID": self.id, "parent": self.parent, "child": self.child, "type": self.type}
        if self.passive is not None:
            out["passive"] = self.passive
        out["poseParent"] = pose_json(self.pose_parent)
        out["poseChild"] = pose_json(self.pose_child)
        if self.axis != Z_AXIS:
            out["axis"] = list(self.axis)
        if self.limits_json:
            out["limits"] = dict(self.limits_json)
        for key, value in (
            ("gearRatio", self.gear_ratio),
            ("motorInertia", self.motor_inertia),
            ("frictionCoulomb", self.friction_coulomb),
            ("frictionViscous", self.friction_viscous),
        ):
            if value is not None:
                out[key] = value
        out.update(self.extra)
        return out


@dataclass(frozen=True)
class ModuleHeader:
    """Module metadata: ID (unique in its set), readable name, cost, and whatever else the file holds."""

    id: str
    name: str
    cost: float = 0.0
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        """The CoBRA JSON header."""
        out: dict[str, Any] = {"ID": self.id, "name": self.name}
        out.update({k: v for k, v in self.extra.items() if k != "_has_cost"})
        if self.extra.get("_has_cost", True):
            out["cost"] = self.cost
        return out
