"""timor_ros tests: real rclpy, nodes in separate processes, an isolated ROS domain per test session.

Skipped where rclpy, the built timor_interfaces or timor_ros are missing (set them up with
scripts/setup_ros.sh); CI runs them.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import sys
import tempfile
import uuid
from pathlib import Path

import pytest

from timor_core.common.interrupts import restore_interrupts

# the nodes and every other process run the interpreted kernels: the same results as the tests compute in-process
# (timor_core.common.compiled)
os.environ["TIMOR_COMPILED"] = "0"

pytest.importorskip("rclpy", reason="rclpy is not installed (scripts/setup_ros.sh)")
pytest.importorskip("timor_interfaces.srv", reason="timor_interfaces is not built (scripts/setup_ros.sh)")
pytest.importorskip("timor_ros", reason="timor_ros is not installed (scripts/setup_ros.sh)")

sys.path.insert(0, str(Path(__file__).resolve().parent))

# every process the tests start inherits this marker: after the suite none may be left (pytest_sessionfinish); each
# pytest-xdist worker sets its own (its children carry it; the worker itself carries its controller's)
SESSION_VAR = "TIMOR_TEST_SESSION"
os.environ[SESSION_VAR] = uuid.uuid4().hex
#: pytest-xdist's worker index (0 without xdist): each worker gets a ROS domain of its own (and with it its own ros2
#: CLI daemon, whose port follows the domain) and its own range of X displays
WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0)
# the controller draws the base once; its workers inherit it and add their index
_BASE = os.environ.setdefault(
    "TIMOR_TEST_ROS_DOMAIN_BASE", os.environ.get("TIMOR_TEST_ROS_DOMAIN_ID") or str(random.randint(10, 90))
)
# before any rclpy context exists in this process; inherited by every node and client process
os.environ["ROS_DOMAIN_ID"] = str(int(_BASE) + WORKER)
if os.environ.get("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp") == "rmw_fastrtps_cpp":
    # Fast DDS over UDP on 127.0.0.1 alone, without its shared-memory transport (fastdds_udp_localhost.xml says why);
    # SYSTEM_DEFAULT, because rmw_fastrtps adds that transport under LOCALHOST whatever the profile says
    os.environ["FASTDDS_DEFAULT_PROFILES_FILE"] = str(Path(__file__).resolve().parent / "fastdds_udp_localhost.xml")
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "SYSTEM_DEFAULT"
else:
    os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"
if os.environ.get("ROS_DISTRO") == "humble":  # Humble's way of saying the same
    os.environ["ROS_LOCALHOST_ONLY"] = "1"

# launch_ros writes each dict of a node's parameters to a file of its own in the temp folder and never removes it
# (1,686 launch_params_* files were left in /tmp after a day of runs); the processes the tests start get a temp folder
# of this process's, removed when its session ends (in the temp folder the suite started with: pytest's tmp_path and
# pytest-xdist's workers, which inherit TMPDIR, keep theirs)
TEMP = tempfile.mkdtemp(prefix="timor-ros-tests-", dir=os.environ.setdefault("TIMOR_TEST_TEMP", tempfile.gettempdir()))
os.environ["TMPDIR"] = TEMP

# A shell starts a background job (`make test &`, `nohup ... &` in a script) with SIGINT and SIGQUIT ignored, and an
# ignored signal stays ignored across exec: every launch, node and `ros2 run` the tests start then ignored the SIGINT
# that stops it, and each stop waited out launch's and the tests' escalation timeouts (a clean-clone run of this suite
# started that way: 13:20 with the CPU idle, load 0.1-1.5; the same suite in the foreground ~6 min at load 9-17).
# A handler here is reset to the default on exec, so the processes started below take SIGINT as a terminal's Ctrl-C
# (timor_core.common.interrupts, shared with the core suite's conftest).
restore_interrupts()


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: slower tests (deselect with -m 'not slow')")


#: the test files that take longest, longest first (wall seconds on one worker at load 17-20, 2026-11-29: 250, 116,
#: 107, 104, 86, 67, 65, 48, 36, 35); every other file follows in its collection order. pytest-xdist's --dist loadfile
#: (with --no-loadscope-reorder, as make test runs it) hands the files out in this order: the long ones first, the
#: short ones fill the gaps at the end, instead of the longest file starting last while the other worker idles.
LONGEST_FIRST = (
    "test_ros2_launch.py",
    "test_bringup_launch.py",
    "test_moveit_real.py",
    "test_real_rviz.py",
    "test_real_rsp.py",
    "test_real_control.py",
    "test_moveit_swap.py",
    "test_nodes.py",
    "test_moveit_scene.py",
    "test_control_swap.py",
)


def pytest_collection_modifyitems(session, config, items):
    rank = {name: k for k, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))  # stable: each file's own order stays


@pytest.fixture(scope="session")
def ros_client():
    from ros_client import RosClient

    client = RosClient()
    yield client
    client.close()


@pytest.fixture(scope="module")
def ros2_daemon_stopped():
    """Stop the ros2 CLI's daemon (started by `ros2 param get`, `ros2 node list`) when a module of tests ends."""
    yield
    from ros2_cli import ros2

    try:
        ros2("daemon", "stop", timeout=30)
    except Exception:  # noqa: BLE001 - no CLI, nothing to stop
        pass


_CHECKED_URDFS: set[Path] = set()


@pytest.fixture(autouse=True)
def _written_urdfs_pass_check_urdf(request):
    """After each test, urdfdom's check_urdf on every ``*.urdf`` it wrote into its tmp_path."""
    from timor_core.export.formats.urdfdom import check_urdf, unchecked_urdfs

    tmp = request.getfixturevalue("tmp_path") if "tmp_path" in request.fixturenames else None
    yield
    for path in unchecked_urdfs(tmp, _CHECKED_URDFS) if tmp is not None else ():
        ok, output = check_urdf(path)
        if not ok:
            pytest.fail(f"check_urdf refuses {path}:\n{output}", pytrace=False)


def _session_leftovers() -> list[tuple[int, str]]:
    """(pid, command line) of live processes started by this test session (the marker in their environment)."""
    from ros2_cli import marked_processes

    return marked_processes(SESSION_VAR, os.environ[SESSION_VAR])


def pytest_sessionfinish(session, exitstatus):
    """No process a test started may outlive the suite, whether its test passed or failed: the ros2 CLI's daemon
    is stopped, anything else left is killed and fails the run, named."""
    import subprocess
    import time

    from ros2_cli import ROS2

    if getattr(session.config.option, "numprocesses", None) and not hasattr(session.config, "workerinput"):
        shutil.rmtree(TEMP, ignore_errors=True)
        return  # pytest-xdist's controller starts no test process: each worker checks its own
    if ROS2.exists() and _session_leftovers():
        subprocess.run([str(ROS2), "daemon", "stop"], capture_output=True, timeout=30)
    end = time.monotonic() + 10
    while _session_leftovers() and time.monotonic() < end:
        time.sleep(0.2)
    left = _session_leftovers()
    for pid, _ in left:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    shutil.rmtree(TEMP, ignore_errors=True)
    if left:
        print("\nprocesses left behind by the ROS tests (killed):\n" + "\n".join(c for _, c in left), file=sys.stderr)
        session.exitstatus = 1
