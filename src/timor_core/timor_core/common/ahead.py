"""Kernels built ahead of time: numba's ahead-of-time compiler (``numba.pycc``) makes an extension module of numba
kernels that imports in under a millisecond without numba; shared by the IK's (``kinematics/ik_aot.py``) and the reach
proofs' (``search/filtering/proof_aot.py``) builds.

Why one place: the module's name hashes its sources, numpy's version and Python's (a stale build is never loaded),
a build goes to a temporary folder and then replaces its file in one step (a process never loads half a file),
older builds of the same kernels are removed, and a file that does not load gives one warning and None (the caller
runs numba's kernels by the rule of :mod:`.compiled`). numba is imported only to build, never to load.
"""

from __future__ import annotations

import hashlib
import importlib.util
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterable
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType
from typing import Any

from timor_core.errors import TimorError

__all__ = ["Export", "build_module", "load_module", "module_path", "pycc_compiler"]

logger = logging.getLogger(__name__)

Export = tuple[Callable[..., Any], str]
"""A kernel to build: its Python function (a numba kernel's ``py_func``, or a plain function) and its one signature."""


def module_path(folder: Path, prefix: str, sources: Iterable[Path]) -> Path:
    """The file in ``folder`` of the module ``prefix`` built from ``sources`` for the numpy and Python of now."""
    import numpy as np  # noqa: PLC0415 (numpy's version only; the callers have it loaded)

    digest = hashlib.sha256(f"{sys.implementation.cache_tag} numpy {np.__version__}".encode())
    for source in sources:
        digest.update(Path(source).read_bytes())
    return Path(folder) / f"{prefix}_{digest.hexdigest()[:16]}{EXTENSION_SUFFIXES[0]}"


def pycc_compiler() -> Any:
    """numba's ahead-of-time compiler class (``numba.pycc.CC``), or None where this numba has none (or no numba)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # numba.pycc is pending deprecation (numba 0.57 on; still there in 0.68)
            from numba import pycc  # noqa: PLC0415 (building only: loading a build never imports numba)
    except ImportError:
        return None
    return pycc.CC


def build_module(target: Path, exports: dict[str, Export], what: str, compiler: Any) -> Path:
    """Build ``exports`` with ``compiler`` (:func:`pycc_compiler`) into ``target`` (:func:`module_path`) unless it is
    there, then remove older builds of the same prefix beside it; ``target``. A TimorError naming ``what`` where this
    numba has no such compiler or compiling fails."""
    if target.is_file():
        return target
    if compiler is None:
        raise TimorError(f"this numba has no ahead-of-time compiler (numba.pycc): numba's {what} run by the rule")
    target.parent.mkdir(parents=True, exist_ok=True)
    name = target.name.split(".")[0]
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{name.rsplit('_', 1)[0]}_build_") as tmp:
        cc = compiler(name)
        cc.output_dir = tmp
        for export, (kernel, signature) in exports.items():
            cc.export(export, signature)(kernel)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # numba.pycc's pending deprecation
                cc.compile()
        except Exception as exc:  # distutils' CompileError, LinkError, OSError, numba's errors
            raise TimorError(f"building the {what} ahead of time failed ({type(exc).__name__}: {exc})") from exc
        built = next(Path(tmp).glob(f"{name}.*"))
        os.replace(built, target)  # whole or not at all: a process never loads half a file
    prefix = name.rsplit("_", 1)[0]
    for old in target.parent.glob(f"{prefix}_*{EXTENSION_SUFFIXES[0]}"):  # older sources' builds, this Python's
        if old != target:
            old.unlink(missing_ok=True)
    return target


def load_module(path: Path, what: str, names: Iterable[str]) -> ModuleType | None:
    """The module built at ``path``, or None where there is none, or it does not load or lacks one of ``names`` (one
    warning naming ``what``: numba's kernels then run by the rule)."""
    if not path.is_file():
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
