"""References to a module set and a task that pickle small (:class:`DBRef`, :class:`TaskRef`), and their loading once
per process (:func:`load_db`, :func:`load_task`): what a worker process is handed instead of the objects themselves.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from timor_core.errors import InputError
from timor_core.model.db import ModulesDB
from timor_core.task import Task

__all__ = ["DBRef", "TaskRef", "load_db", "load_task"]


@dataclass(frozen=True)
class DBRef:
    """A picklable reference to a module set: its ``modules.json`` path (and name), else its JSON text."""

    name: str
    path: str | None = None
    data: str | None = None
    base_dir: str | None = None

    @classmethod
    def of(cls, db: ModulesDB | DBRef | str | Path) -> DBRef:
        if isinstance(db, DBRef):
            return db
        if isinstance(db, (str, Path)):
            loaded = load_db(db)
            return cls.of(loaded)
        if db.source is not None and Path(db.source).is_file():
            return cls(db.name, str(Path(db.source).resolve()))
        base = str(db.base_dir) if db.base_dir is not None else None
        return cls(db.name, None, json.dumps(db.to_json_data(), sort_keys=True), base)

    def _json_text(self) -> str:
        if self.data is None:
            raise InputError("a DBRef needs a path or the module set's JSON text", value=self.name)
        return self.data

    @property
    def key(self) -> tuple:
        if self.path is not None:
            return ("file", self.path, self.name)
        return ("data", hashlib.sha256(self._json_text().encode()).hexdigest(), self.name, self.base_dir)

    def load(self) -> ModulesDB:
        if self.path is not None:
            return ModulesDB.from_json_file(self.path, name=self.name)
        base = Path(self.base_dir) if self.base_dir else None
        return ModulesDB.from_json_data(json.loads(self._json_text()), base_dir=base, name=self.name)


@dataclass(frozen=True)
class TaskRef:
    """A picklable reference to a task: its CoBRA JSON text, source file and asset folder."""

    data: str
    source: str | None = None
    base_dir: str | None = None

    @classmethod
    def of(cls, task: Task | TaskRef | str | Path) -> TaskRef:
        if isinstance(task, TaskRef):
            return task
        if isinstance(task, (str, Path)):
            task = load_task(task)
        return cls(
            json.dumps(task.to_json_data(), sort_keys=True),
            str(task.source) if task.source is not None else None,
            str(task.base_dir) if task.base_dir is not None else None,
        )

    @property
    def key(self) -> tuple:
        return (hashlib.sha256(self.data.encode()).hexdigest(), self.source, self.base_dir)

    def load(self) -> Task:
        return Task.from_json_data(
            json.loads(self.data),
            source=Path(self.source) if self.source else None,
            base_dir=Path(self.base_dir) if self.base_dir else None,
            missing_assets="skip",
        )


_DBS: dict[tuple, ModulesDB] = {}
_TASKS: dict[tuple, Task] = {}


def load_db(db: ModulesDB | DBRef | str | Path) -> ModulesDB:
    """A module set by name, ``modules.json`` path or :class:`DBRef`, loaded once per process."""
    if isinstance(db, ModulesDB):
        return db
    if isinstance(db, DBRef):
        key = db.key
        if key not in _DBS:
            _DBS[key] = db.load()
        return _DBS[key]
    p = Path(db)
    key = ("load", str(p.resolve()) if p.exists() else str(db))
    if key not in _DBS:
        _DBS[key] = ModulesDB.load(db)
    return _DBS[key]


def load_task(task: Task | TaskRef | str | Path) -> Task:
    """A task by file path or :class:`TaskRef`, loaded once per process."""
    if isinstance(task, Task):
        return task
    if isinstance(task, TaskRef):
        key = ("ref", *task.key)
        if key not in _TASKS:
            _TASKS[key] = task.load()
        return _TASKS[key]
    key = ("file", str(Path(task).resolve()))
    if key not in _TASKS:
        _TASKS[key] = Task.from_json_file(task)
    return _TASKS[key]
