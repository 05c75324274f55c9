"""Limits on what timor accepts: file sizes, JSON depth, counts and durations, checked before any work.

Input comes from colleagues, vendors, the internet and, through the ROS 2 nodes, from anything on the network.
Every size, depth, count and duration that could make timor allocate without bound or run for minutes is
checked against these limits first, and refused with an :class:`~timor_core.errors.InputError` that names the
limit and how to raise it.

Each limit has a default below and can be raised (or lowered) three ways:

- the environment variable ``TIMOR_<FIELD>`` (e.g. ``TIMOR_MAX_FILE_BYTES=500000000``), read at import;
- ``timor_core.limits.set_limits(max_file_bytes=...)`` for the rest of the process;
- ``with timor_core.limits.override_limits(max_file_bytes=...):`` for a block (tests, one call).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from timor_core.errors import InputError

__all__ = ["Limits", "limits", "set_limits", "override_limits", "read_input_bytes", "read_input_text", "check_count"]


@dataclass(frozen=True)
class Limits:
    """The accepted sizes, depths, counts and durations (see the module docstring for how to change them)."""

    max_file_bytes: int = 64 * 2**20
    """Largest JSON input (module set, task, solution, search result, space, assembly, checkpoint), in bytes."""
    max_mesh_bytes: int = 256 * 2**20
    """Largest mesh file (STL, OBJ, DAE, PLY, WRL, ...), in bytes."""
    max_mesh_triangles: int = 2_000_000
    """Most triangles in one mesh file."""
    max_json_depth: int = 64
    """Deepest nesting of JSON arrays and objects (real CoBRA files nest fewer than 12 levels)."""
    max_number_digits: int = 400
    """Most characters in one JSON number (the largest finite double has 309 digits)."""
    max_string_chars: int = 100_000
    """Longest string value in a JSON input or request field (IDs, names, descriptors)."""
    max_modules: int = 128
    """Most module instances in one assembly."""
    max_dof: int = 32
    """Most degrees of freedom of one robot (and of a search space's dof_max)."""
    max_goals: int = 10_000
    """Most goals in one task."""
    max_obstacles: int = 10_000
    """Most obstacles in one task (composed obstacles count each part)."""
    max_trajectory_samples: int = 1_000_000
    """Most time samples in one trajectory (a task's duration divided by its time step)."""
    max_duration_s: float = 86_400.0
    """Longest duration of a pause, a trajectory or a planned motion, in seconds (one day)."""
    min_time_step_s: float = 1e-4
    """Shortest time step of a trajectory, in seconds."""
    max_search_seconds: float = 7 * 86_400.0
    """Longest time budget of one search, in seconds (one week)."""
    max_search_evals: int = 100_000_000
    """Most assemblies one search may evaluate."""


def _from_env() -> Limits:
    values: dict[str, Any] = {}
    for f in dataclasses.fields(Limits):
        raw = os.environ.get(f"TIMOR_{f.name.upper()}")
        if raw is None:
            continue
        kind = int if f.type in (int, "int") else float
        try:
            values[f.name] = kind(raw)
        except ValueError:
            raise InputError(
                f"environment variable TIMOR_{f.name.upper()} must be a{'n integer' if kind is int else ' number'}",
                value=raw,
            ) from None
    return _checked(Limits(**values))


def _checked(lim: Limits) -> Limits:
    for f in dataclasses.fields(lim):
        v = getattr(lim, f.name)
        if not (isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 and v == v and v != float("inf")):
            raise InputError(f"limit {f.name} must be a positive finite number", value=v)
    return lim


_current = _from_env()


def limits() -> Limits:
    """The limits in force now."""
    return _current


def set_limits(**changes: Any) -> Limits:
    """Change limits for the rest of the process; returns the previous limits."""
    global _current
    previous = _current
    _current = _checked(dataclasses.replace(_current, **changes))
    return previous


@contextlib.contextmanager
def override_limits(**changes: Any) -> Iterator[Limits]:
    """Change limits inside a ``with`` block only."""
    global _current
    previous = set_limits(**changes)
    try:
        yield _current
    finally:
        _current = previous


def _hint(field: str) -> str:
    return f"limit {field}; raise it with TIMOR_{field.upper()} or timor_core.limits.set_limits({field}=...)"


def check_count(
    count: float, field: str, what: str, *, file: str | Path | None = None, path: str | None = None
) -> None:
    """Refuse a count, size or duration above the limit ``field`` before any work is done for it."""
    limit = getattr(_current, field)
    if not count <= limit:  # also refuses NaN
        raise InputError(f"{what} exceeds the {_hint(field)} (at most {limit:g})", file=file, path=path, value=count)


def read_input_bytes(path: str | Path, *, what: str = "file", max_bytes: int | None = None) -> bytes:
    """Read a user's input file: it must be a regular file no larger than the limit (``max_file_bytes``).

    Devices, FIFOs and folders (``/dev/zero``, ``/dev/stdin``, a directory) are refused before reading; the
    size is checked on the open file and again while reading, so a growing file cannot get past it.
    """
    path = Path(path)
    field = "max_file_bytes"
    limit = _current.max_file_bytes if max_bytes is None else max_bytes
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError(f"{what} not found", file=path) from None
    except OSError as exc:
        raise InputError(f"cannot open {what}: {exc.strerror or exc}", file=path) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(f"{what} is a folder, not a file", file=path)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(f"{what} is not a regular file (device, pipe or socket)", file=path)
        if st.st_size > limit:
            raise InputError(f"{what} of {st.st_size} bytes exceeds the {_hint(field)} ({limit} bytes)", file=path)
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise InputError(f"{what} exceeds the {_hint(field)} ({limit} bytes)", file=path)
        return b"".join(chunks)
    except OSError as exc:
        raise InputError(f"cannot read {what}: {exc.strerror or exc}", file=path) from None
    finally:
        os.close(fd)


def read_input_text(path: str | Path, *, what: str = "file", max_bytes: int | None = None) -> str:
    """Read a user's input file as UTF-8 text, with the checks of :func:`read_input_bytes`."""
    data = read_input_bytes(path, what=what, max_bytes=max_bytes)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"{what} is not UTF-8 text (byte {exc.start})", file=path) from None
