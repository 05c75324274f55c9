"""A running ros2_control taking a new robot: one supervised ros2_control_node per robot, the next one on standby.

Why a new process: controller_manager (4.24, ``ControllerManager::robot_description_callback``) initialises its
resource manager from the first robot description it receives and ignores every later one, and hardware cannot be
unloaded. So a new robot needs a new ros2_control_node. Starting one on the swap costs its process start and, worse,
DDS discovery before the latched description reaches it (1.8 s median under load, benchmarks/README.md).

The standby: the next ros2_control_node is started ahead, its ``robot_description`` remapped to a topic of its own.
Until a description arrives it has no hardware and offers none of the controller manager's services (4.24 calls
``init_services`` only after the description), so it cannot be confused with the running one; only its parameter
services are there twice. Its controllers' parameters come from a file named at its start
(``<controller>.params_file``), written on the swap, when the new robot is known. A swap (``ControllerSwapper.swap``):

 1. write the new robot's controller parameters to the standby's file;
 2. make the running manager release the hardware through its own services: every active controller deactivated
    (one switch), then every hardware component of its URDF set to *unconfigured* (``set_hardware_component_state``:
    the component's ``on_deactivate`` then ``on_cleanup`` run; unconfigured components are never read nor written
    again). Confirmed by the answers, the old manager is sent SIGINT and left to exit in the background (SIGTERM,
    then SIGKILL only if it hangs). The new manager gets the URDF at once and starts its hardware and services while
    the old one leaves; the swap calls it only once the old one's services have left the graph (or its process has
    ended), so that every call reaches the new manager alone, and takes as its first answer only one with no
    controllers loaded. A manager that does not release (no answer within ``SwapTimeouts.release``, a
    refusal, a component not unconfigured) is stopped as before: SIGINT and its exit awaited. Either way the new
    manager gets the URDF, and activates the hardware, only after the old one's hardware was released or its
    process ended. (4.24's ros2_control_node itself deactivates nothing on SIGINT: its ResourceManager's
    destructor is the default one; the release is what runs the hardware's deactivation.) A swap that fails after
    the new manager got the URDF takes that one off the same way, and so does ``close``.
 3. hand the new URDF to the standby (its topic is matched already: no discovery on the critical path);
 4. wait for its services; load and configure each controller, activate all in one strict switch; confirm with
    ``list_controllers`` that each is active and which interfaces it claims;
 5. start the next standby (``SwapTimeouts.after`` later, in the background: the answer does not wait for it).

Nothing here imports ROS: the calls to the manager go through ``ManagerServices``, the description through a
``publish`` function; timor_ros's assembly node supplies both. Every process is started in its own session with
``PR_SET_PDEATHSIG`` (SIGINT): it ends with its supervisor even when that one is killed.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from timor_core.common.fileio import atomic_write_text
from timor_core.errors import TimorError
from timor_core.export.formats.moveit_config import CM_KEY
from timor_core.ros.manager_process import ControlSwapError, ManagerProcess

__all__ = ["ControlSwapError", "ControllerState", "ControllerSwapper", "ManagerProcess", "ManagerServices",
           "ManagerTimeoutError", "SwapReport", "SwapTimeouts", "controller_types", "hardware_components",
           "split_controllers_yaml"]  # fmt: skip

_UNCONFIGURED = 1  # lifecycle_msgs/State.PRIMARY_STATE_UNCONFIGURED
_CALLED = ("list_controllers", "load_controller", "configure_controller", "switch_controller")  # a swap's calls


class ManagerTimeoutError(TimorError, TimeoutError):
    """A controller manager's service is not offered or did not answer in time (it may not be up yet)."""


@dataclass(frozen=True)
class SwapTimeouts:
    """Seconds allowed per step. ``stop``: the old manager's clean shutdown after SIGINT before SIGTERM, and as long
    again before SIGKILL. ``release``: each of the old manager's release calls (deactivate its controllers, its
    hardware to unconfigured; real hardware may take a while) before the swap falls back to awaiting its exit.
    ``after``: how long after a swap the next standby waits to start (its process and DDS participant), so that it
    does not compete with the swap's answer and the new controllers' first use."""

    stop: float = 10.0
    up: float = 20.0
    call: float = 10.0
    release: float = 2.0
    after: float = 0.3


@dataclass(frozen=True)
class ControllerState:
    """One controller as ``list_controllers`` reports it."""

    name: str
    state: str
    claimed_interfaces: tuple[str, ...] = ()


@dataclass
class SwapReport:
    """What a swap did: seconds per step, the controllers after it, and how the old manager ended."""

    seconds: dict[str, float] = field(default_factory=dict)
    controllers: tuple[ControllerState, ...] = ()
    old_manager: str = "none"
    pid: int = 0


class ManagerServices(Protocol):
    """The controller manager's services, as the supervisor needs them (timor_ros implements them over ROS)."""

    def list_controllers(self, timeout: float) -> list[ControllerState]:
        """The loaded controllers; raises ManagerTimeoutError if nothing answers in ``timeout``."""
        ...

    def load(self, name: str, timeout: float) -> bool: ...

    def configure(self, name: str, timeout: float) -> bool: ...

    def activate(self, names: Sequence[str], timeout: float) -> bool:
        """One strict switch activating all of ``names``."""
        ...

    def deactivate(self, names: Sequence[str], timeout: float) -> bool:
        """One strict switch deactivating all of ``names``; raises ManagerTimeoutError without an answer."""
        ...

    def unconfigure_hardware(self, component: str, timeout: float) -> int:
        """``set_hardware_component_state`` of ``component`` to unconfigured; the lifecycle state id it reports
        after (1: unconfigured), 0 if refused. Raises ManagerTimeoutError without an answer."""
        ...

    def servers(self, service: str) -> frozenset[str]:
        """The servers of the manager's ``service`` (``load_controller``, ...) in the graph now, one identity each
        (their endpoints'), whichever manager of this name they belong to."""
        ...


def hardware_components(urdf: str) -> tuple[str, ...]:
    """The names of the ``<ros2_control>`` blocks of a URDF: the hardware components its manager will run."""
    import xml.etree.ElementTree as ET

    try:
        root = ET.fromstring(urdf)
    except ET.ParseError:
        return ()
    return tuple(str(e.get("name")) for e in root.iter("ros2_control") if e.get("name"))


def controller_types(manager_params: dict[str, Any]) -> dict[str, str]:
    """The controllers of a manager's ``ros__parameters`` (the entries with a ``type``) -> their plugin class, in
    their order."""
    return {n: str(v["type"]) for n, v in manager_params.items() if isinstance(v, dict) and "type" in v}


def split_controllers_yaml(data: dict[str, Any], manager_key: str = CM_KEY) -> tuple[dict[str, Any], dict[str, Any]]:
    """ros2_controllers.yaml as (the manager's ``ros__parameters``, the controllers' sections): the first is robot
    independent (update rate, controller types) and goes to the standby at its start, the rest on the swap."""
    manager = dict(data.get(manager_key, {}).get("ros__parameters", {}))
    return manager, {k: v for k, v in data.items() if k != manager_key}


@dataclass
class _Standby:
    process: ManagerProcess
    topic: str
    params_file: Path


@dataclass
class _Leaving:
    """A released manager after its SIGINT, on its way out of the graph. ``before``: the servers of each service a
    swap calls, counted right before the SIGINT (its own and any ghost's of a dead process)."""

    stopper: threading.Thread
    servers: Callable[[str], frozenset[str]]
    before: dict[str, frozenset[str]]
    deadline: float

    def wait(self) -> None:
        """Until none of ``before`` is in the graph any more (or the old process has ended), whatever new
        manager has appeared meanwhile."""
        poll_servers(
            self.servers,
            _CALLED,
            lambda now: not any(now[name] & self.before[name] for name in _CALLED),
            lambda: self.stopper.is_alive() and time.monotonic() < self.deadline,
        )


def poll_servers(
    servers: Callable[[str], frozenset[str]],
    names: Sequence[str],
    done: Callable[[dict[str, frozenset[str]]], bool],
    going: Callable[[], bool],
) -> None:
    """Every 2 ms, the servers of each service in ``names``, until ``done`` of them or no longer ``going``: how a swap
    waits for the ROS graph to show a manager gone or a new one besides a dead one's ghosts."""
    while going():
        if done({name: servers(name) for name in names}):
            return
        time.sleep(0.002)


class ControllerSwapper:
    """Keeps one ros2_control_node with the current robot's controllers active, and the next one on standby.

    ``command(topic, manager_params)`` is the argv of a ros2_control_node whose description topic is ``topic`` and
    whose parameters file is ``manager_params``; ``publish(topic, urdf)`` hands a URDF to the node on ``topic``
    (latched); ``services`` reach the controller manager's services by its name.
    """

    def __init__(
        self,
        folder: Path,
        command: Callable[[str, Path], list[str]],
        publish: Callable[[str, str], None],
        services: ManagerServices,
        topic_base: str,
        timeouts: SwapTimeouts = SwapTimeouts(),
    ) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._command, self._publish, self.services = command, publish, services
        self._topic_base, self.timeouts = topic_base, timeouts
        self._starter = ThreadPoolExecutor(max_workers=1, thread_name_prefix="controller-manager")
        self._lock = threading.Lock()
        self._generation = 0
        self._manager_params: dict[str, Any] | None = None
        self._env: dict[str, str] | None = None  # the standbys' environment (None: this process's)
        self._next: Future[_Standby] | None = None  # the standby, started or starting
        self.running: ManagerProcess | None = None
        self._components: tuple[str, ...] = ()  # the running manager's hardware components (its URDF's)
        self._stopping: list[threading.Thread] = []
        self.stopped: dict[int, str] = {}  # pid -> how each manager stopped in the background ended
        self.log = self.folder / "ros2_control_node.log"

    def prepare(self, manager_params: dict[str, Any], preload: Sequence[Path] = ()) -> None:
        """Start the first standby with the manager's parameters (update rate, controller types). ``preload``: the
        shared libraries of its controllers' and hardware's plugins (:func:`.plugin_index.plugin_libraries`),
        loaded into every standby at its start (``LD_PRELOAD``) instead of during the swap; pluginlib's class
        loader takes the classes of a library loaded so (as of one linked into the executable)."""
        self._manager_params = dict(manager_params)
        if preload:
            before = [p for p in os.environ.get("LD_PRELOAD", "").split(":") if p]
            self._env = {**os.environ, "LD_PRELOAD": ":".join(before + [str(p) for p in preload])}
        self._next = self._start_standby()
        self._next.result()  # a standby that cannot start is reported here, by name

    def _start_standby(self, delay: float = 0.0) -> Future[_Standby]:
        """Start a standby in the starter thread (the thread its PDEATHSIG is tied to, alive as long as the
        swapper) after ``delay`` seconds; not waited for: a swap answers without it."""
        if self._manager_params is None:
            raise ControlSwapError("start", "no controller manager parameters yet (prepare() first)")
        return self._starter.submit(self._make_standby, delay)

    def _take_standby(self) -> _Standby | None:
        """The standby started last (its start awaited), now no longer the standby; None if none or it failed."""
        started, self._next = self._next, None
        try:
            return None if started is None else started.result()
        except ControlSwapError:
            return None

    def standby_process(self) -> ManagerProcess | None:
        """The standby's process (its start awaited), if there is one."""
        try:
            return None if self._next is None else self._next.result().process
        except ControlSwapError:
            return None

    def _make_standby(self, delay: float) -> _Standby:
        assert self._manager_params is not None
        time.sleep(delay)
        self._generation += 1
        k = self._generation
        topic = f"{self._topic_base}_{k}"
        params_file = self.folder / f"controllers_{k}.yaml"
        names = self.controller_names()
        manager = dict(self._manager_params)
        for name in names:
            manager[name] = {**manager[name], "params_file": str(params_file)}
        manager_file = self.folder / f"manager_{k}.yaml"
        atomic_write_text(manager_file, _yaml({CM_KEY: {"ros__parameters": manager}}))
        argv = self._command(topic, manager_file)
        return _Standby(ManagerProcess(argv, self.log, self._env), topic, params_file)

    def controller_names(self) -> list[str]:
        """The controllers of the manager's parameters (those with a ``type``), in their order."""
        return list(controller_types(self._manager_params or {}))

    def swap(self, urdf: str, controller_sections: dict[str, Any]) -> SwapReport:
        """Stop the running manager and bring the standby up with ``urdf``, every controller active; then start the
        next standby. Raises ControlSwapError naming the step; no manager runs after a failure."""
        with self._lock:
            report = SwapReport()
            t0 = time.monotonic()
            standby = self._take_standby()
            if standby is None or not standby.process.alive():
                standby = self._start_standby().result()  # it died (or none yet): a fresh one, on the critical path
            atomic_write_text(standby.params_file, _yaml(controller_sections))
            leaving = None
            if self.running is not None:
                report.old_manager, leaving = self._retire(self.running, report.seconds)
                self.running = None
            # (a manager that exited unreleased, a SIGKILL's, leaves its servers in the graph until discovery drops
            # them; the standby offers none before its URDF: whatever serves now is such a ghost)
            ghosts = {name: self.services.servers(name) for name in _CALLED} if leaving is None else {}
            self.running, self._components = standby.process, hardware_components(urdf)
            report.pid = standby.process.pid
            try:
                self._publish(standby.topic, urdf)  # the old hardware is released (or its process ended)
                if leaving is not None:  # the new manager starts meanwhile; every call waits until it is alone
                    leaving.wait()
                report.seconds["stop"] = time.monotonic() - t0
                report.seconds.update(self._activate(standby.process, ghosts))
                report.controllers = self._confirm()
            except ControlSwapError:
                _how, failed = self._retire(self.running, {})  # its hardware may be active: released, or stopped
                if failed is not None:
                    failed.wait()
                self.running = None
                raise
            finally:
                self._next = self._start_standby(self.timeouts.after)
            report.seconds["total"] = time.monotonic() - t0
            return report

    def _retire(self, old: ManagerProcess, seconds: dict[str, float]) -> tuple[str, _Leaving | None]:
        """Take the old manager off the hardware (see the module's step 2); how, for the report, and, if it was
        released, its way out of the graph to wait for (None: its process has ended)."""
        t0 = time.monotonic()
        refused = self._release(old) if old.alive() else "it had exited"
        seconds["release"] = time.monotonic() - t0
        if refused is not None:  # not released: the hardware is free only once the process has ended
            return f"{old.stop(self.timeouts.stop)} (no release: {refused})", None
        before = {name: self.services.servers(name) for name in _CALLED}
        stopper = threading.Thread(target=self._stop_in_background, args=(old,), name=f"stop-{old.pid}", daemon=True)
        stopper.start()  # SIGINT, its exit awaited there (SIGTERM, SIGKILL if it hangs)
        self._stopping = [t for t in self._stopping if t.is_alive()] + [stopper]
        end = time.monotonic() + 3 * self.timeouts.stop + 5  # the background stop has sent SIGKILL by then
        leaving = _Leaving(stopper, self.services.servers, before, end)
        return f"released {', '.join(self._components)} (unconfigured), SIGINT sent (pid {old.pid})", leaving

    def _release(self, old: ManagerProcess) -> str | None:
        """Deactivate the old manager's active controllers, then unconfigure each hardware component; None when
        all is confirmed, else why not."""
        timeout = self.timeouts.release
        if not self._components:
            return "no hardware component known"
        try:
            active = [c.name for c in self.services.list_controllers(timeout) if c.state == "active"]
            if active and not self.services.deactivate(active, timeout):
                return f"switch_controller deactivating {active} refused"
            for component in self._components:
                state = self.services.unconfigure_hardware(component, timeout)
                if state != _UNCONFIGURED:
                    return f"hardware {component!r} not unconfigured (lifecycle state {state})"
        except ManagerTimeoutError as exc:
            return str(exc)
        return None

    def _stop_in_background(self, old: ManagerProcess) -> None:
        self.stopped[old.pid] = old.stop(self.timeouts.stop)

    def _activate(self, process: ManagerProcess, ghosts: dict[str, frozenset[str]]) -> dict[str, float]:
        """Wait for the new manager's services (each besides ``ghosts``, a dead manager's), load and configure each
        controller, activate all at once."""
        names, call = self.controller_names(), self.timeouts.call
        marks = {"start": time.monotonic()}
        end = marks["start"] + self.timeouts.up
        self._wait_up(process, end)
        self._wait_past_ghosts(ghosts, end)
        marks["up"] = time.monotonic()
        for step, call_one in (("load", self.services.load), ("configure", self.services.configure)):
            for name in names:  # one at a time: the manager serves them in turn anyway (services_lock_)
                if not call_one(name, call):
                    raise ControlSwapError(step, f"{step}_controller {name!r} refused; the manager's log: {self.log}")
            marks[step] = time.monotonic()
        if not self.services.activate(names, call):
            raise ControlSwapError("switch", f"switch_controller activating {names} refused; log: {self.log}")
        marks["activate"] = time.monotonic()
        return {k: marks[k] - marks[p] for p, k in zip(marks, list(marks)[1:])}

    def _wait_up(self, process: ManagerProcess, end: float) -> None:
        """Until the new manager answers ``list_controllers`` with none loaded (an answer naming controllers came
        from another manager of this name). Its first answers may be lost while its reply path is matched: asked
        again every 0.1 s."""
        while True:
            if not process.alive():
                raise ControlSwapError("description", f"ros2_control_node exited ({process.proc.returncode});"
                                       f" its log: {self.log}")  # fmt: skip
            try:
                if not self.services.list_controllers(0.1):
                    return
                time.sleep(0.001)
            except ManagerTimeoutError:
                pass
            if time.monotonic() > end:
                raise ControlSwapError(
                    "description",
                    f"the new controller manager did not answer with no controllers loaded within"
                    f" {self.timeouts.up:g} s (no hardware from the URDF's <ros2_control> block?); its log: {self.log}",
                )

    def _wait_past_ghosts(self, ghosts: dict[str, frozenset[str]], end: float) -> None:
        """Until each service in ``ghosts`` has a server besides them, at most until ``end`` (then the calls go
        ahead). A request sent while a service's only server in sight is a dead manager's is lost: after a
        SIGKILLed manager ``load_controller`` went unanswered for 10 s once (clean-clone CI, 2026-11-30), the new
        manager's ``list_controllers`` answering already. (Where servers are counted, not named, a new one shows
        as one more.)"""
        poll_servers(
            self.services.servers,
            tuple(ghosts),
            lambda now: all(now[n] - ghosts[n] or len(now[n]) > len(ghosts[n]) for n in ghosts),
            lambda: time.monotonic() < end,
        )

    def _confirm(self) -> tuple[ControllerState, ...]:
        try:
            states = self.services.list_controllers(self.timeouts.call)
        except ManagerTimeoutError:
            raise ControlSwapError("confirm", "list_controllers did not answer") from None
        wanted = set(self.controller_names())
        active = {s.name for s in states if s.state == "active"}
        if not wanted <= active:
            found = {s.name: s.state for s in states}
            raise ControlSwapError("confirm", f"not active after the switch: {sorted(wanted - active)} ({found})")
        return tuple(s for s in states if s.name in wanted)

    def close(self, release: bool = True) -> list[str]:
        """Stop the running manager, after it released its hardware as in a swap (if ``release`` and it answers),
        and the standby; how each ended, its exit awaited."""
        with self._lock:
            out = []
            running = self.running
            if running is not None:
                refused = self._release(running) if release and running.alive() else "not asked"
                how = running.stop(self.timeouts.stop)
                out.append(how if refused else f"released {', '.join(self._components)} (unconfigured), {how}")
            standby = self._take_standby()
            if standby is not None:
                out.append(standby.process.stop(self.timeouts.stop))
            self.running = None
            for stopper in self._stopping:
                stopper.join()
            self._starter.shutdown(wait=True)
            return out


def _yaml(data: dict[str, Any]) -> str:

    return yaml.safe_dump(data, sort_keys=False)
