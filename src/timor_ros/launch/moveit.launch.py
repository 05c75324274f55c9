"""assembly.launch.py plus MoveIt's move_group, configured by `timor moveit-config`.

  ros2 launch timor_ros moveit.launch.py db:=robco_like modules:="base J L_250 J gripper" config_dir:=/tmp/timor_moveit
At launch time `timor moveit-config --db DB --modules MODULES --prefix P -o CONFIG_DIR` writes the MoveIt configuration
(URDF, SRDF, kinematics.yaml, joint_limits.yaml, ...) into ``config_dir``; move_group gets the URDF/SRDF and
every YAML file found there as parameters. Reconfiguring the assembly at runtime updates /robot_description
and /robot_description_semantic; move_group must be restarted to plan for the new robot.
"""

import subprocess
import sys
from pathlib import Path

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare


def _move_group(context):
    import yaml

    db = LaunchConfiguration("db").perform(context)
    modules = LaunchConfiguration("modules").perform(context).split()
    prefix = LaunchConfiguration("prefix").perform(context)
    out = Path(LaunchConfiguration("config_dir").perform(context))
    cmd = [
        sys.executable,
        "-m",
        "timor_core.cli",
        "moveit-config",
        "--db",
        db,
        "--modules",
        *modules,
        "--prefix",
        prefix,
        "-o",
        str(out),
    ]
    subprocess.run(cmd, check=True)
    params = {
        "robot_description": next(out.rglob("*.urdf")).read_text(),
        "robot_description_semantic": next(out.rglob("*.srdf")).read_text(),
    }
    for f in sorted(out.rglob("*.yaml")):
        data = yaml.safe_load(f.read_text()) or {}
        key = {"kinematics": "robot_description_kinematics", "joint_limits": "robot_description_planning"}.get(f.stem)
        params.update({key: data} if key else data)
    return [Node(package="moveit_ros_move_group", executable="move_group", parameters=[params], output="screen")]


def generate_launch_description() -> LaunchDescription:
    base = PythonLaunchDescriptionSource([FindPackageShare("timor_ros"), "/launch/assembly.launch.py"])
    return LaunchDescription(
        [
            DeclareLaunchArgument("config_dir", default_value="/tmp/timor_moveit_config"),
            DeclareLaunchArgument("db", default_value="geometric_primitive_modules"),
            DeclareLaunchArgument("modules", default_value="base J2 i_45 J2 J2 eef"),
            DeclareLaunchArgument("prefix", default_value=""),
            IncludeLaunchDescription(
                base,
                launch_arguments={
                    "db": LaunchConfiguration("db"),
                    "modules": LaunchConfiguration("modules"),
                    "prefix": LaunchConfiguration("prefix"),
                }.items(),
            ),
            OpaqueFunction(function=_move_group),
        ]
    )
