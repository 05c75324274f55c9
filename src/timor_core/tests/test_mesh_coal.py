"""Tests of timor_core.model.meshes' coal conversion (BVH and convex hulls, flat and degenerate meshes) and of the
real IMPROV module set's meshes (convex decomposition, visual meshes) when ../shared is present."""

from __future__ import annotations

import re
from pathlib import Path

import coal
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from mesh_cases import CUBE_F, CUBE_V

from timor_core.errors import MeshError
from timor_core.model.meshes import (
    ConvexParts,
    MeshData,
    clear_mesh_cache,
    load_mesh,
    resolve_mesh_path,
    to_coal_bvh,
    to_coal_convex,
)

SHARED = Path(__file__).resolve().parents[3] / ".." / "shared"
IMPROV = SHARED / "data" / "cobra" / "modules" / "IMPROV"
IMPROV_WRL = sorted((IMPROV / "STLfiles" / "convexDecompose").glob("*.wrl")) if IMPROV.is_dir() else []


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_mesh_cache()
    yield
    clear_mesh_cache()


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
    mesh = MeshData(CUBE_V, CUBE_F)
    bvh = to_coal_bvh(mesh)
    assert isinstance(bvh, coal.BVHModelOBBRSS)
    assert bvh.num_tris == 12 and bvh.num_vertices == 8
    assert _distance(bvh, [3.0, 0.5, 0.5]) == pytest.approx(1.5, abs=1e-6)
    assert _collide(bvh, [1.2, 0.5, 0.5])
    assert not _collide(bvh, [1.6, 0.5, 0.5])
    assert to_coal_bvh(mesh) is bvh
    assert to_coal_bvh(MeshData(CUBE_V, CUBE_F)) is not bvh  # cached per MeshData object


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
