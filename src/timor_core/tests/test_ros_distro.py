"""Which wiring each ROS 2 distro's nodes need (timor_core.export.formats.ros_distro)."""

from __future__ import annotations

import pytest

from timor_core.errors import InputError
from timor_core.export.formats.ros_distro import node_behaviour, ompl_pipeline, parse_version


@pytest.mark.parametrize(
    ("distro", "versions", "topic", "private"),
    [
        ("humble", {"robot_state_publisher": "3.0.3", "controller_manager": "2.54.0"}, False, True),
        ("jazzy", {"robot_state_publisher": "3.3.3", "controller_manager": "4.46.0"}, False, False),
        ("kilted", {"robot_state_publisher": "3.4.3", "controller_manager": "5.0.0"}, False, False),
        ("kilted", {"robot_state_publisher": "3.4.4"}, True, False),  # ros/robot_state_publisher#234, 2026-09
        ("rolling", {"robot_state_publisher": "3.5.2"}, False, False),
        ("rolling", {"robot_state_publisher": "3.5.3"}, True, False),
        ("humble", {}, False, True),
        ("kilted", {}, False, False),  # unknown release: the parameter works everywhere
        ("rolling", {}, True, False),
    ],
)
def test_node_behaviour(distro, versions, topic, private):
    nodes = node_behaviour(distro, versions)
    assert (nodes.rsp_reads_topic, nodes.cm_private_topic) == (topic, private)
    assert nodes.cm_remappings() == ([("~/robot_description", "robot_description")] if private else [])
    assert nodes.moveit_layout == ("humble" if distro == "humble" else "jazzy")


def test_distro_from_the_environment_or_the_installed_controller_manager(monkeypatch):
    monkeypatch.setenv("ROS_DISTRO", "Humble")
    assert node_behaviour().distro == "humble"
    monkeypatch.delenv("ROS_DISTRO")
    assert node_behaviour(versions={"controller_manager": "4.24.0"}).distro == "jazzy"
    assert node_behaviour(versions={"controller_manager": "2.40.0"}).cm_private_topic
    assert node_behaviour().distro == "kilted"
    monkeypatch.setenv("ROS_DISTRO", "noetic")
    with pytest.raises(InputError, match="ROS_DISTRO must be one of"):
        node_behaviour()


def test_versions_and_layouts():
    assert parse_version("3.4.4") == (3, 4, 4) and parse_version("3.4.4-1") is None and parse_version("") is None
    assert "planning_plugin" in ompl_pipeline("humble") and "planning_plugins" in ompl_pipeline("jazzy")
    with pytest.raises(InputError):
        ompl_pipeline("galactic")
