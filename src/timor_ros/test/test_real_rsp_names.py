"""The real robot_state_publisher (../shared/ros-cpp, installed by `make ros`) with the URDF of an imported robot
that keeps its names (issue 37), imported without its meshes (``missing_meshes="skip"``): the TF frame names it
publishes are the URDF's link names byte for byte, and tf2 (tf2_echo) looks them up, with
ROS-Industrial's ``-``, the namespace ``arm/`` and a space. The robot is timor_core's test file
``tests/data/urdf_names/ur5_names.urdf`` (a UR5 of example-robot-data, renamed; its source and licence are in the file).
Skipped where robot_state_publisher is not really installed.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml
from ros2_cli import real_package
from tf_tools import STATIC, JointStates

from timor_core.export.urdf_import.importer import MeshesLeftOut, assembly_from_urdf

pytestmark = pytest.mark.skipif(
    not real_package("robot_state_publisher"),
    reason="the real robot_state_publisher is not installed (make ros installs it from ../shared/ros-cpp)",
)
FILE = Path(__file__).resolve().parents[2] / "timor_core" / "tests" / "data" / "urdf_names" / "ur5_names.urdf"


def _node(package: str, executable: str) -> list[str]:
    """The command that runs a C++ node of the venv (ros-cpp-exec gives it the library path)."""
    exe = Path(sys.prefix) / "lib" / package / executable
    runner = Path(sys.prefix) / "bin" / "ros-cpp-exec"
    if not exe.is_file() or not runner.is_file():
        pytest.skip(f"no {package}/{executable} or ros-cpp-exec in {sys.prefix}")
    return [str(runner), str(exe)]


class Frames:
    """Every (parent, child) frame pair seen on /tf and /tf_static, as the messages carry them."""

    def __init__(self, node) -> None:
        from tf2_msgs.msg import TFMessage

        self.node, self.pairs, self._lock = node, set(), threading.Lock()
        self.subs = [node.create_subscription(TFMessage, "/tf", self._on, 100),
                     node.create_subscription(TFMessage, "/tf_static", self._on, STATIC)]  # fmt: skip

    def _on(self, msg) -> None:
        with self._lock:
            self.pairs |= {(t.header.frame_id, t.child_frame_id) for t in msg.transforms}

    def close(self) -> None:
        for sub in self.subs:
            self.node.destroy_subscription(sub)


def test_tf_frame_names_are_the_urdf_names(ros_client, tmp_path):
    with pytest.warns(MeshesLeftOut):  # the UR5's meshes are not needed for TF
        assembly = assembly_from_urdf(FILE, keep_names=True, missing_meshes="skip")
    urdf = assembly.to_urdf()
    root = ET.fromstring(urdf)
    expected = {(j.find("parent").get("link"), j.find("child").get("link")) for j in root.findall("joint")}
    assert ("arm/wrist_3_link", "arm/ee link") in expected and ("world", "arm/base_link") in expected
    params = tmp_path / "rsp.yaml"
    params.write_text(yaml.safe_dump({"/**": {"ros__parameters": {"robot_description": urdf}}}))
    frames = Frames(ros_client.node)
    states = JointStates(ros_client.node)
    rsp_command = [*_node("robot_state_publisher", "robot_state_publisher"), "--ros-args", "--params-file", str(params)]
    # tf2 itself (tf2_echo's C++ Buffer) looks the frame with a space up, through the namespaced links
    echo_command = [*_node("tf2_ros", "tf2_echo"), "world", "arm/ee link"]
    rsp = subprocess.Popen(rsp_command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    echo_log = tmp_path / "tf2_echo.log"
    with open(echo_log, "w") as fh:
        echo = subprocess.Popen(echo_command, stdout=fh, stderr=subprocess.STDOUT, text=True)
    try:
        end = time.monotonic() + 30
        # until every pair is on /tf and tf2_echo has printed a transform (once a second after it found one)
        while time.monotonic() < end and not (expected <= frames.pairs and "- Translation:" in echo_log.read_text()):
            states.publish(list(assembly.robot.joints), [0.1] * assembly.dof)
            time.sleep(0.1)
    finally:
        for proc in (echo, rsp):
            proc.terminate()
        echo.wait(30)
        out = rsp.communicate(timeout=30)[0]
        echoed = echo_log.read_text()
        frames.close()
        states.close()
    assert expected <= frames.pairs, f"missing {sorted(expected - frames.pairs)}; robot_state_publisher said {out}"
    assert {c for _, c in frames.pairs} <= {link.get("name") for link in root.findall("link")}
    assert "- Translation:" in echoed, echoed[-2000:]
