"""MoveGroup action goals and planning-scene queries from the tests' rclpy client, against the real move_group.

Goals are built as a MoveIt user builds them (moveit_msgs Constraints: joint constraints, or a position constraint
region plus an orientation constraint on a link); ``move`` sends one MoveGroup goal and waits for its result.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from control_tools import send_goal
from geometry_msgs.msg import Pose
from moveit_msgs.action import MoveGroup
from moveit_msgs.msg import (
    BoundingVolume,
    Constraints,
    JointConstraint,
    MoveItErrorCodes,
    OrientationConstraint,
    PlanningSceneComponents,
    PositionConstraint,
)
from moveit_msgs.srv import GetPlanningScene
from rclpy.action import ActionClient
from shape_msgs.msg import SolidPrimitive

from timor_core.common.transforms import quaternion_xyzw

SUCCESS = MoveItErrorCodes.SUCCESS
START_STATE_IN_COLLISION = MoveItErrorCodes.START_STATE_IN_COLLISION
GROUP = "manipulator"


def joint_goal(names: list[str], values, tolerance: float = 1e-3) -> Constraints:
    """Every joint at its value (± tolerance, rad)."""
    out = Constraints()
    for name, value in zip(names, values):
        out.joint_constraints.append(
            JointConstraint(
                joint_name=name, position=float(value), tolerance_above=tolerance, tolerance_below=tolerance, weight=1.0
            )
        )
    return out


def pose_goal(
    link: str, frame: str, T: np.ndarray, position_tolerance: float = 1e-3, angle_tolerance: float | None = 1e-2
) -> Constraints:
    """``link`` at ``T`` (4x4 in ``frame``): a sphere of ``position_tolerance`` around its position and, unless
    ``angle_tolerance`` is None, its orientation within that angle about each axis."""
    out = Constraints()
    region = BoundingVolume()
    region.primitives.append(SolidPrimitive(type=SolidPrimitive.SPHERE, dimensions=[float(position_tolerance)]))
    centre = Pose()
    centre.position.x, centre.position.y, centre.position.z = (float(v) for v in T[:3, 3])
    centre.orientation.w = 1.0
    region.primitive_poses.append(centre)
    position = PositionConstraint(link_name=link, constraint_region=region, weight=1.0)
    position.header.frame_id = frame
    out.position_constraints.append(position)
    if angle_tolerance is not None:
        orientation = OrientationConstraint(link_name=link, weight=1.0)
        orientation.header.frame_id = frame
        o = orientation.orientation
        o.x, o.y, o.z, o.w = quaternion_xyzw(T[:3, :3])
        tol = float(angle_tolerance)
        orientation.absolute_x_axis_tolerance = orientation.absolute_y_axis_tolerance = tol
        orientation.absolute_z_axis_tolerance = tol
        out.orientation_constraints.append(orientation)
    return out


@dataclass
class MoveResult:
    """What move_group answered: its error code, the planned trajectory's joint names and points (q, t)."""

    accepted: bool
    error_code: int
    joint_names: list[str]
    points: np.ndarray  # (n, dof) planned positions
    times: np.ndarray  # (n,) seconds from start
    planning_time: float


def move(ros_client, action: str, goal: Constraints, plan_only: bool = False, planning_time: float = 10.0,
         timeout: float = 120.0, frame: str = "base_link", planner_id: str = "",
         group: str = GROUP) -> MoveResult:  # fmt: skip
    """One MoveGroup goal of ``group`` (pipeline ompl, the workspace a 4 m cube around ``frame``)."""
    client = ActionClient(ros_client.node, MoveGroup, action, callback_group=ros_client.group)
    try:
        assert client.wait_for_server(timeout_sec=60), f"no MoveGroup action server {action}"
        request = MoveGroup.Goal()
        r = request.request
        r.group_name, r.pipeline_id, r.planner_id = group, "ompl", planner_id
        r.num_planning_attempts, r.allowed_planning_time = 1, float(planning_time)
        r.max_velocity_scaling_factor = r.max_acceleration_scaling_factor = 1.0
        r.workspace_parameters.header.frame_id = frame
        c = r.workspace_parameters
        c.min_corner.x = c.min_corner.y = c.min_corner.z = -2.0
        c.max_corner.x = c.max_corner.y = c.max_corner.z = 2.0
        r.start_state.is_diff = True
        r.goal_constraints = [goal]
        request.planning_options.plan_only = plan_only
        request.planning_options.planning_scene_diff.is_diff = True
        request.planning_options.planning_scene_diff.robot_state.is_diff = True
        accepted, answer = send_goal(client, request, timeout, action, resend_after=10.0)
        if not accepted:
            return MoveResult(False, 0, [], np.zeros((0, 0)), np.zeros(0), 0.0)
        result = answer.result
        traj = result.planned_trajectory.joint_trajectory
        points = np.array([list(p.positions) for p in traj.points]) if traj.points else np.zeros((0, 0))
        times = np.array([p.time_from_start.sec + p.time_from_start.nanosec * 1e-9 for p in traj.points])
        return MoveResult(True, result.error_code.val, list(traj.joint_names), points, times, result.planning_time)
    finally:
        client.destroy()


def world_object_names(ros_client, service: str = "/get_planning_scene") -> set[str]:
    """The IDs of the collision objects in move_group's planning scene."""
    request = GetPlanningScene.Request()
    request.components.components = PlanningSceneComponents.WORLD_OBJECT_NAMES
    answer = ros_client.call(GetPlanningScene, service, request, timeout=20.0)
    return {o.id for o in answer.scene.world.collision_objects}


def densify(points: np.ndarray, step: float = 0.01) -> np.ndarray:
    """The trajectory's waypoints with straight joint-space segments between them sampled every ``step`` rad."""
    out = [points[0]]
    for a, b in zip(points[:-1], points[1:]):
        n = max(1, int(np.ceil(np.max(np.abs(b - a)) / step)))
        out += [a + (b - a) * k / n for k in range(1, n + 1)]
    return np.array(out)
