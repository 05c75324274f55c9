"""Hostile input, third round (issue 36): one huge element of a URDF.

The import parses the text in chunks and reads each child of ``<robot>`` once complete, then drops it, but a child
is held whole while it is parsed. One link of millions of elements, nested millions deep, with a 50 MB attribute or
millions of attributes, 50 MB of text or a 50 MB comment took up to 2.4 GB, or up to minutes (expat reads a token
cut across chunks again from its start at each chunk). Now the text of one child, up to the next, is bounded by
``max_urdf_element_chars`` as it is parsed: refused naming the file, the element and the limit, in bounded memory.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hostile import assert_clean_error, memory_cap, run_cli, time_cap
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core.errors import InputError
from timor_core.export.urdf_import.importer import db_from_urdf
from timor_core.limits import limits, override_limits

_BIG = 50_000_000
"""Characters of the hostile part of each file: under max_file_bytes, 50 times max_urdf_element_chars."""

_JOINT = '<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint>'


def _hostile(kind: str) -> tuple[str, str, str]:
    """The text before and after a hostile middle part of ``kind``, the middle, and the path its error names."""
    head, tail = '<robot name="r"><link name="a"/><link name="b">', f"</link>{_JOINT}</robot>"
    if kind == "siblings":  # 12.5 million empty elements in one link
        return head, "<a/>" * (_BIG // 4), tail
    if kind == "nested":  # 7 million levels deep
        return head, "<a>" * (_BIG // 7) + "</a>" * (_BIG // 7), tail
    if kind == "attribute":
        return head, f'<a b="{"x" * _BIG}"/>', tail
    if kind == "attributes":  # 4 million attributes of one element
        return head, "<a " + " ".join(f'b{k}="1"' for k in range(4_000_000)) + "/>", tail
    if kind == "text":
        return head, "x" * _BIG, tail
    if kind == "comment":  # between two children of <robot>: the one before is named
        return head + "</link>", f"<!--{'x' * _BIG}-->", f"{_JOINT}</robot>"
    assert kind == "root", kind  # the root's own start tag
    return "<robot", f' name="{"x" * _BIG}">', '<link name="a"/></robot>'


_WHERE = {"root": "the text before the root's start tag ends"}


@pytest.mark.invalid_urdf
@pytest.mark.parametrize("kind", ["siblings", "nested", "attribute", "attributes", "text", "comment", "root"])
def test_one_huge_element_is_refused_early_in_bounded_memory(tmp_path, kind):
    """Each took 1.4-2.4 GB (siblings, nested: a MemoryError under this cap), 93 s to over 200 s (a long attribute,
    millions of attributes, a long comment or start tag) or was imported (50 MB of text in a link). Now refused once
    max_urdf_element_chars of it are parsed, naming the file, the element and the limit, within 400 MB more address
    space than the test process holds (the file's text included)."""
    urdf = tmp_path / "huge.urdf"
    head, middle, tail = _hostile(kind)
    urdf.write_text(head + middle + tail)
    del middle
    assert 40e6 < urdf.stat().st_size < limits().max_file_bytes
    with memory_cap(400 * 2**20), time_cap(30):  # the time cap only turns a hang into a failure
        with pytest.raises(InputError) as err:
            db_from_urdf(urdf)
    message = str(err.value)
    where = _WHERE.get(kind, "link[@name='b']")
    assert f"{urdf}: {where}: " in message, message
    assert "max_urdf_element_chars" in message and str(limits().max_urdf_element_chars) in message, message


@pytest.mark.invalid_urdf
def test_a_link_up_to_the_limit_imports_and_the_limit_in_force_applies(tmp_path):
    """A link of 17,000 boxes (0.97 MB, under the default) imports whole; with the limit lowered the same file is
    refused naming that link and the limit in force."""
    box = '<visual><geometry><box size="1 1 1"/></geometry></visual>'
    urdf = tmp_path / "boxes.urdf"
    urdf.write_text(f'<robot name="r"><link name="a"/><link name="b">{box * 17_000}</link>{_JOINT}</robot>')
    assert 950_000 < urdf.stat().st_size < limits().max_urdf_element_chars
    bodies = next(iter(db_from_urdf(urdf))).bodies
    assert sorted(len(b.visual) for b in bodies) == [0, 17_000]
    with override_limits(max_urdf_element_chars=100_000), pytest.raises(InputError) as err:
        db_from_urdf(urdf)
    message = str(err.value)
    assert f"{urdf}: link[@name='b']: " in message and "longer than 100000 characters" in message, message


@pytest.mark.invalid_urdf
def test_a_long_token_costs_a_few_passes_when_the_limit_is_raised(tmp_path):
    """With the limit raised past it, a 50 MB attribute is parsed in a few passes (chunks double while no child
    begins), where fed 16 KiB at a time expat read it again from its start 3,000 times (93 s for 60 MB)."""
    urdf = tmp_path / "long.urdf"
    head, middle, tail = _hostile("attribute")
    urdf.write_text(head + middle + tail)
    del middle
    with override_limits(max_urdf_element_chars=10**8), memory_cap(1024 * 2**20), time_cap(30):
        db = db_from_urdf(urdf)  # the <a b=...> element is not URDF's: read past
    assert len(next(iter(db)).bodies) == 2


@pytest.mark.slow
@pytest.mark.invalid_urdf
def test_timor_import_refuses_one_huge_link_naming_file_element_and_limit(tmp_path):
    urdf = tmp_path / "huge.urdf"
    head, middle, tail = _hostile("siblings")
    urdf.write_text(head + middle + tail)
    del middle
    proc = run_cli(["import", str(urdf), "-o", str(tmp_path / "out" / "m.json")], timeout=120)
    assert proc.returncode == 2 and not (tmp_path / "out" / "m.json").exists()
    assert_clean_error(proc, str(urdf), "link[@name='b']", "max_urdf_element_chars", "TIMOR_MAX_URDF_ELEMENT_CHARS")


# -- fuzz --------------------------------------------------------------------------------------------------------------

_MOST = 20_000
"""The limit in force in the fuzz test (characters)."""
_SLACK = 2 * 2**14
"""How far past the limit a stretch may go before it is refused: two chunks of the importer's 16 KiB."""

_BODY = {
    "siblings": lambda n: "<a/>" * n,
    "nested": lambda n: "<a>" * n + "</a>" * n,
    "attribute": lambda n: f'<a b="{"x" * (7 * n)}"/>',
    "attributes": lambda n: "<a " + " ".join(f'b{k}="1"' for k in range(n)) + "/>",
    "text": lambda n: "x" * (7 * n),
    "comment": lambda n: f"<!--{'x' * (7 * n)}-->",
}
_PIECE = st.tuples(st.sampled_from(sorted(_BODY)), st.integers(0, 15_000), st.integers(0, 8_000), st.booleans())


def _fuzz_text(pieces: list[tuple[str, int, int, bool]]) -> tuple[str, list[int]]:
    """A chain of links, link k's body ``_BODY[kind](n)``, a comment of 7 m characters after it if ``after``; the
    text, and where each child of <robot> (and the root) begins, that is where its start tag ends."""
    parts, marks, size = [], [], 0

    def put(text: str, begins: bool = False) -> None:
        nonlocal size
        parts.append(text)
        size += len(text)
        if begins:
            marks.append(size)

    put('<robot name="fuzz">', True)
    for k, (kind, n, m, after) in enumerate(pieces):
        put(f'<link name="l{k}">', True)
        put(_BODY[kind](n) + "</link>" + (f"<!--{'y' * (7 * m)}-->" if after else ""))
    for k in range(1, len(pieces)):
        put(f'<joint name="j{k}" type="fixed">', True)
        put(f'<parent link="l{k - 1}"/><child link="l{k}"/></joint>')
    put("</robot>")
    return "".join(parts), marks


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(pieces=st.lists(_PIECE, min_size=1, max_size=5))
def test_fuzz_huge_elements(pieces):
    """Any stretch of text without a child of <robot> beginning (a child, the text after it, the next start tag)
    of at most max_urdf_element_chars is imported; one longer by more than two chunks is refused naming the file
    and the limit; all under a memory and a time cap."""
    text, marks = _fuzz_text(pieces)
    stretches = [b - a for a, b in zip([0, *marks], [*marks, len(text)])]
    with tempfile.TemporaryDirectory() as tmp:
        urdf = Path(tmp) / "fuzz.urdf"
        urdf.write_text(text)
        with override_limits(max_urdf_element_chars=_MOST), memory_cap(), time_cap(60):
            try:
                db = db_from_urdf(urdf)
            except InputError as exc:
                assert max(stretches) > _MOST, (stretches, exc)
                assert str(urdf) in str(exc) and "max_urdf_element_chars" in str(exc), exc
                return
    assert max(stretches) <= _MOST + _SLACK, stretches
    assert len(next(iter(db)).bodies) == len(pieces)
