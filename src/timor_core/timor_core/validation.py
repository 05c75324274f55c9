"""Validation of a module-set file that reports every error it finds, not just the first."""

from __future__ import annotations

from pathlib import Path

from . import jsonfields as jf
from .db import IGNORE_COLLISION_MODES
from .errors import InputError, ValidationError
from .module import _check_tree, _parse_body, _parse_header, _parse_joint

__all__ = ["validate_db_file"]


def validate_db_file(path: Path) -> list[InputError]:
    """All problems of a ``modules.json``: each error names the file, the JSON path and the value."""
    path = Path(path)
    try:
        data = jf.load_json_file(path)
    except InputError as exc:
        return [exc]
    errors: list[InputError] = []
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
        return errors
    mode = d.get("ignore_collisions", "rigid_via_joint")
    if mode not in IGNORE_COLLISION_MODES:
        errors.append(
            ValidationError(
                f"must be one of {', '.join(IGNORE_COLLISION_MODES)}", file=path, path="$.ignore_collisions", value=mode
            )
        )
    modules = attempt(lambda: jf.array(jf.req(d, "modules", "$"), "$.modules"))
    if modules is None:
        return errors
    seen: dict[str, str] = {}
    for i, m in enumerate(modules):
        mp = f"$.modules[{i}]"
        md = attempt(jf.obj, m, mp)
        if md is None:
            continue
        header = attempt(lambda: _parse_header(jf.req(md, "header", mp), f"{mp}.header"))
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
        bodies_json = attempt(lambda: jf.array(jf.req(md, "bodies", mp), f"{mp}.bodies")) or []
        bodies = [attempt(_parse_body, b, f"{mp}.bodies[{k}]", base_dir, path) for k, b in enumerate(bodies_json)]
        ok_bodies = [b for b in bodies if b is not None]
        ids = [b.id for b in ok_bodies]
        for dup in sorted({x for x in ids if ids.count(x) > 1}):
            errors.append(ValidationError("duplicate body ID", file=path, path=f"{mp}.bodies", value=dup))
        cids = [c.id for b in ok_bodies for c in b.connectors]
        for dup in sorted({x for x in cids if cids.count(x) > 1}):
            errors.append(ValidationError("duplicate connector ID", file=path, path=f"{mp}.bodies", value=dup))
        joints_json = attempt(lambda: jf.array(md.get("joints", []), f"{mp}.joints")) or []
        joints = [attempt(_parse_joint, j, f"{mp}.joints[{k}]", set(ids)) for k, j in enumerate(joints_json)]
        jids = [j.id for j in joints if j is not None]
        for dup in sorted({x for x in jids if jids.count(x) > 1}):
            errors.append(ValidationError("duplicate joint ID", file=path, path=f"{mp}.joints", value=dup))
        if len(ok_bodies) == len(bodies) and all(j is not None for j in joints) and ok_bodies:
            attempt(_check_tree, tuple(ok_bodies), tuple(joints), mp)
    return errors
