"""Issue 24 item 1: every URDF example-robot-data ships, imported and compared with Pinocchio's own loader of the
same file (every link frame, the tool link's Jacobian, gravity torques, the mass matrix, to 1e-9), then written as
a module set, read back, exported as URDF, checked by urdfdom's check_urdf, loaded by Pinocchio again: the same
frames. The robots' URDFs are data nobody here wrote. The eight arms of the issue run by default, the whole
package as a slow test; ``test_import_count`` states how many of its URDFs import."""

from __future__ import annotations

import json
import logging
import re
from importlib import metadata
from pathlib import Path

import numpy as np
import pinocchio as pin
import pytest
from conftest import check_urdf_file
from urdf_agreement import (
    assert_same_collision_geometry,
    assert_same_robot,
    body_frames,
    example_urdfs,
    link_names,
    pinocchio_q,
    robots_share,
)

from timor_core import ModuleAssembly, ModulesDB
from timor_core.errors import MeshError
from timor_core.export.urdf_import.importer import assembly_from_urdf
from timor_core.limits import override_limits

SHARE = robots_share()
URDFS = example_urdfs(SHARE) if SHARE is not None else []
ARMS = ("panda.urdf", "ur5_robot.urdf", "ur10_robot.urdf", "kinova.urdf", "xarm7.urdf", "z1.urdf", "so101.urdf")
#: The URDFs of the package that Pinocchio loads but the import refuses, and why (a mesh the package lacks).
REFUSED = {"romeo_laas_small.urdf": MeshError}
MAX_DOF = 128  # humanoids and TIAGo dual have more than the default limit of 32
#: The whole module on one worker (``--dist loadgroup``), so the caches below serve every test that needs a file.
pytestmark = pytest.mark.xdist_group("urdf_import_robots")

#: Per URDF: Pinocchio's model of it or its error, the import (``max_dof`` raised) or its error, the checks that
#: passed (the import and the model). Built once per process: ``test_arm_equals_pinocchios_loader`` checks the arms
#: that ``test_every_urdf_equals_pinocchios_loader`` checks again, and ``test_import_count`` imports every file that
#: test imported; none of them changes a model or an assembly.
_MODELS: dict[Path, pin.Model | Exception] = {}
_IMPORTS: dict[Path, ModuleAssembly | MeshError] = {}
_CHECKED: dict[Path, tuple[ModuleAssembly, pin.Model] | None] = {}


def _model(path: Path) -> pin.Model:
    """Pinocchio's model of the file (raises its RuntimeError or ValueError), read once per process."""
    if path not in _MODELS:
        try:
            _MODELS[path] = pin.buildModelFromUrdf(str(path))
        except (RuntimeError, ValueError) as exc:
            _MODELS[path] = exc
    found = _MODELS[path]
    if isinstance(found, Exception):
        raise found
    return found


def _import(path: Path) -> ModuleAssembly:
    """The file imported with ``max_dof`` raised to :data:`MAX_DOF` (raises its MeshError), once per process."""
    if path not in _IMPORTS:
        try:
            with override_limits(max_dof=MAX_DOF):
                _IMPORTS[path] = assembly_from_urdf(path, [SHARE.parent])
        except MeshError as exc:
            _IMPORTS[path] = exc
    found = _IMPORTS[path]
    if isinstance(found, MeshError):
        raise found
    return found


def _pinocchio(path):
    try:
        return _model(path)
    except (RuntimeError, ValueError) as exc:  # ur3.urdf has no robot name: urdfdom refuses it
        pytest.skip(f"Pinocchio refuses {path.name}: {exc}")


def _tool(assembly: ModuleAssembly) -> str:
    tree = assembly.tree()
    return tree.links[tree.tcp_frames[0].link].body.id


def _round_trip(assembly: ModuleAssembly, model: pin.Model, tmp_path, rng) -> None:
    """Module set JSON -> set -> URDF -> check_urdf -> Pinocchio: every link frame where the original puts it."""
    db = assembly.db
    again = ModulesDB.from_json_data(json.loads(db.to_json_string()), base_dir=db.base_dir)
    rebuilt = ModuleAssembly.from_serial_modules(again, [m.id for m in again])
    path = tmp_path / "exported.urdf"
    rebuilt.to_urdf(write_to=path)
    check_urdf_file(path)  # fails the test unless check_urdf accepts it; recorded, so not checked again after the test
    exported = pin.buildModelFromUrdf(str(path))
    robot = rebuilt.robot
    names = link_names(rebuilt)
    data, data_x = model.createData(), exported.createData()
    for _ in range(2):
        q = robot.random_configuration(rng)
        pin.framesForwardKinematics(model, data, pinocchio_q(model, robot, q))
        qx = pin.neutral(exported)
        for k, name in enumerate(robot.joints):  # the exported URDF names the joints as the robot does
            j = exported.joints[exported.getJointId(name)]
            qx[j.idx_q : j.idx_q + j.nq] = (np.cos(q[k]), np.sin(q[k])) if j.nq == 2 else q[k]
        pin.framesForwardKinematics(exported, data_x, qx)
        for link in body_frames(model):
            expected = data.oMf[model.getFrameId(link, pin.FrameType.BODY)].homogeneous
            got = data_x.oMf[exported.getFrameId(names[link], pin.FrameType.BODY)].homogeneous
            np.testing.assert_allclose(got, expected, atol=1e-9, err_msg=f"exported link frame {link}")


def _check(path, tmp_path) -> tuple[ModuleAssembly, pin.Model] | None:
    """The checks of one URDF; the imported assembly and Pinocchio's model of the file (None if refused); once per
    process (:data:`_CHECKED` holds a file's outcome once every check passed)."""
    if path in _CHECKED:
        return _CHECKED[path]
    _CHECKED[path] = _checked(path, tmp_path)
    return _CHECKED[path]


def _checked(path, tmp_path) -> tuple[ModuleAssembly, pin.Model] | None:
    """The checks of :func:`_check`, run."""
    model = _pinocchio(path)
    if path.name in REFUSED:
        with pytest.raises(REFUSED[path.name]) as err:
            _import(path)
        assert str(path) in str(err.value)
        return None
    with override_limits(max_dof=MAX_DOF):
        assembly = _import(path)
        robot = assembly.robot
        assert robot.dof == model.nv
        assert robot.mass == pytest.approx(sum(i.mass for i in model.inertias), rel=1e-12)
        names = link_names(assembly)
        assert sorted(names) == sorted(body_frames(model))  # one frame per URDF link, no more, no less
        rng = np.random.default_rng(7)
        for _ in range(3):
            assert_same_robot(robot, model, names, robot.random_configuration(rng), tcp=_tool(assembly))
        _round_trip(assembly, model, tmp_path, rng)
    return assembly, model


@pytest.mark.skipif(SHARE is None, reason="example-robot-data is not installed (pip install example-robot-data)")
@pytest.mark.parametrize("name", ARMS)
def test_arm_equals_pinocchios_loader(name, tmp_path, caplog):
    caplog.set_level(logging.ERROR)  # the triangle-inequality warnings of some URDFs' inertias
    path = next(p for p in URDFS if p.name == name)
    checked = _check(path, tmp_path)
    assert checked is not None
    assembly, model = checked  # the import and Pinocchio's model just compared: the same file, not read again
    robot = assembly.robot
    q = robot.random_configuration(np.random.default_rng(3))
    assert_same_collision_geometry(robot, model, path, [SHARE.parent], q)


@pytest.mark.slow
@pytest.mark.skipif(SHARE is None, reason="example-robot-data is not installed (pip install example-robot-data)")
@pytest.mark.parametrize("name", ["tiago_pro.urdf", "centauro.urdf"])
def test_mirrored_meshes_where_pinocchio_puts_them(name):
    """TIAGo Pro and Centauro scale meshes by -1 (mirror images): the collision shapes agree with Pinocchio's. The
    import and Pinocchio's model are those of the caches above (the same file, ``max_dof`` raised alike), which
    ``test_every_urdf_equals_pinocchios_loader`` reads too: each is made once per process."""
    path = next(p for p in URDFS if p.name == name)
    assert re.search(r'scale="[^"]*-', path.read_text())  # a negative factor: a mirror image
    with override_limits(max_dof=MAX_DOF):
        robot = _import(path).robot
        q = robot.random_configuration(np.random.default_rng(4))
        assert_same_collision_geometry(robot, _model(path), path, [SHARE.parent], q)


@pytest.mark.slow
@pytest.mark.skipif(SHARE is None, reason="example-robot-data is not installed (pip install example-robot-data)")
@pytest.mark.parametrize("path", URDFS, ids=[f"{p.parent.parent.name}/{p.name}" for p in URDFS])
def test_every_urdf_equals_pinocchios_loader(path, tmp_path, caplog):
    caplog.set_level(logging.ERROR)
    _check(path, tmp_path)


@pytest.mark.skipif(SHARE is None, reason="example-robot-data is not installed (pip install example-robot-data)")
def test_import_count(caplog):
    """The figures the README quotes: of the package's URDFs that Pinocchio loads, how many import with the default
    limits, and how many with max_dof raised to 128 (humanoids, TIAGo); the one left names meshes it lacks."""
    caplog.set_level(logging.ERROR)
    loaded, imported, too_many_joints = 0, 0, 0
    for path in URDFS:
        try:
            model = _model(path)
        except (RuntimeError, ValueError):
            continue
        loaded += 1
        try:
            _import(path)
        except MeshError:
            assert path.name in REFUSED
            continue
        imported += 1
        too_many_joints += model.nv > 32
    assert imported == loaded - sum(p.name in REFUSED for p in URDFS)  # every URDF Pinocchio loads, but the refused
    if metadata.version("example-robot-data") == "6.0.0":  # the README's figures are for this version
        assert (len(URDFS), loaded, imported, imported - too_many_joints) == (69, 68, 67, 57)
