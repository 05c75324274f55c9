"""Kernels built ahead of time, the building side: numba's ahead-of-time compiler (``numba.pycc``) compiles numba
kernels into an extension module named by :func:`.ahead.module_path`; used by ``kinematics/ik_aot.py`` and
``search/filtering/proof_aot.py`` (``make venv`` and ``make test`` run them). Imports numba: never on a search's path.

Why one place: a build goes to a temporary folder and then replaces its file in one step (a process never loads half
a file), and older builds of the same kernels beside it are removed.
"""

from __future__ import annotations

import os
import tempfile
import warnings
from collections.abc import Callable
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

from timor_core.errors import TimorError

CC: Any = None
"""numba's ahead-of-time compiler class, None where this numba has none (pending deprecation in numba)."""
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc is pending deprecation (numba 0.57 on; still there in 0.68)
        from numba import pycc

    CC = pycc.CC
except ImportError:  # a numba without it: build_module() says so
    pass

__all__ = ["CC", "Export", "build_module"]

Export = tuple[Callable[..., Any], str]
"""A kernel to build: its Python function (a numba kernel's ``py_func``, or a plain function) and its one signature."""


def build_module(target: Path, exports: dict[str, Export], what: str, compiler: Any) -> Path:
    """Build ``exports`` with ``compiler`` (:data:`CC`) into ``target`` (:func:`.ahead.module_path`) unless it is
    there, then remove older builds of the same prefix beside it; ``target``. A TimorError naming ``what`` where this
    numba has no such compiler or compiling fails."""
    if target.is_file():
        return target
    if compiler is None:
        raise TimorError(f"this numba has no ahead-of-time compiler (numba.pycc): numba's {what} run by the rule")
    target.parent.mkdir(parents=True, exist_ok=True)
    name = target.name.split(".")[0]
    prefix = name.rsplit("_", 1)[0]
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{prefix}_build_") as tmp:
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
    for old in target.parent.glob(f"{prefix}_*{EXTENSION_SUFFIXES[0]}"):  # older sources' builds, this Python's
        if old != target:
            old.unlink(missing_ok=True)
    return target
