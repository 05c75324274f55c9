"""The fields of a task file no reader uses: kept for a lossless round trip, but a typo of an optional field
(``"safetymargin": 0.05``) reads as the field left out (a 0 m margin), so ``timor task validate`` names them.

The parsed task knows them: each header, goal, tolerated pose, constraint, obstacle and geometry keeps the fields it
does not read in its ``extra``.
"""

from __future__ import annotations

from collections.abc import Iterator

from timor_core.common.jsonfields import unknown_field
from timor_core.model.geometry import GEOMETRY_PARAMETERS, unread_fields
from timor_core.task.constraints import Constraint, GenericConstraint
from timor_core.task.task import Task

__all__ = ["unknown_fields"]

HEADER_FIELDS = ("version", "date", "author", "email", "affiliation", "description")
"""Header fields of CoBRA task files that timor keeps but does not read (not typos)."""
OBSTACLE_FIELDS = ("pose", "acknowledgement")
"""Obstacle fields of the CoBRA tasks (``simple/PTP_2.json``) timor keeps but does not read: the geometries carry
their own world poses."""

KNOWN_FIELDS = (
    *HEADER_FIELDS,
    *OBSTACLE_FIELDS,
    *("ID", "type", "name", "taskName", "tags", "timeStepSize", "gravity", "constraints"),
    *("goalPose", "nominal", "nominalParent", "toleranceProjection", "tolerance", "toleranceFrame"),
    *("duration", "returnToGoal", "epsilon", "trajectory"),
    *("safetyMargin", "parts", "order", "pose", "limits", "coterminal", "v_min", "v_max", "o_min", "o_max"),
    *("collision", "visual", "parameters"),
    *sorted({p for names in GEOMETRY_PARAMETERS.values() for p in names}),
)
"""Every field name a task file's parts are read by: the names an unknown field is compared with."""


def _keys(extra: dict, also_known: tuple[str, ...] = ()) -> list[str]:
    return [k for k in extra if not k.startswith("_") and k not in also_known]


def _constraint(c: Constraint, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(c, GenericConstraint):  # a type timor does not evaluate: its fields are its own
        return
    yield from ((path, k) for k in _keys(c.extra))
    pose = getattr(c, "pose", None)
    if pose is not None and hasattr(pose, "extra"):
        yield from ((f"{path}.pose", k) for k in _keys(pose.extra))


def _found(task: Task) -> Iterator[tuple[str, str]]:
    yield from (("$.header", k) for k in _keys(task.header.extra, HEADER_FIELDS))
    for i, goal in enumerate(task.goals):
        yield from ((f"$.goals[{i}]", k) for k in _keys(goal.extra))
        pose = getattr(goal, "goal_pose", None)
        if pose is not None:
            yield from ((f"$.goals[{i}].goalPose", k) for k in _keys(pose.extra))
        for j, c in enumerate(goal.constraints):
            yield from _constraint(c, f"$.goals[{i}].constraints[{j}]")
    for i, c in enumerate(task.constraints):
        yield from _constraint(c, f"$.constraints[{i}]")
    for i, obstacle in enumerate(task.obstacles):
        yield from ((f"$.obstacles[{i}]", k) for k in _keys(obstacle.extra, OBSTACLE_FIELDS))
        for part in ("collision", "visual"):
            for j, geometry in enumerate(getattr(obstacle, part) or ()):
                yield from ((f"$.obstacles[{i}].{part}[{j}]{below}", k) for below, k in unread_fields(geometry))


def unknown_fields(task: Task) -> list[str]:
    """One line per field below the top level that no reader of ``task`` uses: its JSON path and name, and the
    known field it is closest to (``$.constraints[2]: unknown field 'safetymargin', kept but not read (did you mean
    'safetyMargin'?)``).

    Paths count the items of each list as the file does.
    """
    return [f"{path}: {unknown_field(key, KNOWN_FIELDS)}" for path, key in _found(task)]
