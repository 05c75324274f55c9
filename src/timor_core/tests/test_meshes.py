"""Tests of timor_core.model.meshes: mesh data, path resolution, STL/OBJ/PLY/DAE loading and caching (VRML:
test_mesh_vrml.py; coal conversion and the real IMPROV meshes: test_mesh_coal.py)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
from mesh_cases import CUBE_F, CUBE_V, signed_volume

from timor_core.errors import InputError, MeshError
from timor_core.model.meshes import (
    MESH_EXTENSIONS,
    ConvexParts,
    MeshData,
    clear_mesh_cache,
    load_mesh,
    resolve_mesh_path,
)


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


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_mesh_cache()
    yield
    clear_mesh_cache()


@pytest.fixture
def cube_stl(tmp_path: Path) -> Path:
    path = tmp_path / "cube.stl"
    path.write_text(_ascii_stl(CUBE_V, CUBE_F))
    return path


# ---------------------------------------------------------------------------------------------------------
# MeshData / ConvexParts
# ---------------------------------------------------------------------------------------------------------


def test_mesh_data_copies_and_freezes_arrays():
    vertices = CUBE_V.copy()
    faces = CUBE_F.astype(np.int32)
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
    a = MeshData(CUBE_V, CUBE_F)
    b = MeshData(CUBE_V + [2.0, 0.0, -1.0], CUBE_F)
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
    (base / "meshes" / "a.stl").write_text(_ascii_stl(CUBE_V, CUBE_F))
    (tmp_path / "outside.stl").write_text(_ascii_stl(CUBE_V, CUBE_F))
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
    assert signed_volume(mesh) == pytest.approx(1.0)
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
    assert signed_volume(mesh) == pytest.approx(abs(np.prod(factors)))


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
    cube_stl.write_text(_ascii_stl(CUBE_V * 2.0, CUBE_F))
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
    path.write_text(_ascii_stl(CUBE_V, CUBE_F))
    assert isinstance(load_mesh(path), MeshData)
