"""assembly node: the robot description of a module assembly, reconfigurable at runtime.

Services:
  ~/set_assembly (timor_interfaces/srv/SetAssembly)  serial module IDs or a full assembly JSON
  ~/get_assembly (timor_interfaces/srv/GetAssembly)  what is published now
Topics (std_msgs/String; reliable, transient local, depth 1), relative to the node's namespace:
  robot_description, robot_description_semantic (/robot_description, ... in the root namespace)
Parameters (read-only; node names without a leading / are relative to this node's namespace):
  modules_db_node      the modules_db node whose parameters hold the module set (default modules_db)
  initial_assembly     module IDs published at start (empty: nothing until the first request)
  prefix               prefix of every link and joint name (same assembly + prefix -> same names)
  ros2_control, ros2_control_plugin   add a <ros2_control> block to the URDF
  srdf, srdf_samples, srdf_seed       the SRDF (disable-collisions sampling) on /robot_description_semantic
  robot_state_publisher_node          whose ``robot_description`` parameter is set (default robot_state_publisher)
  require_robot_state_publisher       it runs: wait for it, and fail (not skip) a reconfiguration it does not take
  service_timeout                     seconds to wait for other nodes' services (default 2.0)
  controller_manager                  start and supervise ros2_control_node (needs ros2_control): after every
                                      reconfiguration the new robot's controllers are active (see below)
  controller_manager_stop_timeout     seconds the old manager gets to shut down cleanly after SIGINT

A reconfiguration is one transaction: validate -> publish URDF and SRDF -> set robot_state_publisher's
``robot_description`` (skipped and reported if no such node offers set_parameters) -> report. A refused request
publishes nothing; if a later step fails, the last good description is published again and ``failed_step``
names the step.

With ``controller_manager``, one more step swaps the controllers (while robot_state_publisher's parameter is set,
once a robot runs: if it refuses, the last good robot and its controllers come back): controller_manager 4.24 takes
one robot per process, so the node keeps a supervised ros2_control_node for the current robot and the next one on
standby (``timor_core.ros.controller_swap``); the step has the old one release its hardware through its services
(controllers deactivated, hardware unconfigured; SIGINT then, its exit in the background; a manager that does not
release is stopped and its exit awaited) and brings the standby up with the new URDF, joint_state_broadcaster and
arm_controller active for the new robot's joints, before answering.
If it fails (``failed_step`` "ros2_control", the message names the step and the manager's log), the last good robot
is published again and its controllers brought back on a fresh manager; the message says whether that worked.
The node stops its managers when it shuts down, the running one after it released its hardware (and they end with
it if it is killed).
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, NoReturn

from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.timer import Timer
from std_msgs.msg import String

from timor_core import TimorError
from timor_core.errors import InputError, explain
from timor_core.ros.controller_swap import ControlSwapError, SwapTimeouts
from timor_core.ros.robot_description import (
    DescriptionError,
    RobotDescription,
    assembly_from_ids_or_json,
    describe,
)
from timor_interfaces.srv import GetAssembly, SetAssembly

from .common import (
    LATCHED,
    ModulesDBClient,
    ServiceCallError,
    call_service,
    declare,
    guarded,
    param,
    resolve_name,
    string_array,
)
from .parameters import check_node_settings

if TYPE_CHECKING:
    from .controller_manager import SupervisedControl

__all__ = ["AssemblyNode", "Outcome", "main"]

_CACHE_SIZE = 8


@dataclass(frozen=True)
class Outcome:
    """The report of one reconfiguration."""

    success: bool
    message: str
    urdf: str = ""
    failed_step: str = ""


class AssemblyNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("assembly", **kwargs)
        self._declare_parameters()
        self.prefix = str(param(self, "prefix", ""))
        self.plugin = str(param(self, "ros2_control_plugin")) if param(self, "ros2_control") else None
        self.with_srdf = bool(param(self, "srdf"))
        self.srdf_samples = int(param(self, "srdf_samples"))
        self.srdf_seed = int(param(self, "srdf_seed"))
        self.timeout = float(param(self, "service_timeout"))
        self.require_rsp = bool(param(self, "require_robot_state_publisher"))
        self.control: SupervisedControl | None = None
        check_node_settings(
            prefix=self.prefix,
            srdf_samples=self.srdf_samples,
            seed=self.srdf_seed,
            timeout=self.timeout,
            plugin=self.plugin,
        )

        if param(self, "controller_manager"):
            self.control = self._supervised_control()
        self._lock = threading.Lock()  # one transaction at a time
        self._helper = ThreadPoolExecutor(max_workers=1, thread_name_prefix="assembly-rsp")
        self._good: RobotDescription | None = None
        self._cache: OrderedDict[tuple, RobotDescription] = OrderedDict()
        clients = ReentrantCallbackGroup()
        self.db_client = ModulesDBClient(self, str(param(self, "modules_db_node")), self.timeout)
        rsp = str(param(self, "robot_state_publisher_node")).strip()
        self._rsp: Client | None = None
        if rsp.strip("/"):
            service = f"{resolve_name(self, rsp)}/set_parameters"
            self._rsp = self.create_client(SetParameters, service, callback_group=clients)
        self.urdf_pub = self.create_publisher(String, "robot_description", LATCHED)
        self.srdf_pub = self.create_publisher(String, "robot_description_semantic", LATCHED)
        services = ReentrantCallbackGroup()
        on_set = guarded(self, "set_assembly", self._refuse_set)(self._on_set)
        on_get = guarded(self, "get_assembly", lambda _reason, _request, response: response)(self._on_get)
        self.create_service(SetAssembly, "~/set_assembly", on_set, callback_group=services)
        self.create_service(GetAssembly, "~/get_assembly", on_get, callback_group=services)
        self._initial = string_array(self, "initial_assembly")
        self._timer: Timer | None = None
        if self._initial:
            self._timer = self.create_timer(0.2, self._apply_initial, callback_group=MutuallyExclusiveCallbackGroup())

    def _declare_parameters(self) -> None:
        """The node's parameters, all read-only: set at start (launch file, --ros-args), read once."""
        declare(self, "modules_db_node", "modules_db", "node serving the module set as parameters", read_only=True)
        declare(self, "initial_assembly", Parameter.Type.STRING_ARRAY, "module IDs published at start", read_only=True)
        declare(self, "prefix", "", "prefix of every link and joint name", read_only=True)
        declare(self, "ros2_control", False, "add a <ros2_control> block to the URDF", read_only=True)
        declare(
            self, "ros2_control_plugin", "mock_components/GenericSystem", "ros2_control hardware plugin", read_only=True
        )
        declare(self, "srdf", True, "publish an SRDF on /robot_description_semantic", read_only=True)
        declare(self, "srdf_samples", 1000, "configurations sampled for the SRDF's disabled collisions", read_only=True)
        declare(self, "srdf_seed", 0, "seed of the SRDF sampling", read_only=True)
        declare(
            self,
            "robot_state_publisher_node",
            "robot_state_publisher",
            "node whose robot_description parameter follows the assembly; empty: none (robot_state_publisher"
            " runs with description_from_topic:=true and reads /robot_description itself)",
            read_only=True,
        )
        declare(
            self,
            "require_robot_state_publisher",
            False,
            "robot_state_publisher_node runs (a launch started it): wait for it up to service_timeout, and a"
            " reconfiguration it does not take fails instead of skipping it",
            read_only=True,
        )
        declare(self, "service_timeout", 2.0, "seconds to wait for other nodes' services", read_only=True)
        declare(
            self,
            "controller_manager",
            False,
            "start and supervise ros2_control_node (needs ros2_control): every reconfiguration ends with the new"
            " robot's controllers active on a new controller manager",
            read_only=True,
        )
        declare(
            self,
            "controller_manager_stop_timeout",
            10.0,
            "seconds the old controller manager gets to shut down after SIGINT (then SIGTERM, then SIGKILL)",
            read_only=True,
        )

    def _supervised_control(self) -> SupervisedControl:
        """The node's ros2_control (parameter controller_manager); refused without ros2_control."""
        from .controller_manager import SupervisedControl
        from .launching import nodes_of_this_install

        if self.plugin is None:
            raise InputError("parameter 'controller_manager' needs ros2_control:=true", value=True)
        stop = float(param(self, "controller_manager_stop_timeout"))
        if not 0 < stop <= 600:
            raise InputError("parameter 'controller_manager_stop_timeout' must be in (0, 600] s", value=stop)
        timeouts = SwapTimeouts(stop=stop, up=max(20.0, self.timeout), call=max(10.0, self.timeout))
        private = nodes_of_this_install().cm_private_topic
        return SupervisedControl(self, self.prefix, self.plugin, timeouts, private)

    def destroy_node(self) -> None:
        """Stop the supervised controller managers (the running one releases its hardware first; SIGINT, wait)
        before the node goes."""
        try:
            if self.control is not None:
                for how in self.control.close(spin=True):  # the executor has stopped: the release spins on its own
                    self.get_logger().info(f"controller manager {how}")
                self.control = None
        finally:
            self._helper.shutdown(wait=True)
            super().destroy_node()

    # -- start-up ----------------------------------------------------------------------------------
    def _apply_initial(self) -> None:
        """Publish ``initial_assembly`` as soon as the module set can be read (retries while it cannot)."""
        outcome = self.apply(self._initial)
        if outcome.success or outcome.failed_step not in ("modules_db", "robot_state_publisher"):
            if self._timer is not None:
                self._timer.cancel()
            log = self.get_logger().info if outcome.success else self.get_logger().error
            log(f"initial assembly: {outcome.message}")
        else:
            self.get_logger().warn(f"initial assembly: {outcome.message} (retrying)", throttle_duration_sec=10.0)

    # -- services ----------------------------------------------------------------------------------
    def _on_set(self, request: SetAssembly.Request, response: SetAssembly.Response) -> SetAssembly.Response:
        outcome = self.apply(list(request.modules), request.assembly_json)
        if not outcome.success:
            self.get_logger().warn(
                f"set_assembly refused ({outcome.failed_step}): {explain(TimorError(outcome.message))}"
            )
        response.success = outcome.success
        response.message = outcome.message
        response.urdf = outcome.urdf
        response.failed_step = outcome.failed_step
        return response

    def _refuse_set(
        self, reason: str, _request: SetAssembly.Request, response: SetAssembly.Response
    ) -> SetAssembly.Response:
        """The answer to a request that raised: refused with the reason; the last good robot stays published."""
        good = self._good
        response.success = False
        response.message = f"invalid request: {reason}"
        response.urdf = good.urdf if good is not None else ""
        response.failed_step = "request"
        return response

    def _on_get(self, _request: GetAssembly.Request, response: GetAssembly.Response) -> GetAssembly.Response:
        good = self._good
        response.available = good is not None
        if good is not None:
            response.modules = list(good.module_ids)
            response.assembly_json = good.assembly_json
            response.urdf = good.urdf
            response.srdf = good.srdf or ""
        return response

    # -- the transaction ---------------------------------------------------------------------------
    def apply(self, modules: list[str], assembly_json: str = "") -> Outcome:
        """Validate -> publish URDF and SRDF -> set robot_state_publisher's parameter -> report."""
        with self._lock:
            last = self._good.urdf if self._good is not None else ""
            try:
                db = self.db_client.get()
            except (ServiceCallError, TimorError) as exc:
                return Outcome(False, f"cannot read the module set: {exc}", last, "modules_db")
            try:
                assembly = assembly_from_ids_or_json(db, modules, assembly_json)
            except TimorError as exc:
                return Outcome(False, f"invalid assembly: {exc}", last, "validate")
            try:
                new = self._describe(assembly)
            except DescriptionError as exc:
                return Outcome(False, f"cannot describe the assembly: {exc}", last, exc.step)

            try:
                self._publish(new)
            except Exception as exc:  # noqa: BLE001 - any failure to publish must restore the last good one
                self._restore()
                return Outcome(False, f"cannot publish: {exc}", last, "publish")

            beside = self._rsp_beside_controllers()
            rsp = self._rsp_set(new.urdf)
            rsp_note = None if beside else rsp.result()
            if _refused(rsp_note):
                self._restore()
                return Outcome(False, f"robot_state_publisher: {rsp_note}", last, "robot_state_publisher")
            control_note = ""
            if self.control is not None:
                try:
                    control_note = self._swap_controllers(new)
                except ControlSwapError as exc:
                    return Outcome(False, f"{exc}; {self._control_rollback()}", last, "ros2_control")
            if beside:
                rsp_note = rsp.result()
                if _refused(rsp_note):  # the new robot's controllers are up already: see _rsp_beside_controllers
                    self._restore(wait=False)
                    back = self._good_controllers_back()
                    return Outcome(False, f"robot_state_publisher: {rsp_note}; {back}", last, "robot_state_publisher")
            self._good = new
            ids = " ".join(new.module_ids)
            note = f"; robot_state_publisher {rsp_note}" if rsp_note else "; robot_state_publisher updated"
            return Outcome(True, f"published {ids} ({new.assembly.dof} DOF){note}{control_note}", new.urdf)

    def _rsp_beside_controllers(self) -> bool:
        """Whether robot_state_publisher takes the URDF (in the node's helper thread) while the controllers swap, so
        that its 10-20 ms no longer precede the swap: with ros2_control, a last good robot to return to, and its
        service matched (else it is waited for first, and a missing one fails the request before any manager is
        touched). If it then refuses or does not answer, the new robot's controllers are up already: the last good
        robot is published again and its controllers are brought back at once, while robot_state_publisher is sent
        the last good URDF (after the refused one: the helper thread keeps the order) without waiting for a node
        that may hang."""
        return (
            self.control is not None
            and self._good is not None
            and self._rsp is not None
            and self._rsp.service_is_ready()
        )

    def _swap_controllers(self, desc: RobotDescription) -> str:
        """The new robot's controllers active on a new controller manager; a note for the answer."""
        assert self.control is not None
        report = self.control.swap(desc.assembly, desc.urdf)
        self.get_logger().info(f"ros2_control swap: {report.seconds} (old manager {report.old_manager})")
        active = ", ".join(c.name for c in report.controllers)
        old = (
            ""
            if report.old_manager.startswith(("none", "stopped by SIGINT"))
            else f"; old controller manager {report.old_manager}"
        )
        seconds = report.seconds["total"]
        return f"; controllers active: {active} (controller_manager pid {report.pid}, {seconds:.2f} s){old}"

    def _control_rollback(self) -> str:
        """After a failed controller swap: the last good robot published again, its controllers brought back."""
        self._restore()
        assert self.control is not None
        running = self.control.swapper.running
        if running is not None and running.alive():  # it failed before stopping anything
            return "the previous robot is published again; its controllers still run"
        return self._good_controllers_back()

    def _good_controllers_back(self) -> str:
        """The last good robot's controllers active again on a fresh manager; a note saying whether they are."""
        if self._good is None:
            return "no controller manager runs"
        try:
            self._swap_controllers(self._good)
        except ControlSwapError as exc:
            return f"the previous robot is published again, but its controllers are not back ({exc}): none run"
        return "the previous robot is published again with its controllers active"

    def _describe(self, assembly) -> RobotDescription:
        key = (self.db_client.revision, str(assembly.to_json_data()))
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found
        desc = describe(
            assembly,
            prefix=self.prefix,
            srdf=self.with_srdf,
            srdf_samples=self.srdf_samples,
            seed=self.srdf_seed,
            ros2_control_plugin=self.plugin,
        )
        self._cache[key] = desc
        while len(self._cache) > _CACHE_SIZE:
            self._cache.popitem(last=False)
        return desc

    def _publish(self, desc: RobotDescription) -> None:
        self.urdf_pub.publish(String(data=desc.urdf))
        if desc.srdf is not None:
            self.srdf_pub.publish(String(data=desc.srdf))

    def _restore(self, wait: bool = True) -> None:
        """The last good robot published again and sent to robot_state_publisher (its answer awaited if ``wait``)."""
        if self._good is not None:
            self._publish(self._good)
            sent = self._rsp_set(self._good.urdf)
            if wait:
                sent.result()

    def _rsp_set(self, urdf: str) -> Future[str | None]:
        """robot_state_publisher's parameter set in the helper thread (one at a time, in the order sent)."""
        return self._helper.submit(self._set_rsp, urdf)

    def _rsp_node_known(self) -> bool:
        """Whether the graph knows the robot_state_publisher node whose service ``self._rsp`` calls."""
        assert self._rsp is not None
        full = self._rsp.srv_name.rsplit("/", 1)[0]
        namespace, _, name = full.rpartition("/")
        return (name, namespace or "/") in self.get_node_names_and_namespaces()

    def _set_rsp(self, urdf: str) -> str | None:
        """None if robot_state_publisher took the URDF; "skipped: ..." if there is none; else the failure."""
        if self._rsp is None:
            return f"skipped: it reads {self.urdf_pub.topic_name} (description_from_topic)"
        # a required robot_state_publisher, or one whose node is known but whose service is not matched yet, gets
        # the service timeout; with no such node at all (timor ros up without one) nothing waits
        if not self._rsp.service_is_ready() and not (
            (self.require_rsp or self._rsp_node_known()) and self._rsp.wait_for_service(timeout_sec=self.timeout)
        ):
            if self.require_rsp:
                return f"no {self._rsp.srv_name} service within {self.timeout:g} s"
            return f"skipped: no {self._rsp.srv_name} service"
        value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=urdf)
        request = SetParameters.Request(parameters=[ParameterMsg(name="robot_description", value=value)])
        try:
            response = call_service(self._rsp, request, self.timeout)
        except ServiceCallError as exc:
            return str(exc)
        result = response.results[0] if response.results else None
        if result is None or not result.successful:
            return f"refused the URDF: {result.reason if result else 'no result'}"
        return None


def _refused(rsp_note: str | None) -> bool:
    """Whether robot_state_publisher's note (``_set_rsp``) is a failure: None is success, "skipped: ..." no node."""
    return rsp_note is not None and not rsp_note.startswith("skipped")


def main(argv: list[str] | None = None) -> NoReturn:
    from .runner import exit_now, spin_nodes

    exit_now(spin_nodes([AssemblyNode], argv if argv is not None else sys.argv))


if __name__ == "__main__":
    sys.exit(main())
