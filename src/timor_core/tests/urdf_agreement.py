"""Comparing an imported URDF robot with Pinocchio's own model of the same file (shared by the URDF import tests).

Pinocchio's loader is the reference: the same joint order, and continuous joints as (cos, sin) pairs where the
imported robot takes the angle."""

from __future__ import annotations

import functools
from importlib import metadata
from pathlib import Path

import numpy as np
import pinocchio as pin

from timor_core import ModuleAssembly, PinRobot


@functools.cache
def robots_share() -> Path | None:
    """The ``share/example-robot-data`` folder of the installed package, or None without it (looked up once per
    process: reading the package's file list took ~15 ms, and test_ik_tries asks once per hypothesis example)."""
    try:
        files = metadata.files("example-robot-data") or []
    except metadata.PackageNotFoundError:
        return None
    for f in files:
        if str(f).endswith("robots/panda_description/urdf/panda.urdf"):
            return Path(f.locate()).resolve().parents[3]
    return None


def example_urdfs(share: Path) -> list[Path]:
    """Every URDF file the package ships, sorted."""
    return sorted(p for p in (share / "robots").rglob("*.urdf") if p.is_file())


def joint_indices(model: pin.Model, robot: PinRobot) -> list[tuple[int, int, int]]:
    """For each of our joints (in q order): its (idx_q, idx_v, nq) in Pinocchio's model of the file."""
    tree = robot.assembly.tree() if robot.assembly is not None else None
    original = {link.joint_name: link.movable_joint().id for link in tree.actuated} if tree else {}
    out = []
    for name in robot.joints:
        joint = model.joints[model.getJointId(original.get(name, name))]
        out.append((joint.idx_q, joint.idx_v, joint.nq))
    return out


def pinocchio_q(model: pin.Model, robot: PinRobot, q: np.ndarray) -> np.ndarray:
    """Our q as a configuration of Pinocchio's model of the file (matched by joint name)."""
    out = pin.neutral(model)
    for k, (iq, _, nq) in enumerate(joint_indices(model, robot)):
        if nq == 2:  # a continuous joint: (cos, sin)
            out[iq : iq + 2] = np.cos(q[k]), np.sin(q[k])
        else:
            out[iq] = q[k]
    return out


def link_names(assembly: ModuleAssembly) -> dict[str, str]:
    """URDF link name -> the name of its frame in the imported robot."""
    return {link.body.id: link.name for link in assembly.tree().links}


def body_frames(model: pin.Model) -> list[str]:
    """The link frames of a Pinocchio model (one per URDF link)."""
    return [f.name for f in model.frames if f.type == pin.FrameType.BODY]


def assert_same_robot(robot: PinRobot, model: pin.Model, names: dict[str, str], q: np.ndarray, *,
                      tcp: str, dynamics: bool = True, atol: float = 1e-9) -> None:  # fmt: skip
    """Every link frame, the TCP link's Jacobian, gravity torques (and the mass matrix) agree at q."""
    data = model.createData()
    qp = pinocchio_q(model, robot, q)
    v = [iv for _, iv, _ in joint_indices(model, robot)]  # Pinocchio's velocity index of each of our joints
    pin.framesForwardKinematics(model, data, qp)
    for link in body_frames(model):
        np.testing.assert_allclose(robot.frame_pose(robot.model.getFrameId(names[link], pin.FrameType.BODY), q),
                                   data.oMf[model.getFrameId(link, pin.FrameType.BODY)].homogeneous, atol=atol,
                                   err_msg=f"link frame {link}")  # fmt: skip
    if model.nv == 0:
        return  # Pinocchio's dynamics crash on a model without joints; the frames are all there is
    assert_same_limits(robot, model)
    fid = model.getFrameId(tcp, pin.FrameType.BODY)
    pin.computeJointJacobians(model, data, qp)
    expected = pin.getFrameJacobian(model, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED).reshape(6, model.nv)
    ours = robot.jacobian(q, frame=robot.model.getFrameId(names[tcp], pin.FrameType.BODY))
    np.testing.assert_allclose(ours, expected[:, v], atol=atol, err_msg="Jacobian")
    np.testing.assert_allclose(robot.static_torque(q), pin.computeGeneralizedGravity(model, data, qp)[v], atol=atol,
                               err_msg="gravity torques")  # fmt: skip
    if dynamics:
        M = np.asarray(pin.crba(model, data, qp)).reshape(model.nv, model.nv)
        M = np.triu(M) + np.triu(M, 1).T
        np.testing.assert_allclose(robot.mass_matrix(q), M[np.ix_(v, v)], atol=atol, err_msg="mass matrix")


def assert_same_limits(robot: PinRobot, model: pin.Model) -> None:
    """Position limits of revolute and prismatic joints, velocity and effort limits: Pinocchio's where the URDF
    gives one (a missing or zero effort/velocity, and magnitudes from 1e9 on, are 'unlimited' in timor)."""
    for k, (iq, iv, nq) in enumerate(joint_indices(model, robot)):
        if nq == 1 and np.isfinite(robot.joint_limits[:, k]).all():
            lower, upper = model.lowerPositionLimit[iq], model.upperPositionLimit[iq]
            np.testing.assert_allclose(robot.joint_limits[:, k], [lower, upper], rtol=1e-12, err_msg=robot.joints[k])
        for ours, theirs in ((robot.velocity_limits[k], model.velocityLimit[iv]),
                             (robot.torque_limits[k], model.effortLimit[iv])):  # fmt: skip
            assert ours == theirs if 0 < theirs < 1e9 else np.isinf(ours), (robot.joints[k], ours, theirs)


def assert_same_collision_geometry(robot: PinRobot, model: pin.Model, urdf: Path, package_dirs: list[Path],
                                   q: np.ndarray) -> None:  # fmt: skip
    """Every collision shape of Pinocchio's model of the file (its mesh with its scale, mirrored ones too: compared
    by their bounding boxes) is where one of ours is at q, and there are as many of ours."""
    geoms = pin.buildGeomFromUrdf(
        model, str(urdf), pin.GeometryType.COLLISION, package_dirs=[str(p) for p in package_dirs]
    )
    data, geom_data = model.createData(), geoms.createData()
    pin.updateGeometryPlacements(model, data, geoms, geom_data, pinocchio_q(model, robot, q))
    ours = robot.collision
    our_data = ours.createData()
    pin.updateGeometryPlacements(robot.model, robot.model.createData(), ours, our_data, q)
    assert ours.ngeoms == geoms.ngeoms
    left = list(range(ours.ngeoms))
    for k, obj in enumerate(geoms.geometryObjects):
        where, box = geom_data.oMg[k].homogeneous, _aabb(obj)
        match = next((m for m in left if np.allclose(our_data.oMg[m].homogeneous, where, atol=1e-9)
                      and np.allclose(_aabb(ours.geometryObjects[m]), box, atol=1e-6)), None)  # fmt: skip
        assert match is not None, f"no collision shape of ours is {obj.name} ({Path(obj.meshPath).name}) at q"
        left.remove(match)


def _aabb(obj) -> np.ndarray:
    """The shape's bounding box in its own frame (the mesh scale applied)."""
    geometry = obj.geometry
    geometry.computeLocalAABB()
    return np.array([geometry.aabb_local.min_, geometry.aabb_local.max_])
