"""The automata's lock-step over module positions compiled (:meth:`.cut_states.CutStates.ends_of`, issue 38 item 1):
each assembly's run and head after its modules, its DOF and its cut's numbers, in one call for a batch, built ahead of
time into a module of its own (:mod:`.proof_aot` builds it with the proofs' kernels; :mod:`timor_core.common.ahead`
loads it without numba).

Why: on ``five_joints`` a batch is ~190 assemblies of ~10 modules; numpy's route takes a dozen small calls per module
position (~60 us a batch, ~40 % of ``ends_of`` besides the IDs' encoding). :func:`ends` reads the same flat tables
(:class:`.cut_states.Table`) cell for cell in the same order, past an assembly's end by the same rule (column 0:
the same run and head): the same numbers (``tests/test_cut_states.py``). Where it is not built (or
``TIMOR_COMPILED=0``), numpy's route runs; numba never loads for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from timor_core.common import compiled
from timor_core.common.ahead import AheadKernels
from timor_core.search.filtering import proof_kernel

__all__ = ["AHEAD", "EXPORTS", "ends", "kernel"]

_LOW = (1 << 32) - 1  # (a move: the next run in the low 32 bits, the segment it closes above them)


def ends(
    codes: np.ndarray,
    lengths: np.ndarray,
    moves: np.ndarray,
    grown: np.ndarray,
    dofs: np.ndarray,
    family: np.ndarray,
    last: np.ndarray,
    bits: np.ndarray,
    ending: np.ndarray,
    parts: np.ndarray,
    numbered: np.ndarray,
    out: np.ndarray,
) -> None:
    """Per assembly ``i`` (its ``lengths[i]`` module codes next in ``codes``): into ``out[:, i]`` its family + 1, head
    rows number + 1, last row number in ``Verdicts``, head, last row, DOF (-1: a module's not known) and where a
    walk resumes (:meth:`.cut_states.CutStates.ends_of`'s before its -1s: the first module whose move or next head
    is not made, or the length, with the run and head before it: :func:`.cut_states.resume`). ``moves`` ...
    ``last``: the flat tables (``dofs``: DOF + 1), ``bits`` their column bits in that order."""
    at = 0
    for i in range(lengths.shape[0]):
        run, head, dof, resume, known = 1, 1, 0, -1, True
        for k in range(at, at + lengths[i]):
            code = codes[k]
            move = moves[(run << bits[0]) | code]
            grew = grown[(head << bits[1]) | (move >> 32)]
            if (move == 0 or grew == 0) and resume < 0:  # (not made: run or head 0 from here on, which have none)
                resume = (head - 1) << 40 | (run - 1) << 16 | (k - at)
            head, run = grew, move & _LOW
            plus = dofs[code << bits[2]]  # (DOF + 1; 0: not known yet)
            known = known and plus > 0
            dof += plus - 1
        at += lengths[i]
        if resume < 0:
            resume = (head - 1) << 40 | (run - 1) << 16 | lengths[i]
        tail = ending[run]
        found = family[(parts[head, 0] << bits[3]) | tail]
        row = last[(parts[head, 1] << bits[4]) | tail]
        if head <= 1 or row == 0 or parts[head, 2] == 0:
            found = 0
        out[0, i], out[1, i], out[2, i] = found, parts[head, 2], numbered[row]
        out[3, i], out[4, i], out[5, i], out[6, i] = head, row, dof if known else -1, resume


EXPORTS: dict[str, tuple[Any, str]] = {"ends": (ends, f"void({'i8[::1], ' * 9}i8[:, ::1], i8[::1], i8[:, ::1])")}
"""What :mod:`.proof_aot` builds: the kernel and its one signature (C-contiguous int64 arrays)."""
AHEAD: AheadKernels[Any] = AheadKernels(
    "cut_aot", "batched look-up's lock-step kernel", [Path(__file__).resolve()], lambda: proof_kernel.AHEAD_FOLDER,
    tuple(EXPORTS), lambda module: module.ends,
)  # fmt: skip
""":func:`ends` built ahead of time: where (beside the proofs' kernels), and loaded once."""


def kernel() -> Any:
    """:func:`ends` built ahead of time where this process may run compiled kernels and it is built, else None
    (numpy's route)."""
    return AHEAD.get() if compiled.allowed() else None
