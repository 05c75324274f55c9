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


_CM_CRASH = (
    "[ros2_control_node-3] [WARN] [1.0] [rclcpp_lifecycle]: LifecycleNode is not shut down: Node still in state(3)\n"
    "[ERROR] [ros2_control_node-3]: process has died [pid 4033, exit code -11, cmd 'ros2_control_node']."
)


def test_only_a_known_upstream_crash_after_the_launchs_sigint_is_forgiven():
    """``died`` forgives ros2_control_node's SIGSEGV at Ctrl-C (ros-controls/ros2_control#2012) only after the launch's
    SIGINT and only with the lifecycle warning that comes with it; any crash while running, or another exit code, is
    reported (pure text: no ROS needed)."""
    from ros2_cli import died

    sigint = "[WARNING] [launch]: user interrupted with ctrl-c (SIGINT)\n"
    assert died(sigint + _CM_CRASH) == []
    assert died(_CM_CRASH + "\n" + sigint) == [_CM_CRASH.splitlines()[1]]  # while running: a crash
    assert died(sigint + _CM_CRASH.splitlines()[1]) == [_CM_CRASH.splitlines()[1]]  # without the lifecycle warning
    other = _CM_CRASH.replace("exit code -11", "exit code 1")
    assert died(sigint + other) == [other.splitlines()[1]]


def test_a_dead_nodes_own_last_lines_head_the_failure_message():
    """A crash's own output (faulthandler's stacks of a timor node) comes first in what a failed ``died`` check shows,
    even when other processes printed pages after it (pure text)."""
    from ros2_cli import deaths

    log = (
        "[modules_db-1] [INFO] [1.0] [modules_db]: serving module set 'ur5'\n"
        "[WARNING] [launch]: user interrupted with ctrl-c (SIGINT)\n"
        "[modules_db-1] Fatal Python error: Segmentation fault\n"
        '[modules_db-1]   File "runner.py", line 80 in spin_nodes\n'
        + "[moveit_supervisor-4] [INFO] [2.0] [move_group]: shutting down\n" * 500
        + "[ERROR] [modules_db-1]: process has died [pid 7, exit code -11, cmd 'modules_db'].\n"
    )
    shown = deaths(log)
    first, _, rest = shown.partition("\n\n")
    assert first.startswith("[ERROR] [modules_db-1]: process has died")
    assert "Fatal Python error: Segmentation fault" in first and "in spin_nodes" in first
    assert "move_group" not in first and rest.endswith(log[-4000:])


_TEARDOWN_CRASH = (
    "[modules_db-1] [INFO] [1.0] [u.modules_db]: serving module set 'ur5' (1 modules)\n"
    "[WARNING] [launch]: user interrupted with ctrl-c (SIGINT)\n"
    "[INFO] [modules_db-1]: sending signal 'SIGINT' to process[modules_db-1]\n"
    "[modules_db-1] Fatal Python error: Segmentation fault\n"
    "[modules_db-1] \n"
    "[modules_db-1] Current thread 0x00007fe85ac824c0 (most recent call first):\n"
    '[modules_db-1]   File "/v/lib/python3.11/site-packages/rclpy/node.py", line 2082 in destroy_node\n'
    '[modules_db-1]   File "/w/timor_ros/runner.py", line 80 in spin_nodes\n'
    "[ERROR] [modules_db-1]: process has died [pid 23481, exit code -11, cmd 'modules_db --ros-args']."
)


def test_a_timor_nodes_crash_in_the_middlewares_teardown_is_reported():
    """The Fast DDS shared-memory crash at participant deletion (core dump in benchmarks/README.md, "s47-segv") is no
    longer forgiven: the suite's processes run without that transport (fastdds_udp_localhost.xml, checked in
    test_real_rsp.py), so a node's SIGSEGV in rclpy's teardown after the launch's SIGINT is a failure like any other
    (pure text: the launch log of the crash seen here)."""
    from ros2_cli import died

    dead = _TEARDOWN_CRASH.splitlines()[-1]
    assert died(_TEARDOWN_CRASH) == [dead]
    clean = _TEARDOWN_CRASH.replace(dead, "[INFO] [modules_db-1]: process has finished cleanly [pid 23481]")
    assert died(clean) == []
