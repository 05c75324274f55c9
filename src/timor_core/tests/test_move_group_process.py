"""move_group restarted per robot (ros/move_group_process.py), with a stand-in for move_group: a script that
reads its parameters file like the real node and, as its parameters say, comes up (prints move_group's READY line),
dies at start, or never gets ready. The real move_group is started the same way by the ROS tests
(src/timor_ros/test/test_moveit_swap.py, which also shows its refusal of an unparseable robot description); the
stand-in covers the ways of not coming up the real node does not offer on demand (dying, never getting ready)."""

from __future__ import annotations

import io
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from timor_core.errors import TimorError
from timor_core.ros.move_group_process import READY, MoveGroupError, MoveGroupSupervisor

FAKE = textwrap.dedent(
    f"""\
    #!{sys.executable}
    import signal, sys, time, yaml
    path = sys.argv[sys.argv.index("--params-file") + 1]
    params = yaml.safe_load(open(path))["/ns/move_group"]["ros__parameters"]
    mode = params["mode"]
    print("loading robot", params["robot"], flush=True)
    signal.signal(signal.SIGINT, lambda *_: sys.exit(0))  # before READY, as rclcpp::init installs its handler
    if mode == "die":
        print("giving up on robot", params["robot"], flush=True)
        sys.exit(1)
    if mode == "up":
        print("{READY}!", flush=True)
    while True:
        time.sleep(0.05)
    """
)


@pytest.fixture
def supervisor(tmp_path):
    exe = tmp_path / "move_group"
    exe.write_text(FAKE)
    exe.chmod(0o755)
    out = io.StringIO()
    sup = MoveGroupSupervisor(exe, "ns", tmp_path / "cfg", ready_timeout=5.0, stop_timeout=5.0, echo=out)
    (tmp_path / "cfg").mkdir()
    yield sup, out
    sup.close()


def _robot(sup: MoveGroupSupervisor) -> str:
    assert sup.process is not None and sup.process.proc.poll() is None
    path = Path(sup.process.argv[sup.process.argv.index("--params-file") + 1])
    return yaml.safe_load(path.read_text())["/ns/move_group"]["ros__parameters"]["robot"]


def test_each_robot_gets_a_new_move_group(supervisor):
    sup, out = supervisor
    sup.start({"robot": "A", "mode": "up"})
    first = sup.process.pid
    assert _robot(sup) == "A" and "-r" in sup.process.argv and "__ns:=/ns" in sup.process.argv
    timing = sup.start({"robot": "B", "mode": "up"})
    assert _robot(sup) == "B" and sup.process.pid != first
    assert timing.how_old_ended == "stopped by SIGINT" and timing.start > 0
    assert "loading robot A" in out.getvalue() and "loading robot B" in out.getvalue()  # its output is echoed
    assert sup.close() == "stopped by SIGINT" and sup.process is None


@pytest.mark.parametrize("mode", ["die", "never ready"])
def test_a_move_group_that_does_not_come_up_brings_the_last_one_back(supervisor, mode):
    sup, _ = supervisor
    sup.start({"robot": "A", "mode": "up"})
    sup.ready_timeout = 1.0
    t0 = time.monotonic()
    with pytest.raises(MoveGroupError, match="did not come up") as info:
        sup.start({"robot": "B", "mode": mode})
    assert "loading robot B" in info.value.tail
    assert isinstance(info.value, TimorError)
    assert time.monotonic() - t0 < 10
    assert _robot(sup) == "A"  # the previous robot's move_group is planning again


class _SlowEcho(io.StringIO):
    """An echo that takes its time over a robot's first line: the output's reader lags behind move_group."""

    def write(self, text: str) -> int:
        if text.startswith("loading robot B"):
            time.sleep(0.5)
        return super().write(text)


def test_a_move_group_that_dies_leaves_its_last_line_in_the_error_even_when_the_reader_lags(tmp_path):
    exe = tmp_path / "move_group"
    exe.write_text(FAKE)
    exe.chmod(0o755)
    (tmp_path / "cfg").mkdir()
    sup = MoveGroupSupervisor(exe, "ns", tmp_path / "cfg", ready_timeout=5.0, stop_timeout=5.0, echo=_SlowEcho())
    try:
        with pytest.raises(MoveGroupError) as info:
            sup.start({"robot": "B", "mode": "die"})
        assert info.value.tail.splitlines()[-1] == "giving up on robot B"
    finally:
        sup.close()


def test_no_executable_is_a_typed_error(tmp_path):
    sup = MoveGroupSupervisor(tmp_path / "missing", "ns", tmp_path)
    with pytest.raises(MoveGroupError, match="cannot start"):
        sup.start({"robot": "A"})


def test_closing_with_a_short_timeout_ends_a_move_group_that_ignores_sigint(tmp_path):
    """At the supervisor node's end move_group must be gone before launch escalates to SIGKILL on the node itself
    (5 s after its SIGINT, then 10 s): one that ignores SIGINT (seen at load ~20) gets SIGTERM after the short
    timeout given to close, not after the supervisor's 10 s per signal."""
    exe = tmp_path / "move_group"
    exe.write_text(FAKE.replace("lambda *_: sys.exit(0)", "signal.SIG_IGN"))
    exe.chmod(0o755)
    (tmp_path / "cfg").mkdir()
    sup = MoveGroupSupervisor(exe, "ns", tmp_path / "cfg", ready_timeout=5.0, stop_timeout=30.0, echo=io.StringIO())
    try:
        sup.start({"robot": "a", "mode": "up"})
        process = sup.process
        assert process is not None
        t0 = time.monotonic()
        assert sup.close(0.5) == "stopped by SIGTERM"
        assert process.proc.poll() is not None and time.monotonic() - t0 < 10  # not the 30 s stop timeout
    finally:
        sup.close(0.5)
