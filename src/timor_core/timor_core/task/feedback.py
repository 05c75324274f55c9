"""Task feedback for the command line: validate a task file, summarise it, and check per goal whether an assembly
can reach it (task-aware inverse kinematics) and why not.

This is the feedback loop of the Timor paper's user study: a user proposes a module sequence and learns per goal
whether it is reached, with which configuration, and otherwise why (unreachable, collision with which obstacle,
torque limit of which joint), together with the assembly's cost.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.errors import InputError, TimorError, one_line
from timor_core.kinematics.frames import FrameTree
from timor_core.task import (
    At,
    BasePlacement,
    CollisionFree,
    Follow,
    GoalOrder,
    JointLimits,
    Obstacle,
    Pause,
    ReturnTo,
    Task,
    TaskHeader,
    ValidJointAngles,
)
from timor_core.task.constraints import constraint_from_json
from timor_core.task.costs import DEFAULT_DESCRIPTOR, CostFunction
from timor_core.task.goals import goal_from_json

if TYPE_CHECKING:
    from timor_core.kinematics.robot import PinRobot
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.task import Constraint, Goal, ToleratedPose

__all__ = [
    "load_task",
    "validate_task_file",
    "check_task_file",
    "assembly_cost",
    "task_info",
    "task_base_placement",
    "goal_feedback",
    "held_goal_feedback",
    "goal_feedback_line",
    "solve_feedback",
    "verify_goal_configurations",
]


def load_task(path: str | Path, skip_missing_assets: bool = False) -> Task:
    """Load a task file with full validation (``skip_missing_assets``: absent mesh files are logged and skipped)."""
    return Task.from_json_file(path, missing_assets="skip" if skip_missing_assets else "error")


def _task_folder(path: Path, data: Any) -> Path:
    """The task folder: the file's folder minus as many levels as ``header.ID`` has folders (CoBRA convention)."""
    folder = path.resolve().parent
    try:
        tid = str(data["header"]["ID"])
    except (KeyError, TypeError):
        return folder
    parts = Path(tid).parts[:-1]
    if parts and len(folder.parts) > len(parts) and folder.parts[-len(parts) :] == parts:
        return folder.parents[len(parts) - 1]
    return folder


def validate_task_file(path: str | Path, skip_missing_assets: bool = False) -> list[TimorError]:
    """Every problem of a task file, not just the first: each names the file, the JSON path and the value."""
    return check_task_file(path, skip_missing_assets)[1]


def check_task_file(path: str | Path, skip_missing_assets: bool = False) -> tuple[Task | None, list[TimorError]]:
    """Load a task with full validation: ``(task, [])``, or ``(None, every problem found)``.

    When the file does not load, header, frames, every obstacle, goal and constraint are parsed on their own, so
    one bad item does not hide the next (problems that span items, such as duplicate IDs, show once the items
    parse).
    """
    path = Path(path)
    missing = "skip" if skip_missing_assets else "error"
    try:
        data = jf.load_json_file(path)
    except InputError as exc:
        return None, [exc]
    base = _task_folder(path, data)
    try:
        return Task.from_json_data(data, source=path, base_dir=base, missing_assets=missing), []
    except TimorError as first:
        first_error = first
    errors: list[TimorError] = []

    def attempt(fn, *args):
        try:
            return fn(*args)
        except InputError as exc:
            errors.append(exc.located(file=path))
        except TimorError as exc:
            errors.append(exc)
        return None

    d = attempt(jf.obj, data, "$")
    if d is None:
        return None, errors
    attempt(lambda: TaskHeader.from_json(jf.req(d, "header", "$")))
    frames = attempt(FrameTree.from_json, d.get("frames", {})) or FrameTree()
    sections = (
        ("obstacles", lambda item, p: Obstacle.from_json(item, p, base, path, missing)),
        ("goals", lambda item, p: goal_from_json(item, p, frames)),
        ("constraints", lambda item, p: constraint_from_json(item, p, frames)),
    )
    for key, parse in sections:
        items = attempt(jf.array, d.get(key, []), f"$.{key}")
        for i, item in enumerate(items or []):
            attempt(parse, item, f"$.{key}[{i}]")
    return None, errors or [first_error]


def assembly_cost(descriptor: CostFunction | str | None) -> CostFunction:
    """Parse a cost that can be evaluated on an assembly alone; InputError naming the terms that cannot."""
    cost = descriptor if isinstance(descriptor, CostFunction) else CostFunction.from_descriptor(descriptor)
    if cost.needs_trajectory:
        bad = sorted({t.name for t in cost.terms if t.needs != "assembly"})
        raise InputError(
            f"cost term(s) {', '.join(bad)} need a solution trajectory; per-goal feedback evaluates the assembly"
            " alone (use mass, numJ or moduleCost)",
            value=cost.descriptor(),
        )
    return cost


# -- info --------------------------------------------------------------------------------------------


def _position(pose: ToleratedPose | None) -> list[float] | None:
    return None if pose is None else [float(v) for v in pose.world[:3, 3]]


def _tolerance(pose: ToleratedPose) -> dict:
    projections, intervals = pose.tolerance.to_json()
    return {"projections": list(projections), "intervals": [[float(a), float(b)] for a, b in intervals]}


def _goal_info(g: Goal) -> dict:
    out: dict[str, Any] = {"id": g.id, "type": g.type_name}
    if isinstance(g, At):
        out["position"] = _position(g.goal_pose)
        out["tolerance"] = _tolerance(g.require_pose())
    elif isinstance(g, Pause):
        out["duration"] = g.duration
    elif isinstance(g, ReturnTo):
        out["return_to"] = g.return_to
        if g.epsilon is not None:
            out["epsilon"] = g.epsilon
    elif isinstance(g, Follow):
        out["poses"] = len(g.trajectory)
        out["position"] = _position(g.trajectory[0]) if g.trajectory else None
        out["end_position"] = _position(g.trajectory[-1]) if g.trajectory else None
    if g.constraints:
        out["constraints"] = [_constraint_info(c) for c in g.constraints]
    return out


def _constraint_info(c: Constraint) -> dict:
    out: dict[str, Any] = {"type": c.to_json().get("type", type(c).__name__)}
    if isinstance(c, JointLimits):
        out["parts"] = sorted(c.parts)
    elif isinstance(c, CollisionFree):
        out["safety_margin"] = c.safety_margin or 0.0
    elif isinstance(c, GoalOrder):
        out["order"] = list(c.order)
    elif isinstance(c, BasePlacement) and c.pose is not None:
        out["position"] = _position(c.pose)
        out["tolerance"] = _tolerance(c.pose)
    elif isinstance(c, ValidJointAngles):
        out["limits"] = np.asarray(c.limits).tolist()
        out["coterminal"] = c.coterminal
    return out


def task_info(task: Task) -> dict:
    """A JSON-serializable summary: ID, name, goals (types, nominal positions), obstacles, constraints."""
    return {
        "id": task.id,
        "name": task.name,
        "file": str(task.source) if task.source else None,
        "time_step": task.header.time_step,
        "gravity": [float(v) for v in task.header.gravity],
        "tags": list(task.header.tags),
        "goals": [_goal_info(g) for g in task.goals],
        "obstacles": [
            {
                "id": o.id,
                "name": o.name,
                "collision": [g.to_json().get("type") for g in o.collision],
                "missing_meshes": [
                    g.to_json()["parameters"].get("file") for g in o.collision if getattr(g, "missing", 0)
                ],
            }
            for o in task.obstacles
        ],
        "constraints": [_constraint_info(c) for c in task.constraints],
    }


def format_task_info(info: dict) -> str:
    """The task summary as readable text."""

    def vec(v) -> str:
        return "-" if v is None else "[" + ", ".join(f"{x:.4g}" for x in v) + "]"

    lines = [f"task {info['id']!r} ({info['name']})" + (f" from {info['file']}" if info["file"] else "")]
    lines.append(f"time step {info['time_step']:g} s, gravity {vec(info['gravity'])}")
    lines.append(f"goals ({len(info['goals'])}):")
    for g in info["goals"]:
        detail = ""
        if "position" in g:
            detail = f" at {vec(g['position'])}"
        if "tolerance" in g:
            tol = ", ".join(
                f"{p} in [{a:.4g}, {b:.4g}]"
                for p, (a, b) in zip(g["tolerance"]["projections"], g["tolerance"]["intervals"])
            )
            detail += f" ({tol})" if tol else ""
        if "duration" in g:
            detail = f" for {g['duration']:g} s"
        if "return_to" in g:
            detail = f" to {g['return_to'] or 'the start'}"
        if "poses" in g:
            detail = f" {g['poses']} poses from {vec(g['position'])} to {vec(g['end_position'])}"
        lines.append(f"  {g['id']}: {g['type']}{detail}")
    lines.append(f"obstacles ({len(info['obstacles'])}):")
    for o in info["obstacles"]:
        missing = f" (missing meshes skipped: {', '.join(o['missing_meshes'])})" if o["missing_meshes"] else ""
        lines.append(f"  {o['id']}{' (' + o['name'] + ')' if o['name'] else ''}: {', '.join(o['collision'])}{missing}")
    lines.append(f"constraints ({len(info['constraints'])}):")
    for c in info["constraints"]:
        extra = {k: v for k, v in c.items() if k not in ("type", "tolerance")}
        text = ", ".join(f"{k} {vec(v) if k == 'position' else v}" for k, v in extra.items())
        lines.append(f"  {c['type']}" + (f": {text}" if text else ""))
    return "\n".join(lines)


# -- per-goal feedback -------------------------------------------------------------------------------


def task_base_placement(task: Task) -> np.ndarray | None:
    """The nominal base pose of the task's basePlacement constraint (world), or None."""
    bp = task.base_placement
    return None if bp is None or bp.pose is None else np.asarray(bp.pose.world, dtype=float)


SOLVE_IK_TRIES = 150
"""Random restarts of ``timor solve``'s task-aware IK: the search's (``FilterConfig.task_ik_tries``), so that a robot
the search verified is reproducible here (issue 38: with the IK default of 50, seed 0 missed a goal by 0.1 mm)."""


def _ik(
    robot: PinRobot, pose: ToleratedPose, task: Task, seed, check_tau: bool, margin: float
) -> tuple[bool, Any, str]:
    """Task-aware IK with the search's effort: random starts first; if none is valid, as the search does, the
    kinematic IK (obstacles ignored) and the task-aware IK started from its answer. Deterministic given ``seed``."""
    rng = np.random.default_rng(seed)

    def task_aware(q_init: Any = None) -> Any:
        return robot.ik(pose, q_init=q_init, task=task, rng=rng, details=True, check_static_torques=check_tau,
                        margin=margin, max_n_tries=SOLVE_IK_TRIES)  # fmt: skip

    result = task_aware()
    if not result.success:
        free = robot.ik(pose, rng=rng, ignore_self_collision=True, details=True)
        if free.success:
            seeded = task_aware(free.q)
            result = seeded if seeded.success else result
    return bool(result.success), [float(v) for v in result.q], result.reason


def goal_feedback(
    task: Task,
    assembly: ModuleAssembly,
    seed: int | None = 0,
    base_placement: np.ndarray | None = None,
) -> list[dict]:
    """Per goal ``{"id", "reached", "q", "reason"}``: can the assembly, placed per the task, reach it?

    at / reach: task-aware IK (free of self-collision and of collisions with the obstacles within the
    collisionFree safety margin; static torques within limits if the task limits ``tau``). follow: its first pose
    (the reason says so). pause: always reachable (stand still). returnTo: reachable when the goal it returns to
    is (the start always is). ``q`` is None when the goal is not reached.
    """
    placement = base_placement if base_placement is not None else task_base_placement(task)
    robot = assembly.to_pin_robot(placement)
    robot.model.gravity.linear = np.asarray(task.header.gravity, dtype=float)
    check_tau = any("tau" in c.parts for c in task.constraints_of(JointLimits))
    margin = max((float(c.safety_margin or 0.0) for c in task.constraints_of(CollisionFree)), default=0.0)
    out: list[dict] = []
    by_id: dict[str, dict] = {}
    for g in task.goals:
        if isinstance(g, At):
            ok, q, reason = _ik(robot, g.require_pose(), task, seed, check_tau, margin)
            entry = {"id": g.id, "reached": ok, "q": q if ok else None, "reason": "" if ok else reason}
        elif isinstance(g, Follow):
            if not g.trajectory:
                entry = {"id": g.id, "reached": False, "q": None, "reason": "the follow goal has no poses"}
            else:
                ok, q, reason = _ik(robot, g.trajectory[0], task, seed, check_tau, margin)
                n = len(g.trajectory)
                note = f"only the first of {n} poses was checked" if ok else f"first of {n} poses: {reason}"
                entry = {"id": g.id, "reached": ok, "q": q if ok else None, "reason": note}
        elif isinstance(g, (Pause, ReturnTo)):
            entry = held_goal_feedback(g, by_id)
        else:
            entry = {"id": g.id, "reached": False, "q": None, "reason": f"goal type {g.type_name!r} is not supported"}
        out.append(entry)
        by_id[g.id] = entry
    return out


def held_goal_feedback(g: Pause | ReturnTo, earlier: dict[str, dict]) -> dict:
    """The ``{"id", "reached", "q", "reason"}`` of a goal no IK decides, from the entries of the goals before it by
    ID (``earlier``): a pause is reached (stand still); a returnTo is reached with the configuration of the goal it
    returns to if that one is (the start always is). :func:`goal_feedback` and a search result's per-goal report
    (``SearchResult.goal_report``) say the same of these goals."""
    if isinstance(g, Pause):
        return {"id": g.id, "reached": True, "q": None, "reason": f"pause {g.duration:g} s: stand still"}
    if g.return_to is None:
        return {"id": g.id, "reached": True, "q": None, "reason": "returns to the start configuration"}
    ref = earlier.get(g.return_to)
    if ref is None:
        reason = f"returns to goal {g.return_to!r}, which does not come before it"
        return {"id": g.id, "reached": False, "q": None, "reason": reason}
    reason = f"returns to goal {g.return_to!r}" + ("" if ref["reached"] else f", which is not reached: {ref['reason']}")
    return {"id": g.id, "reached": ref["reached"], "q": ref["q"], "reason": reason}


def solve_feedback(
    task: Task,
    assembly: ModuleAssembly,
    seed: int | None = 0,
    cost: CostFunction | str | None = DEFAULT_DESCRIPTOR,
    base_placement: np.ndarray | None = None,
) -> dict:
    """``{"goals": goal_feedback(...), "cost": the assembly-level cost}`` (default cost: the robot mass).

    The cost must need no trajectory (mass, numJ, moduleCost); others raise InputError before any IK runs.
    """
    cost_function = assembly_cost(cost)
    value = cost_function.evaluate_assembly(assembly)
    goals = goal_feedback(task, assembly, seed=seed, base_placement=base_placement)
    return {"goals": goals, "cost": float(value)}


def goal_feedback_line(entry: dict) -> str:
    """One goal's ``{"id", "reached", "q", "reason"}`` as a line: ``goal pick: reached q = [0.1608, ...]``; a goal ID
    or reason holding a line break or another control character is escaped (``\\n``): one goal, one line."""
    gid, reason = one_line(str(entry["id"])), one_line(str(entry["reason"] or ""))
    if not entry["reached"]:
        return f"goal {gid}: NOT reached: {reason}"
    q = "" if entry["q"] is None else " q = [" + ", ".join(f"{v:.4f}" for v in entry["q"]) + "]"
    note = f" ({reason})" if reason else ""
    return f"goal {gid}: reached{q}{note}"


def format_feedback(task: Task, assembly: ModuleAssembly, result: dict, descriptor: str) -> str:
    """The feedback as readable text."""
    lines = [
        f"task {task.id!r}: {len(task.goals)} goal(s), {len(task.obstacles)} obstacle(s);"
        f" robot {assembly.dof} DOF, {assembly.mass:.3f} kg"
    ]
    lines.extend(f"  {goal_feedback_line(entry)}" for entry in result["goals"])
    reached = sum(1 for e in result["goals"] if e["reached"])
    lines.append(
        f"{reached} of {len(result['goals'])} goal(s) reached; cost ({descriptor or '0'}): {result['cost']:.6g}"
    )
    return "\n".join(lines)


def verify_goal_configurations(
    task: Task,
    assembly: ModuleAssembly,
    q_by_goal: dict[str, Any],
    base_placement: np.ndarray | None = None,
) -> list[dict]:
    """Independently check given configurations against the pose goals of a task, without any IK.

    Per ``At`` goal ``{"id", "ok", "pose_ok", "collisions", "torques_ok", "limits_ok", "reason"}``: the TCP pose at
    ``q_by_goal[id]`` lies within the goal's tolerance, the robot (placed per the task) collides neither with
    itself nor with an obstacle (within the collisionFree safety margin), the static torques are within the
    joint torque limits and q within the position limits. A search result is only worth reporting if this holds.
    """
    placement = base_placement if base_placement is not None else task_base_placement(task)
    robot = assembly.to_pin_robot(placement)
    robot.model.gravity.linear = np.asarray(task.header.gravity, dtype=float)
    margin = max((float(c.safety_margin or 0.0) for c in task.constraints_of(CollisionFree)), default=0.0)
    out: list[dict] = []
    for g in task.goals:
        if not isinstance(g, At):
            continue
        q = q_by_goal.get(g.id)
        if q is None:
            out.append({"id": g.id, "ok": False, "pose_ok": False, "collisions": [], "torques_ok": False,
                        "limits_ok": False, "reason": "no configuration given"})  # fmt: skip
        else:
            out.append(_verify_at(robot, task, g, np.asarray(q, dtype=float), margin))
    return out


def _verify_at(robot: PinRobot, task: Task, goal: At, q: np.ndarray, margin: float) -> dict:
    """The check of one pose goal's configuration (see :func:`verify_goal_configurations`)."""
    pose_ok = goal.require_pose().valid(robot.fk(q))
    collisions = [c.describe() for c in robot.collisions(q, task, margin)]
    tau = np.abs(robot.static_torque(q))
    torques_ok = bool(np.all(tau <= robot.torque_limits + 1e-9))
    limits_ok = robot.within_limits(q)
    problems = [
        text
        for bad, text in (
            (not pose_ok, "the TCP is outside the goal tolerance"),
            (bool(collisions), "collision: " + ", ".join(collisions)),
            (not torques_ok, "static torque above the limit"),
            (not limits_ok, "q outside the joint limits"),
        )
        if bad
    ]
    return {"id": goal.id, "ok": not problems, "pose_ok": pose_ok, "collisions": collisions,
            "torques_ok": torques_ok, "limits_ok": limits_ok, "reason": "; ".join(problems)}  # fmt: skip
