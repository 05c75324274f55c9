"""What the MoveIt benchmarks (moveit_swap.py, moveit_vs_timor.py) share: the launch, the rclpy client, the request.

Nothing of ROS at import time (rclpy and moveit_msgs are imported where they are used), so a script's `--help`
works without ROS. The scripts run as `python benchmarks/<script>.py` and find this module beside them.
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROS2 = ROOT / ".venv" / "bin" / "ros2"


class Launch:
    """`ros2 launch timor_ros moveit.launch.py ...` in its own process group, output to a log file."""

    def __init__(self, folder: Path, modules: list[str], task: Path | None = None) -> None:
        args = [str(ROS2), "launch", "timor_ros", "moveit.launch.py", "db:=robco_like", f"modules:={' '.join(modules)}",
                "rviz:=false", "search:=false", f"config_dir:={folder / 'config'}"]  # fmt: skip
        args += [f"task:={task}"] if task is not None else []
        self.log = folder / "launch.log"
        self._fh = open(self.log, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(args, stdout=self._fh, stderr=subprocess.STDOUT, start_new_session=True)

    def output(self) -> str:
        """Everything the launch has written so far (its log file)."""
        return self.log.read_text(errors="replace")

    def wait_for(self, text: str, timeout: float) -> bool:
        """True once ``text`` is in the log; False if the launch ends or ``timeout`` s pass before."""
        end = time.monotonic() + timeout
        while time.monotonic() < end and self.proc.poll() is None:
            if text in self.output():
                return True
            time.sleep(0.2)
        return text in self.output()

    def stop(self, timeout: float = 30.0) -> str:
        """One SIGINT (as Ctrl-C); SIGKILL to the whole group if it has not ended within ``timeout``."""
        how = "ended before"
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout)
                how = "SIGINT"
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                how = "SIGKILL to the group after SIGINT"
        try:  # launch's children are in its group: none may outlive it
            os.killpg(self.proc.pid, signal.SIGKILL)
            how += "; processes of the group were left and got SIGKILL"
        except ProcessLookupError:
            pass
        self._fh.close()
        return how


class Client:
    """One rclpy node of this process, in a context of its own with its own executor; service calls spun on it."""

    def __init__(self, name: str) -> None:
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node

        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node(name, context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self._clients: dict = {}

    def spin(self, seconds: float) -> None:
        """Handle this node's callbacks for ``seconds``."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.executor.spin_once(timeout_sec=min(left, 0.05))

    def service(self, srv_type: Any, name: str) -> Any:
        """This node's client of the service (made once)."""
        key = (srv_type, name)
        if key not in self._clients:
            self._clients[key] = self.node.create_client(srv_type, name)
        return self._clients[key]

    def call(self, srv_type: Any, name: str, request: Any, timeout: float) -> tuple[Any, float]:
        """(response or None, wall seconds from the request to its answer); None if the service is not there within
        ``timeout`` (the time is then NaN) or no answer came within ``timeout``."""
        client = self.service(srv_type, name)
        if not client.wait_for_service(timeout_sec=timeout):
            return None, math.nan
        t0 = time.perf_counter()
        future = client.call_async(request)
        self.executor.spin_until_future_complete(future, timeout_sec=timeout)
        wall = time.perf_counter() - t0
        if not future.done():
            client.remove_pending_request(future)
            return None, wall
        return future.result(), wall

    def close(self) -> None:
        """Shut the executor, the node and the context down."""
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


def plan_request(joints: list[str], goal: np.ndarray, budget: float, start: np.ndarray | None = None) -> Any:
    """GetMotionPlan request: group manipulator, OMPL's RRTConnect, one attempt of ``budget`` s, a 4 m workspace
    cube, joint goal (±1e-3 rad); from ``start`` as an explicit start state, or (None) from the current state."""
    from moveit_msgs.msg import Constraints, JointConstraint
    from moveit_msgs.srv import GetMotionPlan

    request = GetMotionPlan.Request()
    r = request.motion_plan_request
    r.group_name, r.pipeline_id, r.planner_id = "manipulator", "ompl", "RRTConnectkConfigDefault"
    r.num_planning_attempts, r.allowed_planning_time = 1, float(budget)
    r.max_velocity_scaling_factor = r.max_acceleration_scaling_factor = 1.0
    w = r.workspace_parameters
    w.header.frame_id = "base_link"
    w.min_corner.x = w.min_corner.y = w.min_corner.z = -2.0
    w.max_corner.x = w.max_corner.y = w.max_corner.z = 2.0
    r.start_state.is_diff = start is None
    if start is not None:
        r.start_state.joint_state.name = list(joints)
        r.start_state.joint_state.position = [float(v) for v in start]
    goal_constraints = Constraints()
    goal_constraints.joint_constraints = [
        JointConstraint(joint_name=n, position=float(v), tolerance_above=1e-3, tolerance_below=1e-3, weight=1.0)
        for n, v in zip(joints, goal)
    ]
    r.goal_constraints = [goal_constraints]
    return request


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of the values that are not NaN; NaN if there are none."""
    ordered = sorted(v for v in values if not math.isnan(v))
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)] if ordered else math.nan


def ros2_ready() -> bool:
    """Whether the ros2 CLI is there (a message on stderr if not); first gives SIGINT its default handler back if this
    process was started with it ignored (in the background by a shell), as the launch would inherit it and never stop.
    """
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if not ROS2.exists():
        print(f"no ros2 CLI at {ROS2}: make ros (with ../shared/ros-moveit)", file=sys.stderr)
        return False
    return True


def finish_report(report: dict, logs: str, path: Path | None) -> None:
    """Print the 1-minute load average before and after the run (the report's load_before and load_after) and where
    the logs are (``logs``); write the report as indented JSON to ``path`` (nothing if None: no --json given)."""
    print(f"load average before {report['load_before'][0]:.1f}, after {report['load_after'][0]:.1f}; {logs}")
    if path is not None:
        path.write_text(json.dumps(report, indent=1))
