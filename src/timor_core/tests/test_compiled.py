"""The ski-rental rule of ``common/compiled.py``: a process loads numba's kernels once its interpreted kernels have
taken ``LOAD_AFTER`` seconds of CPU (what loading costs), counted per thread; time the process spends waiting (a
loaded machine, a kernel that blocks) does not count. Each test runs in a process of its own: the rule's count is
per process and starts at zero there."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap


def _run(code: str) -> str:
    env = {k: v for k, v in os.environ.items() if k != "TIMOR_COMPILED"}  # the rule, not the suite's choice
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120,
                         env=env)  # fmt: skip
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_wall_time_without_cpu_does_not_count_towards_loading():
    """A kernel that waits 0.6 s (wall time past LOAD_AFTER, next to no CPU: what a loaded machine's queue looks
    like to the kernel) leaves the interpreted kernels in charge; under a wall-clock count it switched."""
    out = _run(
        """
        import time
        from timor_core.common import compiled
        print("before", compiled.wanted())
        compiled.charged(time.sleep, compiled.LOAD_AFTER + 0.1)
        print("after", compiled.wanted())
        """
    )
    assert "before False" in out and "after False" in out, out


def test_the_compiled_kernels_load_once_the_cpu_time_reaches_load_after():
    """A clock where each interpreted call takes 0.2 s of wall time and 1/64 s of CPU: ten calls (2 s of wall
    time, 0.156 s of CPU) do not switch; the call that brings the CPU time to LOAD_AFTER (0.5 s) does, not one
    before it."""
    out = _run(
        """
        import types
        from timor_core.common import compiled
        clock = {"wall": 0.0, "cpu": 0.0}
        def work():
            clock["wall"] += 0.2
            clock["cpu"] += 1 / 64
        wall, cpu = lambda: clock["wall"], lambda: clock["cpu"]
        compiled.time = types.SimpleNamespace(perf_counter=wall, monotonic=wall, time=wall, process_time=cpu,
                                              thread_time=cpu)
        for _ in range(10):
            compiled.charged(work)
        print("wall", round(clock["wall"], 6), "cpu", clock["cpu"], "wanted", compiled.wanted())
        for _ in range(21):
            compiled.charged(work)
        print("cpu", clock["cpu"], "wanted", compiled.wanted())
        compiled.charged(work)
        print("cpu", clock["cpu"], "wanted", compiled.wanted())
        """
    )
    assert "wall 2.0 cpu 0.15625 wanted False" in out, out
    assert "cpu 0.484375 wanted False" in out, out
    assert "cpu 0.5 wanted True" in out, out
