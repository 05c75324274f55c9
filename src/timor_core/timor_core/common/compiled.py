"""When a process runs its numba-compiled kernels (reach proofs, IK descents) instead of the numpy/Python ones.

Loading numba and the kernels (from numba's cache beside their sources, compiled there on first use: ~20 s once)
costs a process ~0.5 s: more than a short search or a few IK calls spend in the interpreted versions altogether
(measured 2026-11-29 with a warm cache: numba's import 0.17-0.21 s of CPU, the IK kernels' first dispatch 0.25 s;
the 320 IK calls of benchmarks/ik_anchor.py take 0.15-0.18 s interpreted). So a process runs the interpreted
versions until they have taken ``LOAD_AFTER`` seconds of CPU together, then loads the compiled ones (the ski-rental
rule: never more than about twice the better choice's time). Kernels built ahead of time into an extension module (the
IK's: ``kinematics/ik_aot.py``, the reach proofs': ``search/filtering/proof_aot.py``; :mod:`.ahead`) load in under a
millisecond without numba: where built, they run from the first call wherever :func:`allowed` holds. Importing
timor_core never loads numba; without a working numba the interpreted versions go on, with one warning.

Both give the same answers to rounding: an IK descent may take another path where a step's acceptance is a near
tie, so a solution's q can differ in its last digits, rarely more, between a process that runs the compiled kernels
and one that does not. Where that matters (results compared across processes, as the test suite does), the
environment variable ``TIMOR_COMPILED`` fixes the choice for every process that inherits it: ``1`` always compiled
(loaded on first use), ``0`` never; unset, the rule above.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable
from typing import Any

from timor_core.errors import InputError

__all__ = [
    "ENVIRONMENT",
    "LOAD_AFTER",
    "allowed",
    "charged",
    "check_environment",
    "give_up",
    "loaded_or_none",
    "mark_loaded",
    "use_compiled",
    "wanted",
]

logger = logging.getLogger(__name__)

LOAD_AFTER = 0.5
"""Seconds of CPU spent in interpreted kernels in one process, then the compiled ones (about what loading them costs
in CPU: numba's import ~0.2 s after numpy and scipy, the proofs' kernels ~0.27 s, the IK's ~0.05 s, measured
2026-11-27). Counted as CPU time, not wall time: on a loaded machine (other processes on the cores) a kernel's wall
time grows while the work it does, and what loading would save, does not, so wall time switched early. Counted per
thread (``time.thread_time`` around each call, summed over the process's threads), not ``time.process_time``: that
clock would also charge a kernel with what the process's other threads (a Dask worker's other tasks, a search's
watcher threads) spend meanwhile, so concurrent kernels would count each other's time."""
ENVIRONMENT = "TIMOR_COMPILED"
"""``1``: always the compiled kernels, ``0``: never; unset: the rule of the module docstring."""
_UNREAD = object()


class _State:
    """The time spent in interpreted kernels so far, the choice made (None: the rule), whether numba is loaded."""

    spent = 0.0
    forced: object = _UNREAD
    loaded = False


def use_compiled(choice: bool | None) -> None:
    """Run the compiled kernels (True) or the interpreted ones (False) from now on, in this process; None: back to
    the process's default (``TIMOR_COMPILED``, else the rule; for the tests that check both)."""
    _State.forced = _from_environment() if choice is None else bool(choice)


def wanted() -> bool:
    """Whether a kernel's caller should run (and, the first time, load) the compiled version now."""
    forced = _State.forced
    if forced is _UNREAD:
        forced = _State.forced = _from_environment()
    if forced is not None:
        return bool(forced)
    return _State.loaded or _State.spent >= LOAD_AFTER


def allowed() -> bool:
    """Whether this process may run compiled kernels at all (False where ``TIMOR_COMPILED=0`` or
    ``use_compiled(False)`` said so, or after numba failed to load): kernels built ahead of time (no numba, under a
    millisecond to load) run from the first call where this holds."""
    forced = _State.forced
    if forced is _UNREAD:
        forced = _State.forced = _from_environment()
    return forced is not False


def _from_environment() -> bool | None:
    value = os.environ.get(ENVIRONMENT, "").strip()
    if value in ("", "0", "1"):
        return None if not value else value == "1"
    logger.warning("%s=%r is neither 0 nor 1: the compiled kernels load by the rule", ENVIRONMENT, value)
    return None


def check_environment() -> None:
    """Refuse a ``TIMOR_COMPILED`` that is neither unset, 0 nor 1 (an InputError naming it): what a command does
    before its options are read (the library itself warns and goes by the rule)."""
    value = os.environ.get(ENVIRONMENT, "").strip()
    if value not in ("", "0", "1"):
        raise InputError(f"environment variable {ENVIRONMENT} must be 0 or 1", value=os.environ[ENVIRONMENT])


def mark_loaded() -> None:
    """Note that the compiled kernels are loaded: from now on they run whatever the time spent."""
    _State.loaded = True


def give_up(exc: Exception, what: str) -> None:
    """numba could not be loaded: the interpreted kernels go on (one warning), unless a test asked for the
    compiled ones (then ``exc`` is raised)."""
    if _State.forced is True:
        raise exc
    logger.warning("numba is not available (%s): %s keep their interpreted version", exc, what)
    _State.forced = False


def loaded_or_none(load: Callable[[], Any], what: str) -> Any:
    """``load()`` (a module's compiled kernels, loading numba on its first call) if this process runs the compiled
    kernels now, else None; None too, with one warning, where numba cannot be loaded (see :func:`give_up`)."""
    if not wanted():
        return None
    try:
        return load()
    except ImportError as exc:
        give_up(exc, what)
    return None


def charged(kernel: Callable[..., Any], *args: Any) -> Any:
    """``kernel(*args)`` (an interpreted kernel), the CPU time its thread spent on it counted towards loading the
    compiled ones (see :data:`LOAD_AFTER` for why CPU time, and the calling thread's)."""
    start = time.thread_time()
    try:
        return kernel(*args)
    finally:
        _State.spent += time.thread_time() - start
