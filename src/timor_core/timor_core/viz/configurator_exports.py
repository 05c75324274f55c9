"""What the configurator page exports: URDF, xacro, SRDF and the assembly JSON, as downloadable files."""

from __future__ import annotations

import json
from collections.abc import Callable

from timor_core.model.assembly import ModuleAssembly

__all__ = ["EXPORT_LABELS", "export_files"]


def _xacro(assembly: ModuleAssembly) -> str:
    from timor_core.export.formats.xacro import assembly_to_xacro

    return assembly_to_xacro(assembly)


def _srdf(assembly: ModuleAssembly) -> str:
    from timor_core.export.formats.srdf import assembly_to_srdf

    return assembly_to_srdf(assembly)


def _assembly_json(assembly: ModuleAssembly) -> str:
    return json.dumps(assembly.to_json_data(), indent=2) + "\n"


_EXPORTS: dict[str, tuple[str, Callable[[ModuleAssembly], str]]] = {  # label: (file suffix, writer)
    "URDF": ("urdf", lambda a: a.to_urdf()),
    "xacro": ("urdf.xacro", _xacro),
    "SRDF": ("srdf", _srdf),
    "assembly JSON": ("json", _assembly_json),
}

#: Every export the page offers, in button order.
EXPORT_LABELS: tuple[str, ...] = tuple(_EXPORTS)


def export_files(assembly: ModuleAssembly, label: str) -> tuple[str, bytes]:
    """The file name and content of one export (``"URDF"``, ``"xacro"``, ``"SRDF"``, ``"assembly JSON"``)."""
    from timor_core.export.formats.urdf import default_robot_name

    suffix, write = _EXPORTS[label]
    return f"{default_robot_name(assembly)}.{suffix}", write(assembly).encode()
