"""Live reconfiguration reaches MoveIt: a set_assembly request -> the first successful plan of the new robot (issue 34,
item 4).

    .venv/bin/python benchmarks/moveit_swap.py [--swaps 6] [--json out.json]

Needs `make ros` with the MoveIt kit (../shared/ros-moveit: the real move_group). One launch of
`ros2 launch timor_ros moveit.launch.py db:=robco_like modules:="<A>" rviz:=false search:=false` (isolated
ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST): the assembly node (supervising ros2_control_node) and the
moveit_supervisor node, which restarts move_group with the new robot's parameters after each accepted set_assembly.
Once its latched /moveit_supervisor/status says it plans for A, the script swaps `--swaps` times, alternating
B, A, B, ... (A = base J L_250 J L_150 J L_150 gripper, 3 joints; B = base J L_200 J L_250 J L_250 J gripper,
4 joints; both free of self-collision at home). Per swap, from the moment the request is sent (this process's clock):
  * answer: the /assembly/set_assembly response (must be success);
  * status: this process receives the supervisor's status `{"ok": true, "message": "planning for <new robot>"}`;
  * plan: the first GetMotionPlan on /plan_kinematic_path (group manipulator, pipeline ompl, RRTConnect, start_state
    is_diff, a joint goal ±1e-3 rad for the new robot's joints at a configuration near home that timor finds free of
    self-collision, a 4 m workspace cube) that answers SUCCESS with a trajectory over the new joint names. Attempts
    start after the answer and repeat 50 ms after each answer; a request to a move_group that is going away can be
    lost, so an attempt without an answer after 0.5 s gets a new one beside it (any answer counts); plan only.
The supervisor's own figures come with its status: request (it saw the new SRDF -> its move_group plans from the
robot's current state and the arm controller is seen), stop (old move_group ended), up (new one ready).
Medians, p90 and max over the swaps. Per swap, the number of move_group's warnings "Failed to fetch current robot
state" in the launch's log (from this script's attempts and the supervisor's probes: a plan then starts from the
default state, which is home, where the robot is after a swap).
The launch is stopped with one SIGINT (SIGKILL to its group after 30 s).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # moveit_bench.py, shared with moveit_vs_timor.py

from moveit_bench import Client, Launch, finish_report, percentile, plan_request, ros2_ready  # noqa: E402

A = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
B = ["base", "J", "L_200", "J", "L_250", "J", "L_250", "J", "gripper"]
STATUS = "/moveit_supervisor/status"
NO_STATE = "Failed to fetch current robot state"  # move_group planned before it heard every joint (it only warns)
RETRY = 0.05  # s between plan attempts
STALE = 0.5  # s after which an attempt without an answer gets company
FORGET = 10.0  # s after which an unanswered attempt is given up
SWAP_TIMEOUT = 120.0  # s a swap may take in all
os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(101, 200)))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"


class SwapClient(Client):
    """The benchmark's node: also the supervisor's status (every message, with its arrival time)."""

    def __init__(self) -> None:
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from std_msgs.msg import String

        super().__init__("timor_moveit_swap_bench")
        self.statuses: list[tuple[float, dict]] = []
        latched = QoSProfile(
            depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL, reliability=ReliabilityPolicy.RELIABLE
        )
        self.node.create_subscription(String, STATUS, self._on_status, latched)

    def _on_status(self, msg) -> None:
        try:
            self.statuses.append((time.perf_counter(), json.loads(msg.data)))
        except json.JSONDecodeError:
            self.statuses.append((time.perf_counter(), {"ok": False, "message": msg.data}))

    def status_since(self, t0: float, modules: list[str]) -> tuple[float, dict] | None:
        """The first status received after ``t0`` saying the supervisor plans for ``modules``."""
        want = f"planning for {' '.join(modules)}"
        return next(((t, s) for t, s in self.statuses if t >= t0 and s.get("ok") and s.get("message") == want), None)


def goal_near_home(modules: list[str]) -> tuple[list[str], np.ndarray]:
    """The robot's joint names and a configuration 0.2-0.3 rad from home that timor finds free of self-collision."""
    from timor_core import ModuleAssembly, ModulesDB

    robot = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), modules).robot
    n = len(robot.joints)
    for q in (np.full(n, 0.2), np.full(n, -0.2), 0.3 * (-1.0) ** np.arange(n)):
        if not robot.has_collision(q):
            return list(robot.joints), q
    raise RuntimeError(f"no free goal near home for {modules}")


def first_plan(client: SwapClient, joints: list[str], goal: np.ndarray, deadline: float) -> tuple[float | None, int]:
    """(time of the first SUCCESS over ``joints``, attempts made); None if none before ``deadline``. An attempt goes
    out 50 ms after the last one's answer, or STALE s after the last one if that one has no answer yet (a request to
    a move_group that is going away is lost; it stays pending, and an answer to any pending attempt counts)."""
    from moveit_msgs.msg import MoveItErrorCodes
    from moveit_msgs.srv import GetMotionPlan

    request, attempts = plan_request(joints, goal, 2.0), 0
    service = client.service(GetMotionPlan, "/plan_kinematic_path")
    pending: list[tuple[float, object]] = []
    last = -math.inf
    while time.monotonic() < deadline:
        now = time.monotonic()
        if service.service_is_ready() and now - last >= (STALE if pending else RETRY):
            pending.append((now, service.call_async(request)))
            attempts, last = attempts + 1, now
        client.executor.spin_once(timeout_sec=0.005)
        for sent, future in list(pending):
            if future.done():
                pending.remove((sent, future))
                res = future.result().motion_plan_response
                names = list(res.trajectory.joint_trajectory.joint_names)
                if res.error_code.val == MoveItErrorCodes.SUCCESS and names == joints:
                    t = time.perf_counter()
                    for _, other in pending:
                        service.remove_pending_request(other)
                    return t, attempts
                last = time.monotonic()
            elif time.monotonic() - sent > FORGET:
                pending.remove((sent, future))
                service.remove_pending_request(future)
    return None, attempts


def swap(client: SwapClient, modules: list[str]) -> dict:
    """One set_assembly to ``modules``: seconds from the request to the answer, the status, the first plan."""
    from timor_interfaces.srv import SetAssembly

    joints, goal = goal_near_home(modules)
    deadline = time.monotonic() + SWAP_TIMEOUT
    t0 = time.perf_counter()
    answer, _ = client.call(SetAssembly, "/assembly/set_assembly", SetAssembly.Request(modules=modules), 60.0)
    t_answer = time.perf_counter()
    if answer is None or not answer.success:
        raise RuntimeError(f"set_assembly {modules}: {answer.message if answer else 'no answer'}")
    t_plan, attempts = first_plan(client, joints, goal, deadline)
    while client.status_since(t0, modules) is None and time.monotonic() < deadline:
        client.spin(0.05)
    got = client.status_since(t0, modules)
    row: dict = {"to": " ".join(modules), "answer_s": t_answer - t0, "plan_attempts": attempts}
    row["plan_s"] = t_plan - t0 if t_plan is not None else math.nan
    row["status_s"] = got[0] - t0 if got is not None else math.nan
    if got is not None:
        row.update({f"supervisor_{k}_s": got[1][k] for k in ("request", "stop", "up") if k in got[1]})
    return row


def stats(values: list[float]) -> dict:
    ok = sorted(v for v in values if not math.isnan(v))
    if not ok:
        return {"n": 0}
    return {"n": len(ok), "median": statistics.median(ok), "p90": percentile(ok, 0.9), "max": ok[-1]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--swaps", type=int, default=6, help="swaps to time, alternating B, A, ... (default 6)")
    parser.add_argument("--json", type=Path, default=None, help="write the report (every swap) here")
    args = parser.parse_args(argv)
    if not ros2_ready():
        return 2
    folder = Path(tempfile.mkdtemp(prefix="timor_moveit_swap_"))
    report: dict = {"swaps": [], "ros_domain_id": os.environ["ROS_DOMAIN_ID"], "load_before": os.getloadavg()}
    client = SwapClient()
    launch = Launch(folder, A)
    try:
        t0, end = time.perf_counter(), time.monotonic() + 240
        while client.status_since(-math.inf, A) is None:
            if time.monotonic() > end or launch.proc.poll() is not None:
                raise RuntimeError(f"no status 'planning for A' within 240 s:\n{launch.output()[-3000:]}")
            client.spin(0.2)
        report["first_robot_s"] = time.perf_counter() - t0
        for k in range(args.swaps):
            client.spin(1.0)  # let the last swap settle
            before = len(launch.output())
            row = swap(client, B if k % 2 == 0 else A)
            row["no_state_warnings"] = launch.output()[before:].count(NO_STATE)
            report["swaps"].append(row)
            print(json.dumps({key: round(v, 3) if isinstance(v, float) else v for key, v in row.items()}))
    finally:
        report["stopped_by"] = launch.stop()
        client.close()
    report["load_after"] = os.getloadavg()
    keys = ["answer_s", "status_s", "plan_s", "supervisor_request_s", "supervisor_stop_s", "supervisor_up_s"]
    report["summary"] = {k: stats([r.get(k, math.nan) for r in report["swaps"]]) for k in keys}
    print(f"{'from the request (s)':<24}{'n':>3}{'median':>9}{'p90':>9}{'max':>9}")
    for k, s in report["summary"].items():
        if s["n"]:
            print(f"{k:<24}{s['n']:>3}{s['median']:>9.3f}{s['p90']:>9.3f}{s['max']:>9.3f}")
    print(f"first robot planned {report['first_robot_s']:.1f} s after the launch; launch {report['stopped_by']}")
    finish_report(report, f"log {folder}", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
