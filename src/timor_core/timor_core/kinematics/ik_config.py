"""The settings and results of IK calls (:func:`.ik.solve_ik`, ``PinRobot.ik``): plain, immutable settings checked
once per config object, and what a call returns.

Why a file of its own: the solver (:mod:`.ik`), its descents (:mod:`.ik_descent`) and the compiled kernels' routes
all read the settings; here they are data without the solver, so those modules import them without a cycle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from timor_core.errors import InputError

__all__ = ["DEFAULT_IK_CONFIG", "IK_METHODS", "MAX_ITER", "MAX_TRIES", "IKConfig", "IKResult"]

IK_METHODS = ("jacobian", "scipy")
"""Inner solvers: damped least squares on the projected error (fast, default), or scipy's bounded least squares."""


@dataclass(frozen=True)
class IKConfig:
    """Solver settings: iterations per try, tries (random restarts), damping and step limits.

    ``method``: one of IK_METHODS. ``solutions``: with a custom cost (see ``solve_ik``), how many valid solutions
    to collect before returning the one of least cost (1: the first valid one).
    """

    max_iter: int = 60
    max_n_tries: int = 50
    damping: float = 3e-3
    max_step: float = 1.0  # rad (or m) per joint and iteration
    margin: float = 1e-7  # aim this far (m or rad) inside each bound, so rounding never lands on one
    stall_window: int = 5  # iterations after which a try must have cut its cost by stall_ratio ...
    stall_ratio: float = 0.5  # ... or be abandoned for a fresh random start
    plateau_tries: int = 20  # give up when this many tries in a row (0: never) ...
    plateau_ratio: float = 0.9  # ... did not cut the best residual below this fraction of it ...
    plateau_residual: float = 0.01  # ... while it stays above this (m, weighted): the goal is out of reach
    far_plateau_tries: int = 5  # the same, sooner (0: never), while the best residual stays above far_residual
    far_residual: float = 0.2
    method: str = "jacobian"
    solutions: int = 1
    start_candidates: int = 4  # random starts: the best of this many random configurations (by residual)
    limit_patience: int = 3  # abandon a try after this many steps in a row blocked by a joint limit (0: never)
    limit_wraps: int = 1  # per try, how often a revolute joint may cross the narrow gap between its limits

    def overridden(self, **values: Any) -> IKConfig:
        """This config with the settings given that are not None (``PinRobot.ik``'s keyword overrides)."""
        given = {k: v for k, v in values.items() if v is not None}
        return replace(self, **given) if given else self

    def check(self) -> None:
        """Refuse settings that are not numbers in range (an unbounded iteration count would hang a caller).

        A config that passed is remembered (configs are immutable), so the check costs nothing per IK call."""
        if _CHECKED_IDS.get(id(self)) is self:  # the same object again (it is held: its id is not reused)
            return
        try:
            known = self in _CHECKED
        except TypeError:  # an unhashable value in a field: check it the long way (and refuse it below)
            known = False
        if not known:
            self._check()
            if len(_CHECKED) > 256:
                _CHECKED.clear()
            _CHECKED.add(self)
        if len(_CHECKED_IDS) > 256:
            _CHECKED_IDS.clear()
        _CHECKED_IDS[id(self)] = self

    def _check(self) -> None:
        counts = {
            "max_iter": (1, MAX_ITER),
            "max_n_tries": (1, MAX_TRIES),
            "stall_window": (1, MAX_ITER),
            "plateau_tries": (0, MAX_TRIES),
            "far_plateau_tries": (0, MAX_TRIES),
            "solutions": (1, MAX_TRIES),
            "start_candidates": (1, 1000),
            "limit_patience": (0, MAX_ITER),
            "limit_wraps": (0, MAX_ITER),
        }
        if self.method not in IK_METHODS:
            raise InputError(f"IK method must be one of {IK_METHODS}", value=self.method)
        for name, (lo, hi) in counts.items():
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not lo <= v <= hi:
                raise InputError(f"IK setting {name} must be an integer in {lo}..{hi}", value=v)
        reals = ("damping", "max_step", "margin", "stall_ratio", "plateau_ratio", "plateau_residual", "far_residual")
        for name in reals:
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float, np.floating)) or not 0 <= v < math.inf:
                raise InputError(f"IK setting {name} must be a finite number >= 0", value=v)


DEFAULT_IK_CONFIG = IKConfig()
"""The settings used when none are given (shared: configs are immutable)."""
_CHECKED: set[IKConfig] = set()
_CHECKED_IDS: dict[int, IKConfig] = {}

MAX_ITER = 100_000
"""Most iterations per IK try."""
MAX_TRIES = 100_000
"""Most IK tries (random restarts) per call."""


@dataclass
class IKResult:
    """The outcome of an IK call: q, success, and why it failed if it did."""

    q: np.ndarray
    success: bool
    reason: str = ""
    tries: int = 0
    iterations: int = 0
    residual: float = math.inf  # weighted norm of the projected error of the best q
    rejections: dict = field(default_factory=dict)  # why reached poses were refused: cause -> count

    def __iter__(self):  # allows ``q, ok = solve_ik(...)``
        return iter((self.q, self.success))
