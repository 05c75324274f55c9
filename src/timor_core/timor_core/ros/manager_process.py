"""One supervised ros2_control_node process: started in its own session, ended with its supervisor, stopped cleanly.
Used by :mod:`.controller_swap`.

Why its own session and ``PR_SET_PDEATHSIG`` (SIGINT): a Ctrl-C in the supervisor's terminal must not reach the
manager before the supervisor has released its hardware, and a supervisor that is killed must not leave a manager
behind. Nothing here imports ROS.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path
from subprocess import Popen
from typing import IO, Any

from timor_core.errors import TimorError

__all__ = ["ControlSwapError", "ManagerProcess", "die_with_parent", "start_supervised", "stop_group"]

_PR_SET_PDEATHSIG = 1
_LIBC = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)


class ControlSwapError(TimorError):
    """A step of bringing a robot's controllers up failed; ``step`` names it (stop, start, description, load,
    configure, switch, confirm)."""

    def __init__(self, step: str, message: str) -> None:
        self.step = step
        super().__init__(f"ros2_control {step}: {message}")


class ManagerProcess:
    """One ros2_control_node: started in its own session, ends with its parent (PDEATHSIG), stopped cleanly."""

    def __init__(self, argv: Sequence[str], log: Path, env: dict[str, str] | None = None) -> None:
        self.argv = list(argv)
        self._log: IO[bytes] = log.open("ab")
        try:
            self.proc = start_supervised(self.argv, self._log, env)
        except OSError as exc:
            self._log.close()
            raise ControlSwapError("start", f"cannot start {self.argv[0]}: {exc.strerror or exc}") from None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float) -> str:
        """SIGINT and wait ``timeout``; then SIGTERM and SIGKILL (each after ``timeout``). Returns how it ended."""
        how = stop_group(self.proc, timeout)
        self._log.close()
        return f"{how} (exit code {self.proc.returncode})"


def start_supervised(argv: Sequence[str], stdout: Any, env: dict[str, str] | None = None, **text: Any) -> Popen:
    """A child in its own session (a Ctrl-C in the terminal reaches only its supervisor, which stops it in order)
    that gets SIGINT when the thread that started it ends (a killed supervisor leaves none behind). OSError as
    Popen raises it; ``text``: Popen's text-mode arguments."""
    return subprocess.Popen(  # noqa: S603 - argv is a ROS node and its ROS arguments
        list(argv),
        stdout=stdout,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=die_with_parent,  # noqa: PLW1509 - only a prctl call, from the supervisor's own thread
        env=env,
        **text,
    )


def stop_group(proc: Popen, timeout: float) -> str:
    """SIGINT to the child's process group, then SIGTERM and SIGKILL (each after ``timeout``); how it ended."""
    how = "exited before"
    for sig, name in ((signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM"), (signal.SIGKILL, "SIGKILL")):
        if proc.poll() is not None:
            break
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        how = f"stopped by {name}"
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            continue
    proc.wait()
    return how


def die_with_parent() -> None:
    """In the child, before exec: SIGINT when the thread that started it ends (the supervisor's own thread)."""
    _LIBC.prctl(_PR_SET_PDEATHSIG, int(signal.SIGINT), 0, 0, 0)
