"""Tests of timor_core.model.meshes' VRML 2.0 reader: shapes, transforms, DEF/USE, malformed and gzipped files,
scale, and fan triangulation (property test)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mesh_cases import signed_volume

from timor_core.errors import MeshError
from timor_core.model.meshes import ConvexParts, clear_mesh_cache, load_mesh, read_vrml


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_mesh_cache()
    yield
    clear_mesh_cache()


# VRML 2.0 with two shapes, a quad, a pentagon, comments, commas, tabs, odd line breaks, DEF/USE and a last
# face without its terminating -1.
TWO_SHAPES_WRL = """#VRML V2.0 utf8
# a comment line
Shape { appearance Appearance { material Material { diffuseColor 1 0 0 } } # trailing comment
  geometry IndexedFaceSet {
    solid TRUE
    coord DEF C1 Coordinate { point [ 0 0 0, 1 0 0,
        1 1 0,0 1 0 ,   0 0 1 ,] }
    coordIndex [ 0, 2, 1, -1,   # triangle
                 0 3 2 -1 0,1,4,-1,1 2 4 -1
                 2 3 4 -1 3 0 4 ]
  }
}
Shape {
\tgeometry   IndexedFaceSet{coord Coordinate{point[
\t\t0 0 2
\t\t2 0 2 2 2 2 0 2 2 1 3 2 1 1 5]}
\t\tcoordIndex[0 1 2 3 -1 0 1 2 3 4 -1 # quad then pentagon
\t\t]
\t}
}
"""


# ---------------------------------------------------------------------------------------------------------
# VRML
# ---------------------------------------------------------------------------------------------------------


def test_read_vrml_two_shapes(tmp_path: Path):
    path = tmp_path / "parts.wrl"
    path.write_text(TWO_SHAPES_WRL)
    first, second = read_vrml(path)
    # shape 1: pyramid with 5 points, 6 triangles (the last face lacks its -1)
    np.testing.assert_array_equal(first.vertices, [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1]])
    assert first.faces.tolist() == [[0, 2, 1], [0, 3, 2], [0, 1, 4], [1, 2, 4], [2, 3, 4], [3, 0, 4]]
    # shape 2: a quad (2 triangles) and a pentagon (3 triangles), fan-triangulated
    assert len(second.vertices) == 5
    assert second.faces.tolist() == [[0, 1, 2], [0, 2, 3], [0, 1, 2], [0, 2, 3], [0, 3, 4]]
    np.testing.assert_allclose(second.bounds, [[0, 0, 2], [2, 3, 2]])  # the unused point 1 1 5 is dropped
    parts = load_mesh(path)
    assert isinstance(parts, ConvexParts) and len(parts.parts) == 2
    np.testing.assert_array_equal(parts.parts[0].faces, first.faces)
    assert load_mesh(path) is parts


def test_read_vrml_transform_def_use_and_unused_vertices(tmp_path: Path):
    path = tmp_path / "t.wrl"
    path.write_text(
        """#VRML V2.0 utf8
DEF T Transform {
  translation 1 2 3
  rotation 0 0 1 1.5707963267948966
  scale 2 2 2
  children [
    Group { children [
      Shape { geometry DEF F IndexedFaceSet { coord DEF C Coordinate { point [ 0 0 0, 1 0 0, 0 1 0, 9 9 9 ] }
                                          coordIndex [ 0 1 2 -1 ] } }
    ] }
  ]
}
Shape { geometry IndexedFaceSet { coord USE C coordIndex [ 1, 2, 3 ] ccw FALSE } }
ROUTE T.translation TO T.translation
Transform { scale -1 1 1 children Shape { geometry USE F } }
"""
    )
    rotated, plain, mirrored = read_vrml(path)
    # T * R * S: (1,0,0) -> (0,2,0) -> +(1,2,3); the unused point 9 9 9 is dropped
    np.testing.assert_allclose(rotated.vertices, [[1, 2, 3], [1, 4, 3], [-1, 2, 3]], atol=1e-12)
    np.testing.assert_array_equal(rotated.faces, [[0, 1, 2]])
    np.testing.assert_array_equal(plain.vertices, [[1, 0, 0], [0, 1, 0], [9, 9, 9]])
    np.testing.assert_array_equal(plain.faces, [[2, 1, 0]])  # ccw FALSE reverses the winding
    np.testing.assert_array_equal(mirrored.vertices, [[0, 0, 0], [-1, 0, 0], [0, 1, 0]])
    np.testing.assert_array_equal(mirrored.faces, [[2, 1, 0]])  # mirroring reverses the winding


def test_read_vrml_transform_center_and_scale_orientation(tmp_path: Path):
    path = tmp_path / "c.wrl"
    path.write_text(
        """#VRML V2.0 utf8
Transform { center 1 0 0 rotation 0 0 1 3.141592653589793 scaleOrientation 0 0 1 0.7853981633974483
  scale 1 1 1
  children Shape { geometry IndexedFaceSet { coord Coordinate { point [ 0 0 0 2 0 0 0 1 0 ] }
  coordIndex [ 0 1 2 ] } } }
"""
    )
    (mesh,) = read_vrml(path)
    np.testing.assert_allclose(mesh.vertices, [[2, 0, 0], [0, 0, 0], [2, -1, 0]], atol=1e-12)


def _ifs(points: str, index: str) -> str:
    return (
        "#VRML V2.0 utf8\nShape { geometry IndexedFaceSet { coord Coordinate { point [ "
        f"{points} ] }} coordIndex [ {index} ] }} }}\n"
    )


@pytest.mark.parametrize(
    ("content", "text"),
    [
        (TWO_SHAPES_WRL[: TWO_SHAPES_WRL.index("coordIndex [ 0, 2")], "unexpected end of file"),
        (TWO_SHAPES_WRL[:-40], "unexpected end of file"),
        ("", "not a VRML 2.0 file"),
        ("#VRML V1.0 ascii\nSeparator { }\n", "not a VRML 2.0 file"),
        ("#VRML V2.0 utf8\n# nothing here\n", "no Shape"),
        ("#VRML V2.0 utf8\nShape { geometry Box { size 1 1 1 } }\n", "unsupported VRML geometry node Box"),
        (
            _ifs("0 0 0 1 0 0 0 1 0", "0 1 3 -1"),
            "outside",
        ),
        (
            _ifs("0 0 0 1 0 0 0 1", "0 1 2 -1"),
            "multiple of 3",
        ),
        (
            _ifs("0 0 0 1 0 0 0 1 0", "0 1 -1"),
            "no face",
        ),
        (
            "#VRML V2.0 utf8\nShape { geometry IndexedFaceSet { coordIndex [ 0 1 2 -1 ] } }\n",
            "coord Coordinate",
        ),
        (
            _ifs("0 0 0 1 0 0 0 1 0", "0 1.5 2 -1"),
            "integer",
        ),
        (
            _ifs("0 0 0 1 0 0 0 x 0", "0 1 2 -1"),
            "line 2: unexpected 'x' in the value of field 'point' of Coordinate",
        ),
        ("#VRML V2.0 utf8\nShape { geometry USE Nothing }\n", "undefined name"),
        ("#VRML V2.0 utf8\nTransform { translation 1 2 children [] }\n", "needs 3 numbers"),
        ('#VRML V2.0 utf8\nWorldInfo { title "open }\n', "unterminated string"),
        ("#VRML V2.0 utf8\nPROTO Foo [] { }\n", "PROTO"),
        ("#VRML V2.0 utf8\nShape { geometry }\n", "no value"),
        ("#VRML V2.0 utf8\nShape geometry\n", "expected '{'"),
        ("#VRML V2.0 utf8\n] Shape { }\n", "expected a node type"),
    ],
)
def test_read_vrml_rejects_malformed(tmp_path: Path, content: str, text: str):
    path = tmp_path / "bad.wrl"
    path.write_text(content)
    with pytest.raises(MeshError) as info:
        read_vrml(path)
    assert text in info.value.message
    assert info.value.file == str(path)
    # load_mesh reports the same, located at the JSON file when given
    with pytest.raises(MeshError) as info:
        load_mesh(path, json_file="modules.json", json_path="$.x")
    assert text in info.value.message and str(path) in info.value.message
    assert info.value.file == "modules.json" and info.value.path == "$.x"


def test_read_vrml_unreadable(tmp_path: Path):
    with pytest.raises(MeshError, match="cannot read"):
        read_vrml(tmp_path / "missing.wrl")
    path = tmp_path / "latin1.wrl"
    path.write_bytes(b"#VRML V2.0 utf8\n# caf\xe9\n")
    with pytest.raises(MeshError, match="cannot decode"):
        read_vrml(path)


def test_read_vrml_gzipped(tmp_path: Path):
    import gzip

    path = tmp_path / "parts.wrl"
    path.write_bytes(gzip.compress(TWO_SHAPES_WRL.encode()))
    assert len(read_vrml(path)) == 2


def test_vrml_scale(tmp_path: Path):
    path = tmp_path / "parts.wrl"
    path.write_text(TWO_SHAPES_WRL)
    plain = load_mesh(path)
    scaled = load_mesh(path, (1.0, -2.0, 3.0))
    assert isinstance(plain, ConvexParts) and isinstance(scaled, ConvexParts)
    for a, b in zip(plain.parts, scaled.parts, strict=True):
        np.testing.assert_allclose(b.vertices, a.vertices * [1.0, -2.0, 3.0])
        np.testing.assert_array_equal(b.faces, a.faces[:, ::-1])
    assert signed_volume(scaled.parts[0]) == pytest.approx(6.0 * signed_volume(plain.parts[0]))


_SEPARATORS = st.sampled_from([" ", ",", "\n", "\t", " , ", ",\n", "  # note\n", "\r\n"])


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture], deadline=None)
@given(sizes=st.lists(st.integers(3, 8), min_size=1, max_size=6), data=st.data())
def test_vrml_fan_triangulation_property(tmp_path: Path, sizes: list[int], data):
    """Any polygon list, written with arbitrary separators, gives sum(n - 2) triangles fanned from corner 0."""
    n_points = 10
    polygons = [data.draw(st.lists(st.integers(0, n_points - 1), min_size=n, max_size=n, unique=True)) for n in sizes]

    def sep() -> str:
        return data.draw(_SEPARATORS)

    points = sep().join(f"{i}{sep()}{i * i}{sep()}{-i}" for i in range(n_points))
    index = sep().join(sep().join(str(i) for i in polygon) + sep() + "-1" for polygon in polygons)
    path = tmp_path / "fan.wrl"
    path.write_text(
        f"#VRML V2.0 utf8\nShape{sep()}{{ geometry IndexedFaceSet {{ coord Coordinate {{ point [{sep()}{points}"
        f"{sep()}] }}{sep()}coordIndex [{index}]{sep()}}} }}\n"
    )
    (mesh,) = read_vrml(path)
    expected = [(p[0], p[k], p[k + 1]) for p in polygons for k in range(1, len(p) - 1)]
    assert len(mesh.faces) == sum(n - 2 for n in sizes)
    source = np.array([[i, i * i, -i] for i in range(n_points)], dtype=float)
    np.testing.assert_array_equal(mesh.vertices[mesh.faces], source[np.array(expected)])
