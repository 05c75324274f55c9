"""The pieces of a URDF: ``<link>``, ``<joint>``, tool and world elements, origins, the default robot name.

The URDF writer (:mod:`.urdf`, through the fragments of :mod:`.urdf_walk`)
builds its text from these functions. Pieces that depend only on a module (a link's inertial and geometry, a
joint's limits) are cached on the module.
"""

from __future__ import annotations

import hashlib
import logging
import math

import numpy as np

from timor_core.common.names import format_number, name_attr, ros_name, xml_escape
from timor_core.common.transforms import rpy
from timor_core.errors import InputError
from timor_core.export.formats.urdf_options import MESH_URI_MODES, WRL_MODES
from timor_core.model.geometry import Box, Cylinder, Empty, Geometry, Mesh, Sphere
from timor_core.model.tree import TreeLink

__all__ = [
    "URDF_UNLIMITED",
    "MESH_URI_MODES",
    "WRL_MODES",
    "origin_xml",
    "link_body_xml",
    "link_xml",
    "joint_xml",
    "tool_xml",
    "world_xml",
    "robot_name_of",
]

log = logging.getLogger(__name__)

_ORIGIN_CACHE: dict[bytes, str] = {}
_TOOL_CACHE: dict[tuple[str, str, str, bool], tuple[str, str]] = {}

_num = format_number

URDF_UNLIMITED = 1e9
"""What an unlimited joint limit is written as in URDF (URDF has no spelling for it; urdfdom refuses ``inf``).

Effort, velocity and position limits the module set leaves open become ``1e+09`` (or ``-1e+09``); the MoveIt
``joint_limits.yaml`` says ``has_velocity_limits: false`` for them and ros2_control's interfaces leave them out.
Reading a URDF, a magnitude of at least this value is read as unlimited again."""


def _limit(v: float) -> str:
    """A joint limit for URDF: infinite limits become ``±URDF_UNLIMITED``."""
    v = float(v)
    if math.isinf(v) or abs(v) >= URDF_UNLIMITED:
        return "1e+09" if v > 0 else "-1e+09"
    return _num(v)


def origin_xml(T: np.ndarray) -> str:
    """``<origin xyz=... rpy=.../>`` of a transform (cached by value)."""
    key = T.tobytes()
    text = _ORIGIN_CACHE.get(key)
    if text is None:
        r, p, y = rpy(T[:3, :3])
        text = f'<origin xyz="{_num(T[0, 3])} {_num(T[1, 3])} {_num(T[2, 3])}" rpy="{_num(r)} {_num(p)} {_num(y)}"/>'
        if len(_ORIGIN_CACHE) > 100_000:
            _ORIGIN_CACHE.clear()
        _ORIGIN_CACHE[key] = text
    return text


def robot_name_of(db_name: str, assembly_json: str) -> str:
    """The default robot name: the module set's name and a short hash of the assembly's sorted-keys JSON text."""
    return f"{ros_name(db_name) or 'timor'}_{hashlib.sha1(assembly_json.encode()).hexdigest()[:8]}"


def _mesh_uri(mesh: Mesh, mode: str, package: str) -> str:
    if mode == "file":
        return "file://" + str(mesh.path)
    if mode == "package":
        return f"package://{package}/{mesh.file}"
    if mode == "path":  # a plain absolute path: what MuJoCo's URDF reader and other non-ROS tools understand
        return str(mesh.path)
    return mesh.file


def _geometry_xml(g: Geometry, mode: str, package: str) -> str | None:
    if isinstance(g, Box):
        return f'<box size="{_num(g.x)} {_num(g.y)} {_num(g.z)}"/>'
    if isinstance(g, Cylinder):
        return f'<cylinder radius="{_num(g.r)}" length="{_num(g.z)}"/>'
    if isinstance(g, Sphere):
        return f'<sphere radius="{_num(g.r)}"/>'
    if isinstance(g, Mesh):
        scale = " ".join(_num(s) for s in g.scale)
        return f'<mesh filename="{xml_escape(_mesh_uri(g, mode, package), "mesh file name")}" scale="{scale}"/>'
    if isinstance(g, Empty):
        return None
    raise InputError(f"cannot write geometry of type {type(g).__name__} to URDF")


def _shapes_xml(tag: str, geoms: tuple[Geometry, ...], B: np.ndarray, mode: str, package: str) -> str:
    out = []
    for g in geoms:
        inner = _geometry_xml(g, mode, package)
        if inner is None:
            continue
        out.append(f"    <{tag}>\n      {origin_xml(B @ g.pose)}\n      <geometry>{inner}</geometry>\n    </{tag}>\n")
    return "".join(out)


def link_body_xml(link: TreeLink, mode: str, package: str, wrl: str) -> str:
    """Everything inside ``<link>`` for a body placed at ``body_in_link`` (cached per module)."""
    B = link.body_in_link
    key = ("urdf-link", link.body.id, B.tobytes(), mode, package, wrl)
    cache = link.module._cache
    text = cache.get(key)
    if text is not None:
        return text
    body = link.body
    com = B[:3, :3] @ body.r_com + B[:3, 3]
    r, p, y = rpy(B[:3, :3])
    inertia = body.inertia
    parts = [
        "    <inertial>\n"
        f'      <origin xyz="{_num(com[0])} {_num(com[1])} {_num(com[2])}" rpy="{_num(r)} {_num(p)} {_num(y)}"/>\n'
        f'      <mass value="{_num(body.mass)}"/>\n'
        f'      <inertia ixx="{_num(inertia[0, 0])}" ixy="{_num(inertia[0, 1])}" ixz="{_num(inertia[0, 2])}" '
        f'iyy="{_num(inertia[1, 1])}" iyz="{_num(inertia[1, 2])}" izz="{_num(inertia[2, 2])}"/>\n'
        "    </inertial>\n"
    ]
    parts.append(_shapes_xml("visual", body.shown, B, mode, package))
    collision = body.collision
    if wrl == "visual" and any(isinstance(g, Mesh) and g.is_convex_decomposition for g in collision):
        replacement = tuple(g for g in body.visual if isinstance(g, Mesh))
        if replacement:
            log.debug("body %s: VRML collision mesh written as its visual mesh in URDF", body.id)
            collision = (
                tuple(g for g in collision if not (isinstance(g, Mesh) and g.is_convex_decomposition)) + replacement
            )
    parts.append(_shapes_xml("collision", collision, B, mode, package))
    text = "".join(parts)
    cache[key] = text
    return text


def link_xml(link: TreeLink, body: str, for_xacro: bool = False) -> str:
    """The ``<link>`` element of ``link`` around its inner XML ``body`` (from :func:`link_body_xml`)."""
    return f'  <link name="{name_attr(link.name, for_xacro)}">\n{body}  </link>\n'


def joint_xml(link: TreeLink, parent_name: str, for_xacro: bool = False) -> str:
    """The ``<joint>`` element that attaches ``link`` to the link named ``parent_name`` (names escaped)."""
    head = f'  <joint name="{name_attr(str(link.joint_name), for_xacro)}" type="{link.joint_type}">\n'
    parent, child = name_attr(parent_name, for_xacro), name_attr(link.name, for_xacro)
    body = f'    {origin_xml(link.origin)}\n    <parent link="{parent}"/>\n    <child link="{child}"/>\n'
    j = link.joint
    if j is None or link.joint_type == "fixed":
        return head + body + "  </joint>\n"
    key = ("urdf-joint", j.id)
    cache = link.module._cache
    tail = cache.get(key)
    if tail is None:
        lim = j.limits
        position = "" if j.type == "continuous" else f'lower="{_limit(lim.lower)}" upper="{_limit(lim.upper)}" '
        axis = " ".join(_num(a) for a in j.axis)
        tail = (
            f'    <axis xyz="{axis}"/>\n'
            f'    <limit {position}effort="{_limit(lim.torque)}" velocity="{_limit(lim.velocity)}"/>\n'
        )
        if j.friction_viscous is not None or j.friction_coulomb is not None:
            tail += (
                f'    <dynamics damping="{_num(j.friction_viscous or 0.0)}" '
                f'friction="{_num(j.friction_coulomb or 0.0)}"/>\n'
            )
        tail += "  </joint>\n"
        cache[key] = tail
    return head + body + tail


def tool_xml(link_name: str, tool_name: str, origin: str, for_xacro: bool = False) -> tuple[str, str]:
    """The ``<link>`` and fixed ``<joint>`` of a tool frame ``tool_name`` on link ``link_name`` at ``origin`` (cached:
    every robot of a search space writes its tool frames)."""
    key = (link_name, tool_name, origin, for_xacro)
    found = _TOOL_CACHE.get(key)
    if found is None:
        link, tool = name_attr(link_name, for_xacro), name_attr(tool_name, for_xacro)
        joint = (
            f'  <joint name="{link}_to_{tool}" type="fixed">\n    {origin}\n'
            f'    <parent link="{link}"/>\n    <child link="{tool}"/>\n  </joint>\n'
        )
        if len(_TOOL_CACHE) > 10_000:
            _TOOL_CACHE.clear()
        found = _TOOL_CACHE[key] = (f'  <link name="{tool}">\n{_MASSLESS}  </link>\n', joint)
    return found


_MASSLESS = (
    '    <inertial>\n      <mass value="0"/>\n      <inertia ixx="0" ixy="0" ixz="0" iyy="0" iyz="0" izz="0"/>\n'
    "    </inertial>\n"
)
"""A tool frame's inertial, said explicitly: PyBullet gives a link without one 1 kg and an inertia of 1 kg m² (a
phantom load at the TCP: gravity torques 24 % too high on a 4-joint arm). Pinocchio, urdfdom and KDL read it as no
mass; the root link has none (KDL refuses an inertia there)."""


def world_xml(prefix: str, base_link: str, placement: np.ndarray) -> tuple[str, str]:
    """The ``world`` link and the fixed joint placing ``base_link`` in it (for a non-identity base placement); the
    link is ``timor_world`` when the root already is ``world`` (a robot imported keeping its names, as UR's)."""
    world = f"{prefix}world" if base_link != f"{prefix}world" else f"{prefix}timor_world"
    joint = (
        f'  <joint name="{prefix}world_to_base_link" type="fixed">\n    {origin_xml(placement)}\n'
        f'    <parent link="{world}"/>\n    <child link="{name_attr(base_link)}"/>\n  </joint>\n'
    )
    return f'  <link name="{world}"/>\n', joint
