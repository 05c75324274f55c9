"""The parameters of the nodes a MoveIt 2 config is for (:mod:`.moveit_config` makes its files): move_group's, laid out
as ``moveit_configs_utils`` lays them out from the config's YAML contents, and ros2_control_node's, the path of its
ros2_controllers.yaml.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

__all__ = ["NO_SENSOR", "OCTOMAP_RESOLUTION", "move_group_parameters", "ros2_control_node_parameters"]

NO_SENSOR = "no_3d_sensor"
"""The octomap updater move_group is given and skips (no depth camera or point cloud is configured)."""
OCTOMAP_RESOLUTION = 0.025
"""Voxel size (m) of move_group's octomap, were a sensor added."""


def move_group_parameters(data: dict[str, dict[str, Any]], urdf: str, srdf: str) -> dict[str, Any]:
    """All parameters of MoveIt's move_group node, laid out as ``moveit_configs_utils`` does (MoveIt 2 Jazzy+).

    ``data`` is ``moveit_config_data(...)``; ``urdf`` and ``srdf`` are the robot description texts.
    ros2_controllers.yaml and initial_positions.yaml belong to ros2_control, not to move_group. The
    robot_description(_semantic) topics are left to their publishers (the assembly node).
    """
    planning = copy.deepcopy(data["joint_limits.yaml"])
    planning.update(copy.deepcopy(data["pilz_cartesian_limits.yaml"]))
    params: dict[str, Any] = {
        "robot_description": urdf,
        "robot_description_semantic": srdf,
        "robot_description_kinematics": copy.deepcopy(data["kinematics.yaml"]),
        "robot_description_planning": planning,
        "planning_pipelines": ["ompl"],
        "default_planning_pipeline": "ompl",
        "ompl": copy.deepcopy(data["ompl_planning.yaml"]),
        "moveit_manage_controllers": True,
    }
    params.update(copy.deepcopy(data["moveit_controllers.yaml"]))
    params.update(
        {
            "allow_trajectory_execution": True,
            "publish_planning_scene": True,
            "publish_geometry_updates": True,
            "publish_state_updates": True,
            "publish_transforms_updates": True,
            "publish_robot_description": False,
            "publish_robot_description_semantic": False,
            "monitor_dynamics": False,
            # no 3-D sensor feeds the octomap (the task's obstacles are collision objects): one named updater whose
            # plugin "~" move_group skips, so it does not log an error for a missing sensor list
            "octomap_resolution": OCTOMAP_RESOLUTION,
            "sensors": [NO_SENSOR],
            NO_SENSOR: {"sensor_plugin": "~"},
        }
    )
    return params


def ros2_control_node_parameters(config: str | Path | dict[str, Path]) -> list[str]:
    """The ``parameters`` of controller_manager's ros2_control_node: the ros2_controllers.yaml file itself.

    ``config`` is a config folder, the file, or the ``write_moveit_config`` result. The file path (not a dict)
    is what the node needs: the controller manager hands its ``--params-file`` arguments on to the controllers
    it loads, so the ``arm_controller: ros__parameters`` section reaches the controller node. Since Jazzy the
    controller manager reads the URDF from the ``/robot_description`` topic, so no robot_description here.
    """
    if isinstance(config, dict):
        path = Path(config["ros2_controllers.yaml"])
    else:
        path = Path(config)
        if path.is_dir():
            path = path / "ros2_controllers.yaml"
    return [str(path)]
