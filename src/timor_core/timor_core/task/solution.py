"""Solutions of tasks: an assembly, its base placement and a joint trajectory — checked against the task.

A :class:`Solution` answers whether each goal is achieved (and when), whether every task constraint holds over
the whole trajectory, and — in :meth:`Solution.report` — which constraint failed, at which time and why. It reads
and writes the CoBRA solution JSON layout::

    {"cost": ..., "costFunction": "mass_0.5,cyc", "taskID": ..., "version": ..., "author": [...], ...,
     "moduleSet": ..., "moduleOrder": [...], "moduleConnection": [...], "baseConnection": [...],
     "basePose": [4x4], "trajectory": {"t": [...], "q": [[...]], "dq": ..., "ddq": ..., "goal2time": {...}}}

Semantics (as in the reference toolbox, timor-python 1.1.1, unless noted):

* **Goal times.** With ``goal_times`` (CoBRA ``goal2time``) every goal is evaluated at its time, which must be a
  sample time of the trajectory (within 1e-6 s); a goal without a time is not achieved. Without goal times (a
  timor extension) each goal is searched: its time is the first sample at which it is achieved.
* ``at``: the TCP pose lies within the goal's tolerance; ``reach``: also every joint velocity ``|dq| <= 1e-3``
  (the reference bounds the TCP twist instead); ``pause``: during the ``duration`` seconds up to the goal time
  every ``|dq| <= 1e-3`` and q stays within 1e-4 (per joint) of its value at the window's start (the reference
  demands exact zeros); ``returnTo``: q at the goal time lies within ``epsilon`` (L2, default 1e-4) of q at the
  referenced goal's time (the start if none), no earlier than that time (the reference also compares dq and
  ddq); ``follow``: the i-th pose of the goal's trajectory is met at ``t_goal - (n - 1 - i) * timeStepSize``.
  Goal-level constraints must hold at the goal's time (over the whole window for pause and follow).
* **Constraints.** ``joint``: for the listed parts, q within the position limits, ``|dq|``, ``|ddq|``, ``|tau|``
  within the velocity, acceleration and torque limits (``tau = robot.id(q, dq, ddq)`` with rotor inertia and
  friction, in the task's gravity; limits get a relative slack of 1e-9 for rounding); ``selfCollisionFree``;
  ``collisionFree``: no obstacle closer than the safety margin, and no self-collision (as the reference);
  ``allGoalsFulfilled``; ``allGoalsFulfilledInOrder``: the listed goals are achieved at non-decreasing times in
  that order; ``basePlacement``: the base placement within the tolerated pose; ``validJointAngles``. Collision
  constraints are checked at the samples of the trajectory. Other constraint types are reported as not checked.
* :attr:`Solution.valid` is True when every *task-level* constraint holds (as in the reference: goals count only
  through ``allGoalsFulfilled``); :attr:`Solution.all_goals_achieved` says whether every goal is achieved.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.common.fileio import write_json
from timor_core.errors import FormatError, InputError, TimorError, UnknownModuleError, ValidationError, short_repr
from timor_core.kinematics.trajectory import Trajectory
from timor_core.task import (
    Task,
)
from timor_core.task.costs import CostFunction, parse_cost
from timor_core.task.solution_checks import LIMIT_SLACK, SolutionChecks
from timor_core.task.solution_compat import SolutionCompat
from timor_core.task.solution_goals import HOLD_EPS, RETURN_EPS, VELOCITY_EPS, SolutionGoals
from timor_core.task.solution_json import (
    in_joint_order,
    is_branched,
    parse_solution_header,
    pick_task,
    solution_header,
    with_derivatives,
)

if TYPE_CHECKING:
    from timor_core.kinematics.robot import PinRobot
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.model.db import ModulesDB
    from timor_core.task import Goal

__all__ = [
    "Solution",
    "SolveError",
    "VELOCITY_EPS",
    "HOLD_EPS",
    "RETURN_EPS",
    "TIME_EPS",
    "LIMIT_SLACK",
]

#: Two times closer than this (s) are the same sample.
TIME_EPS = 1e-6

_LAYOUT_KEYS = (
    "cost",
    "costFunction",
    "moduleSet",
    "moduleOrder",
    "moduleConnection",
    "baseConnection",
    "basePose",
    "jointOrder",
)


class SolveError(TimorError):
    """A solution could not be built (a goal is unreachable, no collision-free path, unsupported goal type)."""


class Solution(SolutionGoals, SolutionChecks, SolutionCompat):
    """An assembly, placed in the world, following a joint trajectory to solve a task.

    ``base_placement`` defaults to the assembly's; ``goal_times`` maps goal IDs to times (CoBRA ``goal2time``;
    omit it to let every goal be searched); ``cost_function`` is a :class:`~timor_core.task.costs.CostFunction` or a
    descriptor string; ``header`` holds the CoBRA solution header fields (``taskID`` defaults to the task's ID).
    """

    def __init__(
        self,
        task: Task,
        assembly: ModuleAssembly,
        trajectory: Trajectory,
        base_placement: np.ndarray | None = None,
        goal_times: Mapping[str, float] | None = None,
        cost_function: CostFunction | str | None = None,
        header: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(task, Task):
            raise InputError("a solution needs a Task", value=task)
        if not isinstance(trajectory, Trajectory):
            raise InputError("a solution needs a Trajectory", value=trajectory)
        self.task = task
        self.assembly = assembly
        self._robot: PinRobot = assembly.to_pin_robot(base_placement)
        self._robot.model.gravity.linear = np.asarray(task.header.gravity, dtype=float)
        if trajectory.dof != self._robot.dof:
            raise InputError(
                f"the trajectory has {trajectory.dof} joints, the robot has {self._robot.dof}", value=trajectory
            )
        self.trajectory = trajectory
        self.goal_times = self._check_goal_times(goal_times)
        self.cost_function = parse_cost(cost_function)
        self.header = solution_header(header, task)
        self.stated_cost: float | None = None  # the cost written in the file this solution was read from
        self.extra: dict[str, Any] = {}  # unknown top-level JSON fields, written back unchanged
        self._tcp: np.ndarray | None = None
        self._torques: dict[tuple[bool, bool], np.ndarray] = {}
        self._goal_results: dict[str, tuple[int | None, str]] = {}
        self._in_progress: set[str] = set()
        self._constraint_results: list[dict] | None = None

    def _check_goal_times(self, goal_times: Mapping[str, float] | None) -> dict[str, float] | None:
        if not goal_times:
            return None
        known = {g.id for g in self.task.goals}
        out: dict[str, float] = {}
        for gid, t in goal_times.items():
            gid = str(gid)
            if gid not in known:
                raise ValidationError(
                    "goal time for a goal the task does not have", path=f"$.goal2time.{gid}", value=gid
                )
            if isinstance(t, bool) or not isinstance(t, (int, float, np.integer, np.floating)) or not math.isfinite(t):
                raise FormatError("a goal time must be a finite number", path=f"$.goal2time.{gid}", value=t)
            if t < -TIME_EPS or t > self.trajectory.duration + TIME_EPS:
                raise ValidationError(
                    f"goal time outside the trajectory [0, {self.trajectory.duration:g}] s",
                    path=f"$.goal2time.{gid}",
                    value=float(t),
                )
            out[gid] = float(t)
        return out

    # -- plain properties --------------------------------------------------------------------------
    @property
    def robot(self) -> PinRobot:
        """The robot at its base placement, in the task's gravity (built once)."""
        return self._robot

    @property
    def base_placement(self) -> np.ndarray:
        """The pose of the robot's base in the world."""
        return self._robot.placement

    @property
    def cost(self) -> float:
        """The cost function evaluated on this solution."""
        return self.cost_function.evaluate(self)

    @property
    def tcp_poses(self) -> np.ndarray:
        """(N, 4, 4) TCP poses at the trajectory's samples (cached)."""
        if self._tcp is None:
            self._tcp = np.array([self._robot.fk(q) for q in self.trajectory.q]).reshape(-1, 4, 4)
        return self._tcp

    def torques(self, motor_inertia: bool = True, friction: bool = True) -> np.ndarray:
        """(N, dof) joint torques along the trajectory (inverse dynamics, in the task's gravity; cached)."""
        key = (bool(motor_inertia), bool(friction))
        if key not in self._torques:
            tr = self.trajectory
            self._torques[key] = np.array(
                [
                    self._robot.id(q, dq, ddq, motor_inertia=motor_inertia, friction=friction)
                    for q, dq, ddq in zip(tr.q, tr.dq, tr.ddq)
                ]
            ).reshape(len(tr), tr.dof)
        return self._torques[key]

    @property
    def tau(self) -> np.ndarray:
        """Joint torques with rotor inertia and friction (what the joint-limit constraint checks)."""
        return self.torques()

    def visualize(self, **kwargs):
        """Play the solution in the browser viewer (needs the ``viz`` extra); returns the Viewer."""
        from timor_core.viz.viewer import show_solution  # delegation (docs/architecture.md)

        return show_solution(self, **kwargs)

    def __repr__(self) -> str:
        return f"Solution(task={self.task.id!r}, assembly={self.assembly.module_ids!r}, {self.trajectory!r})"

    # -- time lookup -------------------------------------------------------------------------------
    def _index_of(self, t: float) -> int | None:
        times = self.trajectory.t
        i = int(np.searchsorted(times, t))
        best = None
        for j in (i - 1, i):
            if 0 <= j < times.size and abs(times[j] - t) <= TIME_EPS and (best is None or abs(times[j] - t) < best[1]):
                best = (j, abs(times[j] - t))
        return None if best is None else best[0]

    # -- goals -------------------------------------------------------------------------------------
    def _goal(self, goal: Goal | str) -> Goal:
        if isinstance(goal, str):
            return self.task.goal(goal)
        return goal

    def achieved(self, goal: Goal | str) -> bool:
        """True if the goal (or goal ID) is achieved (see the module docstring for each goal type)."""
        return self._goal_result(self._goal(goal))[0] is not None

    def goal_time(self, goal: Goal | str) -> float | None:
        """The time at which the goal is achieved (its given time, or the first time found); None if it is not."""
        idx = self._goal_result(self._goal(goal))[0]
        return None if idx is None else float(self.trajectory.t[idx])

    def goal_reason(self, goal: Goal | str) -> str:
        """Why the goal is not achieved ("" if it is)."""
        return self._goal_result(self._goal(goal))[1]

    @property
    def all_goals_achieved(self) -> bool:
        """True if every goal of the task is achieved."""
        return all(self.achieved(g) for g in self.task.goals)

    # -- constraints -------------------------------------------------------------------------------
    @property
    def valid(self) -> bool:
        """True if every task-level constraint holds over the whole trajectory."""
        return all(r["ok"] for r in self._constraints())

    def failed_constraints(self) -> list[dict]:
        """The report entries of the task constraints that do not hold."""
        return [r for r in self._constraints() if not r["ok"]]

    def _constraints(self) -> list[dict]:
        if self._constraint_results is None:
            every = list(range(len(self.trajectory)))
            results = []
            for k, c in enumerate(self.task.constraints):
                r = self._check_constraint(c, every)
                r["index"] = k
                results.append(r)
            self._constraint_results = results
        return self._constraint_results

    def report(self) -> dict:
        """Every task constraint and every goal: ok or not, and if not at which time and why (JSON-serializable)."""
        constraints = [dict(r) for r in self._constraints()]
        goals = []
        for g in self.task.goals:
            idx, reason = self._goal_result(g)
            goals.append(
                {
                    "id": g.id,
                    "type": g.type_name,
                    "achieved": idx is not None,
                    "time": None if idx is None else float(self.trajectory.t[idx]),
                    "reason": reason,
                }
            )
        return {
            "task": self.task.id,
            "valid": all(r["ok"] for r in constraints),
            "all_goals_achieved": all(g["achieved"] for g in goals),
            "constraints": constraints,
            "goals": goals,
        }

    # -- JSON --------------------------------------------------------------------------------------
    def to_json_data(self) -> dict:
        """The solution in the CoBRA solution layout (goal2time only when goal times were given)."""
        data: dict[str, Any] = {"cost": float(self.cost), "costFunction": self.cost_function.descriptor()}
        data.update(copy.deepcopy(self.header))
        data.update(self.assembly.to_json_data())
        data["basePose"] = [[[float(v) for v in row] for row in self.base_placement]]
        traj = self.trajectory.to_json()
        if self.goal_times:
            traj["goal2time"] = dict(self.goal_times)
        data["trajectory"] = traj
        if is_branched(self.assembly):  # say which column is which joint: q orders of trees have differed
            data["jointOrder"] = list(self.assembly.robot.joints)
        for k, v in self.extra.items():
            data.setdefault(k, copy.deepcopy(v))
        return data

    def to_json_file(self, path: str | Path) -> Path:
        """Write the solution JSON atomically (temp file, then rename)."""
        return write_json(path, self.to_json_data())

    @classmethod
    def from_json_data(
        cls,
        data: Any,
        task: Task | Mapping[str, Task],
        db: ModulesDB | str | Path | None = None,
        file: str | Path | None = None,
        *,
        legacy_breadth_first: bool = False,
    ) -> Solution:
        """Read a CoBRA solution. ``task`` is the task (or a mapping of task IDs to tasks); ``db`` the module set
        (None: the embedded set the file's ``moduleSet`` names, as timor-python looked it up; timor never downloads).

        Configurations are in the depth-first joint order of Pinocchio's URDF loader (the reference's and
        CoBRA's), or in the order the file's ``jointOrder`` names. ``legacy_breadth_first=True`` reads a solution
        of a branched robot written by timor before it adopted that order (it numbered a tree's joints breadth
        first and wrote no ``jointOrder``).
        Bad input raises a :class:`~timor_core.errors.InputError` naming the file, the JSON path and the value.
        """
        from timor_core.model.assembly import ModuleAssembly

        file = Path(file) if file is not None else None
        try:
            d = jf.obj(data, "$")
            header = parse_solution_header(d)
            the_task = pick_task(task, header["taskID"])
            cost_function, stated = _cost_fields(d)
            trajectory, goal_times = _trajectory_fields(d)
        except InputError as exc:
            raise exc.located(file=file) from None
        assembly = ModuleAssembly.from_json_data(_solution_db(db, d, file), d, file)
        try:
            trajectory = in_joint_order(trajectory, assembly, d.get("jointOrder"), legacy_breadth_first)
        except InputError as exc:
            raise exc.located(file=file) from None
        try:
            solution = cls(the_task, assembly, trajectory, None, goal_times, cost_function, header)
        except InputError as exc:
            path = exc.path
            if path and path.startswith("$.goal2time"):
                path = "$.trajectory" + path[1:]
            elif path is None:
                path = "$.trajectory"
            raise type(exc)(exc.message, file=file, path=path, value=exc.value) from None
        solution.stated_cost = stated
        solution.extra = {k: v for k, v in d.items() if k not in _LAYOUT_KEYS and k != "trajectory" and k not in header}
        return solution

    @classmethod
    def from_json_file(
        cls,
        path: str | Path,
        task: Task | Mapping[str, Task],
        db: ModulesDB | str | Path | None = None,
        *,
        legacy_breadth_first: bool = False,
    ) -> Solution:
        """Load a CoBRA solution file for a task (or a mapping of task IDs to tasks) and a module set (None: the
        embedded set its ``moduleSet`` names)."""
        path = Path(path)
        return cls.from_json_data(jf.load_json_file(path), task, db, path, legacy_breadth_first=legacy_breadth_first)


# -- helpers ---------------------------------------------------------------------------------------


def _solution_db(db: ModulesDB | str | Path | None, d: dict, file: Path | None) -> ModulesDB:
    """The module set given, or (None) the embedded set the solution's ``moduleSet`` names."""
    from timor_core.model.db import ModulesDB

    if isinstance(db, ModulesDB):
        return db
    if db is not None:
        return ModulesDB.load(db)
    name = d.get("moduleSet")
    try:
        return ModulesDB.from_name(name if isinstance(name, str) else "")
    except UnknownModuleError:
        raise InputError(
            f"the solution's module set {short_repr(name)} is not embedded in timor (timor never downloads one): give "
            "it, Solution.from_json_file(path, task, db) with db = ModulesDB.from_json_file('<set>/modules.json')",
            file=file,
            path="$.moduleSet",
            value=name,
        ) from None


def _cost_fields(d: dict) -> tuple[CostFunction, float | None]:
    """A solution JSON's cost function (its descriptor) and the cost it states (None if it states none)."""
    descriptor = d.get("costFunction", "")
    if descriptor is None:
        descriptor = ""
    if not isinstance(descriptor, str):
        raise FormatError("expected a cost descriptor string", path="$.costFunction", value=descriptor)
    try:
        cost_function = CostFunction.from_descriptor(descriptor)
    except InputError as exc:
        raise ValidationError(exc.message, path="$.costFunction", value=descriptor) from None
    stated = jf.number(d["cost"], "$.cost", allow_inf=True) if d.get("cost") is not None else None
    return cost_function, stated


def _trajectory_fields(d: dict) -> tuple[Trajectory, dict[str, float] | None]:
    """A solution JSON's trajectory and its goal times (goal2time; None without)."""
    traj_data = jf.obj(jf.req(d, "trajectory", "$"), "$.trajectory")
    trajectory = Trajectory.from_json(with_derivatives(traj_data), "$.trajectory")
    goal_times = None
    if traj_data.get("goal2time"):
        g2t = jf.obj(traj_data["goal2time"], "$.trajectory.goal2time")
        goal_times = {str(k): jf.number(v, f"$.trajectory.goal2time.{k}") for k, v in g2t.items()}
    return trajectory, goal_times
