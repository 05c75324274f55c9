"""Reading a URDF's elements for the importer: links (mass, inertia, visual and collision shapes), joints (type,
origin, axis, limits) and the checks that the links form one tree, each error naming the URDF file and the link
or joint (``link[@name='...']``, ``joint[@name='...']``), never the module JSON made from them. The tree checks are
in :mod:`timor_core.export.urdf_import.urdf_tree`.

Speed (100,000 links well under 10 s): a link or joint is read into a small record; its pose, inertia and centre of
mass go as plain floats into one list per shape (:class:`FloatStack`), made into one read-only numpy array at the
end, a view per link, where three small arrays per link cost more than reading the link. An error's path is
formatted only when there is an error (:class:`_ReadError` carries its suffix to the element's reader).
"""

from __future__ import annotations

import logging
import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import unquote, urlparse

import numpy as np

from timor_core.errors import FormatError, InputError, MeshError, TimorError, UntrustedPathError, ValidationError
from timor_core.export.formats.urdf import URDF_UNLIMITED

log = logging.getLogger(__name__)
_R = TypeVar("_R")

__all__ = [
    "FloatStack",
    "UrdfLink",
    "UrdfJoint",
    "UrdfReader",
    "resolve_package_uri",
    "physical_inertia",
    "XACRO_NAMESPACE",
]

SUPPORTED_JOINTS = ("revolute", "continuous", "prismatic", "fixed")
_SUPPORTED = frozenset(SUPPORTED_JOINTS)
XACRO_NAMESPACE = "http://www.ros.org/wiki/xacro"
_INERTIA = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")
_ZERO3 = (0.0, 0.0, 0.0)
_ZERO6 = (0.0,) * 6
_X_AXIS = (1.0, 0.0, 0.0)
_OFF_DIAGONAL = (1, 2, 4, 6, 8, 9)  # the rotation's off-diagonal entries in a row-major 4x4 pose
_ORIGIN = ("/origin@rpy", "/origin@xyz")
_INERTIAL_ORIGIN = ("/inertial/origin@rpy", "/inertial/origin@xyz")


class _ReadError(TimorError):
    """A value of the element being read is wrong: its reader adds the file and the element's name to the path."""

    def __init__(self, error: type[InputError], message: str, suffix: str, value: Any = ...) -> None:
        super().__init__(message)
        self.error, self.message, self.suffix, self.value = error, message, suffix, value

    def located(self, kind: str, name: str, file: Path | None) -> InputError:
        """The error, at ``kind[@name='name']`` + suffix of ``file``."""
        return self.error(self.message, file=file, path=f"{kind}[@name='{name}']{self.suffix}", value=self.value)


def _floats(text: str | None, n: int, default: tuple[float, ...], suffix: str) -> tuple[float, ...]:
    if text is None:
        return default
    try:
        values = tuple(map(float, text.split()))
    except ValueError:
        raise _ReadError(FormatError, "expected numbers", suffix, text) from None
    if len(values) != n or (not math.isfinite(sum(values)) and not all(map(math.isfinite, values))):
        raise _ReadError(FormatError, f"expected {n} finite numbers", suffix, text)
    return values


def _number(text: str | None, suffix: str, default: float = 0.0) -> float:
    return _floats(text, 1, (default,), suffix)[0]


def _mass(text: str | None) -> float:
    try:
        mass = float(text) if text is not None else 0.0  # the common case: one plain number
        if math.isfinite(mass):
            return mass
    except ValueError:
        pass
    return _number(text, "/inertial/mass@value")


def _pose(roll: float, pitch: float, yaw: float, x: float, y: float, z: float) -> tuple[float, ...]:
    """URDF's pose: Rz(yaw) Ry(pitch) Rx(roll) and the translation, row-major 4x4, in plain floats (numpy's small
    products cost more per link)."""
    cr, sr, cp, sp = math.cos(roll), math.sin(roll), math.cos(pitch), math.sin(pitch)
    cy, sy = math.cos(yaw), math.sin(yaw)
    return (
        cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr, x,
        sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr, y,
        -sp, cp * sr, cp * cr, z,
        0.0, 0.0, 0.0, 1.0,
    )  # fmt: skip


def _origin(element: ET.Element, suffixes: tuple[str, str]) -> tuple[float, ...] | None:
    """The row-major 4x4 pose of an element's ``<origin>``; None for the identity (no origin, or a zero one)."""
    origin = element.find("origin")
    if origin is None:
        return None
    rpy_text, xyz_text = origin.get("rpy"), origin.get("xyz")
    rpy_split = rpy_text.split() if rpy_text is not None else ["0", "0", "0"]
    xyz_split = xyz_text.split() if xyz_text is not None else ["0", "0", "0"]
    try:  # both attributes in one conversion (the common case); any doubt goes the careful way, which names it
        if len(rpy_split) != 3 or len(xyz_split) != 3:
            raise ValueError
        roll, pitch, yaw, x, y, z = map(float, rpy_split + xyz_split)
        if not math.isfinite(roll + pitch + yaw + x + y + z):
            raise ValueError
    except ValueError:
        roll, pitch, yaw = _floats(rpy_text, 3, _ZERO3, suffixes[0])
        x, y, z = _floats(xyz_text, 3, _ZERO3, suffixes[1])
    if not (roll or pitch or yaw):
        if not (x or y or z):
            return None
        return (1.0, 0.0, 0.0, x, 0.0, 1.0, 0.0, y, 0.0, 0.0, 1.0, z, 0.0, 0.0, 0.0, 1.0)
    return _pose(roll, pitch, yaw, x, y, z)


def _pose_json(pose: tuple[float, ...] | None) -> list[list[float]]:
    flat = pose or (1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0)
    return [list(flat[k : k + 4]) for k in (0, 4, 8, 12)]


def _inertia_values(element: ET.Element | None) -> list[float]:
    """ixx, ixy, ixz, iyy, iyz, izz of an ``<inertia>`` (0 where missing), read in one pass."""
    if element is None:
        return [0.0] * 6
    try:
        values = list(map(float, map(element.get, _INERTIA, _ZERO6)))
        if math.isfinite(sum(values)) or all(map(math.isfinite, values)):
            return values
    except ValueError:
        pass
    return [_number(element.get(k), f"/inertial/inertia@{k}") for k in _INERTIA]  # names the bad one


def physical_inertia(inertia: np.ndarray, where: str, file: Path | None) -> np.ndarray:
    """The inertia tensor, its negative eigenvalues (a tensor no body has) set to zero with a warning naming the
    link; Pinocchio takes such a tensor as it is, so the mass matrix then differs from its model of the file."""
    if not inertia[0, 1] and not inertia[0, 2] and not inertia[1, 2] and min(np.diag(inertia)) >= 0:
        return inertia  # diagonal: no eigenvalues to find
    eig, vec = np.linalg.eigh(inertia)
    scale = float(np.abs(inertia).max())
    if eig.min() >= -1e-9 * scale - 1e-12:
        return inertia
    log.warning("%s: %s: inertia is not positive semi-definite (eigenvalues %s); negative ones set to 0",
                file or "<URDF>", where, eig.tolist())  # fmt: skip
    return (vec * np.clip(eig, 0.0, None)) @ vec.T


def _inside(path: Path, folders: Sequence[Path], uri: str) -> Path:
    """``path`` resolved (symlinks and ``..`` followed), refused unless it lies inside one of ``folders`` (each
    resolved too): an UntrustedPathError naming the URI and the folders."""
    resolved = Path(os.path.realpath(path))
    allowed = [Path(os.path.realpath(f)) for f in folders]
    if os.path.lexists(resolved) and not any(resolved.is_relative_to(f) for f in allowed):  # else: "not found"
        where = ", ".join(map(str, allowed)) or "none: give the mesh's folder in package_dirs"
        raise UntrustedPathError(f"mesh {uri!r} is {resolved}, outside the allowed folder ({where})")
    return resolved


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
    per item (three small numpy arrays per link took a fifth of the import of 100,000 links)."""

    def __init__(self, *shape: int) -> None:
        self.shape = shape
        self._flat: list[float] = []
        self._count = 0

    def add(self, values: Iterable[float]) -> int:
        """Append one item (its values row-major); its index among the arrays."""
        self._flat.extend(values)
        self._count += 1
        return self._count - 1

    def arrays(self) -> list[np.ndarray]:
        """The items as read-only arrays of the shape, in the order added."""
        block = np.array(self._flat, dtype=float).reshape(self._count, *self.shape)
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
    """Reads one URDF's links and joints into records, their numbers into stacks, and collects the meshes."""

    def __init__(
        self, file: Path | None, package_dirs: Sequence[Path] | Mapping[str, Path], skip_missing: bool = False
    ) -> None:
        self.file, self.package_dirs, self.skip_missing = file, package_dirs, skip_missing
        self.meshes: list[tuple[dict, Path]] = []  # (geometry parameters, resolved file)
        self.skipped: list[str] = []  # with skip_missing: each mesh left out, as its path and file name
        self._link_name = ""  # the link being read
        self.poses, self.inertias, self.coms = FloatStack(4, 4), FloatStack(3, 3), FloatStack(3)
        self.total_mass = 0.0

    def links(self, elements: Iterable[ET.Element]) -> list[UrdfLink]:
        """Every ``<link>`` (the body frame is the link frame), each element emptied once read."""
        return self._read_all(elements, "link", self._link)

    def joints(self, elements: Iterable[ET.Element]) -> list[UrdfJoint]:
        """Every ``<joint>`` (origin, axis kept so the child link's frame is the URDF's, limits, friction), each
        element emptied once read. A ``<mimic>`` joint becomes an independent joint, as in Pinocchio's default URDF
        loader."""
        return self._read_all(elements, "joint", self._joint)

    def _read_all(self, elements: Iterable[ET.Element], kind: str, read: Callable[[ET.Element], _R]) -> list[_R]:
        """Each element read, then emptied (the parsed tree shrinks while the records grow: less peak memory);
        a bad value named with the file and the element."""
        out: list[_R] = []
        append = out.append
        element = None
        try:
            for element in elements:
                append(read(element))
                element.clear()
        except _ReadError as bad:
            raise bad.located(kind, element.get("name", "") if element is not None else "", self.file) from None
        return out

    def _link(self, link: ET.Element) -> UrdfLink:
        name = self._link_name = link.get("name", "")
        inertial = link.find("inertial")
        mass, inertia, com = 0.0, -1, -1
        if inertial is not None:
            T = _origin(inertial, _INERTIAL_ORIGIN)
            m = inertial.find("mass")
            mass = _mass(m.get("value") if m is not None else None)
            if mass < 0:
                raise _ReadError(ValidationError, "mass must not be negative", "/inertial/mass", mass)
            self.total_mass += mass
            if self.total_mass == math.inf:  # each link's is finite, their sum (the robot's mass) must be too
                raise _ReadError(ValidationError, "the links' masses add up to more than a float holds",
                                 "/inertial/mass@value", mass)  # fmt: skip
            c = _inertia_values(inertial.find("inertia"))
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
        return UrdfLink(name, mass, inertia, com, visual, collision)

    def _shapes(self, link: ET.Element, tag: str) -> list[dict]:
        """The geometries of a link's ``<visual>`` or ``<collision>`` elements (a missing mesh left out with
        ``skip_missing``)."""
        shapes = [self._geometry(e, f"/{tag}[{k + 1}]") for k, e in enumerate(link.iterfind(tag))]
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
        return physical_inertia(local, f"link[@name='{name}']", self.file).ravel().tolist()

    def _geometry(self, element: ET.Element, where: str) -> dict | None:
        """A CoBRA geometry from a ``<visual>`` or ``<collision>`` element (``where``: its path in the link); None
        for a mesh whose file is missing, with ``skip_missing``."""
        geometry = element.find("geometry")
        shape = geometry[0] if geometry is not None and len(geometry) else None
        if shape is None:
            raise _ReadError(FormatError, "needs a <geometry> with one shape", where)
        pose = _pose_json(_origin(element, (f"{where}/origin@rpy", f"{where}/origin@xyz")))
        if shape.tag == "box":
            x, y, z = _floats(shape.get("size"), 3, (), f"{where}/box@size")
            return {"type": "box", "parameters": {"x": x, "y": y, "z": z}, "pose": pose}
        if shape.tag == "cylinder":
            r = _floats(shape.get("radius"), 1, (), f"{where}/cylinder@radius")[0]
            z = _floats(shape.get("length"), 1, (), f"{where}/cylinder@length")[0]
            return {"type": "cylinder", "parameters": {"r": r, "z": z}, "pose": pose}
        if shape.tag == "sphere":
            r = _floats(shape.get("radius"), 1, (), f"{where}/sphere@radius")[0]
            return {"type": "sphere", "parameters": {"r": r}, "pose": pose}
        if shape.tag == "mesh":
            params = self._mesh(shape, where)
            return {"type": "mesh", "parameters": params, "pose": pose} if params is not None else None
        raise _ReadError(FormatError, f"unsupported geometry <{shape.tag}>", where)

    def _mesh(self, shape: ET.Element, where: str) -> dict | None:
        name = shape.get("filename")
        if not name:
            raise _ReadError(FormatError, "mesh needs a filename", f"{where}/mesh")
        try:
            path = resolve_package_uri(name, self.file.parent if self.file else None, self.package_dirs)
        except UntrustedPathError as exc:  # never skipped: a file outside the allowed folders is refused
            raise _ReadError(type(exc), exc.message, f"{where}/mesh@filename", name) from None
        except MeshError as exc:
            if self.skip_missing:
                self._skip(where, name)
                return None
            raise _ReadError(MeshError, exc.message, f"{where}/mesh@filename", name) from None
        if not path.is_file():
            if self.skip_missing:
                self._skip(where, name)
                return None
            raise _ReadError(MeshError, "mesh file not found", f"{where}/mesh@filename", str(path))
        scale = _floats(shape.get("scale"), 3, (1.0, 1.0, 1.0), f"{where}/mesh@scale")
        if 0.0 in scale:
            raise _ReadError(ValidationError, "mesh scale must not be zero", f"{where}/mesh@scale", shape.get("scale"))
        params: dict[str, Any] = {"file": "", "scale": list(scale)}  # file: relative to the set, once all are known
        self.meshes.append((params, path))
        return params

    def _skip(self, where: str, filename: str) -> None:
        self.skipped.append(f"link[@name='{self._link_name}']{where}/mesh@filename {filename!r}")

    def _joint(self, joint: ET.Element) -> UrdfJoint:
        name, kind = joint.get("name", ""), joint.get("type", "")
        if kind not in _SUPPORTED:
            message = f"joint type {kind!r} is not supported (only {', '.join(SUPPORTED_JOINTS)})"
            raise _ReadError(ValidationError, message, "@type", kind)
        parent, child = joint.find("parent"), joint.find("child")
        parent_link = parent.get("link") if parent is not None else None
        child_link = child.get("link") if child is not None else None
        if not parent_link or not child_link:
            raise _ReadError(FormatError, "needs <parent link=...> and <child link=...>", "")
        T = _origin(joint, _ORIGIN)
        pose = -1 if T is None else self.poses.add(T)
        moving = None if kind == "fixed" else self._moving(joint, kind)
        return UrdfJoint(name, kind, parent_link, child_link, pose, moving)

    def _moving(self, joint: ET.Element, kind: str) -> dict[str, Any]:
        """The CoBRA fields of a moving joint: unit axis, limits (unlimited left out), friction."""
        axis = joint.find("axis")
        a = _floats(axis.get("xyz") if axis is not None else None, 3, _X_AXIS, "/axis@xyz")
        norm = math.sqrt(a[0] * a[0] + a[1] * a[1] + a[2] * a[2])
        if norm < 1e-9:
            raise _ReadError(ValidationError, "joint axis must not be zero", "/axis@xyz", list(a))
        if not math.isfinite(norm):  # its length overflows: normalised it would be a zero axis
            raise _ReadError(ValidationError, "joint axis too long to normalise (|xyz| overflows)", "/axis@xyz",
                             list(a))  # fmt: skip
        out: dict[str, Any] = {"axis": [a[0] / norm, a[1] / norm, a[2] / norm]}
        limit = joint.find("limit")
        bounds: dict[str, float] = {}
        if limit is not None and kind != "continuous":
            for key, attr in (("positionLower", "lower"), ("positionUpper", "upper")):
                if limit.get(attr) is not None:
                    value = _number(limit.get(attr), f"/limit@{attr}")
                    if abs(value) < URDF_UNLIMITED:
                        bounds[key] = value
            if bounds.get("positionLower", -math.inf) > bounds.get("positionUpper", math.inf):
                raise _ReadError(ValidationError, "lower limit above the upper limit", "/limit",
                           (limit.get("lower"), limit.get("upper")))  # fmt: skip
        if limit is not None:
            for key, attr in (("velocity", "velocity"), ("peakTorque", "effort")):
                value = _number(limit.get(attr), f"/limit@{attr}")
                if value < 0:  # a missing or zero limit is unlimited, a negative one is a mistake
                    raise _ReadError(ValidationError, "must not be negative", f"/limit@{attr}", value)
                if 0 < value < URDF_UNLIMITED:
                    bounds[key] = value
        if bounds:
            out["limits"] = bounds
        dynamics = joint.find("dynamics")
        for key, attr in (("frictionViscous", "damping"), ("frictionCoulomb", "friction")):
            if dynamics is not None and dynamics.get(attr) is not None:
                value = _number(dynamics.get(attr), f"/dynamics@{attr}")
                if value < 0:
                    raise _ReadError(ValidationError, "must not be negative", f"/dynamics@{attr}", value)
                out[key] = value
        return out
