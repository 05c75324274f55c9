"""Helpers of the timor_ros tests: run `timor ros up` and small client scripts as separate processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PY = sys.executable


def start_up(*args: str, log: Path) -> subprocess.Popen:
    """`timor ros up ARGS` in its own process, as a user runs it (the `timor` CLI reaching timor_ros by its entry
    point)."""
    fh = open(log, "w")  # noqa: SIM115 - closed by the process' end
    env = dict(os.environ, PYTHONFAULTHANDLER="1")  # a native crash prints every thread's Python stack to the log
    argv = [PY, "-m", "timor_core.cli", "ros", "up", *args]
    return subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env)


def stop(proc: subprocess.Popen, timeout: float = 20.0) -> int:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            return -9
    return proc.returncode


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def run_script(name: str, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
    return subprocess.run(
        [PY, str(HERE / name), *args], capture_output=True, text=True, timeout=timeout, env=os.environ
    )


def wait_for(predicate, timeout: float, interval: float = 0.1):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return predicate()
