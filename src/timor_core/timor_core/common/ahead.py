"""Kernels built ahead of time, the loading side: numba's ahead-of-time compiler (``numba.pycc``, driven by
:mod:`.ahead_build`) makes an extension module of numba kernels that imports in under a millisecond without numba;
the IK's (``kinematics/ik_aot.py``) and the reach proofs' (``search/filtering/proof_aot.py``) are found and loaded here,
each set by one :class:`AheadKernels` (``ik_kernel.AHEAD``, ``proof_kernel.AHEAD``).

Why one place: the module's name hashes its sources, numpy's version and Python's, so a stale build is never loaded;
a file that does not load (or lacks a kernel) gives one warning and None, once per process (until
:meth:`AheadKernels.forget`), and the caller runs numba's kernels by the rule of :mod:`.compiled`. Nothing here
imports numba.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Iterable, Sequence
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType
from typing import Generic, TypeVar

import numpy as np

__all__ = ["IGNORE", "AheadKernels", "load_module", "module_path"]

logger = logging.getLogger(__name__)

IGNORE = "TIMOR_AHEAD"
"""Environment variable: ``0`` ignores every build (numba's kernels by the rule, as without one: for the tests of
what a process does on a fresh install whose build failed); else builds are used where :mod:`.compiled` allows."""


def module_path(folder: Path, prefix: str, sources: Iterable[Path], numpy_version: str) -> Path:
    """The file in ``folder`` of the module ``prefix`` built from ``sources`` for this numpy and Python."""
    digest = hashlib.sha256(f"{sys.implementation.cache_tag} numpy {numpy_version}".encode())
    for source in sources:
        digest.update(Path(source).read_bytes())
    return Path(folder) / f"{prefix}_{digest.hexdigest()[:16]}{EXTENSION_SUFFIXES[0]}"


def load_module(path: Path, what: str, names: Iterable[str]) -> ModuleType | None:
    """The module built at ``path``, or None where there is none, or it does not load or lacks one of ``names`` (one
    warning naming ``what``: numba's kernels then run by the rule); None too where ``TIMOR_AHEAD=0``."""
    if os.environ.get(IGNORE, "").strip() == "0" or not path.is_file():
        return None
    try:
        spec = importlib.util.spec_from_file_location(path.name.split(".")[0], path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        for name in names:
            getattr(module, name)
    except (ImportError, OSError, AttributeError) as exc:
        logger.warning("the %s built ahead of time in %s do not load (%s): numba's run by the rule", what, path, exc)
        return None
    return module


K = TypeVar("K")


class AheadKernels(Generic[K]):
    """One set of kernels built ahead of time: the file its build has for the sources, numpy and Python as they are,
    and its kernels (``wrap`` of the loaded module) once looked for, kept until :meth:`forget`."""

    def __init__(self, prefix: str, what: str, sources: Sequence[Path], folder: Callable[[], Path],
                 names: Sequence[str], wrap: Callable[[ModuleType], K]) -> None:  # fmt: skip
        """``prefix`` names the module (``prefix_<hash>``), ``what`` the kernels in messages; ``sources`` are the
        files whose text the name hashes; ``folder()`` is where builds go now (the owner's ``AHEAD_FOLDER``, read at
        each call); a module lacking one of ``names`` is not used."""
        self.prefix, self.what, self.sources, self.folder = prefix, what, tuple(sources), folder
        self.names, self.wrap = tuple(names), wrap
        self.looked = False
        self.kernels: K | None = None

    def path(self, folder: Path | None = None) -> Path:
        """The file of the kernels built ahead of time for the sources, numpy and Python as they are now, in
        ``folder`` (default: the owner's ``AHEAD_FOLDER`` as it is now)."""
        folder = self.folder() if folder is None else Path(folder)
        return module_path(folder, self.prefix, self.sources, np.__version__)

    def get(self) -> K | None:
        """The kernels built ahead of time for the sources as they are, loaded on the first call, or None where none
        are built (or they do not load: one warning), or where ``TIMOR_AHEAD=0``."""
        if not self.looked:
            self.looked = True
            module = load_module(self.path(), self.what, self.names)
            self.kernels = None if module is None else self.wrap(module)
        return self.kernels

    def forget(self) -> None:
        """Look for the build again on the next :meth:`get` (after ``AHEAD_FOLDER`` changed, or a build)."""
        self.looked, self.kernels = False, None
