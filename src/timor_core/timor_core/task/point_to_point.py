"""A solver for tasks of point goals: task-aware IK per goal, collision-free motions between them, a Solution.

``solve_point_to_point(task, assembly)`` handles at / reach / pause / returnTo goals in the task's order (or its
allGoalsFulfilledInOrder order) and returns a :class:`~timor_core.task.solution.Solution` that satisfies the task's
constraints, or raises :class:`~timor_core.task.solution.SolveError` saying which goal failed and why.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from timor_core.errors import InputError
from timor_core.kinematics.trajectory import Trajectory
from timor_core.limits import check_count
from timor_core.task import At, CollisionFree, Follow, GoalOrder, JointLimits, Pause, ReturnTo, Task, ValidJointAngles
from timor_core.task.costs import CostFunction
from timor_core.task.solution import Solution, SolveError

if TYPE_CHECKING:
    from timor_core.kinematics.collision import CollisionChecker
    from timor_core.kinematics.planning import PlannerConfig
    from timor_core.kinematics.robot import PinRobot
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.task import Goal

__all__ = ["solve_point_to_point", "SolveError"]


def solve_point_to_point(
    task: Task,
    assembly: ModuleAssembly,
    base_placement: np.ndarray | None = None,
    rng: np.random.Generator | int | None = None,
    cost_function: CostFunction | str | None = None,
    planner_config: PlannerConfig | None = None,
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
    from timor_core.kinematics.planning import PlannerConfig

    if base_placement is None and task.base_placement is not None and task.base_placement.pose is not None:
        base_placement = task.base_placement.pose.world
    robot = assembly.to_pin_robot(base_placement)
    robot.model.gravity.linear = np.asarray(task.header.gravity, dtype=float)
    setting = _Setting.of(task, robot, np.random.default_rng(rng), planner_config or PlannerConfig())
    order = _goal_order(task)
    first = next((g for g in order if isinstance(g, At)), None)
    start_at_first = q_start is None and first is not None and order[0] is first
    motion = _Motion(setting, _start_configuration(setting, q_start, first if start_at_first else None))
    for g in order:
        if isinstance(g, At):
            motion.move_to(motion.start if (g is first and start_at_first) else setting.ik(g, motion.q), g.id)
        elif isinstance(g, Pause):
            motion.pause(g)
        elif isinstance(g, ReturnTo):
            motion.return_to(g)
        else:
            raise SolveError(f"goal {g.id!r}: goal type {type(g).__name__} is not supported")
        motion.reached(g.id)
    trajectory = Trajectory.concatenate(motion.pieces) if len(motion.pieces) > 1 else motion.pieces[0]
    goal_times = {gid: float(trajectory.t[i]) for gid, i in motion.goal_index.items()}
    return Solution(task, assembly, trajectory, robot.placement, goal_times, cost_function)


@dataclass
class _Setting:
    """What every goal of one solve needs: the task, the placed robot, the random generator, the planner's
    configuration and time step, the task's IK options and the validity test of a configuration."""

    task: Task
    robot: PinRobot
    rng: np.random.Generator
    config: PlannerConfig
    dt: float
    margin: float  # the collisionFree safety margin
    check_tau: bool  # the task limits torques
    angle_limits: list[ValidJointAngles]
    limits: np.ndarray  # (2, dof) lower and upper position limits
    own: CollisionChecker = field(repr=False)  # self-collision
    env: CollisionChecker | None = field(repr=False)  # the obstacles (None without)

    @classmethod
    def of(cls, task: Task, robot: PinRobot, rng: np.random.Generator, config: PlannerConfig) -> _Setting:
        """The setting of ``task`` for ``robot``."""
        margin = max((float(c.safety_margin or 0.0) for c in task.constraints_of(CollisionFree)), default=0.0)
        check_tau = any("tau" in c.parts for c in task.constraints_of(JointLimits))
        own = robot.collision_checker(None, 0.0, self_collision=True)
        env = robot.collision_checker(task, margin, self_collision=False) if task.obstacles else None
        angles = list(task.constraints_of(ValidJointAngles))
        limits = robot.joint_limits
        return cls(task, robot, rng, config, task.header.time_step, margin, check_tau, angles, limits, own, env)

    def is_valid(self, q: np.ndarray) -> bool:
        """Within the joint limits and validJointAngles, free of self-collision and of the obstacles."""
        lo, hi = self.limits
        if np.any(q < lo) or np.any(q > hi):
            return False
        if any(not c.valid(q) for c in self.angle_limits):
            return False
        if self.own.in_collision(q):
            return False
        return not (self.env is not None and self.env.in_collision(q))

    def ik(self, goal: At, q_init: np.ndarray | None) -> np.ndarray:
        """A valid task-aware IK solution of the goal (4 tries, the first from ``q_init``)."""
        last = ""
        for _ in range(4):
            result = self.robot.ik(goal.goal_pose, q_init=q_init, task=self.task, rng=self.rng,
                                   check_static_torques=self.check_tau, margin=self.margin, details=True)  # fmt: skip
            if result.success and self.is_valid(result.q):
                return np.asarray(result.q, dtype=float)
            last = result.reason or "the IK solution violates the validJointAngles constraint"
            q_init = None
        raise SolveError(f"goal {goal.id!r}: no valid inverse kinematics solution: {last}")


def _goal_order(task: Task) -> list[Goal]:
    """The goals in the order of the allGoalsFulfilledInOrder constraints, then in task order (no follow goals)."""
    ordered_ids: list[str] = []
    for c in task.constraints_of(GoalOrder):
        ordered_ids.extend(gid for gid in c.order if gid not in ordered_ids)
    ordered_ids.extend(g.id for g in task.goals if g.id not in ordered_ids)
    order: list[Goal] = [task.goal(gid) for gid in ordered_ids]
    for g in order:
        if isinstance(g, Follow):
            raise SolveError(f"goal {g.id!r}: follow goals are not supported by solve_point_to_point")
    return order


def _start_configuration(setting: _Setting, q_start: np.ndarray | None, first: At | None) -> np.ndarray:
    """``q_start`` (checked), else the IK solution of ``first`` (the first goal, a pose), else q = 0 or, if that is
    not valid, a random valid configuration."""
    robot = setting.robot
    if q_start is not None:
        q_start = np.asarray(q_start, dtype=float)
        if q_start.shape != (robot.dof,):
            raise InputError(f"q_start needs {robot.dof} joint values", path="q_start", value=q_start.tolist())
        if not setting.is_valid(q_start):
            hits = robot.collisions(q_start, setting.task, setting.margin)
            why = f"in collision ({hits[0].describe()})" if hits else "outside the joint limits or validJointAngles"
            raise SolveError(f"the start configuration {q_start.tolist()} is {why}")
        return q_start
    if first is not None:
        return setting.ik(first, None)
    q = np.zeros(robot.dof)
    for _ in range(1000):
        if setting.is_valid(q):
            return q
        q = robot.random_configuration(setting.rng)
    if setting.is_valid(q):
        return q
    raise SolveError("no valid start configuration found (1000 random samples)")


class _Motion:
    """The solution's trajectory, built goal by goal from the start configuration."""

    def __init__(self, setting: _Setting, start: np.ndarray) -> None:
        dof = setting.robot.dof
        self.setting, self.start, self.q = setting, start, start
        self.pieces = [Trajectory(np.zeros(1), start[None], np.zeros((1, dof)), np.zeros((1, dof)))]
        self.samples = 1  # samples so far (the sample index of the current end is samples - 1)
        self.goal_index: dict[str, int] = {}
        self.goal_q: dict[str, np.ndarray] = {}

    def move_to(self, target: np.ndarray, gid: str) -> None:
        """A collision-free motion to ``target``, valid at every sample (the resolution refined until it is)."""
        from timor_core.kinematics.planning import plan

        if np.array_equal(target, self.q):
            return
        s, cfg = self.setting, self.setting.config
        for _ in range(4):
            traj = plan(s.robot, self.q, target, is_valid=s.is_valid, rng=s.rng, config=cfg, dt=s.dt)
            if traj is None:
                raise SolveError(f"goal {gid!r}: no collision-free motion found from the previous configuration")
            if all(s.is_valid(qk) for qk in traj.q):
                break
            cfg = dataclasses.replace(cfg, check_resolution=cfg.check_resolution / 4)
        else:
            raise SolveError(f"goal {gid!r}: no motion found that is collision-free at every time step")
        self.pieces.append(traj)
        self.samples += len(traj) - 1
        self.q = np.asarray(traj.q[-1], dtype=float)

    def pause(self, goal: Pause) -> None:
        """Hold still for the pause's duration."""
        dt = self.setting.dt
        n = max(0, math.ceil(goal.duration / dt * (1 - 1e-12)))
        check_count(self.samples + n + 1, "max_trajectory_samples", f"goal {goal.id!r}: a pause of {goal.duration:g} s")
        if n:
            hold = np.repeat(self.q[None], n + 1, axis=0)
            zeros = np.zeros_like(hold)
            self.pieces.append(Trajectory(np.arange(n + 1) * dt, hold, zeros, zeros))
            self.samples += n

    def return_to(self, goal: ReturnTo) -> None:
        """Back to the start (no target) or to the configuration of an earlier goal."""
        if goal.return_to is None:
            target = self.start
        elif goal.return_to in self.goal_q:
            target = self.goal_q[goal.return_to]
        else:
            raise SolveError(f"goal {goal.id!r} returns to goal {goal.return_to!r}, which is not reached before it")
        self.move_to(target, goal.id)

    def reached(self, gid: str) -> None:
        """Record that goal ``gid`` is reached at the current end."""
        self.goal_index[gid] = self.samples - 1
        self.goal_q[gid] = self.q.copy()
