"""What the search filters share: their settings (FilterConfig), the task prepared once (TaskContext), and one
assembly on its way through the filters (Candidate, with a GoalIK record per pose goal, and how its modules join:
SerialJoin, found from the IDs so that the filters up to ``family`` need no ModuleAssembly)."""

from __future__ import annotations

import math
import re
import zlib
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.errors import AssemblyError, InputError, TimorError
from timor_core.limits import check_count
from timor_core.task import At, CollisionFree, Follow, ValidJointAngles
from timor_core.task.costs import CostFunction
from timor_core.task.feedback import assembly_cost, task_base_placement

if TYPE_CHECKING:
    from timor_core.kinematics.build import SerialArm
    from timor_core.kinematics.robot import PinRobot
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.model.db import ModulesDB
    from timor_core.model.module import Module
    from timor_core.task import Constraint, Task, ToleratedPose

__all__ = ["FilterConfig", "GoalIK", "PoseGoal", "SerialJoin", "TaskContext", "Candidate", "reason_category"]


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
        proof_budget: boxes of joint angles per goal the workspace filter may spend proving a goal out of reach
            at its orientation before any IK (``search.reach_proof``; 0: no proof). A proof only refuses what
            the IK could never reach, so verdicts do not change; the IK time they take does.
        family_proof: prove goals out of reach for whole families of chains (``search.family_proof``: same joints,
            other link lengths) and refuse their members by a look-up, every goal in task order. None: the
            optimizer decides (on in the exhaustive search; off in the GA, whose fitness ranks a refusal by the
            filter that made it, which this would change). Verdicts do not change.
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
    proof_budget: int = 4096
    family_proof: bool | None = None

    @property
    def family_filter(self) -> bool:
        """The family filter proves the goals (``family_proof`` and ``stop_early`` on, a proof budget); the
        per-assembly proof of the robot and workspace filters is then left out."""
        return bool(self.family_proof) and self.stop_early and self.proof_budget > 0

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
            "proof_budget": (0, 10**7),
            "seed": (0, 2**63 - 1),
        }
        for name, (lo, hi) in ints.items():
            v = getattr(self, name)
            if v is None and name not in ("retries", "seed", "follow_samples", "proof_budget"):
                continue
            if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
                raise InputError(f"filter setting {name} must be an integer in {lo}..{hi}", value=v)
        if self.family_proof is not None and not isinstance(self.family_proof, bool):
            raise InputError("filter setting family_proof must be true, false or null", value=self.family_proof)
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
    def from_json(cls, d: Any, path: str = "$") -> GoalIK:
        """From :meth:`to_json`'s JSON; FormatError/ValidationError naming the field below ``path``."""
        d = jf.obj(d, path)
        q = d.get("q")
        q = None if q is None else jf.vector(q, f"{path}.q").tolist()
        success = jf.boolean(jf.req(d, "success", path), f"{path}.success")
        reason = jf.string(d.get("reason", ""), f"{path}.reason", nonempty=False)
        return cls(q, success, reason, jf.string(d.get("stage", ""), f"{path}.stage", nonempty=False))


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


@dataclass(slots=True)
class SerialJoin:
    """How the modules of a serial assembly join, found from their IDs (what ``ModuleAssembly.from_serial_modules``
    builds, without building it): the modules, the connector each is entered by (the first module's base
    connector, then each next module's connector to its predecessor) and the degrees of freedom."""

    modules: tuple[Module, ...]
    entries: tuple[str, ...]
    dof: int

    @classmethod
    def of(cls, assembly: ModuleAssembly) -> SerialJoin:
        """The join of a serial assembly already built."""
        entries = (assembly.base_connector[1], *(c[3] for c in assembly.connections))
        return cls(tuple(assembly.modules), entries, assembly.dof)


class _Joiner:
    """Joins serial assemblies from their IDs with per-module and per-pair look-ups (a serial assembly joins each
    neighbouring pair in one way, given the connector the first of them is entered by); None where
    ``ModuleAssembly.from_serial_modules`` would raise (the ``assembly`` filter then calls it for the reason)."""

    def __init__(self, db: ModulesDB) -> None:
        self.db = db
        self.modules: dict[str, tuple[Module, int, str | None]] = {}  # ID: module, DOF, its one base connector
        self.pairs: dict[tuple[str, str, str], str | None] = {}  # (a, a's entry, b): b's entry (None: not one way)

    def __call__(self, ids: tuple[str, ...]) -> SerialJoin | None:
        modules, pairs = self.modules, self.pairs
        try:
            check_count(len(ids), "max_modules", "the number of modules in an assembly")
            try:
                found = [modules[m] for m in ids]
            except KeyError:
                found = [modules[m] if m in modules else self._module(m) for m in ids]
        except TimorError:
            return None
        if not found or found[0][2] is None:
            return None
        entry = found[0][2]
        entries = [entry]
        for a, b in zip(ids, ids[1:]):
            key = (a, entry, b)
            nxt = pairs[key] if key in pairs else self._pair(key)
            if nxt is None:
                return None
            entries.append(nxt)
            entry = nxt
        dof = sum([f[1] for f in found])
        try:
            check_count(dof, "max_dof", "the degrees of freedom of an assembly")
        except TimorError:
            return None
        return SerialJoin(tuple([f[0] for f in found]), tuple(entries), dof)  # type: ignore[arg-type]

    def _module(self, m: str) -> tuple[Module, int, str | None]:
        module = self.db.by_id[m]
        base = module.base_connectors
        found = self.modules[m] = (module, module.dof, base[0].id if len(base) == 1 else None)
        return found

    def _pair(self, key: tuple[str, str, str]) -> str | None:
        a, entry, b = key
        options = [cb for ca, cb in self.db.connections_between(a, b) if ca != entry]
        found = self.pairs[key] = options[0] if len(options) == 1 else None
        return found


class TaskContext:
    """What every filter needs to know about the task, prepared once per chain.

    ``placement``: the nominal pose of the task's basePlacement constraint (else None = identity);
    ``margin``: the largest collisionFree safety margin; ``goals``: the pose goals in task order;
    ``angle_limits``: task-level validJointAngles constraints.
    """

    def __init__(self, task: Task, db: ModulesDB, cost: CostFunction | str | None, config: FilterConfig) -> None:
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
        self.family_proofs: Any = None  # the family filter's proofs (search.family_proof), made on first use
        self.obstacle_boxes: Any = None  # the obstacle boxes of the sweep proofs (search.sweep_proof)
        self.sweeps: dict[tuple[int, Any], list[int]] = {}  # per goal and family: sweep proofs proven, early misses
        self.sweep_starts: Any = None  # the sweep proofs' boxes for chains near (search.sweep_proof), made on first use
        self.module_sweeps: Any = None  # the chains' bodies from their modules (search.sweep_proof), made on first use
        self.arm_segments: Any = None  # the chains' arms from their segments (search.arm_segments), made on first use
        self.join = _Joiner(db)


_STAGES = {"ik": 1, "ik_task": 2, "torques": 3, "joint_limits": 4}


@dataclass
class Candidate:
    """One assembly on its way through the filters; filters read and write its intermediate results."""

    ids: tuple[str, ...]
    ctx: TaskContext
    bound: float = math.inf
    seed: int = 0
    assembly: ModuleAssembly | None = None
    """The assembly, built on demand (:meth:`require_assembly`) once the ``assembly`` filter has joined the IDs."""
    robot: PinRobot | None = None
    cost: float | None = None
    goals: dict[str, GoalIK] = field(default_factory=dict)
    failed_filter: str | None = None
    reason_key: str = ""
    reason: str = ""
    beyond_reach: tuple[str, str, str] | None = None
    """``(goal, short reason, reason)``: a goal the modules alone prove out of reach (``search.quick_reach``); the
    ``robot`` filter then leaves the robot unbuilt and the ``workspace`` filter refuses the assembly with that
    reason."""
    join: SerialJoin | None = None
    """How the modules join (the ``assembly`` filter's record)."""
    reached: set[int] = field(default_factory=set)
    """The goals (indices) the ``family`` filter found a configuration for within its proofs' slacks (a witness,
    ``search.family_proof``): no sound reach bound refuses them, so the ``robot`` and ``workspace`` filters leave
    their poses (not their trajectories) out."""
    family: tuple[bytes, ...] | None = None
    """The chain's family (``search.family_proof``: its cut's rotations), where the ``family`` filter cut it."""
    witnesses: dict[int, Any] = field(default_factory=dict)
    """Per goal (index), a configuration of its chain within the proofs' slacks of it that the ``family`` filter found
    (``search.family_proof``; the joint angles of its cut's chain): no sweep proof refuses it unless the body
    alone does (``search.sweep_proof``)."""
    swept: set[int] = field(default_factory=set)
    """The goals (indices) a sweep proof (``search.sweep_proof``) was run for on this robot (it is not run twice)."""
    sweep: Any = None
    """The body of its chain as the sweep proofs take it (``search.sweep_proof.candidate_sweep``; from the modules
    alone where it can be), made on first use; False: the modules give none."""
    within_reach: bool = False
    """The ``robot`` filter found every goal the workspace filter checks within its bounds from the modules alone
    (``search.quick_reach.first_unreachable``: the built robot's to rounding): with the robot unbuilt (``arm``), that
    filter does not check them again."""
    arm: SerialArm | None = None
    """Its robot's kinematics to the TCP without the robot (``kinematics.build.SerialArm``), where the ``robot``
    filter made that instead of the robot (``search.arm_segments.build_kinematics``): the robot is built on first
    use."""

    def require_assembly(self) -> ModuleAssembly:
        """The assembly (built now if the ``assembly`` filter only joined the IDs); InputError if no earlier filter
        in the chain joined or built it."""
        if self.assembly is None and self.join is not None:
            from timor_core.model.assembly import ModuleAssembly

            self.assembly = ModuleAssembly.from_serial_modules(self.ctx.db, self.ids, self.ctx.placement)
        if self.assembly is None:
            raise InputError("no assembly yet: the 'assembly' filter must come earlier in the chain", value=self.ids)
        return self.assembly

    def require_join(self) -> SerialJoin:
        """How the modules join (the ``assembly`` filter's record, else from an assembly set on the candidate);
        InputError if there is neither."""
        if self.join is None and self.assembly is not None:
            self.join = SerialJoin.of(self.assembly)
        if self.join is None:
            raise InputError("no assembly yet: the 'assembly' filter must come earlier in the chain", value=self.ids)
        return self.join

    def build_robot(self) -> bool:
        """Build the robot model once (at the task's base placement, with its gravity); False (the candidate failed,
        the reason says why) if it does not build or has no TCP."""
        if self.robot is not None:
            return True
        assembly = self.require_assembly()
        try:
            robot = assembly.to_pin_robot(self.ctx.placement)
            if not robot.has_end_effector:
                raise AssemblyError("this robot has no end effector (no free 'eef' connector): there is no tool0")
        except TimorError as exc:
            return self.no_model(exc)
        robot.model.gravity.linear = self.ctx.gravity
        self.robot = robot
        return True

    def no_model(self, exc: TimorError) -> bool:
        """Fail: the robot's model (or its arm) does not build, for the reason ``exc`` gives."""
        return self.fail(f"no robot model: {type(exc).__name__}", f"no robot model: {exc}")

    def require_robot(self) -> PinRobot:
        """The robot model built by the ``robot`` filter (built now if that filter deferred it); InputError if no
        earlier filter in the chain built it."""
        deferred = self.beyond_reach is not None or self.arm is not None
        if self.robot is None and deferred and not self.build_robot():
            raise InputError(f"no robot model: {self.reason}", value=self.ids)
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
        words = [self.seed & 0xFFFFFFFF, crc, _STAGES.get(stage, 0), goal_index, attempt]  # (each below 2**32)
        # the same entropy words as the list's (one word each), ~3 us sooner than numpy coerces a list's ints
        return np.random.default_rng(np.array(words, dtype=np.uint32))

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
