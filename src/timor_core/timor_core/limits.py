"""Limits on what timor accepts: file sizes, JSON depth, counts and durations, checked before any work.

Input comes from colleagues, vendors, the internet and, through the ROS 2 nodes, from anything on the network.
Every size, depth, count and duration that could make timor allocate without bound or run for minutes is
checked against these limits first, and refused with an :class:`~timor_core.errors.InputError` that names the
limit and how to raise it.

The configuration is one object, :class:`Limits` (a frozen dataclass, checked when it is made): each field has a
default below. The limits in force are one such object; it can be replaced (or changed field by field):

- ``timor_core.limits.set_limits(Limits(max_file_bytes=...))`` or ``set_limits(max_file_bytes=...)`` for the rest
  of the process;
- ``with timor_core.limits.override_limits(...):`` (same arguments) for a block (tests, one call);
- the process starts with ``Limits.from_environment()`` (read on first use, not on import): the defaults, with
  any ``TIMOR_<FIELD>`` environment variable (e.g. ``TIMOR_MAX_FILE_BYTES=500000000``) in place of its field, the
  way to set limits for a command or a ROS node from outside; a bad value is an InputError naming the variable.
"""

from __future__ import annotations

import contextlib
import dataclasses
import operator
import os
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from timor_core.errors import InputError

__all__ = [
    "Limits",
    "limits",
    "set_limits",
    "override_limits",
    "read_input_bytes",
    "read_input_text",
    "check_count",
    "check_int",
    "check_number",
    "cap_workers",
    "available_cores",
    "limit_hint",
    "check_environment",
    "MAX_LIMIT",
]


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
    """Most assemblies one search may evaluate (also ``--limit`` and ``--budget-evals``)."""
    max_generations: int = 1_000_000
    """Most generations of one GA trial (also ``early_stop``)."""
    max_population: int = 100_000
    """Largest GA population."""
    max_trials: int = 10_000
    """Most GA trials of one search."""
    max_workers: int = 256
    """Most worker processes of one search; more than the machine's cores only with ``force_workers``."""
    force_workers: bool = False
    """Allow more worker processes than cores (else a larger request is cut to the cores, with a log line)."""
    max_samples: int = 100_000
    """Most random configurations sampled for an SRDF's collision matrix (``--samples``)."""
    max_plan_seconds: float = 600.0
    """Longest time limit of one motion-planning query, in seconds."""
    max_plan_iterations: int = 10_000_000
    """Most iterations (and shortcut iterations) of one motion-planning query."""
    min_check_resolution: float = 1e-4
    """Finest distance between two collision checks along a planned motion (and smallest step), in rad or m."""
    max_edge_checks: int = 1_000_000
    """Most collision checks along one straight motion (its length in joint space / ``check_resolution``)."""
    min_module_size_m: float = 1e-6
    """Smallest radius of a parametric module, in metres."""
    max_module_size_m: float = 1_000.0
    """Largest radius or length of a parametric module, in metres."""
    max_density: float = 1e6
    """Largest density of a parametric module, in kg/m³."""
    max_path_chars: int = 4_096
    """Longest file or folder path given as an argument (a launch argument's ``config_dir``, say)."""
    max_urdf_links: int = 100_000
    """Most links (and most joints) of one imported URDF, counted while it is parsed."""
    max_urdf_shapes: int = 200_000
    """Most visual and collision shapes of one imported URDF, counted before they are read."""
    max_urdf_element_chars: int = 1_000_000
    """Most characters of one child of an imported URDF's ``<robot>`` (a link, a joint), counted while it is parsed:
    bounds the elements, the nesting and the attributes held at once (real links take a few kB)."""
    max_space_steps: int = 4_000_000
    """Most steps exploring one search space's automaton (states found times the modules to try after each: some 5 s
    of CPU; the presets need under 1,000, a space of 7 joints over 200 modules some 3 million)."""

    def __post_init__(self) -> None:
        _check(self)

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Limits:
        """The defaults, with each ``TIMOR_<FIELD>`` variable of ``environ`` (default: this process's environment)
        in place of its field; a value that is not a number (or, for a flag, true/false) is an InputError."""
        environ = os.environ if environ is None else environ
        values = {}
        for f in dataclasses.fields(cls):
            raw = environ.get(f"TIMOR_{f.name.upper()}")
            if raw is not None:
                values[f.name] = _environment_value(f, raw)
        return cls(**values)


MAX_LIMIT = 1e18
"""Largest value of any limit (larger ones are no limit, and too large for the messages that name them)."""


def _check(lim: Limits) -> None:
    """Refuse a limit that is not a positive finite number up to ``MAX_LIMIT`` (or a bool for a flag)."""
    for f in dataclasses.fields(lim):
        v = getattr(lim, f.name)
        if f.type in (bool, "bool"):
            if not isinstance(v, bool):
                raise InputError(f"limit {f.name} must be True or False", value=v)
            continue
        if not (isinstance(v, (int, float)) and not isinstance(v, bool) and 0 < v <= MAX_LIMIT):  # NaN fails too
            raise InputError(f"limit {f.name} must be a positive finite number up to {MAX_LIMIT:g}", value=v)


def _environment_value(f: dataclasses.Field, raw: str) -> Any:
    """The value of field ``f`` written as the text of its environment variable; an InputError naming the variable
    and its text if it is not true/false (a flag) or a number in (0, ``MAX_LIMIT``] (an integer for a count)."""
    name = f"TIMOR_{f.name.upper()}"
    if f.type in (bool, "bool"):
        if raw.strip().lower() not in ("1", "0", "true", "false", "yes", "no", "on", "off"):
            raise InputError(f"environment variable {name} must be true or false", value=raw)
        return raw.strip().lower() in ("1", "true", "yes", "on")
    kind = int if f.type in (int, "int") else float
    what = "an integer" if kind is int else "a number"
    try:
        value = kind(raw)
    except ValueError:  # also an integer of more than 4300 digits
        value = None
    if value is None or not 0 < value <= MAX_LIMIT:  # NaN and infinities fail too
        raise InputError(f"environment variable {name} must be {what} in (0, {MAX_LIMIT:g}]", value=raw)
    return value


_current: Limits | None = None  # read from the environment on first use, so a bad variable is an error there


def limits() -> Limits:
    """The limits in force now (the first call reads them from the environment: InputError naming a bad variable)."""
    global _current
    if _current is None:
        _current = Limits.from_environment()
    return _current


def check_environment() -> None:
    """Refuse a bad ``TIMOR_<FIELD>`` variable now (an InputError naming it and its value), as a command does
    before its options are read."""
    limits()


def set_limits(config: Limits | None = None, **changes: Any) -> Limits:
    """Put ``config`` (default: the limits in force) with ``changes`` in force for the rest of the process; returns
    the previous limits."""
    global _current
    previous = limits()
    base = previous if config is None else config
    if not isinstance(base, Limits):
        raise InputError("the limits must be a timor_core.limits.Limits", value=base)
    unknown = sorted(set(changes) - {f.name for f in dataclasses.fields(Limits)})
    if unknown:
        raise InputError(f"unknown limit {unknown[0]!r} (the fields of timor_core.limits.Limits)", value=unknown)
    _current = dataclasses.replace(base, **changes) if changes else base
    return previous


@contextlib.contextmanager
def override_limits(config: Limits | None = None, **changes: Any) -> Iterator[Limits]:
    """Put limits in force inside a ``with`` block only (the arguments of :func:`set_limits`)."""
    global _current
    previous = set_limits(config, **changes)
    try:
        yield limits()
    finally:
        _current = previous


def _hint(field: str) -> str:
    return f"limit {field}; change it with TIMOR_{field.upper()} or timor_core.limits.set_limits({field}=...)"


def limit_hint(field: str) -> str:
    """``limit FIELD; raise it with TIMOR_FIELD or ...``: how a message tells a user to change a limit."""
    return _hint(field)


def check_int(value: Any, what: str, low: int, high_field: str | int, *, path: str | None = None) -> int:
    """``value`` as an int in ``[low, high]`` (``high``: a limit's name or a number), else an InputError naming
    ``what`` and the value. Refuses bools, floats with a fraction, strings and anything that is not a number."""
    high = getattr(limits(), high_field) if isinstance(high_field, str) else high_field
    bound = f"{low}..{high}" + (f" ({_hint(high_field)})" if isinstance(high_field, str) else "")
    try:
        n = -1 if isinstance(value, bool) else operator.index(value)
    except TypeError:
        raise InputError(f"{what} must be an integer in {bound}", path=path, value=value) from None
    if isinstance(value, bool):
        raise InputError(f"{what} must be an integer in {bound}", path=path, value=value)
    if not low <= n <= high:
        raise InputError(f"{what} must be an integer in {bound}", path=path, value=value)
    return n


def check_number(
    value: Any, what: str, low: float | str, high: float | str, *, low_open: bool = False, path: str | None = None
) -> float:
    """``value`` as a finite float in ``[low, high]`` (``(low, high]`` with ``low_open``; ``low``, ``high``: numbers
    or limits' names), else an InputError naming ``what`` and the value (NaN and infinities included)."""
    bottom = getattr(limits(), low) if isinstance(low, str) else low
    top = getattr(limits(), high) if isinstance(high, str) else high
    named = [f for f in (low, high) if isinstance(f, str)]
    span = f"{'(' if low_open else '['}{bottom:g}, {top:g}]" + "".join(f" ({_hint(f)})" for f in named)
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise InputError(f"{what} must be a number in {span}", path=path, value=value)
    try:
        x = float(value)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{what} must be a number in {span}", path=path, value=value) from None
    if not (x > bottom if low_open else x >= bottom) or not x <= top or x != x:
        raise InputError(f"{what} must be a finite number in {span}", path=path, value=value)
    return x


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity; else ``os.cpu_count()``)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not on Linux
        return max(1, os.cpu_count() or 1)


def cap_workers(workers: Any, what: str = "workers") -> int:
    """A number of worker processes: None/0 are all cores; else an integer 1..``max_workers``, cut to the cores
    unless the ``force_workers`` limit is set (forking hundreds of processes to evaluate one assembly helps no one).
    """
    cores = available_cores()
    if workers is None or (not isinstance(workers, bool) and isinstance(workers, int) and workers == 0):
        return cores
    n = check_int(workers, what, 1, "max_workers")
    if n > cores and not limits().force_workers:
        import logging

        logging.getLogger(__name__).info(
            "%s: %d requested, %d cores: using %d (set TIMOR_FORCE_WORKERS=1 for more)", what, n, cores, cores
        )
        return cores
    return n


def check_count(
    count: float, field: str, what: str, *, file: str | Path | None = None, path: str | None = None
) -> None:
    """Refuse a count, size or duration above the limit ``field`` before any work is done for it."""
    limit = getattr(limits(), field)
    if not count <= limit:  # also refuses NaN
        raise InputError(f"{what} exceeds the {_hint(field)} (at most {limit:g})", file=file, path=path, value=count)


def read_input_bytes(path: str | Path, *, what: str = "file", max_bytes: int | None = None) -> bytes:
    """Read a user's input file: it must be a regular file no larger than the limit (``max_file_bytes``).

    Devices, FIFOs and folders (``/dev/zero``, ``/dev/stdin``, a directory) are refused before reading; the
    size is checked on the open file and again while reading, so a growing file cannot get past it.
    """
    path = Path(path)
    limit = limits().max_file_bytes if max_bytes is None else max_bytes
    bound = _hint("max_file_bytes") if max_bytes is None else "largest size of such a file"
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
            raise InputError(f"{what} of {st.st_size} bytes exceeds the {bound} ({limit} bytes)", file=path)
        chunks = []
        total = 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise InputError(f"{what} exceeds the {bound} ({limit} bytes)", file=path)
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
        encoding = next((name for bom, name in _BOMS if data.startswith(bom)), None)
        hint = f": it is {encoding} (byte-order mark); save it as UTF-8" if encoding else ""
        raise InputError(f"{what} is not UTF-8 text (byte {exc.start}){hint}", file=path) from None


_BOMS = (  # (the longer first: UTF-32's little-endian mark starts as UTF-16's)
    (b"\xff\xfe\x00\x00", "UTF-32"),
    (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"),
    (b"\xfe\xff", "UTF-16"),
)
