"""The launch arguments of timor_ros's launch files, validated before anything starts (issue 15)."""

from __future__ import annotations

import pytest

from timor_core.errors import InputError
from timor_core.limits import limits
from timor_core.ros.launch_arguments import (
    ASSEMBLY_ARGUMENTS,
    SWITCHES,
    AssemblyLaunch,
    MoveItLaunch,
    parse_flag,
)


def test_defaults_make_a_valid_launch():
    plan = AssemblyLaunch.from_arguments({})
    assert plan.modules == tuple(ASSEMBLY_ARGUMENTS["modules"][0].split()) and plan.prefix == ""
    assert plan.robot_state_publisher and plan.rviz and plan.search and plan.search_workers == 1
    assert plan.assembly.robot.dof > 0
    assert plan.external_packages() == ["robot_state_publisher", "joint_state_publisher", "rviz2"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        ({"search_workers": "two"}, "search_workers"),
        ({"search_workers": "0"}, "search_workers"),
        ({"search_workers": str(limits().max_workers + 1)}, "search_workers"),
        ({"modules": "base nosuch eef"}, "nosuch"),
        ({"modules": "  "}, "modules"),
        ({"db": "/no/such/modules.json"}, "/no/such/modules.json"),
        ({"prefix": 'a"/><evil/>'}, "prefix"),
        ({"namespace": "1bad"}, "namespace"),
        ({"namespace": "a//b"}, "namespace"),
        ({"rviz": "maybe"}, "rviz"),
        ({"ros2_control_plugin": "bad plugin"}, "ros2_control_plugin"),
        ({"rvis": "false"}, "rvis"),
    ],
)
def test_every_bad_value_is_refused_naming_the_argument(args, needle):
    with pytest.raises(InputError, match="launch argument") as err:
        AssemblyLaunch.from_arguments(args)
    assert needle in str(err.value)


@pytest.mark.parametrize("text", ["true", "True", "1", "yes", "on", "false", "FALSE", "0", "no", "off"])
def test_flags(text):
    assert parse_flag("x", text) is (text.lower() in ("true", "1", "yes", "on"))


def test_switches_turn_external_nodes_off():
    plan = AssemblyLaunch.from_arguments(
        {"robot_state_publisher": "false", "rviz": "false", "joint_state_publisher": "false"}
    )
    assert plan.external_packages() == []
    assert AssemblyLaunch.from_arguments({"gui": "true", "rviz": "false"}).external_packages() == [
        "robot_state_publisher",
        "joint_state_publisher_gui",
    ]
    assert set(SWITCHES) >= {"robot_state_publisher", "rviz2", "moveit_ros_move_group", "controller_manager"}


def test_moveit_launch(tmp_path):
    plan = MoveItLaunch.from_arguments({"config_dir": str(tmp_path), "prefix": "p_", "rviz": "false"})
    assert plan.ros2_control and plan.move_group and plan.config_dir == tmp_path
    forwarded = plan.forwarded()
    assert forwarded["ros2_control"] == "true" and forwarded["joint_state_publisher"] == "false"
    assert forwarded["prefix"] == "p_" and forwarded["rviz"] == "false"
    assert set(forwarded) == set(ASSEMBLY_ARGUMENTS)
    assert AssemblyLaunch.from_arguments(forwarded).ros2_control
    assert plan.external_packages() == ["robot_state_publisher", "moveit_ros_move_group", "controller_manager"]
    off = MoveItLaunch.from_arguments({"config_dir": str(tmp_path), "move_group": "false", "ros2_control": "false"})
    assert off.forwarded()["joint_state_publisher"] == "true" and "moveit_ros_move_group" not in off.external_packages()
    (tmp_path / "file").write_text("x")
    with pytest.raises(InputError, match="config_dir"):
        MoveItLaunch.from_arguments({"config_dir": str(tmp_path / "file")})
