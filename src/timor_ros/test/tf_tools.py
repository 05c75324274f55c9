"""TF as the tests see it, without tf2_ros's Python package (not in the PyPI wheels): the latest transform of
every child frame from /tf and /tf_static, composed up to a root; and /joint_states published with a stamp.

With it the tests compare what the real robot_state_publisher publishes with timor's own forward kinematics.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from tf2_msgs.msg import TFMessage

STATIC = QoSProfile(
    depth=100,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)


def quaternion_matrix(x: float, y: float, z: float, w: float) -> np.ndarray:
    """The rotation matrix of a unit quaternion."""
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


class TfListener:
    """The latest (parent, 4x4 transform, receive time) of every child frame on /tf and /tf_static."""

    def __init__(self, node: Node) -> None:
        self.node = node
        self._lock = threading.Lock()
        self.edges: dict[str, tuple[str, np.ndarray, float]] = {}
        self._subs = [
            node.create_subscription(TFMessage, "/tf", lambda m: self._on_tf(m, time.monotonic()), 100),
            # static transforms never age: newer_than applies to the moving ones
            node.create_subscription(TFMessage, "/tf_static", lambda m: self._on_tf(m, float("inf")), STATIC),
        ]

    def _on_tf(self, msg: TFMessage, now: float) -> None:
        with self._lock:
            for t in msg.transforms:
                m = np.eye(4)
                r, p = t.transform.rotation, t.transform.translation
                m[:3, :3] = quaternion_matrix(r.x, r.y, r.z, r.w)
                m[:3, 3] = (p.x, p.y, p.z)
                self.edges[t.child_frame_id.lstrip("/")] = (t.header.frame_id.lstrip("/"), m, now)

    def forget(self) -> None:
        """Drop what was received (dynamic transforms arrive again; static ones only after a new publication)."""
        with self._lock:
            self.edges.clear()

    def lookup(self, root: str, frame: str, newer_than: float = 0.0) -> np.ndarray | None:
        """root -> frame, or None while a transform of the chain is missing or older than ``newer_than``."""
        with self._lock:
            pose = np.eye(4)
            current, seen = frame, set()
            while current != root:
                if current in seen or current not in self.edges:
                    return None
                seen.add(current)
                parent, m, stamp = self.edges[current]
                if stamp < newer_than:
                    return None
                pose = m @ pose
                current = parent
            return pose

    def wait_for(self, root: str, frames: list[str], timeout: float, newer_than: float = 0.0) -> dict:
        """root -> every frame, waiting until all are there (missing ones are absent from the result)."""
        end = time.monotonic() + timeout
        while True:
            found = {f: self.lookup(root, f, newer_than) for f in frames}
            found = {f: p for f, p in found.items() if p is not None}
            if len(found) == len(frames) or time.monotonic() > end:
                return found
            time.sleep(0.05)

    def close(self) -> None:
        for sub in self._subs:
            self.node.destroy_subscription(sub)


class JointStates:
    """Publishes /joint_states (in a namespace) with the current time as stamp, as joint_state_publisher does."""

    def __init__(self, node: Node, topic: str = "/joint_states") -> None:
        self.node = node
        self.pub = node.create_publisher(JointState, topic, 10)

    def publish(self, names: list[str], q) -> None:
        msg = JointState()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.name = list(names)
        msg.position = [float(v) for v in q]
        self.pub.publish(msg)

    def close(self) -> None:
        self.node.destroy_publisher(self.pub)


def pose_error(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """(translation error in m, rotation error in rad) between two 4x4 poses."""
    dp = float(np.linalg.norm(a[:3, 3] - b[:3, 3]))
    cos = (np.trace(a[:3, :3].T @ b[:3, :3]) - 1) / 2
    return dp, float(np.arccos(np.clip(cos, -1.0, 1.0)))
