"""When a process runs its numba-compiled kernels (reach proofs, IK descents) instead of the numpy/Python ones.

Loading numba and the kernels (from numba's cache beside their sources, compiled there on first use) costs a
process ~1-1.5 s: more than a short search or a few IK calls spend in the interpreted versions altogether. So a
process runs the interpreted versions until they have taken ``LOAD_AFTER`` seconds together, then loads the
compiled ones (the ski-rental rule: never more than about twice the better choice's time). Importing timor_core
never loads numba; without a working numba the interpreted versions go on, with one warning.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

__all__ = ["LOAD_AFTER", "charged", "give_up", "mark_loaded", "use_compiled", "wanted"]

logger = logging.getLogger(__name__)

LOAD_AFTER = 1.0
"""Seconds of interpreted kernels in one process, then the compiled ones."""


class _State:
    """The time spent in interpreted kernels so far, a test's choice, and whether numba failed to load."""

    spent = 0.0
    forced: bool | None = None
    loaded = False


def use_compiled(choice: bool | None) -> None:
    """Run the compiled kernels (True) or the interpreted ones (False) from now on, in this process; None: the rule
    of the module docstring (for the tests that check both)."""
    _State.forced = choice


def wanted() -> bool:
    """Whether a kernel's caller should run (and, the first time, load) the compiled version now."""
    if _State.forced is not None:
        return _State.forced
    return _State.loaded or _State.spent >= LOAD_AFTER


def mark_loaded() -> None:
    """Note that the compiled kernels are loaded: from now on they run whatever the time spent."""
    _State.loaded = True


def give_up(exc: Exception, what: str) -> None:
    """numba could not be loaded: the interpreted kernels go on (one warning), unless a test asked for the
    compiled ones (then ``exc`` is raised)."""
    if _State.forced:
        raise exc
    logger.warning("numba is not available (%s): %s keep their interpreted version", exc, what)
    _State.forced = False


def charged(kernel: Callable[..., Any], *args: Any) -> Any:
    """``kernel(*args)`` (an interpreted kernel), its time counted towards loading the compiled ones."""
    start = time.perf_counter()
    try:
        return kernel(*args)
    finally:
        _State.spent += time.perf_counter() - start
