"""A process that hangs at a launch's end leaves its threads' stacks in the failed test's message (hung_stacks): the
real ``ros2 launch`` escalates a child that ignores SIGINT, and ros2_cli's stop takes its stacks with gdb meanwhile."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hung_stacks import MARK, escalated_pids
from ros2_cli import Launch, deaths, require_ros2, wait_for_output

STUBBORN = """
import sys
from launch import LaunchDescription
from launch.actions import ExecuteProcess

def generate_launch_description():
    code = (  # as a hung node: its handlers run, it does not end (launch SIGKILLs it 15 s after SIGINT)
        "import signal, time; [signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)];"
        " print('up', flush=True); time.sleep(120)"
    )
    return LaunchDescription([ExecuteProcess(cmd=[sys.executable, "-c", code], name="stubborn", output="screen")])
"""


def test_the_pid_of_each_escalated_process_is_read_from_the_launch_log():
    log = (
        "[INFO] [stubborn-1]: process started with pid [4242]\n[INFO] [fine-2]: process started with pid [4243]\n"
        "[ERROR] [stubborn-1]: process[stubborn-1] failed to terminate '5' seconds after receiving 'SIGINT', "
        "escalating to 'SIGTERM'\n"
    )
    assert escalated_pids(log) == {"stubborn-1": 4242}
    assert escalated_pids(log.replace("4242", "x")) == {}  # no pid: nothing to attach to


@pytest.mark.skipif(shutil.which("gdb") is None, reason="gdb is not installed")
def test_a_process_that_ignores_sigint_has_its_stacks_in_the_launchs_output(tmp_path: Path):
    require_ros2()
    launch_file = tmp_path / "stubborn.launch.py"
    launch_file.write_text(STUBBORN)
    launch = Launch([str(launch_file)], tmp_path / "launch.log")
    try:
        assert wait_for_output(launch, "[stubborn-1] up", 30), launch.output()
        launch.stop()
    finally:
        launch.kill_leftovers()
    out = launch.output()
    assert "failed to terminate" in out, out
    assert list(launch.hung.blocks) == ["stubborn-1"], out
    stacks = launch.hung.blocks["stubborn-1"]
    assert "Thread 1" in stacks and "\n#0 " in stacks, stacks  # gdb's frames, not a reason for having none
    assert MARK in deaths(out), deaths(out)
