"""Which task files a server opens for a request: only those inside folders it was configured to trust.

The ROS 2 search node takes a task as JSON text, as the name of an embedded task, or as a path on the node's
machine. A path lets any peer on the network make the node open any file the node can read, so it is opened only if
it lies, after following every symbolic link, inside one of the trusted folders (default: the embedded tasks and
the working folder the node was started in); anything else is an :class:`~timor_core.errors.UntrustedPathError`
naming the path and the folders.

>>> trusted_task_path("/etc/passwd", ["/srv/tasks"])       # doctest: +SKIP
UntrustedPathError: task_path '/etc/passwd' is outside the trusted task folders (/srv/tasks) ...
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from timor_core.errors import InputError, UntrustedPathError
from timor_core.limits import limit_hint, limits

__all__ = ["default_trusted_folders", "trusted_task_path"]


def default_trusted_folders() -> tuple[Path, ...]:
    """The embedded tasks' folder and the current working folder, resolved."""
    embedded = Path(str(resources.files("timor_core") / "data" / "tasks"))
    return (Path(os.path.realpath(embedded)), Path(os.path.realpath(os.getcwd())))


def _text(value: object, what: str) -> str:
    if not isinstance(value, (str, os.PathLike)):
        raise InputError(f"{what} must be a path", value=value)
    text = os.fspath(value)
    if not isinstance(text, str):
        raise InputError(f"{what} must be a text path", value=value)
    if "\x00" in text:
        raise InputError(f"{what} contains a NUL character", value=text)
    longest = limits().max_path_chars
    if len(text) > longest:
        raise InputError(f"{what} is longer than the {limit_hint('max_path_chars')} ({longest})", value=text)
    return text


def trusted_task_path(path: str | os.PathLike, folders: Sequence[str | os.PathLike] | None = None) -> Path:
    """``path`` resolved (links followed) if it is absolute and inside one of ``folders`` (None or empty: the
    defaults, :func:`default_trusted_folders`); else an InputError (bad text) or UntrustedPathError."""
    text = _text(path, "task_path")
    if not os.path.isabs(text):
        raise InputError("task_path must be an absolute path (the server's working folder is not yours)", value=text)
    trusted = (
        tuple(Path(os.path.realpath(_text(f, "a trusted task folder"))) for f in folders)
        if folders
        else default_trusted_folders()
    )
    try:
        resolved = Path(os.path.realpath(text))
    except (OSError, ValueError) as exc:
        raise InputError(f"task_path cannot be resolved: {exc}", value=text) from None
    if not any(resolved == folder or folder in resolved.parents for folder in trusted):
        raise UntrustedPathError(
            f"task_path is outside the trusted task folders ({', '.join(str(f) for f in trusted)}); send the task as"
            " JSON text, name an embedded task, or add its folder to the node's trusted_task_folders parameter",
            value=text,
        )
    return resolved
