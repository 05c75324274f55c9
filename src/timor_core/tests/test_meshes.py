"""Tests of timor_core.model.meshes: path resolution, STL/OBJ/VRML loading, caching and coal conversion."""

from __future__ import annotations

import os
import re
from pathlib import Path

import coal
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from timor_core.errors import InputError, MeshError
from timor_core.model.meshes import (
    MESH_EXTENSIONS,
    ConvexParts,
    MeshData,
    clear_mesh_cache,
    load_mesh,
    read_vrml,
    resolve_mesh_path,
    to_coal_bvh,
    to_coal_convex,
)

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared"
IMPROV = SHARED / "data" / "cobra" / "modules" / "IMPROV"
IMPROV_WRL = sorted((IMPROV / "STLfiles" / "convexDecompose").glob("*.wrl")) if IMPROV.is_dir() else []

# A unit cube [0, 1]^3 as ASCII STL (12 triangles, outward normals).
_CUBE_V = np.array(
    [[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], dtype=float
)
_CUBE_F = np.array(
    [
        [0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
        [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7],
    ]
)  # fmt: skip


def _ascii_stl(vertices: np.ndarray, faces: np.ndarray) -> str:
    lines = ["solid test"]
    for face in faces:
        a, b, c = vertices[face]
        n = np.cross(b - a, c - a)
        n = n / np.linalg.norm(n)
        lines.append(f"  facet normal {n[0]} {n[1]} {n[2]}")
        lines.append("    outer loop")
        lines.extend(f"      vertex {p[0]} {p[1]} {p[2]}" for p in (a, b, c))
        lines.append("    endloop")
        lines.append("  endfacet")
    lines.append("endsolid test")
    return "\n".join(lines) + "\n"


def _signed_volume(mesh: MeshData) -> float:
    a, b, c = (mesh.vertices[mesh.faces[:, k]] for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_mesh_cache()
    yield
    clear_mesh_cache()


@pytest.fixture
def cube_stl(tmp_path: Path) -> Path:
    path = tmp_path / "cube.stl"
    path.write_text(_ascii_stl(_CUBE_V, _CUBE_F))
    return path


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
# MeshData / ConvexParts
# ---------------------------------------------------------------------------------------------------------


def test_mesh_data_copies_and_freezes_arrays():
    vertices = _CUBE_V.copy()
    faces = _CUBE_F.astype(np.int32)
    mesh = MeshData(vertices, faces)
    vertices[0] = 99.0
    assert mesh.vertices[0].tolist() == [0.0, 0.0, 0.0]
    assert mesh.vertices.dtype == np.float64 and mesh.faces.dtype == np.int64
    assert not mesh.vertices.flags.writeable and not mesh.faces.flags.writeable
    with pytest.raises(ValueError):
        mesh.vertices[0, 0] = 1.0
    np.testing.assert_array_equal(mesh.bounds, [[0, 0, 0], [1, 1, 1]])
    assert not mesh.bounds.flags.writeable
    with pytest.raises(AttributeError):
        mesh.vertices = vertices  # frozen


@pytest.mark.parametrize(
    ("vertices", "faces"),
    [
        (np.zeros((3, 2)), [[0, 1, 2]]),
        (np.zeros((3, 3)), np.zeros((0, 3))),
        (np.zeros((3, 3)), [[0, 1, 3]]),
        (np.zeros((3, 3)), [[0, -1, 2]]),
        ([[0, 0, 0], [1, 0, np.nan], [0, 1, 0]], [[0, 1, 2]]),
        ([["a", "b", "c"]], [[0, 0, 0]]),
    ],
)
def test_mesh_data_rejects_bad_arrays(vertices, faces):
    with pytest.raises(MeshError):
        MeshData(vertices, faces)


def test_convex_parts_bounds_and_merge():
    a = MeshData(_CUBE_V, _CUBE_F)
    b = MeshData(_CUBE_V + [2.0, 0.0, -1.0], _CUBE_F)
    parts = ConvexParts((a, b))
    np.testing.assert_array_equal(parts.bounds, [[0, 0, -1], [3, 1, 1]])
    merged = parts.merged()
    assert len(merged.vertices) == 16 and len(merged.faces) == 24
    np.testing.assert_array_equal(merged.vertices[merged.faces[12:]], b.vertices[b.faces])
    with pytest.raises(MeshError):
        ConvexParts(())
    with pytest.raises(MeshError):
        ConvexParts((a, "not a mesh"))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------------
# resolve_mesh_path
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def base_dir(tmp_path: Path) -> Path:
    base = tmp_path / "modules" / "set"
    (base / "meshes").mkdir(parents=True)
    (base / "meshes" / "a.stl").write_text(_ascii_stl(_CUBE_V, _CUBE_F))
    (tmp_path / "outside.stl").write_text(_ascii_stl(_CUBE_V, _CUBE_F))
    return base


def test_resolve_relative_absolute_and_file_uri_inside(base_dir: Path):
    expected = (base_dir / "meshes" / "a.stl").resolve()
    assert resolve_mesh_path("meshes/a.stl", base_dir) == expected
    assert resolve_mesh_path("meshes/../meshes/./a.stl", base_dir) == expected
    assert resolve_mesh_path(str(expected), base_dir) == expected
    assert resolve_mesh_path(expected.as_uri(), base_dir) == expected
    assert resolve_mesh_path("file://localhost" + str(expected), base_dir) == expected


def test_resolve_accepts_symlink_inside(base_dir: Path):
    link = base_dir / "link.stl"
    try:
        link.symlink_to(base_dir / "meshes" / "a.stl")
    except OSError:
        pytest.skip("symlinks not supported here")
    assert resolve_mesh_path("link.stl", base_dir) == (base_dir / "meshes" / "a.stl").resolve()


def _field_error(field: str, base: Path) -> MeshError:
    with pytest.raises(MeshError) as info:
        resolve_mesh_path(field, base, json_file="set/modules.json", json_path="$.modules[0].file")
    err = info.value
    assert isinstance(err, InputError) and isinstance(err, ValueError)
    assert err.file == "set/modules.json"
    assert err.path == "$.modules[0].file"
    assert err.value == field
    assert "set/modules.json: $.modules[0].file: " in str(err)
    return err


@pytest.mark.parametrize(
    "field",
    ["../../etc/passwd", "../outside.stl", "meshes/../../outside.stl", "/etc/passwd", "file:///etc/passwd"],
)
def test_resolve_rejects_escape(field: str, base_dir: Path):
    assert "outside" in str(_field_error(field, base_dir))


def test_resolve_rejects_absolute_path_outside(base_dir: Path):
    outside = (base_dir.parent.parent / "outside.stl").resolve()
    assert outside.is_file()
    assert "outside the module set's folder" in _field_error(str(outside), base_dir).message
    assert "outside the module set's folder" in _field_error(outside.as_uri(), base_dir).message


def test_resolve_rejects_symlink_pointing_outside(base_dir: Path):
    try:
        (base_dir / "meshes" / "evil.stl").symlink_to(base_dir.parent.parent / "outside.stl")
        (base_dir / "evil_dir").symlink_to(base_dir.parent.parent, target_is_directory=True)
    except OSError:
        pytest.skip("symlinks not supported here")
    _field_error("meshes/evil.stl", base_dir)
    _field_error("evil_dir/outside.stl", base_dir)


@pytest.mark.parametrize(
    ("field", "text"),
    [
        ("meshes/missing.stl", "not found"),
        ("meshes", "not a regular file"),
        ("", "non-empty"),
        ("package://set/meshes/a.stl", "unsupported URI scheme"),
        ("http://example.com/a.stl", "unsupported URI scheme"),
        ("file://otherhost/meshes/a.stl", "remote host"),
        ("meshes/a\x00.stl", "NUL"),
    ],
)
def test_resolve_rejects_bad_fields(field: str, text: str, base_dir: Path):
    assert text in _field_error(field, base_dir).message


def test_resolve_error_names_mesh_file_without_json_file(base_dir: Path):
    with pytest.raises(MeshError) as info:
        resolve_mesh_path("meshes/missing.stl", base_dir)
    assert info.value.file is not None and info.value.file.endswith("missing.stl")
    assert info.value.value == "meshes/missing.stl"


# ---------------------------------------------------------------------------------------------------------
# load_mesh: trimesh formats, scale, cache
# ---------------------------------------------------------------------------------------------------------


def test_load_ascii_stl(cube_stl: Path):
    mesh = load_mesh(cube_stl)
    assert isinstance(mesh, MeshData)
    assert mesh.vertices.shape == (8, 3)  # trimesh merges the STL's duplicated corners
    assert mesh.faces.shape == (12, 3)
    np.testing.assert_allclose(mesh.bounds, [[0, 0, 0], [1, 1, 1]])
    assert _signed_volume(mesh) == pytest.approx(1.0)
    assert not mesh.vertices.flags.writeable and not mesh.faces.flags.writeable


def test_load_obj_with_two_objects_concatenates(tmp_path: Path):
    path = tmp_path / "two.obj"
    path.write_text(
        "# two objects\no a\nv 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\no b\nv 0 0 1\nv 1 0 1\nv 0 1 1\nv 1 1 1\nf 4 5 7 6\n"
    )
    mesh = load_mesh(path)
    assert isinstance(mesh, MeshData)
    assert len(mesh.faces) == 3  # one triangle plus a triangulated quad
    np.testing.assert_allclose(mesh.bounds, [[0, 0, 0], [1, 1, 1]])


def test_load_ascii_ply(tmp_path: Path):
    path = tmp_path / "quad.ply"
    path.write_text(
        "ply\nformat ascii 1.0\nelement vertex 4\nproperty float x\nproperty float y\nproperty float z\n"
        "element face 1\nproperty list uchar int vertex_indices\nend_header\n"
        "0 0 0\n2 0 0\n2 1 0\n0 1 0\n4 0 1 2 3\n"
    )
    mesh = load_mesh(path)
    assert isinstance(mesh, MeshData) and len(mesh.faces) == 2
    np.testing.assert_allclose(mesh.bounds, [[0, 0, 0], [2, 1, 0]])


_DAE = """<?xml version="1.0" encoding="utf-8"?>
<COLLADA xmlns="http://www.collada.org/2005/11/COLLADASchema" version="1.4.1">
  <asset><unit name="meter" meter="1"/><up_axis>Z_UP</up_axis></asset>
  <library_geometries><geometry id="g"><mesh>
    <source id="p"><float_array id="pa" count="9">0 0 0 1 0 0 0 1 0</float_array>
      <technique_common><accessor source="#pa" count="3" stride="3">
        <param name="X" type="float"/><param name="Y" type="float"/><param name="Z" type="float"/>
      </accessor></technique_common></source>
    <vertices id="v"><input semantic="POSITION" source="#p"/></vertices>
    <triangles count="1"><input semantic="VERTEX" source="#v" offset="0"/><p>0 1 2</p></triangles>
  </mesh></geometry></library_geometries>
  <library_visual_scenes><visual_scene id="s"><node id="n"><instance_geometry url="#g"/></node>
  </visual_scene></library_visual_scenes>
  <scene><instance_visual_scene url="#s"/></scene>
</COLLADA>
"""


def test_load_dae(tmp_path: Path):
    path = tmp_path / "tri.dae"
    path.write_text(_DAE)
    mesh = load_mesh(path, (2.0, 2.0, 2.0))
    assert isinstance(mesh, MeshData) and len(mesh.faces) == 1
    np.testing.assert_allclose(mesh.bounds, [[0, 0, 0], [2, 2, 0]])


@pytest.mark.parametrize("scale", [(2.0, 3.0, 0.5), (0.001, 0.001, 0.001), 4.0, [-1.0, 1.0, 1.0]])
def test_load_applies_scale(cube_stl: Path, scale):
    mesh = load_mesh(cube_stl, scale)
    factors = np.broadcast_to(np.asarray(scale, dtype=float), (3,))
    expected = np.sort(np.array([[0, 0, 0], factors]), axis=0)
    np.testing.assert_allclose(mesh.bounds, expected)
    # winding stays outward even for mirroring scales
    assert _signed_volume(mesh) == pytest.approx(abs(np.prod(factors)))


@pytest.mark.parametrize("scale", [(1.0, 0.0, 1.0), (1.0, np.nan, 1.0), (1.0, 2.0), "big"])
def test_load_rejects_bad_scale(cube_stl: Path, scale):
    with pytest.raises(MeshError) as info:
        load_mesh(cube_stl, scale, json_file="m.json", json_path="$.scale")
    assert info.value.file == "m.json" and info.value.path == "$.scale"


def test_load_cache_returns_same_object(cube_stl: Path, tmp_path: Path):
    first = load_mesh(cube_stl)
    assert load_mesh(cube_stl) is first
    assert load_mesh(str(cube_stl), [1, 1, 1]) is first
    assert load_mesh(tmp_path / "." / "cube.stl") is first
    scaled = load_mesh(cube_stl, (2, 2, 2))
    assert scaled is not first and load_mesh(cube_stl, (2.0, 2.0, 2.0)) is scaled
    clear_mesh_cache()
    assert load_mesh(cube_stl) is not first


def test_load_cache_notices_modified_file(cube_stl: Path):
    first = load_mesh(cube_stl)
    cube_stl.write_text(_ascii_stl(_CUBE_V * 2.0, _CUBE_F))
    stat = cube_stl.stat()
    os.utime(cube_stl, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))
    second = load_mesh(cube_stl)
    assert second is not first
    np.testing.assert_allclose(second.bounds, [[0, 0, 0], [2, 2, 2]])


@pytest.mark.parametrize(
    ("name", "content", "text"),
    [
        ("mesh.xyz", "1 2 3\n", "unknown mesh file extension"),
        ("empty.stl", "solid x\nendsolid x\n", "no triangles"),
        ("garbage.stl", "this is not an STL file\n", "no triangles"),
        ("empty.obj", "", "no triangles"),
        ("trunc.stl", b"\x00" * 80 + (5).to_bytes(4, "little") + b"\x01" * 30, "no triangles"),
    ],
)
def test_load_rejects_bad_files(tmp_path: Path, name: str, content, text: str):
    path = tmp_path / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    with pytest.raises(MeshError) as info:
        load_mesh(path)
    assert text in info.value.message
    assert info.value.file == str(path) and info.value.value == str(path)


def test_load_missing_file_and_json_location(tmp_path: Path):
    path = tmp_path / "missing.stl"
    with pytest.raises(MeshError, match="not found") as info:
        load_mesh(path)
    assert info.value.file == str(path)
    with pytest.raises(MeshError) as info:
        load_mesh(path, json_file="set/modules.json", json_path="$.bodies[1].collision.file")
    err = info.value
    assert err.file == "set/modules.json" and err.path == "$.bodies[1].collision.file"
    assert str(path) in err.message  # the mesh file is still named
    with pytest.raises(MeshError, match="not a regular file"):
        (tmp_path / "dir.stl").mkdir()
        load_mesh(tmp_path / "dir.stl")


def test_supported_extensions():
    assert {".stl", ".obj", ".dae", ".ply", ".wrl"} <= MESH_EXTENSIONS


def test_load_uppercase_extension(tmp_path: Path):
    path = tmp_path / "CUBE.STL"
    path.write_text(_ascii_stl(_CUBE_V, _CUBE_F))
    assert isinstance(load_mesh(path), MeshData)


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
    assert _signed_volume(scaled.parts[0]) == pytest.approx(6.0 * _signed_volume(plain.parts[0]))


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


# ---------------------------------------------------------------------------------------------------------
# coal conversion
# ---------------------------------------------------------------------------------------------------------


def _distance(geometry, pose_translation, other=None) -> float:
    other = other if other is not None else coal.Box(1.0, 1.0, 1.0)
    request, result = coal.DistanceRequest(), coal.DistanceResult()
    return coal.distance(
        geometry, coal.Transform3s(), other, coal.Transform3s(np.eye(3), np.asarray(pose_translation, float)),
        request, result,
    )  # fmt: skip


def _collide(geometry, pose_translation) -> bool:
    request, result = coal.CollisionRequest(), coal.CollisionResult()
    coal.collide(
        geometry, coal.Transform3s(), coal.Box(1.0, 1.0, 1.0),
        coal.Transform3s(np.eye(3), np.asarray(pose_translation, float)), request, result,
    )  # fmt: skip
    return result.isCollision()


# An L-shaped (concave) prism: the unit cube's footprint minus the quadrant x > 0.5, y > 0.5.
def _l_prism() -> MeshData:
    outline = np.array([[0, 0], [1, 0], [1, 0.5], [0.5, 0.5], [0.5, 1], [0, 1]], dtype=float)
    vertices = np.vstack([np.c_[outline, np.zeros(6)], np.c_[outline, np.ones(6)]])
    bottom = [[0, 2, 1], [0, 3, 2], [0, 5, 3], [5, 4, 3]]
    top = [[6 + a, 6 + c, 6 + b] for a, b, c in bottom]
    sides = []
    for i in range(6):
        j = (i + 1) % 6
        sides += [[i, j, 6 + j], [i, 6 + j, 6 + i]]
    return MeshData(vertices, bottom + top + sides)


def test_coal_bvh_distance_and_collision():
    mesh = MeshData(_CUBE_V, _CUBE_F)
    bvh = to_coal_bvh(mesh)
    assert isinstance(bvh, coal.BVHModelOBBRSS)
    assert bvh.num_tris == 12 and bvh.num_vertices == 8
    assert _distance(bvh, [3.0, 0.5, 0.5]) == pytest.approx(1.5, abs=1e-6)
    assert _collide(bvh, [1.2, 0.5, 0.5])
    assert not _collide(bvh, [1.6, 0.5, 0.5])
    assert to_coal_bvh(mesh) is bvh
    assert to_coal_bvh(MeshData(_CUBE_V, _CUBE_F)) is not bvh  # cached per MeshData object


def test_coal_convex_is_hull_of_concave_mesh():
    mesh = _l_prism()
    convex = to_coal_convex(mesh)
    bvh = to_coal_bvh(mesh)
    assert isinstance(convex, coal.ConvexBase)
    assert convex.num_points == 10  # every corner of the L except the two reflex ones
    # a small box in the notch of the L (but inside x + y <= 1.5): free for the mesh, colliding with the hull
    notch = [0.7, 0.7, 0.5]
    small = coal.Box(0.1, 0.1, 0.1)
    assert _distance(bvh, notch, small) == pytest.approx(0.15, abs=1e-6)
    assert not _collide_with(bvh, notch, small)
    assert _collide_with(convex, notch, small)
    assert _distance(convex, [3.0, 0.5, 0.5]) == pytest.approx(1.5, abs=1e-6)
    assert to_coal_convex(mesh) is convex


def _collide_with(geometry, translation, other) -> bool:
    request, result = coal.CollisionRequest(), coal.CollisionResult()
    coal.collide(
        geometry, coal.Transform3s(), other, coal.Transform3s(np.eye(3), np.asarray(translation, float)),
        request, result,
    )  # fmt: skip
    return result.isCollision()


def test_coal_convex_matches_coal_hull_on_random_points():
    rng = np.random.default_rng(7)
    points = rng.normal(size=(400, 3))
    mesh = MeshData(points, [[0, 1, 2]])
    convex = to_coal_convex(mesh)
    reference = coal.Convex.convexHull(_vec3s(points), False, None)
    assert convex.num_points == reference.num_points
    for _ in range(50):
        direction = rng.normal(size=3)
        target = 6.0 * direction / np.linalg.norm(direction)
        assert _distance(convex, target) == pytest.approx(_distance(reference, target), abs=1e-6)


def _vec3s(points: np.ndarray):
    vector = coal.StdVec_Vec3s()
    vector.extend(list(np.asarray(points, dtype=float)))
    return vector


def test_coal_convex_flat_and_degenerate_meshes():
    quad = MeshData([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], [[0, 1, 2], [0, 2, 3]])
    flat = to_coal_convex(quad)  # coal's own convexHull segfaults on this input
    assert _distance(flat, [0.5, 0.5, 2.0]) == pytest.approx(1.5, abs=1e-6)
    assert _collide(flat, [0.5, 0.5, 0.2])
    triangle = MeshData([[0, 0, 0], [1, 0, 0], [0, 1, 0]], [[0, 1, 2]])
    assert _distance(to_coal_convex(triangle), [0.2, 0.2, -2.0]) == pytest.approx(1.5, abs=1e-6)
    line = MeshData([[0, 0, 0], [1, 0, 0], [2, 0, 0]], [[0, 1, 2]])
    with pytest.raises(MeshError, match="degenerate"):
        to_coal_convex(line)


# ---------------------------------------------------------------------------------------------------------
# The real IMPROV module set
# ---------------------------------------------------------------------------------------------------------


def _require_improv() -> None:
    if not IMPROV_WRL:
        pytest.skip(f"IMPROV data not found at {IMPROV} (the 'shared' folder beside the repository)")


@pytest.mark.parametrize("wrl", IMPROV_WRL or [None], ids=lambda p: p.name if p else "absent")
def test_improv_convex_decomposition(wrl: Path | None):
    _require_improv()
    assert wrl is not None
    base = IMPROV
    relative = wrl.relative_to(base).as_posix()
    parts = load_mesh(resolve_mesh_path(relative, base, json_file=base / "modules.json"))
    assert isinstance(parts, ConvexParts)
    shapes = len(re.findall(r"\bShape\s*\{", wrl.read_text()))
    assert shapes >= 1 and len(parts.parts) == shapes
    # e.g. convexDecompose/L1.stl.wrl decomposes the visual mesh L1.stl
    visual = load_mesh(resolve_mesh_path(f"STLfiles/{wrl.name.removesuffix('.wrl')}", base))
    assert isinstance(visual, MeshData)
    margin = 0.005
    for part in parts.parts:
        assert len(part.faces) >= 4
        assert np.all(part.bounds[0] >= visual.bounds[0] - margin)
        assert np.all(part.bounds[1] <= visual.bounds[1] + margin)
    # the decomposition covers the visual mesh (bounds agree to within the margin)
    np.testing.assert_allclose(parts.bounds, visual.bounds, atol=margin)
    # coal objects for both and a sanity check of queries against a box
    hulls = [to_coal_convex(part) for part in parts.parts]
    bvh = to_coal_bvh(visual)
    assert bvh.num_tris == len(visual.faces)
    far = visual.bounds[1] + [1.0, 0.0, 0.0]
    far[1:] = visual.bounds.mean(axis=0)[1:]
    for geometry in [*hulls, bvh]:
        assert _distance(geometry, far) > 0.4
        assert not _collide(geometry, far)
    centre = parts.parts[0].vertices.mean(axis=0)
    assert _collide(hulls[0], centre) and _collide(bvh, centre)
    # scale is applied: millimetres instead of metres
    in_mm = load_mesh(wrl, (1000.0, 1000.0, 1000.0))
    assert isinstance(in_mm, ConvexParts)
    np.testing.assert_allclose(in_mm.bounds, parts.bounds * 1000.0, rtol=1e-12)
    assert load_mesh(wrl) is parts


def test_improv_visual_meshes_load_and_cache():
    _require_improv()
    stls = sorted((IMPROV / "STLfiles").glob("*.stl"))
    assert stls
    for stl in stls:
        mesh = load_mesh(stl)
        assert isinstance(mesh, MeshData) and len(mesh.faces) > 100
        assert not mesh.vertices.flags.writeable
        assert load_mesh(stl) is mesh
        scaled = load_mesh(stl, (2.0, 1.0, -1.0))
        np.testing.assert_allclose(scaled.bounds, np.sort(mesh.bounds * [2.0, 1.0, -1.0], axis=0))


@given(st.lists(st.tuples(*[st.sampled_from([-1.0, -0.0, 0.0, 0.5, 2.0])] * 3), min_size=1, max_size=40))
def test_unique_rows_is_numpys_unique_rows(rows):
    from timor_core.model.meshes import _unique_rows

    a = np.array(rows)
    expected = np.unique(a + 0.0, axis=0)  # + 0.0 turns -0.0 into 0.0: numpy compares the rows' bytes
    np.testing.assert_array_equal(_unique_rows(a), expected)
