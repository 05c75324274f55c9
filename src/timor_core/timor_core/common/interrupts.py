"""SIGINT and SIGQUIT back to what a terminal's process has, where this process was started with them ignored.

A shell starts a background job (``make test &``, ``nohup ... &``) with SIGINT and SIGQUIT ignored, and an ignored
signal stays ignored across exec: every process started from there (a CLI, a viewer, a launch, a node) then ignores the
SIGINT that is to stop it, and each stop waits out its escalation timeouts (the test suites' conftests call this).
"""

from __future__ import annotations

import signal

__all__ = ["restore_interrupts"]


def restore_interrupts() -> list[str]:
    """Where SIGINT or SIGQUIT is ignored: SIGINT raises KeyboardInterrupt here again (Python's handler) and SIGQUIT
    has its default action; returns the names of the signals changed. A handler is reset to the default on exec, so
    the processes started afterwards take both as they would from a terminal. Call from the main thread."""
    changed = []
    for sig, handler in ((signal.SIGINT, signal.default_int_handler), (signal.SIGQUIT, signal.SIG_DFL)):
        if signal.getsignal(sig) == signal.SIG_IGN:
            signal.signal(sig, handler)
            changed.append(sig.name)
    return changed
