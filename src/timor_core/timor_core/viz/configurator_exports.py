"""What the configurator page exports: URDF, xacro, SRDF and the assembly JSON, as downloadable files."""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable

from timor_core.model.assembly import ModuleAssembly

__all__ = ["EXPORT_LABELS", "available_exports", "export_files"]


def _xacro(assembly: ModuleAssembly) -> str:
    from timor_core.export.xacro import assembly_to_xacro

    return assembly_to_xacro(assembly)


def _srdf(assembly: ModuleAssembly) -> str:
    from timor_core.export.srdf import assembly_to_srdf

    return assembly_to_srdf(assembly)


def _assembly_json(assembly: ModuleAssembly) -> str:
    return json.dumps(assembly.to_json_data(), indent=2) + "\n"


_EXPORTS: dict[str, tuple[str, Callable[[ModuleAssembly], str], str | None]] = {
    "URDF": ("urdf", lambda a: a.to_urdf(), None),
    "xacro": ("urdf.xacro", _xacro, "timor_core.export.xacro"),
    "SRDF": ("srdf", _srdf, "timor_core.export.srdf"),
    "assembly JSON": ("json", _assembly_json, None),
}

#: Every export the page offers, in button order.
EXPORT_LABELS: tuple[str, ...] = tuple(_EXPORTS)


def available_exports() -> list[str]:
    """Export formats whose writer can be imported (xacro and SRDF are optional modules)."""
    out = []
    for label, (_, _, module) in _EXPORTS.items():
        if module is not None:
            try:
                found = importlib.import_module(module)
            except ImportError:
                continue
            if not hasattr(found, f"assembly_to_{module.rsplit('.', 1)[1]}"):
                continue
        out.append(label)
    return out


def export_files(assembly: ModuleAssembly, label: str) -> tuple[str, bytes]:
    """The file name and content of one export (``"URDF"``, ``"xacro"``, ``"SRDF"``, ``"assembly JSON"``)."""
    from timor_core.export.urdf import default_robot_name

    suffix, write, _ = _EXPORTS[label]
    return f"{default_robot_name(assembly)}.{suffix}", write(assembly).encode()
