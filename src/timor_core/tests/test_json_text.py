"""common.json_text: the indented-outside, one-line-inside JSON that module sets are written in, and its streaming."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core.common.json_text import json_chunks, json_text

SCALARS = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text()
DOCUMENTS = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30,
)


def _lazy(value, flip: bool):
    """``value`` with every other level's lists made iterators (as a module's bodies are when a set is written)."""
    if isinstance(value, list):
        items = [_lazy(v, flip) for v in value]
        return iter(items) if flip else items
    if isinstance(value, dict):
        return {k: _lazy(v, not flip) for k, v in value.items()}
    return value


@settings(max_examples=400, deadline=None)
@given(DOCUMENTS, st.integers(0, 6), st.booleans())
def test_the_text_parses_to_what_json_dumps_gives(document, depth, flip):
    assert json.loads(json_text(document, depth)) == json.loads(json.dumps(document))
    assert json.loads(json_text(_lazy(document, flip), depth)) == json.loads(json.dumps(document))


def test_outer_levels_are_indented_and_records_are_one_line():
    text = json_text({"modules": [{"header": {"ID": "m"}, "bodies": [{"ID": "b", "pose": [[1.0, 0.0]]}]}]})
    assert text.splitlines() == [
        "{",
        '  "modules": [',
        "    {",
        '      "header": {"ID": "m"},',
        '      "bodies": [',
        '        {"ID": "b", "pose": [[1.0, 0.0]]}',
        "      ]",
        "    }",
        "  ]",
        "}",
    ]


def test_iterators_are_consumed_only_as_the_text_is_asked_for():
    made: list[int] = []

    def records():
        for i in range(3):
            made.append(i)
            yield {"i": i}

    pieces = json_chunks({"a": [1], "records": records()})
    first = [next(pieces) for _ in range(3)]  # "{\n  ", '"a": ', "[1]": nothing of the records made yet
    assert made == []
    rest = list(pieces)
    assert made == [0, 1, 2]
    assert json.loads("".join(first + rest)) == {"a": [1], "records": [{"i": 0}, {"i": 1}, {"i": 2}]}


def test_what_json_cannot_write_is_a_type_error():
    with pytest.raises(TypeError, match="object"):
        json_text({"a": [object()]})
