"""numba's on-disk cache for kernels that call into other files: keyed by those files' text too.

Why: numba caches a compiled function in files named by its module and qualified name, and before loading them
checks only that function's own source file (time stamp and size) and bytecode; the compiled functions it calls are
compiled into its machine code. Where one of those lives in another file and changes (``box_bounds.cos_sin`` under
``sweep_bound._collisions``), numba loads the old machine code: stale bounds, as a build once took stale helpers
(s49). :func:`keyed` gives a kernel a qualified name that ends in a digest of the files it calls into: after a
change there numba looks under another name, finds nothing and compiles anew; the old name's files (``.nbi`` and
``.nbc``, ~380 KB a set for ``_collisions``) would be left unread, a full set after each edit, so :func:`keyed` removes
them (:func:`remove_stale`). Nothing here imports numba.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import types
from collections.abc import Iterable
from pathlib import Path

__all__ = ["cache_folders", "keyed", "remove_stale", "sources_digest"]


def sources_digest(sources: Iterable[Path]) -> str:
    """12 hex digits of a hash of the files' text, in the order given."""
    digest = hashlib.sha256()
    for source in sources:
        digest.update(Path(source).read_bytes())
    return digest.hexdigest()[:12]


def keyed(function: types.FunctionType, sources: Iterable[Path]) -> types.FunctionType:
    """A copy of ``function`` (the same code, globals, defaults and closure) whose qualified name ends in
    :func:`sources_digest` of ``sources`` (the files of the kernels it calls): what to give numba's ``njit(cache=True)``
    so that its cache is never read after one of those files changed."""
    copy = types.FunctionType(
        function.__code__, function.__globals__, function.__name__, function.__defaults__, function.__closure__
    )
    copy.__kwdefaults__, copy.__doc__ = function.__kwdefaults__, function.__doc__
    digest = sources_digest(sources)
    copy.__qualname__ = f"{function.__qualname__}_{digest}"
    remove_stale(function, digest)
    return copy


def cache_folders(source: Path) -> list[Path]:
    """The folders where numba's on-disk cache keeps the kernels of the file ``source``: ``NUMBA_CACHE_DIR``'s folder
    for it where that is set (numba's ``_UserProvidedCacheLocator``: ``<parent>_<sha1 of its folder>``), and the
    ``__pycache__`` beside it (``_InTreeCacheLocator``). numba's user-wide folder (where neither is writable) is not
    listed: its files are left."""
    folder = os.path.dirname(os.path.abspath(source))
    folders = [Path(folder) / "__pycache__"]
    if os.environ.get("NUMBA_CACHE_DIR"):
        sub = f"{os.path.basename(folder)}_{hashlib.sha1(folder.encode()).hexdigest()}"
        folders.insert(0, Path(os.path.abspath(os.environ["NUMBA_CACHE_DIR"])) / sub)
    return folders


def remove_stale(function: types.FunctionType, digest: str) -> list[Path]:
    """Remove numba's cache files of ``function`` keyed by another digest than ``digest``
    (``<module>.<qualname>_<12 hex digits>-<line>.py<version>[.<n>].nb[ic]`` in :func:`cache_folders`, named as numba
    names them): a keyed kernel's files after an edit of the files it calls into, never read again. Files of other
    kernels, of other modules and this digest's stay; the paths removed (none where a folder is missing)."""
    source = function.__code__.co_filename
    module = os.path.splitext(os.path.basename(source))[0]
    qualname = function.__qualname__.replace("<", "").replace(">", "")
    stale = re.compile(re.escape(f"{module}.{qualname}_") + r"([0-9a-f]{12})-\d+\.py\d+[^/]*\.nb[ic]")
    removed: list[Path] = []
    for folder in cache_folders(Path(source)):
        try:
            entries = list(os.scandir(folder))
        except OSError:  # no such folder (nothing cached there yet), or unreadable
            continue
        for entry in entries:
            match = stale.fullmatch(entry.name)
            if match and match.group(1) != digest:
                with contextlib.suppress(OSError):  # (another process removed it first, or a read-only folder)
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    return removed
