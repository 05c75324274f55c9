"""modules_db + assembly + search + robot_state_publisher + joint_state_publisher(_gui) + RViz.

  ros2 launch timor_ros assembly.launch.py db:=robco_like modules:="base J L_250 J gripper" prefix:=r1_

Arguments (``ros2 launch timor_ros assembly.launch.py --show-args``): db, modules (space-separated IDs), prefix,
namespace (every node of this launch in it: /r1/robot_description, /r1/assembly/...; give each robot a prefix too,
so several robots share one /tf), robot_state_publisher, rviz, gui, joint_state_publisher (false when something
else publishes /joint_states, e.g. ros2_control's joint_state_broadcaster), ros2_control (the URDF gets a
<ros2_control> block with the hardware plugin ros2_control_plugin), description_from_topic (true:
robot_state_publisher 3.4.4+ subscribes to the assembly node's robot_description topic; false: it starts with the
URDF as a parameter, which the assembly node sets in every reconfiguration; auto, the default: true where the
installed one can), ros_distro (whose node behaviour to expect; default $ROS_DISTRO), srdf, search, search_workers,
task (a task file or embedded task name: its obstacles and goal frames as a MarkerArray on task_markers, shown
by RViz).

Every argument is checked, and every external package it would start is looked up, before any process starts;
a bad value or a missing package ends the launch with one error and nothing left running.
"""

from typing import Any

from launch import LaunchDescription
from launch_ros.actions import Node

from timor_core.ros.launch_arguments import (
    ASSEMBLY_ARGUMENTS,
    SWITCHES,
    AssemblyLaunch,
    checked_plan,
    launch_description,
    require_packages,
)
from timor_ros.launching import (
    initial_urdf,
    nodes_of_this_install,
    reads_description_topic,
    root_frame,
    rviz_config_for,
)

#: set (not declared: no user argument) by moveit.launch.py with ros2_control:=true: the assembly node starts and
#: supervises controller_manager, so every set_assembly ends with the new robot's controllers active
SUPERVISE_CONTROL = "timor_supervise_controller_manager"


def nodes(plan: AssemblyLaunch, from_topic: bool, supervise: bool = False) -> list[Node]:
    """The nodes of a validated assembly launch; ``from_topic``: robot_state_publisher reads /robot_description;
    ``supervise``: the assembly node runs ros2_control's controller manager (``controller_manager`` parameter)."""
    ns = plan.namespace
    rsp = "robot_state_publisher"
    param_mode = plan.robot_state_publisher and not from_topic  # the assembly node sets its parameter
    out = [
        Node(package="timor_ros", executable="modules_db", name="modules_db", namespace=ns,
             parameters=[{"db": plan.db}], output="screen"),
        Node(
            package="timor_ros",
            executable="assembly",
            name="assembly",
            namespace=ns,
            parameters=[
                {
                    "initial_assembly": list(plan.modules),
                    "prefix": plan.prefix,
                    "ros2_control": plan.ros2_control,
                    "ros2_control_plugin": plan.ros2_control_plugin,
                    "srdf": plan.srdf,
                    # robot_state_publisher of the same namespace, when it takes the URDF as a parameter
                    "robot_state_publisher_node": rsp if param_mode else "",
                    "require_robot_state_publisher": param_mode,
                    "service_timeout": 10.0,  # discovery of a node started with this launch, on a busy machine
                    "controller_manager": supervise,
                }
            ],
            output="screen",
        ),
    ]  # fmt: skip
    if plan.robot_state_publisher:
        remappings: list[tuple[str, str]] = []
        if from_topic:
            rsp_params: dict = {"description_from_topic": True}
        else:  # the assembly node's URDF, replaced by it at every reconfiguration
            rsp_params = {"robot_description": initial_urdf(plan)}
            # it republishes its parameter on robot_description: keep that topic to one publisher, the assembly node
            remappings = [("robot_description", f"{rsp}/robot_description")]
        out.append(Node(package=rsp, executable=rsp, name=rsp, namespace=ns, parameters=[rsp_params],
                        remappings=remappings, output="screen"))  # fmt: skip
    if plan.joint_state_publisher:
        package = "joint_state_publisher_gui" if plan.gui else "joint_state_publisher"
        # 50 Hz (its default is 10): TF of a robot swapped in at run time follows within one period
        out.append(Node(package=package, executable=package, namespace=ns, parameters=[{"rate": 50}], output="screen"))
    if plan.search:
        out.append(Node(package="timor_ros", executable="search", name="search", namespace=ns,
                        parameters=[{"workers": plan.search_workers}], output="screen"))  # fmt: skip
    frame = root_frame(plan) if plan.rviz or plan.task else ""
    if plan.task:  # the task's obstacles and goals, in the frame of the robot's root (the task's world)
        out.append(Node(package="timor_ros", executable="task_markers", name="task_markers", namespace=ns,
                        parameters=[{"task": plan.task, "frame_id": frame}], output="screen"))  # fmt: skip
    if plan.rviz:  # fixed frame, description and marker topics of this launch's prefix and namespace
        rviz_config = rviz_config_for(frame, ns, task=bool(plan.task))
        out.append(Node(package="rviz2", executable="rviz2", arguments=["-d", rviz_config], namespace=ns))
    return out


def _launch(context: Any) -> list[Node]:
    plan = checked_plan(context, "assembly.launch.py", ASSEMBLY_ARGUMENTS, AssemblyLaunch.from_arguments)
    require_packages(plan.external_packages(), SWITCHES)
    from_topic = reads_description_topic(plan.description_from_topic, nodes_of_this_install(plan.ros_distro))
    supervise = context.launch_configurations.get(SUPERVISE_CONTROL, "false") == "true"
    return nodes(plan, from_topic, supervise and plan.ros2_control)


def generate_launch_description() -> LaunchDescription:
    return launch_description(ASSEMBLY_ARGUMENTS, _launch)
