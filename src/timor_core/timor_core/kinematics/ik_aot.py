"""Builds the IK's compiled kernels ahead of time: ``python -m timor_core.kinematics.ik_aot`` (``make venv`` does).

Why: numba's kernels (:mod:`.ik_jit`, :mod:`.ik_jit_tries`) cost a process ~0.45 s of CPU to load even from a warm
cache (numba's import ~0.2 s, its first dispatch ~0.25 s, measured 2026-11-29), more than a few hundred IK calls
spend in the interpreted descents altogether; so a process that makes fewer never loads them. numba's ahead-of-time
compiler (``numba.pycc``) compiles the same functions into an extension module that imports in ~0.4 ms without
numba: :func:`.ik_kernel.ready` runs it from a process's first IK call. It is the same code through the same
compiler: the same q as numba's kernels to the last digit (``tests/test_ik_aot.py``). Its name hashes the sources
(:data:`.ik_kernel.AHEAD_SOURCES`), numpy's version and Python's, so a stale build is never loaded, and the CPU
it is built for (this machine's unless ``--generic``), so a build copied to another CPU is not loaded there.
Building takes ~12-15 s of CPU and needs a C compiler, Python's headers and ``numba.pycc`` (pending deprecation in
numba, there in 0.68); without them the numba kernels run by the rule, as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from timor_core.common import ahead_build
from timor_core.common.ahead_build import Export, build_command, build_kernels
from timor_core.kinematics import ik_jit, ik_jit_tries, ik_kernel

CC: Any = ahead_build.CC
"""numba's ahead-of-time compiler, None where this numba has none: :func:`build` says so."""

__all__ = ["EXPORTS", "build", "main"]

_CHAIN = "Tuple((f8[:, :, ::1], i8[::1], f8[:, ::1], f8[:, ::1], i8))"  # ik_kernel.KernelChain as a tuple
_V, _B = "f8[::1]", "b1[::1]"
EXPORTS: dict[str, tuple[Any, str]] = {
    "descend": (
        ik_jit.descend,
        f"Tuple((f8, i8, b1))({_CHAIN}, {_V}, {_V}, {_B}, {_B}, {_V}, {_V}, {_V}, {_V}, f8[:, ::1])",
    ),
    "best_start": (ik_jit.best_start, f"i8({_CHAIN}, f8[:, ::1], {_V})"),
    "run_tries": (
        ik_jit_tries.run_tries,
        f"UniTuple(i8, 3)({_CHAIN}, {_V}, {_V}, {_B}, {_B}, {_V}, {_V}, {_V}, {_V}, {_V}, {_V}, {_V}, {_V}, "
        f"f8[:, :, ::1], {_V}, {_V}, {_V}, f8[:, ::1])",
    ),
    "plateau_stop": (ik_jit_tries.plateau_stop, f"b1({_V}, {_V}, b1)"),
    "within": (ik_jit_tries.within, f"b1(f8[:, ::1], {_V}, {_V})"),
}
"""Name -> (numba kernel, the one signature built: C-contiguous arrays, as the library passes them)."""


def build(folder: Path | None = None, generic: bool = False) -> Path:
    """Build the kernels into ``folder`` (default :data:`.ik_kernel.AHEAD_FOLDER`) unless they are there, for this
    machine's CPU (for any where ``generic``), then remove older sources' builds there
    (:func:`timor_core.common.ahead_build.build_module`); the file's path. A TimorError where the compiler fails."""
    exports: dict[str, Export] = {name: (kernel.py_func, signature) for name, (kernel, signature) in EXPORTS.items()}
    return build_kernels(ik_kernel.AHEAD, folder, exports, CC, generic)


def main(argv: list[str] | None = None) -> int:
    """Build the kernels (see the module's docstring); exit code 1, the reason on stderr, where that fails."""
    return build_command(argv, __doc__.split("\n\n")[0], ik_kernel.AHEAD, build)


if __name__ == "__main__":
    raise SystemExit(main())
