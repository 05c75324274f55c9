"""The IK's tries in a row compiled with numba (imported with :mod:`.ik_jit`, once a process runs compiled kernels).

Why: with the descents compiled (:mod:`.ik_jit`), an IK call's time went mostly to the interpreter around them: per
try the random start's draw and choice, the descent's call, the bookkeeping of the best try and of the give-up rule
(``ik._Plateau``), 15-20 µs a try against a descent of a few dozen µs. Here one call runs a batch of tries: the
start of each (the first the clipped ``q_init``, the others the best of their random candidates, drawn by the
caller), the descent, the best so far and the give-up rule, until a try converges, the rule gives up or the batch
ends. The same steps in the same order as the interpreted loop of ``ik.solve_ik``: the same q to rounding.
"""

from __future__ import annotations

import math
from typing import Any

import numba
import numpy as np

from timor_core.common.jit_cache import keyed
from timor_core.kinematics import ik_jit
from timor_core.kinematics.ik_jit import best_start, descend
from timor_core.kinematics.ik_jit_residual import log3

__all__ = ["FOUND", "GAVE_UP", "MORE", "plateau_stop", "run_tries", "within"]

_njit = numba.njit(cache=True, fastmath=False, nogil=True)


def _jit(function: Any) -> Any:
    """numba's compilation of ``function``, its cache named by the text of :data:`.ik_jit.SOURCES` too (their kernels
    are compiled into these, and numba's cache checks only this file: :func:`~timor_core.common.jit_cache.keyed`)."""
    return _njit(keyed(function, ik_jit.SOURCES))


MORE, FOUND, GAVE_UP = 0, 1, 2
"""run_tries' status: the batch ended without a converged try; a try converged (``q_out``); the give-up rule."""


@_jit
def plateau_stop(state, limits, cut):
    """``ik._Plateau.stop`` after a failed try: ``state`` [reference residual, tries since, those not cut short,
    best squared residual]; ``limits`` [plateau_tries, plateau_ratio, plateau_residual, far_plateau_tries,
    far_residual] of the IKConfig; ``cut``: the try was cut short at a limit. True: give up."""
    best_res = state[3]
    if limits[0] == 0.0:
        return False
    if best_res < limits[1] * state[0]:
        state[0], state[1], state[2] = best_res, 0.0, 0.0
        return False
    state[1] += 1.0
    if not cut:  # a try cut short at a limit says little about how far the goal is
        state[2] += 1.0
    return best_res > limits[2] ** 2 and (
        state[1] >= limits[0] or (0.0 < limits[3] <= state[2] and best_res > limits[4] ** 2)
    )


@_jit
def within(T, params, bounds):
    """``ik_residual.Projector.valid`` of an r_sph/Theta_R goal (``params``) at the pose ``T``, from its
    ``valid_bounds``; True where ``bounds[0]`` is 0 (a goal the caller checks itself)."""
    if bounds[0] == 0.0:
        return True
    x, y, z = T[0, 3] - params[0], T[1, 3] - params[1], T[2, 3] - params[2]
    d = math.sqrt(x * x + y * y + z * z)
    if not bounds[1] <= d <= bounds[2]:
        return False
    if bounds[5] != 0.0:
        rot, w = np.empty((3, 3)), np.empty(3)
        for row in range(3):  # R R_d^T
            for col in range(3):
                rot[row, col] = T[row, 0] * params[3 + 3 * col] + T[row, 1] * params[4 + 3 * col] + \
                    T[row, 2] * params[5 + 3 * col]  # fmt: skip
        log3(rot, w)
        th = math.sqrt(w[0] * w[0] + w[1] * w[1] + w[2] * w[2])
        if not bounds[3] <= th <= bounds[4]:
            return False
    return True


@_jit
def run_tries(chain, lo, hi, crossable, frozen, params, settings, limits, bounds, sample_lo, sample_span, first,
              fixed, draws, state, best_q, q_out, T_out):  # fmt: skip
    """Tries in a row: the first from ``first`` clipped to the limits (if it has entries), then one per block of
    ``draws`` (m, k, n; uniform in [0, 1), candidates ``sample_lo + sample_span * draw`` as
    ``PinRobot.random_configuration``) from the block's nearest candidate, frozen joints at ``fixed``; a converged try
    must also pass :func:`within` (``bounds``), else it counts as failed. Returns (status, tries run,
    iterations); ``q_out``/``T_out`` the last try's q and pose, ``best_q`` and ``state[3]`` the best."""
    n = lo.shape[0]
    use_first = 1 if first.shape[0] == n else 0
    total = draws.shape[0] + use_first
    has_fixed = frozen.any()
    q0 = np.empty(n)
    block = np.empty((draws.shape[1], n))
    converged = settings[7]
    iterations = 0
    for t in range(total):
        if t < use_first:
            for j in range(n):
                q0[j] = min(max(first[j], lo[j]), hi[j])
        else:
            drawn = draws[t - use_first]
            for i in range(block.shape[0]):
                for j in range(n):
                    block[i, j] = sample_lo[j] + sample_span[j] * drawn[i, j]
            pick = best_start(chain, block, params) if block.shape[0] > 1 else 0
            for j in range(n):
                q0[j] = fixed[j] if has_fixed and frozen[j] else block[pick, j]
        cost, used, cut = descend(chain, lo, hi, crossable, frozen, q0, params, settings, q_out, T_out)
        iterations += used
        if cost < state[3]:
            state[3] = cost
            best_q[:] = q_out
        if cost <= converged and within(T_out, params, bounds):
            return FOUND, t + 1, iterations
        if plateau_stop(state, limits, cut):
            return GAVE_UP, t + 1, iterations
    return MORE, total, iterations
