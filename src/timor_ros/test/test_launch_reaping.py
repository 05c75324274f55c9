"""Why test_control_swap stops the assembly node and then waits for launch's own report of its end before it stops
the launch (ros2_cli.launch_reported_end), not merely for the node's zombie: launch, stopped while a child is a
zombie its child watcher has not collected, reaps it through ``Popen.send_signal`` and reports exit code 255 for a
clean exit (seen in a `make test-ros-load` run at load ~11). Pins that behaviour of launch and Python 3.11
(launch_reap_race.py) and that waiting for launch's report avoids it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("launch")
SCRIPT = Path(__file__).resolve().parent / "launch_reap_race.py"


def _run(mode: str) -> str:
    got = subprocess.run([sys.executable, str(SCRIPT), mode], capture_output=True, text=True, timeout=60)
    return got.stdout + got.stderr


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="pinned on Python 3.11's ThreadedChildWatcher (the venv's)")
def test_launch_stopped_while_its_child_is_a_zombie_reports_exit_code_255():
    out = _run("zombie")
    assert "sending signal 'SIGINT' to process[child-1]" in out, out
    assert "Unknown child process pid" in out and "exit code 255" in out, out


def test_launch_stopped_after_it_reported_the_childs_end_reports_a_clean_exit():
    out = _run("reported")
    assert "process has finished cleanly" in out and "sending signal" not in out, out
    assert "exit code 255" not in out, out
