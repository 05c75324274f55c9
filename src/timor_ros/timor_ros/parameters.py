"""What timor's nodes take and serve as ROS parameters, without rclpy: a module set as one string parameter per
module, ``modules.<key>`` holding the module's CoBRA JSON (``db_to_parameters``, ``db_from_parameters``, and
``modules_from_parameters`` for an edit of the set), and the assembly node's settings (``check_node_settings``).

Parameter keys (deterministic, documented): an ID made only of ASCII letters, digits and ``_`` is its own key
(``J2`` -> ``modules.J2``); any other ID keeps those characters, replaces every other character by ``_`` and
appends ``_`` and the first 8 hex digits of the SHA-1 of the ID (``L-250`` -> ``modules.L_250_<hash>``), so
two different IDs never share a key and the same ID always gets the same key.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from timor_core.common.names import check_plugin, check_prefix
from timor_core.errors import InputError
from timor_core.model.db import ModulesDB
from timor_core.model.module import Module
from timor_core.ros.robot_description import db_with_modules, module_from_json_text, module_to_json_text

__all__ = [
    "MODULE_PARAM_PREFIX",
    "check_node_settings",
    "db_from_parameters",
    "db_with_module_parameters",
    "db_to_parameters",
    "module_param_key",
    "module_param_name",
    "modules_from_parameters",
]

MODULE_PARAM_PREFIX = "modules."
_CLEAN = re.compile(r"[A-Za-z0-9_]+")


def module_param_key(module_id: str) -> str:
    """The parameter-name token of a module ID (see the module docstring for the rule)."""
    module_id = str(module_id)
    if _CLEAN.fullmatch(module_id):
        return module_id
    digest = hashlib.sha1(module_id.encode("utf-8")).hexdigest()[:8]
    return f"{re.sub(r'[^A-Za-z0-9_]', '_', module_id)}_{digest}"


def module_param_name(module_id: str) -> str:
    """``modules.<key>``: the name of the parameter holding the module's JSON."""
    return MODULE_PARAM_PREFIX + module_param_key(module_id)


def db_to_parameters(db: ModulesDB) -> dict[str, str]:
    """``{"modules.<key>": module JSON text}`` for every module, in the set's order."""
    out: dict[str, str] = {}
    for m in db:
        name = module_param_name(m.id)
        if name in out:  # only if a SHA-1 prefix collides: refuse rather than silently drop a module
            raise InputError("two module IDs map to the same parameter name", value=name)
        out[name] = module_to_json_text(m)
    return out


def db_from_parameters(
    module_ids: Sequence[str],
    parameters: Mapping[str, str],
    *,
    name: str = "",
    base_dir: str | Path | None = None,
    ignore_collisions: str = "rigid_via_joint",
) -> ModulesDB:
    """Rebuild a module set from its parameters (``module_ids`` gives the order; ``parameters`` maps names or
    keys to module JSON text). Each module's ``header.ID`` must be the ID its parameter stands for."""
    base = Path(base_dir) if base_dir else None
    modules = []
    for mid in module_ids:
        pname = module_param_name(mid)
        text = parameters.get(pname, parameters.get(module_param_key(mid)))
        if text is None:
            raise InputError(f"no parameter {pname} for module {mid!r}", value=mid)
        m = module_from_json_text(text, base_dir=base, where=f"${pname}")
        if m.id != mid:
            raise InputError(f"parameter {pname} holds module {m.id!r}, expected {mid!r}", path="$.header.ID")
        modules.append(m)
    return ModulesDB(modules, name=name, ignore_collisions=ignore_collisions, base_dir=base)


def modules_from_parameters(updates: Mapping[str, object], base_dir: Path | None = None) -> list[Module]:
    """The modules of a parameter edit ``{parameter name: module JSON text}``, in the given order.

    Every parameter must be named ``modules.<key of the module's ID>`` and hold a string; any problem is an
    InputError naming the parameter."""
    out = []
    for pname, text in updates.items():
        if not pname.startswith(MODULE_PARAM_PREFIX):
            raise InputError(f"{pname}: not a module parameter (expected {MODULE_PARAM_PREFIX}<ID>)")
        if not isinstance(text, str):
            raise InputError(f"{pname}: a module parameter must be a string of module JSON", value=text)
        try:
            m = module_from_json_text(text, base_dir=base_dir, where="$")
        except InputError as exc:
            raise InputError(f"{pname}: {exc}") from None
        if module_param_name(m.id) != pname:
            raise InputError(
                f"{pname}: holds module {m.id!r}, whose parameter is {module_param_name(m.id)}", value=m.id
            )
        out.append(m)
    return out


def db_with_module_parameters(db: ModulesDB, updates: Mapping[str, object]) -> tuple[ModulesDB, list[str]]:
    """A copy of ``db`` with the modules of a parameter edit added or replaced, and the IDs that are new
    (``modules_from_parameters``, then ``db_with_modules``); ``db`` is unchanged."""
    return db_with_modules(db, modules_from_parameters(updates, db.base_dir))


def check_node_settings(
    *, prefix: str, srdf_samples: int, seed: int, timeout: float, plugin: str | None = None
) -> None:
    """Refuse an assembly node's settings before it starts, rather than failing every request later."""
    check_prefix(prefix)
    if plugin is not None:
        check_plugin(plugin)
    if not 1 <= srdf_samples <= 100_000:
        raise InputError("srdf_samples must be an integer in 1..100000", value=srdf_samples)
    if seed < 0:
        raise InputError("srdf_seed must be an integer >= 0", value=seed)
    if not 0 < timeout <= 3600:
        raise InputError("service_timeout must be a number of seconds in (0, 3600]", value=timeout)
