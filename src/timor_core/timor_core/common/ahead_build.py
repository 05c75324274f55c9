"""Kernels built ahead of time, the building side: numba's ahead-of-time compiler (``numba.pycc``) compiles numba
kernels into an extension module named by :func:`.ahead.module_path`; used by ``kinematics/ik_aot.py`` and
``search/filtering/proof_aot.py`` (``make venv`` and ``make test`` run them). Imports numba: never on a search's path.

Why one place: a build goes to a temporary folder and then replaces its file in one step (a process never loads half
a file), and builds of older sources beside it are removed (builds of the same sources for other CPUs are kept: a
shared folder); a build is for this machine's CPU as numba's JIT compiles for it (:func:`host_features`), named by the
CPU (:func:`.ahead.host_cpu`), unless it is asked for any CPU (``--generic``: a wheel, an image run elsewhere); both
commands take the same options and report the same way (:func:`build_command`).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import Any

from timor_core.common.ahead import AheadKernels, cpu_flags, host_cpu
from timor_core.errors import TimorError

logger = logging.getLogger(__name__)

CC: Any = None
"""numba's ahead-of-time compiler class, None where this numba has none (pending deprecation in numba)."""
try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # numba.pycc is pending deprecation (numba 0.57 on; still there in 0.68)
        from numba import pycc

    CC = pycc.CC
except ImportError:  # a numba without it: build_module() says so
    pass
CODEGEN: Any = None
"""numba's code generators (``numba.core.codegen``: :func:`host_features` sets a hook there), None without them."""
try:
    from numba.core import codegen

    CODEGEN = codegen
except ImportError:  # builds are then for any CPU (can_target_host)
    pass

__all__ = [
    "CC",
    "VECTOR_FEATURES",
    "Export",
    "build_command",
    "build_kernels",
    "build_module",
    "can_target_host",
    "host_features",
    "unvouched_features",
    "vouched_features",
]

Export = tuple[Callable[..., Any], str]
"""A kernel to build: its Python function (a numba kernel's ``py_func``, or a plain function) and its one signature."""


def _prefix_and_sources(name: str) -> tuple[str, str]:
    """A build's module name (``prefix_<sources>[_<cpu>]``) split: its prefix and its sources' hash."""
    parts = name.split("_")
    at = next((i for i, part in enumerate(parts) if i and len(part) == 16), len(parts) - 1)
    return "_".join(parts[:at]), parts[at]


def can_target_host() -> bool:
    """Whether builds can be for this machine's CPU: the CPU has a name (:func:`.ahead.host_cpu`: Linux on x86-64),
    this numba has the hook :func:`host_features` sets, and neither ``NUMBA_CPU_NAME`` nor ``NUMBA_CPU_FEATURES`` is
    set (numba would build for what they say, which the build's name, the CPU's, would not tell). A vector feature
    numba would use that ``/proc/cpuinfo`` does not list is left out of the build (:func:`vouched_features`)."""
    codegen, hook = CODEGEN, "_customize_tm_features"
    if any(os.environ.get(v) is not None for v in ("NUMBA_CPU_NAME", "NUMBA_CPU_FEATURES")):
        return False
    return host_cpu() is not None and all(
        hasattr(getattr(codegen, c, None), hook) for c in ("AOTCPUCodegen", "JITCPUCodegen")
    )


VECTOR_FEATURES = ("avx", "sse", "ssse", "fma", "f16c", "bmi", "popcnt", "lzcnt", "gfni")
"""The starts of LLVM's names of the features a build for the host may use that change the instructions of our
kernels (vector and bit-manipulation extensions); each not among ``/proc/cpuinfo``'s flags, which name the build, is
left out of a build for the host (:func:`vouched_features`)."""


def unvouched_features(features: str, flags: frozenset[str]) -> list[str]:
    """The features LLVM turns on (``features``: ``"+avx2,-avx512f,..."``, numba's JIT's list) that start as one of
    :data:`VECTOR_FEATURES` and that ``flags`` (``/proc/cpuinfo``'s) do not list under any of their names there
    (``sse4.2`` is ``sse4_2``, ``avx512vnni`` ``avx512_vnni``, ``sse3`` ``pni``, ``bmi`` ``bmi1``, ``avxvnni``
    ``avx_vnni``, ``lzcnt`` ``abm``). Were one in a build named by ``/proc/cpuinfo``, it could carry instructions
    another machine of the same ``/proc/cpuinfo`` (a virtual machine hiding them) does not run: a build for the host
    leaves them out."""
    out = []
    for item in features.split(","):
        name = item.strip()[1:]
        if not item.strip().startswith("+") or not name.startswith(VECTOR_FEATURES):
            continue
        names = {
            name,
            name.replace(".", "_"),
            {"sse3": "pni", "bmi": "bmi1", "avxvnni": "avx_vnni", "lzcnt": "abm"}.get(name, name),
        }
        if name.startswith("avx512"):
            names.add("avx512_" + name[6:])
        if not names & flags:
            out.append(name)
    return out


def vouched_features(features: str, flags: frozenset[str]) -> str:
    """``features`` (LLVM's list) with each of :func:`unvouched_features` turned off, those last (LLVM reads the list
    in order: a feature on after them that implies one would turn it on again): what a build named by
    ``/proc/cpuinfo`` may use. Linux lists some features under no name at all (``avxvnniint8``, ``avxneconvert``,
    ``avxifma``, ``avx10.1``: Arrow Lake, Lunar Lake, Sierra Forest, Granite Rapids), so these are left out rather
    than the whole build made for any CPU."""
    off = unvouched_features(features, flags)
    kept = [item.strip() for item in features.split(",") if item.strip() and item.strip()[1:] not in off]
    return ",".join(kept + [f"-{name}" for name in off])


@contextlib.contextmanager
def host_features() -> Iterator[None]:
    """While open, numba's ahead-of-time compiler takes the features numba's JIT uses on this machine (its
    ``_get_host_cpu_features``; the CPU's model alone, ``target_cpu``, would imply features a virtual machine may
    hide) less those ``/proc/cpuinfo`` does not list (:func:`vouched_features`: the build's name vouches only for
    them), so a build for the host uses no instruction numba's JIT would not (where :func:`can_target_host`)."""
    aot = CODEGEN.AOTCPUCodegen
    hook = "_customize_tm_features"
    default = aot.__dict__.get(hook)
    jit = getattr(CODEGEN.JITCPUCodegen, hook)

    def vouched(codegen: Any) -> str:
        features, flags = jit(codegen), cpu_flags()
        unvouched = unvouched_features(features, flags)
        if unvouched:
            logger.info("numba would build for %s, which /proc/cpuinfo does not list: built without", unvouched)
        return vouched_features(features, flags)

    setattr(aot, hook, vouched)
    try:
        yield
    finally:
        if default is None:
            delattr(aot, hook)
        else:
            setattr(aot, hook, default)


def build_module(target: Path, exports: dict[str, Export], what: str, compiler: Any, host: bool = False) -> Path:
    """Build ``exports`` with ``compiler`` (:data:`CC`) into ``target`` (:func:`.ahead.module_path`) unless it is
    there, for this machine's CPU where ``host`` (``target``'s name ends in ``_<cpu>``, :func:`.ahead.host_cpu`;
    :func:`can_target_host` holds), else for any CPU of the architecture, then remove builds of older sources of the
    same prefix beside it; ``target``. A TimorError where ``host`` and ``target`` is not named by this CPU (a build
    under another CPU's name or the generic one would be loaded where it may not run), or naming ``what`` where this
    numba has no such compiler or compiling fails."""
    name = target.name.split(".")[0]
    if host and (host_cpu() is None or not name.endswith(f"_{host_cpu()}")):
        raise TimorError(f"a build of the {what} for this CPU must be named by it (_{host_cpu()}): not {target.name}")
    if target.is_file():
        return target
    if compiler is None:
        raise TimorError(f"this numba has no ahead-of-time compiler (numba.pycc): numba's {what} run by the rule")
    target.parent.mkdir(parents=True, exist_ok=True)
    prefix, sources = _prefix_and_sources(name)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=f".{prefix}_build_") as tmp:
        cc = compiler(name)
        cc.output_dir = tmp
        cc.target_cpu = "host" if host else ""  # (numba's default: the architecture's generic CPU, no features)
        for export, (kernel, signature) in exports.items():
            cc.export(export, signature)(kernel)
        try:
            with warnings.catch_warnings(), host_features() if host else contextlib.nullcontext():
                warnings.simplefilter("ignore")  # numba.pycc's pending deprecation
                cc.compile()
        except Exception as exc:  # distutils' CompileError, LinkError, OSError, numba's errors
            raise TimorError(f"building the {what} ahead of time failed ({type(exc).__name__}: {exc})") from exc
        built = next(Path(tmp).glob(f"{name}.*"))
        os.replace(built, target)  # whole or not at all: a process never loads half a file
    for old in target.parent.glob(f"{prefix}_*{EXTENSION_SUFFIXES[0]}"):  # older sources' builds, this Python's
        if _prefix_and_sources(old.name.split(".")[0]) != (prefix, sources):
            old.unlink(missing_ok=True)
    return target


def build_kernels(kernels: AheadKernels[Any], folder: Path | None, exports: dict[str, Export], compiler: Any,
                  generic: bool = False) -> Path:  # fmt: skip
    """Build ``exports`` into ``kernels``' file in ``folder`` (default its ``AHEAD_FOLDER``) with :func:`build_module`,
    for this machine's CPU (for any CPU where ``generic``, or where not :func:`can_target_host`), then make ``kernels``
    look for it again; the file's path."""
    host = not generic and can_target_host()
    target = build_module(kernels.path(folder, generic=not host), exports, kernels.what, compiler, host)
    kernels.forget()
    return target


def build_command(argv: list[str] | None, description: str, kernels: AheadKernels[Any],
                  build: Callable[[Path | None, bool], Path],
                  more: Mapping[str, tuple[str, Callable[[bool], Path]]] | None = None) -> int:  # fmt: skip
    """A build command: ``--folder`` (default ``kernels``' folder) and ``--generic`` (for any CPU, not this machine's)
    for ``build(folder, generic)``, and a flag per ``more`` entry (``--flag``: its help and a build to run after, given
    ``generic``). Prints each built file; exit code 1, each reason on stderr, where a build fails."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--folder", type=Path, help=f"where (default {kernels.folder()})")
    parser.add_argument("--generic", action="store_true",
                        help="build for any CPU of this architecture (a wheel, an image run on other machines); "
                        "default: for this machine's CPU, named by it, never loaded on another")  # fmt: skip
    for flag, (help_text, _) in (more or {}).items():
        parser.add_argument(flag, action="store_true", help=help_text)
    args = parser.parse_args(argv)
    builds = [lambda: build(args.folder, args.generic)]
    builds += [
        functools.partial(make, args.generic)
        for flag, (_, make) in (more or {}).items()
        if getattr(args, flag.lstrip("-").replace("-", "_"))
    ]
    code = 0
    for make in builds:
        try:
            print(make())
        except (TimorError, OSError) as exc:
            print(f"timor: {exc}", file=sys.stderr)
            code = 1
    return code
