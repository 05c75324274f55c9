"""Parameterizable modules: links and joints defined by a few numbers (lengths, radius, DH parameters).

A :class:`ParametricModule` is a small immutable description (kind, parameters, limits, density, joint
settings); :meth:`ParametricModule.freeze` turns it into an ordinary CoBRA :class:`~timor_core.model.module.Module`
(solid cylinders and spheres of uniform density, inertia about the centre of mass by the parallel axis
theorem) that every part of timor uses like any other module. :meth:`ParametricModule.resize` gives the
same module with other parameters, checked against its limits, as a search over module dimensions needs.

Kinds (parameters in order):

- ``cylinder_link`` (radius, length): an I-shaped link; body frame at the centre.
- ``orthogonal_link`` (radius, l1, l2): an L-shaped link, the second cylinder turned by ``x_rotation`` about x.
- ``straight_joint`` (radius, length): two cylinders of length/2 with the joint between them, axis along the link.
- ``orthogonal_joint`` (radius, l1, l2): two cylinders with the joint at the elbow; ``DH`` (default): the axis
  runs along the first cylinder and the second is turned by ``x_rotation`` about x after the joint; ``MDH``: the
  axis itself is turned (perpendicular to the first cylinder).
- ``dh_joint`` (radius, d, a, alpha): one revolute joint and link of the Denavit–Hartenberg (``DH``, joint
  first) or modified (``MDH``, link first) convention: chained, the modules give the DH/MDH product.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from timor_core.common.transforms import rot_x, rot_y, rot_z, translation
from timor_core.errors import InputError
from timor_core.limits import check_number, limit_hint, limits
from timor_core.model.module import Module

__all__ = ["KINDS", "ParametricModule", "solid_inertia"]

KINDS: dict[str, tuple[str, ...]] = {
    "cylinder_link": ("radius", "length"),
    "orthogonal_link": ("radius", "l1", "l2"),
    "straight_joint": ("radius", "length"),
    "orthogonal_joint": ("radius", "l1", "l2"),
    "dh_joint": ("radius", "d", "a", "alpha"),
}
"""Every kind of parametric module and the names of its parameters, in order."""

_FLIP = rot_x(math.pi)  # a proximal connector points out of the module


def solid_inertia(shape: str, dims: Sequence[float], density: float) -> tuple[float, np.ndarray]:
    """Mass and inertia tensor (about the centre, in the shape's frame) of a solid ``cylinder`` (r, length along
    z), ``sphere`` (r) or ``box`` (x, y, z) of uniform density."""
    if shape == "cylinder":
        r, h = dims
        m = density * math.pi * r * r * h
        side = m * (3 * r * r + h * h) / 12
        return m, np.diag([side, side, m * r * r / 2])
    if shape == "sphere":
        (r,) = dims
        m = density * 4 / 3 * math.pi * r**3
        return m, np.eye(3) * (2 / 5 * m * r * r)
    if shape == "box":
        x, y, z = dims
        m = density * x * y * z
        return m, np.diag([y * y + z * z, x * x + z * z, x * x + y * y]) * (m / 12)
    raise InputError("shape must be cylinder, sphere or box", value=shape)


Part = tuple[str, tuple[float, ...], np.ndarray]
"""A solid piece of a body: shape, dimensions, pose in the body frame."""


def _body(body_id: str, parts: Sequence[Part], density: float) -> dict[str, Any]:
    """A CoBRA body of solid parts (shape, dims, pose in the body frame): collision geometry and composite inertia."""
    parts = [p for p in parts if all(d > 0 for d in p[1])]  # a zero-length piece has no geometry and no mass
    masses, coms, tensors = [], [], []
    geometry = []
    for shape, dims, pose in parts:
        m, inertia = solid_inertia(shape, dims, density)
        R = pose[:3, :3]
        masses.append(m)
        coms.append(pose[:3, 3])
        tensors.append(R @ inertia @ R.T)
        keys = {"cylinder": ("r", "z"), "sphere": ("r",), "box": ("x", "y", "z")}[shape]
        geometry.append({"type": shape, "parameters": dict(zip(keys, map(float, dims))), "pose": pose.tolist()})
    mass = float(sum(masses))
    com = sum(m * c for m, c in zip(masses, coms)) / mass if mass > 0 else np.zeros(3)
    total = np.zeros((3, 3))
    for m, c, inertia in zip(masses, coms, tensors):
        d = c - com
        total += inertia + m * (float(d @ d) * np.eye(3) - np.outer(d, d))
    return {
        "ID": body_id,
        "mass": mass,
        "inertia": ((total + total.T) / 2).tolist(),
        "r_com": np.asarray(com, dtype=float).tolist(),
        "connectors": [],
        "collision": geometry,
    }


def _check_sizes(
    names: tuple[str, ...], params: tuple[float, ...], limits_: tuple[tuple[float, float], ...], where: str
) -> None:
    """Each parameter within its limits; lengths and radii within the module size limits (the body's mass and
    inertia must stay finite: the parameter is blamed, not them)."""
    biggest = limits().max_module_size_m
    for n, p, (lo, hi) in zip(names, params, limits_):
        if not lo <= p <= hi:
            raise InputError(f"{where}: parameter {n} = {p:g} outside its limits [{lo:g}, {hi:g}]", path=n, value=p)
        if n != "alpha" and (p < 0 or p > biggest):
            raise InputError(
                f"{where}: parameter {n} must be 0..{biggest:g} m ({limit_hint('max_module_size_m')})", path=n, value=p
            )
    smallest = limits().min_module_size_m
    if params[0] < smallest:
        raise InputError(
            f"{where}: radius must be positive, at least {smallest:g} m ({limit_hint('min_module_size_m')})",
            path="radius",
            value=params[0],
        )


@dataclass(frozen=True)
class ParametricModule:
    """A module of one of the ``KINDS``, defined by its parameters (see the module doc).

    ``limits``: (low, high) per parameter (default: lengths and radius in [0, inf), alpha in [-2π, 2π]).
    ``density`` in kg/m³ (uniform solids). ``joint``: CoBRA joint fields added to the joint (``limits``,
    ``gearRatio``, ``motorInertia``, ...). Connectors: ``connector_type``, ``connector_size``, and the genders of
    the proximal and distal connector.
    """

    kind: str
    module_id: str
    parameters: tuple[float, ...]
    limits: tuple[tuple[float, float], ...] | None = None
    density: float = 1.0
    joint_type: str = "revolute"
    joint: Mapping[str, Any] = field(default_factory=dict)
    convention: str = "DH"
    x_rotation: float = math.pi / 2
    connector_type: str = "default"
    connector_size: tuple[float, ...] = ()
    genders: tuple[str, str] = ("f", "m")
    name: str | None = None

    def __post_init__(self) -> None:
        where = f"parametric module {self.module_id!r}"
        if not isinstance(self.kind, str) or self.kind not in KINDS:
            raise InputError(f"{where}: kind must be one of {', '.join(KINDS)}", path="kind", value=self.kind)
        names = KINDS[self.kind]
        params = _numbers(self.parameters, f"{where}: parameters", "parameters")
        if len(params) != len(names):
            raise InputError(
                f"{where}: {self.kind} takes {len(names)} parameters ({', '.join(names)})",
                path="parameters",
                value=params,
            )
        object.__setattr__(self, "parameters", params)
        limits_ = self._checked_limits(names, where)
        object.__setattr__(self, "limits", limits_)
        _check_sizes(names, params, limits_, where)
        self._check_the_rest(where)

    def _checked_limits(self, names: tuple[str, ...], where: str) -> tuple[tuple[float, float], ...]:
        """The (low, high) of every parameter: the defaults, or the given ones checked (numbers, low <= high)."""
        if self.limits is None:
            limits_ = tuple(_default_limit(n) for n in names)
        else:
            try:
                pairs = [tuple(pair) for pair in self.limits]
            except TypeError:
                pairs = []
            if len(pairs) != len(names) or any(len(pair) != 2 for pair in pairs):
                raise InputError(f"{where}: limits must give (low, high) for every parameter", path="limits",
                                 value=self.limits)  # fmt: skip
            limits_ = tuple((lo, hi) for lo, hi in (_numbers(p, f"{where}: limits", "limits", True) for p in pairs))
        if any(lo > hi for lo, hi in limits_):
            raise InputError(f"{where}: limits must give low <= high for every parameter", path="limits", value=limits_)
        return limits_

    def _check_the_rest(self, where: str) -> None:
        """Density, x rotation, joint type, convention, joint fields, connector size and genders."""
        for name, low, high in (("density", 0.0, "max_density"), ("x_rotation", -2 * math.pi, 2 * math.pi)):
            value = check_number(getattr(self, name), f"{where}: {name}", low, high, low_open=name == "density",
                                 path=name)  # fmt: skip
            object.__setattr__(self, name, value)
        if self.joint_type not in ("revolute", "prismatic") or (
            self.kind == "dh_joint" and self.joint_type != "revolute"
        ):
            raise InputError(f"{where}: joint_type must be revolute or prismatic (dh_joint: revolute)",
                             path="joint_type", value=self.joint_type)  # fmt: skip
        if self.convention not in ("DH", "MDH"):
            raise InputError(f"{where}: convention must be DH or MDH", path="convention", value=self.convention)
        if not isinstance(self.joint, Mapping):
            raise InputError(f"{where}: joint must be a mapping of CoBRA joint fields", path="joint", value=self.joint)
        object.__setattr__(self, "connector_size", _numbers(self.connector_size, f"{where}: connector_size",
                                                            "connector_size"))  # fmt: skip
        if not (isinstance(self.genders, (tuple, list)) and len(self.genders) == 2):
            raise InputError(f"{where}: genders must be two genders (proximal, distal)", path="genders",
                             value=self.genders)  # fmt: skip

    @property
    def named_parameters(self) -> dict[str, float]:
        """The parameters by name."""
        return dict(zip(KINDS[self.kind], self.parameters))

    def resize(self, parameters: Sequence[float]) -> ParametricModule:
        """The same module with other parameters (InputError outside the limits)."""
        return replace(self, parameters=tuple(parameters))

    def dh_transform(self, theta: float = 0.0) -> np.ndarray:
        """The DH (or MDH) transform of a ``dh_joint`` at joint angle ``theta``."""
        if self.kind != "dh_joint":
            raise InputError("only a dh_joint has a DH transform", value=self.kind)
        _, d, a, alpha = self.parameters
        if self.convention == "DH":
            return rot_z(theta) @ translation((0, 0, d)) @ translation((a, 0, 0)) @ rot_x(alpha)
        return rot_x(alpha) @ translation((a, 0, 0)) @ translation((0, 0, d)) @ rot_z(theta)

    def freeze(self) -> Module:
        """The ordinary module of these parameters (an InputError names the module and its parameters)."""
        try:
            return Module.from_json(self.to_json(), f"parametric module {self.module_id!r}")
        except InputError as exc:
            raise InputError(
                f"parametric module {self.module_id!r} with {self.named_parameters}: {exc.message}",
                path=exc.path,
                value=exc.value,
            ) from None

    def to_json(self) -> dict[str, Any]:
        """The CoBRA JSON of the frozen module."""
        bodies, joints, proximal, distal = _build(self)
        size = [float(s) for s in self.connector_size]
        for (body, pose), cid, gender in ((proximal, "proximal", self.genders[0]), (distal, "distal", self.genders[1])):
            con = {"ID": f"{self.module_id}_{cid}", "pose": pose.tolist(), "gender": gender}
            body["connectors"].append({**con, "type": self.connector_type, "size": size})
        for j in joints:
            j.update(dict(self.joint))
        header = {"ID": self.module_id, "name": self.name or self.module_id}
        return {"header": header, "bodies": [b for b in bodies], "joints": joints}


def _numbers(values: Any, what: str, path: str, infinite: bool = False) -> tuple[float, ...]:
    """``values`` as a tuple of floats (finite unless ``infinite``), else an InputError naming ``what``."""
    if isinstance(values, (str, bytes)):
        raise InputError(f"{what} must be numbers", path=path, value=values)
    try:
        items = tuple(values)
    except TypeError:
        raise InputError(f"{what} must be numbers", path=path, value=values) from None
    if len(items) > 16:
        raise InputError(f"{what}: at most 16 numbers", path=path, value=values)
    out = []
    for v in items:
        if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
            raise InputError(f"{what} must be numbers", path=path, value=values)
        try:
            x = float(v)
        except OverflowError:  # an int beyond a double
            raise InputError(f"{what} must be finite numbers", path=path, value=values) from None
        if x != x or (not infinite and math.isinf(x)):
            raise InputError(f"{what} must be finite numbers", path=path, value=values)
        out.append(x)
    return tuple(out)


def _default_limit(name: str) -> tuple[float, float]:
    return (-2 * math.pi, 2 * math.pi) if name == "alpha" else (0.0, math.inf)


def _joint(m: ParametricModule, parent: str, child: str, pose_parent: np.ndarray, pose_child: np.ndarray) -> dict:
    return {
        "ID": f"{m.module_id}_joint",
        "parent": parent,
        "child": child,
        "type": m.joint_type,
        "poseParent": pose_parent.tolist(),
        "poseChild": pose_child.tolist(),
    }


def _build(m: ParametricModule) -> tuple[list[dict], list[dict], tuple[dict, np.ndarray], tuple[dict, np.ndarray]]:
    """Bodies, joints, and (body, pose) of the proximal and distal connector of a parametric module."""
    p, rho, mid = m.named_parameters, m.density, m.module_id
    r = p["radius"]
    T = translation
    if m.kind == "cylinder_link":
        h = p["length"]
        link = _body(f"{mid}_link", [("cylinder", (r, h), np.eye(4))], rho)
        return [link], [], (link, T((0, 0, -h / 2)) @ _FLIP), (link, T((0, 0, h / 2)))
    if m.kind == "orthogonal_link":
        l1, l2 = p["l1"], p["l2"]
        elbow = T((0, 0, l1)) @ rot_x(m.x_rotation)
        parts: list[Part] = [("cylinder", (r, l1), T((0, 0, l1 / 2))), ("cylinder", (r, l2), elbow @ T((0, 0, l2 / 2)))]
        link = _body(f"{mid}_link", parts, rho)
        return [link], [], (link, _FLIP), (link, elbow @ T((0, 0, l2)))
    if m.kind == "straight_joint":
        h = p["length"] / 2
        prox = _body(f"{mid}_proximal", [("cylinder", (r, h), np.eye(4))], rho)
        dist = _body(f"{mid}_distal", [("cylinder", (r, h), np.eye(4))], rho)
        joint = _joint(m, prox["ID"], dist["ID"], T((0, 0, h / 2)), T((0, 0, h / 2)))
        return [prox, dist], [joint], (prox, T((0, 0, -h / 2)) @ _FLIP), (dist, T((0, 0, h / 2)))
    if m.kind == "orthogonal_joint":
        l1, l2 = p["l1"], p["l2"]
        prox = _body(f"{mid}_proximal", [("cylinder", (r, l1), np.eye(4))], rho)
        dist = _body(f"{mid}_distal", [("cylinder", (r, l2), np.eye(4))], rho)
        turn = rot_x(m.x_rotation)  # DH: the distal cylinder turns after the joint; MDH: the joint axis turns
        before, after = (turn, np.eye(4)) if m.convention == "MDH" else (np.eye(4), turn)
        joint = _joint(m, prox["ID"], dist["ID"], T((0, 0, l1 / 2)) @ before, after @ T((0, 0, l2 / 2)))
        return [prox, dist], [joint], (prox, T((0, 0, -l1 / 2)) @ _FLIP), (dist, T((0, 0, l2 / 2)))
    # dh_joint: a massless proxy body and the real link (a cylinder along z over d, one along x over a)
    d, a = p["d"], p["a"]
    proxy: dict[str, Any] = {"ID": f"{mid}_proxy", "mass": 0.0, "inertia": np.zeros((3, 3)).tolist(),
                             "r_com": [0.0, 0.0, 0.0], "connectors": []}  # fmt: skip
    along_x = rot_y(math.pi / 2)
    if m.convention == "DH":  # joint at the start, then d along z and a along x
        parts = [
            ("cylinder", (r, d), T((0, 0, d / 2))),
            ("cylinder", (r, a), T((a / 2, 0, d)) @ along_x),
            ("sphere", (r,), T((0, 0, d))),
        ]
        link = _body(f"{mid}_link", parts, rho)
        joint = _joint(m, proxy["ID"], link["ID"], np.eye(4), np.eye(4))
        return [proxy, link], [joint], (proxy, _FLIP), (link, m.dh_transform(0.0))
    parts = [  # MDH: a along x, then (after alpha) d along the next joint's axis; the joint at the end
        ("cylinder", (r, a), T((a / 2, 0, 0)) @ along_x),
        ("cylinder", (r, d), rot_x(p["alpha"]) @ T((a, 0, d / 2))),
        ("sphere", (r,), rot_x(p["alpha"]) @ T((a, 0, 0))),
    ]
    link = _body(f"{mid}_link", parts, rho)
    joint = _joint(m, link["ID"], proxy["ID"], m.dh_transform(0.0), np.eye(4))
    return [link, proxy], [joint], (link, _FLIP), (proxy, np.eye(4))
