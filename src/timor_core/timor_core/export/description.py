"""Robot descriptions for ROS, without ROS: module sets as parameters, requests to validated assemblies,
assemblies to URDF (+ SRDF).

The ROS 2 nodes of ``timor_ros`` are thin wrappers of these functions:

* a module set travels as one string parameter per module, ``modules.<key>``, holding the module's CoBRA JSON
  (:func:`db_to_parameters`, :func:`db_from_parameters`); ``<key>`` is :func:`module_param_key` of its ID;
* a reconfiguration request (serial module IDs, or a full assembly JSON) becomes a validated
  :class:`~timor_core.model.assembly.ModuleAssembly` (:func:`assembly_from_request`) or an :class:`InputError` /
  :class:`~timor_core.errors.TimorError` naming what is wrong;
* :func:`describe` writes its URDF and SRDF; a failure names the step (:class:`DescriptionError`).

Parameter keys (deterministic, documented): an ID made only of ASCII letters, digits and ``_`` is its own key
(``J2`` -> ``modules.J2``); any other ID keeps those characters, replaces every other character by ``_`` and
appends ``_`` and the first 8 hex digits of the SHA-1 of the ID (``L-250`` -> ``modules.L_250_<hash>``), so
two different IDs never share a key and the same ID always gets the same key.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from timor_core.common.jsonfields import parse_json_text
from timor_core.common.names import check_plugin, check_prefix
from timor_core.errors import InputError, TimorError
from timor_core.limits import check_count
from timor_core.model.db import ModulesDB
from timor_core.model.module import LIMIT_KEYS, Module

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

__all__ = [
    "MODULE_PARAM_PREFIX",
    "module_param_key",
    "module_param_name",
    "module_to_json_text",
    "module_from_json_text",
    "db_to_parameters",
    "db_from_parameters",
    "db_with_modules",
    "assembly_from_request",
    "RobotDescription",
    "DescriptionError",
    "describe",
    "check_node_settings",
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


def module_to_json_text(module: Module) -> str:
    """A module's CoBRA JSON as compact text with sorted keys (the same module always gives the same text)."""
    return json.dumps(module.to_json(), sort_keys=True, separators=(",", ":"))


def module_from_json_text(text: str, *, base_dir: Path | None = None, where: str = "$") -> Module:
    """Parse and validate one module from its JSON text (FormatError/ValidationError on bad input)."""
    data = parse_json_text(text, what="module JSON", infinity_keys=LIMIT_KEYS)
    return Module.from_json(data, where, base_dir=base_dir)


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


def db_with_modules(db: ModulesDB, updates: Mapping[str, str]) -> tuple[ModulesDB, list[str]]:
    """A copy of ``db`` with modules added or replaced from ``{parameter name: module JSON text}``.

    Every parameter must be named ``modules.<key of the module's ID>``. Returns the new set (existing modules
    keep their place, new ones are appended in the given order) and the IDs that are new.
    Raises InputError naming the parameter on any problem; ``db`` is unchanged.
    """
    modules = {m.id: m for m in db}
    added: list[str] = []
    for pname, text in updates.items():
        if not pname.startswith(MODULE_PARAM_PREFIX):
            raise InputError(f"{pname}: not a module parameter (expected {MODULE_PARAM_PREFIX}<ID>)")
        if not isinstance(text, str):
            raise InputError(f"{pname}: a module parameter must be a string of module JSON", value=text)
        try:
            m = module_from_json_text(text, base_dir=db.base_dir, where="$")
        except InputError as exc:
            raise InputError(f"{pname}: {exc}") from None
        if module_param_name(m.id) != pname:
            raise InputError(
                f"{pname}: holds module {m.id!r}, whose parameter is {module_param_name(m.id)}", value=m.id
            )
        if m.id not in modules:
            added.append(m.id)
        modules[m.id] = m
    new = ModulesDB(
        modules.values(),
        name=db.name,
        ignore_collisions=db.ignore_collisions,
        base_dir=db.base_dir,
        source=db.source,
        extra=db.extra,
    )
    return new, added


def assembly_from_request(db: ModulesDB, modules: Sequence[str] = (), assembly_json: str = "") -> ModuleAssembly:
    """A validated assembly from a request: a serial chain of module IDs, or a full assembly JSON (not both).

    Raises InputError (bad request or JSON) or another TimorError (unknown module, connectors that do not fit,
    a disconnected or closed structure), with a message a user can act on.
    """
    from timor_core.model.assembly import ModuleAssembly

    check_count(len(modules), "max_modules", "the number of module IDs in the request")
    ids = [str(m) for m in modules]
    if not isinstance(assembly_json, str):
        raise InputError("the assembly JSON must be text", value=type(assembly_json).__name__)
    text = assembly_json.strip() if assembly_json else ""
    if ids and text:
        raise InputError("give either module IDs or an assembly JSON, not both")
    if not ids and not text:
        raise InputError("empty request: give module IDs (base first) or an assembly JSON")
    if ids:
        return ModuleAssembly.from_serial_modules(db, ids)
    data: Any = parse_json_text(text, what="assembly JSON")
    return ModuleAssembly.from_json_data(db, data)


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


class DescriptionError(TimorError):
    """Writing a robot description failed; ``step`` says where (``"urdf"`` or ``"srdf"``)."""

    def __init__(self, step: str, message: str) -> None:
        self.step = step
        super().__init__(f"{step}: {message}")


@dataclass(frozen=True)
class RobotDescription:
    """What the ROS side publishes for one assembly."""

    assembly: ModuleAssembly
    urdf: str
    srdf: str | None
    prefix: str = ""

    @property
    def module_ids(self) -> tuple[str, ...]:
        return tuple(self.assembly.module_ids)

    @property
    def assembly_json(self) -> str:
        return json.dumps(self.assembly.to_json_data(), sort_keys=True)


def describe(
    assembly: ModuleAssembly,
    *,
    prefix: str = "",
    name: str | None = None,
    srdf: bool = True,
    srdf_samples: int = 1000,
    seed: int = 0,
    group: str = "manipulator",
    ros2_control_plugin: str | None = None,
) -> RobotDescription:
    """URDF (optionally with a ``<ros2_control>`` block for ``ros2_control_plugin``) and SRDF of an assembly.

    Deterministic: the same assembly and prefix give the same names and text. Raises DescriptionError naming
    the failed step; the SRDF writer (``timor_core.export.srdf``) and the ros2_control block
    (``timor_core.export.ros2_control``) are imported only when used.
    """
    from timor_core.export.urdf import assembly_to_urdf

    try:
        if ros2_control_plugin:
            try:
                from timor_core.export.ros2_control import Ros2ControlConfig
            except ImportError as exc:
                raise DescriptionError("urdf", f"ros2_control support is not available ({exc})") from None
            urdf = assembly_to_urdf(
                assembly, name, prefix=prefix, ros2_control=Ros2ControlConfig(plugin=ros2_control_plugin)
            )
        else:
            urdf = assembly_to_urdf(assembly, name, prefix=prefix)
    except DescriptionError:
        raise
    except (TimorError, ValueError, TypeError) as exc:
        raise DescriptionError("urdf", str(exc)) from None
    srdf_text = None
    if srdf:
        try:
            from timor_core.export.srdf import assembly_to_srdf
        except ImportError as exc:
            raise DescriptionError("srdf", f"the SRDF writer is not available ({exc})") from None
        try:
            srdf_text = assembly_to_srdf(
                assembly, name=name, prefix=prefix, n_samples=srdf_samples, seed=seed, group=group
            )
        except (TimorError, ValueError, TypeError) as exc:
            raise DescriptionError("srdf", str(exc)) from None
    return RobotDescription(assembly, urdf, srdf_text, prefix)
