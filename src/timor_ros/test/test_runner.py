"""timor_ros.runner: how our nodes' processes start, stop and crash, seen from outside the process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

from ros_helpers import wait_for


def test_a_native_crash_of_a_node_prints_every_threads_python_stack(tmp_path):
    """A node process that dies of SIGSEGV (as modules_db once did at a launch's SIGINT, under load) leaves each
    thread's Python stack in its output, which launch writes into its log: without it the log said only "exit
    code -11"."""
    log = tmp_path / "modules_db.log"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"}  # the node must enable it itself
    cmd = [sys.executable, "-m", "timor_ros.modules_db", "--ros-args", "-r", "__ns:=/crash_probe"]
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        assert wait_for(lambda: "serving module set" in log.read_text(), 60), log.read_text()
        proc.send_signal(signal.SIGSEGV)
        assert proc.wait(30) == -signal.SIGSEGV, log.read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = log.read_text()
    assert "Fatal Python error: Segmentation fault" in text, text
    assert "Current thread 0x" in text, text  # all threads, not only the one that crashed
    assert 'runner.py", line' in text and "in spin_nodes" in text, text
