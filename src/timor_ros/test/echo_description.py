"""A separate subscriber process: prints the first /robot_description (and SRDF) it receives, as JSON."""

import json
import sys
import time

import rclpy
from std_msgs.msg import String

from timor_ros.common import LATCHED

timeout = float(sys.argv[1]) if len(sys.argv) > 1 else 20.0
rclpy.init()
node = rclpy.create_node("echo_description")
got = {}
node.create_subscription(String, "/robot_description", lambda m: got.setdefault("urdf", m.data), LATCHED)
node.create_subscription(String, "/robot_description_semantic", lambda m: got.setdefault("srdf", m.data), LATCHED)
end = time.monotonic() + timeout
while time.monotonic() < end and len(got) < 2:
    rclpy.spin_once(node, timeout_sec=0.1)
node.destroy_node()
rclpy.try_shutdown()
print(json.dumps(got))
sys.exit(0 if "urdf" in got else 1)
