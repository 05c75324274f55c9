"""Typed access to fields of parsed JSON, raising errors that name the JSON path and the value.

Every reader takes the JSON path of the object it reads from (e.g. ``$.modules[3].bodies[0]``); the
file name is added by whoever knows it (see ``InputError.located``).
"""

from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from timor_core.common.transforms import is_rigid
from timor_core.errors import FormatError, InputError, ValidationError
from timor_core.limits import limits, read_input_text

__all__ = [
    "load_json_file",
    "parse_json_text",
    "obj",
    "req",
    "opt",
    "string",
    "number",
    "count",
    "boolean",
    "vector",
    "matrix",
    "pose",
    "array",
    "converted",
    "unknown_field",
]

_MISSING = object()
_T = TypeVar("_T")


def load_json_file(path: str | Path, *, infinity_keys: frozenset[str] = frozenset()) -> Any:
    """Read a JSON input file within the limits (regular file, size, depth; see ``timor_core.limits``).

    A leading UTF-8 byte-order mark is ignored. A missing, unreadable, oversized or invalid file, duplicate keys,
    NaN/Infinity literals and nesting deeper than ``max_json_depth`` raise FormatError naming the file (and the JSON
    path where known). ``Infinity`` and ``-Infinity`` are read as float infinities only as the value of a key in
    ``infinity_keys`` (unlimited joint limits, as Python's json module writes them); NaN is always refused.
    """
    path = Path(path)
    try:
        text = read_input_text(path, what="file")
    except FormatError:
        raise
    except InputError as exc:
        raise FormatError(exc.message, file=exc.file, path=exc.path, value=exc.value) from None
    # a UTF-8 byte-order mark (Windows editors, PowerShell 5's Set-Content) is no JSON, and RFC 8259 lets a parser
    # ignore it: Python's json module refused such a profile, module set or task ("Unexpected UTF-8 BOM")
    return parse_json_text(text.removeprefix("\ufeff"), file=path, infinity_keys=infinity_keys)


class _DuplicateKeyError(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKeyError(k)
            seen.add(k)
    return d


_DUP_MARK = "\u0000timor-duplicate\u0000"


def _mark_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    d = dict(pairs)
    if len(d) != len(pairs):
        d[_DUP_MARK] = True
    return d


def parse_json_text(
    text: str, *, file: str | Path | None = None, what: str = "JSON text", infinity_keys: frozenset[str] = frozenset()
) -> Any:
    """Parse JSON from a file or a request field within the limits; errors are FormatError naming the source.

    Refuses: text longer than ``max_file_bytes``, invalid JSON, NaN/Infinity literals, duplicate keys in an
    object (JSON parsers disagree on which one wins), nesting deeper than ``max_json_depth`` and numbers with
    more than ``max_number_digits`` characters. ``Infinity``/``-Infinity`` are read where the key is in
    ``infinity_keys`` (see ``load_json_file``) and refused, naming the JSON path, anywhere else.
    """
    lim = limits()
    if not isinstance(text, str):
        raise FormatError(f"{what} must be a string", file=file, value=type(text).__name__)
    if len(text) > lim.max_file_bytes:
        raise FormatError(
            f"{what} of {len(text)} characters exceeds the limit max_file_bytes ({lim.max_file_bytes}); raise it "
            "with TIMOR_MAX_FILE_BYTES or timor_core.limits.set_limits(max_file_bytes=...)",
            file=file,
        )
    try:
        data = json.loads(
            text,
            parse_constant=_infinity_constant if infinity_keys else _reject_constant,
            object_pairs_hook=_no_duplicates,
        )
    except RecursionError:
        raise FormatError(f"JSON nested too deeply (limit max_json_depth is {lim.max_json_depth})", file=file) from None
    except json.JSONDecodeError as exc:
        raise FormatError(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", file=file) from None
    except _DuplicateKeyError as exc:
        raise FormatError(
            f"duplicate key {exc.key!r} in one JSON object (which one wins is undefined)",
            file=file,
            path=_duplicate_path(text),
            value=exc.key,
        ) from None
    except ValueError as exc:  # NaN / Infinity literals, or an integer beyond Python's digit limit
        if "NaN" in str(exc) or "Infinity" in str(exc):
            raise _constant_error(text, file) from None
        raise FormatError(
            f"a number in the JSON has too many digits (limit max_number_digits is {lim.max_number_digits})",
            file=file,
        ) from None
    _check_tree(data, file, lim.max_json_depth, lim.max_number_digits)
    if infinity_keys and "Infinity" in text:
        _check_infinities(data, file, infinity_keys)
    return data


def _infinity_constant(name: str) -> float:
    if name == "NaN":
        raise FormatError("non-finite number NaN is not allowed in JSON", value="NaN")
    return math.inf if name == "Infinity" else -math.inf


def _check_infinities(data: Any, file: str | Path | None, keys: frozenset[str]) -> None:
    """Refuse an infinity that is not the value of a key in ``keys`` (it was read only to allow those)."""
    stack: list[tuple[Any, str, str | None]] = [(data, "$", None)]
    while stack:
        value, path, key = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, f"{path}.{k}", k) for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]", None) for i, v in enumerate(value))
        elif isinstance(value, float) and math.isinf(value) and key not in keys:
            raise FormatError(
                f"{'-' if value < 0 else ''}Infinity is allowed only for unlimited limits ({', '.join(sorted(keys))})",
                file=file,
                path=path,
                value=value,
            )


def _duplicate_path(text: str) -> str | None:
    try:
        data = json.loads(text, object_pairs_hook=_mark_duplicates)
    except (ValueError, RecursionError):
        return None
    stack: list[tuple[Any, str]] = [(data, "$")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, dict):
            if _DUP_MARK in value:
                return path
            stack.extend((v, f"{path}.{k}") for k, v in value.items())
        elif isinstance(value, list):
            stack.extend((v, f"{path}[{i}]") for i, v in enumerate(value))
    return None


def _check_tree(data: Any, file: str | Path | None, max_depth: int, max_digits: int) -> None:
    """Refuse nesting deeper than max_depth and integers of more than max_digits digits, iteratively."""
    big = min(10**max_digits, 2**1024)  # beyond 2**1024 an integer has no float: every reader would overflow
    stack: list[tuple[Any, int, Any]] = [(data, 1, None)]
    while stack:
        value, depth, parent = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > max_depth:
                raise FormatError(
                    f"JSON nested deeper than the limit max_json_depth ({max_depth}); raise it with "
                    "TIMOR_MAX_JSON_DEPTH or timor_core.limits.set_limits(max_json_depth=...)",
                    file=file,
                )
            children = value.values() if isinstance(value, dict) else value
            stack.extend((v, depth + 1, value) for v in children if isinstance(v, (dict, list, int)))
        elif isinstance(value, int) and not isinstance(value, bool) and not -big < value < big:
            raise FormatError(
                f"a number in the JSON is too large (more than {max_digits} digits, limit max_number_digits, or "
                "beyond the range of a float)",
                file=file,
            )


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
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        v, p = stack.pop()
        if v == _SENTINEL:
            return p
        if isinstance(v, dict):
            stack.extend(reversed([(x, f"{p}.{k}") for k, x in v.items()]))
        elif isinstance(v, list):
            stack.extend(reversed([(x, f"{p}[{i}]") for i, x in enumerate(v)]))
    return None


def _constant_error(text: str, path: str | Path | None) -> FormatError:
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
    except (ValueError, RecursionError):
        pass
    return FormatError(
        f"non-finite number {literal} is not allowed in JSON (line {line}, column {col})",
        file=path,
        path=json_path,
        value=literal,
    )


def _reject_constant(name: str) -> float:
    raise FormatError(f"non-finite number {name} is not allowed in JSON", value=name)


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
    if len(value) > limits().max_string_chars:
        raise FormatError(
            f"string of {len(value)} characters exceeds the limit max_string_chars ({limits().max_string_chars})",
            path=path,
            value=value,
        )
    return value


def number(value: Any, path: str, *, min_value: float | None = None, allow_inf: bool = False) -> float:
    """Require a finite real number (optionally bounded below)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FormatError("expected a number", path=path, value=value)
    try:
        value = float(value)
    except OverflowError:
        raise ValidationError("number too large", path=path, value=value) from None
    if math.isnan(value) or (math.isinf(value) and not allow_inf):
        raise ValidationError("expected a finite number", path=path, value=value)
    if min_value is not None and value < min_value:
        raise ValidationError(f"must be >= {min_value}", path=path, value=value)
    return value


def converted(value: Any, path: str, kind: Callable[[Any], _T]) -> _T:
    """``kind(value)`` (``int``, ``float``): a field of timor's own files read as it always was (lenient: ``"3"``
    reads as 3), but where the conversion fails a FormatError naming the field's ``path``, not its file's ``$``."""
    try:
        return kind(value)
    except (TypeError, ValueError, OverflowError):
        what = "an integer" if kind is int else "a number" if kind is float else "a value"
        raise FormatError(f"expected {what}", path=path, value=value) from None


def count(value: Any, path: str, *, most: int = 2**63 - 1) -> int:
    """Require a JSON integer from 0 to ``most`` (a count or an index: no fraction, no sign, no overflow later)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise FormatError("expected a whole number", path=path, value=value)
    if not 0 <= value <= most:
        raise ValidationError(f"expected a whole number from 0 to {most}", path=path, value=value)
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


def unknown_field(key: str, known: tuple[str, ...]) -> str:
    """What to say of a field no reader uses (kept for the round trip): a misspelt optional field reads as the field
    left out, so it names the ``known`` field it is closest to, if any (``unknown field 'safetymargin', kept but not
    read (did you mean 'safetyMargin'?)``)."""
    same = [k for k in known if _plain(k) == _plain(key)]  # r_com for rCom, gearRatio for gear_ratio
    close = same or difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown field {key!r}, kept but not read{hint}"


def _plain(name: str) -> str:
    return name.lower().replace("_", "").replace("-", "")
