"""timor's plan() beside the real move_group's OMPL RRTConnect, on the same start/goal pairs (issue 34, item 5).

    .venv/bin/python benchmarks/moveit_vs_timor.py [--pairs 20] [--budget 5] [--own] [--json out.json]

Needs `make ros` with the MoveIt kit (../shared/ros-moveit: the real move_group). Robot: robco_like
`base J L_250 J L_150 J L_150 gripper` (3 joints). Two scenes, each with its own launch of
`ros2 launch timor_ros moveit.launch.py` (isolated ROS_DOMAIN_ID, ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, no RViz,
no search):
  * free: the launch without task:=; move_group's planning scene is checked to hold no world object; timor plans
    with its default validity (joint limits, self-collision);
  * task: the launch with task:=<the embedded pick_and_place task> (the task_scene node puts its crate and pillar
    into move_group's scene, its collisionFree margin as link padding); the benchmark waits until
    /get_planning_scene lists both; timor plans with is_valid = joint limits and
    robot.collision_checker(task, margin) (self-collision and the obstacles with the task's margin).
Each launch is used once move_group logs "You can start planning now", its controllers are active (nothing starts
while the planners run) and its scene holds what it should; it is stopped with one SIGINT at the end (SIGKILL to its
process group if it has not ended within 30 s; the report says which).
Pairs (numpy default_rng(--seed), per scene): uniform within the joint limits, both ends free by timor's checker
(self-collision only for free space; the task with its margin for the task scene); in the task scene the first half
of the pairs have a straight joint-space path that runs through an obstacle (at margin 0, checked every 0.01 rad).

Per scene, move_group plans every pair, then timor's plan() every pair (never two planners at the same time; the
launch stays up, idle, while timor plans):
  * timor: timor_core.kinematics.planning.plan(robot, start, goal, is_valid=..., rng=seed + k,
    config=PlannerConfig(time_limit=budget)), the default planner (OMPL's RRTConnect through its Python bindings,
    timor's coal checker, timor's shortcutting and time parametrization); `--own` adds planner="timor" (timor's own
    RRT-Connect). Timed: the whole call, in wall time. OMPL takes one seed per process (ompl_planning.py), the first
    plan()'s; the later calls repeat from run to run only because the script makes the same calls in the same order.
  * move_group: GetMotionPlan on /plan_kinematic_path (group manipulator, pipeline ompl, planner_id
    RRTConnectkConfigDefault, the pair's start as an explicit start_state, joint constraints ±1e-3 rad for the goal,
    a 4 m workspace cube, allowed_planning_time = budget, one attempt); plan only, nothing executed. Timed: the
    response's planning_time and the wall time of the service call.
Per planner and scene: success rate; planning time median and p90 over all pairs (failures included); joint-space
path length (sum of the Euclidean norms of the steps between the returned waypoints) median over the solved pairs;
and every returned path densified every 0.01 rad (max-norm) and checked with timor's checker: "colliding paths" with
the margin the planners planned with (robot.has_collision(q, task, margin); self-collision only in free space) and,
for the task scene, with margin 0 (a real contact). A path that does not start at the start or end at the goal
(1e-3 rad) is counted as well. move_group answers FAILURE for every kind of failure; the cause of each failed pair is
taken from move_group's log (its ValidateSolution adapter rejected the computed path, no valid goal state sampled, the
start in collision, OMPL timed out), and pairs with an end within margin + 1 mm of an obstacle are flagged (timor's
distance margin and MoveIt's link padding may disagree there). `--scenes free` or `--scenes task` runs one scene.
`--segment-fraction F` sets move_group's longest_valid_segment_fraction (through /set_planner_params) before planning:
MoveIt checks motions every F x the extent of the joint space (about 10.4 rad here; its default 0.005 is ~0.05 rad,
timor's plan() checks every 0.02 rad, i.e. F = 0.002).
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from importlib import resources
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # moveit_bench.py, shared with moveit_swap.py

from moveit_bench import ROOT, Client, Launch, finish_report, percentile, plan_request, ros2_ready  # noqa: E402

MODULES = ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
TASK = Path(str(resources.files("timor_core") / "data" / "tasks" / "pick_and_place.json"))
READY = "You can start planning now"
LOG_COUNTS = {  # lines of move_group's log counted while it plans the pairs (the first three: failure causes)
    "invalid path (ValidateSolution)": "PlanningResponseAdapter 'ValidateSolution' failed",
    "no valid goal state sampled": "Unable to sample any valid states for goal tree",
    "start in collision": "appears to be in collision",
    "OMPL TIMED_OUT": "failed with error code TIMED_OUT",
    "plan failed": "Generating a plan with planning pipeline failed",
}
SUPERVISED, SUPERVISOR_UP = "[moveit_supervisor", "move_group planning for"  # move_group under timor's supervisor
REQUEST = "Received new planning service request"  # move_group's first line for each request
NEAR = 0.001  # m: a pair whose start or goal is within margin + NEAR of an obstacle is flagged "near_margin"
STEP = 0.01  # rad, max-norm distance between the checked configurations of a path
os.environ.setdefault("ROS_DOMAIN_ID", str(random.randint(101, 200)))
os.environ["ROS_AUTOMATIC_DISCOVERY_RANGE"] = "LOCALHOST"


def world_objects(client: Client) -> set[str] | None:
    """The IDs of the collision objects in move_group's planning scene (None: no answer)."""
    from moveit_msgs.msg import PlanningSceneComponents
    from moveit_msgs.srv import GetPlanningScene

    request = GetPlanningScene.Request()
    request.components.components = PlanningSceneComponents.WORLD_OBJECT_NAMES
    answer, _ = client.call(GetPlanningScene, "/get_planning_scene", request, 10.0)
    return None if answer is None else {o.id for o in answer.scene.world.collision_objects}


def controllers_active(client: Client) -> bool:
    """joint_state_broadcaster and arm_controller are active (the launch is all up: nothing starts during planning)."""
    from controller_manager_msgs.srv import ListControllers

    answer, _ = client.call(ListControllers, "/controller_manager/list_controllers", ListControllers.Request(), 5.0)
    states = {c.name: c.state for c in answer.controller} if answer is not None else {}
    return all(states.get(n) == "active" for n in ("joint_state_broadcaster", "arm_controller"))


def set_segment_fraction(client: Client, fraction: float) -> bool:
    """Set move_group's longest_valid_segment_fraction (its motion-check resolution as a share of the state space's
    extent) for manipulator[RRTConnectkConfigDefault] through /set_planner_params; True if it now reports it."""
    from moveit_msgs.srv import GetPlannerParams, SetPlannerParams

    names = {"pipeline_id": "ompl", "planner_config": "RRTConnectkConfigDefault", "group": "manipulator"}
    request = SetPlannerParams.Request(**names, replace=False)
    request.params.keys, request.params.values = ["longest_valid_segment_fraction"], [f"{fraction:g}"]
    request.params.descriptions = [""]
    client.call(SetPlannerParams, "/set_planner_params", request, 10.0)
    answer, _ = client.call(GetPlannerParams, "/get_planner_params", GetPlannerParams.Request(**names), 10.0)
    got = dict(zip(answer.params.keys, answer.params.values)) if answer is not None else {}
    return "longest_valid_segment_fraction" in got and float(got["longest_valid_segment_fraction"]) == fraction


def densify(points: np.ndarray, step: float = STEP) -> np.ndarray:
    """The waypoints with the straight segments between them sampled at most ``step`` apart (max-norm)."""
    out = [points[0]]
    for a, b in zip(points[:-1], points[1:]):
        n = max(1, int(np.ceil(np.max(np.abs(b - a)) / step)))
        out += [a + (b - a) * k / n for k in range(1, n + 1)]
    return np.array(out)


def path_length(points: np.ndarray) -> float:
    """Sum of the Euclidean norms of the joint-space steps between consecutive waypoints."""
    return float(np.sum(np.linalg.norm(np.diff(points, axis=0), axis=1))) if len(points) > 1 else 0.0


class Scene:
    """The robot, the scene's obstacles (None: free space) and timor's validity and path checks for it."""

    def __init__(self, name: str, task) -> None:
        from timor_core import ModuleAssembly, ModulesDB
        from timor_core.export.formats.planning_scene import safety_margin

        self.name, self.task = name, task
        self.robot = ModuleAssembly.from_serial_modules(ModulesDB.load("robco_like"), MODULES).robot
        self.margin = safety_margin(task) if task is not None else 0.0
        self.checker = self.robot.collision_checker(task, self.margin)  # self-collision + obstacles with the margin
        self.contact = self.robot.collision_checker(task, 0.0)
        self.clear = self.robot.collision_checker(task, self.margin + NEAR)  # an end closer than this is "near"
        self.obstacles_only = self.robot.collision_checker(task, 0.0, self_collision=False) if task else None
        self.lo, self.hi = self.robot.joint_limits

    def valid(self, q: np.ndarray) -> bool:
        return bool(np.all(q >= self.lo) and np.all(q <= self.hi)) and not self.checker.in_collision(q)

    def blocked(self, a: np.ndarray, b: np.ndarray) -> bool:
        """The straight path from a to b runs through an obstacle (margin 0)."""
        return self.obstacles_only is not None and any(
            self.obstacles_only.in_collision(q) for q in densify(np.array([a, b]))
        )

    def pairs(self, n: int, seed: int) -> list[dict]:
        """``n`` valid start/goal pairs; in the task scene the first ceil(n/2) have a blocked straight path."""
        rng = np.random.default_rng(seed)
        out: list[dict] = []
        want_blocked = (n + 1) // 2 if self.task is not None else 0
        while len(out) < n:
            a, b = self.robot.random_configuration(rng), self.robot.random_configuration(rng)
            if not (self.valid(a) and self.valid(b)):
                continue
            blocked = self.blocked(a, b)
            if len(out) < want_blocked and not blocked:
                continue
            near = self.task is not None and (self.clear.in_collision(a) or self.clear.in_collision(b))
            out.append({"start": a, "goal": b, "straight_blocked": blocked, "near_margin": near})
        return out

    def check_path(self, points: np.ndarray, start: np.ndarray, goal: np.ndarray) -> dict:
        """Where timor's checker finds the densified path in collision (with the margin, and at contact)."""
        dense = densify(points)
        margin_hits = sum(1 for q in dense if self.checker.in_collision(q))
        contact_hits = sum(1 for q in dense if self.contact.in_collision(q)) if margin_hits else 0
        ends = bool(np.max(np.abs(points[0] - start)) < 1e-3 and np.max(np.abs(points[-1] - goal)) < 1e-3)
        return {"checked": len(dense), "margin_hits": margin_hits, "contact_hits": contact_hits, "ends_ok": ends}


def run_timor(scene: Scene, pairs: list[dict], budget: float, planner: str, seed: int) -> list[dict]:
    """timor's plan() for every pair: the wall time of the call, the trajectory's configurations."""
    from timor_core.kinematics.planning import PlannerConfig, plan

    config = PlannerConfig(planner=planner, time_limit=budget)
    is_valid = scene.valid if scene.task is not None else None  # None: plan()'s default (limits, self-collision)
    out = []
    for k, p in enumerate(pairs):
        t0 = time.perf_counter()
        traj = plan(scene.robot, p["start"], p["goal"], is_valid=is_valid, rng=seed + k, config=config)
        wall = time.perf_counter() - t0
        row: dict = {"ok": traj is not None, "wall_s": wall}
        if traj is not None:
            q = np.asarray(traj.q, dtype=float)
            row.update(length=path_length(q), points=len(q), **scene.check_path(q, p["start"], p["goal"]))
        out.append(row)
    return out


def run_move_group(client: Client, scene: Scene, pairs: list[dict], budget: float) -> list[dict]:
    """move_group's OMPL RRTConnect through /plan_kinematic_path for every pair (plan only)."""
    from moveit_msgs.msg import MoveItErrorCodes
    from moveit_msgs.srv import GetMotionPlan

    joints = list(scene.robot.joints)
    out = []
    for p in pairs:
        request = plan_request(joints, p["goal"], budget, start=p["start"])
        answer, wall = client.call(GetMotionPlan, "/plan_kinematic_path", request, budget + 30.0)
        row: dict = {"ok": False, "wall_s": wall, "error_code": None}
        if answer is not None:
            res = answer.motion_plan_response
            row.update(error_code=int(res.error_code.val), planning_time_s=float(res.planning_time))
            traj = res.trajectory.joint_trajectory
            if res.error_code.val == MoveItErrorCodes.SUCCESS and traj.points:
                order = [list(traj.joint_names).index(j) for j in joints]
                q = np.array([[pt.positions[i] for i in order] for pt in traj.points])
                row.update(ok=True, length=path_length(q), points=len(q), **scene.check_path(q, p["start"], p["goal"]))
        out.append(row)
    return out


def attribute_causes(rows: list[dict], log: str) -> None:
    """Each failed move_group row gets the causes its request's part of move_group's log names (the log split at
    each request's first line; left out if the number of parts does not match the number of requests)."""
    parts = log.split(REQUEST)[1:]
    if len(parts) != len(rows):
        return
    names = list(LOG_COUNTS)[:3] + ["OMPL TIMED_OUT"]
    for row, part in zip(rows, parts):
        if not row["ok"]:
            row["causes"] = [n for n in names if LOG_COUNTS[n] in part]


def error_name(code: int | None) -> str:
    """MoveItErrorCodes' name of a code ("no answer" for None)."""
    from moveit_msgs.msg import MoveItErrorCodes

    constants = {k: getattr(MoveItErrorCodes, k) for k in vars(MoveItErrorCodes) if k.isupper()}
    names = {v: k for k, v in constants.items() if isinstance(v, int)}
    return "no answer" if code is None else names.get(code, str(code))


def summarize(rows: list[dict]) -> dict:
    """Success rate, times (all pairs), path length (solved pairs) and collision counts of one planner in one scene."""
    solved = [r for r in rows if r["ok"]]
    walls = [r["wall_s"] for r in rows]
    out = {
        "pairs": len(rows),
        "solved": len(solved),
        "success_pct": 100.0 * len(solved) / len(rows) if rows else math.nan,
        "wall_s": {"median": statistics.median(walls), "p90": percentile(walls, 0.9)},
        "length_rad": {"median": statistics.median(r["length"] for r in solved) if solved else math.nan,
                       "p90": percentile([r["length"] for r in solved], 0.9)},
        "colliding_paths_margin": sum(1 for r in solved if r["margin_hits"]),
        "colliding_paths_contact": sum(1 for r in solved if r["contact_hits"]),
        "colliding_configs_margin": sum(r["margin_hits"] for r in solved),
        "checked_configs": sum(r["checked"] for r in solved),
        "bad_ends": sum(1 for r in solved if not r["ends_ok"]),
    }  # fmt: skip
    planning = [r["planning_time_s"] for r in rows if "planning_time_s" in r]
    if planning:
        out["planning_time_s"] = {"median": statistics.median(planning), "p90": percentile(planning, 0.9)}
        out["failures"] = dict(Counter(error_name(r["error_code"]) for r in rows if not r["ok"]))
    out["failed_pairs"] = [k for k, r in enumerate(rows) if not r["ok"]]
    if planning:
        out["failure_causes"] = dict(Counter(" + ".join(r.get("causes") or ["?"]) for r in rows if not r["ok"]))
    return out


def scene_run(name: str, args: argparse.Namespace, folder: Path, client: Client) -> dict:
    """One launch (free space or the task), its pairs, every planner on them; the launch stopped at the end."""
    from timor_core.task.task import Task

    task = Task.from_json_file(str(TASK)) if name == "task" else None
    scene = Scene(name, task)
    pairs = scene.pairs(args.pairs, args.seed)
    t_launch = time.monotonic()
    (folder / name).mkdir()
    launch = Launch(folder / name, MODULES, TASK if task is not None else None)
    report: dict = {
        "pairs": [{k: (v.tolist() if isinstance(v, np.ndarray) else v) for k, v in p.items()} for p in pairs]
    }
    try:
        if not launch.wait_for(READY, 180):
            raise RuntimeError(f"move_group did not get ready within 180 s:\n{launch.output()[-3000:]}")
        if SUPERVISED in launch.output() and not launch.wait_for(SUPERVISOR_UP, 60):  # its own probe plan: not ours
            raise RuntimeError(f"moveit_supervisor did not report move_group up:\n{launch.output()[-3000:]}")
        wanted = {o.id for o in task.obstacles} if task is not None else set()
        end = time.monotonic() + 120
        while not controllers_active(client):
            if time.monotonic() > end:
                raise RuntimeError(f"controllers not active within 120 s:\n{launch.output()[-3000:]}")
            time.sleep(0.5)
        end = time.monotonic() + 90
        while (names := world_objects(client)) is None or not wanted <= names:
            if time.monotonic() > end:
                raise RuntimeError(f"planning scene holds {names}, not {wanted}:\n{launch.output()[-3000:]}")
            time.sleep(0.5)
        if task is None and names:
            raise RuntimeError(f"the free-space planning scene is not empty: {names}")
        if args.segment_fraction is not None and not set_segment_fraction(client, args.segment_fraction):
            raise RuntimeError(f"move_group did not take longest_valid_segment_fraction {args.segment_fraction}")
        report["scene_objects"] = sorted(names)
        report["launch_ready_s"] = time.monotonic() - t_launch
        planners = ["RRTConnect", "timor"] if args.own else ["RRTConnect"]
        before = len(launch.output())
        results = {"move_group": run_move_group(client, scene, pairs, args.budget)}
        time.sleep(1.0)  # the last request's lines may reach the log a moment after its answer
        log = launch.output()[before:]  # move_group's own account of its failures
        report["move_group_log"] = {k: log.count(v) for k, v in LOG_COUNTS.items()}
        attribute_causes(results["move_group"], log)
        for planner in planners:
            results[f"timor plan() {planner}"] = run_timor(scene, pairs, args.budget, planner, args.seed)
    finally:
        report["stopped_by"] = launch.stop()
    report["margin"] = scene.margin
    report["summary"] = {k: summarize(v) for k, v in results.items()}
    report["rows"] = results
    return report


def table(report: dict) -> str:
    lines = [f"{'scene':<6}{'planner':<26}{'solved':>9}{'wall med/p90 s':>17}{'move_group planning_time med/p90 s':>36}"
             f"{'length med rad':>16}{'colliding (margin/contact)':>28}{'bad ends':>10}"]  # fmt: skip
    for scene, data in report["scenes"].items():
        for planner, s in data["summary"].items():
            pt = s.get("planning_time_s")
            pt_text = f"{pt['median']:.3f} / {pt['p90']:.3f}" if pt else "-"
            contact = s["colliding_paths_contact"] if scene == "task" else "-"
            lines.append(f"{scene:<6}{planner:<26}{s['solved']:>4}/{s['pairs']:<4}"
                         f"{s['wall_s']['median']:>8.3f} /{s['wall_s']['p90']:>6.3f}{pt_text:>36}"
                         f"{s['length_rad']['median']:>16.2f}{s['colliding_paths_margin']:>20} / {contact!s:<5}"
                         f"{s['bad_ends']:>10}")  # fmt: skip
    for scene, data in report["scenes"].items():
        s = data["summary"]["move_group"]
        blocked = sum(p["straight_blocked"] for p in data["pairs"])
        near = [k for k, p in enumerate(data["pairs"]) if p.get("near_margin")]
        failed = {planner: v["failed_pairs"] for planner, v in data["summary"].items()}
        lines.append(f"{scene}: failed pairs {failed}; pairs with an end within margin + {NEAR * 1e3:g} mm: {near}")
        lines.append(f"{scene}: move_group failures {s.get('failures', {})}, causes by its log "
                     f"{s.get('failure_causes', {})}; its log while planning: "
                     f"{data['move_group_log']}; pairs with a blocked straight path: "
                     f"{blocked}/{len(data['pairs'])}; launch {data['stopped_by']}")  # fmt: skip
    return "\n".join(lines)


def git_state() -> str:
    """The commit measured and the files under src/ that differ from it (others may edit the tree meanwhile)."""

    def git(*a: str) -> str:
        got = subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, timeout=30)
        return got.stdout.rstrip()

    changed = git("status", "--porcelain", "--", "src").splitlines()
    return git("rev-parse", "--short", "HEAD") + (
        f" + uncommitted: {', '.join(c[3:] for c in changed)}" if changed else ""
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=20, help="start/goal pairs per scene (default 20)")
    parser.add_argument("--budget", type=float, default=5.0, help="planning time limit per pair, both sides (s)")
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--own", action="store_true", help="also timor's own RRT-Connect (planner='timor')")
    parser.add_argument(
        "--segment-fraction",
        type=float,
        default=None,
        help="set move_group's longest_valid_segment_fraction first (default: the configuration's, MoveIt's 0.005)",
    )
    parser.add_argument("--scenes", default="free,task", help="comma-separated: free, task (default both)")
    parser.add_argument("--json", type=Path, default=None, help="write the full report (every pair) here")
    args = parser.parse_args(argv)
    if not ros2_ready():
        return 2
    folder = Path(tempfile.mkdtemp(prefix="timor_moveit_bench_"))
    command = " ".join(["benchmarks/moveit_vs_timor.py", *(argv or sys.argv[1:])])
    report: dict = {
        "command": command,
        "budget_s": args.budget,
        "segment_fraction": args.segment_fraction,
        "seed": args.seed,
        "modules": MODULES,
        "ros_domain_id": os.environ["ROS_DOMAIN_ID"],
        "git": git_state(),
        "load_before": os.getloadavg(),
        "scenes": {},
    }
    client = Client("timor_moveit_bench")
    try:
        for name in args.scenes.split(","):
            print(f"scene {name}: launching move_group ({folder / name})", file=sys.stderr)
            report["scenes"][name] = scene_run(name, args, folder, client)
    finally:
        client.close()
    report["load_after"] = os.getloadavg()
    print(table(report))
    print(f"git {report['git']}")
    finish_report(report, f"logs in {folder}", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
