"""timor_ros.launching: the RViz config follows the prefix; the node behaviour comes from what is installed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from ros2_cli import real_package

from timor_ros.launching import (
    LaunchRefusedError,
    installed_versions,
    nodes_of_this_install,
    reads_description_topic,
    rviz_config_for,
)


def test_rviz_config_uses_the_prefixed_root_frame():
    path = Path(rviz_config_for("r1_base_link"))
    try:
        frames = re.findall(r"(?m)^\s*Fixed Frame: (.*)$", path.read_text())
        assert frames == ["r1_base_link"]
    finally:
        path.unlink()


@pytest.mark.skipif(not real_package("robot_state_publisher"), reason="the real robot_state_publisher is not here")
def test_the_installed_robot_state_publisher_decides_how_it_gets_the_urdf(monkeypatch):
    monkeypatch.delenv("ROS_DISTRO", raising=False)
    version = installed_versions()["robot_state_publisher"]
    nodes = nodes_of_this_install()
    if tuple(int(p) for p in version.split(".")) < (3, 4, 4):  # the ros-cpp kit: 3.3.3, as in Jazzy
        assert not nodes.rsp_reads_topic and reads_description_topic(None, nodes) is False
        with pytest.raises(LaunchRefusedError, match=rf"3\.4\.4\+ \(installed: {re.escape(version)}"):
            reads_description_topic(True, nodes)
    assert reads_description_topic(False, nodes) is False
    monkeypatch.setenv("ROS_DISTRO", "foxy")
    with pytest.raises(LaunchRefusedError, match="ROS_DISTRO must be one of"):
        nodes_of_this_install()


def test_the_rviz_tests_say_why_they_skip(monkeypatch):
    """Without the rviz kit, or without Xvfb, test_real_rviz.py skips with the reason (rviz_tools.rviz_missing)."""
    import rviz_tools

    monkeypatch.setattr(rviz_tools.shutil, "which", lambda name: None)
    monkeypatch.setattr(rviz_tools, "real_package", lambda name: name != "rviz2")
    assert "the real rviz2 is not installed" in rviz_tools.rviz_missing()
    monkeypatch.setattr(rviz_tools, "real_package", lambda name: True)
    assert "no Xvfb" in rviz_tools.rviz_missing()
