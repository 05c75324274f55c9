"""Helpers of the hostile-input tests: a memory cap, and running the ``timor`` CLI as a user would.

A runaway allocation must fail the test, not the machine: ``memory_cap`` lowers the address-space limit of
this process for a block, and ``run_cli`` runs the command in a child process with its own cap and timeout.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

__all__ = [
    "memory_cap",
    "time_cap",
    "TimeCapExceeded",
    "run_cli",
    "run_cli_here",
    "run_python",
    "assert_clean_error",
    "CLI_MEMORY_BYTES",
]

CLI_MEMORY_BYTES = 3 * 2**30
"""Address space of a CLI child process: ample for any legitimate command of the suite, far below the machine."""


def _vm_size() -> int:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


@contextlib.contextmanager
def memory_cap(extra_bytes: int = 1536 * 2**20) -> Iterator[None]:
    """Inside the block, this process may grow by at most ``extra_bytes`` of address space (MemoryError past it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = _vm_size() + extra_bytes
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


class TimeCapExceeded(BaseException):
    """Raised inside a ``time_cap`` block that ran too long (a BaseException: no ``except Exception`` swallows it)."""


@contextlib.contextmanager
def time_cap(seconds: float = 60.0) -> Iterator[None]:
    """Inside the block, a hang becomes a test failure after ``seconds`` (a wall-clock alarm, not a speed check)."""

    def fire(_signum, _frame):
        raise TimeCapExceeded(f"still running after {seconds} s")

    previous = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_python(
    code: str, *, timeout: float = 120.0, memory: int = CLI_MEMORY_BYTES, cwd: str | Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``python -c CODE`` in a child process under an address-space cap and a timeout."""
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_cap_child(memory),
    )


def _cap_child(limit: int):
    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return apply


def run_cli(
    args: Sequence[str],
    *,
    cwd: str | Path | None = None,
    timeout: float = 120.0,
    memory: int = CLI_MEMORY_BYTES,
    input: str | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """Run ``timor ARGS`` in a child process under a memory cap and a timeout (TimeoutExpired fails the test)."""
    full_env = dict(os.environ, **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "timor_core.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        input=input,
        env=full_env,
        preexec_fn=_cap_child(memory),
    )


def run_cli_here(capsys, args: Sequence[str]) -> subprocess.CompletedProcess[str]:
    """Run ``timor ARGS`` in this process (``main``) under ``memory_cap`` and ``time_cap``, as ``run_cli``'s result
    (an uncaught exception fails the test instead of printing a traceback): for the many cases of one refusal whose
    path through a child process another test of the same option checks (a ``timor search`` child costs ~0.7 s of
    CPU to start)."""
    from timor_core.cli.app import main

    capsys.readouterr()
    with memory_cap(), time_cap(120):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's refusals, as the child would exit
            code = exc.code if isinstance(exc.code, int) else 2
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(["timor", *args], code, out, err)


def assert_clean_error(proc: subprocess.CompletedProcess[str], *needles: str) -> str:
    """A refused command: exit code != 0, no traceback, the last stderr line ``error: ...`` naming every needle."""
    assert proc.returncode not in (0, None), f"expected a refusal, got exit 0:\n{proc.stdout}\n{proc.stderr}"
    assert proc.returncode > 0, f"killed by signal {-proc.returncode}:\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines and lines[-1].startswith("error: "), proc.stderr
    for needle in needles:
        assert needle in lines[-1], f"{needle!r} not named in {lines[-1]!r}"
    return lines[-1]
