"""Talk to a running ros2_control system from the tests: controller states, /joint_states, and a timor
trajectory executed through a JointTrajectoryController's FollowJointTrajectory action."""

from __future__ import annotations

import threading
import time
import uuid

import numpy as np
from builtin_interfaces.msg import Duration
from control_msgs.action import FollowJointTrajectory
from controller_manager_msgs.srv import ListControllers
from rclpy.action import ActionClient
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectoryPoint
from unique_identifier_msgs.msg import UUID

from timor_core.kinematics.trajectory import Trajectory


def controller_states(ros_client, manager: str, timeout: float = 10.0) -> dict[str, str]:
    """controller name -> state ('active', 'inactive', ...) of a controller manager (empty if it does not answer)."""
    try:
        got = ros_client.call(ListControllers, f"{manager}/list_controllers", ListControllers.Request(), timeout)
    except AssertionError:
        return {}
    return {c.name: c.state for c in got.controller} if got else {}


def controller_states_or_why(ros_client, manager: str, timeout: float = 10.0) -> str:
    """The controller states of ``manager`` as text, or why it gave none (for a failing test's message)."""
    try:
        got = ros_client.call(ListControllers, f"{manager}/list_controllers", ListControllers.Request(), timeout)
    except AssertionError as exc:
        return f"no answer: {exc}"
    return str({c.name: c.state for c in got.controller}) if got else f"empty answer: {got!r}"


class JointStateCache:
    """The latest /joint_states (of a namespace) as name -> position."""

    def __init__(self, node, topic: str) -> None:
        self.node = node
        self._lock = threading.Lock()
        self.latest: dict[str, float] = {}
        self.sub = node.create_subscription(JointState, topic, self._on, 10)

    def _on(self, msg: JointState) -> None:
        with self._lock:
            self.latest = dict(zip(msg.name, msg.position))

    def positions(self, names: list[str], timeout: float = 20.0) -> np.ndarray | None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if all(n in self.latest for n in names):
                    return np.array([self.latest[n] for n in names])
            time.sleep(0.05)
        return None

    def close(self) -> None:
        self.node.destroy_subscription(self.sub)


def _duration(seconds: float) -> Duration:
    sec = int(seconds)
    return Duration(sec=sec, nanosec=int(round((seconds - sec) * 1e9)))


def follow(ros_client, action: str, joints: list[str], trajectory: Trajectory, step: float = 0.05, timeout=60.0):
    """Send ``trajectory`` (every ``step`` seconds and its last sample) as one FollowJointTrajectory goal and wait
    for the result; returns (accepted, result or None)."""
    client = ActionClient(ros_client.node, FollowJointTrajectory, action, callback_group=ros_client.group)
    try:
        assert client.wait_for_server(timeout_sec=timeout), f"no action server {action}"
        stride = max(1, int(round(step / max(trajectory.t[1] - trajectory.t[0], 1e-9)))) if len(trajectory) > 1 else 1
        picks = sorted(set(range(0, len(trajectory), stride)) | {len(trajectory) - 1})
        goal = FollowJointTrajectory.Goal()
        goal.trajectory.joint_names = list(joints)
        for k in picks:
            point = JointTrajectoryPoint()
            point.positions = [float(v) for v in trajectory.q[k]]
            point.velocities = [float(v) for v in trajectory.dq[k]]
            point.time_from_start = _duration(float(trajectory.t[k]) + 0.1)
            goal.trajectory.points.append(point)
        return send_goal(client, goal, timeout + trajectory.duration, action)
    finally:
        client.destroy()


def send_goal(client: ActionClient, goal, timeout: float, action: str, resend_after: float | None = None):
    """Send one action goal and wait for its result: (accepted, result or None); an AssertionError after
    ``timeout`` seconds without an answer. With ``resend_after``, a goal request the server has not answered by then
    is sent again with the same goal ID (Fast DDS loses a request sent while a new server is still being discovered:
    seen right after move_group restarts); a server that got both takes the ID once."""
    done, answered = threading.Event(), threading.Event()
    holder: dict = {}
    goal_id = UUID(uuid=list(uuid.uuid4().bytes))

    def on_goal(future):
        handle = future.result()
        if answered.is_set():  # the answer to a resent request
            return
        answered.set()
        holder["handle"] = handle
        if handle is None or not handle.accepted:
            done.set()
            return
        handle.get_result_async().add_done_callback(lambda f: (holder.update(result=f.result()), done.set()))

    end = time.monotonic() + timeout
    client.send_goal_async(goal, goal_uuid=goal_id).add_done_callback(on_goal)
    while resend_after is not None and not answered.wait(resend_after) and time.monotonic() < end:
        client.send_goal_async(goal, goal_uuid=goal_id).add_done_callback(on_goal)
    assert done.wait(max(0.0, end - time.monotonic())), f"no result from {action} within {timeout:g} s"
    handle = holder.get("handle")
    return bool(handle is not None and handle.accepted), holder.get("result")
