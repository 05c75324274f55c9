"""timor_core.ros.controller_swap without ROS: the process supervision on real processes (clean SIGINT stop,
escalation when one hangs, no orphan when the supervisor is killed) and the split of the real ros2_controllers.yaml.
The swap itself against the real controller_manager is src/timor_ros/test/test_control_swap.py."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from timor_core import ModulesDB
from timor_core.errors import TimorError
from timor_core.export.formats.moveit_config import CM_KEY, MoveItOptions, moveit_config_data
from timor_core.model.assembly import ModuleAssembly
from timor_core.ros.controller_swap import (
    ControllerSwapper,
    ControlSwapError,
    ManagerProcess,
    ManagerTimeoutError,
    hardware_components,
    split_controllers_yaml,
)
from timor_core.ros.robot_description import describe

# a stand-in for ros2_control_node's signal handling: prints its pid, ends on SIGINT (or ignores it)
_CHILD = textwrap.dedent(
    """
    import signal, sys, time
    if sys.argv[1] == "ignore":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    else:
        signal.signal(signal.SIGINT, lambda *_: sys.exit(0))
    print("ready", flush=True)
    while True:
        time.sleep(0.05)
    """
)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:  # a zombie is gone for our purpose (its parent has not reaped it)
        return f.read().split(")")[-1].split()[0] != "Z"


def _wait_ready(log: Path) -> None:
    end = time.monotonic() + 20
    while "ready" not in (log.read_text() if log.exists() else ""):
        assert time.monotonic() < end, "the child did not start"
        time.sleep(0.02)


def test_a_manager_that_ends_on_sigint_is_stopped_by_it(tmp_path):
    log = tmp_path / "m.log"
    proc = ManagerProcess([sys.executable, "-c", _CHILD, "clean"], log)
    _wait_ready(log)
    assert proc.alive()
    how = proc.stop(timeout=10)
    assert how == "stopped by SIGINT (exit code 0)"
    assert not proc.alive()
    assert proc.stop(timeout=1).startswith("exited before")  # stopping twice is harmless


def test_a_manager_that_ignores_sigint_is_escalated_and_the_message_says_so(tmp_path):
    log = tmp_path / "m.log"
    proc = ManagerProcess([sys.executable, "-c", _CHILD, "ignore"], log)
    _wait_ready(log)
    how = proc.stop(timeout=0.5)
    assert how == f"stopped by SIGTERM (exit code {-signal.SIGTERM})"


def test_a_missing_executable_is_a_typed_error_naming_it(tmp_path):
    with pytest.raises(ControlSwapError, match=r"ros2_control start: cannot start /nonexistent/ros2_control_node"):
        ManagerProcess(["/nonexistent/ros2_control_node"], tmp_path / "m.log")
    assert issubclass(ControlSwapError, TimorError) and issubclass(ManagerTimeoutError, TimeoutError)


def test_no_manager_outlives_a_killed_supervisor(tmp_path):
    """The supervisor is SIGKILLed (no clean-up of its own runs): its manager, in a session of its own, still ends
    (PR_SET_PDEATHSIG sends it SIGINT)."""
    supervisor = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from timor_core.ros.controller_swap import ControllerSwapper
        swapper = ControllerSwapper(Path({str(tmp_path)!r}), lambda topic, params: [sys.executable, "-c", {_CHILD!r},
                                    "clean"], lambda topic, urdf: None, None, "/t")
        swapper.prepare({{"update_rate": 100, "arm_controller": {{"type": "x/Y"}}}})
        print(swapper.standby_process().pid, flush=True)
        sys.stdin.read()
        """
    )
    parent = subprocess.Popen([sys.executable, "-c", supervisor], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    _wait_ready(tmp_path / "ros2_control_node.log")
    parent.kill()
    parent.wait()
    end = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < end:
        time.sleep(0.05)
    outlived = _alive(pid)
    if outlived:
        os.kill(pid, signal.SIGKILL)
    assert not outlived, "the manager outlived its killed supervisor"
    manager_file = (tmp_path / "manager_1.yaml").read_text()  # the standby's controllers read the swap's file
    assert f"params_file: {tmp_path / 'controllers_1.yaml'}" in manager_file


def test_the_real_controllers_yaml_splits_into_manager_and_controller_parameters():
    db = ModulesDB.load("robco_like")
    assembly = ModuleAssembly.from_serial_modules(db, ["base", "J", "L_250", "J", "gripper"])
    data = moveit_config_data(assembly, MoveItOptions(prefix="p_"))["ros2_controllers.yaml"]
    manager, controllers = split_controllers_yaml(data)
    assert manager["update_rate"] > 0
    assert manager["arm_controller"]["type"] == "joint_trajectory_controller/JointTrajectoryController"
    assert manager["joint_state_broadcaster"]["type"] == "joint_state_broadcaster/JointStateBroadcaster"
    assert CM_KEY not in controllers
    joints = controllers["/**/arm_controller"]["ros__parameters"]["joints"]
    assert joints == ["p_m1_J_joint", "p_m3_J_joint"]


def test_a_swap_before_prepare_is_refused_by_name(tmp_path):
    swapper = ControllerSwapper(tmp_path, lambda t, p: ["true"], lambda t, u: None, None, "/t")
    with pytest.raises(ControlSwapError, match="ros2_control start: no controller manager parameters"):
        swapper.swap("<robot/>", {})
    assert swapper.close() == []


def test_the_hardware_components_a_manager_releases_are_the_urdfs_ros2_control_blocks():
    """The swap unconfigures, on the old manager, each component named by a ``<ros2_control>`` block of its URDF."""
    db = ModulesDB.load("robco_like")
    assembly = ModuleAssembly.from_serial_modules(db, ["base", "J", "L_250", "J", "gripper"])
    urdf = describe(assembly, srdf=False, ros2_control_plugin="mock_components/GenericSystem").urdf
    names = hardware_components(urdf)
    assert len(names) == 1 and f'<ros2_control name="{names[0]}" type="system">' in urdf
    assert hardware_components(describe(assembly, srdf=False).urdf) == ()  # no block: nothing to release
    assert hardware_components("<robot") == ()  # unreadable: nothing known, the swap falls back to the exit


class _GhostedServices:
    """Manager services as the graph shows them after a SIGKILLed manager: its servers (``ghost``) linger, the new
    manager's show up only a few looks after its URDF came; a call sent while a service's only server in sight is
    the ghost is lost (ManagerTimeoutError, as a request no live server took)."""

    def __init__(self) -> None:
        self.ghosts, self.looks, self.urdfs, self.loaded = False, 0, 0, []

    def servers(self, service: str) -> frozenset[str]:
        self.looks += 1
        new = {f"new {self.urdfs}"} if self.urdfs and self.looks > 40 else set()
        return frozenset(({"ghost"} if self.ghosts else set()) | new)

    def list_controllers(self, timeout: float):  # noqa: ANN201
        from timor_core.ros.controller_swap import ControllerState

        return [ControllerState(n, "active") for n in self.loaded]

    def _through_new(self, service: str) -> None:
        if not any(s.startswith("new") for s in self.servers(service)):
            raise ManagerTimeoutError(f"{service} did not answer")

    def load(self, name: str, timeout: float) -> bool:
        self._through_new("load_controller")
        return True

    def configure(self, name: str, timeout: float) -> bool:
        self._through_new("configure_controller")
        return True

    def activate(self, names, timeout: float) -> bool:  # noqa: ANN001
        self._through_new("switch_controller")
        self.loaded = list(names)
        return True


def test_a_swap_after_a_killed_manager_calls_the_new_one_only_once_it_serves_besides_the_ghost(tmp_path):
    """The killed manager's servers stay in the graph; the swap's calls wait until the new manager's are there too
    (without that wait its load_controller was sent to the ghost alone and went unanswered)."""
    services = _GhostedServices()

    def publish(topic: str, urdf: str) -> None:
        services.urdfs += 1
        services.looks, services.loaded = 0, []

    swapper = ControllerSwapper(tmp_path, lambda topic, params: [sys.executable, "-c", _CHILD, "clean"], publish,
                                services, "/robot_description_cm")  # fmt: skip
    urdf = '<robot name="r"><ros2_control name="arm" type="system"/></robot>'
    try:
        swapper.prepare({"arm_controller": {"type": "x/Y"}})
        assert swapper.swap(urdf, {}).controllers[0].name == "arm_controller"
        os.kill(swapper.running.pid, signal.SIGKILL)  # no release: its servers linger as ghosts
        while swapper.running.alive():
            time.sleep(0.01)
        services.ghosts = True
        report = swapper.swap(urdf, {})
        assert report.old_manager.startswith("exited before") or "no release" in report.old_manager, report
        assert [c.name for c in report.controllers] == ["arm_controller"]
    finally:
        swapper.close(release=False)
