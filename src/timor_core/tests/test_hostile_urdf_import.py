"""Hostile input, third round (issue 36): URDF import and ``timor import``.

Every mesh an import reads or copies is resolved (symlinks and ``..`` followed) and must lie inside the folder the
user allowed (the package's folder for ``package://``, else the URDF's folder or a given package folder): anything
else is an UntrustedPathError naming the URI and the folder. Two imports into one folder keep their own meshes.
Every number read from the URDF is finite and in range before use (an axis whose length overflows, a negative limit,
masses whose sum overflows), named by joint or link and field. The fuzz test runs under a memory and a time cap.
"""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hostile import assert_clean_error, memory_cap, run_cli, time_cap
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from timor_core import ModuleAssembly, ModulesDB
from timor_core.errors import FormatError, InputError, UntrustedPathError, ValidationError
from timor_core.export.urdf_import.importer import ToolConnector, db_from_urdf
from timor_core.export.urdf_import.urdf_numbers import MIN_MESH_SCALE, URDF_MAX_VALUE
from timor_core.limits import limits, override_limits
from timor_core.model.geometry import Mesh


def _stl(seed: int) -> bytes:
    """A small binary STL whose content depends on ``seed`` (two different meshes of one name)."""
    rng = np.random.default_rng(seed)
    record = np.zeros(4, dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")])
    record["v"] = rng.random((4, 3, 3))
    return b"\0" * 80 + np.uint32(4).tobytes() + record.tobytes()


def _urdf(mesh: str = "", *, axis: str = "0 0 1", limit: str = 'effort="10" velocity="1"', masses=(1.0, 1.0)) -> str:
    visual = f'<visual><geometry><mesh filename="{mesh}"/></geometry></visual>' if mesh else ""
    return f"""<robot name="arm">
  <link name="base"><inertial><mass value="{masses[0]!r}"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0"
   iyz="0"/></inertial>{visual}</link>
  <link name="tool"><inertial><mass value="{masses[1]!r}"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0"
   iyz="0"/></inertial></link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="tool"/><axis xyz="{axis}"/>
    <limit lower="-1" upper="1" {limit}/></joint>
</robot>"""


def _layout(tmp_path: Path, mesh: str) -> tuple[Path, Path]:
    """``pkgs/pkg/robot.urdf`` naming ``mesh``, ``pkgs/pkg/meshes/link.stl`` inside, ``outside/cad/gripper.stl``
    outside the package: the URDF file and the package folder."""
    (tmp_path / "pkgs" / "pkg" / "meshes").mkdir(parents=True)
    (tmp_path / "pkgs" / "pkg" / "meshes" / "link.stl").write_bytes(_stl(0))
    (tmp_path / "outside" / "cad").mkdir(parents=True)
    (tmp_path / "outside" / "cad" / "gripper.stl").write_bytes(_stl(1))
    urdf = tmp_path / "pkgs" / "pkg" / "robot.urdf"
    urdf.write_text(_urdf(mesh))
    return urdf, tmp_path / "pkgs"


# -- files: inside the allowed folder, symlinks and '..' followed ----------------------------------------------------


def test_a_package_uri_climbing_out_of_its_package_is_refused_and_nothing_copied(tmp_path):
    uri = "package://pkg/../../outside/cad/gripper.stl"
    urdf, pkgs = _layout(tmp_path, uri)
    out = tmp_path / "out"
    proc = run_cli(["import", str(urdf), "--package-dir", str(pkgs), "-o", str(out / "modules.json")], timeout=120)
    assert proc.returncode == 2
    assert_clean_error(proc, uri, str((pkgs / "pkg").resolve()), "link[@name='base']/visual[1]/mesh@filename")
    assert not out.exists() or not any(out.rglob("*.stl"))


@pytest.mark.parametrize(
    "mesh",
    [
        "package://pkg/meshes/evil.stl",  # a symlink inside the package pointing outside
        "meshes/evil.stl",  # the same, relative to the URDF
        "file://{outside}",
        "../../outside/cad/gripper.stl",
    ],
)
def test_a_mesh_outside_the_allowed_folder_is_refused_naming_uri_and_folder(tmp_path, mesh):
    outside = tmp_path / "outside" / "cad" / "gripper.stl"
    mesh = mesh.format(outside=outside)
    urdf, pkgs = _layout(tmp_path, mesh)
    os.symlink(outside, pkgs / "pkg" / "meshes" / "evil.stl")
    with pytest.raises(UntrustedPathError) as err:
        db_from_urdf(urdf, [pkgs])
    assert mesh in str(err.value) and "outside the allowed folder" in str(err.value) and str(urdf) in str(err.value)
    assert str((pkgs / "pkg").resolve()) in str(err.value)  # the package's folder, also the URDF's


def test_meshes_inside_the_allowed_folders_still_import(tmp_path):
    for k, mesh in enumerate(["package://pkg/meshes/link.stl", "meshes/link.stl", "file://{urdf_dir}/meshes/link.stl"]):
        urdf, pkgs = _layout(tmp_path / str(k), mesh.format(urdf_dir=tmp_path / str(k) / "pkgs" / "pkg"))
        db = db_from_urdf(urdf, [pkgs])
        assert [m.path for m in db.meshes()] == [(pkgs / "pkg" / "meshes" / "link.stl").resolve()]


def test_two_imports_into_one_folder_keep_their_own_meshes(tmp_path):
    out = tmp_path / "out"
    sources = []
    for k in (1, 2):
        urdf, pkgs = _layout(tmp_path / f"robot{k}", "meshes/link.stl")  # same name, other content
        (pkgs / "pkg" / "meshes" / "link.stl").write_bytes(_stl(10 + k))
        sources.append((pkgs / "pkg" / "meshes" / "link.stl").read_bytes())
        proc = run_cli(["import", str(urdf), "-o", str(out / f"robot{k}.json")], timeout=120)
        assert proc.returncode == 0, proc.stderr
    for k, source in zip((1, 2), sources):
        meshes = ModulesDB.from_json_file(out / f"robot{k}.json").meshes()
        assert [m.path.read_bytes() for m in meshes] == [source], k
    again = run_cli(["import", str(tmp_path / "robot2" / "pkgs" / "pkg" / "robot.urdf"), "-o", str(out / "r.json")])
    assert again.returncode == 0 and len(list(out.rglob("*.stl"))) == 2  # the same content is not copied twice


# -- numbers ----------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields, where, error",
    [
        ({"axis": "1e200 1e200 0"}, "joint[@name='j1']/axis@xyz", ValidationError),
        ({"axis": "1e-200 0 0"}, "joint[@name='j1']/axis@xyz", ValidationError),
        ({"limit": 'effort="-5" velocity="1"'}, "joint[@name='j1']/limit@effort", ValidationError),
        ({"limit": 'effort="5" velocity="-1"'}, "joint[@name='j1']/limit@velocity", ValidationError),
        ({"masses": (1e308, 1e308)}, "link[@name='base']/inertial/mass@value", ValidationError),  # out of range
        ({"masses": (1.0, math.inf)}, "link[@name='tool']/inertial/mass@value", InputError),
    ],
)
@pytest.mark.invalid_urdf
def test_urdf_numbers_out_of_range_are_refused_naming_the_element_and_field(tmp_path, fields, where, error):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(_urdf(**fields))
    with pytest.raises(error) as err:
        db_from_urdf(urdf)
    assert str(urdf) in str(err.value) and where in str(err.value)


def test_a_tool_connector_size_must_be_finite(tmp_path):
    urdf = tmp_path / "robot.urdf"
    urdf.write_text(_urdf())
    proc = run_cli(["import", str(urdf), "-o", str(tmp_path / "m.json"), "--tool-connector", "robco:nan"])
    assert proc.returncode == 2 and not (tmp_path / "m.json").exists()
    assert_clean_error(proc, "--tool-connector", "nan")
    with pytest.raises(InputError, match="tool_connector.size"):
        db_from_urdf(urdf, tool_connector=ToolConnector("robco", (math.inf,)))
    db = db_from_urdf(urdf, tool_connector=ToolConnector("robco", (0.08,)))
    assert [c.size for m in db for b in m.bodies for c in b.connectors if c.type == "robco"] == [(0.08,)]


_NUMBERS = {
    "joint_xyz": "0 0 0.1", "joint_rpy": "0 0 0", "inertial_xyz": "0 0 0.01", "inertial_rpy": "0 0 0", "mass": "1",
    "ixx": "1", "ixy": "0", "ixz": "0", "iyy": "1", "iyz": "0", "izz": "1", "visual_xyz": "0 0 0",
    "visual_rpy": "0 0 0", "box": "0.1 0.1 0.1", "radius": "0.05", "length": "0.1", "sphere": "0.05",
    "scale": "1 1 1", "axis": "0 0 1", "lower": "-1", "upper": "1", "effort": "10", "velocity": "1",
    "damping": "0.1", "friction": "0.1",
}  # fmt: skip
"""Every number the import reads, by a name, as the text of its attribute in ``_numbers_urdf``."""


def _numbers_urdf(**numbers: str) -> str:
    """A two-link URDF with every kind of number the import reads (``_NUMBERS``, some replaced by ``numbers``); its
    mesh is ``meshes/link.stl`` beside it."""
    n = {**_NUMBERS, **numbers}
    inertia = " ".join(f'{k}="{n[k]}"' for k in ("ixx", "ixy", "ixz", "iyy", "iyz", "izz"))
    return f"""<robot name="arm">
  <link name="base"><inertial><origin xyz="{n["inertial_xyz"]}" rpy="{n["inertial_rpy"]}"/><mass value="{n["mass"]}"/>
    <inertia {inertia}/></inertial>
    <visual><origin xyz="{n["visual_xyz"]}" rpy="{n["visual_rpy"]}"/><geometry><box size="{n["box"]}"/></geometry></visual>
    <visual><geometry><mesh filename="meshes/link.stl" scale="{n["scale"]}"/></geometry></visual>
    <collision><geometry><cylinder radius="{n["radius"]}" length="{n["length"]}"/></geometry></collision>
    <collision><geometry><sphere radius="{n["sphere"]}"/></geometry></collision></link>
  <link name="tool"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="j1" type="revolute"><parent link="base"/><child link="tool"/>
    <origin xyz="{n["joint_xyz"]}" rpy="{n["joint_rpy"]}"/><axis xyz="{n["axis"]}"/>
    <limit lower="{n["lower"]}" upper="{n["upper"]}" effort="{n["effort"]}" velocity="{n["velocity"]}"/>
    <dynamics damping="{n["damping"]}" friction="{n["friction"]}"/></joint>
</robot>"""  # noqa: E501


def _write_numbers_urdf(folder: Path, **numbers: str) -> Path:
    (folder / "meshes").mkdir(parents=True, exist_ok=True)
    (folder / "meshes" / "link.stl").write_bytes(_stl(0))
    urdf = folder / "robot.urdf"
    urdf.write_text(_numbers_urdf(**numbers))
    return urdf


@pytest.mark.parametrize(
    "numbers, where",
    [
        ({"joint_xyz": "1e308 0 0"}, "joint[@name='j1']/origin@xyz"),
        ({"joint_rpy": "0 1e300 0"}, "joint[@name='j1']/origin@rpy"),
        ({"inertial_xyz": "1e308 0 0"}, "link[@name='base']/inertial/origin@xyz"),
        ({"inertial_rpy": "1e300 0 0"}, "link[@name='base']/inertial/origin@rpy"),
        ({"visual_xyz": "0 0 1e308"}, "link[@name='base']/visual[1]/origin@xyz"),
        ({"box": "1e308 1 1"}, "link[@name='base']/visual[1]/box@size"),
        ({"scale": "1e308 1 1"}, "link[@name='base']/visual[2]/mesh@scale"),
        ({"scale": "1e-320 1 1"}, "link[@name='base']/visual[2]/mesh@scale"),  # the mesh would collapse to zero
        ({"radius": "1e308"}, "link[@name='base']/collision[1]/cylinder@radius"),
        ({"length": "1e308"}, "link[@name='base']/collision[1]/cylinder@length"),
        ({"sphere": "1e308"}, "link[@name='base']/collision[2]/sphere@radius"),
        ({"mass": "1e308"}, "link[@name='base']/inertial/mass@value"),
        ({"ixx": "1e308"}, "link[@name='base']/inertial/inertia@ixx"),
        ({"ixy": "-1e308"}, "link[@name='base']/inertial/inertia@ixy"),
        # finite as written, infinite once rotated into the link frame
        ({"ixx": "1e308", "iyy": "1e308", "izz": "1e308", "inertial_rpy": "0.3 0.2 0.1"},
         "link[@name='base']/inertial/inertia@ixx"),
        ({"damping": "1e308"}, "joint[@name='j1']/dynamics@damping"),
        ({"friction": "1e308"}, "joint[@name='j1']/dynamics@friction"),
        ({"axis": "1e300 1 0"}, "joint[@name='j1']/axis@xyz"),
    ],
)  # fmt: skip
@pytest.mark.invalid_urdf
def test_every_urdf_number_is_in_its_documented_range(tmp_path, numbers, where):
    """Out of range (README, Limits: at most URDF_MAX_VALUE in magnitude, a mesh scale at least MIN_MESH_SCALE): a
    ValidationError naming the file, the element's path and the text, never a value that overflows later."""
    urdf = _write_numbers_urdf(tmp_path, **numbers)
    with pytest.raises(ValidationError) as err:
        db_from_urdf(urdf)
    message = str(err.value)
    assert str(urdf) in message and where in message and next(iter(numbers.values())) in message, message


@pytest.mark.invalid_urdf
def test_a_shape_without_its_size_is_refused_naming_it(tmp_path):
    urdf = _write_numbers_urdf(tmp_path)
    urdf.write_text(urdf.read_text().replace(f'size="{_NUMBERS["box"]}"', ""))
    with pytest.raises(FormatError, match=r"link\[@name='base'\]/visual\[1\]/box@size"):
        db_from_urdf(urdf)


def test_numbers_at_the_bounds_stay_finite_in_the_model(tmp_path):
    """Every number at its bound (URDF_MAX_VALUE; the smallest mesh scale): imported, and the robot's mass, forward
    kinematics, inertias and JSON finite (the bounds keep sums and rotations far from overflow)."""
    top = f"{URDF_MAX_VALUE:g}"
    numbers = {k: f"{top} {top} {top}" if len(v.split()) == 3 else top for k, v in _NUMBERS.items()}
    numbers.update(scale=f"{MIN_MESH_SCALE:g} 1 1", axis="0 0 1", lower="-1", upper="1", ixy="0", ixz="0", iyz="0")
    urdf = _write_numbers_urdf(tmp_path, **numbers)
    assembly = ModuleAssembly.from_serial_modules(db := db_from_urdf(urdf), ["arm"])
    json.dumps(db.to_json_data(), allow_nan=False)  # ValueError on any NaN or infinity
    robot = assembly.robot
    assert math.isfinite(robot.mass) and robot.mass == pytest.approx(URDF_MAX_VALUE + 1)
    assert np.isfinite(robot.fk(np.ones(robot.dof))).all()
    assert all(np.isfinite(b.inertia).all() for b in assembly.modules[0].bodies)


def _chain_file(path: Path, links: int) -> Path:
    """A chain of ``links`` links (unit mass and inertia, fixed joints with an origin): about 245 bytes a link."""
    inertial = '<inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial>'
    with path.open("w") as fh:
        fh.write('<robot name="chain">')
        for k in range(links):
            fh.write(f'<link name="l{k}">{inertial}</link>')
            if k:
                fh.write(f'<joint name="j{k}" type="fixed"><parent link="l{k - 1}"/><child link="l{k}"/>'
                         '<origin xyz="0 0 0.01"/></joint>')  # fmt: skip
        fh.write("</robot>")
    return path


@pytest.mark.invalid_urdf
def test_a_urdf_of_200000_links_is_refused_early_in_bounded_memory(tmp_path):
    """A 49 MB URDF of 200,000 links (under max_file_bytes) took 47 s and 1.4 GB before a MemoryError. Its links are
    counted while it is parsed: refused at link 100,001 (``max_urdf_links``), naming the file and the limit, within
    400 MB more address space than the test process holds (the file's text included)."""
    urdf = _chain_file(tmp_path / "big.urdf", 200_000)
    assert 40e6 < urdf.stat().st_size < limits().max_file_bytes
    with memory_cap(400 * 2**20), time_cap(120):  # the time cap only turns a hang into a failure
        with pytest.raises(InputError) as err:
            db_from_urdf(urdf)
    message = str(err.value)
    assert str(urdf) in message and "max_urdf_links" in message and "100000" in message, message
    with override_limits(max_urdf_links=1_000):  # the limit is the one in force
        with pytest.raises(InputError, match=r"at most 1000\)"):
            db_from_urdf(urdf)


@pytest.mark.invalid_urdf
def test_more_shapes_than_max_urdf_shapes_are_refused_before_they_are_read(tmp_path):
    """100,000 boxes in one link took 3.8 s and 200 MB (a 64 MiB file of them would take about 45 s and 2 GB): the
    shapes are counted before their geometry is read, and more than ``max_urdf_shapes`` refused naming the file,
    the link and the limit."""
    box = '<visual><geometry><box size="1 1 1"/></geometry></visual>'
    urdf = tmp_path / "boxes.urdf"
    urdf.write_text(f'<robot name="r"><link name="a">{box * 300}</link><link name="b">{box * 200}</link>'
                    '<joint name="j" type="fixed"><parent link="a"/><child link="b"/></joint></robot>')  # fmt: skip
    assert len(next(iter(db_from_urdf(urdf))).bodies) == 2  # 500 shapes: under the default
    with override_limits(max_urdf_shapes=400), pytest.raises(InputError) as err:
        db_from_urdf(urdf)
    message = str(err.value)
    assert str(urdf) in message and "link[@name='b']/visual" in message and "max_urdf_shapes" in message, message


@pytest.mark.slow
@pytest.mark.invalid_urdf
def test_timor_import_refuses_a_urdf_of_200000_links_naming_file_and_limit(tmp_path):
    urdf = _chain_file(tmp_path / "big.urdf", 200_000)
    proc = run_cli(["import", str(urdf), "-o", str(tmp_path / "out" / "m.json")], timeout=120)
    assert proc.returncode == 2 and not (tmp_path / "out" / "m.json").exists()
    assert_clean_error(proc, str(urdf), "max_urdf_links", "TIMOR_MAX_URDF_LINKS")


# -- fuzz --------------------------------------------------------------------------------------------------------------

_NUMBER = st.one_of(
    st.floats(-10, 10),
    st.floats(),
    st.sampled_from(["1e200", "-1e308", "1e-320", "nan", "-0", "1e400", "0x10", "", "1 2"]),
)
_MESH = st.sampled_from(
    ["package://pkg/meshes/link.stl", "meshes/link.stl", "package://pkg/../../outside/cad/gripper.stl",
     "../../outside/cad/gripper.stl", "package://pkg/meshes/evil.stl", "file:///etc/passwd", "package://nopkg/x.stl",
     "package://pkg/%2e%2e/%2e%2e/outside/cad/gripper.stl", ""]
)  # fmt: skip


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(mesh=_MESH, axis=st.lists(_NUMBER, min_size=3, max_size=3), effort=_NUMBER, velocity=_NUMBER,
       masses=st.tuples(_NUMBER, _NUMBER))  # fmt: skip
def test_fuzz_urdf_import(mesh, axis, effort, velocity, masses):
    """Any such URDF: refused with an InputError naming the URDF, or a module whose numbers are finite (unit axes,
    finite mass, limits >= 0) and whose meshes all lie inside the package's folder."""
    with tempfile.TemporaryDirectory() as tmp:  # removed at once: most of these URDFs are invalid on purpose
        _fuzz_one(Path(tmp), mesh, axis, effort, velocity, masses)


def _fuzz_one(tmp_path: Path, mesh, axis, effort, velocity, masses) -> None:
    urdf, pkgs = _layout(tmp_path, mesh)
    os.symlink(tmp_path / "outside" / "cad" / "gripper.stl", pkgs / "pkg" / "meshes" / "evil.stl")
    text = _urdf(mesh, axis=" ".join(map(str, axis)), limit=f'effort="{effort}" velocity="{velocity}"')
    urdf.write_text(text.replace('"1.0"/>', f'"{masses[0]}"/>', 1).replace('"1.0"/>', f'"{masses[1]}"/>', 1))
    with memory_cap(), time_cap(60):
        try:
            db = db_from_urdf(urdf, [pkgs])
        except InputError as exc:
            assert str(urdf) in str(exc)
            return
    module = next(iter(db))
    assert math.isfinite(module.mass) and all(math.isfinite(b.mass) and b.mass >= 0 for b in module.bodies)
    for joint in module.joints:
        assert np.isclose(np.linalg.norm(joint.axis), 1.0)
        assert all(v >= 0 for k, v in joint.limits_json.items() if k not in ("positionLower", "positionUpper"))
    assert all(m.path.is_relative_to((pkgs / "pkg").resolve()) for m in db.meshes())


def test_a_fused_assembly_reads_its_meshes_from_its_sets_folder(improv):
    """``from_monolithic_robot`` goes through URDF text naming the set's meshes by file://: the set's folder is the
    folder the import allows (without it the meshes would be refused as outside)."""
    rng = np.random.default_rng(5)
    assembly = ModuleAssembly(improv)
    while assembly.dof < 3:
        assembly.add_random_from_db(lambda m: m not in improv.end_effectors, rng=rng)
    meshes = [g for m in assembly.modules for b in m.bodies for g in (*b.visual, *b.collision) if isinstance(g, Mesh)]
    fused = ModuleAssembly.from_monolithic_robot(assembly.robot)
    assert len(fused.db.meshes()) == len(meshes) > 0
    q = assembly.robot.random_configuration(rng)
    np.testing.assert_allclose(fused.robot.fk(q), assembly.robot.fk(q), atol=1e-9)


_BOUNDARY = st.sampled_from(["1e9", "-1e9", "1.0000001e9", "1e-9", "-1e-9", "9.9e-10", "1e-320", "0"])
_IN_RANGE = st.one_of(st.floats(-10, 10), st.floats(-2e9, 2e9), _BOUNDARY, _NUMBER)


def _number_text(n: int) -> st.SearchStrategy[str]:
    """The text of an attribute of ``n`` numbers: mostly ``n`` of them, sometimes another count."""
    right = st.lists(_IN_RANGE, min_size=n, max_size=n)
    return st.one_of(right, right, right, st.lists(_IN_RANGE, min_size=1, max_size=3)).map(
        lambda xs: " ".join(map(str, xs))
    )


_FUZZED_NUMBERS = st.sets(st.sampled_from(sorted(_NUMBERS)), min_size=1, max_size=6).flatmap(
    lambda keys: st.fixed_dictionaries({k: _number_text(len(_NUMBERS[k].split())) for k in keys})
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(numbers=_FUZZED_NUMBERS)
# a tensor with a negative eigenvalue (clamped with a warning) in a rotated inertial frame: the rotated tensor's
# last-bit asymmetry made Pinocchio raise a bare RuntimeError ("The 3d inertia should be symmetric") at the build
@example(numbers={"ixy": "29308539.0", "inertial_rpy": "1 2 3"})
@example(numbers={"ixy": "1234567.0", "ixz": "12345.6", "inertial_rpy": "0.3 0.2 0.1"})
def test_fuzz_urdf_numbers(numbers):
    """Any numbers in any of the places the import reads one (origins, sizes, mesh scale, mass, inertia, axis, limits,
    dynamics): refused with an InputError naming the URDF and the link or joint, or a robot whose module JSON holds no
    NaN, no infinity and no number out of range, and whose mass and forward kinematics are finite."""
    with tempfile.TemporaryDirectory() as tmp:
        urdf = _write_numbers_urdf(Path(tmp), **numbers)
        with memory_cap(), time_cap(60):
            try:
                db = db_from_urdf(urdf)
            except InputError as exc:
                assert str(urdf) in str(exc) and ("link[@name=" in str(exc) or "joint[@name=" in str(exc)), exc
                return
            text = json.dumps(db.to_json_data(), allow_nan=False)  # ValueError on any NaN or infinity
            numbers = [abs(float(x)) for x in re.findall(r"-?\d+\.?\d*(?:[eE][-+]?\d+)?", text)]
            assert max(numbers) <= 3 * URDF_MAX_VALUE  # in range (a rotated inertia's entries: up to its trace)
            robot = ModuleAssembly.from_serial_modules(db, ["arm"]).robot
            assert math.isfinite(robot.mass) and np.isfinite(robot.fk(np.zeros(robot.dof))).all()
