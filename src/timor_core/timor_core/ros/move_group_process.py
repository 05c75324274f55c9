"""MoveIt's move_group, restarted for every new robot: the real node reads its robot model once, at start.

move_group (MoveIt 2.12) builds its RobotModel, planning pipelines, kinematics plugins and controller list from its
parameters when it starts; nothing reloads them (the robot_description parameters are read-only after start and
the planning scene monitor never rebuilds the model). So a reconfigured robot gets a new move_group process: the
old one is stopped (SIGINT, then SIGTERM/SIGKILL), the new one starts with the new parameters file, and it counts
as up once it prints "You can start planning now". If it dies or does not get there in time, the previous robot's
move_group is started again and the swap is refused (MoveGroupError), so MoveIt always plans for a robot it could
load. Nothing here imports ROS: the process is started from a parameters file (``--params-file``).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from timor_core.common.fileio import write_files
from timor_core.errors import TimorError
from timor_core.export.formats.yaml_text import to_yaml
from timor_core.ros.manager_process import start_supervised, stop_group

__all__ = ["READY", "MoveGroupError", "MoveGroupProcess", "MoveGroupSupervisor", "SwapTiming"]

READY = "You can start planning now"
"""What move_group prints once its MoveGroup capabilities (and so /move_action) are up."""


class MoveGroupError(TimorError):
    """move_group did not come up for a robot (it died, or was not ready in time); ``tail`` is its last output."""

    def __init__(self, message: str, tail: str = "") -> None:
        self.tail = tail
        super().__init__(message + (f"; its last output:\n{tail}" if tail else ""))


class MoveGroupProcess:
    """One move_group process; its output goes to ``echo`` line by line (a launch shows it) and is watched."""

    def __init__(self, argv: Sequence[str], echo: TextIO | None = None, env: dict[str, str] | None = None) -> None:
        self.argv = list(argv)
        self._ready = threading.Event()
        self._tail: deque[str] = deque(maxlen=40)
        self._recent: deque[tuple[int, str]] = deque(maxlen=400)  # (line number, line)
        self.lines = 0  # lines printed so far
        self._echo = echo if echo is not None else sys.stdout
        try:
            self.proc = start_supervised(self.argv, subprocess.PIPE, env, text=True, errors="replace")
        except OSError as exc:
            raise MoveGroupError(f"cannot start {self.argv[0]}: {exc.strerror or exc}") from None
        self._reader = threading.Thread(target=self._read, name="move_group-output", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self._tail.append(line.rstrip("\n"))
            self._recent.append((self.lines, line))
            self.lines += 1
            if READY in line:
                self._ready.set()
            try:
                self._echo.write(line)
                self._echo.flush()
            except (OSError, ValueError):  # the supervisor's output is gone: keep watching
                pass

    @property
    def pid(self) -> int:
        return self.proc.pid

    def tail(self) -> str:
        return "\n".join(self._tail)

    def said_since(self, mark: int, text: str) -> bool:
        """Whether a line printed after line ``mark`` (a value of ``lines``) contains ``text``."""
        return any(n >= mark and text in line for n, line in list(self._recent))

    def wait_ready(self, timeout: float) -> bool:
        """True once move_group printed READY; False if it exited first or ``timeout`` passed."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self._ready.wait(0.05):
                return True
            if self.proc.poll() is not None:
                return self._ready.is_set()
        return self._ready.is_set()

    def stop(self, timeout: float) -> str:
        """SIGINT, then SIGTERM and SIGKILL (each after ``timeout``) to its process group; how it ended."""
        how = stop_group(self.proc, timeout)
        self._reader.join(timeout)
        return how


@dataclass(frozen=True)
class SwapTiming:
    """Seconds of one swap: the old move_group stopped, the new one ready (planning for the new robot)."""

    stop: float
    start: float
    how_old_ended: str


class MoveGroupSupervisor:
    """Keeps one move_group running for the current robot (see the module docstring).

    ``executable`` is move_group's path, ``namespace`` the one it runs in, ``folder`` where each robot's parameters
    file is written (``move_group_<k>.yaml``, the last ones kept for inspection).
    """

    def __init__(
        self,
        executable: Path,
        namespace: str,
        folder: Path,
        ready_timeout: float = 60.0,
        stop_timeout: float = 10.0,
        echo: TextIO | None = None,
    ) -> None:
        self.executable = Path(executable)
        self.namespace = "/" + namespace.strip("/")
        self.folder = Path(folder)
        self.ready_timeout, self.stop_timeout = float(ready_timeout), float(stop_timeout)
        self.echo = echo
        self.process: MoveGroupProcess | None = None
        self._params_file: Path | None = None  # the running move_group's
        self._count = 0

    def _write(self, params: dict[str, Any]) -> Path:
        self._count += 1
        path = self.folder / f"move_group_{self._count % 2}.yaml"  # the running one's file is never rewritten
        node = self.namespace.rstrip("/") + "/move_group"  # its fully qualified name: the file's key must match it
        (written,) = write_files({path: to_yaml({node: {"ros__parameters": params}})})
        return Path(written)

    def _start(self, params_file: Path) -> MoveGroupProcess:
        argv = [str(self.executable), "--ros-args", "-r", "__node:=move_group", "-r", f"__ns:={self.namespace}",
                "--params-file", str(params_file)]  # fmt: skip
        return MoveGroupProcess(argv, self.echo)

    def start(self, params: dict[str, Any]) -> SwapTiming:
        """Stop the running move_group (if any) and start one with ``params``; MoveGroupError (the previous one back
        up) if it does not come up."""
        new_file = self._write(params)
        t0 = time.monotonic()
        old_file, how = self._params_file, "none running"
        if self.process is not None:
            how = self.process.stop(self.stop_timeout)
            self.process = None
        t1 = time.monotonic()
        process = self._start(new_file)
        if process.wait_ready(self.ready_timeout):
            self.process, self._params_file = process, new_file
            return SwapTiming(t1 - t0, time.monotonic() - t1, how)
        process.stop(self.stop_timeout)  # (it joins the output's reader: a dead move_group's last lines are read)
        tail = process.tail()
        if old_file is not None:  # the last robot move_group could load
            back = self._start(old_file)
            if back.wait_ready(self.ready_timeout):
                self.process = back
            else:
                back.stop(self.stop_timeout)
        raise MoveGroupError("move_group did not come up for the new robot (the previous one was started again)", tail)

    def close(self, timeout: float | None = None) -> str:
        """Stop move_group, waiting ``timeout`` (default: the supervisor's stop timeout) before each harder signal;
        how it ended."""
        if self.process is None:
            return "none running"
        how = self.process.stop(self.stop_timeout if timeout is None else timeout)
        self.process = None
        return how
