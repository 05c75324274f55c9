"""Reading a URDF's elements for the importer: links (mass, inertia, visual and collision shapes), joints (type,
origin, axis, limits) and the checks that the links form one tree, each error naming the URDF file and the link
or joint (``link[@name='...']``, ``joint[@name='...']``), never the module JSON made from them.
"""

from __future__ import annotations

import logging
import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np

from timor_core.common.transforms import IDENTITY, readonly
from timor_core.errors import FormatError, MeshError, ValidationError
from timor_core.export.urdf import URDF_UNLIMITED
from timor_core.limits import limits

log = logging.getLogger(__name__)

__all__ = ["UrdfJoint", "UrdfReader", "resolve_package_uri", "check_tree", "XACRO_NAMESPACE"]

SUPPORTED_JOINTS = ("revolute", "continuous", "prismatic", "fixed")
XACRO_NAMESPACE = "http://www.ros.org/wiki/xacro"
_INERTIA = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def _floats(text: str | None, n: int, default: Sequence[float], where: str, file: Path | None) -> tuple[float, ...]:
    if text is None:
        return tuple(default)
    try:
        values = tuple(map(float, text.split()))
    except ValueError:
        raise FormatError("expected numbers", file=file, path=where, value=text) from None
    if len(values) != n or not all(map(math.isfinite, values)):
        raise FormatError(f"expected {n} finite numbers", file=file, path=where, value=text)
    return values


def _number(text: str | None, where: str, file: Path | None, default: float = 0.0) -> float:
    return _floats(text, 1, (default,), where, file)[0]


def _rotation(roll: float, pitch: float, yaw: float) -> list[list[float]]:
    """URDF's Rz(yaw) Ry(pitch) Rx(roll), in plain floats (numpy's small products cost more per link)."""
    cr, sr, cp, sp, cy, sy = (
        math.cos(roll),
        math.sin(roll),
        math.cos(pitch),
        math.sin(pitch),
        math.cos(yaw),
        math.sin(yaw),
    )
    return [
        [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
        [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
        [-sp, cp * sr, cp * cr],
    ]


def _origin(element: ET.Element | None, where: str, file: Path | None) -> np.ndarray:
    """The pose of an element's ``<origin>`` (a shared read-only identity without one)."""
    origin = element.find("origin") if element is not None else None
    if origin is None:
        return IDENTITY
    rpy = _floats(origin.get("rpy"), 3, (0, 0, 0), f"{where}/origin@rpy", file)
    x, y, z = _floats(origin.get("xyz"), 3, (0, 0, 0), f"{where}/origin@xyz", file)
    if not any(rpy):
        if not (x or y or z):
            return IDENTITY
        return np.array((1.0, 0.0, 0.0, x, 0.0, 1.0, 0.0, y, 0.0, 0.0, 1.0, z, 0.0, 0.0, 0.0, 1.0)).reshape(4, 4)
    (a, b, c), (d, e, f), (g, h, i) = _rotation(*rpy)
    return np.array((a, b, c, x, d, e, f, y, g, h, i, z, 0.0, 0.0, 0.0, 1.0)).reshape(4, 4)


def _inertia_values(element: ET.Element | None, where: str, file: Path | None) -> list[float]:
    """ixx, ixy, ixz, iyy, iyz, izz of an ``<inertia>`` (0 where missing), read in one pass."""
    if element is None:
        return [0.0] * 6
    try:
        values = [float(element.get(k, 0.0)) for k in _INERTIA]
        if math.isfinite(math.fsum(values)):
            return values
    except ValueError:
        pass
    return [_number(element.get(k), f"{where}/inertial/inertia@{k}", file) for k in _INERTIA]  # names the bad one


_NO_INERTIA = readonly(np.zeros((3, 3)))
_OFF_DIAGONAL = ~np.eye(3, dtype=bool)
_NO_COM = readonly(np.zeros(3))


def resolve_package_uri(uri: str, urdf_dir: Path | None, package_dirs: Sequence[Path] | Mapping[str, Path]) -> Path:
    """The file behind a URDF mesh name (``package://``, ``file://`` or a path relative to the URDF)."""
    parsed = urlparse(uri)
    if parsed.scheme == "package":
        package, rest = parsed.netloc, unquote(parsed.path).lstrip("/")
        if isinstance(package_dirs, Mapping):
            roots = [Path(package_dirs[package])] if package in package_dirs else []
        else:
            roots = [Path(d) / package for d in package_dirs]
        for var, sub in (("ROS_PACKAGE_PATH", ""), ("AMENT_PREFIX_PATH", "share")):
            roots += [Path(p) / sub / package for p in os.environ.get(var, "").split(os.pathsep) if p]
        for root in roots:
            if (root / rest).is_file():
                return (root / rest).resolve()
        raise MeshError(
            f"package {package!r} not found (give its folder in package_dirs, or set ROS_PACKAGE_PATH)", value=uri
        )
    if parsed.scheme == "file":
        return Path(unquote(parsed.path)).resolve()
    if parsed.scheme and len(parsed.scheme) > 1:
        raise MeshError(f"unsupported URI scheme {parsed.scheme!r}", value=uri)
    path = Path(uri)
    if not path.is_absolute():
        if urdf_dir is None:
            raise MeshError("a relative mesh path needs the URDF's folder (load it from a file)", value=uri)
        path = urdf_dir / path
    return path.resolve()


@dataclass
class UrdfJoint:
    """One URDF joint as a CoBRA joint (``data``) and what the tree checks need."""

    name: str
    kind: str
    parent: str
    child: str
    data: dict[str, Any] = field(default_factory=dict)


def physical_inertia(inertia: np.ndarray, where: str, file: Path | None) -> np.ndarray:
    """The inertia tensor, its negative eigenvalues (a tensor no body has) set to zero with a warning naming the
    link; Pinocchio takes such a tensor as it is, so the mass matrix then differs from its model of the file."""
    if not inertia[0, 1] and not inertia[0, 2] and not inertia[1, 2] and min(np.diag(inertia)) >= 0:
        return inertia  # diagonal: no eigenvalues to find (the common case, and fast for 100,000 links)
    eig, vec = np.linalg.eigh(inertia)
    scale = float(np.abs(inertia).max())
    if eig.min() >= -1e-9 * scale - 1e-12:
        return inertia
    log.warning("%s: %s: inertia is not positive semi-definite (eigenvalues %s); negative ones set to 0",
                file or "<URDF>", where, eig.tolist())  # fmt: skip
    return (vec * np.clip(eig, 0.0, None)) @ vec.T


class UrdfReader:
    """Reads one URDF's links and joints into CoBRA body and joint JSON, and collects the meshes they name."""

    def __init__(self, file: Path | None, package_dirs: Sequence[Path] | Mapping[str, Path]) -> None:
        self.file, self.package_dirs = file, package_dirs
        self.meshes: list[tuple[dict, Path]] = []  # (geometry parameters, resolved file)

    def geometry(self, element: ET.Element, where: str) -> dict:
        """A CoBRA geometry from a ``<visual>`` or ``<collision>`` element."""
        geometry = element.find("geometry")
        shape = geometry[0] if geometry is not None and len(geometry) else None
        if shape is None:
            raise FormatError("needs a <geometry> with one shape", file=self.file, path=where)
        pose = _origin(element, where, self.file).tolist()  # geometry goes through the model's own parser
        file = self.file
        if shape.tag == "box":
            x, y, z = _floats(shape.get("size"), 3, (), f"{where}/box@size", file)
            return {"type": "box", "parameters": {"x": x, "y": y, "z": z}, "pose": pose}
        if shape.tag == "cylinder":
            r = _floats(shape.get("radius"), 1, (), f"{where}/cylinder@radius", file)[0]
            z = _floats(shape.get("length"), 1, (), f"{where}/cylinder@length", file)[0]
            return {"type": "cylinder", "parameters": {"r": r, "z": z}, "pose": pose}
        if shape.tag == "sphere":
            r = _floats(shape.get("radius"), 1, (), f"{where}/sphere@radius", file)[0]
            return {"type": "sphere", "parameters": {"r": r}, "pose": pose}
        if shape.tag == "mesh":
            name = shape.get("filename")
            if not name:
                raise FormatError("mesh needs a filename", file=file, path=f"{where}/mesh")
            try:
                path = resolve_package_uri(name, file.parent if file else None, self.package_dirs)
            except MeshError as exc:
                raise MeshError(exc.message, file=file, path=f"{where}/mesh@filename", value=name) from None
            if not path.is_file():
                raise MeshError("mesh file not found", file=file, path=f"{where}/mesh@filename", value=str(path))
            scale = _floats(shape.get("scale"), 3, (1, 1, 1), f"{where}/mesh@scale", file)
            if 0.0 in scale:
                raise ValidationError("mesh scale must not be zero", file=file, path=f"{where}/mesh@scale",
                                      value=shape.get("scale"))  # fmt: skip
            params: dict[str, Any] = {"file": "", "scale": list(scale)}
            self.meshes.append((params, path))
            return {"type": "mesh", "parameters": params, "pose": pose}
        raise FormatError(f"unsupported geometry <{shape.tag}>", file=file, path=where)

    def body(self, link: ET.Element) -> dict:
        """A CoBRA body from a ``<link>``: the body frame is the link frame."""
        name = link.get("name", "")
        where = f"link[@name='{name}']"
        inertial = link.find("inertial")
        mass, inertia, com = 0.0, _NO_INERTIA, _NO_COM
        if inertial is not None:
            T = _origin(inertial, f"{where}/inertial", self.file)
            m = inertial.find("mass")
            mass = _number(m.get("value") if m is not None else None, f"{where}/inertial/mass@value", self.file)
            if mass < 0:
                raise ValidationError("mass must not be negative", file=self.file, path=f"{where}/inertial/mass",
                                      value=mass)  # fmt: skip
            i = inertial.find("inertia")
            c = _inertia_values(i, where, self.file)
            local = np.array((c[0], c[1], c[2], c[1], c[3], c[4], c[2], c[4], c[5])).reshape(3, 3)
            diagonal_frame = T is IDENTITY or not T[:3, :3].any(where=_OFF_DIAGONAL)
            if not (c[1] or c[2] or c[4]) and min(c[0], c[3], c[5]) >= 0 and diagonal_frame:
                inertia = local  # diagonal in the link frame: physical as it is (the common case, no eigenvalues)
            else:
                R = T[:3, :3]
                inertia = physical_inertia(local if T is IDENTITY else R @ local @ R.T, where, self.file)
            com = _NO_COM if T is IDENTITY else T[:3, 3].copy()
        body: dict[str, Any] = {"ID": name, "mass": mass, "inertia": inertia, "r_com": com}
        body["connectors"] = []
        for tag in ("visual", "collision"):
            body[tag] = [self.geometry(e, f"{where}/{tag}[{k + 1}]") for k, e in enumerate(link.findall(tag))]
        return body

    def joint(self, joint: ET.Element) -> UrdfJoint:
        """A CoBRA joint from a ``<joint>``: origin, axis (kept, so the child link's frame is the URDF's), limits.

        A ``<mimic>`` joint becomes an independent joint, as in Pinocchio's default URDF loader."""
        name, kind = joint.get("name", ""), joint.get("type", "")
        where, file = f"joint[@name='{name}']", self.file
        if kind not in SUPPORTED_JOINTS:
            raise ValidationError(f"joint type {kind!r} is not supported (only {', '.join(SUPPORTED_JOINTS)})",
                                  file=file, path=f"{where}@type", value=kind)  # fmt: skip
        parent, child = joint.find("parent"), joint.find("child")
        if parent is None or child is None or not parent.get("link") or not child.get("link"):
            raise FormatError("needs <parent link=...> and <child link=...>", file=file, path=where)
        out: dict[str, Any] = {"ID": name, "parent": parent.get("link"), "child": child.get("link"), "type": kind}
        out["poseParent"] = _origin(joint, where, file)
        if kind != "fixed":
            axis = joint.find("axis")
            a = np.asarray(
                _floats(axis.get("xyz") if axis is not None else None, 3, (1, 0, 0), f"{where}/axis@xyz", file)
            )
            norm = float(np.linalg.norm(a))
            if norm < 1e-9:
                raise ValidationError(
                    "joint axis must not be zero", file=file, path=f"{where}/axis@xyz", value=a.tolist()
                )
            out["axis"] = (a / norm).tolist()
        limit = joint.find("limit")
        limits: dict[str, float] = {}
        if limit is not None and kind in ("revolute", "prismatic"):
            for key, attr in (("positionLower", "lower"), ("positionUpper", "upper")):
                if limit.get(attr) is not None:
                    value = _number(limit.get(attr), f"{where}/limit@{attr}", file)
                    if abs(value) < URDF_UNLIMITED:
                        limits[key] = value
            if limits.get("positionLower", -np.inf) > limits.get("positionUpper", np.inf):
                raise ValidationError("lower limit above the upper limit", file=file, path=f"{where}/limit",
                                      value=(limit.get("lower"), limit.get("upper")))  # fmt: skip
        if limit is not None and kind != "fixed":
            for key, attr in (("velocity", "velocity"), ("peakTorque", "effort")):
                value = _number(limit.get(attr), f"{where}/limit@{attr}", file)
                if 0 < value < URDF_UNLIMITED:
                    limits[key] = value
        if limits:
            out["limits"] = limits
        dynamics = joint.find("dynamics")
        if dynamics is not None and kind != "fixed":
            for key, attr in (("frictionViscous", "damping"), ("frictionCoulomb", "friction")):
                if dynamics.get(attr) is not None:
                    value = _number(dynamics.get(attr), f"{where}/dynamics@{attr}", file)
                    if value < 0:
                        raise ValidationError("must not be negative", file=file, path=f"{where}/dynamics@{attr}",
                                              value=value)  # fmt: skip
                    out[key] = value
        return UrdfJoint(name, kind, out["parent"], out["child"], out)


def check_tree(links: Sequence[str], joints: Sequence[UrdfJoint], file: Path | None) -> str:
    """The root link, after checking that the links form one tree: unique names, every joint between two links
    that exist, each link the child of at most one joint, one root, every link below it (no cycle).
    Linear in the number of links and joints."""
    longest = limits().max_string_chars
    for kind, names in (("link", links), ("joint", [j.name for j in joints])):
        for name in names:
            if len(name) > longest:
                raise ValidationError(f"a {kind} name longer than {longest} characters (max_string_chars)", file=file,
                                      path=f"{kind}[@name]", value=name)  # fmt: skip
    seen: set[str] = set()
    for name in links:
        if name in seen or not name:
            raise ValidationError("two links have this name" if name else "a link needs a name", file=file,
                                  path=f"link[@name='{name}']", value=name)  # fmt: skip
        seen.add(name)
    parent_joint: dict[str, str] = {}
    joint_names: set[str] = set()
    children: dict[str, list[str]] = {}
    for j in joints:
        path = f"joint[@name='{j.name}']"
        if j.name in joint_names or not j.name:
            raise ValidationError("two joints have this name" if j.name else "a joint needs a name", file=file,
                                  path=path, value=j.name)  # fmt: skip
        joint_names.add(j.name)
        for role, link in (("parent", j.parent), ("child", j.child)):
            if link not in seen:
                raise ValidationError(f"its {role} link is not a link of the URDF", file=file,
                                      path=f"{path}/{role}@link", value=link)  # fmt: skip
        if j.parent == j.child:
            raise ValidationError("a joint cannot join a link to itself", file=file, path=f"{path}/child@link",
                                  value=j.child)  # fmt: skip
        if j.child in parent_joint:
            raise ValidationError(f"link {j.child!r} is the child of two joints ({parent_joint[j.child]!r} and "
                                  f"{j.name!r}); a URDF must be a tree", file=file, path=f"{path}/child@link",
                                  value=j.child)  # fmt: skip
        parent_joint[j.child] = j.name
        children.setdefault(j.parent, []).append(j.child)
    roots = [n for n in links if n not in parent_joint]
    if not links:
        raise ValidationError("a URDF needs at least one <link>", file=file)
    if not roots:
        raise ValidationError("every link is some joint's child: the joints form a cycle", file=file,
                              path=f"link[@name='{links[0]}']", value=list(links[:5]))  # fmt: skip
    if len(roots) > 1:
        raise ValidationError("a URDF needs exactly one root link (a link that is no joint's child)", file=file,
                              value=roots[:10])  # fmt: skip
    reached = {roots[0]}
    stack = [roots[0]]
    while stack:
        for c in children.get(stack.pop(), ()):
            if c not in reached:
                reached.add(c)
                stack.append(c)
    if len(reached) != len(links):
        cut = [n for n in links if n not in reached]
        raise ValidationError("these links hang in a cycle of joints, not below the root", file=file,
                              path=f"link[@name='{cut[0]}']", value=cut[:10])  # fmt: skip
    return roots[0]
