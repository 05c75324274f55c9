"""The threads' stacks of a process that hangs at a launch's end, taken with gdb while launch waits to escalate.

When a process ignores the launch's SIGINT, launch logs "failed to terminate '5' seconds after receiving 'SIGINT'",
sends SIGTERM, and SIGKILLs it 10 s later; the failed test then knows only that it hung. Taken in that window, the
stacks say where (a clean-clone CI run lost a test to robot_state_publisher hanging so, 2026-11-30, with no clue).
"""

from __future__ import annotations

import re
import shutil
import subprocess

#: what launch logs when a process outlived its SIGINT by 5 s (launch.actions.ExecuteProcess)
ESCALATED = re.compile(r"process\[([\w.]+-\d+)\] failed to terminate '[\d.]+' seconds after receiving 'SIGINT'")
#: where the stacks go in a launch's output (ros2_cli.Background.output), one block a process
MARK = "==== threads of"


def escalated_pids(log: str) -> dict[str, int]:
    """Launch's name -> pid of each process launch escalated past SIGINT, from a launch log."""
    found = {}
    for name in ESCALATED.findall(log):
        started = re.search(rf"\[INFO\] \[{re.escape(name)}\]: process started with pid \[(\d+)\]", log)
        if started:
            found[name] = int(started.group(1))
    return found


def thread_stacks(pid: int, timeout: float = 8.0) -> str:
    """Every thread's backtrace of ``pid`` by ``gdb -batch`` (attached, then detached: the process goes on), or why
    there is none (no gdb here, the process gone, gdb too slow)."""
    gdb = shutil.which("gdb")
    if gdb is None:
        return "(no gdb on this machine)"
    cmd = [gdb, "-batch", "-nx", "-p", str(pid), "-ex", "thread apply all bt"]
    try:
        got = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"(gdb took over {timeout:g} s)"
    frames = [ln for ln in got.stdout.splitlines() if ln.startswith(("Thread ", "#"))]
    return "\n".join(frames) or f"(gdb: {got.stderr.strip()[-500:]})"


class HungStacks:
    """The stacks of each process a launch escalated past SIGINT, each taken once (``take``, called while the launch
    is stopping); ``text`` is what a launch's output gains."""

    def __init__(self) -> None:
        self.blocks: dict[str, str] = {}

    def take(self, log: str) -> None:
        for name, pid in escalated_pids(log).items():
            if name not in self.blocks:
                self.blocks[name] = f"{MARK} {name} (pid {pid}) after launch's SIGINT:\n{thread_stacks(pid)}"

    @property
    def text(self) -> str:
        return "".join(f"\n{block}\n" for block in self.blocks.values())
