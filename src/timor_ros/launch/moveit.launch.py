"""assembly.launch.py plus MoveIt's move_group and (by default) ros2_control with mock hardware.

  ros2 launch timor_ros moveit.launch.py db:=robco_like modules:="base J L_250 J gripper" config_dir:=/tmp/timor_moveit
Arguments: db, modules (space-separated IDs), prefix, config_dir (where the generated config is written for
inspection), rviz (true), ros2_control (true), ros2_control_plugin (mock_components/GenericSystem).

At launch time the MoveIt configuration (URDF, SRDF, kinematics.yaml, joint_limits.yaml, ompl_planning.yaml, ...)
is generated in-process with timor_core and written into ``config_dir``; move_group gets
``timor_core.export.moveit_config.move_group_parameters`` (the ``moveit_configs_utils`` layout: OMPL pipeline, KDL,
joint and Pilz cartesian limits, moveit_simple_controller_manager). With ``ros2_control:=true``,
controller_manager's ros2_control_node runs with ros2_controllers.yaml and reads the URDF with its
``<ros2_control>`` block from /robot_description (published by the assembly node, started with
``ros2_control:=true``); spawners start joint_state_broadcaster and arm_controller, and no joint_state_publisher
runs, so /joint_states comes from the broadcaster and move_group can execute trajectories.

Reconfiguring the assembly at runtime updates /robot_description and /robot_description_semantic, but
move_group and the controller manager read the description once: relaunch to plan and execute for a new robot.
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

ARGS = {
    "db": ("geometric_primitive_modules", "embedded module set name or modules.json path"),
    "modules": ("base J2 i_45 J2 J2 eef", "module IDs of the serial assembly, base first"),
    "prefix": ("", "prefix of every link and joint name"),
    "config_dir": ("/tmp/timor_moveit_config", "folder the generated MoveIt config is written to"),
    "rviz": ("true", "start RViz"),
    "ros2_control": ("true", "start ros2_control_node, joint_state_broadcaster and arm_controller"),
    "ros2_control_plugin": ("mock_components/GenericSystem", "ros2_control hardware plugin"),
}
CONTROLLER_MANAGER = "/controller_manager"


def _flag(context, name: str) -> bool:
    return LaunchConfiguration(name).perform(context).strip().lower() in ("1", "true", "yes", "on")


def _spawner(controller: str) -> Node:
    return Node(
        package="controller_manager",
        executable="spawner",
        arguments=[controller, "--controller-manager", CONTROLLER_MANAGER],
        output="screen",
    )


def _launch(context):
    from timor_core import ModuleAssembly, ModulesDB
    from timor_core.export.moveit_config import (
        ARM_CONTROLLER,
        JOINT_STATE_BROADCASTER,
        MoveItOptions,
        move_group_parameters,
        moveit_config_data,
        ros2_control_node_parameters,
        write_moveit_config,
    )
    from timor_core.export.ros2_control import Ros2ControlConfig

    db = LaunchConfiguration("db").perform(context)
    modules = LaunchConfiguration("modules").perform(context).split()
    prefix = LaunchConfiguration("prefix").perform(context)
    config_dir = LaunchConfiguration("config_dir").perform(context)
    plugin = LaunchConfiguration("ros2_control_plugin").perform(context)
    ros2_control = _flag(context, "ros2_control")

    assembly = ModuleAssembly.from_serial_modules(ModulesDB.load(db), modules)
    options = MoveItOptions(prefix=prefix, ros2_control=Ros2ControlConfig(plugin=plugin))
    written = write_moveit_config(assembly, config_dir, options)
    urdf = next(path for name, path in written.items() if name.endswith(".urdf")).read_text()
    srdf = next(path for name, path in written.items() if name.endswith(".srdf")).read_text()
    params = move_group_parameters(moveit_config_data(assembly, options), urdf, srdf)

    base = PythonLaunchDescriptionSource([FindPackageShare("timor_ros"), "/launch/assembly.launch.py"])
    actions = [
        IncludeLaunchDescription(
            base,
            launch_arguments={
                "db": db,
                "modules": " ".join(modules),
                "prefix": prefix,
                "rviz": LaunchConfiguration("rviz").perform(context),
                "ros2_control": "true" if ros2_control else "false",
                "ros2_control_plugin": plugin,
                "joint_state_publisher": "false" if ros2_control else "true",
            }.items(),
        ),
        Node(
            package="moveit_ros_move_group",
            executable="move_group",
            name="move_group",
            parameters=[params],
            output="screen",
        ),
    ]
    if ros2_control:
        actions += [
            Node(
                package="controller_manager",
                executable="ros2_control_node",
                parameters=ros2_control_node_parameters(written),
                # Jazzy and newer subscribe to /robot_description anyway; older ones to ~/robot_description
                remappings=[("~/robot_description", "robot_description")],
                output="screen",
            ),
            _spawner(JOINT_STATE_BROADCASTER),
            _spawner(ARM_CONTROLLER),
        ]
    return actions


def generate_launch_description() -> LaunchDescription:
    return LaunchDescription(
        [DeclareLaunchArgument(k, default_value=v, description=d) for k, (v, d) in ARGS.items()]
        + [OpaqueFunction(function=_launch)]
    )
