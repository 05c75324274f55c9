"""Issue 37 item 7: what ``goal_from_json`` refuses, every other route refuses too: a task-level constraint in any
goal constructor, and a tolerated pose relative to a frame nobody defined (constructor without frames, JSON
without frames, JSON with frames that lack it)."""

from __future__ import annotations

import numpy as np
import pytest

from timor_core.errors import FormatError, TimorError, ValidationError
from timor_core.kinematics.frames import FrameTree
from timor_core.kinematics.pose import ToleratedPose
from timor_core.task.constraints import (
    AllGoalsFulfilled,
    BasePlacement,
    CollisionFree,
    GenericConstraint,
    GoalOrder,
    JointLimits,
)
from timor_core.task.goals import At, Follow, Pause, Reach, ReturnTo, goal_from_json

POSE = ToleratedPose(np.eye(4))
TASK_LEVEL = [
    GoalOrder(order=["a", "b"]),
    BasePlacement(pose=ToleratedPose(np.eye(4))),
    AllGoalsFulfilled(),
    GenericConstraint(type_value="goalsBySameRobot"),
]
GOALS = [
    lambda cs: At("g", goal_pose=POSE, constraints=cs),
    lambda cs: Reach("g", goal_pose=POSE, constraints=cs),
    lambda cs: Pause("g", duration=1.0, constraints=cs),
    lambda cs: ReturnTo("g", constraints=cs),
    lambda cs: Follow("g", trajectory=[POSE], constraints=cs),
]


@pytest.mark.parametrize("make", GOALS)
@pytest.mark.parametrize("constraint", TASK_LEVEL, ids=lambda c: c.to_json()["type"])
def test_every_goal_constructor_refuses_task_level_constraints(make, constraint):
    with pytest.raises(ValidationError, match="task-level constraint") as err:
        make([constraint])
    assert constraint.to_json()["type"] in str(err.value)
    with pytest.raises(ValidationError, match="task-level constraint"):  # as the JSON route does
        goal_from_json({"ID": "g", "type": "pause", "duration": 1, "constraints": [constraint.to_json()]}, "$.goals[0]")


@pytest.mark.parametrize("make", GOALS)
def test_goal_level_constraints_are_still_taken(make):
    goal = make([CollisionFree(), JointLimits(parts_json=["q"])])
    assert [c.to_json()["type"] for c in goal.constraints] == ["collisionFree", "joint"]


def test_a_goal_constraint_must_be_a_constraint():
    with pytest.raises(ValidationError, match="Constraint objects"):
        At("g", goal_pose=POSE, constraints=[{"type": "collisionFree"}])  # type: ignore[list-item]


def test_a_pose_relative_to_an_undefined_frame_is_refused_in_every_route():
    nominal = np.eye(4)
    with pytest.raises(FormatError, match="no frames were given"):
        ToleratedPose(nominal, parent="table")
    frames = FrameTree()
    with pytest.raises(FormatError, match="unknown frame"):
        ToleratedPose(nominal, parent="table", frames=frames)
    spec = {"nominal": nominal.tolist(), "nominalParent": "table"}
    with pytest.raises(FormatError, match="no frames were given") as err:
        ToleratedPose.from_json(spec, "$.goals[0].goalPose")
    assert "$.goals[0].goalPose.nominalParent" in str(err.value)
    with pytest.raises(FormatError, match="unknown frame"):
        goal_from_json({"ID": "g", "type": "at", "goalPose": spec}, "$.goals[0]")
    with pytest.raises(FormatError, match="unknown frame"):
        goal_from_json({"ID": "g", "type": "at", "goalPose": spec}, "$.goals[0]", frames)
    frames.add("table", np.eye(4))
    pose = ToleratedPose(nominal, parent="table", frames=frames)  # defined: taken
    assert pose.parent == "table"
    assert ToleratedPose.from_json(spec, "$", frames).parent == "table"
    assert ToleratedPose(nominal).parent == "world" and issubclass(FormatError, TimorError)
