"""The floor of `live_swap.py --product N --floor`: the same ros2_control swap with nothing of timor on its path.

What the product's swap must do at least, on the real controller_manager (4.24), to hand the hardware from the old
robot's manager to a new one under the same name (`/controller_manager`, which spawners and MoveIt address) without
both driving it at once: the old manager deactivates its controllers (one strict `switch_controller`) and
unconfigures its hardware (`set_hardware_component_state`); SIGINT; the URDF goes to a standby manager started
ahead (its `robot_description` remapped to a topic of its own, the same plugin libraries preloaded); every call
after that waits until the old manager's servers of the four services called have left the graph, or its process
has ended (else a call may reach the old one); the standby's
first `list_controllers` answer with none loaded; `load_controller` and `configure_controller` for both; one strict
`switch_controller` activating both; `list_controllers` shows both active.

Here these steps are plain rclpy calls from the benchmark's own node, in a namespace of their own (`/floor`), while
the product's launch runs beside it (the same participants in the graph, the same machine load): no URDF
generation, no validation, no robot_state_publisher, no assembly node. It shares no code with the product's swap,
not even its service helpers (timor_ros's ``call_service``, ``RosManagerServices.servers``, which ``_call`` and
``_servers`` below repeat on purpose): a slowdown there cannot move the floor along with the product. What the
product takes above this floor, in the same run, is timor's share (`live_swap.py` reports the ratio;
benchmarks/README.md has the budget).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

NS = "/floor"
MANAGER = f"{NS}/controller_manager"
CONTROLLERS = ("joint_state_broadcaster", "arm_controller")
CALLED = ("list_controllers", "load_controller", "configure_controller", "switch_controller")


def _urdf(modules: list[str]) -> str:
    from timor_core import ModulesDB
    from timor_core.export.formats.ros2_control import Ros2ControlConfig
    from timor_core.export.formats.urdf import assembly_to_urdf
    from timor_core.model.assembly import ModuleAssembly

    assembly = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), modules)
    return assembly_to_urdf(assembly, ros2_control=Ros2ControlConfig())


def _params(modules: list[str], folder: Path, k: int) -> Path:
    """The manager's parameters (in /floor) with each controller's ``params_file`` naming its robot's sections."""
    import yaml
    from control_swap import controllers_yaml

    from timor_core.export.formats.moveit_config import CM_KEY

    data = yaml.safe_load(controllers_yaml(modules, folder).read_text())  # keys "/**/<node>": any namespace
    manager = data.pop(CM_KEY)
    sections = folder / f"floor_controllers_{k}.yaml"
    sections.write_text(yaml.safe_dump(data))
    for name in CONTROLLERS:
        manager["ros__parameters"][name]["params_file"] = str(sections)
    path = folder / f"floor_manager_{k}.yaml"
    path.write_text(yaml.safe_dump({CM_KEY: manager}))
    return path


class Floor:
    """Two ros2_control_node processes at a time in /floor: the running one and the next on standby."""

    def __init__(self, client, robots: tuple[list[str], ...], folder: Path) -> None:  # noqa: ANN001 - RosClient
        from controller_manager_msgs.srv import (
            ConfigureController,
            ListControllers,
            LoadController,
            SetHardwareComponentState,
            SwitchController,
        )

        from timor_core.ros.plugin_index import plugin_libraries

        self.node, self.robots, self.folder = client.node, robots, folder
        self.urdfs = [_urdf(m) for m in robots]
        node, group = client.node, client.group
        self.list = node.create_client(ListControllers, f"{MANAGER}/list_controllers", callback_group=group)
        self.load = node.create_client(LoadController, f"{MANAGER}/load_controller", callback_group=group)
        self.configure = node.create_client(ConfigureController, f"{MANAGER}/configure_controller",
                                            callback_group=group)  # fmt: skip
        self.switch = node.create_client(SwitchController, f"{MANAGER}/switch_controller", callback_group=group)
        self.hardware = node.create_client(SetHardwareComponentState, f"{MANAGER}/set_hardware_component_state",
                                           callback_group=group)  # fmt: skip
        libraries = plugin_libraries(["joint_state_broadcaster/JointStateBroadcaster",
                                      "joint_trajectory_controller/JointTrajectoryController",
                                      "mock_components/GenericSystem"])  # fmt: skip
        self.env = {**os.environ, "LD_PRELOAD": ":".join(str(p) for p in libraries)}
        self.k = 0
        self.running: subprocess.Popen | None = None
        self.running_robot = 0
        self.running_publisher: object = None  # its description's publisher, destroyed once it is gone
        self.standby: tuple[subprocess.Popen, object] | None = None  # the process and its description's publisher
        self._stoppers: list[threading.Thread] = []

    def _start(self, robot: int) -> tuple[subprocess.Popen, object]:
        """A manager for ``robot`` on standby, and the latched publisher of its description topic."""
        from std_msgs.msg import String

        from timor_ros.common import LATCHED

        self.k += 1
        topic = f"{NS}/standby_description_{self.k}"
        publisher = self.node.create_publisher(String, topic, LATCHED)
        exe = Path(sys.prefix) / "lib" / "controller_manager" / "ros2_control_node"
        argv = [str(exe), "--ros-args", "--params-file", str(_params(self.robots[robot], self.folder, self.k)),
                "-r", f"__ns:={NS}", "-r", f"controller_manager:robot_description:={topic}"]  # fmt: skip
        log = (self.folder / "floor_managers.log").open("a")
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True), (
            publisher
        )

    def _call(self, client, request, timeout: float = 10.0):  # noqa: ANN001, ANN202 - rclpy types
        end = time.monotonic() + timeout
        while not client.service_is_ready():  # as the product: a request sent before the match would be lost
            if time.monotonic() > end:
                return None
            time.sleep(0.001)
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _f: done.set())
        if not done.wait(timeout):
            client.remove_pending_request(future)
            return None
        return future.result()

    def _servers(self) -> frozenset[bytes]:
        """The request readers (DDS GIDs) of every service a swap calls, as the product identifies the old ones."""
        found = []
        for service in CALLED:
            found += self.node.get_subscriptions_info_by_topic(f"rq{MANAGER}/{service}Request", no_mangle=True)
        return frozenset(bytes(i.endpoint_gid) for i in found)

    def start(self) -> None:
        """The first robot's manager with both controllers active, and the standby for the second."""
        self.running, publisher = self._start(0)
        self.running_publisher = publisher
        self._hand_over(publisher, self.urdfs[0])
        self._bring_up()
        self.standby = self._start(1)

    def _hand_over(self, publisher, urdf: str) -> None:  # noqa: ANN001
        from std_msgs.msg import String

        publisher.publish(String(data=urdf))

    def _bring_up(self) -> dict[str, float]:
        """From the URDF handed over: the new manager's first answer (none loaded), loads, configures, the switch."""
        from controller_manager_msgs.srv import ConfigureController, ListControllers, LoadController

        marks = {"start": time.monotonic()}
        end = marks["start"] + 60
        while True:
            if self.list.service_is_ready():
                got = self._call(self.list, ListControllers.Request(), 0.1)
                if got is not None and not got.controller:
                    break
            if time.monotonic() > end:
                raise RuntimeError("the floor's new controller_manager did not answer within 60 s")
            time.sleep(0.001)
        marks["up"] = time.monotonic()
        for client, request in ((self.load, LoadController.Request), (self.configure, ConfigureController.Request)):
            for name in CONTROLLERS:
                answer = self._call(client, request(name=name))
                if answer is None or not answer.ok:
                    raise RuntimeError(f"floor: {client.srv_name} {name} failed")
            marks[client.srv_name.rsplit("/", 1)[1]] = time.monotonic()
        self._switch(activate=True)
        marks["activate"] = time.monotonic()
        return {k: marks[k] - marks[p] for p, k in zip(marks, list(marks)[1:])}

    def _switch(self, activate: bool) -> None:
        """One strict switch_controller (de)activating both controllers."""
        from controller_manager_msgs.srv import SwitchController

        request = SwitchController.Request(activate_asap=True, strictness=SwitchController.Request.STRICT)
        if activate:
            request.activate_controllers = list(CONTROLLERS)
        else:
            request.deactivate_controllers = list(CONTROLLERS)
        request.timeout.sec = 5
        answer = self._call(self.switch, request)
        if answer is None or not answer.ok:
            raise RuntimeError(f"floor: switch_controller ({'activate' if activate else 'deactivate'}) failed")

    def swap(self) -> dict[str, float]:
        """One swap to the standby's robot; the seconds of each part and in total; the next standby started."""
        from controller_manager_msgs.srv import ListControllers, SetHardwareComponentState

        assert self.running is not None and self.standby is not None
        t0 = time.monotonic()
        self._switch(activate=False)
        hardware = SetHardwareComponentState.Request(name=_component(self.urdfs[self.running_robot]))
        hardware.target_state.id, hardware.target_state.label = 1, "unconfigured"
        answer = self._call(self.hardware, hardware)
        if answer is None or not answer.ok or answer.state.id != 1:
            raise RuntimeError("floor: the old hardware was not unconfigured")
        t_release = time.monotonic()
        old, before = self.running, self._servers()
        old.send_signal(signal.SIGINT)
        stopper = threading.Thread(target=old.wait, daemon=True)
        stopper.start()
        self._stoppers.append(stopper)
        old_publisher = self.running_publisher
        self.running, publisher = self.standby
        self.running_publisher = publisher
        self.running_robot = 1 - self.running_robot
        self._hand_over(publisher, self.urdfs[self.running_robot])
        deadline = time.monotonic() + 10
        while before & self._servers() and stopper.is_alive():  # until they are gone, or the process
            if time.monotonic() > deadline:
                raise RuntimeError("floor: the old manager's services were still in the graph after 10 s")
            time.sleep(0.001)
        t_stop = time.monotonic()
        parts = self._bring_up()
        got = self._call(self.list, ListControllers.Request())
        if got is None or {c.name for c in got.controller if c.state == "active"} != set(CONTROLLERS):
            raise RuntimeError("floor: not both active after the swap")
        t_confirmed = time.monotonic()
        self.node.destroy_publisher(old_publisher)  # outside the timed part
        self.standby = self._start(1 - self.running_robot)
        return {"floor_release_s": t_release - t0, "floor_stop_s": t_stop - t0,
                **{f"floor_{k}_s": v for k, v in parts.items()}, "floor_s": t_confirmed - t0}  # fmt: skip

    def close(self) -> None:
        """SIGINT to the running manager and the standby (SIGKILL after 10 s), their exits awaited."""
        for proc in [p for p in (self.running, self.standby[0] if self.standby else None) if p is not None]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        for stopper in self._stoppers:
            stopper.join(10)


def _component(urdf: str) -> str:
    import xml.etree.ElementTree as ET

    return ET.fromstring(urdf).find("ros2_control").get("name")
