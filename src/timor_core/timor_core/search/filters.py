"""A chain of cheap-first filters that decides whether a serial assembly can serve a task, and says why not.

An assembly is a tuple of module IDs (base first, end effector last). The default chain, cheapest first:

==============  =========================================================================================
``assembly``    the modules join into a chain (``ModuleAssembly.from_serial_modules``)
``bound``       the assembly-level cost (mass, numJ, moduleCost; no trajectory needed) is *below* the best
                valid cost found so far ("a lighter solution is already known"); it runs before the
                Pinocchio model is built because it needs only the modules (~25 µs against ~2 ms)
``limits``      module count, degrees of freedom and (optionally) the reach bound within the configured limits
``robot``       the Pinocchio/coal model builds and has a TCP (placed at the task's nominal base placement)
``workspace``   every pose goal lies within the robot's reach bound plus the tolerance's position slack
                (``ik.outside_workspace``: a necessary condition, checked before any IK)
``ik``          kinematic IK per pose goal, ignoring obstacles and self-collision
``ik_task``     task-aware IK per goal (obstacles with the task's safety margin, self-collision), seeded with
                the ``ik`` solution
``torques``     static torques at the goal configurations within the joint limits (else IK again with the
                torque check)
``joint_limits`` the goal configurations within the joint position limits and every ``validJointAngles``
                constraint of the task or goal (else a few more IK tries)
==============  =========================================================================================

Each filter is a small object with a ``name`` and ``__call__(candidate) -> bool``; a failing filter writes a
short reason key (bounded vocabulary, e.g. ``"g1: collision with obstacle wall"``) and a detailed reason into
the :class:`Candidate`. Intermediate results (the robot, per-goal configurations) live in the candidate and are
reused by later filters. :class:`FilterChain` runs the filters and counts, per filter, how many candidates
entered and passed, and why they failed (a :class:`Funnel`).

Everything is deterministic: the IK of an assembly is seeded from ``FilterConfig.seed`` and the assembly's IDs,
so an assembly gets the same verdict in any process and in any order.
"""

from __future__ import annotations

import math
import re
import time
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from timor_core.errors import AssemblyError, InputError, TimorError
from timor_core.kinematics.ik import outside_workspace
from timor_core.task import At, CollisionFree, Follow, ValidJointAngles
from timor_core.task.costs import CostFunction

if TYPE_CHECKING:
    from timor_core.kinematics.robot import PinRobot
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.model.db import ModulesDB
    from timor_core.task import Constraint, Task, ToleratedPose

__all__ = [
    "FilterConfig",
    "GoalIK",
    "PoseGoal",
    "TaskContext",
    "Candidate",
    "Filter",
    "AssemblyFilter",
    "BoundFilter",
    "LimitsFilter",
    "RobotFilter",
    "WorkspaceFilter",
    "IKFilter",
    "TaskIKFilter",
    "TorqueFilter",
    "JointLimitsFilter",
    "FilterChain",
    "Funnel",
    "default_filters",
    "DEFAULT_FILTER_NAMES",
    "reason_category",
]


# -- configuration --------------------------------------------------------------------------------


@dataclass(frozen=True)
class FilterConfig:
    """Settings of the default filter chain (a frozen, picklable dataclass; ``to_json``/``from_json``).

    Attributes:
        max_modules, min_dof, max_dof: limits of the ``limits`` filter (None: no limit).
        max_reach: the robot's reach bound (m, base to TCP over all configurations) must not exceed this.
        bound: skip assemblies whose cost is not below the best valid cost found so far.
        torques: check static (gravity) torques at the goal configurations against the joint torque limits
            (physical robots must hold themselves; on by default, whatever the task's ``joint`` constraint says).
        stop_early: stop at the first failing goal (False: try every goal, e.g. to count reached goals).
        ik_tries, ik_iter: restarts and iterations per try of the kinematic IK (None: the IK defaults).
        task_ik_tries: restarts of the task-aware IK (None: the IK default). 150 by default: where obstacles
            leave only a small collision-free part of a goal's solution set, 50 random starts miss it too often.
        retries: extra task-aware IK runs (fresh random starts) when a solution violates torque or
            validJointAngles limits.
        seed: the seed of every IK (combined with the assembly's IDs and the goal).
        follow_samples: poses of a follow goal's trajectory (after the first, evenly spaced, the last included)
            the ``ik`` filter solves; every pose is checked against the workspace bound (0: workspace only).
    """

    max_modules: int | None = None
    min_dof: int | None = None
    max_dof: int | None = None
    max_reach: float | None = None
    bound: bool = True
    torques: bool = True
    stop_early: bool = True
    ik_tries: int | None = None
    ik_iter: int | None = None
    task_ik_tries: int | None = 150
    retries: int = 2
    seed: int = 0
    follow_samples: int = 4

    def to_json(self) -> dict:
        """A JSON-able dict of the settings."""
        return asdict(self)

    def __post_init__(self) -> None:
        ints = {
            "max_modules": (1, 10**4),
            "min_dof": (0, 10**4),
            "max_dof": (0, 10**4),
            "ik_tries": (1, 100_000),
            "ik_iter": (1, 100_000),
            "task_ik_tries": (1, 100_000),
            "retries": (0, 1000),
            "follow_samples": (0, 10_000),
            "seed": (0, 2**63 - 1),
        }
        for name, (lo, hi) in ints.items():
            v = getattr(self, name)
            if v is None and name not in ("retries", "seed", "follow_samples"):
                continue
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise InputError(f"filter setting {name} must be an integer in {lo}..{hi}", value=v)
        reach = self.max_reach
        if reach is not None and (isinstance(reach, bool) or not isinstance(reach, (int, float)) or not reach > 0):
            raise InputError("filter setting max_reach must be a positive number of metres", value=reach)

    @classmethod
    def from_json(cls, data: dict | None) -> FilterConfig:
        """The inverse of :meth:`to_json` (unknown keys are an InputError)."""
        if data is None:
            return cls()
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - names)
        if unknown:
            raise InputError(f"unknown filter settings {unknown} (known: {sorted(names)})", value=data)
        return cls(**data)


# -- per-goal and per-candidate records -----------------------------------------------------------


@dataclass
class GoalIK:
    """What the filters found for one pose goal: the configuration, whether it is valid, why not."""

    q: list[float] | None = None
    success: bool = False
    reason: str = ""
    stage: str = ""  # the last filter that worked on this goal

    def to_json(self) -> dict:
        return {"q": self.q, "success": self.success, "reason": self.reason, "stage": self.stage}

    @classmethod
    def from_json(cls, d: dict) -> GoalIK:
        q = d.get("q")
        q = None if q is None else [float(v) for v in q]
        return cls(q, bool(d["success"]), d.get("reason", ""), d.get("stage", ""))


@dataclass(frozen=True)
class PoseGoal:
    """A goal the filters can check by IK: at / reach goals, and follow goals (their first pose, with the rest of
    the trajectory in ``path``: the workspace filter checks every pose of it, the ``ik`` filter a sample)."""

    id: str
    pose: ToleratedPose
    constraints: tuple[Constraint, ...] = ()
    path: tuple[ToleratedPose, ...] = ()

    @property
    def world(self) -> np.ndarray:
        return np.asarray(self.pose.world, dtype=float)


class TaskContext:
    """What every filter needs to know about the task, prepared once per chain.

    ``placement``: the nominal pose of the task's basePlacement constraint (else None = identity);
    ``margin``: the largest collisionFree safety margin; ``goals``: the pose goals in task order;
    ``angle_limits``: task-level validJointAngles constraints.
    """

    def __init__(self, task: Task, db: ModulesDB, cost: CostFunction | str | None, config: FilterConfig) -> None:
        from timor_core.task.solve import assembly_cost, task_base_placement

        self.task = task
        self.db = db
        self.cost = assembly_cost(cost if cost is not None else "mass")
        self.config = config
        self.placement = task_base_placement(task)
        self.gravity = np.asarray(task.header.gravity, dtype=float)
        self.margin = max((float(c.safety_margin or 0.0) for c in task.constraints_of(CollisionFree)), default=0.0)
        self.angle_limits: tuple[ValidJointAngles, ...] = tuple(task.constraints_of(ValidJointAngles))
        goals: list[PoseGoal] = []
        for g in task.goals:
            if isinstance(g, At) and g.goal_pose is not None:
                goals.append(PoseGoal(g.id, g.goal_pose, tuple(g.constraints)))
            elif isinstance(g, Follow) and g.trajectory:
                trajectory = tuple(g.trajectory)
                goals.append(PoseGoal(g.id, trajectory[0], tuple(g.constraints), trajectory[1:]))
        self.goals: tuple[PoseGoal, ...] = tuple(goals)


_STAGES = {"ik": 1, "ik_task": 2, "torques": 3, "joint_limits": 4}


@dataclass
class Candidate:
    """One assembly on its way through the filters; filters read and write its intermediate results."""

    ids: tuple[str, ...]
    ctx: TaskContext
    bound: float = math.inf
    seed: int = 0
    assembly: ModuleAssembly | None = None
    robot: PinRobot | None = None
    cost: float | None = None
    goals: dict[str, GoalIK] = field(default_factory=dict)
    failed_filter: str | None = None
    reason_key: str = ""
    reason: str = ""

    def require_assembly(self) -> ModuleAssembly:
        """The assembly built by the ``assembly`` filter; InputError if no earlier filter in the chain built it."""
        if self.assembly is None:
            raise InputError("no assembly yet: the 'assembly' filter must come earlier in the chain", value=self.ids)
        return self.assembly

    def require_robot(self) -> PinRobot:
        """The robot model built by the ``robot`` filter; InputError if no earlier filter in the chain built it."""
        if self.robot is None:
            raise InputError("no robot model yet: the 'robot' filter must come earlier in the chain", value=self.ids)
        return self.robot

    def fail(self, key: str, detail: str | None = None) -> bool:
        """Record why the candidate fails (``key``: short and from a bounded vocabulary); returns False."""
        self.reason_key = key
        self.reason = detail if detail is not None else key
        return False

    def rng(self, stage: str, goal_index: int, attempt: int = 0) -> np.random.Generator:
        """A generator that depends only on the seed, the assembly, the stage, the goal and the attempt."""
        crc = zlib.crc32("\0".join(self.ids).encode())
        return np.random.default_rng([self.seed & 0xFFFFFFFF, crc, _STAGES.get(stage, 0), goal_index, attempt])

    def goal(self, goal_id: str) -> GoalIK:
        g = self.goals.get(goal_id)
        if g is None:
            g = self.goals[goal_id] = GoalIK()
        return g


def reason_category(reason: str) -> str:
    """The short form of an IK failure reason: ``"collision with obstacle wall (in 3 of 5 ...)"`` →
    ``"collision with obstacle wall"``; ``"no solution found (the closest pose ...)"`` → ``"no solution found"``;
    ``"torque limit of joint m1_J (97.1 > 80.0)"`` → ``"torque limit of joint m1_J"``."""
    text = re.split(r" \(|: ", reason, maxsplit=1)[0].strip()
    return text or "failed"


# -- the filters ----------------------------------------------------------------------------------


class Filter:
    """A filter: ``name`` and ``__call__(candidate) -> bool``; on failure it calls ``candidate.fail``."""

    name: ClassVar[str] = ""

    def __call__(self, c: Candidate) -> bool:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class AssemblyFilter(Filter):
    """The modules join into a serial chain (each neighbouring pair in exactly one way)."""

    name = "assembly"

    def __call__(self, c: Candidate) -> bool:
        from timor_core.model.assembly import ModuleAssembly

        try:
            c.assembly = ModuleAssembly.from_serial_modules(c.ctx.db, c.ids, c.ctx.placement)
        except TimorError as exc:
            return c.fail(f"cannot assemble: {type(exc).__name__}", f"cannot assemble: {exc}")
        return True


class BoundFilter(Filter):
    """The assembly-level cost is below the best valid cost found so far (always computes ``candidate.cost``)."""

    name = "bound"

    def __call__(self, c: Candidate) -> bool:
        c.cost = float(c.ctx.cost.evaluate_assembly(c.require_assembly()))
        if not math.isfinite(c.cost):
            return c.fail("cost not finite", f"cost {c.cost} is not finite")
        if c.ctx.config.bound and c.cost >= c.bound:  # exact comparison keeps results order-independent
            return c.fail(
                "cost not below the best found", f"cost {c.cost:.6g} is not below the best valid {c.bound:.6g} found"
            )
        return True


class LimitsFilter(Filter):
    """Module count, degrees of freedom and reach within the configured limits."""

    name = "limits"

    def __call__(self, c: Candidate) -> bool:
        cfg = c.ctx.config
        n = len(c.ids)
        if cfg.max_modules is not None and n > cfg.max_modules:
            return c.fail("too many modules", f"{n} modules > max_modules {cfg.max_modules}")
        dof = c.require_assembly().dof
        if cfg.min_dof is not None and dof < cfg.min_dof:
            return c.fail("too few DOF", f"{dof} DOF < min_dof {cfg.min_dof}")
        if cfg.max_dof is not None and dof > cfg.max_dof:
            return c.fail("too many DOF", f"{dof} DOF > max_dof {cfg.max_dof}")
        if cfg.max_reach is not None:
            if not _build_robot(c):
                return False
            reach = c.require_robot().reach()
            if reach > cfg.max_reach:
                return c.fail("too long", f"reach bound {reach:.3f} m > max_reach {cfg.max_reach:g} m")
        return True


def _build_robot(c: Candidate) -> bool:
    if c.robot is not None:
        return True
    assembly = c.require_assembly()
    try:
        robot = assembly.to_pin_robot(c.ctx.placement)
        if not robot.has_end_effector:
            raise AssemblyError("this robot has no end effector (no free 'eef' connector): there is no tool0")
    except TimorError as exc:
        return c.fail(f"no robot model: {type(exc).__name__}", f"no robot model: {exc}")
    robot.model.gravity.linear = c.ctx.gravity
    c.robot = robot
    return True


class RobotFilter(Filter):
    """The Pinocchio/coal model builds (at the task's base placement, with its gravity) and has a TCP."""

    name = "robot"

    def __call__(self, c: Candidate) -> bool:
        return _build_robot(c)


class WorkspaceFilter(Filter):
    """Every pose goal lies within reach: distance from the base ≤ reach bound + the tolerance's position slack."""

    name = "workspace"

    def __call__(self, c: Candidate) -> bool:
        robot = c.require_robot()
        ok = True
        for g in c.ctx.goals:
            gaps = [outside_workspace(robot, robot.tcp, p.world, p.tolerance) for p in (g.pose, *g.path)]
            worst = int(np.argmax(gaps))
            gap = gaps[worst]
            if gap > 0:
                rec = c.goal(g.id)
                rec.success, rec.stage = False, self.name
                where = f" (pose {worst} of its trajectory)" if g.path else ""
                rec.reason = f"{gap:.3f} m outside the workspace{where} (reach bound {robot.reach():.3f} m)"
                if ok:
                    c.fail(f"{g.id}: outside workspace", f"goal {g.id}: {rec.reason}")
                ok = False
                if c.ctx.config.stop_early:
                    return False
        return ok


class _GoalFilter(Filter):
    """Runs ``check_goal`` per pose goal; stops at the first failure unless ``stop_early`` is off."""

    def __call__(self, c: Candidate) -> bool:
        ok = True
        for k, g in enumerate(c.ctx.goals):
            rec = c.goal(g.id)
            if not self.check_goal(c, k, g, rec):
                rec.success, rec.stage = False, self.name
                if ok:
                    c.fail(f"{g.id}: {reason_category(rec.reason)}", f"goal {g.id}: {rec.reason}")
                ok = False
                if c.ctx.config.stop_early:
                    return False
            else:
                rec.success, rec.stage = True, self.name
        return ok

    def check_goal(self, c: Candidate, k: int, g: PoseGoal, rec: GoalIK) -> bool:
        raise NotImplementedError


def _task_ik(c: Candidate, k: int, g: PoseGoal, q_init, stage: str, attempt: int = 0, torques: bool = False):
    cfg = c.ctx.config
    return c.require_robot().ik(
        g.pose,
        q_init=q_init,
        task=c.ctx.task,
        rng=c.rng(stage, k, attempt),
        margin=c.ctx.margin,
        check_static_torques=torques,
        max_n_tries=cfg.task_ik_tries,
        details=True,
    )


class IKFilter(_GoalFilter):
    """Kinematic IK per pose goal (no obstacles, no self-collision): can the TCP get there at all?"""

    name = "ik"

    def check_goal(self, c: Candidate, k: int, g: PoseGoal, rec: GoalIK) -> bool:
        cfg = c.ctx.config
        result = c.require_robot().ik(
            g.pose,
            rng=c.rng(self.name, k),
            ignore_self_collision=True,
            max_n_tries=cfg.ik_tries,
            max_iter=cfg.ik_iter,
            details=True,
        )
        rec.q = [float(v) for v in result.q]
        rec.reason = result.reason
        if not result.success or not g.path:
            return bool(result.success)
        q = result.q  # a follow goal: a sample of its trajectory, each pose seeded with the previous solution
        n, m = len(g.path), cfg.follow_samples
        picks = sorted({round(i * (n - 1) / max(m - 1, 1)) for i in range(m)}) if m else []
        for i in picks:
            step = c.require_robot().ik(
                g.path[i], q_init=q, rng=c.rng(self.name, k, i + 1), ignore_self_collision=True,
                max_n_tries=cfg.ik_tries, max_iter=cfg.ik_iter, details=True,
            )  # fmt: skip
            if not step.success:
                rec.reason = f"pose {i + 1} of its trajectory: {step.reason}"
                return False
            q = step.q
        return True


class TaskIKFilter(_GoalFilter):
    """Task-aware IK per goal (obstacles with the safety margin, self-collision), seeded with the ``ik`` result."""

    name = "ik_task"

    def check_goal(self, c: Candidate, k: int, g: PoseGoal, rec: GoalIK) -> bool:
        result = _task_ik(c, k, g, np.asarray(rec.q), self.name)
        rec.q = [float(v) for v in result.q]
        rec.reason = result.reason
        return bool(result.success)


class TorqueFilter(_GoalFilter):
    """Static torques at the goal configuration within the torque limits; else task-aware IK with the torque
    check (seeded with the current solution, then ``retries`` fresh starts)."""

    name = "torques"

    def __call__(self, c: Candidate) -> bool:
        if not c.ctx.config.torques:
            return True
        return super().__call__(c)

    def check_goal(self, c: Candidate, k: int, g: PoseGoal, rec: GoalIK) -> bool:
        robot = c.require_robot()
        limits = robot.torque_limits
        if _torques_ok(robot, _goal_q(rec), limits):
            return True
        q_init: np.ndarray | None = np.asarray(rec.q)
        for attempt in range(1 + c.ctx.config.retries):
            result = _task_ik(c, k, g, q_init, self.name, attempt, torques=True)
            if result.success:
                rec.q, rec.reason = [float(v) for v in result.q], ""
                return True
            rec.reason = result.reason
            q_init = None
        return False


def _goal_q(rec: GoalIK) -> list[float]:
    """The goal's configuration found by an earlier IK filter; InputError if none ran (chain misordered)."""
    if rec.q is None:
        raise InputError("no goal configuration yet: the 'ik' filter must come earlier in the chain")
    return rec.q


def _torques_ok(robot: PinRobot, q: Sequence[float], limits: np.ndarray) -> bool:
    tau = robot.static_torque(np.asarray(q, dtype=float))
    return bool(np.all(np.abs(tau) <= limits))


class JointLimitsFilter(_GoalFilter):
    """Goal configurations within the joint position limits and every validJointAngles constraint (task or goal);
    else ``retries`` more task-aware IK runs from fresh random starts."""

    name = "joint_limits"

    def check_goal(self, c: Candidate, k: int, g: PoseGoal, rec: GoalIK) -> bool:
        constraints = (*c.ctx.angle_limits, *(x for x in g.constraints if isinstance(x, ValidJointAngles)))
        robot = c.require_robot()
        why = _angles_violation(robot, _goal_q(rec), constraints)
        if why is None:
            return True
        rec.reason = why
        if "wide for a" in why:  # no configuration of this robot can satisfy it
            return False
        limits = robot.torque_limits if c.ctx.config.torques else None
        for attempt in range(c.ctx.config.retries):
            result = _task_ik(c, k, g, None, self.name, attempt, torques=limits is not None)
            if result.success and _angles_violation(robot, result.q, constraints) is None:
                rec.q, rec.reason = [float(v) for v in result.q], ""
                return True
        return False


def _angles_violation(
    robot: PinRobot, q_in: Sequence[float] | np.ndarray, constraints: Iterable[ValidJointAngles]
) -> str | None:
    q = np.asarray(q_in, dtype=float)
    lo, hi = robot.joint_limits
    bad = np.flatnonzero((q < lo) | (q > hi))
    if bad.size:
        j = int(bad[0])
        return f"joint limits: joint {robot.joints[j]} at {q[j]:.4g} outside [{lo[j]:.4g}, {hi[j]:.4g}]"
    for con in constraints:
        lim = np.asarray(con.limits, dtype=float)
        if lim.shape != (2, robot.dof):
            return f"validJointAngles: limits are {lim.shape[-1]} wide for a {robot.dof}-DOF robot"
        if not con.valid(q):
            qm = np.mod(q + np.pi, 2 * np.pi) - np.pi if con.coterminal else q
            j = int(np.flatnonzero((qm < lim[0]) | (qm > lim[1]))[0])
            where = f"[{lim[0, j]:.4g}, {lim[1, j]:.4g}]"
            return f"validJointAngles: joint {robot.joints[j]} at {qm[j]:.4g} outside {where}"
    return None


DEFAULT_FILTER_NAMES = (
    "assembly",
    "bound",
    "limits",
    "robot",
    "workspace",
    "ik",
    "ik_task",
    "torques",
    "joint_limits",
)


def default_filters() -> list[Filter]:
    """The default chain, cheapest first (see the module docstring)."""
    return [
        AssemblyFilter(),
        BoundFilter(),
        LimitsFilter(),
        RobotFilter(),
        WorkspaceFilter(),
        IKFilter(),
        TaskIKFilter(),
        TorqueFilter(),
        JointLimitsFilter(),
    ]


# -- the funnel -----------------------------------------------------------------------------------


class Funnel:
    """Per filter: how many assemblies entered, passed, why the others failed, and the time spent (s).

    ``record(evaluation)`` counts one finished evaluation (its ``failed_filter``, ``reason_key`` and
    ``timings``); funnels of several workers ``merge``.
    """

    def __init__(self, names: Sequence[str]) -> None:
        self.names: list[str] = list(names)
        self.entered: dict[str, int] = dict.fromkeys(self.names, 0)
        self.passed: dict[str, int] = dict.fromkeys(self.names, 0)
        self.reasons: dict[str, Counter[str]] = {n: Counter() for n in self.names}
        self.time: dict[str, float] = dict.fromkeys(self.names, 0.0)

    def record(self, failed_filter: str | None, reason_key: str = "", timings: Sequence[float] = ()) -> None:
        """Count one candidate that failed at ``failed_filter`` (None: passed every filter)."""
        for k, name in enumerate(self.names):
            self.entered[name] += 1
            if k < len(timings):
                self.time[name] += timings[k]
            if name == failed_filter:
                self.reasons[name][reason_key] += 1
                return
            self.passed[name] += 1

    def record_evaluation(self, ev: Any) -> None:
        """Count an :class:`~.evaluate.Evaluation`."""
        self.record(ev.failed_filter, ev.reason_key, ev.timings)

    def merge(self, other: Funnel) -> Funnel:
        """Add another funnel's counts (same filters) to this one; returns self."""
        if other.names != self.names:
            raise InputError("cannot merge funnels of different filter chains", value=other.names)
        for n in self.names:
            self.entered[n] += other.entered[n]
            self.passed[n] += other.passed[n]
            self.reasons[n].update(other.reasons[n])
            self.time[n] += other.time[n]
        return self

    def failed(self, name: str) -> int:
        return self.entered[name] - self.passed[name]

    def pass_rate(self, name: str) -> float:
        """Share of the assemblies entering this filter that passed it (nan if none entered)."""
        e = self.entered[name]
        return self.passed[name] / e if e else math.nan

    @property
    def total(self) -> int:
        """Candidates counted."""
        return self.entered[self.names[0]] if self.names else 0

    @property
    def valid(self) -> int:
        """Candidates that passed every filter."""
        return self.passed[self.names[-1]] if self.names else 0

    def rows(self) -> list[dict]:
        """One dict per filter (name, entered, passed, failed, pass_rate, time, reasons most common first),
        ready for a funnel plot."""
        return [
            {
                "name": n,
                "entered": self.entered[n],
                "passed": self.passed[n],
                "failed": self.failed(n),
                "pass_rate": self.pass_rate(n),
                "time": self.time[n],
                "reasons": dict(self.reasons[n].most_common()),
            }
            for n in self.names
        ]

    def to_json(self) -> dict:
        return {
            "filters": [
                {
                    "name": n,
                    "entered": self.entered[n],
                    "passed": self.passed[n],
                    "time": self.time[n],
                    "reasons": dict(self.reasons[n].most_common()),
                }
                for n in self.names
            ]
        }

    @classmethod
    def from_json(cls, data: dict) -> Funnel:
        rows = data["filters"]
        f = cls([r["name"] for r in rows])
        for r in rows:
            n = r["name"]
            f.entered[n], f.passed[n], f.time[n] = int(r["entered"]), int(r["passed"]), float(r.get("time", 0.0))
            f.reasons[n] = Counter({str(k): int(v) for k, v in r.get("reasons", {}).items()})
        return f

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Funnel):
            return NotImplemented
        return (self.names, self.entered, self.passed, self.reasons) == (
            other.names,
            other.entered,
            other.passed,
            other.reasons,
        )

    __hash__ = None  # type: ignore[assignment]

    def summary(self) -> str:
        """A readable table: per filter entered → passed (rate) and the most common reasons."""
        lines = []
        for r in self.rows():
            rate = "-" if math.isnan(r["pass_rate"]) else f"{100 * r['pass_rate']:.1f}%"
            reasons = ", ".join(f"{k} ×{v}" for k, v in list(r["reasons"].items())[:3])
            lines.append(
                f"{r['name']:>12}: {r['entered']:>8} → {r['passed']:>8} ({rate:>6}, {r['time']:.2f} s)"
                + (f"  {reasons}" if reasons else "")
            )
        return "\n".join(lines)

    def __repr__(self) -> str:
        return f"Funnel({', '.join(f'{n} {self.passed[n]}/{self.entered[n]}' for n in self.names)})"


# -- the chain ------------------------------------------------------------------------------------


class FilterChain:
    """Runs filters in order on a :class:`Candidate`, stopping at the first that fails, and keeps a :class:`Funnel`.

    Args:
        task, db: the task and the module set.
        cost: an assembly-level cost (CostFunction or descriptor, default ``"mass"``); terms that need a
            trajectory are refused (InputError).
        config: a :class:`FilterConfig`.
        filters: the filter objects (default: :func:`default_filters`); custom filters may subclass
            :class:`Filter` and read ``candidate.ctx``.
    """

    def __init__(
        self,
        task: Task,
        db: ModulesDB,
        cost: CostFunction | str | None = "mass",
        config: FilterConfig | None = None,
        filters: Sequence[Filter] | None = None,
    ) -> None:
        self.config = config if config is not None else FilterConfig()
        self.ctx = TaskContext(task, db, cost, self.config)
        self.filters: list[Filter] = list(filters) if filters is not None else default_filters()
        names = [f.name for f in self.filters]
        if len(set(names)) != len(names) or not all(names):
            raise InputError("filters need distinct, non-empty names", value=names)
        self.funnel = Funnel(names)

    @property
    def names(self) -> list[str]:
        return [f.name for f in self.filters]

    def candidate(self, ids: Sequence[str], bound: float = math.inf, seed: int | None = None) -> Candidate:
        """A fresh candidate for ``ids`` (``seed``: default ``config.seed``)."""
        s = self.config.seed if seed is None else int(seed)
        return Candidate(tuple(str(m) for m in ids), self.ctx, bound=float(bound), seed=s)

    def run(self, c: Candidate) -> tuple[bool, list[float]]:
        """Run the filters on a candidate: ``(passed every filter, seconds per entered filter)``."""
        timings: list[float] = []
        clock = time.perf_counter
        for f in self.filters:
            t0 = clock()
            ok = f(c)
            timings.append(clock() - t0)
            if not ok:
                c.failed_filter = f.name
                if not c.reason_key:
                    c.fail(f"{f.name} failed")
                self.funnel.record(f.name, c.reason_key, timings)
                return False, timings
        self.funnel.record(None, "", timings)
        return True, timings

    def __call__(self, ids: Sequence[str], bound: float = math.inf) -> Candidate:
        """Filter one assembly; returns the candidate with its verdict and intermediate results."""
        c = self.candidate(ids, bound)
        self.run(c)
        return c
