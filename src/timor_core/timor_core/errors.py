"""The error hierarchy of timor: every error the library raises on purpose derives from TimorError.

Errors about input data carry where the bad value came from (file, JSON path, value) so a user can
fix it without reading a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

__all__ = [
    "TimorError",
    "InputError",
    "FormatError",
    "ValidationError",
    "MeshError",
    "UntrustedPathError",
    "UnknownModuleError",
    "ConnectorError",
    "AssemblyError",
    "URDFError",
    "MJCFError",
    "short_repr",
    "explain",
    "one_line",
]


def short_repr(value: Any, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters: a hostile megabyte-long value never floods a message."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a broken __repr__ must not hide the error being reported
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


_short = short_repr


def explain(exc: BaseException, limit: int = 500) -> str:
    """One line for a user about any exception: the message of a TimorError, a plain reason for the rest.

    Services and the CLI answer every failure with such a line instead of a traceback (or a dead process).
    """
    if isinstance(exc, TimorError):
        text = str(exc)
    elif isinstance(exc, RecursionError):
        text = "the input is nested too deeply"
    elif isinstance(exc, MemoryError):
        text = "the input is too large (out of memory)"
    else:
        text = f"internal error: {type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


_CONTROL = re.compile(r"[\x00-\x1f\x7f\x85\u2028\u2029]")


def one_line(text: str) -> str:
    """``text`` with its control characters and line breaks escaped (``\\n``): an ``error:`` line stays one line
    even when a file name holds a newline, and still names it."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], text)


class TimorError(Exception):
    """Root of every error timor raises deliberately."""


class InputError(TimorError, ValueError):
    """Bad input data: names the file, the JSON path and the offending value where known."""

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        path: str | None = None,
        value: Any = ...,
    ) -> None:
        self.message = message
        self.file = str(file) if file is not None else None
        self.path = path
        self.value = value
        super().__init__(self.__str__())

    def __str__(self) -> str:
        where = []
        if self.file:
            where.append(self.file)
        if self.path:
            where.append(self.path)
        text = (": ".join(where) + ": " if where else "") + self.message
        if self.value is not ...:
            text += f" (got {_short(self.value)})"
        return text

    def located(self, file: str | Path | None = None, prefix: str | None = None) -> InputError:
        """Return a copy of this error with the file set and the JSON path prefixed."""
        path = self.path
        if prefix:
            path = prefix + (path[1:] if path and path.startswith("$") else (path or ""))
        err = type(self).__new__(type(self))
        InputError.__init__(
            err, self.message, file=file if file is not None else self.file, path=path, value=self.value
        )
        return err


class FormatError(InputError):
    """The file is not valid JSON, or a field is missing or of the wrong type or shape."""


class ValidationError(InputError):
    """A field is well-formed but its value is physically or logically invalid."""


class MeshError(InputError):
    """A mesh file is missing, unreadable, of an unknown format, or outside the allowed folder."""


class UntrustedPathError(InputError):
    """A file a request names lies outside the folders the server was configured to trust."""


class UnknownModuleError(TimorError, KeyError):
    """A module (or connector, body, joint) ID that the database does not hold."""

    def __str__(self) -> str:  # KeyError quotes its message; we don't want that
        return str(self.args[0]) if self.args else ""


class ConnectorError(TimorError):
    """Two connectors cannot be joined (incompatible), or a connection is ambiguous or missing."""


class AssemblyError(TimorError):
    """An assembly is structurally invalid (disconnected, closed chain, bad base connector, ...)."""


class URDFError(AssemblyError):
    """The assembly cannot be written as URDF (e.g. it contains a closed kinematic chain)."""


class MJCFError(TimorError):
    """MuJoCo's compiler refuses the model, or MuJoCo is not installed (the message says which and why)."""
