"""Task: a CoBRA task file (header, frames, obstacles, goals, constraints), read and written losslessly.

A task's ``header.ID`` is its path below the task folder without ``.json`` (``simple/PTP_1`` lives
in ``tasks/simple/PTP_1.json``); asset paths in the task are relative to that task folder.
"""

from __future__ import annotations

import filecmp
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.common.fileio import atomic_copy, write_json
from timor_core.errors import InputError, ValidationError
from timor_core.kinematics.frames import FrameTree
from timor_core.limits import check_count, limits
from timor_core.model.geometry import Mesh
from timor_core.task.constraints import BasePlacement, Constraint, GoalOrder, constraint_from_json
from timor_core.task.goals import Goal, ReturnTo, goal_from_json
from timor_core.task.obstacle import Obstacle

__all__ = ["TaskHeader", "Task", "embedded_task_names"]

C = TypeVar("C", bound=Constraint)


@dataclass
class TaskHeader:
    """Task metadata; ``time_step`` and ``gravity`` matter for solutions, the rest is kept as given."""

    id: str
    name: str = ""
    tags: list[str] = field(default_factory=list)
    time_step: float = 0.01
    gravity: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, -9.81]))
    extra: dict = field(default_factory=dict)
    _present: tuple[str, ...] = ()

    @classmethod
    def from_json(cls, data: Any, path: str = "$.header") -> TaskHeader:
        """Parse the header (``ID`` required)."""
        d = jf.obj(data, path)
        tid = jf.string(jf.req(d, "ID", path), f"{path}.ID")
        name = jf.string(d.get("taskName", tid), f"{path}.taskName", nonempty=False)
        tags = [jf.string(t, f"{path}.tags[{i}]") for i, t in enumerate(jf.array(d.get("tags", []), f"{path}.tags"))]
        step = jf.number(d.get("timeStepSize", 0.01), f"{path}.timeStepSize")
        if step <= 0:
            raise ValidationError("timeStepSize must be positive", path=f"{path}.timeStepSize", value=step)
        lim = limits()
        if not lim.min_time_step_s <= step <= lim.max_duration_s:
            raise ValidationError(
                f"timeStepSize must be between {lim.min_time_step_s:g} s and {lim.max_duration_s:g} s (limits "
                "min_time_step_s, max_duration_s; see timor_core.limits)",
                path=f"{path}.timeStepSize",
                value=step,
            )
        gravity = jf.vector(d.get("gravity", [0.0, 0.0, -9.81]), f"{path}.gravity", 3)
        present = tuple(k for k in ("taskName", "tags", "timeStepSize", "gravity") if k in d)
        extra = {k: v for k, v in d.items() if k not in ("ID", "taskName", "tags", "timeStepSize", "gravity")}
        return cls(tid, name, tags, step, gravity, extra, present)

    def to_json(self) -> dict:
        """The CoBRA JSON header."""
        out: dict[str, Any] = {"ID": self.id}
        values = {
            "taskName": self.name,
            "tags": list(self.tags),
            "timeStepSize": self.time_step,
            "gravity": [float(g) for g in self.gravity],
        }
        for key, value in values.items():
            if key in self._present or key == "taskName":
                out[key] = value
        out.update(self.extra)
        return out


class Task:
    """What a robot must do: reach goals among obstacles under constraints."""

    def __init__(
        self,
        header: TaskHeader | Mapping[str, Any],
        obstacles: list[Obstacle] | None = None,
        goals: list[Goal] | None = None,
        constraints: list[Constraint] | None = None,
        frames: FrameTree | None = None,
        *,
        source: Path | None = None,
        base_dir: Path | None = None,
        extra: dict | None = None,
    ) -> None:
        if isinstance(header, Mapping):  # the CoBRA header fields ({"ID": ..., "timeStepSize": ...}), as timor-python
            header = TaskHeader.from_json(dict(header))
        elif not isinstance(header, TaskHeader):
            raise InputError("a task's header is a TaskHeader or a dict of the CoBRA header fields", value=header)
        self.header = header
        self.obstacles = list(obstacles or [])
        self.goals = list(goals or [])
        self.constraints = list(constraints or [])
        self.frames = frames or FrameTree()
        self.source = source
        self.base_dir = base_dir
        self.extra = dict(extra or {})
        self._check_ids()

    def _check_ids(self) -> None:
        seen: set[str] = set()
        for i, g in enumerate(self.goals):
            if g.id in seen:
                raise ValidationError("duplicate goal ID", file=self.source, path=f"$.goals[{i}].ID", value=g.id)
            seen.add(g.id)
        for i, g in enumerate(self.goals):
            if isinstance(g, ReturnTo) and g.return_to is not None and (g.return_to not in seen or g.return_to == g.id):
                raise ValidationError(
                    "returnToGoal must name another goal of the task",
                    file=self.source,
                    path=f"$.goals[{i}].returnToGoal",
                    value=g.return_to,
                )
        for i, c in enumerate(self.constraints):
            if isinstance(c, GoalOrder):
                for k, gid in enumerate(c.order):
                    if gid not in seen:
                        raise ValidationError(
                            "goal order names an unknown goal",
                            file=self.source,
                            path=f"$.constraints[{i}].order[{k}]",
                            value=gid,
                        )
        seen_obs: set[str] = set()
        for i, o in enumerate(self.obstacles):
            if o.id in seen_obs:
                raise ValidationError(
                    "duplicate obstacle ID", file=self.source, path=f"$.obstacles[{i}].ID", value=o.id
                )
            seen_obs.add(o.id)

    # -- access ------------------------------------------------------------------------------------
    @property
    def id(self) -> str:
        """The task's ID (its path below the task folder)."""
        return self.header.id

    @property
    def name(self) -> str:
        """The task's readable name."""
        return self.header.name

    def goal(self, goal_id: str) -> Goal:
        """A goal by ID."""
        for g in self.goals:
            if g.id == goal_id:
                return g
        raise InputError("no such goal", value=goal_id)

    @property
    def goals_by_id(self) -> dict[str, Goal]:
        """The goals by ID (in task order)."""
        return {g.id: g for g in self.goals}

    @property
    def base_placement(self) -> BasePlacement | None:
        """The basePlacement constraint, if any."""
        return next((c for c in self.constraints if isinstance(c, BasePlacement)), None)

    def constraints_of(self, kind: type[C]) -> list[C]:
        """All task-level constraints of one class."""
        return [c for c in self.constraints if isinstance(c, kind)]

    def visualize(self, **kwargs):
        """Show the task in the browser viewer (needs the ``viz`` extra); returns the Viewer."""
        from timor_core.viz.viewer import show_task  # delegation (docs/architecture.md)

        return show_task(self, **kwargs)

    def __repr__(self) -> str:
        return (
            f"Task(id={self.id!r}, goals={len(self.goals)}, obstacles={len(self.obstacles)},"
            f" constraints={len(self.constraints)})"
        )

    # -- JSON --------------------------------------------------------------------------------------
    @classmethod
    def from_json_data(
        cls,
        data: Any,
        *,
        source: Path | None = None,
        base_dir: Path | None = None,
        missing_assets: str = "error",
    ) -> Task:
        """Parse a task. Assets resolve in ``base_dir``; ``missing_assets="skip"`` logs and skips absent meshes."""
        try:
            d = jf.obj(data, "$")
            header = TaskHeader.from_json(jf.req(d, "header", "$"))
            frames = FrameTree.from_json(d.get("frames", {}))
            obstacles_json = jf.array(d.get("obstacles", []), "$.obstacles")
            check_count(len(obstacles_json), "max_obstacles", "the number of obstacles", path="$.obstacles")
            obstacles = [
                Obstacle.from_json(o, f"$.obstacles[{i}]", base_dir, source, missing_assets)
                for i, o in enumerate(obstacles_json)
            ]
            goals_json = jf.array(d.get("goals", []), "$.goals")
            check_count(len(goals_json), "max_goals", "the number of goals", path="$.goals")
            goals = [goal_from_json(g, f"$.goals[{i}]", frames) for i, g in enumerate(goals_json)]
            constraints = [
                constraint_from_json(c, f"$.constraints[{i}]", frames)
                for i, c in enumerate(jf.array(d.get("constraints", []), "$.constraints"))
            ]
        except InputError as exc:
            raise exc.located(file=source) from None
        present = tuple(k for k in ("frames", "obstacles", "goals", "constraints") if k in d)
        extra = {k: v for k, v in d.items() if k not in ("header", "frames", "obstacles", "goals", "constraints")}
        extra["_present"] = present
        extra["_order"] = list(d.keys())
        return cls(header, obstacles, goals, constraints, frames, source=source, base_dir=base_dir, extra=extra)

    @classmethod
    def from_json_file(
        cls,
        path: str | Path,
        package_dir: str | Path | None = None,
        *,
        task_dir: str | Path | None = None,
        missing_assets: str = "error",
    ) -> Task:
        """Load a task file; the task folder is derived from ``header.ID`` unless ``task_dir`` is given
        (``package_dir``, timor-python's name of it, also as the second argument)."""
        if package_dir is not None:
            if task_dir is not None:
                raise InputError("give task_dir or timor-python's package_dir, not both", value=str(package_dir))
            task_dir = package_dir
        path = Path(path)
        data = jf.load_json_file(path)
        base = Path(task_dir) if task_dir is not None else _task_dir(path, data)
        return cls.from_json_data(data, source=path, base_dir=base, missing_assets=missing_assets)

    @classmethod
    def from_id(cls, task_id: str, package_dir: str | Path) -> Task:
        """The task ``<package_dir>/<task_id>.json`` (timor-python's call; the ID may hold folders: ``simple/PTP_1``,
        but not leave ``package_dir``)."""
        path = Path(package_dir) / f"{task_id}.json"
        if not path.resolve().is_relative_to(Path(package_dir).resolve()):
            raise InputError(f"task ID {task_id!r} leaves the package folder {str(package_dir)!r}", value=task_id)
        return cls.from_json_file(path, task_dir=package_dir)

    @classmethod
    def from_name(cls, name: str) -> Task:
        """Load a task shipped with timor_core (see ``embedded_task_names()``), e.g. ``"pick_and_place"``."""
        if not isinstance(name, str) or name not in embedded_task_names():  # a name, never a path
            raise InputError(f"no embedded task named {name!r}; available: {', '.join(embedded_task_names())}")
        entry = _embedded_tasks() / f"{name}.json"
        if not entry.is_file():
            raise InputError(f"no embedded task named {name!r}; available: {', '.join(embedded_task_names())}")
        with resources.as_file(entry) as file:
            return cls.from_json_file(file, task_dir=file.parent)

    def to_json_data(self) -> dict:
        """The CoBRA JSON of the task (same keys and order as it was read)."""
        present = self.extra.get("_present", ("obstacles", "goals", "constraints"))
        parts: dict[str, Any] = {"header": self.header.to_json()}
        frames = self.frames.to_json()
        if frames or "frames" in present:
            parts["frames"] = frames
        for key, items in (("obstacles", self.obstacles), ("goals", self.goals), ("constraints", self.constraints)):
            if items or key in present:
                parts[key] = [x.to_json() for x in items]
        parts.update({k: v for k, v in self.extra.items() if not k.startswith("_")})
        order = [k for k in self.extra.get("_order", []) if k in parts] + [
            k for k in parts if k not in self.extra.get("_order", [])
        ]
        return {k: parts[k] for k in order}

    def to_json_file(self, path: str | Path, *, copy_assets: bool = True) -> Path:
        """Write the task atomically (temp file, then rename) and carry its mesh assets along.

        ``path`` may be a folder: the task is then written to ``<folder>/<header.ID>.json``, where loading it
        finds its task folder again. Mesh files are copied to where the saved task will look for them (relative
        to its task folder, as in the source), so a task saved elsewhere reloads with its obstacles.
        """
        path = Path(path)
        if path.is_dir():
            path = path / f"{safe_relative(self.id, 'the task ID', file=self.source)}.json"
        data = self.to_json_data()
        if copy_assets:
            _copy_assets(self, _task_dir(path, data), path)
        return write_json(path, data)

    def meshes(self) -> list[Mesh]:
        """Every mesh geometry of the task's obstacles (collision and visual)."""
        return [g for o in self.obstacles for g in (*o.collision, *(o.visual or ())) if isinstance(g, Mesh)]


_log = logging.getLogger(__name__)


def safe_relative(text: str, what: str, *, file: str | Path | None = None) -> str:
    """A relative path below a folder (no absolute path, no '..'), or an InputError naming ``what``."""
    p = Path(text)
    if not text or p.is_absolute() or ".." in p.parts or "\x00" in text:
        raise InputError(
            f"{what} must be a relative path without '..' to be used as a file name", file=file, value=text
        )
    return text


def _copy_assets(task: Task, new_dir: Path, target: Path) -> None:
    """Copy each mesh of the task to ``new_dir / <its relative file name>`` unless it is already there."""
    for mesh in task.meshes():
        if Path(mesh.file).is_absolute():
            continue  # an absolute path resolves from anywhere
        rel = safe_relative(mesh.file, "a mesh file of the task", file=target)
        dst = new_dir / rel
        if dst.exists():
            if dst.resolve() == mesh.path.resolve() or (
                mesh.path.is_file() and filecmp.cmp(dst, mesh.path, shallow=False)
            ):
                continue
            raise InputError(
                "a different file of that name is already where the saved task would find this mesh; "
                "it is not overwritten",
                file=dst,
                value=mesh.file,
            )
        if not mesh.path.is_file():  # loaded with missing_assets="skip": written back, nothing to copy
            _log.warning("%s: mesh %s not found; the saved task refers to it without a copy", target, mesh.file)
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        atomic_copy(mesh.path, dst)


def _task_dir(path: Path, data: Any) -> Path:
    """The task folder: the file's folder, minus as many levels as the header ID has path parts."""
    folder = path.resolve().parent
    try:
        tid = str(data["header"]["ID"])
    except (KeyError, TypeError):
        return folder
    depth = tid.count("/")
    parts = Path(tid).parts
    if depth and len(folder.parts) > depth and folder.parts[-depth:] == parts[:-1]:
        return folder.parents[depth - 1]
    return folder


def _embedded_tasks():
    """The package folder of the embedded tasks (an importlib.resources Traversable)."""
    return resources.files("timor_core") / "data" / "tasks"


def embedded_task_names() -> list[str]:
    """Names of the tasks shipped inside the package (for ``Task.from_name``)."""
    return sorted(p.name[: -len(".json")] for p in _embedded_tasks().iterdir() if p.name.endswith(".json"))
