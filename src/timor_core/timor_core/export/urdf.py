"""URDF export of an assembly: links per body, joints per module joint and per connection.

Serial chains (each module joined to the next) go through the compiled writer of
:mod:`timor_core.export.urdf_serial`, which joins strings cached per module set; every other assembly is
written by walking its kinematic tree (:func:`tree_to_urdf`). Both build their text from the same pieces
(:mod:`timor_core.export.urdf_parts`) and give the same bytes.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import numpy as np

from timor_core.common.names import check_name, xml_escape
from timor_core.common.names import ros_name as ros_name
from timor_core.errors import AssemblyError, URDFError
from timor_core.export.urdf_parts import (
    MESH_URI_MODES,
    URDF_UNLIMITED,
    WRL_MODES,
    check_mesh_options,
    joint_xml,
    link_body_xml,
    link_xml,
    origin_xml,
    robot_name_of,
    tool_xml,
    world_xml,
)
from timor_core.export.urdf_serial import serial_assembly_urdf
from timor_core.model.tree import KinematicTree

if TYPE_CHECKING:
    from collections.abc import Callable

    from timor_core.export.ros2_control import Ros2ControlConfig
    from timor_core.model.assembly import ModuleAssembly

__all__ = [
    "assembly_to_urdf",
    "tree_to_urdf",
    "default_robot_name",
    "URDF_UNLIMITED",
    "MESH_URI_MODES",
    "WRL_MODES",
    "origin_xml",
    "tree_xml",
    "mesh_package",
]


def default_robot_name(assembly: ModuleAssembly) -> str:
    """A deterministic robot name: the module set's name and a short hash of the assembly."""
    return robot_name_of(assembly.db.name, json.dumps(assembly.to_json_data(), sort_keys=True))


def mesh_package(assembly: ModuleAssembly, mesh_uri: str, package: str | None, wrl: str) -> str:
    """Check the mesh options of a description export; return the package of ``package://`` URIs.

    The package defaults to the module set's name (``timor`` if it has none usable).
    """
    return check_mesh_options(assembly.db.name, mesh_uri, package, wrl)


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
        body = link_body_xml(link, mesh_uri, package, wrl)
        if body_filter is not None:
            body = body_filter(body)
        link_chunks.append(link_xml(link, body))
        if link.parent is not None:
            joint_chunks.append(joint_xml(link, links[link.parent].name))
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
        link_chunk, joint_chunk = tool_xml(links[tool.link].name, tool.name, origin_xml(tool.pose))
        link_chunks.append(link_chunk)
        joint_chunks.append(joint_chunk)
    return link_chunks, joint_chunks


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

    A serial chain is written by the compiled writer (:func:`timor_core.export.urdf_serial.serial_assembly_urdf`,
    strings cached per module set), any other assembly by :func:`tree_to_urdf`; the text is the same.
    """
    if ros2_control is None:
        text = serial_assembly_urdf(assembly, name, prefix=prefix, mesh_uri=mesh_uri, package=package, wrl=wrl)
        if text is not None:
            return text
    return tree_to_urdf(assembly, name, prefix, mesh_uri, package, wrl, ros2_control)


def tree_to_urdf(
    assembly: ModuleAssembly,
    name: str | None = None,
    prefix: str = "",
    mesh_uri: str = "file",
    package: str | None = None,
    wrl: str = "visual",
    ros2_control: Ros2ControlConfig | None = None,
) -> str:
    """:func:`assembly_to_urdf` for any assembly, by walking its kinematic tree (``assembly.tree(prefix)``).

    The general writer; the compiled serial writer must give exactly its bytes (the tests compare them).
    """
    package = mesh_package(assembly, mesh_uri, package, wrl)
    try:
        tree = assembly.tree(prefix)
    except AssemblyError as exc:
        raise URDFError(f"cannot write URDF: {exc}") from None
    robot_name = check_name(name, "robot name") if name is not None else default_robot_name(assembly)
    out = [f'<?xml version="1.0" encoding="utf-8"?>\n<robot name="{xml_escape(robot_name)}">\n']
    link_chunks, joints = tree_xml(tree, mesh_uri, package, wrl)
    out.extend(link_chunks)
    if not np.array_equal(assembly.base_placement, np.eye(4)):
        world_link, world_joint = world_xml(prefix, tree.links[0].name, assembly.base_placement)
        out.append(world_link)
        joints.append(world_joint)
    out.extend(joints)
    if ros2_control is not None:
        from timor_core.export.ros2_control import ros2_control_xml

        out.append(ros2_control_xml(assembly, ros2_control, prefix=prefix, robot_name=robot_name))
    out.append("</robot>\n")
    return "".join(out)
