"""The module of an imported URDF, built straight from the values the URDF reader has checked.

Going through the module JSON and its validation again would check every pose and inertia a second time: that
made 100,000 links take a minute. A mesh is still parsed by the model's own code (its file must resolve), and
the result is an ordinary Module whose JSON loads back to an equal one.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.common.transforms import IDENTITY, readonly
from timor_core.errors import InputError, ValidationError
from timor_core.export.urdf_import.urdf_reader import UrdfJoint, UrdfLink, UrdfReader
from timor_core.model.db import ModulesDB
from timor_core.model.geometry import Box, Cylinder, Geometry, Sphere, mesh_from_json
from timor_core.model.module import Module
from timor_core.model.parts import LIMIT_KEYS, Z_AXIS, Body, Connector, Joint, ModuleHeader

__all__ = ["UrdfParts", "module_set", "fixed_joint", "body", "geometries"]

_BOTH = ("visual", "collision")  # the bodies' JSON always names both (possibly empty) lists
_NO_INERTIA = readonly(np.zeros((3, 3)))
_NO_COM = readonly(np.zeros(3))
_KNOWN = {"ID", "type", "parent", "child", "poseParent", "axis", "limits", "frictionViscous", "frictionCoulomb"}
_KNOWN |= {"gearRatio", "motorInertia"}
_JSON_TO_URDF = ((".parameters.file", "/mesh@filename"), (".parameters.scale", "/mesh@scale"), (".limits", "/limit"))


@dataclass
class UrdfParts:
    """What the reader made of a URDF, with the connectors (by link) and the joints' extra CoBRA fields (by name)."""

    links: Sequence[UrdfLink]
    joints: Sequence[UrdfJoint]
    reader: UrdfReader
    connectors: Mapping[str, list[dict[str, Any]]]
    joint_extras: Mapping[str, Mapping[str, Any]]


def _urdf_path(rest: str) -> str:
    """The URDF spelling of the part of a module-JSON path below a body or joint (``.visual[0].parameters.file``
    -> ``/visual[1]/mesh@filename``; URDF counts elements from 1)."""
    rest = re.sub(r"\.(visual|collision)\[(\d+)\]", lambda m: f"/{m.group(1)}[{int(m.group(2)) + 1}]", rest)
    for json_part, urdf_part in _JSON_TO_URDF:
        rest = rest.replace(json_part, urdf_part)
    return rest


def _relocated(exc: InputError, element: str, file: Path | None) -> InputError:
    """An error of the model's own parser (path below a body or joint), re-pointed at the URDF element."""
    err = type(exc).__new__(type(exc))
    InputError.__init__(err, exc.message, file=file, path=element + _urdf_path(exc.path or ""), value=exc.value)
    return err


_set = object.__setattr__  # what a frozen dataclass's own __init__ calls per field, bound once here


def fixed_joint(name: str, parent: str, child: str, pose: np.ndarray) -> Joint:
    """``Joint(id=name, type="fixed", parent=parent, child=child, pose_parent=pose)``, its fields set one by one
    as the frozen dataclass's generated ``__init__`` sets them, without its per-field global look-ups and default
    factories (about half its time; the instance is the same, attributes stored inline, no ``__dict__`` made).
    ``test_urdf_import_build.py::test_fast_parts_equal_constructed`` checks it makes what the constructor makes."""
    joint = object.__new__(Joint)
    _set(joint, "id", name)
    _set(joint, "type", "fixed")
    _set(joint, "parent", parent)
    _set(joint, "child", child)
    _set(joint, "pose_parent", pose)
    _set(joint, "pose_child", IDENTITY)
    _set(joint, "limits_json", {})
    _set(joint, "gear_ratio", None)
    _set(joint, "motor_inertia", None)
    _set(joint, "friction_coulomb", None)
    _set(joint, "friction_viscous", None)
    _set(joint, "passive", None)
    _set(joint, "extra", {})
    _set(joint, "axis", Z_AXIS)
    return joint


def body(name: str, mass: float, inertia: np.ndarray, com: np.ndarray, connectors: tuple[Connector, ...],
         visual: tuple[Geometry, ...], collision: tuple[Geometry, ...]) -> Body:  # fmt: skip
    """``Body(...)`` of an imported link (its JSON names both geometry lists), made as :func:`fixed_joint` is."""
    out = object.__new__(Body)
    _set(out, "id", name)
    _set(out, "mass", mass)
    _set(out, "inertia", inertia)
    _set(out, "r_com", com)
    _set(out, "connectors", connectors)
    _set(out, "visual", visual)
    _set(out, "collision", collision)
    _set(out, "extra", {"_present": _BOTH})
    return out


_PRIMITIVES: dict[str, type[Box | Cylinder | Sphere]] = {"box": Box, "cylinder": Cylinder, "sphere": Sphere}


def geometries(shapes: Sequence[dict], where: str, base_dir: Path, file: Path | None) -> tuple[Geometry, ...]:
    """``geometries_from_json(shapes, where, base_dir, file)`` of a link's shapes as the reader made them, without
    checking again what the reader checked (sizes finite and not negative; the pose made from rpy and xyz, so a
    rigid transform): checking each pose again was most of importing a link of 17,000 boxes. A mesh goes through
    the model's own parser (its file must resolve). ``test_urdf_import_build.py::test_geometries_equal_parsed``
    checks they are the parser's."""
    out: list[Geometry] = []
    for k, shape in enumerate(shapes):
        pose = readonly(np.array(shape["pose"], dtype=float))
        params = shape["parameters"]
        if shape["type"] == "mesh":
            out.append(mesh_from_json(params, f"{where}[{k}].parameters", pose, {}, base_dir, file, "error"))
        else:
            out.append(_PRIMITIVES[shape["type"]](pose=pose, **params))
    return tuple(out)


def _connector(data: Mapping[str, Any], body: str) -> Connector:
    pose = readonly(np.asarray(data["pose"], dtype=float))
    return Connector(data["ID"], body, pose, data["gender"], data["type"], tuple(float(s) for s in data["size"]))


def _bodies(parts: UrdfParts, base_dir: Path, file: Path | None) -> list[Body]:
    reader = parts.reader
    inertias, coms = reader.inertias.arrays(), reader.coms.arrays()
    out = []
    for link in parts.links:
        name = link.name
        connectors = tuple(_connector(c, name) for c in parts.connectors[name]) if name in parts.connectors else ()
        visual: tuple[Geometry, ...] = ()
        collision: tuple[Geometry, ...] = ()
        try:
            if link.visual:
                visual = geometries(link.visual, ".visual", base_dir, file)
            if link.collision:
                collision = geometries(link.collision, ".collision", base_dir, file)
        except InputError as exc:
            raise _relocated(exc, f"link[@name='{name}']", file) from None
        inertia = inertias[link.inertia] if link.inertia >= 0 else _NO_INERTIA
        com = coms[link.com] if link.com >= 0 else _NO_COM
        out.append(body(name, link.mass, inertia, com, connectors, visual, collision))
    return out


def _joints(parts: UrdfParts, file: Path | None) -> list[Joint]:
    poses = parts.reader.poses.arrays()
    out = []
    for j in parts.joints:
        pose = poses[j.pose] if j.pose >= 0 else IDENTITY
        extra = parts.joint_extras.get(j.name)
        if j.moving is None and not extra:
            out.append(fixed_joint(j.name, j.parent, j.child, pose))
            continue
        try:
            out.append(_joint_with(j, pose, extra or {}))
        except InputError as exc:
            raise _relocated(exc, f"joint[@name='{j.name}']", file) from None
    return out


def _joint_with(j: UrdfJoint, pose: np.ndarray, extras: Mapping[str, Any]) -> Joint:
    """A moving joint, or one with extra CoBRA fields (checked here: the reader has not seen them)."""
    data: dict[str, Any] = dict(j.moving or {})
    extra = dict(extras)
    limits = dict(data.get("limits", {}))
    for key, value in dict(extra.pop("limits", {})).items():  # e.g. an acceleration limit URDF cannot hold
        if key in LIMIT_KEYS:
            value = jf.number(value, f".limits.{key}", allow_inf=True)
            if key not in ("positionLower", "positionUpper") and value < 0:
                raise ValidationError("limit must not be negative", path=f".limits.{key}", value=value)
        limits[key] = value
    data.update(extra)

    def optional(key: str, minimum: float | None = 0.0) -> float | None:
        return jf.number(data[key], f".{key}", min_value=minimum) if key in data else None

    axis = data.get("axis", (0.0, 0.0, 1.0))
    return Joint(
        id=j.name,
        type=j.kind,
        parent=j.parent,
        child=j.child,
        pose_parent=pose,
        limits_json=limits,
        gear_ratio=optional("gearRatio", None),
        motor_inertia=optional("motorInertia"),
        friction_coulomb=optional("frictionCoulomb"),
        friction_viscous=optional("frictionViscous"),
        extra={key: value for key, value in data.items() if key not in _KNOWN},
        axis=(float(axis[0]), float(axis[1]), float(axis[2])),
    )


def module_set(header: Mapping[str, Any], parts: UrdfParts, base_dir: Path, file: Path | None,
               name: str) -> ModulesDB:  # fmt: skip
    """The one-module set of an imported URDF (links and joints as the reader made them, already checked)."""
    extra = {k: v for k, v in header.items() if k not in ("ID", "name")}
    extra["_has_cost"] = False
    mid = jf.string(header["ID"], "$.modules[0].header.ID")
    module = Module(
        ModuleHeader(mid, jf.string(header.get("name", mid), "$.modules[0].header.name"), 0.0, extra),
        tuple(_bodies(parts, base_dir, file)),
        tuple(_joints(parts, file)),
    )
    return ModulesDB([module], name=name, base_dir=base_dir, source=file, extra={"_no_mode": True})
