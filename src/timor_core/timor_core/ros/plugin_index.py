"""Where pluginlib finds a plugin class: the shared library named by the plugin description the ament index lists.

Why: a controller manager loads each controller's library (``dlopen``) the first time the controller is loaded,
on the critical path of a swap (~10 ms for joint_trajectory_controller on this machine). The standby of
:mod:`.controller_swap` is started with these libraries preloaded, so that the loads only create the controllers.
The ament index is plain files (``<prefix>/share/ament_index/resource_index/<base>__pluginlib__plugin/<package>``,
whose lines name the package's plugin description XML relative to the prefix), read here without ROS.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from pathlib import Path

__all__ = ["PLUGIN_BASES", "ament_prefixes", "plugin_libraries"]

PLUGIN_BASES = ("controller_interface", "hardware_interface")
"""The base packages whose plugins a controller manager loads: controllers and hardware components."""


def ament_prefixes() -> list[Path]:
    """The install prefixes of ``AMENT_PREFIX_PATH``, first one first (the first prefix listing a package wins)."""
    return [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]


def plugin_libraries(
    classes: Iterable[str], prefixes: Sequence[Path] | None = None, bases: Sequence[str] = PLUGIN_BASES
) -> list[Path]:
    """The shared libraries defining the pluginlib ``classes`` (``package/Class`` names), in the order of
    ``classes``, each once; a class no plugin description names, or whose library file is missing, is left out
    (the manager will report it when it loads the class)."""
    found = _class_libraries(ament_prefixes() if prefixes is None else prefixes, bases)
    out: list[Path] = []
    for name in classes:
        library = found.get(name)
        if library is not None and library not in out:
            out.append(library)
    return out


def _class_libraries(prefixes: Sequence[Path], bases: Sequence[str]) -> dict[str, Path]:
    """Every class of the plugin descriptions of ``bases`` in ``prefixes`` -> its library file."""
    found: dict[str, Path] = {}
    seen: set[tuple[str, str]] = set()
    for prefix in prefixes:
        for base in bases:
            index = prefix / "share" / "ament_index" / "resource_index" / f"{base}__pluginlib__plugin"
            for marker in sorted(index.glob("*")) if index.is_dir() else ():
                if (base, marker.name) in seen:  # an earlier prefix's package shadows this one
                    continue
                seen.add((base, marker.name))
                try:
                    lines = marker.read_text(errors="replace").splitlines()
                except OSError:  # unreadable: its package's plugins are left out, as a missing description
                    continue
                for line in lines:
                    if line.strip():
                        for name, library in _description(prefix, prefix / line.strip()):
                            found.setdefault(name, library)
    return found


def _description(prefix: Path, xml: Path) -> list[tuple[str, Path]]:
    """(class name, library file) of one plugin description; nothing if it is unreadable."""
    try:
        root = ET.parse(xml).getroot()
    except (OSError, ET.ParseError):
        return []
    out = []
    for library in [root] if root.tag == "library" else root.iter("library"):
        path = library.get("path")
        if not path:
            continue
        candidate = Path(path) if Path(path).is_absolute() else prefix / "lib" / f"lib{path}.so"
        if not candidate.is_file():
            continue
        for cls in library.iter("class"):
            name = cls.get("name") or cls.get("type")
            if name:
                out.append((name, candidate))
    return out
