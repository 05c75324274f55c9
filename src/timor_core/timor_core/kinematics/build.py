"""Building a PinRobot from an assembly: the Pinocchio model from the kinematic tree, with the same frame names
as the URDF export (so a model loaded from the URDF agrees), rotor inertia and friction, and the coal collision
model (coal shapes are shared between robots: modules are immutable)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

import numpy as np
import pinocchio as pin

from timor_core.common.transforms import IDENTITY
from timor_core.errors import ValidationError
from timor_core.kinematics.geometry_models import check_collision_geometry, collision_model
from timor_core.kinematics.ik_kernel import KernelChain
from timor_core.kinematics.robot import PinRobot

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.model.parts import Body, Joint
    from timor_core.model.tree import KinematicTree, TreeLink

__all__ = ["SerialArm", "build_robot", "check_mass", "joint_model", "body_inertia", "serial_arm"]

_ALIGNED = {
    (True, (1.0, 0.0, 0.0)): pin.JointModelRX,
    (True, (0.0, 1.0, 0.0)): pin.JointModelRY,
    (True, (0.0, 0.0, 1.0)): pin.JointModelRZ,
    (False, (1.0, 0.0, 0.0)): pin.JointModelPX,
    (False, (0.0, 1.0, 0.0)): pin.JointModelPY,
    (False, (0.0, 0.0, 1.0)): pin.JointModelPZ,
}


def joint_model(kind: str, axis: tuple[float, float, float]) -> pin.JointModel:
    """Pinocchio's joint model for a revolute/continuous (one q each) or prismatic joint about/along ``axis``."""
    revolute = kind != "prismatic"
    aligned = _ALIGNED.get((revolute, axis))
    if aligned is not None:
        return aligned()
    a = np.asarray(axis, dtype=float)
    return pin.JointModelRevoluteUnaligned(a) if revolute else pin.JointModelPrismaticUnaligned(a)


_BIG = np.finfo(float).max


def _finite(v: float) -> float:
    return v if np.isfinite(v) else (_BIG if v > 0 else -_BIG)


def body_inertia(mass: float, com: np.ndarray, inertia: np.ndarray) -> pin.Inertia:
    """Pinocchio's inertia of a body, set field by field: the checked constructor refuses a diagonal entry of
    -1e-20 (rounding in a URDF's numbers) that the module set's validation, and Pinocchio's URDF loader, accept.
    The tensor is made exactly symmetric first: Pinocchio refuses (RuntimeError) the last-bit asymmetry a rotated
    tensor (``R I R^T``) carries, which the module set's validation accepts."""
    tensor = np.asarray(inertia, dtype=float)
    out = pin.Inertia.Zero()
    out.mass, out.lever, out.inertia = float(mass), np.asarray(com, dtype=float), 0.5 * (tensor + tensor.T)
    return out


_INERTIAS: dict[int, tuple[Body, pin.Inertia]] = {}


def _inertia(body: Body) -> pin.Inertia:
    """:func:`body_inertia` of a body, made once per body (bodies are immutable; Pinocchio copies an inertia it is
    given: a search builds ~14 bodies per robot, the same few dozen over and over)."""
    seen = _INERTIAS.get(id(body))
    if seen is None or seen[0] is not body:  # (held: its id stays its own)
        if len(_INERTIAS) > 4096:
            _INERTIAS.clear()
        seen = _INERTIAS[id(body)] = (body, body_inertia(body.mass, body.r_com, body.inertia))
    return seen[1]


@dataclass
class _Rotors:
    """Per moving joint, in order: rotor inertia (reflected through the gear), Coulomb and viscous friction."""

    armature: list[float] = field(default_factory=list)
    friction: list[float] = field(default_factory=list)
    damping: list[float] = field(default_factory=list)

    def add(self, j: Joint) -> None:
        self.armature.append((j.motor_inertia or 0.0) * (j.gear_ratio or 1.0) ** 2)
        self.friction.append(j.friction_coulomb or 0.0)
        self.damping.append(j.friction_viscous or 0.0)

    def set_on(self, model: pin.Model) -> None:
        """Give the model these values (a model without moving joints keeps its empty ones)."""
        if self.armature:
            model.armature = np.array(self.armature)
            model.friction = np.array(self.friction)
            model.damping = np.array(self.damping)


def _add_joint(model: pin.Model, link: TreeLink, parent: int, placement: np.ndarray, rotors: _Rotors) -> int:
    """Add the moving joint that attaches ``link`` (limits, and its rotor and friction to ``rotors``): its id."""
    j = link.joint
    assert j is not None  # build_tree sets a joint on every non-fixed link
    lim = j.limits
    jid = model.addJoint(
        parent,
        joint_model(link.joint_type, j.axis),
        pin.SE3(placement),
        link.joint_name,
        np.array([_finite(lim.torque)]),
        np.array([_finite(lim.velocity)]),
        np.array([_finite(lim.lower)]),
        np.array([_finite(lim.upper)]),
    )
    rotors.add(j)
    return jid


def check_mass(assembly: ModuleAssembly) -> None:
    """The check a robot's build starts with: the modules' masses add up to a float (ValidationError)."""
    if math.isinf(assembly.mass):  # each module's is finite: the robot's must be too
        raise ValidationError("the modules' masses add up to more than a float holds",
                              value=[m.id for m in assembly.modules])  # fmt: skip


def _checked_tree(assembly: ModuleAssembly, prefix: str) -> KinematicTree:
    """The assembly's kinematic tree, after :func:`check_mass`."""
    check_mass(assembly)
    return assembly.tree(prefix)


def build_robot(assembly: ModuleAssembly, placement: np.ndarray, ignore_collisions: str, prefix: str = "") -> PinRobot:
    """Build the Pinocchio model, its collision model and collision pairs for an assembly."""
    tree = _checked_tree(assembly, prefix)
    model = pin.Model()
    model.name = prefix + "timor_robot"
    links = tree.links
    n = len(links)
    joint_of = [0] * n
    frame_of = [0] * n
    place_of: list[np.ndarray] = [IDENTITY] * n  # link frame in its parent joint's frame
    rotors = _Rotors()
    body_frame = pin.FrameType.BODY
    for k, link in enumerate(links):
        if link.parent is None:
            jid, placement_in_joint, parent_frame = 0, placement, 0
        else:
            p = link.parent
            jp = place_of[p] @ link.origin
            if link.joint_type == "fixed":
                jid = joint_of[p]
                placement_in_joint = jp
                parent_frame = model.addFrame(
                    pin.Frame(link.joint_name, jid, frame_of[p], pin.SE3(jp), pin.FrameType.FIXED_JOINT)
                )
            else:
                jid = _add_joint(model, link, joint_of[p], jp, rotors)
                placement_in_joint = IDENTITY
                parent_frame = model.addJointFrame(jid, frame_of[p])
        joint_of[k] = jid
        place_of[k] = placement_in_joint
        body_placement = placement_in_joint @ link.body_in_link
        frame_of[k] = model.addFrame(pin.Frame(link.name, jid, parent_frame, pin.SE3(placement_in_joint), body_frame))
        body = link.body
        if body.mass > 0 or np.any(body.inertia):  # a massless link may still carry rotational inertia
            model.appendBodyToJoint(jid, _inertia(body), pin.SE3(body_placement))
    tcp = None
    for tool in tree.tcp_frames:
        frame = pin.Frame(tool.name, joint_of[tool.link], frame_of[tool.link],
                          pin.SE3(place_of[tool.link] @ tool.pose), pin.FrameType.OP_FRAME)  # fmt: skip
        fid = model.addFrame(frame)
        tcp = fid if tcp is None else tcp
    rotors.set_on(model)
    check_collision_geometry(tree)  # eager: bad meshes fail here, named; their BVH trees wait for a query
    collision = partial(collision_model, tree, joint_of, frame_of, place_of)
    return PinRobot(model, collision, tcp, assembly, ignore_collisions, tree, joint_of, frame_of, place_of)


_KINDS = {(1.0, 0.0, 0.0): 0, (0.0, 1.0, 0.0): 1, (0.0, 0.0, 1.0): 2}  # a revolute joint's axis: RX, RY, RZ


@dataclass(frozen=True)
class SerialArm:
    """A robot's kinematics to its TCP as the compiled IK takes them, without its Pinocchio model (issue 38 item 1:
    a search builds a robot for every chain past its family filter, and most fail the kinematic IK, which needs
    nothing else): ``chain`` what :func:`.ik_kernel.kernel_chain` gives of the robot's model and TCP, ``lower`` /
    ``upper`` its position limits (Pinocchio's: +-DBL_MAX for none), ``sample_box`` its random configurations' box,
    ``base`` its base's origin and ``reach`` its ``reach()`` (``PinRobot``'s of the TCP): the same numbers."""

    chain: KernelChain
    lower: np.ndarray
    upper: np.ndarray
    sample_box: tuple[np.ndarray, np.ndarray]
    base: list[float]
    reach: float

    @property
    def dof(self) -> int:
        """The arm's joints (each one DOF)."""
        return len(self.lower)

    @classmethod
    def of(cls, placements: np.ndarray, kinds: list[int], limits: np.ndarray, tcp: np.ndarray,
           placement: np.ndarray) -> SerialArm:  # fmt: skip
        """The arm of these joint placements (n, 4, 4; the first in the world, each next in the joint before's
        frame), axes (0/1/2: x/y/z), position limits (2, n; Pinocchio's), TCP placement in the last joint's frame
        and base placement."""
        kind = np.array(kinds, dtype=np.int64)
        chain = KernelChain(placements, kind, np.ascontiguousarray(np.eye(3)[kind]),
                            np.ascontiguousarray(tcp, dtype=float), len(kinds))  # fmt: skip
        lower, upper = limits[0].copy(), limits[1].copy()
        low = np.where(lower > -1e300, lower, -np.pi)  # (PinRobot's random configurations)
        base = placement[:3, 3]
        total = float(np.linalg.norm(tcp[:3, 3]))  # PinRobot.reach(): from the TCP to the base, joint by joint
        for j in range(len(kinds) - 1, -1, -1):
            total += float(np.linalg.norm(placements[j][:3, 3] - (base if j == 0 else 0.0)))
        return cls(chain, lower, upper, (low, np.where(upper < 1e300, upper, np.pi) - low), base.tolist(), total)


def serial_arm(assembly: ModuleAssembly, placement: np.ndarray) -> SerialArm | None:
    """The :class:`SerialArm` of the robot :func:`build_robot` builds of an assembly at ``placement`` (from the same
    tree, by the same products), where that robot has an end effector and its joints are revolute about x, y or z,
    each the child of the one before and each moving the TCP; else None. Raises what that build raises first."""
    tree = _checked_tree(assembly, "")
    if not tree.tools:
        return None
    check_collision_geometry(tree)
    place_of: list[np.ndarray] = [IDENTITY] * len(tree.links)
    joint_of = [0] * len(tree.links)
    joints: list[np.ndarray] = []
    kinds: list[int] = []
    limits: list[tuple[float, float]] = []
    for k, link in enumerate(tree.links):
        if link.parent is None:
            place_of[k] = placement
            continue
        jp = place_of[link.parent] @ link.origin  # (build_robot's products)
        if link.joint_type == "fixed":
            joint_of[k], place_of[k] = joint_of[link.parent], jp
            continue
        j = link.joint
        kind = _KINDS.get(j.axis) if j is not None else None
        if j is None or kind is None or link.joint_type not in ("revolute", "continuous"):
            return None
        if joint_of[link.parent] != len(joints):  # (not the child of the joint before)
            return None
        joints.append(jp)
        kinds.append(kind)
        limits.append((_finite(j.limits.lower), _finite(j.limits.upper)))
        joint_of[k] = len(joints)
    tool = tree.tcp_frames[0]
    if not joints or joint_of[tool.link] != len(joints):
        return None
    return SerialArm.of(np.array(joints), kinds, np.array(limits).T, place_of[tool.link] @ tool.pose, placement)
