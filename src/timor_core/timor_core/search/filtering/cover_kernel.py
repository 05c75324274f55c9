"""The certificate look-up's cover step compiled (:mod:`.batch_cover`, issue 38 item 1): which of many cuts one goal's
certificates cover, in one call, built ahead of time into a module of its own (:mod:`.proof_aot` builds it with the
proofs' kernels; :mod:`timor_core.common.ahead` loads it without numba).

Why: the batched look-up covers ~9,700 new cuts on ``five_joints``, a few (~6) at a time against ~29 certificates;
numpy's ~25 us a call was most of that, and the Python loops that spared numpy calls (the certificates that covered a
family's last cuts, tried first) the rest. :func:`cover` is :func:`.batch_distances.distances`'s arithmetic in the
same order (``(dx^2 + dy^2) + dz^2``, its root, the gaps one after the other, less the margin) per cut and
certificate, stopping at the first certificate that covers the cut by more than :data:`.batch_distances.SLACK`:
the same decisions (``tests/test_batch_cover.py``). Where it is not built (or ``TIMOR_COMPILED=0``), numpy's route
runs, as before; numba never loads for it.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from timor_core.common import compiled
from timor_core.common.ahead import AheadKernels
from timor_core.search.filtering import proof_kernel

__all__ = ["AHEAD", "NONE", "PENDING", "EXPORTS", "UNSURE", "cover", "kernel"]

PENDING, UNSURE, NONE = -1, -2, -3
"""A cut's mark: not decided yet; within the slack of a margin first (decided one at a time); no goal covers it."""
_SLACK = 1e-9  # (:data:`.batch_distances.SLACK`: a constant here, numba freezes it)


def cover(
    points: np.ndarray,
    margins: np.ndarray,
    lo: int,
    hi: int,
    cuts: np.ndarray,
    ends: np.ndarray,
    goal: int,
    marks: np.ndarray,
) -> int:
    """Mark ``goal`` each cut ``i`` (``cuts``: (n, gaps, 3)) still :data:`PENDING` with ``goal < ends[i]`` that one of
    the certificates ``lo:hi`` (``points`` (m, gaps, 3), ``margins``) covers by more than the slack, else
    :data:`UNSURE` where one's distance is within the slack of its margin; the cuts left pending (of those tried)."""
    left = 0
    gaps = cuts.shape[1]
    for i in range(cuts.shape[0]):
        if marks[i] != PENDING or goal >= ends[i]:
            continue
        near = False
        for k in range(lo, hi):
            margin = margins[k]
            total = 0.0
            for g in range(gaps):
                dx = points[k, g, 0] - cuts[i, g, 0]
                dy = points[k, g, 1] - cuts[i, g, 1]
                dz = points[k, g, 2] - cuts[i, g, 2]
                total += math.sqrt((dx * dx + dy * dy) + dz * dz)  # (0.0 + the first: the first, bit for bit)
                if total - margin > _SLACK:  # (the sums only grow: neither covered nor near)
                    break
            d = total - margin
            if d < -_SLACK:
                marks[i] = goal
                break
            if abs(d) <= _SLACK:
                near = True
        if marks[i] == PENDING:
            if near:
                marks[i] = UNSURE
            else:
                left += 1
    return left


AHEAD: AheadKernels[Any] = AheadKernels(
    "cover_aot",
    "certificate look-up's cover kernel",
    [Path(__file__).resolve()],
    lambda: proof_kernel.AHEAD_FOLDER,
    ("cover",),
    lambda module: module.cover,
)
""":func:`cover` built ahead of time: where (beside the proofs' kernels), and loaded once."""
EXPORTS: dict[str, tuple[Any, str]] = {
    "cover": (cover, "i8(f8[:, :, ::1], f8[::1], i8, i8, f8[:, :, ::1], i8[::1], i8, i8[::1])"),
}
"""What :mod:`.proof_aot` builds: the kernel and its one signature (C-contiguous arrays, as :mod:`.batch_cover`
passes them)."""


def kernel() -> Any:
    """:func:`cover` built ahead of time where this process may run compiled kernels and it is built, else None
    (numpy's route)."""
    return AHEAD.get() if compiled.allowed() else None
