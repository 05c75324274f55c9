"""URDF export of an assembly: links per body, joints per module joint and per connection.

Fragments that depend only on a module (a link's inertial and geometry, a joint origin) are cached
on the module, so writing the URDF of a new assembly mostly joins cached strings.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from typing import TYPE_CHECKING

import numpy as np

from timor_core.common.extensions import implements
from timor_core.common.names import check_name, format_number, xml_escape
from timor_core.common.names import ros_name as ros_name
from timor_core.common.transforms import rpy
from timor_core.errors import AssemblyError, InputError, URDFError
from timor_core.model.geometry import Box, Cylinder, Empty, Geometry, Mesh, Sphere
from timor_core.model.tree import KinematicTree, TreeLink

if TYPE_CHECKING:
    from collections.abc import Callable

    from timor_core.export.ros2_control import Ros2ControlConfig
    from timor_core.model.assembly import ModuleAssembly

__all__ = [
    "assembly_to_urdf",
    "URDF_UNLIMITED",
    "MESH_URI_MODES",
    "WRL_MODES",
    "origin_xml",
    "tree_xml",
    "mesh_package",
]

log = logging.getLogger(__name__)

MESH_URI_MODES = ("file", "package", "relative", "path")
WRL_MODES = ("visual", "keep")
_ORIGIN_CACHE: dict[bytes, str] = {}


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


def _link_body_xml(link: TreeLink, mode: str, package: str, wrl: str) -> str:
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


def _joint_xml(link: TreeLink, parent_name: str) -> str:
    head = f'  <joint name="{link.joint_name}" type="{link.joint_type}">\n'
    body = f'    {origin_xml(link.origin)}\n    <parent link="{parent_name}"/>\n    <child link="{link.name}"/>\n'
    j = link.joint
    if j is None or link.joint_type == "fixed":
        return head + body + "  </joint>\n"
    key = ("urdf-joint", j.id)
    cache = link.module._cache
    tail = cache.get(key)
    if tail is None:
        lim = j.limits
        position = "" if j.type == "continuous" else f'lower="{_limit(lim.lower)}" upper="{_limit(lim.upper)}" '
        tail = (
            '    <axis xyz="0 0 1"/>\n'
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


def default_robot_name(assembly: ModuleAssembly) -> str:
    """A deterministic robot name: the module set's name and a short hash of the assembly."""
    digest = hashlib.sha1(json.dumps(assembly.to_json_data(), sort_keys=True).encode()).hexdigest()[:8]
    return f"{ros_name(assembly.db.name) or 'timor'}_{digest}"


def mesh_package(assembly: ModuleAssembly, mesh_uri: str, package: str | None, wrl: str) -> str:
    """Check the mesh options of a description export; return the package of ``package://`` URIs.

    The package defaults to the module set's name (``timor`` if it has none usable).
    """
    if mesh_uri not in MESH_URI_MODES:
        raise InputError(f"mesh_uri must be one of {MESH_URI_MODES}", value=mesh_uri)
    if wrl not in WRL_MODES:
        raise InputError(f"wrl must be one of {WRL_MODES}", value=wrl)
    return check_name(package, "package name") if package is not None else (ros_name(assembly.db.name) or "timor")


def tree_xml(
    tree: KinematicTree,
    mesh_uri: str,
    package: str,
    wrl: str,
    body_filter: Callable[[str], str] | None = None,
) -> tuple[list[str], list[str]]:
    """The ``<link>`` and ``<joint>`` elements of a kinematic tree (two-space indented), tool frames included.

    Returns (links, joints) as lists of XML chunks; ``body_filter`` is applied to each link's body.
    """
    links = tree.links
    link_chunks: list[str] = []
    joint_chunks: list[str] = []
    for link in links:
        body = _link_body_xml(link, mesh_uri, package, wrl)
        if body_filter is not None:
            body = body_filter(body)
        link_chunks.append(f'  <link name="{link.name}">\n{body}  </link>\n')
        if link.parent is not None:
            joint_chunks.append(_joint_xml(link, links[link.parent].name))
    tools = tree.tcp_frames
    names = [link.name for link in links] + [tool.name for tool in tools]
    joint_names = [str(link.joint_name) for link in links if link.parent is not None] + [
        f"{links[tool.link].name}_to_{tool.name}" for tool in tools
    ]
    for kind, seq in (("link", names), ("joint", joint_names)):
        if len(set(seq)) != len(seq):
            twice = sorted({n for n in seq if seq.count(n) > 1})
            raise URDFError(f"the module IDs give two {kind}s the same name: {', '.join(map(str, twice))}")
    for tool in tools:
        link_chunks.append(f'  <link name="{tool.name}"/>\n')
        joint_chunks.append(
            f'  <joint name="{links[tool.link].name}_to_{tool.name}" type="fixed">\n'
            f"    {origin_xml(tool.pose)}\n"
            f'    <parent link="{links[tool.link].name}"/>\n    <child link="{tool.name}"/>\n  </joint>\n'
        )
    return link_chunks, joint_chunks


@implements("assembly_to_urdf")
def assembly_to_urdf(
    assembly: ModuleAssembly,
    name: str | None = None,
    prefix: str = "",
    mesh_uri: str = "file",
    package: str | None = None,
    wrl: str = "visual",
    ros2_control: Ros2ControlConfig | None = None,
) -> str:
    """The URDF of an assembly.

    ``mesh_uri``: ``file`` (absolute file:// URIs), ``package`` (``package://<package>/<path in set>``),
    ``relative`` (the path as written in the module set) or ``path`` (plain absolute paths, for MuJoCo).
    ``wrl``: ``visual`` writes a body's VRML convex decomposition as its visual mesh (what URDF consumers can
    read), ``keep`` keeps the .wrl file.
    The root link is ``base_link``; each free ``eef`` connector gets a link ``tool0``, ``tool1``, ...
    A non-identity base placement adds a ``world`` link. Closed chains raise AssemblyError.
    ``ros2_control`` appends a ``<ros2_control>`` block for the actuated joints (see timor_core.export.ros2_control).
    """
    package = mesh_package(assembly, mesh_uri, package, wrl)
    try:
        tree = assembly.tree(prefix)
    except AssemblyError as exc:
        raise URDFError(f"cannot write URDF: {exc}") from None
    robot_name = check_name(name, "robot name") if name is not None else default_robot_name(assembly)
    out = [f'<?xml version="1.0" encoding="utf-8"?>\n<robot name="{xml_escape(robot_name)}">\n']
    links = tree.links
    link_chunks, joints = tree_xml(tree, mesh_uri, package, wrl)
    out.extend(link_chunks)
    if not np.array_equal(assembly.base_placement, np.eye(4)):
        out.append(f'  <link name="{prefix}world"/>\n')
        joints.append(
            f'  <joint name="{prefix}world_to_base_link" type="fixed">\n'
            f"    {origin_xml(assembly.base_placement)}\n"
            f'    <parent link="{prefix}world"/>\n    <child link="{links[0].name}"/>\n  </joint>\n'
        )
    out.extend(joints)
    if ros2_control is not None:
        from timor_core.export.ros2_control import ros2_control_xml

        out.append(ros2_control_xml(assembly, ros2_control, prefix=prefix, robot_name=robot_name))
    out.append("</robot>\n")
    return "".join(out)
