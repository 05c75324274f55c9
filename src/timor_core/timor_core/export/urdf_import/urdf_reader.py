"""Reading a URDF's elements for the importer: links (mass, inertia, visual and collision shapes) and joints (type,
origin, axis, limits), each error naming the URDF file and the link or joint (``link[@name='...']``,
``joint[@name='...']``), never the module JSON made from them. The numbers and their ranges are in
:mod:`timor_core.export.urdf_import.urdf_numbers`, the tree checks in :mod:`timor_core.export.urdf_import.urdf_tree`.

Speed (100,000 links well under 10 s): a link or joint is read into a small record; its pose, inertia and centre of
mass go as plain floats into one list per shape (:class:`FloatStack`), made into one read-only numpy array at the
end, a view per link, where three small arrays per link cost more than reading the link. An error's path is
formatted only when there is an error (:class:`ElementError` carries its suffix to the element's reader).
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np

from timor_core.common.path_memo import resolved
from timor_core.errors import FormatError, InputError, MeshError, UntrustedPathError, ValidationError
from timor_core.export.formats.urdf import URDF_UNLIMITED
from timor_core.export.urdf_import.urdf_numbers import (
    MIN_MESH_SCALE,
    ElementError,
    floats,
    inertia_values,
    mass,
    number,
    origin,
    physical_inertia,
    pose_json,
)
from timor_core.limits import check_count, limits

__all__ = [
    "FloatStack",
    "UrdfLink",
    "UrdfJoint",
    "UrdfReader",
    "resolve_package_uri",
    "XACRO_NAMESPACE",
]

SUPPORTED_JOINTS = ("revolute", "continuous", "prismatic", "fixed")
_SUPPORTED = frozenset(SUPPORTED_JOINTS)
XACRO_NAMESPACE = "http://www.ros.org/wiki/xacro"
_X_AXIS = (1.0, 0.0, 0.0)
_OFF_DIAGONAL = (1, 2, 4, 6, 8, 9)  # the rotation's off-diagonal entries in a row-major 4x4 pose
_ORIGIN = ("/origin@rpy", "/origin@xyz")
_INERTIAL_ORIGIN = ("/inertial/origin@rpy", "/inertial/origin@xyz")
_ORIGINS_MOST = 4096  # joint origins remembered by their text (each pose read once)
_ORIGIN_CHARS = 200  # ... if their rpy and xyz texts are no longer (the memory they hold stays small)


def _realpath(path: Path) -> Path:
    """``Path(os.path.realpath(path))``, through the importer's memory of resolved folders (:func:`resolved`)."""
    try:
        return resolved(path)
    except (RuntimeError, ValueError):  # a symlink loop, a NUL: realpath leaves them as they are
        return Path(os.path.realpath(path))


def _inside(path: Path, folders: Sequence[Path], uri: str) -> Path:
    """``path`` resolved (symlinks and ``..`` followed), refused unless it lies inside one of ``folders`` (each
    resolved too): an UntrustedPathError naming the URI and the folders."""
    found = _realpath(path)
    allowed = [_realpath(f) for f in folders]
    if os.path.lexists(found) and not any(found.is_relative_to(f) for f in allowed):  # else: "not found"
        where = ", ".join(map(str, allowed)) or "none: give the mesh's folder in package_dirs"
        raise UntrustedPathError(f"mesh {uri!r} is {found}, outside the allowed folder ({where})")
    return found


def _package_roots(package: str, package_dirs: Sequence[Path] | Mapping[str, Path]) -> list[Path]:
    """Where a ``package://`` name may be: the given folders, then ``ROS_PACKAGE_PATH`` and ``AMENT_PREFIX_PATH``."""
    if isinstance(package_dirs, Mapping):
        roots = [Path(package_dirs[package])] if package in package_dirs else []
    else:
        roots = [Path(d) / package for d in package_dirs]
    for var, sub in (("ROS_PACKAGE_PATH", ""), ("AMENT_PREFIX_PATH", "share")):
        roots += [Path(p) / sub / package for p in os.environ.get(var, "").split(os.pathsep) if p]
    return roots


def resolve_package_uri(uri: str, urdf_dir: Path | None, package_dirs: Sequence[Path] | Mapping[str, Path]) -> Path:
    """The file behind a URDF mesh name (``package://``, ``file://`` or a path relative to the URDF), resolved
    (symlinks and ``..`` followed). It must lie inside the allowed folder: the package's folder for ``package://``,
    else the URDF's folder or a given package folder; anything else is an UntrustedPathError naming the URI and
    the folder (the import must not copy a file from outside what the user gave it)."""
    parsed = urlparse(uri)
    if parsed.scheme == "package":
        package, rest = parsed.netloc, unquote(parsed.path).lstrip("/")
        for root in _package_roots(package, package_dirs):
            if (root / rest).is_file():
                return _inside(root / rest, [root], uri)
        raise MeshError(
            f"package {package!r} not found (give its folder in package_dirs, or set ROS_PACKAGE_PATH)", value=uri
        )
    if parsed.scheme == "file":
        path = Path(unquote(parsed.path))
    elif parsed.scheme and len(parsed.scheme) > 1:
        raise MeshError(f"unsupported URI scheme {parsed.scheme!r}", value=uri)
    else:
        path = Path(uri)
    if not path.is_absolute():
        if urdf_dir is None:
            raise MeshError("a relative mesh path needs the URDF's folder (load it from a file)", value=uri)
        path = urdf_dir / path
    given = list(package_dirs.values()) if isinstance(package_dirs, Mapping) else list(package_dirs)
    return _inside(path, [Path(f) for f in ([urdf_dir] if urdf_dir is not None else []) + given], uri)


class FloatStack:
    """Many small read-only arrays of one shape, collected as floats and made at once: one numpy array and a view
    per item (three small numpy arrays per link took a fifth of the import of 100,000 links). The floats are kept
    as C doubles (8 bytes each, where a list of Python floats takes 32), and become the array without a copy."""

    def __init__(self, *shape: int) -> None:
        self.shape = shape
        self._flat = array("d")
        self._count = 0

    def add(self, values: Iterable[float]) -> int:
        """Append one item (its values row-major); its index among the arrays."""
        self._flat.extend(values)
        self._count += 1
        return self._count - 1

    def arrays(self) -> list[np.ndarray]:
        """The items as read-only arrays of the shape, in the order added."""
        block = np.frombuffer(self._flat, dtype=float).reshape(self._count, *self.shape)
        block.flags.writeable = False
        return list(block)


@dataclass(slots=True)
class UrdfLink:
    """One URDF link as read: mass, where its inertia and centre of mass are, its geometry as CoBRA JSON."""

    name: str
    mass: float
    inertia: int  # index in the reader's inertias (about the centre of mass, in the link frame); -1: zero
    com: int  # index in the reader's centres of mass; -1: at the link's origin
    visual: Sequence[dict]
    collision: Sequence[dict]


@dataclass(slots=True)
class UrdfJoint:
    """One URDF joint as read: what the tree checks need, where its origin is, the fields of a moving joint."""

    name: str
    kind: str
    parent: str
    child: str
    pose: int  # index in the reader's poses; -1: the identity
    moving: dict[str, Any] | None = None  # CoBRA fields of a moving joint: axis, limits, friction


class UrdfReader:
    """Reads one URDF's links and joints, as the parser hands them over, into records, their numbers into stacks,
    and collects the meshes. The first wrong value of each kind is kept (``joint_error``, ``link_error``), not
    raised: the importer raises them in the order of its checks (joints, the tree, links), whatever the file's
    order. More links or joints than the ``max_urdf_links`` limit, or shapes than ``max_urdf_shapes``, are refused
    at once."""

    def __init__(
        self, file: Path | None, package_dirs: Sequence[Path] | Mapping[str, Path], skip_missing: bool = False
    ) -> None:
        self.file, self.package_dirs, self.skip_missing = file, package_dirs, skip_missing
        self.meshes: list[tuple[dict, Path]] = []  # (geometry parameters, resolved file)
        self.skipped: list[str] = []  # with skip_missing: each mesh left out, as its path and file name
        self._link_name = ""  # the link being read
        self.poses, self.inertias, self.coms = FloatStack(4, 4), FloatStack(3, 3), FloatStack(3)
        self.names: list[str] = []  # every link's name, in file order
        self.links: list[UrdfLink] = []
        self.joints: list[UrdfJoint] = []
        self.link_error: InputError | None = None
        self.joint_error: InputError | None = None
        self._most, self._most_shapes = limits().max_urdf_links, limits().max_urdf_shapes
        self.shapes = 0  # visual and collision shapes so far
        self._origins: dict[tuple[str | None, str | None], int] = {}  # (rpy, xyz) texts -> index in poses
        self._files: dict[str, Path] = {}  # mesh filename -> its file, found (each filename resolved once)

    def link(self, element: ET.Element) -> None:
        """Read a ``<link>`` (the body frame is the link frame)."""
        name = element.get("name", "")
        self.names.append(name)
        if len(self.names) > self._most:
            check_count(len(self.names), "max_urdf_links", "the number of links", file=self.file, path="link")
        if self.link_error is None:
            try:
                self.links.append(self._link(element, name))
            except ElementError as bad:
                self.link_error = bad.located("link", name, self.file)

    def joint(self, element: ET.Element) -> None:
        """Read a ``<joint>`` (origin, axis kept so the child link's frame is the URDF's, limits, friction). A
        ``<mimic>`` joint becomes an independent joint, as in Pinocchio's default URDF loader."""
        if len(self.joints) >= self._most:
            check_count(len(self.joints) + 1, "max_urdf_links", "the number of joints", file=self.file, path="joint")
        if self.joint_error is None:
            try:
                self.joints.append(self._joint(element))
            except ElementError as bad:
                self.joint_error = bad.located("joint", element.get("name", ""), self.file)

    def _link(self, link: ET.Element, name: str) -> UrdfLink:
        self._link_name = name
        inertial = link.find("inertial")
        m, inertia, com = 0.0, -1, -1
        if inertial is not None:
            T = origin(inertial, _INERTIAL_ORIGIN)
            found = inertial.find("mass")
            m = mass(found.get("value") if found is not None else None)
            if m < 0:
                raise ElementError(ValidationError, "mass must not be negative", "/inertial/mass", m)
            c = inertia_values(inertial.find("inertia"))
            if any(c):
                inertia = self.inertias.add(self._inertia(c, T, name))
            if T is not None and (T[3] or T[7] or T[11]):
                com = self.coms.add((T[3], T[7], T[11]))
        visual: Sequence[dict] = ()
        collision: Sequence[dict] = ()
        if link.find("visual") is not None:
            visual = self._shapes(link, "visual")
        if link.find("collision") is not None:
            collision = self._shapes(link, "collision")
        return UrdfLink(name, m, inertia, com, visual, collision)

    def _shapes(self, link: ET.Element, tag: str) -> list[dict]:
        """The geometries of a link's ``<visual>`` or ``<collision>`` elements (a missing mesh left out with
        ``skip_missing``)."""
        elements = link.findall(tag)
        self.shapes += len(elements)
        if self.shapes > self._most_shapes:
            check_count(self.shapes, "max_urdf_shapes", "the number of visual and collision shapes", file=self.file,
                        path=f"link[@name='{self._link_name}']/{tag}")  # fmt: skip
        shapes = [self._geometry(e, f"/{tag}[{k + 1}]") for k, e in enumerate(elements)]
        return [g for g in shapes if g is not None]

    def _inertia(self, c: list[float], T: tuple[float, ...] | None, name: str) -> Sequence[float]:
        """The inertia tensor in the link frame (row-major), from the ``<inertial>`` frame's values."""
        if not (c[1] or c[2] or c[4]) and min(c[0], c[3], c[5]) >= 0:
            if T is None or not any(T[k] for k in _OFF_DIAGONAL):  # diagonal and stays so: no numpy needed
                return (c[0], 0.0, 0.0, 0.0, c[3], 0.0, 0.0, 0.0, c[5])
        local = np.array((c[0], c[1], c[2], c[1], c[3], c[4], c[2], c[4], c[5])).reshape(3, 3)
        if T is not None:
            R = np.array(T).reshape(4, 4)[:3, :3]
            local = R @ local @ R.T
            local = (local + local.T) / 2  # exactly symmetric: Pinocchio refuses a rounding difference of 1e-11
        return physical_inertia(local, f"link[@name='{name}']", self.file).ravel().tolist()

    def _geometry(self, element: ET.Element, where: str) -> dict | None:
        """A CoBRA geometry from a ``<visual>`` or ``<collision>`` element (``where``: its path in the link); None
        for a mesh whose file is missing, with ``skip_missing``."""
        geometry = element.find("geometry")
        shape = geometry[0] if geometry is not None and len(geometry) else None
        if shape is None:
            raise ElementError(FormatError, "needs a <geometry> with one shape", where)
        pose = pose_json(origin(element, (f"{where}/origin@rpy", f"{where}/origin@xyz")))
        if shape.tag == "box":
            x, y, z = _sizes(shape, "size", 3, f"{where}/box@size")
            return {"type": "box", "parameters": {"x": x, "y": y, "z": z}, "pose": pose}
        if shape.tag == "cylinder":
            r = _sizes(shape, "radius", 1, f"{where}/cylinder@radius")[0]
            z = _sizes(shape, "length", 1, f"{where}/cylinder@length")[0]
            return {"type": "cylinder", "parameters": {"r": r, "z": z}, "pose": pose}
        if shape.tag == "sphere":
            r = _sizes(shape, "radius", 1, f"{where}/sphere@radius")[0]
            return {"type": "sphere", "parameters": {"r": r}, "pose": pose}
        if shape.tag == "mesh":
            params = self._mesh(shape, where)
            return {"type": "mesh", "parameters": params, "pose": pose} if params is not None else None
        raise ElementError(FormatError, f"unsupported geometry <{shape.tag}>", where)

    def _mesh(self, shape: ET.Element, where: str) -> dict | None:
        name = shape.get("filename")
        if not name:
            raise ElementError(FormatError, "mesh needs a filename", f"{where}/mesh")
        path = self._files.get(name)
        if path is None:
            path = self._file(name, where)
            if path is None:
                return None
        scale = floats(shape.get("scale"), 3, (1.0, 1.0, 1.0), f"{where}/mesh@scale")
        if 0.0 in scale:
            raise ElementError(ValidationError, "mesh scale must not be zero", f"{where}/mesh@scale",
                               shape.get("scale"))  # fmt: skip
        if min(map(abs, scale)) < MIN_MESH_SCALE:
            raise ElementError(ValidationError, f"each mesh scale factor must be at least {MIN_MESH_SCALE:g} in "
                               "magnitude (MIN_MESH_SCALE)", f"{where}/mesh@scale", shape.get("scale"))  # fmt: skip
        params: dict[str, Any] = {"file": "", "scale": list(scale)}  # file: relative to the set, once all are known
        self.meshes.append((params, path))
        return params

    def _file(self, name: str, where: str) -> Path | None:
        """The file a mesh filename names (remembered), or None if it is missing and ``skip_missing``."""
        try:
            path = resolve_package_uri(name, self.file.parent if self.file else None, self.package_dirs)
        except UntrustedPathError as exc:  # never skipped: a file outside the allowed folders is refused
            raise ElementError(type(exc), exc.message, f"{where}/mesh@filename", name) from None
        except MeshError as exc:
            if self.skip_missing:
                self._skip(where, name)
                return None
            raise ElementError(MeshError, exc.message, f"{where}/mesh@filename", name) from None
        if not path.is_file():
            if self.skip_missing:
                self._skip(where, name)
                return None
            raise ElementError(MeshError, "mesh file not found", f"{where}/mesh@filename", str(path))
        self._files[name] = path
        return path

    def _skip(self, where: str, filename: str) -> None:
        self.skipped.append(f"link[@name='{self._link_name}']{where}/mesh@filename {filename!r}")

    def _joint(self, joint: ET.Element) -> UrdfJoint:
        name, kind = joint.get("name", ""), joint.get("type", "")
        if kind not in _SUPPORTED:
            message = f"joint type {kind!r} is not supported (only {', '.join(SUPPORTED_JOINTS)})"
            raise ElementError(ValidationError, message, "@type", kind)
        parent, child = joint.find("parent"), joint.find("child")
        parent_link = parent.get("link") if parent is not None else None
        child_link = child.get("link") if child is not None else None
        if not parent_link or not child_link:
            raise ElementError(FormatError, "needs <parent link=...> and <child link=...>", "")
        pose = self._origin(joint)
        moving = None if kind == "fixed" else _moving(joint, kind)
        return UrdfJoint(name, kind, parent_link, child_link, pose, moving)

    def _origin(self, joint: ET.Element) -> int:
        """The index of a joint's origin among the poses (-1: the identity). An origin written as one before is
        that one's pose, read once (a big URDF repeats a few origins: reading one took a fifth of a joint)."""
        found = joint.find("origin")
        if found is None:
            return -1
        key = (found.get("rpy"), found.get("xyz"))  # all that origin() reads of it
        index = self._origins.get(key)
        if index is None:
            T = origin(joint, _ORIGIN)
            index = -1 if T is None else self.poses.add(T)
            if len(self._origins) < _ORIGINS_MOST and sum(len(t) for t in key if t) <= _ORIGIN_CHARS:
                self._origins[key] = index
        return index


def _sizes(shape: ET.Element, attr: str, n: int, suffix: str) -> tuple[float, ...]:
    """A primitive shape's sizes: required, finite, not negative, in range."""
    values = floats(shape.get(attr), n, (), suffix)
    if len(values) != n:
        raise ElementError(FormatError, f"needs {attr} ({n} number{'s' if n > 1 else ''})", suffix)
    if min(values) < 0:
        raise ElementError(ValidationError, "must not be negative", suffix, shape.get(attr))
    return values


def _moving(joint: ET.Element, kind: str) -> dict[str, Any]:
    """The CoBRA fields of a moving joint: unit axis, limits (unlimited left out), friction."""
    axis = joint.find("axis")
    a = floats(axis.get("xyz") if axis is not None else None, 3, _X_AXIS, "/axis@xyz")
    norm = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])  # each component at most URDF_MAX_VALUE: finite
    if norm < 1e-9:
        raise ElementError(ValidationError, "joint axis must not be zero", "/axis@xyz", list(a))
    out: dict[str, Any] = {"axis": [a[0] / norm, a[1] / norm, a[2] / norm]}
    limit = joint.find("limit")
    bounds: dict[str, float] = {}
    if limit is not None and kind != "continuous":
        for key, attr in (("positionLower", "lower"), ("positionUpper", "upper")):
            if limit.get(attr) is not None:
                value = number(limit.get(attr), f"/limit@{attr}", limit=None)  # finite; from URDF_UNLIMITED on: none
                if abs(value) < URDF_UNLIMITED:
                    bounds[key] = value
        if bounds.get("positionLower", -math.inf) > bounds.get("positionUpper", math.inf):
            raise ElementError(ValidationError, "lower limit above the upper limit", "/limit",
                               (limit.get("lower"), limit.get("upper")))  # fmt: skip
    if limit is not None:
        for key, attr in (("velocity", "velocity"), ("peakTorque", "effort")):
            value = number(limit.get(attr), f"/limit@{attr}", limit=None)
            if value < 0:  # a missing or zero limit is unlimited, a negative one is a mistake
                raise ElementError(ValidationError, "must not be negative", f"/limit@{attr}", value)
            if 0 < value < URDF_UNLIMITED:
                bounds[key] = value
    if bounds:
        out["limits"] = bounds
    dynamics = joint.find("dynamics")
    for key, attr in (("frictionViscous", "damping"), ("frictionCoulomb", "friction")):
        if dynamics is not None and dynamics.get(attr) is not None:
            value = number(dynamics.get(attr), f"/dynamics@{attr}")
            if value < 0:
                raise ElementError(ValidationError, "must not be negative", f"/dynamics@{attr}", value)
            out[key] = value
    return out
