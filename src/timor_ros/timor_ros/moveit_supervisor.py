"""moveit_supervisor node: MoveIt's move_group for whatever robot the assembly node publishes, restarted on each change.

  (started by moveit.launch.py with move_group:=true)

The real move_group reads its robot model once (see timor_core.ros.move_group_process), so live reconfiguration
reaches MoveIt by a restart: each time the assembly node publishes a robot description and ``get_assembly`` confirms
it as the current robot, this node builds move_group's parameters
(timor_core.export.formats.moveit_config) for that robot,
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

from moveit_msgs.action import ExecuteTrajectory
from moveit_msgs.msg import Constraints, JointConstraint, MoveItErrorCodes
from moveit_msgs.srv import GetMotionPlan
from rclpy.action import ActionClient
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectoryPoint

from timor_core.errors import InputError, TimorError, explain
from timor_core.export.formats.moveit_config import (
    OMPL_PLANNER_CONFIGS,
    MoveItOptions,
    move_group_parameters,
    moveit_config_data,
)
from timor_core.export.formats.ros2_control import Ros2ControlConfig
from timor_core.export.formats.srdf import planning_groups
from timor_core.ros.move_group_process import MoveGroupError, MoveGroupSupervisor
from timor_core.ros.robot_description import assembly_from_ids_or_json
from timor_interfaces.srv import GetAssembly

from .common import (
    LATCHED,
    ModulesDBClient,
    ServiceCallError,
    call_service,
    declare,
    future_done,
    installed_executable,
    param,
    resolve_name,
)

__all__ = ["MoveItSupervisorNode", "move_group_executable", "main"]

WORKSPACE = 10.0
"""Half the side (m) of the planning volume of the supervisor's probe plans."""
NO_STATE = "Failed to fetch current robot state"
"""What move_group says when it plans before its state monitor has heard every joint."""
SHUTDOWN_STOP_TIMEOUT = 1.5
"""Seconds before each harder signal (SIGINT, SIGTERM, SIGKILL) when move_group is stopped at this node's end."""


def move_group_executable() -> Path:
    """The installed move_group (an InputError naming what is missing)."""
    try:
        return installed_executable("moveit_ros_move_group", "move_group")
    except TimorError as exc:
        raise InputError(str(exc), value="move_group") from None


class MoveItSupervisorNode(Node):
    """Runs move_group for the current robot (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("moveit_supervisor", **kwargs)
        declare(self, "config_dir", "", "folder for move_group's parameters files", read_only=True)
        declare(self, "prefix", "", "prefix of every link and joint name", read_only=True)
        declare(self, "ros2_control_plugin", "mock_components/GenericSystem", "hardware plugin", read_only=True)
        declare(self, "ros_distro", "", "ROS 2 distro whose MoveIt layout to write", read_only=True)
        declare(self, "ready_timeout", 60.0, "seconds a new move_group may take to come up", read_only=True)
        declare(
            self, "ros2_control", True, "a controller executes trajectories (ready once one executes)", read_only=True
        )
        self.execute = bool(param(self, "ros2_control", True))
        folder = Path(str(param(self, "config_dir", "")) or ".").expanduser()
        distro = {"distro": str(param(self, "ros_distro"))} if param(self, "ros_distro") else {}
        self.options = MoveItOptions.build(
            None,
            prefix=str(param(self, "prefix", "")),
            ros2_control=Ros2ControlConfig(plugin=str(param(self, "ros2_control_plugin"))),
            **distro,
        )
        self.supervisor = MoveGroupSupervisor(
            move_group_executable(), self.get_namespace(), folder, float(param(self, "ready_timeout", 60.0))
        )
        group = ReentrantCallbackGroup()
        self.db_client = ModulesDBClient(self, "modules_db")
        self._get: Client = self.create_client(
            GetAssembly, resolve_name(self, "assembly/get_assembly"), callback_group=group
        )
        self._plan: Client = self.create_client(GetMotionPlan, "plan_kinematic_path", callback_group=group)
        self._execute: ActionClient = ActionClient(self, ExecuteTrajectory, "execute_trajectory", callback_group=group)
        self._joints: dict[str, float] = {}
        self.create_subscription(JointState, "joint_states", self._on_joints, 10, callback_group=group)
        self._status = self.create_publisher(String, "~/status", LATCHED)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="move_group")  # owns the process
        self._lock = threading.Lock()
        self._closing = threading.Event()  # destroy_node: a swap under way gives up at its next step
        self._wanted = ""  # the last SRDF announced
        self._running = ""  # the SRDF of the robot move_group plans for
        self.create_subscription(String, "robot_description_semantic", self._on_srdf, LATCHED, callback_group=group)

    def _on_srdf(self, msg: String) -> None:
        with self._lock:
            self._wanted = msg.data
        self._worker.submit(self._follow)

    def _waiting(self, end: float) -> bool:
        """Whether a swap's wait goes on: before ``end`` (monotonic) and while the node is not closing."""
        return time.monotonic() < end and not self._closing.is_set()

    def _current(self, srdf: str, timeout: float = 30.0) -> GetAssembly.Response | None:
        """The assembly node's current robot once it is the one with ``srdf`` (None if it never becomes it)."""
        end = time.monotonic() + timeout
        while self._waiting(end):
            got = call_service(self._get, GetAssembly.Request(), 10.0)
            if got.available and got.srdf == srdf:
                return got
            with self._lock:
                if self._wanted != srdf:
                    return None  # a newer robot was announced meanwhile
            self._closing.wait(0.05)
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
            group, chain = planning_groups(assembly, self.options.prefix, self.options.group)[0]
            self._wait_until_it_plans(group, list(chain.commanded))
            self._wait_until_it_executes(list(chain.commanded))
        except (TimorError, ServiceCallError) as exc:
            self._report(False, explain(exc) if not isinstance(exc, MoveGroupError) else str(exc).split("\n")[0])
            self.get_logger().error(f"move_group not restarted: {explain(exc)}")
            return
        self._running = srdf
        name = " ".join(current.modules)
        self._report(True, f"planning for {name}", request=time.monotonic() - t0, stop=timing.stop, up=timing.start)
        self.get_logger().info(f"move_group planning for {name} (up in {timing.start:.2f} s)")

    def _on_joints(self, msg: JointState) -> None:
        with self._lock:
            self._joints.update(zip(msg.name, msg.position))

    def _wait_until_it_plans(self, group: str, joints: list[str]) -> None:
        """Until move_group plans from the robot's current state: "ready" in its output comes before its state
        monitor has heard /joint_states, and a plan then starts from a made-up state (move_group only warns). The
        probe asks to stay where the robot is; it counts once move_group answers without that warning."""
        request = GetMotionPlan.Request()
        r = request.motion_plan_request
        r.group_name, r.num_planning_attempts, r.allowed_planning_time = group, 1, 1.0
        r.pipeline_id, r.planner_id = "ompl", next(iter(OMPL_PLANNER_CONFIGS))
        r.max_velocity_scaling_factor = r.max_acceleration_scaling_factor = 1.0
        w = r.workspace_parameters  # a planning volume, so that move_group does not warn about its absence
        w.min_corner.x = w.min_corner.y = w.min_corner.z = -WORKSPACE
        w.max_corner.x = w.max_corner.y = w.max_corner.z = WORKSPACE
        r.start_state.is_diff = True
        process, end = self.supervisor.process, time.monotonic() + self.supervisor.ready_timeout
        while process is not None and self._waiting(end):
            with self._lock:
                here = {j: self._joints[j] for j in joints if j in self._joints}
            if len(here) == len(joints):
                stay = [JointConstraint(joint_name=j, position=v, tolerance_above=1e-3, tolerance_below=1e-3,
                                        weight=1.0) for j, v in here.items()]  # fmt: skip
                r.goal_constraints = [Constraints(joint_constraints=stay)]
                mark = process.lines
                try:
                    call_service(self._plan, request, 2.0)  # a lost request is asked again soon
                    time.sleep(0.05)  # its output of that request
                    if not process.said_since(mark, NO_STATE):
                        return
                except ServiceCallError:
                    pass
            self._closing.wait(0.2)
        if self._closing.is_set():
            raise MoveGroupError("the supervisor is shutting down")
        raise MoveGroupError("move_group came up but has no current state of the robot (no /joint_states?)")

    def _wait_until_it_executes(self, joints: list[str]) -> None:
        """Until move_group executes through the arm controller: a one-point trajectory to where the robot is (no
        motion). Its controller client connects to the controller's action server some time after it is up, and a
        goal before that fails ("not connected"); with ros2_control:=false there is no controller to wait for."""
        if not self.execute:
            return
        end = time.monotonic() + self.supervisor.ready_timeout
        while self._waiting(end):
            with self._lock:
                here = [self._joints.get(j) for j in joints]
            if all(v is not None for v in here):
                goal = ExecuteTrajectory.Goal()
                goal.trajectory.joint_trajectory.joint_names = list(joints)
                point = JointTrajectoryPoint(positions=[float(v) for v in here])  # type: ignore[arg-type]
                point.time_from_start.nanosec = 100_000_000
                goal.trajectory.joint_trajectory.points = [point]
                if self._executed(goal):
                    return
            self._closing.wait(0.3)
        if self._closing.is_set():
            raise MoveGroupError("the supervisor is shutting down")
        raise MoveGroupError("move_group came up but cannot execute through the arm controller")

    def _executed(self, goal: ExecuteTrajectory.Goal) -> bool:
        if not self._execute.wait_for_server(timeout_sec=2.0):
            return False
        sent = self._execute.send_goal_async(goal)
        handle = sent.result() if future_done(sent, 5.0) else None
        if handle is None or not handle.accepted:
            return False
        result = handle.get_result_async()
        answer = result.result() if future_done(result, 10.0) else None
        return answer is not None and answer.result.error_code.val == MoveItErrorCodes.SUCCESS

    def _report(self, ok: bool, message: str, **seconds: float) -> None:
        status = {"ok": ok, "message": message, **{k: round(v, 4) for k, v in seconds.items()}}
        self._status.publish(String(data=json.dumps(status)))

    def destroy_node(self) -> None:
        self._closing.set()
        # within launch's escalation (SIGTERM 5 s after its SIGINT, SIGKILL 10 s later): a move_group that hangs on
        # SIGINT (seen at load ~20) no longer holds this node until launch kills it (exit -9, a failed test)
        self._worker.submit(self.supervisor.close, SHUTDOWN_STOP_TIMEOUT).result(timeout=60)
        self._worker.shutdown(wait=True)
        super().destroy_node()


def main(argv: list[str] | None = None) -> NoReturn:
    from .runner import exit_now, spin_nodes

    exit_now(spin_nodes([MoveItSupervisorNode], argv if argv is not None else sys.argv))


if __name__ == "__main__":
    sys.exit(main())
