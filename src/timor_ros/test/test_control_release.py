"""The swap's hand-over between two real controller managers (../shared/ros-cpp's controller_manager 4.24,
mock hardware), driven through timor_ros's SupervisedControl from this test's own node, in a namespace of its own.

What it shows: the standby has its plugins' libraries loaded at its start, and the controllers it creates from them
come up; the old manager deactivates its controllers and unconfigures its hardware (its ``on_deactivate`` and
``on_cleanup`` run, through its ``set_hardware_component_state`` service) before the new manager loads any hardware,
and its process exits cleanly afterwards (SIGINT, exit code 0) while the new one runs; SIGINT alone (4.24) runs no
hardware transition at all. A manager that does not
answer (SIGSTOPped) is not released but stopped, and has ended before the new one gets the URDF. The order comes
from the managers' own log lines (one shared log file; their timestamps come from one system clock).
"""

from __future__ import annotations

import itertools
import os
import re
import signal
import time
from pathlib import Path

import pytest
from ros2_cli import real_package

NEEDED = ("controller_manager", "joint_trajectory_controller", "joint_state_broadcaster")
pytestmark = pytest.mark.skipif(
    not all(real_package(p) for p in NEEDED),
    reason=f"not really installed: {[p for p in NEEDED if not real_package(p)]} (make ros, ../shared/ros-cpp)",
)

ROBOT_A = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
ROBOT_B = ["base", "L_100", "J", "L_150", "J", "gripper"]
PLUGIN = "mock_components/GenericSystem"
_TESTS = itertools.count()
_LINE = re.compile(r"^\[\w+\] \[(\d+\.\d+)\] \[[\w.]+\]: (.*)$")


def _events(log: Path) -> list[tuple[float, str]]:
    """(time, message) of every log line of the managers."""
    out = []
    for line in log.read_text(errors="replace").splitlines():
        m = _LINE.match(line.strip())
        if m:
            out.append((float(m.group(1)), m.group(2).strip()))
    return out


def _first(events: list[tuple[float, str]], message: str, after: float = 0.0) -> float:
    found = [t for t, m in events if m == message and t > after]
    assert found, f"no {message!r} after {after} in the managers' log"
    return found[0]


def _mapped(pid: int) -> set[str]:
    """The file names of the shared libraries a process has loaded."""
    return {line.split()[-1].rsplit("/", 1)[-1] for line in Path(f"/proc/{pid}/maps").read_text().splitlines()
            if line.rstrip().endswith(".so") or ".so." in line}  # fmt: skip


def _dead(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")


@pytest.fixture
def control(ros_client):
    """SupervisedControl of a node in its own namespace, spun by the tests' executor; its robots' URDFs."""
    from rclpy.node import Node

    from timor_core import ModulesDB
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.ros.controller_swap import SwapTimeouts
    from timor_core.ros.robot_description import describe
    from timor_ros.controller_manager import SupervisedControl

    # a namespace per test: a manager SIGKILLed by an earlier test leaves its endpoints in the graph until its
    # lease ends, and a service client matched with such a ghost counts the service as ready before the new
    # manager's endpoint is matched (its request is then lost)
    node = Node("assembly", namespace=f"/release_{os.getpid()}_{next(_TESTS)}", context=ros_client.context)
    ros_client.add_node(node)
    db = ModulesDB.load("robco_like")
    robots = {}
    for modules in (ROBOT_A, ROBOT_B):
        assembly = ModuleAssembly.from_serial_modules(db, modules)
        robots[tuple(modules)] = (assembly, describe(assembly, srdf=False, ros2_control_plugin=PLUGIN).urdf)
    made = []

    def make(timeouts: SwapTimeouts) -> SupervisedControl:
        made.append(SupervisedControl(node, "", PLUGIN, timeouts, False))
        return made[-1]

    yield make, robots
    for supervised in made:
        supervised.close()
    ros_client.executor.remove_node(node)
    node.destroy_node()


def test_the_old_manager_releases_its_hardware_before_the_new_one_loads_any(control):
    from timor_core.ros.controller_swap import SwapTimeouts

    make, robots = control
    supervised = make(SwapTimeouts())
    swapper = supervised.swapper
    old = supervised.swap(*robots[tuple(ROBOT_A)])
    assert old.old_manager == "none"
    for modules, previous in ((ROBOT_B, ROBOT_A), (ROBOT_A, ROBOT_B)):
        services = swapper.services
        running = services.servers("load_controller")  # the running manager's server, by its reader's DDS GID
        assert len(running) == 1 and not next(iter(running)).startswith("server "), running
        old_still_there: list[bool] = []
        load = services.load

        def watched(name: str, timeout: float, load=load, running=running, seen=old_still_there) -> bool:
            seen.append(bool(services.servers("load_controller") & running))
            return load(name, timeout)

        services.load = watched
        standby = swapper.standby_process()
        assert standby is not None  # its plugins' libraries are loaded at its start (LD_PRELOAD)
        wanted = {"libjoint_state_broadcaster.so", "libjoint_trajectory_controller.so", "libmock_components.so"}
        end = time.monotonic() + 20
        while not _mapped(standby.pid) >= wanted and time.monotonic() < end:
            time.sleep(0.05)
        assert _mapped(standby.pid) >= wanted
        name_old = re.search(r'<ros2_control name="([^"]+)"', robots[tuple(previous)][1]).group(1)
        name_new = re.search(r'<ros2_control name="([^"]+)"', robots[tuple(modules)][1]).group(1)
        report = supervised.swap(*robots[tuple(modules)])
        assert report.old_manager == f"released {name_old} (unconfigured), SIGINT sent (pid {old.pid})"
        assert {c.name: c.state for c in report.controllers} == {"joint_state_broadcaster": "active",
                                                                  "arm_controller": "active"}  # fmt: skip
        end = time.monotonic() + 60  # the old process ends in the background, cleanly
        while old.pid not in swapper.stopped and time.monotonic() < end:
            time.sleep(0.02)
        assert swapper.stopped.get(old.pid) == "stopped by SIGINT (exit code 0)", swapper.stopped
        events = _events(swapper.log)
        released = _first(events, "Deactivating controllers: [ joint_state_broadcaster arm_controller ]", 0.0)
        deactivated = _first(events, f"Successful 'deactivate' of hardware '{name_old}'", released)
        cleaned = _first(events, f"Successful 'cleanup' of hardware '{name_old}'", deactivated)
        signalled = _first(events, "signal_handler(signum=2)", cleaned)  # the SIGINT only after the release
        loading = _first(events, f"Loading hardware '{name_new}'", cleaned)
        activated = _first(events, f"Successful 'activate' of hardware '{name_new}'", loading)
        assert cleaned < signalled and cleaned < loading < activated
        services.load = load
        assert old_still_there == [False, False]  # the new manager was called only once the old one had left
        old = report
        swapper.log.write_text("")  # the next swap's lines only
    # without the release, SIGINT alone deactivates nothing in 4.24 (ros2_control_node's ResourceManager has the
    # default destructor): the last manager, sent SIGINT directly, logs the signal and no hardware transition
    running = swapper.running
    assert running is not None
    os.killpg(running.pid, signal.SIGINT)
    assert running.proc.wait(60) == 0
    events = _events(swapper.log)
    assert "signal_handler(signum=2)" in [m for _, m in events], events
    assert not [m for _, m in events if "' hardware '" in m or "' of hardware '" in m], events


def test_a_manager_that_does_not_answer_is_stopped_before_the_new_one_gets_the_urdf(control):
    """SIGSTOPped: the release calls time out, the swap falls back to stopping it (SIGINT and SIGTERM stay pending
    for a stopped process: SIGKILL after the stop timeouts) and hands the URDF over only after it has ended. Its
    hardware was never deactivated (nothing answered): the log has no 'deactivate' for it."""
    from timor_core.ros.controller_swap import SwapTimeouts

    make, robots = control
    supervised = make(SwapTimeouts(stop=1.0, release=0.5))
    first = supervised.swap(*robots[tuple(ROBOT_A)])
    published: list[tuple[str, bool]] = []
    publish = supervised.swapper._publish

    def recording(topic: str, urdf: str) -> None:
        published.append((topic, _dead(first.pid)))
        publish(topic, urdf)

    supervised.swapper._publish = recording
    os.kill(first.pid, signal.SIGSTOP)
    try:
        report = supervised.swap(*robots[tuple(ROBOT_B)])
    finally:
        if not _dead(first.pid):
            os.kill(first.pid, signal.SIGKILL)
    assert report.old_manager.startswith(f"stopped by SIGKILL (exit code {-signal.SIGKILL}) (no release: "), report
    assert "did not answer within 0.5 s" in report.old_manager, report.old_manager
    assert len(published) == 1 and published[0][1], published  # dead when the new manager got the URDF
    assert {c.name: c.state for c in report.controllers} == {"joint_state_broadcaster": "active",
                                                              "arm_controller": "active"}  # fmt: skip
    assert not [m for _, m in _events(supervised.swapper.log) if m.startswith("'deactivate' hardware")]


def test_a_swap_whose_controllers_fail_releases_the_new_managers_hardware(control):
    """The new manager has activated its hardware when a controller fails to come up (here arm_controller's
    ``joints`` empty): it releases its hardware before it is stopped, as an old one does in a swap, and the next
    swap (the assembly node's rollback) works."""
    from timor_core.ros.controller_swap import ControlSwapError, SwapTimeouts, split_controllers_yaml

    make, robots = control
    supervised = make(SwapTimeouts())
    assembly, urdf = robots[tuple(ROBOT_B)]
    manager, sections = split_controllers_yaml(supervised.controllers_yaml(assembly))
    supervised.swapper.prepare(manager)
    name = re.search(r'<ros2_control name="([^"]+)"', urdf).group(1)
    broken = dict(sections)
    key = next(k for k in broken if k.endswith("arm_controller"))
    broken[key] = {"ros__parameters": {**broken[key]["ros__parameters"], "joints": []}}
    with pytest.raises(ControlSwapError, match=r"ros2_control (load|configure): "):
        supervised.swapper.swap(urdf, broken)
    assert supervised.swapper.running is None
    events = _events(supervised.swapper.log)
    activated = _first(events, f"Successful 'activate' of hardware '{name}'")
    cleaned = _first(events, f"Successful 'cleanup' of hardware '{name}'", activated)
    assert _first(events, "signal_handler(signum=2)", cleaned)
    report = supervised.swap(*robots[tuple(ROBOT_A)])  # the rollback's swap
    assert report.old_manager == "none"
    assert {c.name: c.state for c in report.controllers} == {"joint_state_broadcaster": "active",
                                                              "arm_controller": "active"}  # fmt: skip
    # closing releases the running manager's hardware too, then awaits its exit
    name_a = re.search(r'<ros2_control name="([^"]+)"', robots[tuple(ROBOT_A)][1]).group(1)
    supervised.swapper.log.write_text("")
    ended = supervised.swapper.close()
    assert ended[0] == f"released {name_a} (unconfigured), stopped by SIGINT (exit code 0)", ended
    events = _events(supervised.swapper.log)
    assert _first(events, f"Successful 'cleanup' of hardware '{name_a}'") < _first(events, "signal_handler(signum=2)")
