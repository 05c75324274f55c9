"""Tasks in the CoBRA task format: goals, obstacles, constraints and tolerances.

``from timor_core.task import Task``; ``Task.from_json_file(path)``, ``task.to_json_file(path)``.
"""

from timor_core.kinematics.frames import FrameTree
from timor_core.kinematics.pose import ToleratedPose
from timor_core.task.constraints import (
    AllGoalsFulfilled,
    BasePlacement,
    CollisionFree,
    Constraint,
    EndEffector,
    GoalOrder,
    GoalOrderConstraint,
    JointLimits,
    SelfCollisionFree,
    ValidJointAngles,
)
from timor_core.task.goals import At, Follow, Goal, Pause, Reach, ReturnTo
from timor_core.task.obstacle import Obstacle
from timor_core.task.task import Task, TaskHeader, embedded_task_names

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
    "GoalOrderConstraint",
    "BasePlacement",
    "ValidJointAngles",
    "EndEffector",
]
