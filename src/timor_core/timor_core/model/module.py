"""Modules in the CoBRA format: header, bodies (with connectors and geometry) and joints.

Modules are immutable once parsed, so everything derived from them (transforms, URDF fragments,
collision shapes) can be computed once per module database and shared by every assembly.
"""

from __future__ import annotations

import logging
import math
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.common.json_text import JsonLines
from timor_core.common.transforms import IDENTITY, inv, readonly
from timor_core.errors import FormatError, ValidationError
from timor_core.model.geometry import geometries_from_json
from timor_core.model.part_text import body_text, joint_text
from timor_core.model.parts import (
    GENDERS,
    JOINT_TYPES,
    LIMIT_KEYS,
    RESERVED_CONNECTOR_TYPES,
    Z_AXIS,
    Body,
    Connector,
    Joint,
    JointLimits,
    ModuleHeader,
    connectors_compatible,
)

if TYPE_CHECKING:
    import networkx as nx

__all__ = [
    "GENDERS",
    "RESERVED_CONNECTOR_TYPES",
    "JOINT_TYPES",
    "LIMIT_KEYS",
    "triangle_inequality_violation",
    "check_tree",
    "parse_body",
    "parse_header",
    "parse_joint",
    "joint_limits_from_json",
    "joint_axis_from_json",
    "Connector",
    "Body",
    "JointLimits",
    "Joint",
    "ModuleHeader",
    "Module",
    "connectors_compatible",
    "modules_compatible",
]


log = logging.getLogger(__name__)
_WARNED: set[tuple[str, str]] = set()  # (file, JSON path) of data warnings already logged


class Module:
    """A module: bodies joined by joints, forming a tree, with connectors on its bodies."""

    def __init__(
        self,
        header: ModuleHeader,
        bodies: tuple[Body, ...],
        joints: tuple[Joint, ...] = (),
        extra: dict | None = None,
    ) -> None:
        self.header = header
        self.extra = dict(extra or {})
        self.bodies = tuple(bodies)
        self.joints = tuple(joints)
        self.body: dict[str, Body] = {b.id: b for b in self.bodies}
        self.joint: dict[str, Joint] = {j.id: j for j in self.joints}
        self.connectors: dict[str, Connector] = {c.id: c for b in self.bodies for c in b.connectors}
        self._cache: dict[Any, Any] = {}  # per-module derived data (oriented trees, URDF fragments, ...)

    # -- identity -----------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """The module's ID (``header.ID``)."""
        return self.header.id

    @property
    def name(self) -> str:
        """The module's readable name."""
        return self.header.name

    @property
    def cost(self) -> float:
        """The module's cost (``header.cost``)."""
        return self.header.cost

    def __repr__(self) -> str:
        return f"Module(id={self.id!r}, name={self.name!r}, dof={self.dof})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Module) and self.to_json() == other.to_json()

    def __hash__(self) -> int:
        return hash(self.id)

    # -- derived properties -------------------------------------------------------------------------
    @cached_property
    def dof(self) -> int:
        """Number of actuated joints."""
        return sum(1 for j in self.joints if j.actuated)

    @cached_property
    def mass(self) -> float:
        """Total mass of the module's bodies."""
        return float(sum(b.mass for b in self.bodies))

    @cached_property
    def base_connectors(self) -> tuple[Connector, ...]:
        """Connectors of type ``base``."""
        return tuple(c for c in self.connectors.values() if c.is_base)

    @cached_property
    def eef_connectors(self) -> tuple[Connector, ...]:
        """Connectors of type ``eef``."""
        return tuple(c for c in self.connectors.values() if c.is_eef)

    @property
    def is_base(self) -> bool:
        """True if the module can be mounted to the world."""
        return bool(self.base_connectors)

    @property
    def is_end_effector(self) -> bool:
        """True if the module carries a tool flange."""
        return bool(self.eef_connectors)

    @property
    def graph(self) -> nx.DiGraph:
        """G_m: bodies, connectors and joints as nodes, transforms (at q = 0) on edges, both directions.

        Nodes are ``('body', id)``, ``('connector', id)`` and ``('joint', id)``; each edge carries
        ``transform``, the pose of the target node's frame in the source node's frame.
        """
        if "graph" not in self._cache:
            import networkx as nx  # imported on first use: 150+ ms of every cold start otherwise

            G = nx.DiGraph()
            for b in self.bodies:
                G.add_node(("body", b.id), obj=b)
                for c in b.connectors:
                    G.add_node(("connector", c.id), obj=c)
                    G.add_edge(("body", b.id), ("connector", c.id), transform=c.pose)
                    G.add_edge(("connector", c.id), ("body", b.id), transform=readonly(inv(c.pose)))
            for j in self.joints:
                G.add_node(("joint", j.id), obj=j)
                G.add_edge(("body", j.parent), ("joint", j.id), transform=j.pose_parent)
                G.add_edge(("joint", j.id), ("body", j.parent), transform=readonly(inv(j.pose_parent)))
                G.add_edge(("joint", j.id), ("body", j.child), transform=j.pose_child)
                G.add_edge(("body", j.child), ("joint", j.id), transform=readonly(inv(j.pose_child)))
            self._cache["graph"] = G
        return self._cache["graph"]

    # -- JSON ---------------------------------------------------------------------------------------
    def to_json(self, lazy: bool = False) -> dict:
        """The CoBRA JSON of this module; ``lazy``: its bodies and joints as :class:`JsonLines`, each record's text
        made as it is written (:func:`~timor_core.common.json_text.json_chunks` writes them; ``model.part_text``),
        so a 100,000-link module's records never all exist at once."""
        bodies: Any
        joints: Any
        if lazy:
            bodies = JsonLines(body_text(b) for b in self.bodies)
            joints = JsonLines(joint_text(j) for j in self.joints)
        else:
            bodies, joints = [b.to_json() for b in self.bodies], [j.to_json() for j in self.joints]
        return {"header": self.header.to_json(), "bodies": bodies, "joints": joints, **self.extra}

    @classmethod
    def from_json(
        cls, data: Any, path: str = "$", base_dir: Path | None = None, json_file: Path | None = None
    ) -> Module:
        """Parse and validate one module; errors name the JSON path (and the file, if given)."""
        try:
            return _parse_module(data, path, base_dir, json_file)
        except (FormatError, ValidationError) as exc:
            raise exc.located(file=json_file) from None


# ---------------------------------------------------------------------------------------------------
# parsing
# ---------------------------------------------------------------------------------------------------
def _parse_module(data: Any, path: str, base_dir: Path | None, json_file: Path | None) -> Module:
    d = jf.obj(data, path)
    header = parse_header(jf.req(d, "header", path), f"{path}.header")
    bodies_json = jf.array(jf.req(d, "bodies", path), f"{path}.bodies")
    if not bodies_json:
        raise ValidationError("a module needs at least one body", path=f"{path}.bodies", value=bodies_json)
    bodies = tuple(parse_body(b, f"{path}.bodies[{i}]", base_dir, json_file) for i, b in enumerate(bodies_json))
    if math.isinf(sum(b.mass for b in bodies)):  # each is finite: the module's mass must be too
        raise ValidationError("the bodies' masses add up to more than a float holds", path=f"{path}.bodies")
    _unique(((b.id, f"{path}.bodies[{i}].ID") for i, b in enumerate(bodies)), "body")
    _unique(
        (
            (c.id, f"{path}.bodies[{i}].connectors[{k}].ID")
            for i, b in enumerate(bodies)
            for k, c in enumerate(b.connectors)
        ),
        "connector",
    )
    joints_json = jf.array(d.get("joints", []), f"{path}.joints")
    body_ids = {b.id for b in bodies}
    joints = tuple(parse_joint(j, f"{path}.joints[{i}]", body_ids) for i, j in enumerate(joints_json))
    _unique(((j.id, f"{path}.joints[{i}].ID") for i, j in enumerate(joints)), "joint")
    check_tree(bodies, joints, path)
    extra = {k: v for k, v in d.items() if k not in ("header", "bodies", "joints")}
    return Module(header, bodies, joints, extra)


def _unique(ids_and_paths, what: str) -> None:
    """Raise on the second occurrence of an ID, naming both places."""
    seen: dict[str, str] = {}
    for i, path in ids_and_paths:
        if i in seen:
            raise ValidationError(f"duplicate {what} ID (first at {seen[i]})", path=path, value=i)
        seen[i] = path


def parse_header(data: Any, path: str) -> ModuleHeader:
    d = jf.obj(data, path)
    mid = jf.string(jf.req(d, "ID", path), f"{path}.ID")
    name = jf.string(d.get("name", mid), f"{path}.name")
    has_cost = "cost" in d
    cost = jf.number(d["cost"], f"{path}.cost", min_value=0.0) if has_cost else 0.0
    extra = {k: v for k, v in d.items() if k not in ("ID", "name", "cost")}
    if not has_cost:
        extra["_has_cost"] = False
    return ModuleHeader(mid, name, cost, extra)


def _parse_connector(data: Any, path: str, body_id: str) -> Connector:
    d = jf.obj(data, path)
    cid = jf.string(jf.req(d, "ID", path), f"{path}.ID")
    gender = jf.string(jf.req(d, "gender", path), f"{path}.gender")
    if gender not in GENDERS:
        raise ValidationError("unknown connector gender (expected m, f or h)", path=f"{path}.gender", value=gender)
    ctype = jf.string(jf.req(d, "type", path), f"{path}.type", nonempty=False)
    size_raw = d.get("size", [])
    if isinstance(size_raw, list):
        size = tuple(float(v) for v in jf.vector(size_raw, f"{path}.size"))
    else:
        size = (jf.number(size_raw, f"{path}.size"),)
    T = jf.pose(jf.req(d, "pose", path), f"{path}.pose")
    extra = {k: v for k, v in d.items() if k not in ("ID", "gender", "type", "size", "pose")}
    return Connector(cid, body_id, T, gender, ctype, size, extra)


def parse_body(data: Any, path: str, base_dir: Path | None, json_file: Path | None) -> Body:
    d = jf.obj(data, path)
    bid = jf.string(jf.req(d, "ID", path), f"{path}.ID")
    mass = jf.number(jf.req(d, "mass", path), f"{path}.mass")
    if mass < 0:
        raise ValidationError("mass must not be negative", path=f"{path}.mass", value=mass)
    inertia = jf.matrix(jf.req(d, "inertia", path), f"{path}.inertia", (3, 3))
    _check_inertia(inertia, mass, f"{path}.inertia", json_file)
    r_com = jf.vector(d.get("r_com", [0.0, 0.0, 0.0]), f"{path}.r_com", 3)
    conns = jf.array(d.get("connectors", []), f"{path}.connectors")
    connectors = tuple(_parse_connector(c, f"{path}.connectors[{i}]", bid) for i, c in enumerate(conns))
    visual = geometries_from_json(d.get("visual"), f"{path}.visual", base_dir, json_file)
    collision = geometries_from_json(d.get("collision"), f"{path}.collision", base_dir, json_file)
    extra: dict[str, Any] = {
        k: v for k, v in d.items() if k not in ("ID", "mass", "inertia", "r_com", "connectors", "visual", "collision")
    }
    present = tuple(k for k in ("visual", "collision") if k in d)
    if present:
        extra["_present"] = present
    inertia.flags.writeable = False
    r_com.flags.writeable = False
    return Body(bid, mass, inertia, r_com, connectors, visual, collision, extra)


def triangle_inequality_violation(inertia: np.ndarray) -> list[float] | None:
    """The principal moments if they violate A + B >= C (no rigid body has them), else None.

    Such a tensor is positive definite but physically impossible: MuJoCo refuses it, PyBullet zeroes it.
    """
    inertia = np.asarray(inertia, dtype=float)
    eig = np.linalg.eigvalsh(inertia)
    tol = 1e-9 * max(float(np.abs(inertia).max()), 1e-12)
    return [float(e) for e in eig] if eig[0] + eig[1] < eig[2] - tol else None


def _check_inertia(inertia: np.ndarray, mass: float, path: str, json_file: Path | None = None) -> None:
    scale = max(float(np.abs(inertia).max()), 1e-12)
    if not np.allclose(inertia, inertia.T, atol=1e-9 * scale + 1e-15):
        raise ValidationError("inertia tensor must be symmetric", path=path, value=inertia.tolist())
    eig = np.linalg.eigvalsh(inertia)
    if mass > 0:  # a point mass (zero tensor) or a thin rod (one zero moment) is an idealisation URDF allows
        if eig.min() < -1e-9 * scale - 1e-12:
            raise ValidationError(
                "inertia tensor of a body with mass must be positive semi-definite", path=path, value=inertia.tolist()
            )
        key = (str(json_file), path)
        moments = triangle_inequality_violation(inertia)
        if moments is not None and key not in _WARNED:  # IMPROV's L6 does this: warn once, accept (timor db
            _WARNED.add(key)  # validate reports it, as an error with --strict)
            log.warning(
                "%s: %s: principal moments of inertia violate the triangle inequality (A + B >= C): %s",
                json_file or "<module>",
                path,
                moments,
            )
    elif eig.min() < -1e-12:
        raise ValidationError("inertia tensor must be positive semi-definite", path=path, value=inertia.tolist())


def parse_joint(data: Any, path: str, body_ids: set[str]) -> Joint:
    """One CoBRA joint object at JSON path ``path``, joining two of the module's bodies ``body_ids``."""
    d = jf.obj(data, path)
    jid = jf.string(jf.req(d, "ID", path), f"{path}.ID")
    jtype = jf.string(jf.req(d, "type", path), f"{path}.type")
    if jtype not in JOINT_TYPES:
        raise ValidationError(
            f"unknown joint type (expected one of {', '.join(JOINT_TYPES)})", path=f"{path}.type", value=jtype
        )
    parent = jf.string(jf.req(d, "parent", path), f"{path}.parent")
    child = jf.string(jf.req(d, "child", path), f"{path}.child")
    for key, value in (("parent", parent), ("child", child)):
        if value not in body_ids:
            raise ValidationError("joint names a body the module does not have", path=f"{path}.{key}", value=value)
    if parent == child:
        raise ValidationError("a joint cannot join a body to itself", path=f"{path}.child", value=child)
    pose_parent = jf.pose(d["poseParent"], f"{path}.poseParent") if "poseParent" in d else IDENTITY
    pose_child = jf.pose(d["poseChild"], f"{path}.poseChild") if "poseChild" in d else IDENTITY
    limits = joint_limits_from_json(d["limits"], f"{path}.limits") if "limits" in d else {}

    def optional_number(key: str, minimum: float | None = 0.0) -> float | None:
        return jf.number(d[key], f"{path}.{key}", min_value=minimum) if key in d else None

    passive = jf.boolean(d["passive"], f"{path}.passive") if "passive" in d else None
    axis = joint_axis_from_json(d["axis"], f"{path}.axis") if "axis" in d else Z_AXIS
    known: tuple[str, ...] = ("ID", "type", "parent", "child", "poseParent", "poseChild", "limits", "passive", "axis")
    known += ("gearRatio", "motorInertia", "frictionCoulomb", "frictionViscous")
    return Joint(
        id=jid,
        type=jtype,
        parent=parent,
        child=child,
        pose_parent=pose_parent,
        pose_child=pose_child,
        limits_json=limits,
        gear_ratio=optional_number("gearRatio", None),
        motor_inertia=optional_number("motorInertia"),
        friction_coulomb=optional_number("frictionCoulomb"),
        friction_viscous=optional_number("frictionViscous"),
        passive=passive,
        extra={k: v for k, v in d.items() if k not in known},
        axis=axis,
    )


def joint_limits_from_json(data: Any, path: str) -> dict[str, float]:
    """A joint's ``limits`` object: the known limits as numbers (infinity allowed), others kept as they are;
    speeds and torques not negative, position limits not inverted and not infinite on their own side."""
    lim = jf.obj(data, path)
    limits: dict[str, Any] = {}
    for key, value in lim.items():
        limits[key] = jf.number(value, f"{path}.{key}", allow_inf=True) if key in LIMIT_KEYS else value
    for key in ("velocity", "acceleration", "peakTorque"):
        if limits.get(key, 0.0) < 0:
            raise ValidationError("limit must not be negative", path=f"{path}.{key}", value=limits[key])
    lo, hi = limits.get("positionLower", -math.inf), limits.get("positionUpper", math.inf)
    if lo == math.inf or hi == -math.inf:
        key = "positionLower" if lo == math.inf else "positionUpper"
        raise ValidationError(
            "a position limit cannot be infinite on that side", path=f"{path}.{key}", value=limits[key]
        )
    if lo > hi:
        raise ValidationError(
            "inverted position limits (positionLower > positionUpper)",
            path=path,
            value={"positionLower": lo, "positionUpper": hi},
        )
    return limits


def joint_axis_from_json(data: Any, path: str) -> tuple[float, float, float]:
    """A joint's axis as a unit vector (a zero axis is refused)."""
    a = jf.vector(data, path, 3)
    norm = float(np.linalg.norm(a))
    if not norm > 1e-9:
        raise ValidationError("a joint axis must not be zero", path=path, value=data)
    return (float(a[0] / norm), float(a[1] / norm), float(a[2] / norm))


def check_tree(bodies: tuple[Body, ...], joints: tuple[Joint, ...], path: str) -> None:
    """Bodies and joints of a module must form one tree (connected, no closed loop)."""
    parent_of: dict[str, str] = {b.id: b.id for b in bodies}

    def root(x: str) -> str:
        while parent_of[x] != x:
            parent_of[x] = parent_of[parent_of[x]]
            x = parent_of[x]
        return x

    for i, j in enumerate(joints):
        a, b = root(j.parent), root(j.child)
        if a == b:
            raise ValidationError("joints of a module form a closed loop", path=f"{path}.joints[{i}]", value=j.id)
        parent_of[a] = b
    roots = {root(b.id) for b in bodies}
    if len(roots) > 1:
        raise ValidationError(
            "bodies of a module are not all connected by joints",
            path=f"{path}.bodies",
            value=sorted(b.id for b in bodies),
        )


def modules_compatible(a: Module, b: Module) -> bool:
    """σ_m: two modules can be joined if any connector of one fits any connector of the other."""
    return any(connectors_compatible(ca, cb) for ca in a.connectors.values() for cb in b.connectors.values())
