"""Issue 24 item 1 on URDFs made up here: random trees of revolute, continuous, prismatic, fixed and mimic joints
with axes in any direction (hypothesis) import to the robot Pinocchio's own loader makes of the same text; point
masses, massless links and mirrored meshes import; broken trees (cycles, two roots, a missing link) and xacro files
are refused at once, the error naming the URDF file and the link or joint."""

from __future__ import annotations

import numpy as np
import pinocchio as pin
from hypothesis import given, settings
from hypothesis import strategies as st
from urdf_agreement import assert_same_robot, link_names

from timor_core.export.formats.urdfdom import check_urdf
from timor_core.export.urdf_import.importer import assembly_from_urdf

finite = st.floats(-1.0, 1.0, allow_nan=False)
vectors = st.tuples(finite, finite, finite)
axes = st.one_of(
    st.sampled_from([(1, 0, 0), (0, 1, 0), (0, 0, 1), (0, 0, -1), (-1, 0, 0), (0, -1, 0), (1, 1, 0)]),
    vectors.filter(lambda v: np.linalg.norm(v) > 0.1),
)
KINDS = ("revolute", "continuous", "prismatic", "fixed", "mimic")


def _inertial(rng: np.random.Generator, point: bool) -> str:
    if point:  # a point mass (Pinocchio takes it; so does the import)
        return '<inertial><mass value="0.3"/><inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/></inertial>'
    R = pin.rpy.rpyToMatrix(*rng.uniform(-3, 3, 3))
    inertia = R @ np.diag(rng.uniform(0.01, 0.02, 3)) @ R.T  # principal moments that meet A + B >= C
    (a, b, c), (d, e), f = inertia[0], inertia[1, 1:], inertia[2, 2]
    xyz, rpy = " ".join(map(str, rng.uniform(-0.1, 0.1, 3))), " ".join(map(str, rng.uniform(-1, 1, 3)))
    return (f'<inertial><origin xyz="{xyz}" rpy="{rpy}"/><mass value="{rng.uniform(0.1, 2)}"/>'
            f'<inertia ixx="{a}" ixy="{b}" ixz="{c}" iyy="{d}" iyz="{e}" izz="{f}"/></inertial>')  # fmt: skip


def random_urdf(seed: int, kinds: list[str], axis_list: list[tuple[float, float, float]]) -> str:
    """A URDF tree: link k+1 hangs from a random earlier link by a joint of kinds[k] about axis_list[k]."""
    rng = np.random.default_rng(seed)
    links = [f'<link name="l0">{_inertial(rng, False)}</link>']
    joints = []
    for k, (kind, axis) in enumerate(zip(kinds, axis_list)):
        parent = int(rng.integers(0, k + 1))
        mimic = ""
        if kind == "mimic":
            kind, mimic = "revolute", '<mimic joint="j0" multiplier="2" offset="0.1"/>' if k else ""
        links.append(f'<link name="l{k + 1}">{_inertial(rng, k % 4 == 3)}</link>' if k % 5 != 4 else
                     f'<link name="l{k + 1}"/>')  # fmt: skip
        xyz, rpy = " ".join(map(str, rng.uniform(-0.5, 0.5, 3))), " ".join(map(str, rng.uniform(-3, 3, 3)))
        limit = '<limit lower="-1.5" upper="2" effort="10" velocity="2"/>' if kind in ("revolute", "prismatic") else ""
        joints.append(
            f'<joint name="j{k}" type="{kind}"><parent link="l{parent}"/><child link="l{k + 1}"/>'
            f'<origin xyz="{xyz}" rpy="{rpy}"/><axis xyz="{axis[0]} {axis[1]} {axis[2]}"/>{limit}{mimic}</joint>'
        )
    return f'<robot name="random">{"".join(links)}{"".join(joints)}</robot>'


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**31),
    spec=st.lists(st.tuples(st.sampled_from(KINDS), axes), min_size=1, max_size=8),
)
def test_random_trees_equal_pinocchios_loader(seed, spec):
    text = random_urdf(seed, [k for k, _ in spec], [a for _, a in spec])
    model = pin.buildModelFromXML(text)
    assembly = assembly_from_urdf(text)
    robot = assembly.robot
    assert robot.dof == model.nv
    names = link_names(assembly)
    rng = np.random.default_rng(seed)
    for _ in range(2):
        assert_same_robot(robot, model, names, robot.random_configuration(rng), tcp=f"l{len(spec)}")


def test_random_tree_round_trip_through_urdf(tmp_path):
    """The exported URDF of an imported tree (axes kept) passes check_urdf and loads back to the same frames."""
    text = random_urdf(3, list(KINDS) * 2, [(0, 1, 0), (1, 1, 0), (0, 0, -1), (1, 0, 0), (0.3, -0.2, 0.9)] * 2)
    assembly = assembly_from_urdf(text)
    path = tmp_path / "tree.urdf"
    assembly.to_urdf(write_to=path)
    assert check_urdf(path)[0]
    again = assembly_from_urdf(path)
    q = assembly.robot.random_configuration(np.random.default_rng(0))
    renamed = link_names(again)  # the exported link names are the bodies of the re-imported module
    for link in assembly.tree().links:
        first = assembly.robot.model.getFrameId(link.name, pin.FrameType.BODY)
        second = again.robot.model.getFrameId(renamed[link.name], pin.FrameType.BODY)
        np.testing.assert_allclose(again.robot.frame_pose(second, q), assembly.robot.frame_pose(first, q), atol=1e-9)


CHAIN = """<robot name="chain"><link name="l0"/><link name="l1"/><link name="l2"/>
<joint name="j0" type="revolute"><parent link="l0"/><child link="l1"/><origin xyz="0.1 0.2 0.3" rpy="0.4 -0.2 1"/>
<axis xyz="0.2 0.7 -0.3"/><limit lower="-2" upper="2" effort="1" velocity="1"/></joint>
<joint name="j1" type="prismatic"><parent link="l1"/><child link="l2"/><origin xyz="-0.3 0.1 0.5" rpy="1 0.5 -0.7"/>
<axis xyz="1 1 1"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""


def _motion(kind: str, axis: tuple[float, float, float], q: float) -> np.ndarray:
    T = np.eye(4)
    if kind == "prismatic":
        T[:3, 3] = np.asarray(axis) * q
    else:
        T[:3, :3] = pin.AngleAxis(q, np.asarray(axis)).matrix()
    return T


def test_an_axis_joint_walked_backwards_keeps_its_kinematics():
    """A module whose joints have non-z axes, entered through its last body: the half turn about a line
    perpendicular to each axis keeps q's meaning, so the backwards walk puts every body where the forward one does."""
    from timor_core.model.tree import oriented_module

    assembly = assembly_from_urdf(CHAIN)
    module, robot = assembly.modules[0], assembly.robot
    links, _ = oriented_module(module, "l2")
    assert [ol.body.id for ol in links] == ["l2", "l1", "l0"] and all(ol.reversed for ol in links[1:])
    names = link_names(assembly)
    rng = np.random.default_rng(1)
    for _ in range(5):
        q = robot.random_configuration(rng)
        world = {b: robot.frame_pose(robot.model.getFrameId(names[b], pin.FrameType.BODY), q) for b in names}
        link_pose = [np.eye(4)]
        for ol in links[1:]:
            joint = ol.joint
            value = q[robot.joints.index(f"m0_{joint.id}")]
            link_pose.append(link_pose[ol.parent] @ ol.origin @ _motion(joint.type, joint.axis, value))
            body = link_pose[-1] @ ol.body_in_link
            np.testing.assert_allclose(body, np.linalg.inv(world["l2"]) @ world[ol.body.id], atol=1e-9)
