"""A solver for tasks of point goals: task-aware IK per goal, collision-free motions between them, a Solution.

``solve_point_to_point(task, assembly)`` handles at / reach / pause / returnTo goals in the task's order (or its
allGoalsFulfilledInOrder order) and returns a :class:`~timor_core.task.solution.Solution` that satisfies the task's
constraints, or raises :class:`~timor_core.task.solution.SolveError` saying which goal failed and why.
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from timor_core.errors import InputError
from timor_core.kinematics.trajectory import Trajectory
from timor_core.limits import check_count
from timor_core.task import At, CollisionFree, Follow, GoalOrder, JointLimits, Pause, ReturnTo, Task, ValidJointAngles
from timor_core.task.costs import CostFunction
from timor_core.task.solution import Solution, SolveError

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.task import Goal

__all__ = ["solve_point_to_point", "SolveError"]


def solve_point_to_point(
    task: Task,
    assembly: ModuleAssembly,
    base_placement: np.ndarray | None = None,
    rng: np.random.Generator | int | None = None,
    cost_function: CostFunction | str | None = None,
    planner_config=None,
    q_start: np.ndarray | None = None,
) -> Solution:
    """Build a solution for a task of at / reach / pause / returnTo goals.

    The base goes to ``base_placement``, else the nominal pose of the task's basePlacement constraint, else the
    assembly's placement. Each at / reach goal gets a task-aware inverse kinematics solution (free of collisions
    with the obstacles, keeping the collisionFree safety margin, within static torque limits when the task limits
    torques); a pause holds still for its duration; returnTo goes back to an earlier configuration. Consecutive
    configurations are joined by collision-free motions (:func:`~timor_core.kinematics.planning.plan`) that stop at
    every goal; goal times are recorded (goal2time). Goals run in the order of an allGoalsFulfilledInOrder constraint,
    then in task order. Raises :class:`SolveError` when a goal is unreachable or no motion is found.

    The motion starts at ``q_start`` if given (it must be within the limits and free of collisions); otherwise
    at the first goal's IK solution when the first goal is a pose, else at q = 0 (or a random valid configuration).
    A returnTo goal without a target returns to that start.
    """
    from timor_core.kinematics.planning import PlannerConfig, plan

    rng = np.random.default_rng(rng)
    if base_placement is None and task.base_placement is not None and task.base_placement.pose is not None:
        base_placement = task.base_placement.pose.world
    robot = assembly.to_pin_robot(base_placement)
    robot.model.gravity.linear = np.asarray(task.header.gravity, dtype=float)
    dt = task.header.time_step
    config = planner_config or PlannerConfig()

    margin = max((float(c.safety_margin or 0.0) for c in task.constraints_of(CollisionFree)), default=0.0)
    check_tau = any("tau" in c.parts for c in task.constraints_of(JointLimits))
    angle_limits = task.constraints_of(ValidJointAngles)
    lo, hi = robot.joint_limits
    own = robot.collision_checker(None, 0.0, self_collision=True)
    env = robot.collision_checker(task, margin, self_collision=False) if task.obstacles else None

    def is_valid(q: np.ndarray) -> bool:
        if np.any(q < lo) or np.any(q > hi):
            return False
        if any(not c.valid(q) for c in angle_limits):
            return False
        if own.in_collision(q):
            return False
        return not (env is not None and env.in_collision(q))

    def ik(goal: At, q_init: np.ndarray | None) -> np.ndarray:
        last = ""
        for _ in range(4):
            result = robot.ik(
                goal.goal_pose,
                q_init=q_init,
                task=task,
                rng=rng,
                check_static_torques=check_tau,
                margin=margin,
                details=True,
            )
            if result.success and is_valid(result.q):
                return np.asarray(result.q, dtype=float)
            last = result.reason or "the IK solution violates the validJointAngles constraint"
            q_init = None
        raise SolveError(f"goal {goal.id!r}: no valid inverse kinematics solution: {last}")

    ordered_ids: list[str] = []
    for c in task.constraints_of(GoalOrder):
        ordered_ids.extend(gid for gid in c.order if gid not in ordered_ids)
    ordered_ids.extend(g.id for g in task.goals if g.id not in ordered_ids)
    order: list[Goal] = [task.goal(gid) for gid in ordered_ids]
    for g in order:
        if isinstance(g, Follow):
            raise SolveError(f"goal {g.id!r}: follow goals are not supported by solve_point_to_point")

    # the start: q_start, else the first pose goal's configuration, else q = 0 (or any valid configuration)
    first = next((g for g in order if isinstance(g, At)), None)
    start_at_first = q_start is None and first is not None and order[0] is first
    if q_start is not None:
        q_start = np.asarray(q_start, dtype=float)
        if q_start.shape != (robot.dof,):
            raise InputError(f"q_start needs {robot.dof} joint values", path="q_start", value=q_start.tolist())
        if not is_valid(q_start):
            hits = robot.collisions(q_start, task, margin)
            why = f"in collision ({hits[0].describe()})" if hits else "outside the joint limits or validJointAngles"
            raise SolveError(f"the start configuration {q_start.tolist()} is {why}")
    elif start_at_first:
        assert first is not None  # start_at_first implies a first pose goal
        q_start = ik(first, None)
    else:
        q_start = np.zeros(robot.dof)
        tries = 0
        while not is_valid(q_start):
            q_start = robot.random_configuration(rng)
            tries += 1
            if tries > 1000:
                raise SolveError("no valid start configuration found (1000 random samples)")
    pieces = [Trajectory(np.zeros(1), q_start[None], np.zeros((1, robot.dof)), np.zeros((1, robot.dof)))]
    samples = 1  # samples so far (the sample index of the current end is samples - 1)
    goal_index: dict[str, int] = {}
    goal_q: dict[str, np.ndarray] = {}
    q = q_start

    def move_to(target: np.ndarray, gid: str) -> None:
        nonlocal q, samples
        if np.array_equal(target, q):
            return
        # edges are checked at a finite resolution; the sampled trajectory must be valid at every sample
        # (that is what Solution.valid checks), so refine the resolution until it is
        cfg = config
        for _ in range(4):
            traj = plan(robot, q, target, is_valid=is_valid, rng=rng, config=cfg, dt=dt)
            if traj is None:
                raise SolveError(f"goal {gid!r}: no collision-free motion found from the previous configuration")
            if all(is_valid(qk) for qk in traj.q):
                break
            cfg = dataclasses.replace(cfg, check_resolution=cfg.check_resolution / 4)
        else:
            raise SolveError(f"goal {gid!r}: no motion found that is collision-free at every time step")
        pieces.append(traj)
        samples += len(traj) - 1
        q = np.asarray(traj.q[-1], dtype=float)

    for g in order:
        if isinstance(g, At):
            target = q_start if (g is first and start_at_first) else ik(g, q)
            move_to(target, g.id)
        elif isinstance(g, Pause):
            n = max(0, math.ceil(g.duration / dt * (1 - 1e-12)))
            check_count(samples + n + 1, "max_trajectory_samples", f"goal {g.id!r}: a pause of {g.duration:g} s")
            if n:
                hold = np.repeat(q[None], n + 1, axis=0)
                zeros = np.zeros_like(hold)
                pieces.append(Trajectory(np.arange(n + 1) * dt, hold, zeros, zeros))
                samples += n
        elif isinstance(g, ReturnTo):
            if g.return_to is None:
                target = q_start
            elif g.return_to in goal_q:
                target = goal_q[g.return_to]
            else:
                raise SolveError(f"goal {g.id!r} returns to goal {g.return_to!r}, which is not reached before it")
            move_to(target, g.id)
        else:
            raise SolveError(f"goal {g.id!r}: goal type {type(g).__name__} is not supported")
        goal_index[g.id] = samples - 1
        goal_q[g.id] = q.copy()

    trajectory = Trajectory.concatenate(pieces) if len(pieces) > 1 else pieces[0]
    goal_times = {gid: float(trajectory.t[i]) for gid, i in goal_index.items()}
    return Solution(task, assembly, trajectory, robot.placement, goal_times, cost_function)
