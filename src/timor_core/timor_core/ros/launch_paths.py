"""The launch arguments that name a file or folder: ``config_dir`` (moveit.launch.py: where the MoveIt config is
written) and ``task`` (assembly.launch.py, forwarded by moveit.launch.py: the task shown in RViz as markers).

Each is checked before anything starts (see ``launch_arguments``): a folder that is a file, a ``~user`` that does
not exist, a task file that is missing or not a valid task all end the launch with an InputError naming the
argument and its value.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from timor_core.errors import InputError, TimorError

__all__ = ["config_folder", "task_file"]


def _expanded(name: str, text: str) -> Path:
    try:
        return Path(text).expanduser()
    except RuntimeError as exc:  # ~nosuchuser/x: no such user's home
        raise InputError(f"launch argument {name!r}: cannot expand '~' ({exc})", value=text) from None


def config_folder(text: str) -> Path:
    """``config_dir``: a folder (or none yet) after ``~`` expansion; every failure an InputError naming it."""
    if not text.strip():
        raise InputError("launch argument 'config_dir' is empty", value=text)
    path = _expanded("config_dir", text)
    try:
        if path.exists() and not path.is_dir():
            raise InputError("launch argument 'config_dir' is not a folder", value=str(path))
    except OSError as exc:  # a component longer than the file system allows, a loop of links, ...
        raise InputError(f"launch argument 'config_dir' cannot be used: {exc.strerror or exc}", value=text) from None
    return path


def task_file(text: str) -> str:
    """``task``: empty (no task), the name of a task shipped with timor_core (``pick_and_place``) or a task file;
    returns the task file's absolute path ('' for none) after loading it once, so a bad task starts nothing."""
    from timor_core.task.task import Task, embedded_task_names

    text = text.strip()
    if not text:
        return ""
    if text in embedded_task_names():
        with resources.as_file(resources.files("timor_core") / "data" / "tasks" / f"{text}.json") as file:
            path = Path(file).resolve()
    else:
        path = _expanded("task", text)
        try:
            if not path.is_file():
                raise InputError("launch argument 'task' is not a task file or an embedded task's name", value=text)
            path = path.resolve()
        except OSError as exc:
            raise InputError(f"launch argument 'task' cannot be used: {exc.strerror or exc}", value=text) from None
    try:
        Task.from_json_file(path)
    except (TimorError, OSError) as exc:
        raise InputError(f"launch argument 'task': {exc}", value=text) from None
    return str(path)
