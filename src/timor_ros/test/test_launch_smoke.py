"""launch_testing (the real upstream plugin, under pytest): assembly.launch.py brings up /robot_description, and
with the real robot_state_publisher (make ros installs it from ../shared/ros-cpp; a ROS 2 install has it) the TF
chain base_link -> tool0.

robot_state_publisher and RViz take part only where they are really installed (a placeholder does not count);
elsewhere they are switched off with their launch arguments. Skipped without launch_testing (make ros).
"""

import time
import unittest

import pytest

pytest.importorskip("launch_testing", reason="no launch_testing: make ros installs it from the ros-launch kit")
pytest.importorskip("launch_ros")

import launch  # noqa: E402
import launch_testing.actions  # noqa: E402
import rclpy  # noqa: E402
from launch.launch_description_sources import PythonLaunchDescriptionSource  # noqa: E402
from launch_ros.substitutions import FindPackageShare  # noqa: E402
from ros2_cli import real_package  # noqa: E402
from std_msgs.msg import String  # noqa: E402

from timor_ros.common import LATCHED  # noqa: E402

RSP = real_package("robot_state_publisher")


@pytest.mark.launch_test
def generate_test_description():
    source = PythonLaunchDescriptionSource([FindPackageShare("timor_ros"), "/launch/assembly.launch.py"])
    args = {"rviz": "false", "search": "false", "robot_state_publisher": str(RSP).lower()}
    include = launch.actions.IncludeLaunchDescription(source, launch_arguments=args.items())
    return launch.LaunchDescription([include, launch_testing.actions.ReadyToTest()])


class TestRobotDescription(unittest.TestCase):
    def test_robot_description_is_published(self):
        rclpy.init()
        try:
            node = rclpy.create_node("timor_launch_smoke")
            got = []
            node.create_subscription(String, "/robot_description", lambda m: got.append(m.data), LATCHED)
            end = time.monotonic() + 60
            while not got and time.monotonic() < end:
                rclpy.spin_once(node, timeout_sec=0.2)
            node.destroy_node()
        finally:
            rclpy.shutdown()
        self.assertTrue(got, "no /robot_description within 60 s")
        self.assertIn("<robot", got[0])

    @unittest.skipUnless(RSP, "robot_state_publisher is not really installed here (make ros, ../shared/ros-cpp)")
    def test_robot_state_publisher_publishes_the_tf_chain(self):
        from tf_tools import TfListener

        rclpy.init()
        try:
            node = rclpy.create_node("timor_launch_tf")
            tf = TfListener(node)
            found = None
            end = time.monotonic() + 60
            while found is None and time.monotonic() < end:
                rclpy.spin_once(node, timeout_sec=0.2)
                found = tf.lookup("base_link", "tool0")
            node.destroy_node()
        finally:
            rclpy.shutdown()
        self.assertIsNotNone(found, "no TF base_link -> tool0 within 60 s")
