"""modules_db + assembly + search + robot_state_publisher + joint_state_publisher(_gui) + RViz.

  ros2 launch timor_ros assembly.launch.py db:=robco_like modules:="base J L_250 J gripper" prefix:=r1_
Arguments: db, modules (space-separated IDs), prefix, rviz (true), gui (false: joint_state_publisher without GUI),
search (true: the search node with its action /search/search; search_workers processes, default 1),
namespace (empty: every node of this launch in that namespace, e.g. r1: /r1/robot_description, /r1/assembly/...;
with a prefix per robot, several robots share one system and one /tf),
joint_state_publisher (true; false when something else publishes /joint_states, e.g. ros2_control's
joint_state_broadcaster), ros2_control (false: the assembly node's URDF gets a <ros2_control> block with the
hardware plugin ros2_control_plugin, default mock_components/GenericSystem),
description_from_topic (true, needs robot_state_publisher >= 3.4.4, i.e. Kilted: robot_state_publisher runs with
description_from_topic:=true and subscribes to the assembly node's /robot_description, so every reconfiguration
reaches it through the topic; false: it starts with the initial URDF as its robot_description parameter, and the
assembly node sets that parameter in every reconfiguration, which works on older distributions too).
"""

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

ARGS = {
    "db": ("geometric_primitive_modules", "embedded module set name or modules.json path"),
    "modules": ("base J2 i_45 J2 J2 eef", "module IDs of the initial serial assembly, base first"),
    "prefix": ("", "prefix of every link and joint name"),
    "rviz": ("true", "start RViz"),
    "gui": ("false", "joint_state_publisher_gui instead of joint_state_publisher"),
    "joint_state_publisher": ("true", "start joint_state_publisher (or its GUI); false with ros2_control"),
    "ros2_control": ("false", "add a <ros2_control> block to the published URDF"),
    "ros2_control_plugin": ("mock_components/GenericSystem", "ros2_control hardware plugin"),
    "description_from_topic": ("true", "robot_state_publisher gets the URDF from the assembly node only"),
    "search": ("true", "start the search node (action /search/search)"),
    "search_workers": ("1", "processes of the search node (1: in the node's process)"),
    "namespace": ("", "namespace of every node (one robot per namespace; give each a prefix too)"),
}


def _flag(context, name: str) -> bool:
    return LaunchConfiguration(name).perform(context).strip().lower() in ("1", "true", "yes", "on")


def _ns(context) -> str:
    return LaunchConfiguration("namespace").perform(context).strip()


def _nodes(context):
    db = LaunchConfiguration("db").perform(context)
    ns = _ns(context)
    modules = LaunchConfiguration("modules").perform(context).split()
    prefix = LaunchConfiguration("prefix").perform(context)
    from_topic = _flag(context, "description_from_topic")
    ros2_control = _flag(context, "ros2_control")
    plugin = LaunchConfiguration("ros2_control_plugin").perform(context)
    rsp_params: dict = {"description_from_topic": True}
    if not from_topic:
        from timor_core import ModuleAssembly, ModulesDB

        assembly = ModuleAssembly.from_serial_modules(ModulesDB.load(db), modules)
        rsp_params = {"robot_description": assembly.to_urdf(prefix=prefix)}  # replaced by the assembly node
    return [
        Node(
            package="timor_ros",
            executable="modules_db",
            name="modules_db",
            namespace=ns,
            parameters=[{"db": db}],
            output="screen",
        ),
        Node(
            package="timor_ros",
            executable="assembly",
            name="assembly",
            namespace=ns,
            parameters=[
                {
                    "initial_assembly": modules,
                    "prefix": prefix,
                    "ros2_control": ros2_control,
                    "ros2_control_plugin": plugin,
                    "robot_state_publisher_node": "" if from_topic else "robot_state_publisher",  # same namespace
                }
            ],
            output="screen",
        ),
        Node(
            package="robot_state_publisher",
            executable="robot_state_publisher",
            name="robot_state_publisher",
            namespace=ns,
            parameters=[rsp_params],
            output="screen",
        ),
    ]


def _joint_state_publisher(context):
    if not _flag(context, "joint_state_publisher"):
        return []
    package = "joint_state_publisher_gui" if _flag(context, "gui") else "joint_state_publisher"
    return [Node(package=package, executable=package, namespace=_ns(context), output="screen")]


def _search(context):
    if not _flag(context, "search"):
        return []
    workers = int(LaunchConfiguration("search_workers").perform(context))
    params = [{"workers": workers}]
    return [
        Node(
            package="timor_ros",
            executable="search",
            name="search",
            namespace=_ns(context),
            parameters=params,
            output="screen",
        )
    ]


def generate_launch_description() -> LaunchDescription:
    rviz_config = [FindPackageShare("timor_ros"), "/rviz/timor.rviz"]
    return LaunchDescription(
        [DeclareLaunchArgument(k, default_value=v, description=d) for k, (v, d) in ARGS.items()]
        + [
            OpaqueFunction(function=_nodes),
            OpaqueFunction(function=_joint_state_publisher),
            OpaqueFunction(function=_search),
            Node(
                package="rviz2",
                executable="rviz2",
                arguments=["-d", rviz_config],
                namespace=LaunchConfiguration("namespace"),  # its RobotModel reads the relative robot_description
                condition=IfCondition(LaunchConfiguration("rviz")),
            ),
        ]
    )
