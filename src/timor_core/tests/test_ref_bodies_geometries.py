"""Compatibility suite (issue 13 item 12): the reference toolbox's tests/test_bodies_geometries.py (timor-python
1.1.1) ported to timor_core (geometries and bodies come from CoBRA JSON; parameterizable bodies are the solids of
``timor_core.model.parametric``)."""

from __future__ import annotations

import copy
import itertools
import math

import coal
import numpy as np
import pytest
from conftest import IMPROV_FILE, SHARED

from timor_core.model.geometry import Box, Cylinder, Empty, Sphere, geometries_from_json
from timor_core.model.module import Connector, connectors_compatible
from timor_core.model.parametric import solid_inertia

ASSETS = SHARED / "data" / "cobra" / "tasks" / "assets"


def test_body():
    """ref: test_bodies_geometries.py::test_body (which connectors of two bodies can join)"""

    def con(cid, x, y, gender):
        T = np.eye(4)
        T[:3, 3] = (x, y, 0)
        return Connector(cid, "b", T, gender, "clamp", (1.0,))

    c1, c2, c3 = con("1", 0.4, 0, "f"), con("2", -0.4, 0, "m"), con("3", -0.1, 0.2, "m")
    g1, g2 = copy.copy(c1), copy.copy(c2)
    pairs = {(a.id, b.id) for a, b in itertools.product((c1, c2, c3), (g1, g2)) if connectors_compatible(a, b)}
    assert pairs == {("1", "2"), ("2", "1"), ("3", "1")}


def test_geometry():
    """ref: test_bodies_geometries.py::test_geometry (volumes, equality, copies)"""
    box, cylinder, sphere = Box(x=1, y=1, z=1), Cylinder(r=1, z=5), Sphere(r=1)
    assert box.volume == 1
    assert cylinder.volume == pytest.approx(5 * math.pi)
    assert sphere.volume == pytest.approx(4 / 3 * math.pi)
    assert Empty().volume == 0
    shapes = [box, cylinder, sphere]
    if (ASSETS / "DMU_125P.stl").is_file():
        (mesh,) = geometries_from_json(
            [{"type": "mesh", "parameters": {"file": "DMU_125P.stl", "scale": 0.001}}], "$", ASSETS
        )
        assert mesh.volume > 0
        shapes.append(mesh)
    assert sum(g.volume for g in shapes) == pytest.approx(sum(g.volume for g in reversed(shapes)))
    for a, b in itertools.combinations(shapes, 2):
        assert a != b
    for g in shapes:
        again = copy.deepcopy(g)
        assert again == g and again.volume == pytest.approx(g.volume) and again.to_json() == g.to_json()


def test_parameterizable_body():
    """ref: test_bodies_geometries.py::test_parameterizable_body and ::test_parameterizable_multi_body"""
    for shape, dims, volume in (("box", (1.0, 2.0, 3.0), 6.0), ("cylinder", (0.5, 2.0), math.pi * 0.5),
                                ("sphere", (0.5,), 4 / 3 * math.pi * 0.125)):  # fmt: skip
        mass, inertia = solid_inertia(shape, dims, 1000.0)
        assert mass == pytest.approx(1000.0 * volume)
        assert np.all(np.linalg.eigvalsh(inertia) > 0)


def test_wrl():
    """ref: test_bodies_geometries.py::test_wrl (the VRML convex decomposition over-approximates the STL: wherever a
    cube touches the STL mesh it also touches the decomposition)"""
    stl = IMPROV_FILE.parent / "STLfiles" / "L1.stl"
    if not stl.is_file():
        pytest.skip(f"real IMPROV data not available (expected {stl})")
    candidates = sorted(IMPROV_FILE.parent.rglob("L1*.wrl"))
    if not candidates:
        pytest.skip("no VRML decomposition of L1 in the data")
    wrl = candidates[0]
    base = IMPROV_FILE.parent
    (g_stl,) = geometries_from_json([{"type": "mesh", "parameters": {"file": str(stl.relative_to(base))}}], "$", base)
    (g_wrl,) = geometries_from_json([{"type": "mesh", "parameters": {"file": str(wrl.relative_to(base))}}], "$", base)
    assert g_wrl.volume >= g_stl.volume
    cube = coal.Box(1.0, 1.0, 1.0)
    request, touched = coal.CollisionRequest(), 0
    for x in np.arange(0.0, 1.0, 0.1):
        cube_pose = coal.Transform3s(np.eye(3), np.array([1.0 + x - 0.5, 0.0, 0.0]))
        hit_stl = any(coal.collide(shape, coal.Transform3s(pose[:3, :3], pose[:3, 3]), cube, cube_pose, request,
                                   coal.CollisionResult()) for shape, pose in g_stl.coal_shapes())  # fmt: skip
        hit_wrl = any(coal.collide(shape, coal.Transform3s(pose[:3, :3], pose[:3, 3]), cube, cube_pose, request,
                                   coal.CollisionResult()) for shape, pose in g_wrl.coal_shapes())  # fmt: skip
        assert hit_wrl or not hit_stl
        touched += hit_stl
    assert touched > 0


def test_mesh_color():
    """ref: test_bodies_geometries.py::test_mesh_color"""
    pytest.skip("not applicable: mesh colours are for the meshcat viewer; the viewer is tested in test_viz_viewer")
