"""Validation of a module-set file that reports every error it finds, not just the first."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from timor_core.common import jsonfields as jf
from timor_core.errors import InputError, ValidationError
from timor_core.model.db import IGNORE_COLLISION_MODES
from timor_core.model.geometry import Mesh
from timor_core.model.module import (
    LIMIT_KEYS,
    check_tree,
    parse_body,
    parse_header,
    parse_joint,
    triangle_inequality_violation,
)

__all__ = ["DBReport", "check_db_file", "validate_db_file"]


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
    errors = report.errors
    base_dir = path.resolve().parent

    def attempt(fn, *args):
        try:
            return fn(*args)
        except InputError as exc:
            errors.append(exc.located(file=path))
            return None

    if isinstance(data, list):
        data = {"modules": data}
    d = attempt(jf.obj, data, "$")
    if d is None:
        return report
    mode = d.get("ignore_collisions", "rigid_via_joint")
    if mode not in IGNORE_COLLISION_MODES:
        errors.append(
            ValidationError(
                f"must be one of {', '.join(IGNORE_COLLISION_MODES)}", file=path, path="$.ignore_collisions", value=mode
            )
        )
    modules = attempt(lambda: jf.array(jf.req(d, "modules", "$"), "$.modules"))
    if modules is None:
        return report
    seen: dict[str, str] = {}
    for i, m in enumerate(modules):
        mp = f"$.modules[{i}]"
        md = attempt(jf.obj, m, mp)
        if md is None:
            continue
        header = attempt(lambda: parse_header(jf.req(md, "header", mp), f"{mp}.header"))
        if header is not None:
            if header.id in seen:
                errors.append(
                    ValidationError(
                        f"duplicate module ID (also at {seen[header.id]})",
                        file=path,
                        path=f"{mp}.header.ID",
                        value=header.id,
                    )
                )
            seen.setdefault(header.id, f"{mp}.header.ID")
        bodies_json = attempt(lambda: jf.array(jf.req(md, "bodies", mp), f"{mp}.bodies"))
        if bodies_json is None:
            continue
        if not bodies_json:
            errors.append(ValidationError("a module needs at least one body", file=path, path=f"{mp}.bodies", value=[]))
        bodies = [attempt(parse_body, b, f"{mp}.bodies[{k}]", base_dir, path) for k, b in enumerate(bodies_json)]
        for k, body in enumerate(bodies):
            moments = triangle_inequality_violation(body.inertia) if body is not None and body.mass > 0 else None
            if body is not None and moments is not None:
                module = header.id if header is not None else f"#{i}"
                report.warnings.append(
                    ValidationError(
                        f"module {module!r}, body {body.id!r}: principal moments of inertia violate the triangle "
                        "inequality A + B >= C (no rigid body has them; MuJoCo refuses them, PyBullet zeroes them)",
                        file=path,
                        path=f"{mp}.bodies[{k}].inertia",
                        value=[round(m, 9) for m in moments],
                    )
                )
        ok_bodies = [b for b in bodies if b is not None]
        # joints are checked against every body ID the file names, so one bad body reports one error
        raw_ids = {str(b["ID"]) for b in bodies_json if isinstance(b, dict) and isinstance(b.get("ID"), (str, int))}
        duplicates = _duplicates(((b.id, f"{mp}.bodies[{k}].ID") for k, b in enumerate(bodies) if b), "body", path)
        duplicates += _duplicates(
            (
                (c.id, f"{mp}.bodies[{k}].connectors[{n}].ID")
                for k, b in enumerate(bodies)
                if b
                for n, c in enumerate(b.connectors)
            ),
            "connector",
            path,
        )
        joints_json = attempt(lambda: jf.array(md.get("joints", []), f"{mp}.joints")) or []
        joints = [attempt(parse_joint, j, f"{mp}.joints[{k}]", raw_ids) for k, j in enumerate(joints_json)]
        duplicates += _duplicates(((j.id, f"{mp}.joints[{k}].ID") for k, j in enumerate(joints) if j), "joint", path)
        errors.extend(duplicates)
        if not duplicates and ok_bodies and len(ok_bodies) == len(bodies) and all(j is not None for j in joints):
            attempt(check_tree, tuple(ok_bodies), tuple(joints), mp)
        for body in ok_bodies:  # read every mesh: a corrupt file is an error of the set, not of a later robot
            for g in (*body.visual, *body.collision):
                if isinstance(g, Mesh):
                    attempt(g.load)
    return report


def _duplicates(ids_and_paths, what: str, file: Path) -> list[InputError]:
    seen: dict[str, str] = {}
    found: list[InputError] = []
    for i, where in ids_and_paths:
        if i in seen:
            found.append(ValidationError(f"duplicate {what} ID (first at {seen[i]})", file=file, path=where, value=i))
        else:
            seen[i] = where
    return found
