"""MJCF export: the assembly's URDF compiled by MuJoCo's own parser (``mujoco.MjSpec``), completed for simulation.

MuJoCo reads neither ``file://`` nor ``package://`` URIs nor VRML, and by default fuses bodies welded to the world
(their mass is lost). So the URDF is written with plain paths and MuJoCo's ``fusestatic="false"``; VRML convex
decompositions become one STL per convex piece (MuJoCo collides a mesh as its convex hull, so the pieces collide
exactly as coal sees them), other formats MuJoCo cannot read are converted to STL. The rotor inertia, damping and
friction of the module set go to the joints, each actuated joint gets a motor, and the set's self-collision rule
(``ignore_collisions``) becomes explicit contact excludes. The result loads in MuJoCo with the masses, inertias,
mass matrix and forward kinematics of ``assembly.robot``.
"""

from __future__ import annotations

import math
import struct
import tempfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from timor_core.common.fileio import output_target, write_files
from timor_core.errors import InputError, MJCFError
from timor_core.export.formats.urdf import URDF_UNLIMITED, UrdfOptions, assembly_to_urdf
from timor_core.model.meshes import ConvexParts, MeshData, load_mesh

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

__all__ = ["MJCFOptions", "MUJOCO_MESH_SUFFIXES", "assembly_to_mjcf"]

MUJOCO_MESH_SUFFIXES = (".stl", ".obj", ".msh")
"""Mesh formats MuJoCo reads itself; others are converted to binary STL."""

ACTUATORS = ("motor", "none")


@dataclass(frozen=True)
class MJCFOptions:
    """How to write the MJCF.

    ``balance_inertia``: MuJoCo refuses principal moments that violate A + B >= C (IMPROV's module 7 has
    them); with True MuJoCo's ``balanceinertia`` adjusts them (the model then differs from the set's), with
    False such a body is an MJCFError naming it. ``actuators``: ``motor`` (one torque motor per actuated joint,
    control range = the peak torque where finite) or ``none``. ``contact_excludes``: write the module set's
    self-collision rule as ``<exclude>`` pairs (and switch off MuJoCo's own parent-child filter).
    """

    balance_inertia: bool = False
    actuators: str = "motor"
    contact_excludes: bool = True

    def check(self) -> None:
        """Refuse unknown settings (InputError naming the field)."""
        if self.actuators not in ACTUATORS:
            raise InputError(f"actuators must be one of {ACTUATORS}", path="actuators", value=self.actuators)


def _mujoco() -> Any:
    try:
        import mujoco
    except ImportError:
        raise MJCFError("MJCF export needs MuJoCo: pip install mujoco") from None
    return mujoco


def _stl_bytes(mesh: MeshData) -> bytes:
    """Binary STL of a triangle mesh (the normals are left zero: MuJoCo and most readers recompute them)."""
    v = np.asarray(mesh.vertices, dtype=np.float32)
    f = np.asarray(mesh.faces, dtype=np.int64)
    records = np.zeros(len(f), dtype=[("n", "<f4", 3), ("v", "<f4", (3, 3)), ("attr", "<u2")])
    records["v"] = v[f]
    return b"timor mesh".ljust(80, b" ") + struct.pack("<I", len(f)) + records.tobytes()


class _MeshPlan:
    """Where each mesh of the URDF goes: kept (absolute path), copied or converted into the mesh folder."""

    def __init__(self, folder: Path | None, stage: Path) -> None:
        self.folder = folder  # None: the MJCF references the original files by absolute path
        self.stage = stage  # converted files live here while MuJoCo compiles
        self.files: dict[str, bytes] = {}  # file name in the mesh folder -> content
        self._names: dict[tuple[str, int], str] = {}
        self._next: dict[tuple[str, str], int] = {}  # per (stem, suffix): the first number not tried yet

    def _unique(self, stem: str, suffix: str) -> str:
        """``stem + suffix``, else ``stem_1 + suffix``, ``stem_2``, ...: the first not taken. Each stem resumes where
        it stopped (the names below are taken for good), so n meshes of one stem cost O(n), not O(n^2)."""
        k = self._next.get((stem, suffix), 0)
        name = f"{stem}{suffix}" if k == 0 else f"{stem}_{k}{suffix}"
        while name in self.files:
            k += 1
            name = f"{stem}_{k}{suffix}"
        self._next[(stem, suffix)] = k + 1
        return name

    def add(self, source: Path, part: int, data: bytes | None) -> str:
        """The path to write into the URDF for ``source`` (or its convex piece ``part``), staging its bytes."""
        key = (str(source), part)
        name = self._names.get(key)
        if name is None:
            if data is None and self.folder is None:
                self._names[key] = str(source)
                return str(source)
            if self.folder is None:
                raise MJCFError(
                    f"{source}: MuJoCo cannot read this mesh format; give write_to (timor mjcf -o FILE) so the "
                    "converted mesh has a folder to live in"
                )
            suffix = source.suffix.lower() if data is None else ".stl"
            stem = source.stem if part < 0 else f"{source.stem}_part{part}"
            name = self._unique(stem, suffix)
            self.files[name] = source.read_bytes() if data is None else data
            (self.stage / name).write_bytes(self.files[name])
            self._names[key] = name
        return name


def _rewrite_meshes(root: ET.Element, plan: _MeshPlan) -> None:
    """Point every URDF mesh at a file MuJoCo can read, splitting convex decompositions into pieces."""
    for link in root.iter("link"):
        for element in list(link):
            mesh = element.find("geometry/mesh") if element.tag in ("visual", "collision") else None
            if mesh is None:
                continue
            source = Path(mesh.get("filename", ""))
            suffix = source.suffix.lower()
            if suffix in MUJOCO_MESH_SUFFIXES:
                mesh.set("filename", plan.add(source, -1, None))
                continue
            data = load_mesh(source)  # unscaled: the URDF's scale attribute still applies
            if isinstance(data, ConvexParts):
                index = list(link).index(element)
                link.remove(element)
                for k, piece in enumerate(data.parts):
                    copy = ET.fromstring(ET.tostring(element))
                    copy_mesh = copy.find("geometry/mesh")
                    assert copy_mesh is not None
                    copy_mesh.set("filename", plan.add(source, k, _stl_bytes(piece)))
                    link.insert(index + k, copy)
            else:
                mesh.set("filename", plan.add(source, 0, _stl_bytes(data)))


def _staged_urdf(urdf: str, plan: _MeshPlan, balance_inertia: bool) -> str:
    root = ET.fromstring(urdf)
    _rewrite_meshes(root, plan)
    for mesh in root.iter("mesh"):  # MuJoCo compiles from the stage; the final XML names the mesh folder
        name = mesh.get("filename", "")
        if name in plan.files:
            mesh.set("filename", str(plan.stage / name))
    extension = ET.Element("mujoco")
    ET.SubElement(
        extension,
        "compiler",
        {
            "fusestatic": "false",
            "discardvisual": "false",
            "strippath": "false",
            "balanceinertia": "true" if balance_inertia else "false",
            "angle": "radian",
        },
    )
    root.insert(0, extension)
    return ET.tostring(root, encoding="unicode")


def _complete(spec: Any, mujoco: Any, assembly: ModuleAssembly, prefix: str, options: MJCFOptions) -> None:
    """Joint dynamics, unlimited ranges, motors and contact excludes on the parsed spec."""
    robot = assembly.robot
    model = robot.model
    for name in robot.joints:
        joint = spec.joint(prefix + name) if prefix and spec.joint(prefix + name) is not None else spec.joint(name)
        if joint is None:
            raise MJCFError(f"MuJoCo's URDF reader lost joint {name!r}")
        idx = model.joints[model.getJointId(name)].idx_v
        joint.armature = float(model.armature[idx])  # rotor inertia, as robot.id and robot.mass_matrix use it
        damping = float(model.damping[idx])
        joint.damping = np.r_[damping, np.zeros(np.size(joint.damping) - 1)] if np.ndim(joint.damping) else damping
        joint.frictionloss = float(model.friction[idx])
        lo, hi = float(model.lowerPositionLimit[idx]), float(model.upperPositionLimit[idx])
        if not (math.isfinite(lo) and math.isfinite(hi)) or max(abs(lo), abs(hi)) >= URDF_UNLIMITED:
            joint.limited = mujoco.mjtLimited.mjLIMITED_FALSE
        torque = float(model.effortLimit[idx])
        unlimited_torque = not math.isfinite(torque) or torque >= URDF_UNLIMITED
        if unlimited_torque:
            joint.actfrclimited = mujoco.mjtLimited.mjLIMITED_FALSE
        if options.actuators == "motor":
            act = spec.add_actuator()
            act.name = f"{joint.name}_motor"
            act.target = joint.name
            act.trntype = mujoco.mjtTrn.mjTRN_JOINT
            act.set_to_motor()
            if not unlimited_torque:
                act.ctrllimited = mujoco.mjtLimited.mjLIMITED_TRUE
                act.ctrlrange = [-torque, torque]
    if options.contact_excludes:
        _excludes(spec, mujoco, robot)


def _excludes(spec: Any, mujoco: Any, robot: Any) -> None:
    """Exclude every body pair the module set's ignore rule does not check (MuJoCo's own filter off)."""
    robot.collision_pairs  # noqa: B018 - computes the checked pairs of the set's ignore rule
    gm, model = robot.collision, robot.model
    checked = {
        frozenset(
            (
                model.frames[gm.geometryObjects[p.first].parentFrame].name,
                model.frames[gm.geometryObjects[p.second].parentFrame].name,
            )
        )
        for p in gm.collisionPairs
    }
    bodies = sorted({model.frames[g.parentFrame].name for g in gm.geometryObjects})
    for i, a in enumerate(bodies):
        for b in bodies[i + 1 :]:
            if frozenset((a, b)) not in checked and spec.body(a) is not None and spec.body(b) is not None:
                spec.add_exclude(bodyname1=a, bodyname2=b)
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_FILTERPARENT


def assembly_to_mjcf(
    assembly: ModuleAssembly,
    name: str | None = None,
    *,
    options: MJCFOptions | None = None,
    write_to: str | Path | None = None,
) -> str:
    """The MJCF (MuJoCo XML) of an assembly, built by MuJoCo's compiler from its URDF (see the module doc).

    With ``write_to``, the XML and its meshes are written together (all or nothing): the meshes into the folder
    ``<stem>_meshes`` beside the file, referenced relatively, so the folder can be moved. Without it, meshes are
    referenced by absolute path and convex decompositions (VRML) fall back to the visual mesh, as in the URDF.
    """
    options = options or MJCFOptions()
    options.check()
    mujoco = _mujoco()
    target = output_target(write_to) if write_to is not None else None
    mesh_folder = f"{target.stem}_meshes" if target is not None else None
    urdf = assembly_to_urdf(
        assembly, name, UrdfOptions(mesh_uri="path", wrl="keep" if target is not None else "visual")
    )
    with tempfile.TemporaryDirectory(prefix="timor-mjcf-") as stage:
        plan = _MeshPlan(Path(mesh_folder) if mesh_folder else None, Path(stage))
        staged = _staged_urdf(urdf, plan, options.balance_inertia)
        try:
            spec = mujoco.MjSpec.from_string(staged)
            _complete(spec, mujoco, assembly, "", options)
            spec.compile()
            xml = spec.to_xml()
        except ValueError as exc:
            raise MJCFError(f"MuJoCo refuses the model: {_explain(str(exc), assembly)}") from None
    root = ET.fromstring(xml)
    for mesh in root.iter("mesh"):
        file = Path(mesh.get("file", ""))
        if file.parent == Path(stage) and mesh_folder is not None:
            mesh.set("file", f"{mesh_folder}/{file.name}")
    ET.indent(root, "  ")
    text = ET.tostring(root, encoding="unicode") + "\n"
    if target is not None:
        files: dict[str | Path, str | bytes] = {target: text}
        files.update({target.parent / str(mesh_folder) / n: data for n, data in plan.files.items()})
        write_files(files)
    return text


def _explain(message: str, assembly: ModuleAssembly) -> str:
    """MuJoCo's message, with the module and body behind a link name and a hint for unbalanced inertia."""
    text = " ".join(message.split())
    if "A + B >= C" in text or "balanceinertia" in text:
        for link in assembly.tree().links:
            if f"'{link.name}'" in text:
                text += f" (module {link.module.id!r}, body {link.body.id!r})"
                break
        text += "; MJCFOptions(balance_inertia=True) / --balance-inertia lets MuJoCo adjust it"
    return text
