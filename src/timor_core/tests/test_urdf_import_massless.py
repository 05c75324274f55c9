"""Issue 24 item 1, "point masses and massless links accepted (merged into their parent where a body needs mass)":
which consumer needs mass on a body, tried with the real ones (Pinocchio's own URDF loader, our model's dynamics,
urdfdom's check_urdf, MuJoCo's compiler and simulator) on SO-101's ``gripper_frame_link`` (1e-9 kg, zero inertia)
and on massless links behind fixed and revolute joints.

None needs a massless link merged into its parent: Pinocchio adds a fixed link's inertia to its parent joint's body
(ours as its own loader does), MuJoCo weighs a moving body together with the bodies welded to it, and check_urdf
accepts zero mass. So the import keeps every link as it is. What has no dynamics is a moving link with neither
mass nor inertia at or rigidly below it: merging cannot help (it moves), kinematics and inverse dynamics work,
forward dynamics raises DynamicsError naming the joint and MuJoCo's refusal (MJCFError) names the link."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest
from urdf_agreement import robots_share

from timor_core.errors import MJCFError
from timor_core.export.formats.urdfdom import check_urdf
from timor_core.export.urdf_import.importer import assembly_from_urdf
from timor_core.kinematics.dynamics import DynamicsError

mujoco = pytest.importorskip("mujoco")

MASS = (
    '<inertial><origin xyz="0 0.05 0"/><mass value="1"/>'
    '<inertia ixx="0.01" iyy="0.02" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial>'
)


def _joint(name: str, parent: str, child: str, kind: str = "revolute", xyz: str = "0 0 0.1") -> str:
    return (
        f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/><origin xyz="{xyz}"/>'
        '<axis xyz="1 0 0"/><limit lower="-2" upper="2" effort="10" velocity="1"/></joint>'
    )


#: links a (mass), b, c; what each case makes massless
CASES = {
    "massless link behind a fixed joint": f'<link name="a">{MASS}</link><link name="b">{MASS}</link><link name="c"/>'
    + _joint("j1", "a", "b") + _joint("f", "b", "c", "fixed"),
    "massless moving link carrying a fixed massive one": f'<link name="a">{MASS}</link><link name="b"/>'
    f'<link name="c">{MASS}</link>' + _joint("j1", "a", "b") + _joint("f", "b", "c", "fixed", "0 0.1 0"),
    "point mass behind a fixed joint": f'<link name="a">{MASS}</link><link name="b">{MASS}</link><link name="c">'
    '<inertial><mass value="1e-9"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial></link>'
    + _joint("j1", "a", "b") + _joint("f", "b", "c", "fixed", "0 0.1 0"),
}  # fmt: skip


def _simulate(xml: str, q0: float) -> np.ndarray:
    model = mujoco.MjModel.from_xml_string(xml)
    data = mujoco.MjData(model)
    data.qpos[:] = q0
    for _ in range(200):
        mujoco.mj_step(model, data)
    assert np.all(np.isfinite(data.qpos))
    return data.qpos.copy()


def _consumers_agree(assembly, pinocchio_model: pin.Model, tmp_path) -> None:
    """Our dynamics equal Pinocchio's of the file, check_urdf takes our URDF, MuJoCo compiles and simulates it."""
    robot = assembly.robot
    q = np.full(robot.dof, 0.4)
    data = pinocchio_model.createData()
    qp = np.full(pinocchio_model.nq, 0.4)
    assert np.allclose(robot.static_torque(q), pin.computeGeneralizedGravity(pinocchio_model, data, qp), atol=1e-9)
    assert np.allclose(robot.mass_matrix(q), pin.crba(pinocchio_model, data, qp), atol=1e-9)
    ddq = robot.fd(np.zeros(robot.dof), q)
    assert np.allclose(ddq, pin.aba(pinocchio_model, data, qp, np.zeros(robot.dof), np.zeros(robot.dof)), atol=1e-7)
    path = tmp_path / "exported.urdf"
    assembly.to_urdf(write_to=path)
    assert check_urdf(path)[0]
    moved = _simulate(assembly.to_mjcf(), 0.4)
    assert not np.allclose(moved, 0.4)  # gravity moved it: the dynamics are live


@pytest.mark.parametrize("case", CASES)
def test_massless_links_load_and_simulate_unmerged(case, tmp_path):
    text = f'<robot name="r">{CASES[case]}</robot>'
    assembly = assembly_from_urdf(text)
    assert [b.id for b in assembly.modules[0].bodies] == ["a", "b", "c"]  # nothing merged: every link kept
    _consumers_agree(assembly, pin.buildModelFromXML(text), tmp_path)


def test_so101_gripper_frame_link(tmp_path):
    share = robots_share()
    if share is None:
        pytest.skip("example-robot-data is not installed (pip install example-robot-data)")
    path = next((share / "robots").rglob("so101.urdf"))
    assembly = assembly_from_urdf(path, [share.parent], keep_names=True)
    frame = assembly.modules[0].body["gripper_frame_link"]
    assert frame.mass == 1e-9 and not frame.inertia.any()
    _consumers_agree(assembly, pin.buildModelFromUrdf(str(path)), tmp_path)


def test_a_massless_moving_leaf_has_no_dynamics_and_says_where():
    text = f'<robot name="r"><link name="a">{MASS}</link><link name="b">{MASS}</link><link name="c"/>'
    text += _joint("j1", "a", "b") + _joint("j2", "b", "c") + "</robot>"
    assembly = assembly_from_urdf(text, keep_names=True)
    robot = assembly.robot
    q = np.array([0.3, 0.2])
    model = pin.buildModelFromXML(text)
    assert np.allclose(robot.id(q), pin.rnea(model, model.createData(), q, np.zeros(2), np.zeros(2)))
    with pytest.raises(DynamicsError, match="j2"):
        robot.fd(np.zeros(2), q)
    with pytest.raises(MJCFError, match="mass and inertia of moving bodies.*'c'"):
        assembly.to_mjcf()
