"""The ros2_control swaps of `live_swap.py`: `--product N` (``product_swaps``: the product's path, set_assembly on
moveit.launch.py, whose assembly node swaps its supervised controller manager with a standby ahead) and `--restart N`
(below: the benchmark's own restart of ros2_control_node, the route measured before the product had one).

The restart route: keep the assembly node and robot_state_publisher,
restart only controller_manager's ros2_control_node, and bring the controllers up by service calls.

Why a restart: the real controller_manager (4.24, ``ControllerManager::robot_description_callback``) initialises
its resource manager from the first /robot_description it receives and ignores every later one ("ResourceManager
has already loaded a urdf. Ignoring attempt to reload a robot description."); its hardware cannot be reloaded, so a
new robot needs a new controller_manager. Nothing else needs to restart: the assembly node publishes the new URDF
(with its ``<ros2_control>`` block) latched on /robot_description, which the new controller_manager reads on start.
The controllers are loaded, configured and activated (one ``switch_controller`` for both, strict) from a node that
is already running, instead of a spawner process per controller.
"""

from __future__ import annotations

import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONTROLLERS = ("joint_state_broadcaster", "arm_controller")
MANAGER = "/controller_manager"


def controllers_yaml(modules: list[str], folder: Path) -> Path:
    """The new robot's ros2_controllers.yaml (the one moveit.launch.py writes), without the rest of MoveIt's."""
    import yaml

    from timor_core import ModulesDB
    from timor_core.export.formats.moveit_config import MoveItOptions, moveit_config_data
    from timor_core.export.formats.ros2_control import Ros2ControlConfig
    from timor_core.model.assembly import ModuleAssembly

    assembly = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), modules)
    options = MoveItOptions(ros2_control=Ros2ControlConfig())
    path = folder / f"ros2_controllers_{'_'.join(modules)}.yaml"
    path.write_text(yaml.safe_dump(moveit_config_data(assembly, options)["ros2_controllers.yaml"]))
    return path


def start_manager(params: Path, log: Path) -> subprocess.Popen:
    """ros2_control_node itself (this venv's LD_LIBRARY_PATH is inherited), in its own process group."""
    exe = Path(sys.prefix) / "lib" / "controller_manager" / "ros2_control_node"
    return subprocess.Popen(
        [str(exe), "--ros-args", "--params-file", str(params)],
        stdout=log.open("a"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop_manager(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGINT (a clean shutdown: hardware deactivated), SIGKILL if it hangs; waits for the exit."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def activate(client) -> dict[str, float]:
    """Load and configure both controllers, then activate them together (strict: both or neither).

    First a ``list_controllers`` round trip: a new server's reply path may not be matched yet when it first
    appears in the graph (its first answers are then lost: "failed to send response ... (timeout)"); once one
    service of the new node answers, the node's endpoints are known to this process.
    """
    from builtin_interfaces.msg import Duration
    from controller_manager_msgs.srv import ConfigureController, ListControllers, LoadController, SwitchController

    marks = {"start": time.monotonic()}
    end = marks["start"] + 60
    while True:
        try:
            client.call(ListControllers, f"{MANAGER}/list_controllers", ListControllers.Request(), 0.25)
            break
        except AssertionError:  # not up yet, or its answer lost
            if time.monotonic() > end:
                raise RuntimeError("the new controller_manager did not answer within 60 s") from None
    marks["up"] = time.monotonic()
    for name in CONTROLLERS:
        if not client.call(LoadController, f"{MANAGER}/load_controller", LoadController.Request(name=name), 20).ok:
            raise RuntimeError(f"load_controller {name} failed")
    marks["loaded"] = time.monotonic()
    for name in CONTROLLERS:
        req = ConfigureController.Request(name=name)
        if not client.call(ConfigureController, f"{MANAGER}/configure_controller", req, 20).ok:
            raise RuntimeError(f"configure_controller {name} failed")
    marks["configured"] = time.monotonic()
    req = SwitchController.Request(
        activate_controllers=list(CONTROLLERS),
        strictness=SwitchController.Request.STRICT,
        activate_asap=True,
        timeout=Duration(sec=5),
    )
    if not client.call(SwitchController, f"{MANAGER}/switch_controller", req, 20).ok:
        raise RuntimeError("switch_controller failed")
    marks["active"] = time.monotonic()
    return {k: marks[k] - marks[p] for p, k in zip(marks, list(marks)[1:])}


def restart_swaps(robots: tuple[list[str], ...], rounds: int) -> dict | None:
    """``rounds`` swaps each way (plus one untimed warm-up); per swap the seconds of each part and in total."""
    from control_tools import controller_states
    from ros2_cli import Launch
    from ros_client import RosClient

    from timor_interfaces.srv import GetAssembly, SetAssembly

    folder = Path(tempfile.mkdtemp(prefix="timor_restart_swap_"))
    log = folder / "controller_manager.log"
    launch = Launch(["timor_ros", "assembly.launch.py", "db:=robco_like", f"modules:={' '.join(robots[0])}",
                     "rviz:=false", "search:=false", "ros2_control:=true", "joint_state_publisher:=false"],
                    folder / "launch.log")  # fmt: skip
    client = RosClient()
    manager = None
    swaps: list[dict] = []
    try:
        end = time.monotonic() + 90
        while not client.call(GetAssembly, "/assembly/get_assembly", GetAssembly.Request(), 10).available:
            if time.monotonic() > end:
                raise RuntimeError(f"the assembly node did not come up\n{launch.output()[-2000:]}")
            time.sleep(0.5)
        manager = start_manager(controllers_yaml(robots[0], folder), log)
        activate(client)
        for k in range(2 * rounds + 1):
            modules = robots[(k + 1) % 2]
            t0 = time.monotonic()
            response = client.call(SetAssembly, "/assembly/set_assembly", SetAssembly.Request(modules=modules), 30)
            if not response.success:
                raise RuntimeError(f"swap refused: {response.message}")
            t_answer = time.monotonic()
            params = controllers_yaml(modules, folder)
            stop_manager(manager)
            t_stopped = time.monotonic()
            manager = start_manager(params, log)
            parts = activate(client)
            t_active = time.monotonic()
            states = controller_states(client, MANAGER, 10.0)
            if any(states.get(c) != "active" for c in CONTROLLERS):
                raise RuntimeError(f"controllers not active after the swap: {states}")
            t_confirmed = time.monotonic()
            if k:
                swaps.append({
                    "to": " ".join(modules),
                    "answer_s": t_answer - t0,
                    "stop_s": t_stopped - t_answer,
                    "start_and_activate_s": t_active - t_stopped,
                    **{f"{k}_s": v for k, v in parts.items()},
                    "confirmed_s": t_confirmed - t0,
                    "load": os.getloadavg()[0],
                })  # fmt: skip
    except (RuntimeError, AssertionError) as exc:
        print(f"restart swap failed: {exc}\n{log.read_text(errors='replace')[-2000:] if log.exists() else ''}",
              file=sys.stderr)  # fmt: skip
        return None
    finally:
        if manager is not None:
            stop_manager(manager)
        client.close()
        launch.stop()
        launch.kill_leftovers()
    return {"swaps": swaps}


def _arm_claims(client) -> set[str]:
    """The interfaces arm_controller claims, if both controllers are active (else an empty set)."""
    from controller_manager_msgs.srv import ListControllers

    got = client.call(ListControllers, f"{MANAGER}/list_controllers", ListControllers.Request(), 10)
    states = {c.name: c for c in got.controller}
    if any(name not in states or states[name].state != "active" for name in CONTROLLERS):
        return set()
    return set(states["arm_controller"].claimed_interfaces)


def product_swaps(robots: tuple[list[str], ...], rounds: int, gap: float = 3.0, floor: bool = False) -> dict | None:
    """The product's path: ``moveit.launch.py move_group:=false`` (the assembly node supervises controller_manager,
    a standby ahead) and ``rounds`` set_assembly requests each way (plus one untimed warm-up). Per swap: the answer
    (the node answers after its own list_controllers shows both active), the node's parts (from its log line), and
    the confirmation by this process: both active, arm_controller claiming the new robot's joints. ``gap`` seconds
    pass between swaps (the next standby, started after each swap, comes up and is discovered meanwhile).
    ``floor``: after each product swap, ``gap`` seconds later, one swap of the floor (control_floor.py) beside it,
    whose parts join the product swap's record."""
    import ast

    from ros2_cli import Launch
    from ros_client import RosClient

    from timor_interfaces.srv import SetAssembly

    folder = Path(tempfile.mkdtemp(prefix="timor_product_swap_"))
    log = folder / "launch.log"
    args = ["timor_ros", "moveit.launch.py", "db:=robco_like", f"modules:={' '.join(robots[0])}", "move_group:=false",
            "rviz:=false", "search:=false", f"config_dir:={folder / 'config'}"]  # fmt: skip
    launch = Launch(args, log)
    client = RosClient()
    swaps: list[dict] = []
    beside = None
    try:
        end = time.monotonic() + 120
        while "controllers active" not in launch.output():
            if time.monotonic() > end or launch.proc.poll() is not None:
                raise RuntimeError(f"the launch did not bring the controllers up\n{launch.output()[-2000:]}")
            time.sleep(0.2)
        if floor:
            from control_floor import Floor

            beside = Floor(client, robots, folder)
            beside.start()
        for k in range(2 * rounds + 1):
            modules = robots[(k + 1) % 2]
            joints = {f"{j}/position" for j in _joints(modules)}
            time.sleep(gap)
            t0 = time.monotonic()
            response = client.call(SetAssembly, "/assembly/set_assembly", SetAssembly.Request(modules=modules), 60)
            t_answer = time.monotonic()
            if not response.success:
                raise RuntimeError(f"swap refused: {response.message}")
            while _arm_claims(client) != joints:
                if time.monotonic() - t0 > 30:
                    raise RuntimeError(f"not confirmed within 30 s: {_arm_claims(client)}")
            t_confirmed = time.monotonic()
            lines: list[str] = []
            while len(lines) < k + 2:  # the node's log line of this swap (the first is the initial robot's)
                lines = [x for x in launch.output().splitlines() if "ros2_control swap: {" in x]
                if time.monotonic() - t0 > 30:
                    raise RuntimeError("the assembly node logged no ros2_control swap line")
                time.sleep(0.02)
            logged = lines[k + 1].split("ros2_control swap: ", 1)[1]
            parts = ast.literal_eval(logged.split(" (old manager")[0])
            if k:
                swaps.append({
                    "to": " ".join(modules),
                    "answer_s": t_answer - t0,
                    "describe_s": t_answer - t0 - parts["total"],
                    **{f"{name}_s": v for name, v in parts.items() if name != "total"},
                    "control_s": parts["total"],
                    "confirmed_s": t_confirmed - t0,
                    "old_manager": logged.split(" (old manager ", 1)[1].rstrip(")"),
                    "load": os.getloadavg()[0],
                })  # fmt: skip
            if beside is not None:
                time.sleep(gap)
                parts = beside.swap()
                if k:
                    swaps[-1].update(parts)
    except (RuntimeError, AssertionError) as exc:
        print(f"product swap failed: {exc}\n{launch.output()[-2000:]}", file=sys.stderr)
        return None
    finally:
        if beside is not None:
            beside.close()
        client.close()
        launch.stop()
        launch.kill_leftovers()
    return {"swaps": swaps}


def _joints(modules: list[str]) -> list[str]:
    from timor_core import ModulesDB
    from timor_core.export.formats.srdf import planning_chain
    from timor_core.model.assembly import ModuleAssembly

    assembly = ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), modules)
    return list(planning_chain(assembly, "").commanded)


PRODUCT_PARTS = ("answer_s", "describe_s", "release_s", "stop_s", "up_s", "load_s", "configure_s", "activate_s",
                 "control_s", "confirmed_s")  # fmt: skip
RESTART_PARTS = ("answer_s", "stop_s", "up_s", "loaded_s", "configured_s", "active_s", "confirmed_s")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summary(result: dict, budget: float, route: str = "controller_manager restart swap",
            keys: tuple[str, ...] = RESTART_PARTS, ceiling: float | None = None) -> str:  # fmt: skip
    """One line per direction and in all: median and p90 of each part; whether the median is within budget. With
    the floor measured beside it (``floor_s``), ``budget`` is the ratio of the medians, product over floor, and
    ``ceiling`` (seconds) is checked as well."""
    lines = []
    swaps = result["swaps"]
    directions = sorted({s["to"] for s in swaps})
    for label, group in [*((f"to {d}", [s for s in swaps if s["to"] == d]) for d in directions), ("all", swaps)]:
        parts = []
        for key in keys:
            values = [s[key] for s in group]
            parts.append(f"{key[:-2]} {statistics.median(values):.3f}/{_percentile(values, 0.9):.3f}")
        lines.append(f"  {label} ({len(group)} swaps, median/p90 s): " + ", ".join(parts))
    median = statistics.median(s["confirmed_s"] for s in swaps)
    p90 = _percentile([s["confirmed_s"] for s in swaps], 0.9)
    loads = [s["load"] for s in swaps]
    if "floor_s" in swaps[0]:
        lines.append(_floor_line(swaps))
        ratio = median / statistics.median(s["floor_s"] for s in swaps)
        stated = f"{ratio:.2f}x the floor, budget {budget:.2f}x" + (f" and {ceiling:.2f} s" if ceiling else "")
        met = ratio <= budget and (ceiling is None or median <= ceiling)
    else:
        stated, met = f"budget {budget:.2f} s", median <= budget
    verdict = "met" if met else "NOT met"
    lines.append(
        f"{route}: request -> confirmed median {median:.3f} s (p90 {p90:.3f}), {stated}: {verdict} "
        f"(load {min(loads):.1f}-{max(loads):.1f})"
    )
    result["median_s"], result["budget"], result["budget_met"] = median, budget, met
    return "\n".join(lines)


FLOOR_PARTS = ("floor_release_s", "floor_stop_s", "floor_up_s", "floor_load_controller_s",
               "floor_configure_controller_s", "floor_activate_s", "floor_s")  # fmt: skip


def _floor_line(swaps: list[dict]) -> str:
    """The floor's parts beside the product (control_floor.py), and how much longer the product takes, same run."""
    parts = [f"{key[6:-2] or 'total'} {statistics.median(s[key] for s in swaps):.3f}" for key in FLOOR_PARTS]
    ratios = [s["confirmed_s"] / s["floor_s"] for s in swaps]
    product, floor = (statistics.median(s[k] for s in swaps) for k in ("confirmed_s", "floor_s"))
    return (
        f"  floor, same run (median s): {', '.join(parts)}; product/floor: {product / floor:.2f} (medians), "
        f"{statistics.median(ratios):.2f} (median of the swaps' ratios), product - floor {product - floor:.3f} s"
    )
