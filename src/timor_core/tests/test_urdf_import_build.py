"""Issue 24 item 7: the importer makes fixed joints and bodies field by field (``urdf_build.fixed_joint``, ``body``)
and a link's numbers as views of one array per shape (``FloatStack``), for speed: the objects must be those the
constructors make, as immutable, and a module made this way must load back from its JSON to an equal one."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

from timor_core import ModulesDB
from timor_core.common.transforms import readonly, rot_x
from timor_core.errors import FormatError
from timor_core.export.urdf_import import urdf_reader
from timor_core.export.urdf_import.importer import db_from_urdf
from timor_core.export.urdf_import.urdf_build import body, fixed_joint, geometries
from timor_core.export.urdf_import.urdf_numbers import origin, pose_json
from timor_core.export.urdf_import.urdf_reader import FloatStack
from timor_core.model.geometry import Mesh, geometries_from_json
from timor_core.model.parts import Body, Connector, Joint


def _same(a: object, b: object, cls: type) -> None:
    assert type(a) is type(b) is cls
    assert vars(a).keys() == {f.name for f in dataclasses.fields(cls)} == vars(b).keys()
    for f in dataclasses.fields(cls):
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray):
            assert np.array_equal(x, y)
        else:
            assert x == y and type(x) is type(y), f.name


def test_fast_parts_equal_constructed():
    assert not hasattr(Joint, "__post_init__") and not hasattr(Body, "__post_init__")
    pose = readonly(rot_x(0.3))
    fast = fixed_joint("j", "a", "b", pose)
    _same(fast, Joint(id="j", type="fixed", parent="a", child="b", pose_parent=pose), Joint)
    assert fast.limits == Joint(id="j", type="fixed", parent="a", child="b").limits
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.id = "x"  # type: ignore[misc]
    assert fast.limits_json is not fixed_joint("k", "a", "b", pose).limits_json  # no shared mutable field
    inertia, com = readonly(np.diag([1.0, 2.0, 3.0])), readonly(np.array([0.1, 0.0, 0.0]))
    connector = Connector("c", "a", readonly(np.eye(4)), "m", "eef", ())
    made = body("a", 2.0, inertia, com, (connector,), (), ())
    _same(made, Body("a", 2.0, inertia, com, (connector,), (), (), {"_present": ("visual", "collision")}), Body)
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.mass = 1.0  # type: ignore[misc]


_TRIANGLE_STL = "solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\n"


def test_geometries_equal_parsed(tmp_path):
    """The geometries the importer makes from the reader's shapes (``urdf_build.geometries``) are those the module
    JSON's parser makes of the same shapes: each field, its type, the pose read-only; for every kind of shape, posed
    or not, a mesh scaled and mirrored."""
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "m.stl").write_text(_TRIANGLE_STL + "endsolid t\n")
    posed = '<origin xyz="0.1 -0.2 0.3" rpy="0.4 -0.5 0.6"/>'
    shapes = [f'{posed}<geometry><box size="0.1 0.2 0.3"/></geometry>', '<geometry><cylinder radius="0.1" length="2"/>'
              '</geometry>', f'{posed}<geometry><sphere radius="0.5"/></geometry>', '<origin xyz="0 0 1"/><geometry>'
              '<mesh filename="meshes/m.stl" scale="1 -1 2"/></geometry>', '<geometry><mesh filename="meshes/m.stl"/>'
              '</geometry>']  # fmt: skip
    link = "".join(f"<{tag}>{shape}</{tag}>" for shape in shapes for tag in ("visual", "collision"))
    file = tmp_path / "r.urdf"
    reader = urdf_reader.UrdfReader(file, [])
    reader.link(ET.fromstring(f'<link name="a">{link}</link>'))
    for params, path in reader.meshes:
        params["file"] = path.relative_to(tmp_path).as_posix()  # as the importer does
    read = reader.links[0]
    for made, where in ((read.visual, ".visual"), (read.collision, ".collision")):
        fast, parsed = geometries(made, where, tmp_path, file), geometries_from_json(made, where, tmp_path, file)
        assert len(fast) == len(parsed) == len(shapes)
        for a, b in zip(fast, parsed, strict=True):
            _same(a, b, type(b))
            assert not a.pose.flags.writeable and a.pose.dtype == b.pose.dtype
    assert isinstance(fast[3], Mesh) and fast[3].scale == (1.0, -1.0, 2.0)


def test_float_stack_gives_read_only_views_in_order():
    stack = FloatStack(2, 2)
    assert [stack.add((k, 0.0, 0.0, k)) for k in range(3)] == [0, 1, 2]
    arrays = stack.arrays()
    assert [a.tolist() for a in arrays] == [[[k, 0.0], [0.0, k]] for k in range(3)]
    assert all(not a.flags.writeable for a in arrays)
    assert FloatStack(3).arrays() == []


def test_a_made_module_loads_back_equal():
    inertial = '<inertial><origin xyz="0.1 0 0" rpy="0 0.2 0"/><mass value="2"/><inertia ixx="1" iyy="2" izz="3" ixy="0.1" ixz="0" iyz="0"/></inertial>'  # noqa: E501
    text = (
        f'<robot name="r"><link name="a">{inertial}</link><link name="b"/><link name="c">{inertial}</link>'
        '<joint name="f" type="fixed"><parent link="a"/><child link="b"/><origin xyz="0 0 1" rpy="0.1 0 0"/></joint>'
        '<joint name="m" type="revolute"><parent link="b"/><child link="c"/><axis xyz="0 1 0"/>'
        '<limit lower="-1" upper="1" effort="2" velocity="3"/></joint></robot>'
    )
    db = db_from_urdf(text)
    again = ModulesDB.from_json_data(json.loads(db.to_json_string()))
    assert next(iter(again)) == next(iter(db))


def _chain_with_origins(origins: list[str]) -> str:
    links = "".join(f'<link name="l{k}"/>' for k in range(len(origins) + 1))
    joints = "".join(f'<joint name="j{k}" type="fixed"><parent link="l{k}"/><child link="l{k + 1}"/>{o}</joint>'
                     for k, o in enumerate(origins))  # fmt: skip
    return f'<robot name="r">{links}{joints}</robot>'


@pytest.mark.parametrize("most", [4096, 1, 0])
def test_a_repeated_origin_is_read_once_and_each_joint_gets_its_own_pose(monkeypatch, most):
    """The reader remembers the poses of origins by their text (``_ORIGINS_MOST`` of them): each joint's pose must
    be what its own origin says, whatever came before (the same text, other texts, zeros, the bound reached)."""
    monkeypatch.setattr(urdf_reader, "_ORIGINS_MOST", most)
    same = '<origin xyz="0 0 0.1" rpy="0 0.2 0"/>'
    texts = [same, '<origin xyz="0 0 0.1"/>', '<origin rpy="0 0.2 0"/>', same, '<origin xyz="0 0 0.10" rpy="0 0.2 0"/>',
             "<origin/>", "", '<origin xyz="0 0 0" rpy="0 0 0"/>', same, '<origin xyz="1 0 0"/>']  # fmt: skip
    module = next(iter(db_from_urdf(_chain_with_origins(texts * 2))))
    for k, text in enumerate(texts * 2):
        element = ET.fromstring(f"<joint>{text}</joint>")
        expected = np.array(pose_json(origin(element, ("@rpy", "@xyz")))).reshape(4, 4)
        assert np.array_equal(module.joint[f"j{k}"].pose_parent, expected), (k, text)
    poses = {id(module.joint[f"j{k}"].pose_parent) for k in (0, 3, 8, 10, 13, 18)}  # the same text six times
    assert len(poses) == (1 if most else 6)  # read once if there is room to remember it (the first text)


def test_a_long_origin_text_is_not_remembered():
    """Valid, but 400 characters: read each time, not kept (remembered, such texts would keep up to the file's size,
    ``max_file_bytes``, after their elements are dropped)."""
    padded = '<origin xyz="0 0 %s0.1"/>' % (" " * 400)
    module = next(iter(db_from_urdf(_chain_with_origins([padded, padded, '<origin xyz="0 0 0.1"/>'] * 2))))
    poses = [module.joint[f"j{k}"].pose_parent for k in range(6)]
    assert all(np.array_equal(p, poses[2]) for p in poses)
    assert len({id(p) for p in poses[:2]}) == 2 and poses[2] is poses[5]


def test_a_wrong_origin_is_refused_each_time_it_is_written():
    good, bad = '<origin xyz="0 0 0.1"/>', '<origin xyz="0 0 nan"/>'
    for origins, culprit in (([good, bad, bad], "j1"), ([bad, good, bad], "j0")):
        with pytest.raises(FormatError, match=rf"joint\[@name='{culprit}'\]/origin@xyz"):
            db_from_urdf(_chain_with_origins(origins))


def test_the_benchmark_command_runs():
    """``python benchmarks/urdf_import.py --links ... --json`` (benchmarks/README.md) at small sizes: the chain imports
    with every link and the figures are there (no time is asserted)."""
    script = Path(__file__).resolve().parents[3] / "benchmarks" / "urdf_import.py"
    if not script.is_file():
        pytest.skip("benchmarks/ is not beside this checkout's src/")
    out = subprocess.run([sys.executable, str(script), "--links", "20", "200", "--json"], capture_output=True,
                         text=True, check=True, timeout=600)  # fmt: skip
    rows = json.loads(out.stdout)
    assert [r["links"] for r in rows] == [20, 200]
    assert all(r["import_cpu_s"] >= 0 and r["peak_rss_mb"] > 0 for r in rows)
