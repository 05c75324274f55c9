"""moveit_supervisor node: MoveIt's move_group for whatever robot the assembly node publishes, restarted on each change.

  (started by moveit.launch.py with move_group:=true)

The real move_group reads its robot model once (see timor_core.export.move_group_process), so live reconfiguration
reaches MoveIt by a restart: each time the assembly node publishes a robot description and ``get_assembly`` confirms
it as the current robot, this node builds move_group's parameters (timor_core.export.moveit_config) for that robot,
stops the running move_group and starts one with them. A move_group that does not come up is refused: the previous
robot's comes back. ``~/status`` (latched, JSON) says which robot MoveIt plans for, or why not, and how long the swap
took. move_group's output is this node's output.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NoReturn

from moveit_msgs.msg import Constraints, JointConstraint, MoveItErrorCodes
from moveit_msgs.srv import GetMotionPlan
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import String

from timor_core.errors import InputError, TimorError, explain
from timor_core.export.move_group_process import MoveGroupError, MoveGroupSupervisor
from timor_core.export.moveit_config import MoveItOptions, move_group_parameters, moveit_config_data
from timor_core.export.robot_description import assembly_from_ids_or_json
from timor_core.export.ros2_control import Ros2ControlConfig
from timor_core.export.srdf import planning_chain
from timor_interfaces.srv import GetAssembly

from .common import LATCHED, ModulesDBClient, ServiceCallError, call_service, declare, param, resolve_name

__all__ = ["MoveItSupervisorNode", "move_group_executable", "main"]


def move_group_executable() -> Path:
    """The installed move_group (an InputError naming what is missing)."""
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        exe = Path(get_package_prefix("moveit_ros_move_group")) / "lib" / "moveit_ros_move_group" / "move_group"
    except PackageNotFoundError:
        raise InputError("the package moveit_ros_move_group is not installed", value="move_group") from None
    if not exe.is_file():
        raise InputError("no move_group executable", value=str(exe))
    return exe


class MoveItSupervisorNode(Node):
    """Runs move_group for the current robot (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("moveit_supervisor", **kwargs)
        declare(self, "config_dir", "", "folder for move_group's parameters files", read_only=True)
        declare(self, "prefix", "", "prefix of every link and joint name", read_only=True)
        declare(self, "ros2_control_plugin", "mock_components/GenericSystem", "hardware plugin", read_only=True)
        declare(self, "ros_distro", "", "ROS 2 distro whose MoveIt layout to write", read_only=True)
        declare(self, "ready_timeout", 60.0, "seconds a new move_group may take to come up", read_only=True)
        folder = Path(str(param(self, "config_dir", "")) or ".").expanduser()
        self.options = MoveItOptions(
            prefix=str(param(self, "prefix", "")),
            ros2_control=Ros2ControlConfig(plugin=str(param(self, "ros2_control_plugin"))),
            **({"distro": str(param(self, "ros_distro"))} if param(self, "ros_distro") else {}),
        )
        self.supervisor = MoveGroupSupervisor(
            move_group_executable(), self.get_namespace(), folder, float(param(self, "ready_timeout", 60.0))
        )
        group = ReentrantCallbackGroup()
        self.db_client = ModulesDBClient(self, "modules_db")
        self._get = self.create_client(GetAssembly, resolve_name(self, "assembly/get_assembly"), callback_group=group)
        self._plan = self.create_client(GetMotionPlan, "plan_kinematic_path", callback_group=group)
        self._status = self.create_publisher(String, "~/status", LATCHED)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="move_group")  # owns the process
        self._lock = threading.Lock()
        self._wanted = ""  # the last SRDF announced
        self._running = ""  # the SRDF of the robot move_group plans for
        self.create_subscription(String, "robot_description_semantic", self._on_srdf, LATCHED, callback_group=group)

    def _on_srdf(self, msg: String) -> None:
        with self._lock:
            self._wanted = msg.data
        self._worker.submit(self._follow)

    def _current(self, srdf: str, timeout: float = 30.0) -> GetAssembly.Response | None:
        """The assembly node's current robot once it is the one with ``srdf`` (None if it never becomes it)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            got = call_service(self._get, GetAssembly.Request(), 10.0)
            if got.available and got.srdf == srdf:
                return got
            with self._lock:
                if self._wanted != srdf:
                    return None  # a newer robot was announced meanwhile
            time.sleep(0.05)
        return None

    def _follow(self) -> None:
        with self._lock:
            srdf = self._wanted
        if not srdf or srdf == self._running:
            return
        t0 = time.monotonic()
        try:
            current = self._current(srdf)
            if current is None:
                return  # refused by the assembly node (rolled back) or superseded: nothing to do here
            assembly = assembly_from_ids_or_json(self.db_client.get(), (), current.assembly_json)
            params = move_group_parameters(moveit_config_data(assembly, self.options), current.urdf, current.srdf)
            timing = self.supervisor.start(params)
            self._wait_until_it_plans(list(planning_chain(assembly, self.options.prefix).commanded))
        except (TimorError, ServiceCallError) as exc:
            self._report(False, explain(exc) if not isinstance(exc, MoveGroupError) else str(exc).split("\n")[0])
            self.get_logger().error(f"move_group not restarted: {explain(exc)}")
            return
        self._running = srdf
        name = " ".join(current.modules)
        self._report(True, f"planning for {name}", request=time.monotonic() - t0, stop=timing.stop, up=timing.start)
        self.get_logger().info(f"move_group planning for {name} (up in {timing.start:.2f} s)")

    def _wait_until_it_plans(self, joints: list[str]) -> None:
        """Until move_group plans from the robot's current state (it has /joint_states of every joint): a plan whose
        goal every state satisfies. "Ready" in its output comes before its state monitor has heard the joints."""
        request = GetMotionPlan.Request()
        r = request.motion_plan_request
        r.group_name, r.num_planning_attempts, r.allowed_planning_time = self.options.group, 1, 1.0
        r.start_state.is_diff = True
        anywhere = [JointConstraint(joint_name=j, tolerance_above=1e3, tolerance_below=1e3, weight=1.0) for j in joints]
        r.goal_constraints = [Constraints(joint_constraints=anywhere)]
        end = time.monotonic() + self.supervisor.ready_timeout
        while time.monotonic() < end:
            try:
                answer = call_service(self._plan, request, 10.0)
                if answer.motion_plan_response.error_code.val == MoveItErrorCodes.SUCCESS:
                    return
            except ServiceCallError:
                pass
            time.sleep(0.1)
        raise MoveGroupError("move_group came up but cannot plan from the robot's current state (no /joint_states?)")

    def _report(self, ok: bool, message: str, **seconds: float) -> None:
        status = {"ok": ok, "message": message, **{k: round(v, 4) for k, v in seconds.items()}}
        self._status.publish(String(data=json.dumps(status)))

    def destroy_node(self) -> None:
        self._worker.submit(self.supervisor.close).result(timeout=60)
        self._worker.shutdown(wait=True)
        super().destroy_node()


def main(argv: list[str] | None = None) -> NoReturn:
    from .runner import exit_now, spin_nodes

    exit_now(spin_nodes([MoveItSupervisorNode], argv if argv is not None else sys.argv))


if __name__ == "__main__":
    sys.exit(main())
