"""The assembly node's ros2_control: controller_manager's services over ROS and the standby's description topic,
for ``timor_core.ros.controller_swap.ControllerSwapper`` (which holds the logic: processes, files, sequence)."""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path

from builtin_interfaces.msg import Duration
from controller_manager_msgs.srv import (
    ConfigureController,
    ListControllers,
    LoadController,
    SetHardwareComponentState,
    SwitchController,
)
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.publisher import Publisher
from std_msgs.msg import String

from timor_core.errors import TimorError
from timor_core.model.assembly import ModuleAssembly
from timor_core.ros.controller_swap import (
    ControllerState,
    ControllerSwapper,
    ControlSwapError,
    ManagerTimeoutError,
    SwapReport,
    SwapTimeouts,
    controller_types,
    split_controllers_yaml,
)
from timor_core.ros.plugin_index import plugin_libraries

from .common import LATCHED, ServiceCallError, call_service, installed_executable

__all__ = ["RosManagerServices", "SupervisedControl", "ros2_control_node"]


def ros2_control_node() -> Path:
    """The installed ros2_control_node executable (a ControlSwapError naming what is missing)."""
    try:
        return installed_executable("controller_manager", "ros2_control_node")
    except TimorError as exc:
        raise ControlSwapError("start", str(exc)) from None


def _ready(client: Client, timeout: float) -> None:
    """Wait for a new manager's service, polling every 5 ms (rclpy's ``wait_for_service`` polls every 0.25 s, which
    would be most of a swap); raises ServiceCallError after ``timeout``."""
    end = time.monotonic() + timeout
    while not client.service_is_ready():
        if time.monotonic() > end:
            raise ServiceCallError(f"service {client.srv_name} is not available")
        time.sleep(0.005)


class RosManagerServices:
    """controller_manager's services of one manager name (``/ns/controller_manager``), called from callbacks."""

    def __init__(self, node: Node, manager: str) -> None:
        group = ReentrantCallbackGroup()
        self._node, self._manager = node, manager

        def client(srv: type, name: str):  # noqa: ANN202 - an rclpy Client
            return node.create_client(srv, f"{manager}/{name}", callback_group=group)

        self._list = client(ListControllers, "list_controllers")
        self._load = client(LoadController, "load_controller")
        self._configure = client(ConfigureController, "configure_controller")
        self._switch = client(SwitchController, "switch_controller")
        self._hardware = client(SetHardwareComponentState, "set_hardware_component_state")

    def list_controllers(self, timeout: float) -> list[ControllerState]:
        try:
            _ready(self._list, timeout)
            response = call_service(self._list, ListControllers.Request(), timeout)
        except ServiceCallError as exc:
            raise ManagerTimeoutError(str(exc)) from None
        return [ControllerState(c.name, c.state, tuple(c.claimed_interfaces)) for c in response.controller]

    def load(self, name: str, timeout: float) -> bool:
        return bool(self._call(self._load, LoadController.Request(name=name), timeout, "load").ok)

    def configure(self, name: str, timeout: float) -> bool:
        return bool(self._call(self._configure, ConfigureController.Request(name=name), timeout, "configure").ok)

    def activate(self, names: Sequence[str], timeout: float) -> bool:
        return self._switch_all(names, [], timeout)

    def deactivate(self, names: Sequence[str], timeout: float) -> bool:
        try:
            return self._switch_all([], names, timeout)
        except ControlSwapError as exc:
            raise ManagerTimeoutError(str(exc)) from None

    def unconfigure_hardware(self, component: str, timeout: float) -> int:
        request = SetHardwareComponentState.Request(name=component)
        request.target_state.id = 1  # lifecycle_msgs/State.PRIMARY_STATE_UNCONFIGURED (the message's own field type)
        request.target_state.label = "unconfigured"
        try:
            answer = self._call(self._hardware, request, timeout, "release")
        except ControlSwapError as exc:
            raise ManagerTimeoutError(str(exc)) from None
        return int(answer.state.id) if answer.ok else 0

    def servers(self, service: str) -> frozenset[str]:
        """Each server's request reader (its GID, from the DDS topic ``rq<service>Request``, as Fast DDS and
        Cyclone DDS name it); a middleware that names them otherwise gives one placeholder per server counted, so
        that an old manager's departure is seen only once none is left (or its process has ended)."""
        name = f"{self._manager}/{service}"
        try:
            found = self._node.get_subscriptions_info_by_topic(f"rq{name}Request", no_mangle=True)
        except Exception:  # noqa: BLE001 - a middleware that refuses the DDS name: counted only
            found = []
        gids = frozenset(bytes(i.endpoint_gid).hex() for i in found)
        count = self._node.count_services(name)
        return gids if len(gids) >= count else frozenset(f"server {k}" for k in range(count))

    def _switch_all(self, activate: Sequence[str], deactivate: Sequence[str], timeout: float) -> bool:
        request = SwitchController.Request(
            activate_controllers=list(activate),
            deactivate_controllers=list(deactivate),
            strictness=SwitchController.Request.STRICT,
            activate_asap=True,
            timeout=Duration(sec=int(timeout)),
        )
        return bool(self._call(self._switch, request, timeout, "switch").ok)

    @staticmethod
    def _call(client, request, timeout: float, step: str):  # noqa: ANN001, ANN205 - rclpy types
        try:
            _ready(client, timeout)
            return call_service(client, request, timeout)
        except ServiceCallError as exc:
            raise ControlSwapError(step, str(exc)) from None


class SupervisedControl:
    """ros2_control for the assembly node: the new robot's controllers active on a real controller manager after
    every reconfiguration (see ControllerSwapper), in the node's namespace, with the node's prefix and plugin."""

    def __init__(self, node: Node, prefix: str, plugin: str, timeouts: SwapTimeouts, cm_private_topic: bool) -> None:
        self.node, self.prefix, self.plugin = node, prefix, plugin
        namespace = node.get_namespace()
        self.manager = (namespace.rstrip("/") or "") + "/controller_manager"
        self._exe = ros2_control_node()
        self._namespace = namespace
        self._cm_topic = "~/robot_description" if cm_private_topic else "robot_description"
        self._publishers: dict[str, Publisher] = {}
        self._publishers_lock = threading.Lock()  # standbys start in the swapper's starter thread
        self.folder = Path(tempfile.mkdtemp(prefix="timor_ros2_control_"))
        self.swapper = ControllerSwapper(
            self.folder,
            self._command,
            self._publish,
            RosManagerServices(node, self.manager),
            f"{node.get_fully_qualified_name()}/controller_manager_description",
            timeouts,
        )

    def _command(self, topic: str, manager_params: Path) -> list[str]:
        """ros2_control_node in this namespace, reading its description from ``topic`` (whose publisher is created
        now, so the two are matched long before the swap)."""
        publisher = self.node.create_publisher(String, topic, LATCHED)
        with self._publishers_lock:
            self._publishers[topic] = publisher
        argv = [str(self._exe), "--ros-args", "--params-file", str(manager_params)]
        if self._namespace.strip("/"):
            argv += ["-r", f"__ns:={self._namespace}"]
        return argv + ["-r", f"controller_manager:{self._cm_topic}:={topic}"]

    def _publish(self, topic: str, urdf: str) -> None:
        with self._publishers_lock:
            self._publishers[topic].publish(String(data=urdf))
            for old in [t for t in self._publishers if t != topic][:-1]:  # keep the current and the previous one
                self.node.destroy_publisher(self._publishers.pop(old))

    def controllers_yaml(self, assembly: ModuleAssembly) -> dict:
        """ros2_controllers.yaml of ``assembly`` (the one moveit.launch.py writes)."""
        from timor_core.export.formats.moveit_config import MoveItOptions, moveit_config_data
        from timor_core.export.formats.ros2_control import Ros2ControlConfig

        options = MoveItOptions(prefix=self.prefix, ros2_control=Ros2ControlConfig(plugin=self.plugin))
        try:
            return moveit_config_data(assembly, options)["ros2_controllers.yaml"]
        except TimorError as exc:
            raise ControlSwapError("controllers", f"no controllers for this assembly: {exc}") from None

    def swap(self, assembly: ModuleAssembly, urdf: str) -> SwapReport:
        """The running manager replaced by one for ``assembly`` with every controller active."""
        manager, sections = split_controllers_yaml(self.controllers_yaml(assembly))
        if not self.swapper.controller_names():  # the first robot: the first standby, with its manager parameters
            types = controller_types(manager).values()
            self.swapper.prepare(manager, plugin_libraries([*types, self.plugin]))
        return self.swapper.swap(urdf, sections)

    def close(self, spin: bool = False) -> list[str]:
        """Stop the managers, the running one after it released its hardware (see ControllerSwapper.close), and
        remove their files. ``spin``: the node's executor has stopped (the node is shutting down), so the release's
        answers are heard by an executor of its own for the time of the release."""
        executor, done = None, threading.Event()
        try:
            if spin:
                executor = SingleThreadedExecutor(context=self.node.context)
                executor.add_node(self.node)
                threading.Thread(target=_spin_until, args=(executor, done), daemon=True).start()
            return self.swapper.close()
        finally:
            done.set()
            if executor is not None:
                executor.remove_node(self.node)
                executor.shutdown(timeout_sec=1.0)
            shutil.rmtree(self.folder, ignore_errors=True)


def _spin_until(executor: SingleThreadedExecutor, done: threading.Event) -> None:
    while not done.is_set():
        try:
            executor.spin_once(timeout_sec=0.05)
        except Exception:  # noqa: BLE001 - shutting down: an entity destroyed under the wait set ends the spin
            return
