"""A client node of the tests' own process, spun by a MultiThreadedExecutor in a background thread."""

from __future__ import annotations

import threading
import time

import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from std_msgs.msg import String

from timor_ros.common import LATCHED


class RosClient:
    def __init__(self) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node("timor_test_client", context=self.context)
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self.executor.add_node(self.node)
        self.group = ReentrantCallbackGroup()
        self._clients: dict = {}
        self._thread = threading.Thread(target=self.executor.spin, daemon=True)
        self._thread.start()

    def add_node(self, node: Node) -> None:
        self.executor.add_node(node)

    def call(self, srv_type, name: str, request, timeout: float = 20.0):
        key = (srv_type, name)
        if key not in self._clients:
            self._clients[key] = self.node.create_client(srv_type, name, callback_group=self.group)
        client = self._clients[key]
        assert client.wait_for_service(timeout_sec=timeout), f"service {name} not available"
        done = threading.Event()
        future = client.call_async(request)
        future.add_done_callback(lambda _f: done.set())
        assert done.wait(timeout), f"no answer from {name}"
        return future.result()

    def latest_description(
        self, timeout: float = 10.0, after: str | None = None, topic: str = "/robot_description"
    ) -> str:
        """The description a fresh subscription to ``topic`` receives (one different from ``after`` if given)."""
        got: list[str] = []
        sub = self.node.create_subscription(String, topic, lambda m: got.append(m.data), LATCHED)
        try:
            end = time.monotonic() + timeout
            while time.monotonic() < end:
                if got and (after is None or got[-1] != after):
                    return got[-1]
                time.sleep(0.05)
            return got[-1] if got else ""
        finally:
            self.node.destroy_subscription(sub)

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
