"""Robot descriptions of assemblies, as a ROS side publishes them: the assembly of serial module IDs or assembly
JSON text (``assembly_from_ids_or_json``), its URDF (optionally with a ``<ros2_control>`` block) and SRDF
(``describe``, every failure a ``DescriptionError`` naming the step); and a module set's modules as JSON text, one
module at a time (``module_to_json_text``, ``module_from_json_text``, ``db_with_modules``).

Pure model and export operations, no ROS: timor_ros's nodes (``timor_ros.parameters`` keeps the parameter
naming) serve them.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from timor_core.common.jsonfields import parse_json_text
from timor_core.common.names import check_tf_frames
from timor_core.errors import InputError, TimorError
from timor_core.limits import check_count
from timor_core.model.db import ModulesDB
from timor_core.model.module import LIMIT_KEYS, Module

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

__all__ = [
    "DescriptionError",
    "RobotDescription",
    "assembly_from_ids_or_json",
    "db_with_modules",
    "describe",
    "module_from_json_text",
    "module_to_json_text",
]


def module_to_json_text(module: Module) -> str:
    """A module's CoBRA JSON as compact text with sorted keys (the same module always gives the same text)."""
    return json.dumps(module.to_json(), sort_keys=True, separators=(",", ":"))


def module_from_json_text(text: str, *, base_dir: Path | None = None, where: str = "$") -> Module:
    """Parse and validate one module from its JSON text (FormatError/ValidationError on bad input)."""
    data = parse_json_text(text, what="module JSON", infinity_keys=LIMIT_KEYS)
    return Module.from_json(data, where, base_dir=base_dir)


def db_with_modules(db: ModulesDB, modules: Iterable[Module]) -> tuple[ModulesDB, list[str]]:
    """A copy of ``db`` with ``modules`` added or replaced (by ID): existing modules keep their place, new ones are
    appended in the given order. Returns the new set and the IDs that are new; ``db`` is unchanged."""
    by_id = {m.id: m for m in db}
    added: list[str] = []
    for m in modules:
        if m.id not in by_id:
            added.append(m.id)
        by_id[m.id] = m
    new = ModulesDB(
        by_id.values(),
        name=db.name,
        ignore_collisions=db.ignore_collisions,
        base_dir=db.base_dir,
        source=db.source,
        extra=db.extra,
    )
    return new, added


def assembly_from_ids_or_json(db: ModulesDB, modules: Sequence[str] = (), assembly_json: str = "") -> ModuleAssembly:
    """A validated assembly: a serial chain of module IDs (base first), or a full assembly JSON text (not both).

    Raises InputError (bad IDs or JSON) or another TimorError (unknown module, connectors that do not fit, a
    disconnected or closed structure), with a message a user can act on.
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


class DescriptionError(TimorError):
    """Writing a robot description failed; ``step`` says where (``"urdf"`` or ``"srdf"``)."""

    def __init__(self, step: str, message: str) -> None:
        self.step = step
        super().__init__(f"{step}: {message}")


@dataclass(frozen=True)
class RobotDescription:
    """The URDF and SRDF of one assembly."""

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
    """URDF (with a ``<ros2_control>`` block for ``ros2_control_plugin``, if given) and SRDF of an assembly.

    Deterministic: the same assembly and prefix give the same names and text. Raises DescriptionError naming
    the failed step.
    """
    from timor_core.export.formats.ros2_control import Ros2ControlConfig
    from timor_core.export.formats.srdf import assembly_to_srdf
    from timor_core.export.formats.urdf import assembly_to_urdf

    try:
        control = Ros2ControlConfig(plugin=ros2_control_plugin) if ros2_control_plugin else None
        urdf = assembly_to_urdf(assembly, name, prefix=prefix, ros2_control=control)
        check_tf_frames(link.name for link in assembly.tree(prefix).links)  # the ROS side publishes it as TF
    except (TimorError, ValueError, TypeError) as exc:
        raise DescriptionError("urdf", str(exc)) from None
    srdf_text = None
    if srdf:
        try:
            srdf_text = assembly_to_srdf(
                assembly, name=name, prefix=prefix, n_samples=srdf_samples, seed=seed, group=group
            )
        except (TimorError, ValueError, TypeError) as exc:
            raise DescriptionError("srdf", str(exc)) from None
    return RobotDescription(assembly, urdf, srdf_text, prefix)
