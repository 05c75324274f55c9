"""Validation of a module-set file that reports every error it finds, not just the first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from timor_core.common import jsonfields as jf
from timor_core.errors import InputError, ValidationError
from timor_core.model.db import IGNORE_COLLISION_MODES
from timor_core.model.geometry import GEOMETRY_PARAMETERS, Mesh, unread_fields
from timor_core.model.module import (
    LIMIT_KEYS,
    check_tree,
    parse_body,
    parse_header,
    parse_joint,
    triangle_inequality_violation,
)

__all__ = ["DBReport", "SetCheck", "check_db_file", "validate_db_file"]

T = TypeVar("T")

MODULE_FIELDS: tuple[str, ...] = ("header", "bodies", "joints")
HEADER_FIELDS: tuple[str, ...] = ("ID", "name", "cost", "date", "author", "email", "affiliation", "keepNames")
"""A module header's fields: the CoBRA ones timor keeps without reading them too, and timor's ``keepNames``."""
BODY_FIELDS: tuple[str, ...] = ("ID", "mass", "inertia", "r_com", "connectors", "visual", "collision")
CONNECTOR_FIELDS: tuple[str, ...] = ("ID", "gender", "type", "size", "pose")
JOINT_FIELDS: tuple[str, ...] = (
    "ID",
    "type",
    "parent",
    "child",
    "poseParent",
    "poseChild",
    "limits",
    "passive",
    "axis",
    "gearRatio",
)
JOINT_FIELDS += ("motorInertia", "frictionCoulomb", "frictionViscous")
GEOMETRY_FIELDS: tuple[str, ...] = (
    "type",
    "parameters",
    "pose",
    *sorted({p for v in GEOMETRY_PARAMETERS.values() for p in v}),
)


@dataclass
class DBReport:
    """What ``check_db_file`` found: errors (the set is refused) and warnings (it loads, but is suspect)."""

    errors: list[InputError] = field(default_factory=list)
    warnings: list[InputError] = field(default_factory=list)

    def problems(self, strict: bool = False) -> list[InputError]:
        """The errors, and with ``strict`` the warnings too."""
        return self.errors + self.warnings if strict else list(self.errors)


def validate_db_file(path: Path, *, strict: bool = False) -> list[InputError]:
    """All problems of a ``modules.json``: each error names the file, the JSON path and the value.

    With ``strict``, physically impossible data the loader accepts (inertia violating the triangle
    inequality) counts as an error too.
    """
    return check_db_file(path).problems(strict)


def check_db_file(path: Path) -> DBReport:
    """Every error and warning of a ``modules.json`` (see ``DBReport``); a bad file is never a crash."""
    path = Path(path)
    report = DBReport()
    try:
        data = jf.load_json_file(path, infinity_keys=LIMIT_KEYS)
    except InputError as exc:
        report.errors.append(exc)
        return report
    SetCheck(path, report).check(data)
    return report


class SetCheck:
    """One pass over a module set's JSON that records every problem in a DBReport instead of stopping at the first."""

    def __init__(self, path: Path, report: DBReport) -> None:
        self.path = path
        self.report = report
        self.base_dir = path.resolve().parent
        self.seen_ids: dict[str, str] = {}  # module ID -> JSON path of its first use

    def attempt(self, fn: Callable[..., T], *args: Any) -> T | None:
        """``fn(*args)``, or None after recording its InputError (located in this file)."""
        try:
            return fn(*args)
        except InputError as exc:
            self.report.errors.append(exc.located(file=self.path))
            return None

    def error(self, message: str, path: str, value: Any) -> None:
        self.report.errors.append(ValidationError(message, file=self.path, path=path, value=value))

    def check(self, data: Any) -> None:
        """The whole set: its top-level fields, then each module."""
        d = self.attempt(jf.obj, {"modules": data} if isinstance(data, list) else data, "$")
        if d is None:
            return
        mode = d.get("ignore_collisions", "rigid_via_joint")
        if mode not in IGNORE_COLLISION_MODES:
            self.error(f"must be one of {', '.join(IGNORE_COLLISION_MODES)}", "$.ignore_collisions", mode)
        modules = self.attempt(lambda: jf.array(jf.req(d, "modules", "$"), "$.modules"))
        for i, m in enumerate(modules or []):
            md = self.attempt(jf.obj, m, f"$.modules[{i}]")
            if md is not None:
                self.module(md, i, f"$.modules[{i}]")

    def module(self, md: dict, i: int, mp: str) -> None:
        """One module: header, bodies, joints, their tree, and every mesh file it names."""
        header = self.header(md, mp)
        bodies_json = self.attempt(lambda: jf.array(jf.req(md, "bodies", mp), f"{mp}.bodies"))
        if bodies_json is None:
            return
        if not bodies_json:
            self.error("a module needs at least one body", f"{mp}.bodies", [])
        bodies = [
            self.attempt(parse_body, b, f"{mp}.bodies[{k}]", self.base_dir, self.path)
            for k, b in enumerate(bodies_json)
        ]
        self.inertia_warnings(bodies, header.id if header is not None else f"#{i}", mp)
        ok_bodies = [b for b in bodies if b is not None]
        joints, duplicates = self.joints(md, bodies_json, bodies, mp)
        if not duplicates and ok_bodies and len(ok_bodies) == len(bodies) and all(j is not None for j in joints):
            self.attempt(check_tree, tuple(ok_bodies), tuple(joints), mp)
        self.unknown_fields(md, header, bodies, joints, mp)
        for body in ok_bodies:  # read every mesh: a corrupt file is an error of the set, not of a later robot
            for g in (*body.visual, *body.collision):
                if isinstance(g, Mesh):
                    self.attempt(g.load)

    def header(self, md: dict, mp: str) -> Any:
        """The module's parsed header (None if bad); a module ID used before is an error."""
        header = self.attempt(lambda: parse_header(jf.req(md, "header", mp), f"{mp}.header"))
        if header is not None:
            if header.id in self.seen_ids:
                self.error(f"duplicate module ID (also at {self.seen_ids[header.id]})", f"{mp}.header.ID", header.id)
            self.seen_ids.setdefault(header.id, f"{mp}.header.ID")
        return header

    def inertia_warnings(self, bodies: list[Any], module: str, mp: str) -> None:
        """A warning for each body whose principal moments no rigid body can have."""
        for k, body in enumerate(bodies):
            moments = triangle_inequality_violation(body.inertia) if body is not None and body.mass > 0 else None
            if body is not None and moments is not None:
                self.report.warnings.append(
                    ValidationError(
                        f"module {module!r}, body {body.id!r}: principal moments of inertia violate the triangle "
                        "inequality A + B >= C (no rigid body has them; MuJoCo refuses them, PyBullet zeroes them)",
                        file=self.path,
                        path=f"{mp}.bodies[{k}].inertia",
                        value=[round(m, 9) for m in moments],
                    )
                )

    def unknown_fields(self, md: dict, header: Any, bodies: list[Any], joints: list[Any], mp: str) -> None:
        """A warning for each field no reader uses: a misspelt optional one (``peaktorque``: no torque limit, ``Cost``:
        cost 0) reads as the field left out."""
        found: list[tuple[str, str, tuple[str, ...]]] = [(mp, k, MODULE_FIELDS) for k in md if k not in MODULE_FIELDS]
        if header is not None:
            found += [(f"{mp}.header", k, HEADER_FIELDS) for k in header.extra if k not in HEADER_FIELDS]
        for k, body in enumerate(bodies):
            if body is not None:
                found += [(f"{mp}.bodies[{k}]", key, BODY_FIELDS) for key in body.extra]
                for n, c in enumerate(body.connectors):
                    found += [(f"{mp}.bodies[{k}].connectors[{n}]", key, CONNECTOR_FIELDS) for key in c.extra]
                for part in ("visual", "collision"):
                    for n, g in enumerate(getattr(body, part)):
                        at = f"{mp}.bodies[{k}].{part}[{n}]"
                        found += [(at + below, key, GEOMETRY_FIELDS) for below, key in unread_fields(g)]
        for k, joint in enumerate(joints):
            if joint is not None:
                found += [(f"{mp}.joints[{k}]", key, JOINT_FIELDS) for key in joint.extra]
                found += [(f"{mp}.joints[{k}].limits", key, tuple(LIMIT_KEYS)) for key in joint.limits_json]
        for path, key, known in found:
            if not key.startswith("_") and key not in known:
                self.report.warnings.append(ValidationError(jf.unknown_field(key, known), file=self.path, path=path))

    def joints(self, md: dict, bodies_json: list, bodies: list[Any], mp: str) -> tuple[list[Any], list[InputError]]:
        """The module's parsed joints (None where bad) and the duplicate body, connector and joint IDs (recorded)."""
        # joints are checked against every body ID the file names, so one bad body reports one error
        raw_ids = {str(b["ID"]) for b in bodies_json if isinstance(b, dict) and isinstance(b.get("ID"), (str, int))}
        path = self.path
        duplicates = _duplicates(((b.id, f"{mp}.bodies[{k}].ID") for k, b in enumerate(bodies) if b), "body", path)
        connectors = (
            (c.id, f"{mp}.bodies[{k}].connectors[{n}].ID")
            for k, b in enumerate(bodies)
            if b
            for n, c in enumerate(b.connectors)
        )
        duplicates += _duplicates(connectors, "connector", path)
        joints_json = self.attempt(lambda: jf.array(md.get("joints", []), f"{mp}.joints")) or []
        joints = [self.attempt(parse_joint, j, f"{mp}.joints[{k}]", raw_ids) for k, j in enumerate(joints_json)]
        duplicates += _duplicates(((j.id, f"{mp}.joints[{k}].ID") for k, j in enumerate(joints) if j), "joint", path)
        self.report.errors.extend(duplicates)
        return joints, duplicates


def _duplicates(ids_and_paths, what: str, file: Path) -> list[InputError]:
    seen: dict[str, str] = {}
    found: list[InputError] = []
    for i, where in ids_and_paths:
        if i in seen:
            found.append(ValidationError(f"duplicate {what} ID (first at {seen[i]})", file=file, path=where, value=i))
        else:
            seen[i] = where
    return found
