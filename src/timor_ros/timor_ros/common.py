"""Shared pieces of the timor nodes: QoS, blocking service calls from callbacks, the module-set client."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rcl_interfaces.msg import ParameterDescriptor, ParameterEvent
from rcl_interfaces.srv import GetParameters
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.exceptions import ParameterUninitializedException
from rclpy.node import Node
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy, qos_profile_parameter_events
from rclpy.subscription_content_filter_options import ContentFilterOptions

from timor_core import ModulesDB
from timor_core.errors import TimorError, explain

from .parameters import db_from_parameters, module_param_name

__all__ = [
    "guarded",
    "LATCHED",
    "ServiceCallError",
    "call_service",
    "declare",
    "param",
    "ModulesDBClient",
    "DB_INFO_PARAMETERS",
    "future_done",
    "installed_executable",
]

#: /robot_description and /robot_description_semantic: late subscribers get the last message
LATCHED = QoSProfile(
    depth=1,
    history=HistoryPolicy.KEEP_LAST,
    reliability=ReliabilityPolicy.RELIABLE,
    durability=DurabilityPolicy.TRANSIENT_LOCAL,
)

#: read-only parameters of the modules_db node that describe the set as a whole
DB_INFO_PARAMETERS = ("module_ids", "db_name", "db_source", "db_base_dir", "db_ignore_collisions")


class ServiceCallError(TimorError):
    """A service is not offered, or did not answer in time."""


def installed_executable(package: str, name: str) -> Path:
    """The executable ``name`` an installed ROS package ships in ``lib/<package>/`` (the layout ``ros2 run`` uses).

    Raises a TimorError naming the package or the missing path, so each caller can say what it was starting.
    """
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    try:
        exe = Path(get_package_prefix(package)) / "lib" / package / name
    except PackageNotFoundError:
        raise TimorError(f"the package {package} is not installed") from None
    if not exe.is_file():
        raise TimorError(f"no {name} at {exe}")
    return exe


def future_done(future: Any, timeout: float) -> bool:
    """Whether ``future`` (completed by the executor's other threads, never spun here) is done within ``timeout`` s."""
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    return done.wait(timeout)


def call_service(client: Any, request: Any, timeout: float, attempts: int = 1) -> Any:
    """Call a service and wait for the answer without spinning (the executor's other threads deliver it).

    Use from a callback of a MultiThreadedExecutor, with ``client`` in a reentrant callback group. ``attempts`` > 1
    only for idempotent requests: at a client's first contact the server's response can be dropped before the
    client's reader is matched (rmw: "failed to send response (timeout)"), and the request is then sent again.
    """
    if not client.service_is_ready() and not client.wait_for_service(timeout_sec=timeout):
        raise ServiceCallError(f"service {client.srv_name} is not available")
    for _ in range(max(1, attempts)):
        future = client.call_async(request)
        if future_done(future, timeout):
            break
        client.remove_pending_request(future)
    else:
        tries = f" ({attempts} tries)" if attempts > 1 else ""
        raise ServiceCallError(f"service {client.srv_name} did not answer within {timeout:g} s{tries}")
    result = future.result()
    if result is None:
        raise ServiceCallError(f"service {client.srv_name} failed: {future.exception()}")
    return result


def guarded(node: Node, what: str, refuse: Callable[..., Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Wrap a service, action or parameter callback: any exception becomes ``refuse(reason, *args)``.

    A hostile request (deep JSON, a huge list, a value of the wrong kind) must be answered with a refusal and a
    reason, never take the node (and every node in its process) down. One log line per refusal.
    """

    def wrap(callback: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(callback)
        def inner(*args: Any) -> Any:
            try:
                return callback(*args)
            except Exception as exc:  # noqa: BLE001 - RecursionError and MemoryError included
                reason = explain(exc)
                node.get_logger().error(f"{what}: refused: {reason}")
                return refuse(reason, *args)

        return inner

    return wrap


def declare(node: Node, name: str, default: Any, description: str, *, read_only: bool = False) -> None:
    """Declare a parameter with a descriptor; ``default`` may be a ``Parameter.Type`` (no value yet)."""
    node.declare_parameter(name, default, ParameterDescriptor(description=description, read_only=read_only))


def param(node: Node, name: str, empty: Any = None) -> Any:
    """A parameter's value; ``empty`` if it was declared by type and never set."""
    try:
        value = node.get_parameter(name).value
    except ParameterUninitializedException:
        return empty
    return empty if value is None else value


def resolve_name(node: Node, name: str) -> str:
    """The fully qualified name of a node or topic: ``name`` itself if absolute, else below ``node``'s namespace.

    Relative defaults (``modules_db``, ``assembly``) make a set of timor nodes started in one namespace
    (``--ros-args -r __ns:=/r1``, or a launch file's ``namespace``) find each other, one robot per namespace.
    """
    name = name.strip()
    if name.startswith("/"):
        return "/" + name.strip("/")
    return node.get_namespace().rstrip("/") + "/" + name.strip("/")


class ModulesDBClient:
    """The module set served by a modules_db node, read through its standard parameter services.

    The set is cached and forgotten whenever the node announces a parameter change on ``/parameter_events``.
    """

    def __init__(self, node: Node, target: str, timeout: float = 5.0) -> None:
        self.node = node
        self.target = resolve_name(node, target)
        self.timeout = timeout
        self._group = ReentrantCallbackGroup()
        service = f"{self.target}/get_parameters"
        self._client: Client = node.create_client(GetParameters, service, callback_group=self._group)
        self._sub = node.create_subscription(
            ParameterEvent,
            "/parameter_events",
            self._on_event,
            qos_profile_parameter_events,
            callback_group=self._group,
            content_filter_options=ContentFilterOptions("node = %0", [f"'{self.target}'"]),
        )  # only the modules_db node's events reach this process (a controller's load declares dozens of parameters)
        self._lock = threading.Lock()
        self._db: ModulesDB | None = None
        self._generation = 0
        self.revision = 0  # counts the sets fetched (a cache key for what was derived from them)

    def _on_event(self, event: ParameterEvent) -> None:
        if event.node == self.target:
            with self._lock:
                self._generation += 1
                self._db = None

    def invalidate(self) -> None:
        with self._lock:
            self._generation += 1
            self._db = None

    def _get(self, names: list[str]) -> dict[str, Any]:
        response = call_service(self._client, GetParameters.Request(names=names), self.timeout, attempts=3)
        if len(response.values) != len(names):
            raise ServiceCallError(f"{self.target} answered {len(response.values)} values for {len(names)} names")
        return {n: parameter_value_to_python(v) for n, v in zip(names, response.values)}

    def get(self) -> ModulesDB:
        """The current module set (ServiceCallError if the node does not answer; InputError if a module is bad)."""
        with self._lock:
            if self._db is not None:
                return self._db
            generation = self._generation
        info = self._get(list(DB_INFO_PARAMETERS))
        ids = [str(i) for i in (info["module_ids"] or [])]
        if not ids:
            raise ServiceCallError(f"{self.target} serves no modules (is it a timor modules_db node?)")
        texts = self._get([module_param_name(i) for i in ids])
        db = db_from_parameters(
            ids,
            {k: v for k, v in texts.items() if isinstance(v, str)},
            name=str(info["db_name"] or ""),
            base_dir=str(info["db_base_dir"] or "") or None,
            ignore_collisions=str(info["db_ignore_collisions"] or "rigid_via_joint"),
        )
        with self._lock:
            if generation == self._generation:
                self._db = db
                self.revision += 1
        return db


def string_array(node: Node, name: str) -> list[str]:
    return [str(v) for v in (param(node, name, []) or [])]


def override(name: str, value: Any) -> Parameter:
    """A parameter override for a node constructor."""
    return Parameter(name, value=value)
