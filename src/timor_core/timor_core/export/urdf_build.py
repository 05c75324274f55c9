"""The module of an imported URDF, built straight from the values the URDF reader has checked.

Going through the module JSON and its validation again would check every pose and inertia a second time: that
made 100,000 links take a minute. Geometry is still parsed by the model's own code (meshes must resolve), and
the result is an ordinary Module whose JSON loads back to an equal one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.common.transforms import readonly
from timor_core.errors import ValidationError
from timor_core.model.db import ModulesDB
from timor_core.model.geometry import geometries_from_json
from timor_core.model.module import Module
from timor_core.model.parts import LIMIT_KEYS, Body, Connector, Joint, ModuleHeader

__all__ = ["module_set"]

_PRESENT = {"_present": ("visual", "collision")}  # the bodies' JSON always names both (possibly empty) lists


def _body(data: Mapping[str, Any], k: int, base_dir: Path, file: Path | None) -> Body:
    where = f"$.modules[0].bodies[{k}]"
    connectors = tuple(
        Connector(
            c["ID"],
            data["ID"],
            readonly(np.asarray(c["pose"], dtype=float)),
            c["gender"],
            c["type"],
            tuple(float(s) for s in c["size"]),
        )  # fmt: skip
        for c in data["connectors"]
    )
    visual = geometries_from_json(data["visual"], f"{where}.visual", base_dir, file) if data["visual"] else ()
    collision = (
        geometries_from_json(data["collision"], f"{where}.collision", base_dir, file) if data["collision"] else ()
    )
    inertia, com = readonly(np.asarray(data["inertia"], dtype=float)), readonly(np.asarray(data["r_com"], dtype=float))
    return Body(data["ID"], float(data["mass"]), inertia, com, connectors, visual, collision, dict(_PRESENT))


_KNOWN = {"ID", "type", "parent", "child", "poseParent", "axis", "limits", "frictionViscous", "frictionCoulomb"}
_KNOWN |= {"gearRatio", "motorInertia"}
_Z = (0.0, 0.0, 1.0)


def _joint(data: Mapping[str, Any], k: int) -> Joint:
    where = f"$.modules[0].joints[{k}]"
    if data.keys() <= {"ID", "type", "parent", "child", "poseParent"}:  # a fixed joint as the reader makes it
        pose = readonly(np.asarray(data["poseParent"], dtype=float))
        return Joint(id=data["ID"], type=data["type"], parent=data["parent"], child=data["child"], pose_parent=pose)
    limits = dict(data.get("limits", {}))
    for key, value in limits.items():  # joint_extras may add an acceleration limit
        if key in LIMIT_KEYS:
            limits[key] = jf.number(value, f"{where}.limits.{key}", allow_inf=True)
            if key != "positionLower" and key != "positionUpper" and limits[key] < 0:
                raise ValidationError("limit must not be negative", path=f"{where}.limits.{key}", value=value)

    def optional(key: str, minimum: float | None = 0.0) -> float | None:
        return jf.number(data[key], f"{where}.{key}", min_value=minimum) if key in data else None

    axis = data.get("axis", _Z)
    return Joint(
        id=data["ID"],
        type=data["type"],
        parent=data["parent"],
        child=data["child"],
        pose_parent=readonly(np.asarray(data["poseParent"], dtype=float)),
        limits_json=limits,
        gear_ratio=optional("gearRatio", None),
        motor_inertia=optional("motorInertia"),
        friction_coulomb=optional("frictionCoulomb"),
        friction_viscous=optional("frictionViscous"),
        extra={key: value for key, value in data.items() if key not in _KNOWN},
        axis=(float(axis[0]), float(axis[1]), float(axis[2])),
    )


def module_set(header: Mapping[str, Any], bodies: Sequence[Mapping[str, Any]], joints: Sequence[Mapping[str, Any]],
               base_dir: Path, file: Path | None, name: str) -> ModulesDB:  # fmt: skip
    """The one-module set of an imported URDF (bodies and joints as the reader made them, already checked)."""
    extra = {k: v for k, v in header.items() if k not in ("ID", "name")}
    extra["_has_cost"] = False
    mid = jf.string(header["ID"], "$.modules[0].header.ID")
    module = Module(
        ModuleHeader(mid, jf.string(header.get("name", mid), "$.modules[0].header.name"), 0.0, extra),
        tuple(_body(b, k, base_dir, file) for k, b in enumerate(bodies)),
        tuple(_joint(j, k) for k, j in enumerate(joints)),
    )
    return ModulesDB([module], name=name, base_dir=base_dir, source=file, extra={"_no_mode": True})
