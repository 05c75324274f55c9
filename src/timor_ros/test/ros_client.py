"""A client node of the tests' own process, spun by a MultiThreadedExecutor in a background thread.

Why the tests once lost every answer after a first "no answer from /assembly/get_assembly" (issue 22): the spin
thread died. A subscription destroyed from a test's thread while the executor was building its wait set raised
rclpy's ``InvalidHandle: cannot use Destroyable because destruction was requested`` inside ``spin()``; the thread
ended, nothing was spun any more, and every later response went unheard although the nodes had answered (their
processes were idle). The spin loop below survives that (rclpy rebuilds its wait set on the next turn), and a call
that got no answer is sent once more on a new client before it fails.
"""

from __future__ import annotations

import threading
import time

import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor
from rclpy.impl.implementation_singleton import rclpy_implementation
from rclpy.node import Node
from std_msgs.msg import String

from timor_ros.common import LATCHED

InvalidHandle = rclpy_implementation.InvalidHandle


class RosClient:
    def __init__(self) -> None:
        self.context = rclpy.Context()
        rclpy.init(context=self.context)
        self.node = Node("timor_test_client", context=self.context)
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.context)
        self.executor.add_node(self.node)
        self.group = ReentrantCallbackGroup()
        self._clients: dict = {}
        self._stop = threading.Event()
        self.spin_errors: list[str] = []
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set() and self.context.ok():
            try:
                self.executor.spin_once(timeout_sec=0.1)
            except ExternalShutdownException:
                return
            except InvalidHandle as exc:  # an entity destroyed during the wait-set build: the next turn rebuilds it
                self.spin_errors.append(str(exc))
            except Exception as exc:  # noqa: BLE001 - a test's callback raised: keep hearing the other answers
                self.spin_errors.append(f"{type(exc).__name__}: {exc}")

    def add_node(self, node: Node) -> None:
        self.executor.add_node(node)

    def call(self, srv_type, name: str, request, timeout: float = 20.0):
        """The response of service ``name``. A client that does not see the service within ``timeout``, or whose
        request is left unanswered for ``timeout``, is destroyed and the call made once more on a new client: a
        client is never kept once it failed (one whose service was not available stayed cached for the session,
        and every later call of that service waited on it again, with no second attempt), and a lost DDS reply
        does not fail the call."""
        key = (srv_type, name)
        why: list[str] = []
        for _attempt in (1, 2):
            if key not in self._clients:
                self._clients[key] = self.node.create_client(srv_type, name, callback_group=self.group)
            client = self._clients[key]
            if client.wait_for_service(timeout_sec=timeout):
                done = threading.Event()
                future = client.call_async(request)
                future.add_done_callback(lambda _f: done.set())
                if done.wait(timeout):
                    return future.result()
                client.remove_pending_request(future)
                why.append(f"unanswered for {timeout:g} s")
            else:
                why.append(f"not available for {timeout:g} s")
            self.node.destroy_client(self._clients.pop(key))
        raise AssertionError(f"no answer from {name}: {'; '.join(why)} ({self._graph(name)})")

    def _graph(self, name: str) -> str:
        """What this client's process sees of service ``name`` and of its own spinning (for a failed call)."""
        spin = "spinning" if self._thread.is_alive() else "spin thread ended"
        return (f"servers in the graph: {self.node.count_services(name)}, {spin}, "
                f"spin errors: {self.spin_errors[-3:]}")  # fmt: skip

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

    def wait_latched(self, topic: str, accept, timeout: float) -> str:
        """The first message of a latched std_msgs/String topic that ``accept`` takes, heard by one subscription
        (the last message before it and every new one) as it arrives; the last one received ("" if none) if no
        message is taken within ``timeout``."""
        got: list[str] = []
        taken = threading.Event()

        def on(msg: String) -> None:
            got.append(msg.data)
            if accept(msg.data):
                taken.set()

        sub = self.node.create_subscription(String, topic, on, LATCHED)
        try:
            taken.wait(timeout)
            return next((text for text in got if accept(text)), got[-1] if got else "")
        finally:
            self.node.destroy_subscription(sub)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        self.executor.shutdown(timeout_sec=2.0)
        self.node.destroy_node()
        rclpy.try_shutdown(context=self.context)
