"""URDF import: an existing (monolithic) robot as one CoBRA module, so tasks, IK, solutions and search use it.

Each URDF link becomes a body (mass, inertia about the centre of mass, visual and collision geometry), each joint
a module joint. CoBRA joints move about their frame's z axis, so a URDF axis is turned onto z in ``poseParent``
and back in ``poseChild``: the child link's frame stays the URDF's. The module gets a ``base`` connector on the
root link and an ``eef`` connector on the tool link. Mesh names resolve through ``package://`` (in the given
package folders, then ``ROS_PACKAGE_PATH`` and ``AMENT_PREFIX_PATH``), ``file://`` and paths relative to the
URDF. Unlimited limits: a missing or zero ``effort``/``velocity`` and magnitudes from ``URDF_UNLIMITED`` on are
read as unlimited, the convention of the URDF export. Mimic joints become independent joints (as with
Pinocchio's default ``buildModelFromUrdf``), so q has the same entries as Pinocchio's model of the file.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

import numpy as np

from timor_core.common.extensions import implements
from timor_core.common.transforms import from_rpy
from timor_core.errors import FormatError, MeshError, ValidationError
from timor_core.export.urdf import URDF_UNLIMITED
from timor_core.limits import read_input_text
from timor_core.model.db import ModulesDB

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

__all__ = ["db_from_urdf", "assembly_from_urdf", "resolve_package_uri"]

_SUPPORTED_JOINTS = ("revolute", "continuous", "prismatic", "fixed")


def _floats(text: str | None, n: int, default: Sequence[float], where: str, file: Path | None) -> np.ndarray:
    if text is None:
        return np.asarray(default, dtype=float)
    try:
        values = np.array([float(x) for x in text.split()], dtype=float)
    except ValueError:
        raise FormatError("expected numbers", file=file, path=where, value=text) from None
    if values.shape != (n,) or not np.all(np.isfinite(values)):
        raise FormatError(f"expected {n} finite numbers", file=file, path=where, value=text)
    return values


def _origin(element: ET.Element | None, where: str, file: Path | None) -> np.ndarray:
    T = np.eye(4)
    origin = element.find("origin") if element is not None else None
    if origin is not None:
        T[:3, :3] = from_rpy(*_floats(origin.get("rpy"), 3, (0, 0, 0), f"{where}/origin@rpy", file))[:3, :3]
        T[:3, 3] = _floats(origin.get("xyz"), 3, (0, 0, 0), f"{where}/origin@xyz", file)
    return T


def _z_onto(axis: np.ndarray) -> np.ndarray:
    """A rotation taking z onto the unit vector ``axis`` (4x4)."""
    z = np.array([0.0, 0.0, 1.0])
    a = axis / np.linalg.norm(axis)
    R = np.eye(4)
    c = float(z @ a)
    if c > 1 - 1e-12:
        return R
    if c < -1 + 1e-12:
        R[:3, :3] = np.diag([1.0, -1.0, -1.0])
        return R
    k = np.cross(z, a)
    s = float(np.linalg.norm(k))
    k /= s
    K = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    R[:3, :3] = np.eye(3) + s * K + (1 - c) * K @ K
    return R


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


class _Reader:
    """Reads one URDF into CoBRA module JSON (bodies, joints, connectors) and the meshes it names."""

    def __init__(self, root: ET.Element, file: Path | None, package_dirs) -> None:
        self.root, self.file, self.package_dirs = root, file, package_dirs
        self.meshes: list[tuple[dict, Path]] = []  # (geometry parameters, resolved file)

    def geometry(self, element: ET.Element, where: str) -> dict | None:
        geometry = element.find("geometry")
        shape = geometry[0] if geometry is not None and len(geometry) else None
        if shape is None:
            raise FormatError("needs a <geometry> with one shape", file=self.file, path=where)
        pose = _origin(element, where, self.file).tolist()
        if shape.tag == "box":
            x, y, z = _floats(shape.get("size"), 3, (), f"{where}/box@size", self.file)
            return {"type": "box", "parameters": {"x": x, "y": y, "z": z}, "pose": pose}
        if shape.tag == "cylinder":
            r = _floats(shape.get("radius"), 1, (), f"{where}/cylinder@radius", self.file)[0]
            z = _floats(shape.get("length"), 1, (), f"{where}/cylinder@length", self.file)[0]
            return {"type": "cylinder", "parameters": {"r": r, "z": z}, "pose": pose}
        if shape.tag == "sphere":
            r = _floats(shape.get("radius"), 1, (), f"{where}/sphere@radius", self.file)[0]
            return {"type": "sphere", "parameters": {"r": r}, "pose": pose}
        if shape.tag == "mesh":
            name = shape.get("filename")
            if not name:
                raise FormatError("mesh needs a filename", file=self.file, path=f"{where}/mesh")
            try:
                path = resolve_package_uri(name, self.file.parent if self.file else None, self.package_dirs)
            except MeshError as exc:
                raise MeshError(exc.message, file=self.file, path=f"{where}/mesh@filename", value=name) from None
            if not path.is_file():
                raise MeshError("mesh file not found", file=self.file, path=f"{where}/mesh@filename", value=str(path))
            scale = _floats(shape.get("scale"), 3, (1, 1, 1), f"{where}/mesh@scale", self.file).tolist()
            params: dict[str, Any] = {"file": "", "scale": scale}
            self.meshes.append((params, path))
            return {"type": "mesh", "parameters": params, "pose": pose}
        raise FormatError(f"unsupported geometry <{shape.tag}>", file=self.file, path=where)

    def body(self, link: ET.Element) -> dict:
        name = link.get("name", "")
        where = f"link[@name='{name}']"
        inertial = link.find("inertial")
        mass, inertia, com = 0.0, np.zeros((3, 3)), np.zeros(3)
        if inertial is not None:
            T = _origin(inertial, f"{where}/inertial", self.file)
            m = inertial.find("mass")
            mass = float(
                _floats(m.get("value") if m is not None else "0", 1, (), f"{where}/inertial/mass", self.file)[0]
            )
            i = inertial.find("inertia")
            get = (lambda k: i.get(k, "0")) if i is not None else (lambda k: "0")
            c = [float(_floats(get(k), 1, (), f"{where}/inertial/inertia@{k}", self.file)[0]) for k in _INERTIA]
            local = np.array([[c[0], c[1], c[2]], [c[1], c[3], c[4]], [c[2], c[4], c[5]]])
            inertia = T[:3, :3] @ local @ T[:3, :3].T  # the CoBRA body frame is the link frame
            com = T[:3, 3]
        body: dict[str, Any] = {"ID": name, "mass": mass, "inertia": inertia.tolist(), "r_com": com.tolist()}
        body["connectors"] = []
        for tag in ("visual", "collision"):
            shapes = [self.geometry(e, f"{where}/{tag}[{k + 1}]") for k, e in enumerate(link.findall(tag))]
            body[tag] = [s for s in shapes if s is not None]
        return body

    def joint(self, joint: ET.Element) -> dict:
        name, kind = joint.get("name", ""), joint.get("type", "")
        where = f"joint[@name='{name}']"
        if kind not in _SUPPORTED_JOINTS:
            raise ValidationError(f"joint type {kind!r} is not supported (only {_SUPPORTED_JOINTS})", file=self.file,
                                  path=where, value=kind)  # fmt: skip
        # a <mimic> joint becomes an independent joint, as in Pinocchio's default URDF loader
        parent, child = joint.find("parent"), joint.find("child")
        if parent is None or child is None:
            raise FormatError("needs <parent link=...> and <child link=...>", file=self.file, path=where)
        axis = joint.find("axis")
        a = _floats(axis.get("xyz") if axis is not None else None, 3, (1, 0, 0), f"{where}/axis@xyz", self.file)
        if kind != "fixed" and np.linalg.norm(a) < 1e-9:
            raise ValidationError("joint axis must not be zero", file=self.file, path=f"{where}/axis@xyz", value=a)
        R = _z_onto(a) if kind != "fixed" else np.eye(4)
        out: dict[str, Any] = {
            "ID": name,
            "parent": parent.get("link"),
            "child": child.get("link"),
            "type": kind,
            "poseParent": (_origin(joint, where, self.file) @ R).tolist(),
            "poseChild": R.T.tolist(),
        }
        limit = joint.find("limit")
        limits: dict[str, float] = {}
        if limit is not None and kind in ("revolute", "prismatic"):
            for key, attr in (("positionLower", "lower"), ("positionUpper", "upper")):
                v = limit.get(attr)
                if v is not None:
                    value = float(_floats(v, 1, (), f"{where}/limit@{attr}", self.file)[0])
                    if abs(value) < URDF_UNLIMITED:
                        limits[key] = value
        if limit is not None and kind != "fixed":
            for key, attr in (("velocity", "velocity"), ("peakTorque", "effort")):
                v = limit.get(attr)
                value = float(_floats(v, 1, (), f"{where}/limit@{attr}", self.file)[0]) if v is not None else 0.0
                if 0 < value < URDF_UNLIMITED:
                    limits[key] = value
        if limits:
            out["limits"] = limits
        dynamics = joint.find("dynamics")
        if dynamics is not None and kind != "fixed":
            for key, attr in (("frictionViscous", "damping"), ("frictionCoulomb", "friction")):
                if dynamics.get(attr) is not None:
                    out[key] = float(_floats(dynamics.get(attr), 1, (), f"{where}/dynamics@{attr}", self.file)[0])
        return out


_INERTIA = ("ixx", "ixy", "ixz", "iyy", "iyz", "izz")


def _tool_link(children: Mapping[str, list[str]], actuated: Mapping[str, bool], root: str) -> str:
    """Walk from the root into the child with the most joints below it; stop where equal branches with joints
    split (a hand's fingers) or at a leaf. Among fixed frames only, ``tool0`` (or a ``tcp``/``tool`` frame) wins."""
    below: dict[str, int] = {}

    def count(link: str) -> int:
        stack, order = [link], []
        while stack:
            n = stack.pop()
            order.append(n)
            stack.extend(children.get(n, []))
        for n in reversed(order):
            below[n] = int(actuated.get(n, False)) + sum(below[c] for c in children.get(n, []))
        return below[link]

    count(root)
    link = root
    while children.get(link):
        kids = children[link]
        best = max(below[k] for k in kids)
        top = [k for k in kids if below[k] == best]
        if len(top) > 1 and best == 0:
            top = [k for k in top if k == "tool0"] or [k for k in top if "tcp" in k.lower() or "tool" in k.lower()]
        if len(top) != 1:
            break
        link = top[0]
    return link


def db_from_urdf(
    urdf: str | Path,
    package_dirs: Sequence[str | Path] | Mapping[str, str | Path] = (),
    *,
    module_id: str | None = None,
    tcp_link: str | None = None,
    joint_extras: Mapping[str, Mapping[str, Any]] | None = None,
) -> ModulesDB:
    """A module set with one module: the robot of a URDF file (or URDF text).

    ``tcp_link`` carries the ``eef`` connector (default: the end of the chain from the root, stopping where it
    branches, e.g. a hand whose fingers branch off). ``module_id`` defaults to the robot's name.
    ``joint_extras`` adds CoBRA joint fields URDF cannot hold (``gearRatio``, ``motorInertia``, an acceleration
    limit in ``limits``), by joint name.
    """
    file: Path | None = None
    if isinstance(urdf, Path) or (isinstance(urdf, str) and "<robot" not in urdf):
        file = Path(urdf).resolve()
        text = read_input_text(file, what="URDF file")
    else:
        text = urdf
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        raise FormatError(f"not well-formed XML: {exc}", file=file) from None
    if root.tag != "robot":
        raise FormatError("the root element must be <robot>", file=file, value=root.tag)
    dirs: Sequence[Path] | Mapping[str, Path]
    if isinstance(package_dirs, Mapping):
        dirs = {k: Path(v) for k, v in package_dirs.items()}
    else:
        dirs = [Path(d) for d in package_dirs]
    reader = _Reader(root, file, dirs)
    bodies = [reader.body(link) for link in root.findall("link")]
    joints = [reader.joint(j) for j in root.findall("joint")]
    names = [b["ID"] for b in bodies]
    children: dict[str, list[str]] = {}
    for j in joints:
        children.setdefault(j["parent"], []).append(j["child"])
    roots = [n for n in names if n not in {j["child"] for j in joints}]
    if len(roots) != 1:
        raise ValidationError("a URDF needs exactly one root link", file=file, value=roots)
    for j in joints:
        extra = dict((joint_extras or {}).get(j["ID"], {}))
        if "limits" in extra:
            j["limits"] = {**j.get("limits", {}), **extra.pop("limits")}
        j.update(extra)
    actuated = {j["child"]: j["type"] != "fixed" for j in joints}
    tcp = tcp_link if tcp_link is not None else _tool_link(children, actuated, roots[0])
    if tcp not in names:
        raise ValidationError("tcp_link names no link of the URDF", file=file, path="tcp_link", value=tcp)
    flip = np.diag([1.0, -1.0, -1.0, 1.0]).tolist()  # the base connector faces the world (rotation pi about x)
    by_name = {b["ID"]: b for b in bodies}
    by_name[roots[0]]["connectors"].append({"ID": "base", "pose": flip, "gender": "f", "type": "base", "size": []})
    by_name[tcp]["connectors"].append(
        {"ID": "tcp", "pose": np.eye(4).tolist(), "gender": "m", "type": "eef", "size": []}
    )
    robot_name = root.get("name") or "robot"
    mid = module_id or robot_name
    base_dir = file.parent if file is not None else Path.cwd()
    if reader.meshes:
        base_dir = Path(os.path.commonpath([str(base_dir), *(str(p.parent) for _, p in reader.meshes)]))
    for params, path in reader.meshes:
        params["file"] = path.relative_to(base_dir).as_posix()
    data = {
        "header": {"ID": mid, "name": robot_name},
        "bodies": bodies,
        "joints": joints,
    }
    return ModulesDB.from_json_data({"modules": [data]}, base_dir=base_dir, source=file, name=robot_name)


@implements("assembly_from_urdf")
def assembly_from_urdf(
    urdf: str | Path,
    package_dirs: Sequence[str | Path] | Mapping[str, str | Path] = (),
    *,
    tcp_link: str | None = None,
    joint_extras: Mapping[str, Mapping[str, Any]] | None = None,
) -> ModuleAssembly:
    """A one-module assembly of the robot in a URDF (see ``db_from_urdf``)."""
    from timor_core.model.assembly import ModuleAssembly

    db = db_from_urdf(urdf, package_dirs, tcp_link=tcp_link, joint_extras=joint_extras)
    return ModuleAssembly.from_serial_modules(db, [next(iter(db)).id])
