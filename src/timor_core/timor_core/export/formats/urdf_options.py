"""The options of a robot description export (URDF, xacro, MoveIt, MuJoCo): names and mesh references.

One frozen, validated object instead of the same four keywords in every writer's signature. The writers still
take the keywords (``assembly.to_urdf(name, prefix="left_", mesh_uri="package")``, as the reference toolbox's
users write them): :meth:`UrdfOptions.build` turns them into the object.
"""

from __future__ import annotations

import os
import sys
import warnings
from dataclasses import dataclass, fields, replace
from pathlib import Path
from types import FrameType
from typing import Any

from timor_core.common.fileio import atomic_write_text
from timor_core.common.names import check_name, check_prefix, ros_name
from timor_core.errors import InputError, TimorError

__all__ = [
    "MESH_URI_MODES",
    "WRL_MODES",
    "UrdfOptions",
    "RelativeMeshPaths",
    "warn_relative_meshes",
    "write_description",
]

MESH_URI_MODES = ("file", "package", "relative", "path")
"""How mesh files are referenced: ``file://`` URIs, ``package://<package>/<path in set>``, the path as written in
the module set, or plain absolute paths (what MuJoCo's URDF reader and other non-ROS tools understand)."""
WRL_MODES = ("visual", "keep")
"""What becomes of a VRML (.wrl) convex decomposition: written as the body's visual mesh, or kept."""


@dataclass(frozen=True)
class UrdfOptions:
    """Names and mesh references of an exported robot description; invalid values raise InputError.

    ``prefix`` starts every link and joint name; ``mesh_uri`` is one of :data:`MESH_URI_MODES`; ``package`` is
    the package of ``package://`` URIs (default: the module set's name, ``timor`` if it has none usable);
    ``wrl`` is one of :data:`WRL_MODES`.
    """

    prefix: str = ""
    mesh_uri: str = "file"
    package: str | None = None
    wrl: str = "visual"

    def __post_init__(self) -> None:
        if self.mesh_uri not in MESH_URI_MODES:
            raise InputError(f"mesh_uri must be one of {MESH_URI_MODES}", value=self.mesh_uri)
        if self.wrl not in WRL_MODES:
            raise InputError(f"wrl must be one of {WRL_MODES}", value=self.wrl)
        if self.package is not None:
            check_name(self.package, "package name")
        check_prefix(self.prefix)
        object.__setattr__(self, "_hash", hash((self.prefix, self.mesh_uri, self.package, self.wrl)))

    def __hash__(self) -> int:  # computed once: the options key the writer's caches
        return self._hash  # type: ignore[attr-defined,no-any-return]

    @classmethod
    def build(cls, options: UrdfOptions | None = None, **overrides: Any) -> UrdfOptions:
        """``options`` (default: all defaults) with the keyword ``overrides`` applied; unknown keywords raise."""
        if not overrides and type(options) is UrdfOptions:
            return options
        try:
            key = (options, *overrides.items())
            found = _BUILT.get(key)
        except TypeError:  # an unhashable value: not cached (and refused below)
            key, found = None, None
        if found is None:
            found = cls._build(options, overrides)
            if key is not None:
                if len(_BUILT) > 256:
                    _BUILT.clear()
                _BUILT[key] = found
        return found

    @classmethod
    def _build(cls, options: UrdfOptions | None, overrides: dict[str, Any]) -> UrdfOptions:
        unknown = sorted(set(overrides) - {f.name for f in fields(cls)})
        if unknown:
            raise InputError(f"unknown URDF option(s): {', '.join(unknown)}", value=unknown)
        if options is None:
            return cls(**overrides)
        if not isinstance(options, UrdfOptions):
            raise InputError("options must be a UrdfOptions", value=options)
        return replace(options, **overrides) if overrides else options

    def package_for(self, set_name: str) -> str:
        """The package of ``package://`` URIs for a module set named ``set_name``."""
        return self.package if self.package is not None else (ros_name(set_name) or "timor")


_BUILT: dict[tuple, UrdfOptions] = {}  # options built from keywords, by (options, keywords): calls repeat them


class RelativeMeshPaths(TimorError, UserWarning):  # noqa: N818 - a warning, never raised
    """A description written with ``mesh_uri="relative"`` into another ``folder`` than its module set's: its
    ``count`` mesh paths are relative to the set's folder ``set_folder``, so a reader looking beside the file finds
    none of them. Issued as a warning (the file is written all the same), never raised."""

    def __init__(self, count: int, set_folder: str, folder: str) -> None:
        self.count, self.set_folder, self.folder = count, set_folder, folder
        super().__init__(
            f"mesh_uri='relative': the {count} mesh path(s) are relative to the module set's folder {set_folder}, "
            f"not to {folder}: write the file there, or use mesh_uri 'file', 'package' or 'path'"
        )


def warn_relative_meshes(assembly: Any, options: UrdfOptions, folder: str | Path) -> None:
    """Issue one :class:`RelativeMeshPaths` warning if a description of ``assembly`` written with ``options`` into
    ``folder`` names its meshes relative to another folder (the module set's); every writer of a file calls it.
    Meshes the set names by an absolute path or a ``file://`` URI are written so and found from anywhere: no warning
    for them."""
    if options.mesh_uri != "relative" or assembly.db.base_dir is None:
        return
    shapes = (g for m in assembly.modules for b in m.bodies for g in (*b.visual, *b.collision))
    used = {g.file for g in shapes if hasattr(g, "file") and "://" not in g.file and not os.path.isabs(g.file)}
    base = os.path.realpath(assembly.db.base_dir)
    if used and os.path.realpath(folder) != base:
        warnings.warn(RelativeMeshPaths(len(used), base, str(folder)), stacklevel=_callers_level())


def write_description(text: str, path: str | Path, assembly: Any, options: UrdfOptions) -> str:
    """Write a description's ``text`` to ``path`` atomically (``atomic_write_text`` makes its folder, a folder it
    cannot make an InputError naming ``path``), warn as :func:`warn_relative_meshes` says; return ``text``."""
    path = Path(path)
    atomic_write_text(path, text)
    warn_relative_meshes(assembly, options, path.parent)
    return text


def _callers_level() -> int:
    """The ``stacklevel`` of the first frame outside timor_core: the warning names the user's line that wrote."""
    frame: FrameType | None = sys._getframe(2)  # 1: warn_relative_meshes
    level = 2
    while frame is not None and frame.f_globals.get("__name__", "").startswith("timor_core."):
        frame, level = frame.f_back, level + 1
    return level
