"""JSON text for documents that can be big (module sets): indented where a reader browses, one line per record.

``json.dumps(data, indent=2)`` runs Python's pure-Python encoder (the C encoder serves only ``indent=None``): a
module set imported from a 100,000-link URDF took about 15 s of CPU and 1.5 GB to write that way. Here the outer
levels are indented and every deeper record (a body, a joint, a pose) is one line from the C encoder. A list may
be given as an iterator (a generator of a module's bodies), or as :class:`JsonLines` (its records' texts, made
elsewhere): it is encoded as it is consumed, so the records of a big set never all exist at once
(:func:`json_chunks` with a streaming writer).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

__all__ = ["JsonLines", "json_chunks", "json_text"]

_BATCH = 256
"""Records of a :class:`JsonLines` joined into one piece of text (fewer, longer writes)."""


class JsonLines:
    """A list given as its records' one-line JSON texts (an iterable, consumed as the text is asked for), for a list
    whose records sit at ``inline_depth`` (a module's bodies in a set): written as the list of those records would be,
    a record a line, or the list on one line one level deeper. Only :func:`json_chunks` writes it, and only where it
    indents the containers around it (``json`` itself cannot: a TypeError); the texts are written as they are, so
    they must be JSON (``allow_nan`` does not apply to them)."""

    __slots__ = ("texts",)

    def __init__(self, texts: Iterable[str]) -> None:
        self.texts = texts


_CONTAINERS = (dict, list, tuple, Iterator, JsonLines)


def json_text(data: Any, inline_depth: int = 4, *, allow_nan: bool = True) -> str:
    """``data`` as JSON text that parses back to what ``json.dumps(data)`` gives: containers indented by two spaces
    down to ``inline_depth`` levels; a deeper container, or one holding no container, on one line."""
    return "".join(json_chunks(data, inline_depth, allow_nan=allow_nan))


def json_chunks(data: Any, inline_depth: int = 4, *, allow_nan: bool = True) -> Iterator[str]:
    """The pieces of :func:`json_text`, made as they are asked for (iterators in ``data`` consumed on the way)."""
    yield from _pieces(data, 0, inline_depth, allow_nan)


def _pieces(value: Any, depth: int, inline_depth: int, allow_nan: bool) -> Iterator[str]:
    """``value``'s text at nesting ``depth``, piece by piece."""
    if type(value) is JsonLines:
        yield from _lines(value.texts, depth, inline_depth)
        return
    lazy = isinstance(value, Iterator) and depth < inline_depth
    is_dict = isinstance(value, dict)
    if not lazy:
        items = list(value.values()) if is_dict else value if isinstance(value, (list, tuple)) else None
        if items is None or depth >= inline_depth or not any(isinstance(v, _CONTAINERS) for v in items):
            yield json.dumps(value, allow_nan=allow_nan, default=_as_list)
            return
    pad = "\n" + "  " * (depth + 1)
    empty = True
    for entry in value.items() if is_dict else value:
        yield ("{" if is_dict else "[") + pad if empty else "," + pad
        empty = False
        if is_dict:
            key, entry = entry
            yield json.dumps({key: 0})[1:-4] + ": "  # the key as json writes it (numbers and None as strings)
        if depth + 1 >= inline_depth and type(entry) is not JsonLines:  # a record: one line (a big set's case)
            yield json.dumps(entry, allow_nan=allow_nan, default=_as_list)
        else:
            yield from _pieces(entry, depth + 1, inline_depth, allow_nan)
    if empty:  # an empty iterator
        yield "[]"
        return
    yield "\n" + "  " * depth + ("}" if is_dict else "]")


def _lines(texts: Iterable[str], depth: int, inline_depth: int) -> Iterator[str]:
    """The list of the records ``texts`` at nesting ``depth``: on one line below ``inline_depth``, else a record a
    line, :data:`_BATCH` records to a piece."""
    records = iter(texts)
    first = next(records, None)
    if first is None:
        yield "[]"
        return
    if depth >= inline_depth:
        yield "[" + ", ".join((first, *records)) + "]"
        return
    pad = "\n" + "  " * (depth + 1)
    between = "," + pad
    yield "[" + pad + first
    batch: list[str] = []
    for text in records:
        batch.append(text)
        if len(batch) == _BATCH:
            yield between + between.join(batch)
            batch = []
    if batch:
        yield between + between.join(batch)
    yield "\n" + "  " * depth + "]"


def _as_list(value: Any) -> list:
    """An iterator inside a one-line record, as the list it yields (json's ``default`` hook)."""
    if isinstance(value, Iterator):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
