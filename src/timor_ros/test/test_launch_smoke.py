"""launch_testing smoke test (ROS 2 install only): assembly.launch.py brings up /robot_description.

Runs with `colcon test --packages-select timor_ros` or `launch_test test/test_launch_smoke.py` in the ROS container;
skipped where launch_testing is not installed (e.g. with the PyPI wheels).
"""

import time
import unittest

import pytest

pytest.importorskip("launch_testing")
pytest.importorskip("launch_ros")

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
import rclpy  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from launch_ros.substitutions import FindPackageShare  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from timor_ros.common import LATCHED  # noqa: E402


@pytest.mark.launch_test
def generate_test_description():
    source = PythonLaunchDescriptionSource([FindPackageShare("timor_ros"), "/launch/assembly.launch.py"])
    include = launch.actions.IncludeLaunchDescription(source, launch_arguments={"rviz": "false"}.items())
    return launch.LaunchDescription([include, launch_testing.actions.ReadyToTest()])


class TestRobotDescription(unittest.TestCase):
    def test_robot_description_is_published(self):
        rclpy.init()
        node = rclpy.create_node("timor_launch_smoke")
        got = []
        node.create_subscription(String, "/robot_description", lambda m: got.append(m.data), LATCHED)
        end = time.monotonic() + 60
        while not got and time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.2)
        node.destroy_node()
        rclpy.shutdown()
        self.assertTrue(got, "no /robot_description within 60 s")
        self.assertIn("<robot", got[0])
