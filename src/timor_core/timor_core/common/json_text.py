"""JSON text for documents that can be big (module sets): indented where a reader browses, one line per record.

``json.dumps(data, indent=2)`` runs Python's pure-Python encoder (the C encoder serves only ``indent=None``): a
module set imported from a 100,000-link URDF took about 15 s of CPU and 1.5 GB to write that way. Here the outer
levels are indented and every deeper record (a body, a joint, a pose) is one line from the C encoder. A list may
be given as an iterator (a generator of a module's bodies): it is encoded as it is consumed, so the records of a
big set never all exist at once (:func:`json_chunks` with a streaming writer).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

__all__ = ["json_chunks", "json_text"]

_CONTAINERS = (dict, list, tuple, Iterator)


def json_text(data: Any, inline_depth: int = 4, *, allow_nan: bool = True) -> str:
    """``data`` as JSON text that parses back to what ``json.dumps(data)`` gives: containers indented by two spaces
    down to ``inline_depth`` levels; a deeper container, or one holding no container, on one line."""
    return "".join(json_chunks(data, inline_depth, allow_nan=allow_nan))


def json_chunks(data: Any, inline_depth: int = 4, *, allow_nan: bool = True) -> Iterator[str]:
    """The pieces of :func:`json_text`, made as they are asked for (iterators in ``data`` consumed on the way)."""
    yield from _pieces(data, 0, inline_depth, allow_nan)


def _pieces(value: Any, depth: int, inline_depth: int, allow_nan: bool) -> Iterator[str]:
    """``value``'s text at nesting ``depth``, piece by piece."""
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
        if depth + 1 >= inline_depth:  # a record: one line (the common case of a big set, without a generator)
            yield json.dumps(entry, allow_nan=allow_nan, default=_as_list)
        else:
            yield from _pieces(entry, depth + 1, inline_depth, allow_nan)
    if empty:  # an empty iterator
        yield "[]"
        return
    yield "\n" + "  " * depth + ("}" if is_dict else "]")


def _as_list(value: Any) -> list:
    """An iterator inside a one-line record, as the list it yields (json's ``default`` hook)."""
    if isinstance(value, Iterator):
        return list(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
