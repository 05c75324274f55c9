"""Typed access to fields of parsed JSON, raising errors that name the JSON path and the value.

Every reader takes the JSON path of the object it reads from (e.g. ``$.modules[3].bodies[0]``); the
file name is added by whoever knows it (see ``InputError.located``).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from .errors import FormatError, ValidationError
from .transforms import is_rigid

__all__ = [
    "load_json_file",
    "obj",
    "req",
    "opt",
    "string",
    "number",
    "boolean",
    "vector",
    "matrix",
    "pose",
    "array",
]

_MISSING = object()


def load_json_file(path: str | Path) -> Any:
    """Read a JSON file; a missing, unreadable or invalid file raises FormatError naming it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise FormatError("file not found", file=path) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise FormatError(f"cannot read file: {exc}", file=path) from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise FormatError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", file=path) from None
    except ValueError:  # NaN / Infinity literals
        raise _constant_error(text, path) from None


_CONSTANT = re.compile(r"-?Infinity|NaN")
_SENTINEL = "\u0000timor-non-finite\u0000"


def _first_constant(text: str) -> tuple[int, str] | None:
    """Offset and spelling of the first bare NaN/Infinity literal outside strings in JSON text."""
    in_string = escaped = False
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "NI-":
            m = _CONSTANT.match(text, i)
            if m:
                return i, m.group(0)
    return None


def _find_sentinel(value: Any, path: str) -> str | None:
    if value == _SENTINEL:
        return path
    if isinstance(value, dict):
        items = ((f"{path}.{k}", v) for k, v in value.items())
    elif isinstance(value, list):
        items = ((f"{path}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for p, v in items:
        found = _find_sentinel(v, p)
        if found:
            return found
    return None


def _constant_error(text: str, path: Path) -> FormatError:
    """A FormatError for a NaN/Infinity literal naming its JSON path, line and column."""
    hit = _first_constant(text)
    if hit is None:
        return FormatError("non-finite numbers (NaN, Infinity) are not allowed in JSON", file=path)
    i, literal = hit
    line = text.count("\n", 0, i) + 1
    col = i - (text.rfind("\n", 0, i) + 1) + 1
    json_path = None
    try:
        json_path = _find_sentinel(json.loads(text[:i] + json.dumps(_SENTINEL) + text[i + len(literal) :]), "$")
    except ValueError:
        pass
    return FormatError(
        f"non-finite number {literal} is not allowed in JSON (line {line}, column {col})",
        file=path,
        path=json_path,
        value=literal,
    )


def _reject_constant(name: str) -> float:
    raise ValueError(f"non-finite number {name} is not allowed in JSON")


def obj(value: Any, path: str) -> dict:
    """Require a JSON object."""
    if not isinstance(value, dict):
        raise FormatError("expected a JSON object", path=path, value=value)
    return value


def array(value: Any, path: str) -> list:
    """Require a JSON array."""
    if not isinstance(value, list):
        raise FormatError("expected a JSON array", path=path, value=value)
    return value


def req(d: dict, key: str, path: str) -> Any:
    """A required field of an object."""
    try:
        return d[key]
    except KeyError:
        raise FormatError(f"missing required field '{key}'", path=path) from None


def opt(d: dict, key: str, default: Any = None) -> Any:
    """An optional field of an object."""
    return d.get(key, default)


def string(value: Any, path: str, *, nonempty: bool = True) -> str:
    """Require a string (IDs given as JSON numbers are accepted and turned into strings)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise FormatError("expected a string", path=path, value=value)
    value = str(value)
    if nonempty and not value:
        raise FormatError("expected a non-empty string", path=path, value=value)
    return value


def number(value: Any, path: str, *, min_value: float | None = None, allow_inf: bool = False) -> float:
    """Require a finite real number (optionally bounded below)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FormatError("expected a number", path=path, value=value)
    value = float(value)
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValidationError("expected a finite number", path=path, value=value)
    if min_value is not None and value < min_value:
        raise ValidationError(f"must be >= {min_value}", path=path, value=value)
    return value


def boolean(value: Any, path: str) -> bool:
    """Require a JSON boolean."""
    if not isinstance(value, bool):
        raise FormatError("expected true or false", path=path, value=value)
    return value


def vector(value: Any, path: str, length: int | None = None) -> np.ndarray:
    """Require a flat list of finite numbers (of a given length)."""
    if not isinstance(value, list):
        raise FormatError("expected a list of numbers", path=path, value=value)
    if length is not None and len(value) != length:
        raise FormatError(f"expected {length} numbers, got {len(value)}", path=path, value=value)
    return np.array([number(v, f"{path}[{i}]") for i, v in enumerate(value)], dtype=float)


def matrix(value: Any, path: str, shape: tuple[int, int]) -> np.ndarray:
    """Require a row-major nested list of finite numbers of the given shape."""
    rows, cols = shape
    if not isinstance(value, list) or len(value) != rows:
        raise FormatError(f"expected a {rows}x{cols} matrix (list of {rows} rows)", path=path, value=value)
    out = np.empty(shape)
    for i, row in enumerate(value):
        if not isinstance(row, list) or len(row) != cols:
            raise FormatError(f"expected a {rows}x{cols} matrix, row {i} is not {cols} numbers", path=path, value=row)
        for j, v in enumerate(row):
            out[i, j] = number(v, f"{path}[{i}][{j}]")
    return out


def pose(value: Any, path: str) -> np.ndarray:
    """Require a 4x4 homogeneous transform with an orthonormal, right-handed rotation."""
    T = matrix(value, path, (4, 4))
    if not is_rigid(T):
        raise ValidationError(
            "not a rigid transform (rotation must be orthonormal with det +1, last row 0 0 0 1)",
            path=path,
            value=value,
        )
    T.flags.writeable = False
    return T
