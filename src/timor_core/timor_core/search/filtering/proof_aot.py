"""Builds the reach proofs' compiled kernels ahead of time: ``python -m timor_core.search.filtering.proof_aot`` (``make
venv`` and ``make test`` do; ``--with-ik`` builds the IK's too, :mod:`timor_core.kinematics.ik_aot`).

Why: a search's worker loads numba and the proofs' kernels (~1 s of CPU) once its proofs have taken half a second
(the rule of :mod:`timor_core.common.compiled`); numba's ahead-of-time compiler makes of the same functions an
extension module that loads in under a millisecond without numba, which :mod:`.proof_kernel` runs from a process's
first proof: the same code through the same compiler, the same bounds to the last digit (``tests/test_proof_aot.py``).
Its name hashes the sources (:data:`.proof_kernel.AHEAD_SOURCES`), numpy's version and Python's, so a stale build is
never loaded, and the CPU it is built for (this machine's unless ``--generic``), so a build copied to another CPU is
not loaded there (:mod:`timor_core.common.ahead`). Without a C compiler, Python's headers or ``numba.pycc`` the numba
kernels run by the rule, as before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from timor_core.common import ahead_build
from timor_core.common.ahead_build import Export, build_command, build_kernels
from timor_core.kinematics import ik_aot
from timor_core.search.filtering import cover_kernel, cut_kernel, proof_fused, proof_kernel, sweep_bound, sweep_fused

CC: Any = ahead_build.CC
"""numba's ahead-of-time compiler, None where this numba has none: :func:`build` says so."""

__all__ = ["SIGNATURES", "build", "main"]

_A1, _A2, _A3 = "f8[::1]", "f8[:, ::1]", "f8[:, :, ::1]"
SIGNATURES: dict[str, str] = {
    "poses": f"void({_A3}, {_A2}, {_A2}, {_A2}, {_A3}, {_A3}, {_A3}, {_A2})",
    "position": f"void({_A2}, {_A3}, {_A3}, {_A2}, {_A1}, f8, {_A1}, f8, f8, f8, {_A1}, {_A2}, {_A2}, {_A2})",
    "orientation": f"b1({_A2}, {_A3}, {_A3}, {_A2}, {_A2}, {_A1}, {_A2}, f8, f8, f8, f8, {_A1}, {_A1}, {_A2})",
    "halves": f"void({_A2}, {_A2}, {_A2}, i8, {_A2}, {_A2})",
    "descend": f"b1({_A3}, {_A2}, {_A2}, {_A1}, {_A2}, f8, f8, i8, {_A1})",
    "fused_proof": f"i8({_A3}, {_A2}, {_A2}, {_A2}, {_A1}, {_A2}, {_A1}, {_A2}, {_A1}, {_A1}, i8[::1], {_A1}, {_A1}, "
    f"{_A2}, {_A2}, {_A2}, {_A1}, {_A1}, {_A1}, {_A2})",
    "collisions": f"void({_A3}, {_A2}, {_A2}, {_A2}, {_A2}, i8[::1], {_A1}, {_A2}, {_A3}, {_A2}, b1[::1], {_A2})",
    "fused_sweep": f"i8({_A3}, {_A2}, {_A2}, {_A2}, {_A1}, {_A2}, {_A1}, {_A2}, {_A1}, {_A1}, i8[::1], {_A2}, i8[::1], "
    f"{_A1}, {_A2}, {_A3}, {_A2}, {_A2}, {_A2}, {_A2}, {_A1}, b1[::1], i8[::1], {_A2})",
}
"""Kernel name -> the one signature built: C-contiguous float64 arrays, as :mod:`.proof_kernel` passes them."""


def build(folder: Path | None = None, generic: bool = False) -> Path:
    """Build the kernels into ``folder`` (default :data:`.proof_kernel.AHEAD_FOLDER`) unless they are there, for this
    machine's CPU (for any where ``generic``), then remove older sources' builds there; the file's path. A TimorError
    where the compiler fails."""
    others = proof_kernel.other_kernels(compiled_helpers=True)  # (their helpers compiled: numba needs them so)
    jit = sweep_fused.numba_jit(cache=False)  # (the body's bound calls helpers: compiled by numba for the build)
    kernels = {**proof_kernel.py_kernels(jit), **others, **sweep_bound.py_kernels(jit)}
    kernels["fused_proof"] = proof_fused.for_build(cache=False)  # (numba's cache could give stale bounds: s49)
    kernels["fused_sweep"] = sweep_fused.for_build(cache=False)
    exports: dict[str, Export] = {name: (f, SIGNATURES[name]) for name, f in kernels.items()}
    built = build_kernels(proof_kernel.AHEAD, folder, exports, CC, generic)
    build_kernels(cover_kernel.AHEAD, folder, cover_kernel.EXPORTS, CC, generic)  # (the look-up's, its own module)
    build_kernels(cut_kernel.AHEAD, folder, cut_kernel.EXPORTS, CC, generic)  # (its staging's lock-step, the same)
    return built


def main(argv: list[str] | None = None) -> int:
    """Build the kernels (see the module's docstring), and with ``--with-ik`` the IK's (in their own folder); exit
    code 1, the reasons on stderr, where a build fails."""
    more = {
        "--with-ik": ("build the IK's kernels too (in their own folder)", lambda generic: ik_aot.build(None, generic))
    }
    return build_command(argv, __doc__.split("\n\n")[0], proof_kernel.AHEAD, build, more)


if __name__ == "__main__":
    raise SystemExit(main())
