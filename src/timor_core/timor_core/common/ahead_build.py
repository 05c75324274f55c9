"""Kernels built ahead of time, the building side: numba's ahead-of-time compiler (``numba.pycc``) compiles numba
kernels into an extension module named by :func:`.ahead.module_path`; used by ``kinematics/ik_aot.py`` and
``search/filtering/proof_aot.py`` (``make venv`` and ``make test`` run them). Imports numba: never on a search's path.

Why one place: a build goes to a temporary folder and then replaces its file in one step (a process never loads half
a file), and older builds of the same kernels beside it are removed; both commands take the same options and report
the same way (:func:`build_command`).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Mapping
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

from timor_core.common.ahead import AheadKernels
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

__all__ = ["CC", "Export", "build_command", "build_kernels", "build_module"]

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


def build_kernels(kernels: AheadKernels[Any], folder: Path | None, exports: dict[str, Export], compiler: Any) -> Path:
    """Build ``exports`` into ``kernels``' file in ``folder`` (default its ``AHEAD_FOLDER``) with :func:`build_module`,
    then make ``kernels`` look for it again; the file's path."""
    target = build_module(kernels.path(folder), exports, kernels.what, compiler)
    kernels.forget()
    return target


def build_command(argv: list[str] | None, description: str, kernels: AheadKernels[Any],
                  build: Callable[[Path | None], Path],
                  more: Mapping[str, tuple[str, Callable[[], Path]]] | None = None) -> int:  # fmt: skip
    """A build command: ``--folder`` (default ``kernels``' folder) for ``build``, and a flag per ``more`` entry
    (``--flag``: its help and a build to run after). Prints each built file; exit code 1, each reason on stderr,
    where a build fails."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--folder", type=Path, help=f"where (default {kernels.folder()})")
    for flag, (help_text, _) in (more or {}).items():
        parser.add_argument(flag, action="store_true", help=help_text)
    args = parser.parse_args(argv)
    builds = [lambda: build(args.folder)]
    builds += [make for flag, (_, make) in (more or {}).items() if getattr(args, flag.lstrip("-").replace("-", "_"))]
    code = 0
    for make in builds:
        try:
            print(make())
        except (TimorError, OSError) as exc:
            print(f"timor: {exc}", file=sys.stderr)
            code = 1
    return code
