"""Resolving many paths below a few folders: each folder's symlinks followed once, for one import or one build.

Resolving a mesh path (``Path.resolve``) walks every folder from the root, one ``lstat`` each, and an import
resolves each mesh several times (the URDF's name, the module set's file, the load): about 200,000 ``lstat`` calls
in the URDF import tests. Within :func:`resolving_paths` the answers are remembered; outside it nothing is.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

__all__ = ["resolving_paths", "resolved", "path_memory"]

_resolutions: ContextVar[dict[object, Path] | None] = ContextVar("timor_resolutions", default=None)


@contextmanager
def resolving_paths() -> Iterator[None]:
    """Within it (one module set's or URDF's import, one robot's build) :func:`resolved` remembers what it found:
    the files are taken not to move meanwhile. Nested uses share the outer one's memory."""
    if _resolutions.get() is not None:
        yield
        return
    token = _resolutions.set({})
    try:
        yield
    finally:
        _resolutions.reset(token)


def path_memory() -> dict[object, Path] | None:
    """The memory of the :func:`resolving_paths` in force (None outside one), for a caller that remembers more
    (the file a mesh name resolves to, by a key of its own: a tuple, where :func:`resolved`'s keys are strings)."""
    return _resolutions.get()


def resolved(path: Path) -> Path:
    """``path.resolve()`` (symlinks and ``..`` followed, a symlink loop a RuntimeError): within
    :func:`resolving_paths` an absolute path is resolved once, as its resolved folder and one ``lstat`` of its
    name, where its name is no symlink; anything else (a symlink, a missing file, an error) by ``path.resolve()``."""
    memo = _resolutions.get()
    if memo is None or not path.is_absolute():
        return path.resolve()
    key = str(path)
    hit = memo.get(key)
    if hit is None:
        hit = memo[key] = _resolved_once(path)
    return hit


def _resolved_once(path: Path) -> Path:
    """``path.resolve()`` of an absolute path, through the remembered resolution of its folder where its name is
    neither ``..`` nor a symlink (the same result: ``realpath`` resolves a path's folder, then its name)."""
    parent = path.parent
    if parent == path or path.name in ("", ".", ".."):
        return path.resolve()
    try:
        folder = resolved(parent)  # resolved, without a loop (Path.resolve checks)
        if not stat.S_ISLNK(os.lstat(folder / path.name).st_mode):
            return folder / path.name
    except (OSError, RuntimeError, ValueError):
        pass  # whatever path.resolve() makes of it, error included
    return path.resolve()
