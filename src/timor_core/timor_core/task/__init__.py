"""Tasks in the CoBRA task format: goals, obstacles, constraints and tolerances.

``from timor_core.task import Task``; ``Task.from_json_file(path)``, ``task.to_json_file(path)``.
"""

from .constraints import (
    AllGoalsFulfilled,
    BasePlacement,
    CollisionFree,
    Constraint,
    EndEffector,
    GoalOrder,
    JointLimits,
    SelfCollisionFree,
    ValidJointAngles,
)
from .frames import FrameTree
from .goals import At, Follow, Goal, Pause, Reach, ReturnTo
from .obstacle import Obstacle
from .pose import ToleratedPose
from .task import Task, TaskHeader, embedded_task_names

__all__ = [
    "Task",
    "TaskHeader",
    "embedded_task_names",
    "Obstacle",
    "FrameTree",
    "ToleratedPose",
    "Goal",
    "At",
    "Reach",
    "Pause",
    "ReturnTo",
    "Follow",
    "Constraint",
    "JointLimits",
    "SelfCollisionFree",
    "CollisionFree",
    "AllGoalsFulfilled",
    "GoalOrder",
    "BasePlacement",
    "ValidJointAngles",
    "EndEffector",
]
