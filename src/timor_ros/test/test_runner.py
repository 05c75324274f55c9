"""timor_ros.runner: how our nodes' processes start, stop and crash, seen from outside the process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

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


def test_the_executors_shutdown_waits_for_a_running_callback_whatever_its_timeout():
    """What spin_nodes' shutdown rests on (rclpy 9's MultiThreadedExecutor): ``shutdown(timeout_sec)`` returns only
    after a callback that is running has ended, however short the timeout (Executor.shutdown's own wait is never
    reached, and the thread pool is joined without a bound). So the nodes are destroyed and the context shut down
    with no callback running: no parameter request is answered during the teardown."""
    import threading

    import rclpy
    from rclpy.executors import MultiThreadedExecutor

    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        node = rclpy.create_node("shutdown_probe", context=context)
        started, ended = threading.Event(), threading.Event()

        def slow() -> None:
            if not started.is_set():
                started.set()
                time.sleep(1.5)  # a callback that takes its time
                ended.set()

        node.create_timer(0.01, slow)
        executor = MultiThreadedExecutor(num_threads=2, context=context)
        executor.add_node(node)
        while not started.is_set():
            executor.spin_once(timeout_sec=0.1)
        assert not ended.is_set()
        assert executor.shutdown(timeout_sec=0.1) is True
        assert ended.is_set()  # the callback ended before shutdown returned
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)


SECOND_SIGNAL = """
import os, signal, sys, time
from rclpy.node import Node
from timor_ros.runner import exit_now, spin_nodes

class Stopper(Node):
    def __init__(self, **kwargs):
        super().__init__("second_signal_probe", **kwargs)
        self.create_timer(0.05, lambda: os.kill(os.getpid(), signal.SIGINT))  # the launch's SIGINT

code = spin_nodes([Stopper], ["second_signal_probe"])
os.kill(os.getpid(), signal.SIGINT)  # a second one, as the teardown ends, before exit_now
time.sleep(0.2)
print("exits with", code, flush=True)
exit_now(code)
"""


def test_a_second_sigint_after_the_teardown_does_not_escape_exit_now():
    """spin_nodes used to put the previous handlers back when it returned: a second SIGINT just then raised
    KeyboardInterrupt past exit_now (a traceback, exit code 1, and interpreter finalization with the middleware's
    objects alive); now it is taken as the first was."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONFAULTHANDLER"}
    done = subprocess.run([sys.executable, "-c", SECOND_SIGNAL], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 0 and "exits with 0" in done.stdout, (done.returncode, done.stdout, done.stderr)
    assert "KeyboardInterrupt" not in done.stderr, done.stderr
