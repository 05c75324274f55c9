"""Bad bodies, joints, connectors, geometry and meshes in a module set must raise a TimorError whose message names
the file, the JSON path and the value at fault (each case changes one thing of a copy of the embedded
``geometric_primitive_modules`` set, as in test_bad_input_files.py)."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest
from bad_input_cases import EYE4, UNSET, check_error, gpm, load_case, load_error, module_of, write_set

from timor_core.errors import FormatError, MeshError, ValidationError
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB
from timor_core.model.validation import validate_db_file

_CUBE_STL = """solid cube
  facet normal 0 0 -1
    outer loop
      vertex 0 0 0
      vertex 0 1 0
      vertex 1 1 0
    endloop
  endfacet
  facet normal 0 0 -1
    outer loop
      vertex 0 0 0
      vertex 1 1 0
      vertex 1 0 0
    endloop
  endfacet
  facet normal 0 0 1
    outer loop
      vertex 0 0 1
      vertex 1 0 1
      vertex 1 1 1
    endloop
  endfacet
  facet normal 0 0 1
    outer loop
      vertex 0 0 1
      vertex 1 1 1
      vertex 0 1 1
    endloop
  endfacet
endsolid cube
"""


# ---------------------------------------------------------------------------------------------------------
# poses that are not rigid transforms
# ---------------------------------------------------------------------------------------------------------
_C = 0.5**0.5


@pytest.mark.parametrize(
    "bad_pose",
    [
        [[1.0, 0.0, 0.0, 0.0], [0.0, 2.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.1], [0.0, 0.0, 0.0, 1.0]],  # scaled
        [[1.0, 0.5, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.1], [0.0, 0.0, 0.0, 1.0]],  # sheared
        [[_C, _C, 0.0, 0.0], [_C, _C, 0.0, 0.0], [0.0, 0.0, 1.0, 0.1], [0.0, 0.0, 0.0, 1.0]],  # singular
    ],
    ids=["scaled", "sheared", "singular"],
)
def test_non_orthonormal_rotation(tmp_path, bad_pose):
    path, exc = load_case(
        tmp_path, lambda d: d["modules"][0]["bodies"][0]["connectors"][1].__setitem__("pose", bad_pose)
    )
    assert isinstance(exc, ValidationError)
    check_error(exc, path, "$.modules[0].bodies[0].connectors[1].pose", bad_pose, "not a rigid transform")


def test_reflection_det_minus_one(tmp_path):
    bad = [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, -1.0, 0.1], [0.0, 0.0, 0.0, 1.0]]
    assert np.isclose(np.linalg.det(np.array(bad)[:3, :3]), -1.0)
    path, exc = load_case(
        tmp_path, lambda d: module_of(d, "i_15")["bodies"][0]["connectors"][1].__setitem__("pose", bad)
    )
    assert isinstance(exc, ValidationError)
    check_error(exc, path, "$.modules[4].bodies[0].connectors[1].pose", bad, "det +1")


@pytest.mark.parametrize(
    "last_row", [[0.0, 0.0, 0.0, 2.0], [0.0, 0.0, 0.1, 1.0], [0.0, 0.0, 0.0, 0.0]], ids=["w=2", "perspective", "zero"]
)
def test_bad_last_row(tmp_path, last_row):
    bad = copy.deepcopy(EYE4)
    bad[3] = last_row
    path, exc = load_case(tmp_path, lambda d: module_of(d, "J2")["joints"][0].__setitem__("poseChild", bad))
    assert isinstance(exc, ValidationError)
    check_error(exc, path, "$.modules[2].joints[0].poseChild", bad, "last row")


def test_non_rigid_geometry_pose(tmp_path):
    bad = copy.deepcopy(EYE4)
    bad[0][0] = 3.0
    path, exc = load_case(tmp_path, lambda d: module_of(d, "l_30")["bodies"][0]["visual"][1].__setitem__("pose", bad))
    check_error(exc, path, "$.modules[8].bodies[0].visual[1].pose", bad, "rigid")


# ---------------------------------------------------------------------------------------------------------
# inertial parameters
# ---------------------------------------------------------------------------------------------------------
def test_negative_mass(tmp_path):
    path, exc = load_case(
        tmp_path, lambda d: module_of(d, "P1")["bodies"][1].__setitem__("mass", -0.5), ValidationError
    )
    check_error(exc, path, "$.modules[3].bodies[1].mass", -0.5, "negative")


@pytest.mark.parametrize(
    "inertia",
    [
        [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, -0.01]],  # negative eigenvalue
        [[0.01, 0.02, 0.0], [0.02, 0.01, 0.0], [0.0, 0.0, 0.01]],  # eigenvalues 0.03, -0.01, 0.01
    ],
    ids=["negative-eig", "indefinite-offdiag"],
)
def test_inertia_not_positive_semi_definite(tmp_path, inertia):
    path, exc = load_case(tmp_path, lambda d: module_of(d, "i_15")["bodies"][0].__setitem__("inertia", inertia))
    assert isinstance(exc, ValidationError)
    check_error(exc, path, "$.modules[4].bodies[0].inertia", inertia, "positive semi-definite")


@pytest.mark.parametrize(
    "inertia",
    [
        [[0.01, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.0]],  # a thin rod: one zero moment
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],  # a point mass
    ],
    ids=["rod", "point-mass"],
)
def test_point_masses_and_rods_load(tmp_path, inertia):
    """Idealised bodies URDFs use (and Pinocchio takes) load; their inertia is kept as given."""
    data = gpm()
    module_of(data, "i_15")["bodies"][0]["inertia"] = inertia
    db = ModulesDB.from_json_file(write_set(tmp_path / "set", data))
    np.testing.assert_array_equal(db["i_15"].bodies[0].inertia, inertia)


def test_inertia_not_symmetric(tmp_path):
    bad = [[0.01, 0.001, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.01]]
    path, exc = load_case(tmp_path, lambda d: module_of(d, "l_15")["bodies"][0].__setitem__("inertia", bad))
    assert isinstance(exc, ValidationError)
    check_error(exc, path, "$.modules[7].bodies[0].inertia", bad, "symmetric")


def test_massless_body_with_zero_inertia_is_fine(tmp_path):
    data = gpm()
    body = module_of(data, "i_15")["bodies"][0]
    body["mass"] = 0.0
    body["inertia"] = [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    db = ModulesDB.from_json_file(write_set(tmp_path / "set", data))
    assert db["i_15"].mass == 0.0


# ---------------------------------------------------------------------------------------------------------
# joints
# ---------------------------------------------------------------------------------------------------------
def test_inverted_joint_limits(tmp_path):
    def mutate(d):
        limits = module_of(d, "J2")["joints"][0]["limits"]
        limits["positionLower"], limits["positionUpper"] = 1.0, -1.0

    path, exc = load_case(tmp_path, mutate, ValidationError)
    check_error(exc, path, "$.modules[2].joints[0].limits", {"positionLower": 1.0, "positionUpper": -1.0}, "inverted")


@pytest.mark.parametrize("key", ["velocity", "acceleration", "peakTorque"])
def test_negative_velocity_acceleration_torque_limit(tmp_path, key):
    path, exc = load_case(tmp_path, lambda d: module_of(d, "J1")["joints"][0]["limits"].__setitem__(key, -2.0))
    assert isinstance(exc, ValidationError)
    check_error(exc, path, f"$.modules[1].joints[0].limits.{key}", -2.0, "negative")


def test_joint_limit_of_wrong_type(tmp_path):
    path, exc = load_case(
        tmp_path, lambda d: module_of(d, "P1")["joints"][0]["limits"].__setitem__("positionUpper", "0.3")
    )
    assert isinstance(exc, FormatError)
    check_error(exc, path, "$.modules[3].joints[0].limits.positionUpper", "0.3", "expected a number")


@pytest.mark.parametrize("key", ["parent", "child"])
def test_joint_names_unknown_body(tmp_path, key):
    path, exc = load_case(tmp_path, lambda d: module_of(d, "J1")["joints"][0].__setitem__(key, "ghost_body"))
    assert isinstance(exc, ValidationError)
    check_error(exc, path, f"$.modules[1].joints[0].{key}", "ghost_body", "body")


def test_joint_joins_body_to_itself(tmp_path):
    path, exc = load_case(tmp_path, lambda d: module_of(d, "J1")["joints"][0].__setitem__("child", "J1_proximal"))
    check_error(exc, path, "$.modules[1].joints[0].child", "J1_proximal", "itself")


def test_unknown_joint_type(tmp_path):
    path, exc = load_case(tmp_path, lambda d: module_of(d, "J2")["joints"][0].__setitem__("type", "spherical"))
    assert isinstance(exc, ValidationError)
    check_error(exc, path, "$.modules[2].joints[0].type", "spherical", "unknown joint type", "revolute")


def test_bodies_not_connected_by_joints(tmp_path):
    path, exc = load_case(tmp_path, lambda d: module_of(d, "J1").__setitem__("joints", []))
    assert isinstance(exc, ValidationError)
    check_error(exc, path, "$.modules[1].bodies", ["J1_distal", "J1_proximal"], "not all connected")


# ---------------------------------------------------------------------------------------------------------
# connectors and geometry
# ---------------------------------------------------------------------------------------------------------
def test_unknown_connector_gender(tmp_path):
    path, exc = load_case(
        tmp_path, lambda d: module_of(d, "l_45")["bodies"][0]["connectors"][1].__setitem__("gender", "x")
    )
    assert isinstance(exc, ValidationError)
    check_error(exc, path, "$.modules[9].bodies[0].connectors[1].gender", "x", "gender")


def test_unknown_geometry_type(tmp_path):
    path, exc = load_case(
        tmp_path, lambda d: module_of(d, "i_45")["bodies"][0]["collision"][0].__setitem__("type", "cone")
    )
    check_error(exc, path, "$.modules[6].bodies[0].collision[0].type", "cone", "unknown geometry type")


@pytest.mark.parametrize(("key", "bad"), [("r", -0.06), ("z", -0.1)])
def test_negative_cylinder_dimension(tmp_path, key, bad):
    path, exc = load_case(
        tmp_path, lambda d: module_of(d, "J1")["bodies"][1]["visual"][0]["parameters"].__setitem__(key, bad)
    )
    assert isinstance(exc, ValidationError)
    check_error(exc, path, f"$.modules[1].bodies[1].visual[0].parameters.{key}", bad, ">= 0")


def test_missing_geometry_parameter(tmp_path):
    path, exc = load_case(tmp_path, lambda d: module_of(d, "P1")["bodies"][0]["visual"][0]["parameters"].pop("y"))
    assert isinstance(exc, FormatError)
    check_error(exc, path, "$.modules[3].bodies[0].visual[0].parameters", UNSET, "'y'")


def test_ignore_collisions_unknown_mode(tmp_path):
    path, exc = load_case(tmp_path, lambda d: d.__setitem__("ignore_collisions", "never"), ValidationError)
    check_error(exc, path, "$.ignore_collisions", "never", "rigid_via_joint")


# ---------------------------------------------------------------------------------------------------------
# meshes
# ---------------------------------------------------------------------------------------------------------
def _with_mesh(tmp_path: Path, file_field: str) -> Path:
    data = gpm()
    body = module_of(data, "i_30")["bodies"][0]
    body["visual"] = [{"type": "mesh", "parameters": {"file": file_field, "scale": 0.1}, "pose": EYE4}]
    return write_set(tmp_path / "set", data)


def test_valid_mesh_loads(tmp_path):
    (tmp_path / "set" / "meshes").mkdir(parents=True)
    (tmp_path / "set" / "meshes" / "cube.stl").write_text(_CUBE_STL)
    path = _with_mesh(tmp_path, "meshes/cube.stl")
    db = ModulesDB.from_json_file(path)
    (mesh,) = db.meshes()
    assert mesh.path == (tmp_path / "set" / "meshes" / "cube.stl").resolve()
    data = mesh.load()
    assert np.allclose(data.bounds, [[0, 0, 0], [0.1, 0.1, 0.1]])


def test_missing_mesh_file(tmp_path):
    path = _with_mesh(tmp_path, "meshes/nope.stl")
    exc = load_error(path, MeshError)
    check_error(exc, path, "$.modules[5].bodies[0].visual[0].parameters.file", "meshes/nope.stl", "not found")


def test_mesh_path_escaping_the_folder(tmp_path):
    path = _with_mesh(tmp_path, "../../etc/passwd")
    exc = load_error(path, MeshError)
    check_error(exc, path, "$.modules[5].bodies[0].visual[0].parameters.file", "../../etc/passwd", "outside")


def test_mesh_absolute_path_outside(tmp_path):
    outside = tmp_path / "elsewhere" / "cube.stl"
    outside.parent.mkdir()
    outside.write_text(_CUBE_STL)
    path = _with_mesh(tmp_path, str(outside))
    exc = load_error(path, MeshError)
    check_error(exc, path, "$.modules[5].bodies[0].visual[0].parameters.file", str(outside), "outside")


def test_mesh_file_uri_outside(tmp_path):
    outside = tmp_path / "elsewhere" / "cube.stl"
    outside.parent.mkdir()
    outside.write_text(_CUBE_STL)
    path = _with_mesh(tmp_path, outside.as_uri())
    exc = load_error(path, MeshError)
    check_error(exc, path, "$.modules[5].bodies[0].visual[0].parameters.file", outside.as_uri(), "outside")


def test_mesh_symlink_escaping_the_folder(tmp_path):
    outside = tmp_path / "elsewhere" / "cube.stl"
    outside.parent.mkdir()
    outside.write_text(_CUBE_STL)
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "link.stl").symlink_to(outside)
    path = _with_mesh(tmp_path, "link.stl")
    exc = load_error(path, MeshError)
    check_error(exc, path, "$.modules[5].bodies[0].visual[0].parameters.file", "link.stl", "outside")


def test_mesh_zero_scale(tmp_path):
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "cube.stl").write_text(_CUBE_STL)
    data = gpm()
    module_of(data, "i_30")["bodies"][0]["visual"] = [
        {"type": "mesh", "parameters": {"file": "cube.stl", "scale": [1.0, 0.0, 1.0]}}
    ]
    path = write_set(tmp_path / "set", data)
    exc = load_error(path, ValidationError)
    check_error(exc, path, "$.modules[5].bodies[0].visual[0].parameters.scale", [1.0, 0.0, 1.0], "zero")


def test_mesh_negative_scale_mirrors(tmp_path):
    """A negative factor mirrors the mesh, as URDF allows (TIAGo Pro, Centauro): it loads, faces turned."""
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "cube.stl").write_text(_CUBE_STL)
    data = gpm()
    module_of(data, "i_30")["bodies"][0]["visual"] = [
        {"type": "mesh", "parameters": {"file": "cube.stl", "scale": [1.0, -1.0, 1.0]}}
    ]
    db = ModulesDB.from_json_file(write_set(tmp_path / "set", data))
    mesh = db["i_30"].bodies[0].visual[0]
    assert mesh.scale == (1.0, -1.0, 1.0) and mesh.volume > 0


def test_mesh_with_unsupported_extension(tmp_path):
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "cube.xyz").write_text(_CUBE_STL)
    path = _with_mesh(tmp_path, "cube.xyz")
    assert validate_db_file(path), "validate_db_file finds nothing wrong"
    exc = load_error(path, MeshError)
    check_error(exc, path, "$.modules[5].bodies[0].visual[0].parameters.file", "cube.xyz", ".xyz")


def test_corrupt_mesh_error_names_json_path(tmp_path):
    (tmp_path / "set").mkdir()
    (tmp_path / "set" / "broken.stl").write_text(
        "solid x\n facet normal 0 0 1\n  outer loop\n   vertex 0 0\nendsolid x\n"
    )
    data = gpm()
    module_of(data, "i_30")["bodies"][0]["collision"] = [{"type": "mesh", "parameters": {"file": "broken.stl"}}]
    path = write_set(tmp_path / "set", data)
    try:
        db = ModulesDB.from_json_file(path)
    except MeshError as exc:  # refusing it at load time is fine as well
        check_error(exc, path, "$.modules[5].bodies[0].collision[0].parameters.file", "broken.stl")
        return
    with pytest.raises(MeshError) as info:
        ModuleAssembly.from_serial_modules(db, ("base", "i_30", "eef")).to_pin_robot()
    check_error(info.value, path, "$.modules[5].bodies[0].collision[0].parameters.file", "broken.stl")


def test_connector_size_scalar_string_names_real_path(tmp_path):
    path, exc = load_case(
        tmp_path, lambda d: module_of(d, "i_15")["bodies"][0]["connectors"][0].__setitem__("size", "big")
    )
    check_error(exc, path, "$.modules[4].bodies[0].connectors[0].size", "big")
