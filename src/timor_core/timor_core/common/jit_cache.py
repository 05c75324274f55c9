"""numba's on-disk cache for kernels that call into other files: keyed by those files' text too.

Why: numba caches a compiled function in files named by its module and qualified name, and before loading them
checks only that function's own source file (time stamp and size) and bytecode; the compiled functions it calls are
compiled into its machine code. Where one of those lives in another file and changes (``box_bounds.cos_sin`` under
``sweep_bound._collisions``), numba loads the old machine code: stale bounds, as a build once took stale helpers
(s49). :func:`keyed` gives a kernel a qualified name that ends in a digest of the files it calls into: after a
change there numba looks under another name, finds nothing and compiles anew; the old name's files (``.nbi`` and
``.nbc``, ~380 KB a set for ``_collisions``) would be left unread, a full set after each edit, so :func:`keyed` removes
them (:func:`remove_stale`).

numba names a kernel's files by its line too (``<module>.<qualname>-<line>.py311.nbi``): after an edit that moves a
kernel, its old files are never read again, and neither numba nor :func:`remove_stale` removes them; in the
``__pycache__`` of ``kinematics`` 9 of 21 index files were such (2026-11-30). :func:`prune` removes the files whose
index was written for another text of its module (or whose module is gone), in every folder numba may use for the
module's directory, numba's user-wide folder included (:func:`cache_folders`); :func:`keyed` runs it once a process
for each directory whose kernels it keys (those of ``kinematics`` and ``search/filtering``). Nothing here imports
numba before a kernel is keyed or a folder pruned (both on numba's path, where it is loaded).
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import pickle
import re
import types
from collections.abc import Iterable
from pathlib import Path
from typing import Any

__all__ = ["cache_folders", "keyed", "prune", "remove_stale", "sources_digest", "user_wide_folder"]

_CACHE_FILE = re.compile(r"(?P<base>(?P<module>[A-Za-z_]\w*)\..+-\d+\.py\d+[a-z]*)(?:\.nbi|\.\d+\.nbc)")
"""numba's cache file of a kernel: ``<base>.nbi`` (the index) or ``<base>.<n>.nbc`` (data), ``<base>`` being
``<module>.<qualname>-<line>.py<version><abiflags>``."""


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
    _prune_once(os.path.dirname(os.path.abspath(function.__code__.co_filename)))
    return copy


def _subfolder(folder: str) -> str:
    """numba's name for the cache folder of the kernels of ``folder``'s files: ``<its name>_<sha1 of its path>``."""
    return f"{os.path.basename(folder)}_{hashlib.sha1(folder.encode()).hexdigest()}"


def user_wide_folder(source: Path) -> Path:
    """numba's user-wide cache folder for the kernels of the file ``source`` (its ``UserWideCacheLocator``: where
    ``NUMBA_CACHE_DIR`` is unset and the ``__pycache__`` beside the file is not writable, an installed package's):
    ``<the user's cache>/numba/<parent>_<sha1 of its folder>``, ``~/.cache`` or ``XDG_CACHE_HOME`` on Linux."""
    folder = os.path.dirname(os.path.abspath(source))
    appdirs = _caching().AppDirs(appname="numba", appauthor=False)  # (numba's own rule for the folder)
    return Path(appdirs.user_cache_dir) / _subfolder(folder)


def cache_folders(source: Path) -> list[Path]:
    """The folders where numba's on-disk cache keeps the kernels of the file ``source``: ``NUMBA_CACHE_DIR``'s folder
    for it where that is set (numba's ``_UserProvidedCacheLocator``: ``<parent>_<sha1 of its folder>``), the
    ``__pycache__`` beside it (``_InTreeCacheLocator``) and numba's user-wide folder (:func:`user_wide_folder`)."""
    folder = os.path.dirname(os.path.abspath(source))
    folders = [Path(folder) / "__pycache__", user_wide_folder(source)]
    if os.environ.get("NUMBA_CACHE_DIR"):
        folders.insert(0, Path(os.path.abspath(os.environ["NUMBA_CACHE_DIR"])) / _subfolder(folder))
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


def _caching() -> types.ModuleType:
    """numba's on-disk cache module (its folders' rule, its stamps), imported on numba's path only, where numba is
    loaded: importing this module never loads numba."""
    import numba.core.caching

    return numba.core.caching


@functools.cache
def _prune_once(folder: str) -> None:
    prune(Path(folder))


def prune(folder: Path) -> list[Path]:
    """Remove numba's cache files (index and data, :data:`_CACHE_FILE`) of the kernels of ``folder``'s modules whose
    index this numba wrote for another text of the module, or whose module is gone from ``folder``, from every
    :func:`cache_folders` of ``folder``: never read again (numba reads an index only where its stamp, a hash of the
    module's text, is the text's now). Data files without an index go too. An index of another numba version, or one
    that does not read, stays (as everything else there); nothing goes where this numba's stamp is not known. The
    paths removed."""
    hash_source = getattr(_caching(), "_hash_source_file", None)  # numba 0.68: the stamp of a module's text
    if hash_source is None:
        return []
    stamps: dict[str, object] = {}
    removed: list[Path] = []
    for cache in cache_folders(Path(folder) / "__init__.py"):
        try:
            names = [entry.name for entry in os.scandir(cache)]
        except OSError:  # no such folder (nothing cached there yet), or unreadable
            continue
        found = [(m.group("base"), m.group("module"), name) for name in names if (m := _CACHE_FILE.fullmatch(name))]
        indexes = {base for base, _, name in found if name.endswith(".nbi")}
        stale = {base for base, module, name in found if name.endswith(".nbi") and
                 _stale(cache / name, _stamp(Path(folder) / f"{module}.py", stamps, hash_source))}  # fmt: skip
        for base, _, name in found:
            if base in stale or base not in indexes:
                with contextlib.suppress(OSError):  # (another process removed it first, or a read-only folder)
                    os.unlink(cache / name)
                    removed.append(cache / name)
    return removed


def _stamp(source: Path, stamps: dict[str, object], hash_source: Any) -> object:
    """numba's stamp of the module ``source`` as it is now (None where it is gone), made once a prune."""
    key = str(source)
    if key not in stamps:
        try:
            st = os.stat(source)
            stamps[key] = hash_source(key, st.st_mtime, st.st_size)
        except OSError:
            stamps[key] = None
    return stamps[key]


def _stale(index: Path, stamp: object) -> bool:
    """Whether numba's ``index`` (its version, then its pickled stamp and overloads) is this numba's and was written
    for another text of its module than ``stamp`` (None: the module is gone); False where it does not read."""
    try:
        with open(index, "rb") as f:
            if pickle.load(f) != _caching().numba.__version__:
                return False
            written, _ = pickle.loads(f.read())
    except Exception:  # (any error unpickling: a file numba could not read either, not this rule's to remove)
        return False
    return stamp is None or written != stamp
