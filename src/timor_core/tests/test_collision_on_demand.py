"""A robot's coal collision model is made on its first use (``robot.collision``, a collision query): a caller of
kinematics alone no longer waits for its meshes' BVH trees. What can be wrong with a collision mesh (a file that
does not parse, a convex decomposition without volume) still fails the robot's build, named, as before."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from timor_core.errors import MeshError
from timor_core.export.urdf_import.importer import assembly_from_urdf
from timor_core.model import meshes

_STL = """solid {name}
facet normal 0 0 -1
outer loop
vertex 0 0 0
vertex {s} {s} 0
vertex {s} 0 0
endloop
endfacet
facet normal 0 0 -1
outer loop
vertex 0 0 0
vertex 0 {s} 0
vertex {s} {s} 0
endloop
endfacet
facet normal 0 -1 0
outer loop
vertex 0 0 0
vertex {s} 0 0
vertex 0 0 {s}
endloop
endfacet
endsolid {name}
"""

_LINE_WRL = """#VRML V2.0 utf8
Shape { geometry IndexedFaceSet { coord Coordinate { point [ 0 0 0, 1 0 0, 2 0 0 ] } coordIndex [ 0 1 2 -1 ] } }
"""


def _urdf(folder, collision: str) -> str:
    """Two links on a revolute joint, each with a collision mesh (the second one's file named ``collision``) and
    a box."""
    inertial = '<inertial><mass value="1"/><inertia ixx="0.1" iyy="0.1" izz="0.1"/></inertial>'
    box = '<collision><origin xyz="0 0 0.3"/><geometry><box size="0.1 0.1 0.1"/></geometry></collision>'
    link = '<link name="{n}">' + inertial + '<collision><geometry><mesh filename="{f}"/></geometry></collision>'
    link += box + "</link>"
    joint = ('<joint name="j" type="revolute"><parent link="a"/><child link="b"/><origin xyz="0 0 0.5"/>'
             '<axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>')  # fmt: skip
    text = f'<robot name="r">{link.format(n="a", f="a.stl")}{link.format(n="b", f=collision)}{joint}</robot>'
    (folder / "r.urdf").write_text(text)
    return folder / "r.urdf"


@pytest.fixture
def trees_built(monkeypatch) -> list:
    """Every mesh a BVH tree is built for (``meshes.to_coal_bvh``, which ``Mesh.coal_shapes`` calls)."""
    built: list = []
    build = meshes.to_coal_bvh

    def counting(mesh):
        built.append(mesh)
        return build(mesh)

    monkeypatch.setattr(meshes, "to_coal_bvh", counting)
    return built


def test_kinematics_builds_no_bvh_tree_and_the_first_collision_query_builds_them(tmp_path, trees_built):
    (tmp_path / "a.stl").write_text(_STL.format(name="a", s="0.11"))  # sizes of their own: new to the mesh cache
    (tmp_path / "b.stl").write_text(_STL.format(name="b", s="0.13"))
    robot = assembly_from_urdf(_urdf(tmp_path, "b.stl")).robot
    q = np.array([0.4])
    assert robot.fk(q).shape == (4, 4) and robot.jacobian(q).shape == (6, 1) and robot.mass == pytest.approx(2.0)
    assert robot.static_torque(q).shape == (1,)
    assert trees_built == []  # kinematics and dynamics: no tree
    assert robot.collision.ngeoms == 4  # two meshes, two boxes
    assert len(trees_built) == 2
    assert robot.collision is robot.collision  # made once
    assert robot.has_self_collision(q) in (True, False) and len(trees_built) == 2
    names = {name for pair in robot.collision_pairs for name in pair}
    assert names <= {g.name for g in robot.collision.geometryObjects}


def test_a_collision_mesh_that_does_not_parse_fails_the_build_naming_it(tmp_path, trees_built):
    (tmp_path / "a.stl").write_text(_STL.format(name="a", s="0.17"))
    (tmp_path / "broken.stl").write_text("solid x\n facet normal 0 0 1\n  outer loop\n   vertex 0 0\nendsolid x\n")
    assembly = assembly_from_urdf(_urdf(tmp_path, "broken.stl"))  # the import only finds the file
    with pytest.raises(MeshError) as err:
        assembly.robot  # noqa: B018
    assert "broken.stl" in str(err.value)
    assert trees_built == []  # refused before any tree was built


def test_a_convex_decomposition_without_volume_fails_the_build(tmp_path):
    (tmp_path / "a.stl").write_text(_STL.format(name="a", s="0.19"))
    (tmp_path / "line.wrl").write_text(_LINE_WRL)
    assembly = assembly_from_urdf(_urdf(tmp_path, "line.wrl"))
    with pytest.raises(MeshError, match="cannot build a convex hull"):
        assembly.robot  # noqa: B018


def test_threads_asking_at_once_get_one_model(tmp_path):
    """The model is made once, whichever of several threads asks first (the others wait for it)."""
    (tmp_path / "a.stl").write_text(_STL.format(name="a", s="0.23"))
    (tmp_path / "b.stl").write_text(_STL.format(name="b", s="0.29"))
    robot = assembly_from_urdf(_urdf(tmp_path, "b.stl")).robot
    make, calls = robot._collision, []

    def slow():  # a build long enough for every thread to ask meanwhile
        calls.append(1)
        time.sleep(0.2)
        return make()

    robot._collision = slow
    with ThreadPoolExecutor(4) as pool:
        models = list(pool.map(lambda _: robot.collision, range(4)))
    assert len(calls) == 1 and all(m is models[0] for m in models) and models[0].ngeoms == 4


def test_the_self_collision_data_made_on_first_use_answers_in_any_order():
    """The robot's self-collision data (``robot_collisions._self_data``, s54-sweep) is made by the first query that
    needs it: ``self_collisions``, ``has_self_collision``, a task's checker and ``collision_pairs`` first used in
    any order answer as on a robot used in the usual order (review of s54-sweep)."""
    from itertools import permutations

    from timor_core import ModuleAssembly, ModulesDB
    from timor_core.common.transforms import translation
    from timor_core.model.geometry import Sphere
    from timor_core.task import Obstacle, Task, TaskHeader

    db, ids = ModulesDB.from_name("geometric_primitive_modules"), ("base", "J1", "J2", "i_30", "J2", "i_30", "J1", "J2")
    task = Task(TaskHeader("ball"), obstacles=[Obstacle("ball", (Sphere(pose=translation((0.3, 0, 0.4)), r=0.1),))])
    reference = ModuleAssembly.from_serial_modules(db, ids).robot
    rng = np.random.default_rng(4)
    qs = [reference.random_configuration(rng) for _ in range(60)]
    want = [(reference.self_collisions(q), reference.has_self_collision(q), reference.collisions(q, task)) for q in qs]
    assert any(w[0] for w in want) and not all(w[0] for w in want) and any(w[2] != w[0] for w in want)
    first = {
        "self_collisions": lambda robot: robot.self_collisions(qs[0]),
        "has_self_collision": lambda robot: robot.has_self_collision(qs[0]),
        "checker": lambda robot: robot.collision_checker(task).collisions(qs[0]),
        "pairs": lambda robot: robot.collision_pairs,
    }
    for order in permutations(first):
        robot = ModuleAssembly.from_serial_modules(db, ids).robot
        for name in order:
            first[name](robot)
        got = [(robot.self_collisions(q), robot.has_self_collision(q), robot.collisions(q, task)) for q in qs]
        assert got == want, order
