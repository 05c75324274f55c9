"""Visualization of robots, tasks and solutions: a viser browser viewer, offscreen video, catalogues and plots.

Needs the ``viz`` extra (``pip install timor_core[viz]``); importing :mod:`timor_core` alone never imports it.
Submodules: :mod:`.shapes` (geometry to triangle meshes), :mod:`.scene` (viser scene nodes), :mod:`.viewer`
(the viewer and animations), :mod:`.render` and :mod:`.video` (offscreen frames and MP4), :mod:`.catalogue`
(module sets), :mod:`.plots` (matplotlib figures of searches and trajectories).
"""

from __future__ import annotations

import importlib

from timor_core.errors import TimorError

__all__ = ["VizError", "require"]


class VizError(TimorError):
    """A visualization cannot be shown or written (missing optional package, port in use, no browser, ...)."""


def require(module: str, extra: str = "viz"):
    """Import an optional dependency, or raise VizError naming the extra that provides it."""

    try:
        return importlib.import_module(module)
    except ImportError:
        raise VizError(f"{module} is not installed: pip install 'timor_core[{extra}]'") from None
