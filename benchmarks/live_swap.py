"""Live swap latency: a set_assembly request -> the real robot_state_publisher publishes TF of the new robot.

    .venv/bin/python benchmarks/live_swap.py [--rounds 20] [--json]
    .venv/bin/python benchmarks/live_swap.py --rounds 0 --product 20 --floor   # ros2_control, beside its floor

Needs `make ros` with the ros-cpp kit (the real robot_state_publisher; ../shared/ros-cpp). Starts
`ros2 launch timor_ros assembly.launch.py` (modules_db, assembly, the real robot_state_publisher, the real
joint_state_publisher; no RViz, no search) in an isolated ROS domain, then swaps between two robots whose link
names differ, `--rounds` times. Per swap it measures, from the moment the request is sent:
  * answer: the assembly node's response (validated, URDF + SRDF published, robot_state_publisher's parameter set);
  * tf: every link of the new robot reachable from its root on /tf + /tf_static, with the moving joints' transforms
    received after the request (joint_state_publisher follows /robot_description and publishes at 10 Hz).
The figures are medians and the 90th percentile over the rounds; there is no reference counterpart (the reference
toolbox has no ROS nodes).

The real controller_manager (4.24) reads the robot description once ("ResourceManager has already loaded a urdf.
Ignoring attempt to reload"), so ros2_control takes a new robot by a relaunch. `--control N` times that N times:
`ros2 launch timor_ros moveit.launch.py move_group:=false` for the other robot, from the start of the command to
joint_state_broadcaster and arm_controller active for the new robot's joints.

`--product N` times the product's path N times each way: `moveit.launch.py move_group:=false` (the assembly node
runs ros2_control_node and keeps the next one on standby, timor_core.ros.controller_swap) and `set_assembly`
requests `--gap` seconds apart (default 3), until this process's list_controllers shows both controllers active
and arm_controller claiming the new robot's joints; the node's parts come from its log. `--floor` adds, beside each
product swap (`--gap` seconds after it), one swap of the same two robots with nothing of timor on its path
(control_floor.py: plain service calls to two ros2_control_node processes in /floor); the budget is then the ratio
of the medians, product over floor (`--product-budget`, default 1.25), and the median must stay under 0.45 s as well
(without `--floor` the budget is those seconds; benchmarks/README.md says why).

`--restart N` times the benchmark's own restart route N times each way: the assembly node and robot_state_publisher
keep running (`assembly.launch.py ros2_control:=true`), and a swap is the `set_assembly` request (the new URDF with its
`<ros2_control>` block on /robot_description), SIGINT to the running ros2_control_node and its exit, a new
ros2_control_node (the executable itself, no `ros2 run`) with the new robot's ros2_controllers.yaml, and the
controllers loaded, configured and activated as a group by this process's own node (service calls, no spawner
processes), until list_controllers reports both active. Each part is timed, and the budget (benchmarks/README.md)
is checked: `--budget S` (default 1.5 s) against the median.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src" / "timor_ros" / "test"))  # the tests' ROS helpers (TF listener, launcher)
sys.path.insert(0, str(Path(__file__).resolve().parent))
os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(101, 200)))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"

FLOOR_RATIO = 1.25  # the product's median over the floor's, same run (benchmarks/README.md: why)
PRODUCT_SECONDS = 0.45  # without the floor: the product's median on this machine
ROBOTS = (
    ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"],
    ["base", "J", "L_100", "J", "L_150", "J", "L_250", "gripper"],
)


def _links(urdf: str) -> tuple[str, list[str]]:
    import xml.etree.ElementTree as ET

    tree = ET.fromstring(urdf)
    children = [j.find("child").get("link") for j in tree.iter("joint")]
    root = next(link.get("name") for link in tree.iter("link") if link.get("name") not in children)
    return root, children


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=20, help="swaps to time (default 20)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout")
    parser.add_argument("--control", type=int, default=0, help="also time N ros2_control relaunches (default 0)")
    parser.add_argument("--restart", type=int, default=0, help="time N controller_manager restarts (default 0)")
    parser.add_argument(
        "--product",
        type=int,
        default=0,
        help="time N swaps each way through the product's path (moveit.launch.py, set_assembly)",
    )
    parser.add_argument("--gap", type=float, default=3.0, help="seconds between the product path's swaps")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="with --product: the same swap without timor beside each product swap (control_floor.py)",
    )
    parser.add_argument("--budget", type=float, default=1.5, help="budget of the restart route's median (s)")
    parser.add_argument(
        "--product-budget",
        type=float,
        default=None,
        help="budget of the product path's median: with --floor the ratio to the floor's median"
        " (default 1.25), else seconds (default 0.45)",
    )
    args = parser.parse_args()

    from ros2_cli import Launch, real_package
    from ros_client import RosClient
    from tf_tools import TfListener

    from timor_interfaces.srv import GetAssembly, SetAssembly

    if not real_package("robot_state_publisher"):
        print("the real robot_state_publisher is not installed (make ros with ../shared/ros-cpp)", file=sys.stderr)
        return 2
    if args.rounds <= 0:
        return _restart_only(args)
    log = Path("/tmp") / f"timor_live_swap_{os.getpid()}.log"
    launch = Launch(["timor_ros", "assembly.launch.py", "db:=robco_like", f"modules:={' '.join(ROBOTS[0])}",
                     "rviz:=false", "search:=false"], log)  # fmt: skip
    client = RosClient()
    tf = TfListener(client.node)
    answers, tfs = [], []
    try:
        end = time.monotonic() + 90
        while time.monotonic() < end:
            try:
                if client.call(GetAssembly, "/assembly/get_assembly", GetAssembly.Request(), timeout=10).available:
                    break
            except AssertionError:
                pass
            time.sleep(0.5)
        for k in range(args.rounds + 1):  # the first swap warms caches and is not counted
            modules = ROBOTS[(k + 1) % 2]
            t0 = time.monotonic()
            response = client.call(SetAssembly, "/assembly/set_assembly", SetAssembly.Request(modules=modules), 30)
            t_answer = time.monotonic() - t0
            if not response.success:
                print(f"swap refused: {response.message}", file=sys.stderr)
                return 1
            root, links = _links(response.urdf)
            while len(tf.wait_for(root, links, 0.02, newer_than=t0)) < len(links):
                if time.monotonic() - t0 > 30:
                    print(f"no TF of the new robot within 30 s\n{launch.output()[-2000:]}", file=sys.stderr)
                    return 1
            t_tf = time.monotonic() - t0
            if k:
                answers.append(t_answer)
                tfs.append(t_tf)
    finally:
        tf.close()
        client.close()
        launch.stop()
        launch.kill_leftovers()
    if args.restart:
        from control_swap import restart_swaps, summary

        restarts = restart_swaps(ROBOTS, args.restart)
        if restarts is None:
            return 1
        print(summary(restarts, args.budget), file=sys.stderr)
    control = _control_relaunches(args.control) if args.control else []
    report = {
        "rounds": len(tfs),
        "control_relaunch_s": control,
        "answer_ms": {"median": 1e3 * statistics.median(answers), "p90": 1e3 * _percentile(answers, 0.9)},
        "tf_ms": {"median": 1e3 * statistics.median(tfs), "p90": 1e3 * _percentile(tfs, 0.9)},
    }
    print(
        f"live swap, {report['rounds']} rounds: answer median {report['answer_ms']['median']:.0f} ms "
        f"(p90 {report['answer_ms']['p90']:.0f}); request -> TF of the new robot median "
        f"{report['tf_ms']['median']:.0f} ms (p90 {report['tf_ms']['p90']:.0f})",
        file=sys.stderr,
    )
    if control:
        median = statistics.median(control)
        print(f"ros2_control relaunch for the other robot, {len(control)} runs: median {median:.2f} s "
              f"(min {min(control):.2f}, max {max(control):.2f})", file=sys.stderr)  # fmt: skip
    if args.restart:
        report["restart"] = restarts
    if args.json:
        print(json.dumps(report, indent=1))
    return 0


def _restart_only(args: argparse.Namespace) -> int:
    """``--rounds 0``: only the ros2_control routes (``--product``, ``--restart``, ``--control``)."""
    from control_swap import PRODUCT_PARTS, product_swaps, restart_swaps, summary

    report: dict = {}
    if args.product:
        product = product_swaps(ROBOTS, args.product, args.gap, args.floor)
        if product is None:
            return 1
        budget = args.product_budget or (FLOOR_RATIO if args.floor else PRODUCT_SECONDS)
        ceiling = PRODUCT_SECONDS if args.floor else None
        print(summary(product, budget, "product path (set_assembly, standby manager)", PRODUCT_PARTS, ceiling),
              file=sys.stderr)  # fmt: skip
        report["product"] = product
    if args.restart:
        restarts = restart_swaps(ROBOTS, args.restart)
        if restarts is None:
            return 1
        print(summary(restarts, args.budget), file=sys.stderr)
        report["restart"] = restarts
    if args.control:
        control = report["control_relaunch_s"] = _control_relaunches(args.control)
        print(f"ros2_control relaunch for the other robot, {len(control)} runs: median {statistics.median(control):.2f}"
              f" s (min {min(control):.2f}, max {max(control):.2f})", file=sys.stderr)  # fmt: skip
    if args.json:
        print(json.dumps(report, indent=1))
    return 0


def _control_relaunches(runs: int) -> list[float]:
    """Seconds from `ros2 launch moveit.launch.py` to both controllers active, per run (alternating robots)."""
    import tempfile

    from control_tools import controller_states
    from ros2_cli import Launch
    from ros_client import RosClient

    client = RosClient()
    out = []
    try:
        for k in range(runs):
            folder = Path(tempfile.mkdtemp(prefix="timor_control_swap_"))
            t0 = time.monotonic()
            launch = Launch(["timor_ros", "moveit.launch.py", "db:=robco_like", f"modules:={' '.join(ROBOTS[k % 2])}",
                             "move_group:=false", "rviz:=false", "search:=false", f"config_dir:={folder}"],
                            folder / "launch.log")  # fmt: skip
            try:
                wanted = {"joint_state_broadcaster": "active", "arm_controller": "active"}
                while not wanted.items() <= controller_states(client, "/controller_manager", 2.0).items():
                    if time.monotonic() - t0 > 120:
                        raise RuntimeError(f"controllers not active within 120 s\n{launch.output()[-2000:]}")
                    time.sleep(0.05)
                out.append(time.monotonic() - t0)
            finally:
                launch.stop()
                launch.kill_leftovers()
    finally:
        client.close()
    return out


if __name__ == "__main__":
    sys.exit(main())
