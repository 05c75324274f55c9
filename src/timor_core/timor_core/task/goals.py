"""Goals of a task in the CoBRA format: at, reach, pause, returnTo, follow."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from timor_core.common import jsonfields as jf
from timor_core.errors import FormatError, ValidationError
from timor_core.kinematics.frames import FrameTree
from timor_core.kinematics.pose import ToleratedPose
from timor_core.limits import check_count
from timor_core.task.constraints import TASK_LEVEL_ONLY, Constraint, constraint_from_json

__all__ = ["Goal", "At", "Reach", "Pause", "ReturnTo", "Follow", "goal_from_json", "GOAL_TYPES"]


@dataclass(eq=False)
class Goal:
    """Base class of goals: an ID, goal-specific constraints, and lossless JSON."""

    id: str
    constraints: list[Constraint] = field(default_factory=list, kw_only=True)
    extra: dict = field(default_factory=dict, kw_only=True)
    has_constraints: bool = field(default=False, kw_only=True)
    type_name: ClassVar[str] = ""

    def __post_init__(self) -> None:
        """Refuse a task-level constraint (goal order, base placement, ...) as ``goal_from_json`` does."""
        for i, c in enumerate(self.constraints):
            ctype = c.to_json().get("type") if isinstance(c, Constraint) else None
            if not isinstance(c, Constraint) or ctype in TASK_LEVEL_ONLY:
                raise ValidationError(
                    "a task-level constraint cannot belong to a goal (put it in the task's constraints)"
                    if isinstance(c, Constraint) else "a goal's constraints must be Constraint objects",
                    path=f"goal.{self.id}.constraints[{i}].type", value=ctype if ctype is not None else repr(c),
                )  # fmt: skip

    def body_json(self) -> dict:
        """Type-specific fields."""
        return {}

    def to_json(self) -> dict:
        """The CoBRA JSON of this goal."""
        out: dict[str, Any] = {"ID": self.id, "type": self.type_name}
        if self.constraints or self.has_constraints:
            out["constraints"] = [c.to_json() for c in self.constraints]
        out.update(self.body_json())
        out.update(self.extra)
        return out


@dataclass(eq=False)
class At(Goal):
    """Be at a pose (within its tolerance) for at least one time step; the robot may be moving."""

    goal_pose: ToleratedPose | None = None
    type_name: ClassVar[str] = "at"

    def require_pose(self) -> ToleratedPose:
        """The goal pose; raises ValidationError if the goal has none (only possible when built in code)."""
        if self.goal_pose is None:
            raise ValidationError(f"{self.type_name} goal {self.id!r} has no goal pose", value=self.id)
        return self.goal_pose

    def body_json(self) -> dict:
        return {"goalPose": self.require_pose().to_json()}


@dataclass(eq=False)
class Reach(At):
    """Be at a pose (within its tolerance) and stand still there."""

    type_name: ClassVar[str] = "reach"


@dataclass(eq=False)
class Pause(Goal):
    """Stand still for ``duration`` seconds."""

    duration: float = 0.0
    type_name: ClassVar[str] = "pause"

    def body_json(self) -> dict:
        return {"duration": self.duration}


@dataclass(eq=False)
class ReturnTo(Goal):
    """Return to the configuration of an earlier goal (or the start, if ``return_to`` is None)."""

    return_to: str | None = None
    epsilon: float | None = None
    type_name: ClassVar[str] = "returnTo"

    def body_json(self) -> dict:
        out: dict[str, Any] = {}
        if self.return_to is not None:
            out["returnToGoal"] = self.return_to
        if self.epsilon is not None:
            out["epsilon"] = self.epsilon
        return out


@dataclass(eq=False)
class Follow(Goal):
    """Track a sequence of tolerated poses, one per task time step."""

    trajectory: list[ToleratedPose] = field(default_factory=list)
    trajectory_extra: dict = field(default_factory=dict)
    type_name: ClassVar[str] = "follow"

    def body_json(self) -> dict:
        return {"trajectory": {"pose": [p.to_json() for p in self.trajectory], **self.trajectory_extra}}


GOAL_TYPES = ("at", "reach", "pause", "returnTo", "follow")


def goal_from_json(data: Any, path: str, frames: FrameTree | None = None) -> Goal:
    """Parse one goal; unknown types raise FormatError naming the JSON path and the type."""
    d = jf.obj(data, path)
    gid = jf.string(jf.req(d, "ID", path), f"{path}.ID")
    gtype = jf.string(jf.req(d, "type", path), f"{path}.type")
    owner = f"goal.{gid}"
    constraints = [
        constraint_from_json(c, f"{path}.constraints[{i}]", frames, owner)
        for i, c in enumerate(jf.array(d.get("constraints", []), f"{path}.constraints"))
    ]
    has_constraints = "constraints" in d

    def rest(*keys: str) -> dict:
        return {k: v for k, v in d.items() if k not in ("ID", "type", "constraints", *keys)}

    if gtype in ("at", "reach"):
        pose = ToleratedPose.from_json(jf.req(d, "goalPose", path), f"{path}.goalPose", frames, owner)
        cls = At if gtype == "at" else Reach
        return cls(
            gid, goal_pose=pose, extra=rest("goalPose"), constraints=constraints, has_constraints=has_constraints
        )
    if gtype == "pause":
        duration = jf.number(jf.req(d, "duration", path), f"{path}.duration", min_value=0.0)
        check_count(duration, "max_duration_s", "a pause duration in seconds", path=f"{path}.duration")
        return Pause(
            gid, duration=duration, extra=rest("duration"), constraints=constraints, has_constraints=has_constraints
        )
    if gtype == "returnTo":
        target = d.get("returnToGoal")
        target = None if target is None else jf.string(target, f"{path}.returnToGoal")
        eps = jf.number(d["epsilon"], f"{path}.epsilon", min_value=0.0) if "epsilon" in d else None
        return ReturnTo(
            gid,
            return_to=target,
            epsilon=eps,
            extra=rest("returnToGoal", "epsilon"),
            constraints=constraints,
            has_constraints=has_constraints,
        )
    if gtype == "follow":
        traj = jf.obj(jf.req(d, "trajectory", path), f"{path}.trajectory")
        poses_json = jf.array(jf.req(traj, "pose", f"{path}.trajectory"), f"{path}.trajectory.pose")
        if not poses_json:
            raise ValidationError("a follow goal needs at least one pose", path=f"{path}.trajectory.pose", value=[])
        check_count(len(poses_json), "max_trajectory_samples", "the poses of a follow goal", path=f"{path}.trajectory")
        poses = [ToleratedPose.from_json(p, f"{path}.trajectory.pose[{i}]", frames) for i, p in enumerate(poses_json)]
        return Follow(
            gid,
            trajectory=poses,
            trajectory_extra={k: v for k, v in traj.items() if k != "pose"},
            extra=rest("trajectory"),
            constraints=constraints,
            has_constraints=has_constraints,
        )
    raise FormatError(f"unknown goal type (expected one of {', '.join(GOAL_TYPES)})", path=f"{path}.type", value=gtype)
