"""The VRML reader reads a run of numbers as one token (issue 25, cold start): whatever separates the numbers
(spaces, commas, newlines, tabs, comments), the coordinates and indices read are exactly the numbers written."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core.errors import MeshError
from timor_core.model.vrml import read_vrml

SEPARATORS = st.sampled_from([" ", ",", ", ", "\n", "\t", " ,\n\t", "  ", ",\n", " # a comment\n", "#c\n,"])
COORDINATE = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
FORMATS = st.sampled_from(["{!r}", "{:.6g}", "{:.3e}", "{:+.4f}", "{:E}"])


def _write(path: Path, coords: list[float], index: list[int], fmt: str, seps: list[str]) -> list[float]:
    """A one-shape VRML file; returns the numbers as written (after the format's rounding)."""
    texts = [fmt.format(x) for x in coords]
    written = [float(t) for t in texts]
    point = "".join(t + seps[k % len(seps)] for k, t in enumerate(texts))
    indices = "".join(str(i) + seps[(k + 1) % len(seps)] for k, i in enumerate(index))
    path.write_text(
        "#VRML V2.0 utf8\nShape { geometry IndexedFaceSet { solid TRUE\n"
        f"coord Coordinate {{ point [{point}] }}\ncoordIndex [{indices}] }} }}\n"
    )
    return written


@settings(max_examples=150, deadline=None)
@given(
    n=st.integers(3, 12),
    data=st.data(),
    fmt=FORMATS,
    seps=st.lists(SEPARATORS, min_size=1, max_size=4),
)
def test_the_numbers_read_are_the_numbers_written(tmp_path_factory, n, data, fmt, seps):
    coords = data.draw(st.lists(COORDINATE, min_size=3 * n, max_size=3 * n))
    triangles = data.draw(st.lists(st.permutations(range(n)).map(lambda p: p[:3]), min_size=1, max_size=6))
    index = [i for t in triangles for i in (*t, -1)]
    path = tmp_path_factory.mktemp("vrml") / "part.wrl"
    written = np.array(_write(path, coords, index, fmt, seps)).reshape(-1, 3)
    (part,) = read_vrml(path)
    used = sorted({i for t in triangles for i in t})
    assert np.array_equal(part.vertices, written[used])  # bit-equal: the same text to float conversion
    remap = {old: new for new, old in enumerate(used)}
    assert [tuple(f) for f in part.faces] == [tuple(remap[i] for i in t) for t in triangles]


@pytest.mark.parametrize(
    "point, message",
    [
        ("0 0 0, 1 0 0, 0 1 0, 1.0.0", "unexpected '1.0.0'"),  # a malformed number after a run
        ("0 0 0, 1 0 0, 0 1 0 TRUE", "numbers"),
        ("0 0 0, 1 0 0, 0 1", "multiple of 3"),
    ],
)
def test_a_bad_value_after_a_run_of_numbers_is_still_refused(tmp_path, point, message):
    path = tmp_path / "bad.wrl"
    path.write_text(
        "#VRML V2.0 utf8\nShape { geometry IndexedFaceSet { coord Coordinate { point ["
        + point
        + "] }\ncoordIndex [0 1 2 -1] } }\n"
    )
    with pytest.raises(MeshError, match=message):
        read_vrml(path)
