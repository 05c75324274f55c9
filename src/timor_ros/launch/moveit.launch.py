"""assembly.launch.py plus MoveIt's move_group and (by default) ros2_control with mock hardware.

  ros2 launch timor_ros moveit.launch.py db:=robco_like modules:="base J L_250 J gripper" config_dir:=/tmp/timor_moveit
Arguments: those of assembly.launch.py, plus config_dir (where the generated config is written for inspection),
move_group (true) and ros2_control (true here). Every argument is checked, and every external package it would
start is looked up, before any process starts (``move_group:=false``, ``ros2_control:=false``,
``robot_state_publisher:=false``, ``rviz:=false`` leave the C++ nodes out).

At launch time the MoveIt configuration (URDF, SRDF, kinematics.yaml, joint_limits.yaml, ompl_planning.yaml, ...)
is generated in-process with timor_core and written into ``config_dir``; move_group gets
``timor_core.export.formats.moveit_config.move_group_parameters`` (the ``moveit_configs_utils`` layout: OMPL
pipeline, KDL, joint and Pilz cartesian limits, moveit_simple_controller_manager). With ``ros2_control:=true``,
the assembly node (started with ``ros2_control:=true`` and its ``controller_manager`` parameter) starts and
supervises controller_manager's ros2_control_node with the robot's URDF (its ``<ros2_control>`` block) and
ros2_controllers.yaml, and activates joint_state_broadcaster and arm_controller; no joint_state_publisher runs, so
/joint_states comes from the broadcaster and move_group can execute trajectories.

Reconfiguring the assembly at runtime (``set_assembly``) updates /robot_description and
/robot_description_semantic and, with ros2_control, ends with the new robot's controllers active on a new
controller manager (timor_core.ros.controller_swap). move_group reads its robot model once, at start, so the
moveit_supervisor node starts it for the current robot and restarts it with the new robot's configuration after
every set_assembly (timor_core.ros.move_group_process); ``moveit_supervisor/status`` says which robot it plans
for. move_group's output is the supervisor's.

With ``task:=<task file>`` the task_scene node puts the task's obstacles (and its collisionFree safety margin, as
padding of the robot's links) into move_group's planning scene, again whenever a new robot description arrives or
move_group's scene lacks them; goals are then planned around them.
"""

from typing import Any

from launch import Action, LaunchDescription
from launch.actions import IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from timor_core.ros.launch_arguments import (
    ASSEMBLY_ARGUMENTS,
    MOVEIT_ARGUMENTS,
    SWITCHES,
    MoveItLaunch,
    checked_plan,
    launch_description,
    require_packages,
)
from timor_ros.launching import nodes_of_this_install

ARGS = {**ASSEMBLY_ARGUMENTS, **MOVEIT_ARGUMENTS}


def _launch(context: Any) -> list[Action]:
    from timor_core.export.formats.moveit_config import MoveItOptions, write_moveit_config
    from timor_core.export.formats.ros2_control import Ros2ControlConfig

    plan = checked_plan(context, "moveit.launch.py", ARGS, MoveItLaunch.from_arguments)
    require_packages(plan.external_packages(), SWITCHES)
    base = plan.base
    nodes = nodes_of_this_install(base.ros_distro)
    options = MoveItOptions(
        prefix=base.prefix, ros2_control=Ros2ControlConfig(plugin=base.ros2_control_plugin), distro=nodes.distro
    )
    write_moveit_config(base.assembly, plan.config_dir, options)  # the initial robot's files, for inspection

    source = PythonLaunchDescriptionSource([FindPackageShare("timor_ros"), "/launch/assembly.launch.py"])
    forwarded = plan.forwarded()
    if plan.ros2_control:  # the assembly node runs controller_manager and swaps it with the robot
        forwarded["timor_supervise_controller_manager"] = "true"
    actions: list[Action] = [IncludeLaunchDescription(source, launch_arguments=forwarded.items())]
    if plan.move_group:  # move_group for the robot the assembly node publishes, restarted on every set_assembly
        supervisor = {
            "config_dir": str(plan.config_dir),
            "prefix": base.prefix,
            "ros2_control_plugin": base.ros2_control_plugin,
            "ros_distro": nodes.distro,
            "ros2_control": plan.ros2_control,
        }
        actions.append(_timor_node("moveit_supervisor", base.namespace, supervisor))
        if base.task:  # the task's obstacles (and its safety margin) in move_group's planning scene
            actions.append(_timor_node("task_scene", base.namespace, {"task": base.task}))
    return actions


def _timor_node(executable: str, namespace: str, parameters: dict[str, Any]) -> Node:
    """One of timor_ros's nodes, named as its executable, with its output on the screen."""
    return Node(package="timor_ros", executable=executable, name=executable, namespace=namespace,
                parameters=[parameters], output="screen")  # fmt: skip


def generate_launch_description() -> LaunchDescription:
    return launch_description(ARGS, _launch)
