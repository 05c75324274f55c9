"""task_scene node: a task's obstacles in MoveIt's planning scene, for whatever robot /robot_description announces.

  ros2 run timor_ros task_scene --ros-args -p task:=my_task.json   (moveit.launch.py ... task:=my_task.json)

It reads the task once (a bad file: one error line, exit 2), then applies its obstacles (boxes, cylinders, spheres,
meshes; composed obstacles as one object of several shapes) and its collisionFree safety margin (as padding of the
robot's links) through move_group's ``apply_planning_scene`` service in its namespace: each time a robot
description arrives (obstacles are placed relative to the robot's root link) and each time a move_group appears
(a restarted move_group starts with an empty scene). ``applied`` (latched) says what was applied, for whom.
The conversion is ``timor_core.export.formats.planning_scene``; this node only turns it into messages.
"""

from __future__ import annotations

import json
import sys
import threading
from typing import Any, NoReturn

from geometry_msgs.msg import Point, Pose
from moveit_msgs.msg import CollisionObject, LinkPadding, PlanningScene, PlanningSceneComponents
from moveit_msgs.srv import ApplyPlanningScene, GetPlanningScene
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node
from shape_msgs.msg import Mesh, MeshTriangle, SolidPrimitive
from std_msgs.msg import String

import timor_core.export.formats.planning_scene as scene_data
from timor_core.common.transforms import quaternion_xyzw
from timor_core.errors import InputError, TimorError, explain
from timor_core.task.task import Task

from .common import LATCHED, ServiceCallError, call_service, declare, param

__all__ = ["TaskSceneNode", "scene_message", "main"]

_PRIMITIVES = {"box": SolidPrimitive.BOX, "cylinder": SolidPrimitive.CYLINDER, "sphere": SolidPrimitive.SPHERE}


def _pose(T: Any) -> Pose:
    pose = Pose()
    pose.position.x, pose.position.y, pose.position.z = (float(v) for v in T[:3, 3])
    o = pose.orientation
    o.x, o.y, o.z, o.w = quaternion_xyzw(T[:3, :3])
    return pose


def _mesh(mesh: scene_data.SceneMesh) -> Mesh:
    msg = Mesh()
    msg.vertices = [Point(x=float(x), y=float(y), z=float(z)) for x, y, z in mesh.vertices]
    msg.triangles = [MeshTriangle(vertex_indices=[int(i) for i in t]) for t in mesh.triangles]
    return msg


def scene_message(scene: scene_data.PlanningScene) -> PlanningScene:
    """The planning-scene diff that adds (or replaces) every obstacle and pads the robot's links."""
    msg = PlanningScene(is_diff=True)
    msg.robot_state.is_diff = True
    for obj in scene.objects:
        co = CollisionObject(id=obj.id, operation=CollisionObject.ADD)
        co.header.frame_id = scene.frame
        for p in obj.primitives:
            co.primitives.append(SolidPrimitive(type=_PRIMITIVES[p.kind], dimensions=[float(d) for d in p.dimensions]))
            co.primitive_poses.append(_pose(p.pose))
        for m in obj.meshes:
            co.meshes.append(_mesh(m))
            co.mesh_poses.append(_pose(m.pose))
        msg.world.collision_objects.append(co)
    msg.link_padding = [LinkPadding(link_name=name, padding=float(v)) for name, v in scene.padding.items()]
    return msg


class TaskSceneNode(Node):
    """Keeps move_group's planning scene holding the task's obstacles (see the module docstring)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("task_scene", **kwargs)
        declare(self, "task", "", "CoBRA task file whose obstacles go into move_group's planning scene", read_only=True)
        declare(self, "timeout", 30.0, "seconds to wait for move_group's apply_planning_scene answer", read_only=True)
        path = str(param(self, "task", ""))
        if not path:
            raise InputError("task_scene needs the parameter task (a CoBRA task file)", value=path)
        self.task = Task.from_json_file(path)
        self.timeout = float(param(self, "timeout", 30.0))
        self._urdf = ""
        self._applied = ""  # the robot description the scene was last applied for
        self._lock = threading.Lock()
        reentrant = ReentrantCallbackGroup()
        self._client: Client = self.create_client(ApplyPlanningScene, "apply_planning_scene", callback_group=reentrant)
        self._get: Client = self.create_client(GetPlanningScene, "get_planning_scene", callback_group=reentrant)
        self._status = self.create_publisher(String, "~/applied", LATCHED)
        self.create_subscription(String, "robot_description", self._on_description, LATCHED, callback_group=reentrant)
        self.create_timer(1.0, self._check, callback_group=MutuallyExclusiveCallbackGroup())
        self.get_logger().info(f"task {self.task.id!r}: {len(self.task.obstacles)} obstacle(s) for MoveIt")

    def _on_description(self, msg: String) -> None:
        with self._lock:
            self._urdf, self._applied = msg.data, ""
        self._check()

    def _check(self) -> None:
        """Apply the scene if the robot changed, or if move_group's scene lacks an obstacle (a restarted one)."""
        with self._lock:
            urdf, applied = self._urdf, self._applied
        if not urdf or not self._client.service_is_ready():
            return
        try:
            if applied == urdf and self._scene_holds_obstacles():
                return
            self._apply(urdf)
            with self._lock:
                if self._urdf == urdf:
                    self._applied = urdf
        except (TimorError, ServiceCallError) as exc:
            self.get_logger().warn(f"planning scene not applied: {explain(exc)}", throttle_duration_sec=10.0)

    def _scene_holds_obstacles(self) -> bool:
        if not self._get.service_is_ready():
            return False
        request = GetPlanningScene.Request()
        request.components.components = PlanningSceneComponents.WORLD_OBJECT_NAMES
        names = {o.id for o in call_service(self._get, request, self.timeout).scene.world.collision_objects}
        return {o.id for o in self.task.obstacles} <= names

    def _apply(self, urdf: str) -> None:
        root, links = scene_data.robot_links(urdf)
        scene = scene_data.planning_scene(self.task, links, frame=root)
        answer = call_service(self._client, ApplyPlanningScene.Request(scene=scene_message(scene)), self.timeout)
        if not answer.success:
            raise ServiceCallError("move_group refused the planning scene")
        objects = [o.id for o in scene.objects]
        status = {
            "task": self.task.id,
            "frame": root,
            "objects": objects,
            "padding": scene_data.safety_margin(self.task),
        }
        self._status.publish(String(data=json.dumps(status)))
        self.get_logger().info(f"planning scene: {len(scene.objects)} obstacle(s) in {root}")


def main(argv: list[str] | None = None) -> NoReturn:
    from .runner import exit_now, spin_nodes

    exit_now(spin_nodes([TaskSceneNode], argv if argv is not None else sys.argv))


if __name__ == "__main__":
    sys.exit(main())
