"""Kernels built ahead of time, the loading side: numba's ahead-of-time compiler (``numba.pycc``, driven by
:mod:`.ahead_build`) makes an extension module of numba kernels that imports in under a millisecond without numba;
the IK's (``kinematics/ik_aot.py``) and the reach proofs' (``search/filtering/proof_aot.py``) are found and loaded here,
each set by one :class:`AheadKernels` (``ik_kernel.AHEAD``, ``proof_kernel.AHEAD``).

Why one place: the module's name hashes its sources, numpy's version and Python's, so a stale build is never loaded;
a build for this machine's CPU (its instructions, AVX-512 where it has them: what numba's JIT compiles for) is named
by the CPU too (:func:`host_cpu`), so a build copied to another CPU (a wheel, an image, a shared folder) is never
loaded there, where it could die on an illegal instruction; a build for any CPU of the architecture (``--generic``)
is the second choice. A file that does not load (or lacks a kernel) gives one warning and None, once per process
(until :meth:`AheadKernels.forget`), and the caller runs numba's kernels by the rule of :mod:`.compiled`. Nothing here
imports numba (nor llvmlite: ~40 ms of CPU, more than a short search).
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import logging
import os
import platform
import sys
from collections.abc import Callable, Iterable, Sequence
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType
from typing import Generic, TypeVar

import numpy as np

__all__ = [
    "CPU_FIELDS",
    "IGNORE",
    "AheadKernels",
    "cpu_flags",
    "cpu_identity",
    "host_cpu",
    "load_module",
    "module_path",
]

logger = logging.getLogger(__name__)

IGNORE = "TIMOR_AHEAD"
"""Environment variable: ``0`` ignores every build (numba's kernels by the rule, as without one: for the tests of
what a process does on a fresh install whose build failed); else builds are used where :mod:`.compiled` allows."""


CPU_FIELDS = ("vendor_id", "cpu family", "model", "model name", "flags")
"""The fields of Linux's ``/proc/cpuinfo`` that name a CPU for its builds: the model and every feature flag the
kernel found (and enabled: AVX-512 is listed only where the kernel saves its registers)."""


def cpu_identity(cpuinfo: str) -> str | None:
    """The name (12 hex digits) of the CPU that ``cpuinfo`` (``/proc/cpuinfo``'s text) describes first: a hash of
    its :data:`CPU_FIELDS` (the flags in sorted order), or None where one of them is missing."""
    fields: dict[str, str] = {}
    for line in cpuinfo.split("\n\n", 1)[0].splitlines():
        key, colon, value = line.partition(":")
        if colon:
            fields.setdefault(key.strip(), value.strip())
    if not all(fields.get(name) for name in CPU_FIELDS):
        return None
    fields["flags"] = " ".join(sorted(fields["flags"].split()))
    text = "\n".join(f"{name}: {fields[name]}" for name in CPU_FIELDS)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


@functools.cache
def _first_processor() -> str | None:
    """``/proc/cpuinfo``'s first processor block (each is the same way; read once a process, at most 64 KB), or None
    where builds are for any CPU only: not Linux on x86-64, or no such file."""
    if not sys.platform.startswith("linux") or platform.machine() not in ("x86_64", "AMD64"):
        return None
    head = b""
    try:
        with open("/proc/cpuinfo", "rb") as info:
            while b"\n\n" not in head and len(head) < 1 << 16:
                chunk = info.read(8192)
                if not chunk:
                    break
                head += chunk
    except OSError:
        return None
    return head.decode(errors="replace")


@functools.cache
def host_cpu() -> str | None:
    """The name of this machine's CPU (:func:`cpu_identity` of ``/proc/cpuinfo``'s first processor: ~0.1 ms, read
    once a process), or None where builds are for any CPU only: not Linux on x86-64, or no such file."""
    text = _first_processor()
    return None if text is None else cpu_identity(text)


def cpu_flags() -> frozenset[str]:
    """The feature flags ``/proc/cpuinfo`` lists for this machine's first processor (empty where :func:`host_cpu` is
    None): what the build's name vouches for, checked against what a build for the host would use."""
    for line in (_first_processor() or "").split("\n\n", 1)[0].splitlines():
        key, colon, value = line.partition(":")
        if colon and key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def module_path(folder: Path, prefix: str, sources: Iterable[Path], numpy_version: str, cpu: str | None = None) -> Path:
    """The file in ``folder`` of the module ``prefix`` built from ``sources`` for this numpy and Python, for the CPU
    named ``cpu`` (:func:`host_cpu`: ``prefix_<sources>_<cpu>``) or for any CPU (None: ``prefix_<sources>``)."""
    digest = hashlib.sha256(f"{sys.implementation.cache_tag} numpy {numpy_version}".encode())
    for source in sources:
        digest.update(Path(source).read_bytes())
    name = f"{prefix}_{digest.hexdigest()[:16]}" + ("" if cpu is None else f"_{cpu}")
    return Path(folder) / f"{name}{EXTENSION_SUFFIXES[0]}"


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
    """One set of kernels built ahead of time: the files its builds have for the sources, numpy and Python as they
    are (this CPU's, any CPU's), and its kernels (``wrap`` of the loaded module) once looked for, kept until
    :meth:`forget`."""

    def __init__(self, prefix: str, what: str, sources: Sequence[Path], folder: Callable[[], Path],
                 names: Sequence[str], wrap: Callable[[ModuleType], K]) -> None:  # fmt: skip
        """``prefix`` names the module (``prefix_<hash>[_<cpu>]``), ``what`` the kernels in messages; ``sources`` are
        the files whose text the name hashes; ``folder()`` is where builds go now (the owner's ``AHEAD_FOLDER``, read at
        each call); a module lacking one of ``names`` is not used."""
        self.prefix, self.what, self.sources, self.folder = prefix, what, tuple(sources), folder
        self.names, self.wrap = tuple(names), wrap
        self.looked = False
        self.kernels: K | None = None

    def path(self, folder: Path | None = None, generic: bool = False) -> Path:
        """The file of the kernels built ahead of time for the sources, numpy and Python as they are now and this
        machine's CPU (:func:`host_cpu`; for any CPU where ``generic``, or where builds are for any CPU only), in
        ``folder`` (default: the owner's ``AHEAD_FOLDER`` as it is now)."""
        folder = self.folder() if folder is None else Path(folder)
        return module_path(folder, self.prefix, self.sources, np.__version__, None if generic else host_cpu())

    def get(self) -> K | None:
        """The kernels built ahead of time for the sources as they are, loaded on the first call: this CPU's build,
        else the build for any CPU; None where neither is built (or loads: one warning each), or where
        ``TIMOR_AHEAD=0``."""
        if not self.looked:
            self.looked = True
            module = load_module(self.path(), self.what, self.names)
            if module is None and host_cpu() is not None:
                module = load_module(self.path(generic=True), self.what, self.names)
            self.kernels = None if module is None else self.wrap(module)
        return self.kernels

    def forget(self) -> None:
        """Look for the build again on the next :meth:`get` (after ``AHEAD_FOLDER`` changed, or a build)."""
        self.looked, self.kernels = False, None
