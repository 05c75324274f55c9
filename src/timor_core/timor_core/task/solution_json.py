"""Reading and writing the CoBRA solution layout: headers, joint order of branched robots, derivatives
of trajectories given without them, picking the task a solution names."""

from __future__ import annotations

import copy
import datetime
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.errors import InputError, ValidationError
from timor_core.kinematics.trajectory import Trajectory
from timor_core.task.task import Task

__all__ = [
    "HEADER_DEFAULTS",
    "in_joint_order",
    "is_branched",
    "parse_solution_header",
    "pick_task",
    "solution_header",
    "string_list",
    "today",
    "with_derivatives",
]

ModuleAssembly = Any  # a timor_core.model.assembly.ModuleAssembly

HEADER_DEFAULTS: dict[str, Any] = {
    "version": "2023",
    "author": [],
    "email": [],
    "affiliation": [],
    "publication": "",
    "date": None,  # today
    "computationTime": -1.0,
    "processorName": "",
    "notes": "",
    "tags": [],
}


def is_branched(assembly: ModuleAssembly) -> bool:
    links = assembly.tree().links
    parents = [link.parent for link in links if link.parent is not None]
    return len(parents) != len(set(parents))


def in_joint_order(
    trajectory: Trajectory, assembly: ModuleAssembly, stated: Any, legacy_breadth_first: bool
) -> Trajectory:
    """The trajectory with its columns in the robot's joint order (from ``jointOrder`` or the legacy order)."""
    ours = list(assembly.robot.joints)
    if stated is not None:
        names = [jf.string(v, f"$.jointOrder[{i}]") for i, v in enumerate(jf.array(stated, "$.jointOrder"))]
        if sorted(names) != sorted(ours):
            raise ValidationError(
                f"jointOrder must name each joint of the assembly once: {ours}", path="$.jointOrder", value=stated
            )
    elif legacy_breadth_first:
        names = list(assembly.tree().breadth_first_joints)
    else:
        return trajectory
    if names == ours or trajectory.q.ndim != 2 or trajectory.q.shape[1] != len(ours):
        return trajectory
    perm = [names.index(n) for n in ours]
    return replace(trajectory, q=trajectory.q[:, perm], dq=trajectory.dq[:, perm], ddq=trajectory.ddq[:, perm])


def today() -> str:
    return datetime.date.today().isoformat()


def solution_header(header: Mapping[str, Any] | None, task: Task) -> dict[str, Any]:
    out: dict[str, Any] = {"taskID": task.id}
    for k, v in HEADER_DEFAULTS.items():
        out[k] = today() if k == "date" else copy.deepcopy(v)
    if header:
        for k, v in header.items():
            out[str(k)] = copy.deepcopy(v)
    return out


def string_list(value: Any, path: str) -> list[str] | str:
    if isinstance(value, str):
        return value
    items = jf.array(value, path)
    return [jf.string(v, f"{path}[{i}]", nonempty=False) for i, v in enumerate(items)]


def parse_solution_header(d: dict) -> dict[str, Any]:
    """The CoBRA solution header fields of a solution JSON (taskID required), type-checked."""
    header: dict[str, Any] = {"taskID": jf.string(jf.req(d, "taskID", "$"), "$.taskID")}
    for key in ("version", "publication", "processorName", "notes"):
        if key in d:
            header[key] = jf.string(d[key], f"$.{key}", nonempty=False)
    for key in ("author", "email", "affiliation", "tags"):
        if key in d:
            header[key] = string_list(d[key], f"$.{key}")
    if "computationTime" in d:
        header["computationTime"] = jf.number(d["computationTime"], "$.computationTime")
    if "date" in d:
        date = jf.string(d["date"], "$.date")
        try:
            datetime.date.fromisoformat(date.replace("/", "-"))
        except ValueError:
            raise ValidationError("expected a date YYYY-MM-DD", path="$.date", value=date) from None
        header["date"] = date
    return header


def pick_task(task: Task | Mapping[str, Task], task_id: str) -> Task:
    if isinstance(task, Task):
        if task.id != task_id:
            raise ValidationError(
                f"the solution is for task {task_id!r}, not {task.id!r}", path="$.taskID", value=task_id
            )
        return task
    if isinstance(task, Mapping):
        if task_id not in task:
            raise ValidationError(
                f"no such task among the given ones ({', '.join(map(str, task)) or 'none'})",
                path="$.taskID",
                value=task_id,
            )
        return task[task_id]
    raise InputError("task must be a Task or a mapping of task IDs to tasks", value=task)


def with_derivatives(traj: dict) -> dict:
    """The trajectory JSON with dq / ddq derived by finite differences where the file omits them."""
    if "dq" in traj and "ddq" in traj:
        return traj
    out = dict(traj)
    try:
        t = np.asarray(traj["t"], dtype=float)
        q = np.asarray(traj["q"], dtype=float)
        if q.ndim == 1:
            q = q.reshape(-1, 1)
    except (KeyError, TypeError, ValueError):
        return traj  # Trajectory.from_json names what is missing or malformed

    def derive(a: np.ndarray) -> np.ndarray:
        if t.size < 2 or a.shape[0] != t.size or np.any(np.diff(t) <= 0):
            return np.zeros_like(a)
        return np.gradient(a, t, axis=0)

    if "dq" not in out:
        out["dq"] = derive(q).tolist()
    if "ddq" not in out:
        out["ddq"] = derive(np.asarray(out["dq"], dtype=float).reshape(q.shape)).tolist()
    return out
