"""xacro export of an assembly: a macro ``<name>(prefix parent *origin)`` that places the robot anywhere.

The macro emits the same links and joints as the URDF export, every name starting with ``${prefix}``,
plus a fixed joint ``${prefix}${parent}_to_base_link`` from the parent link to ``${prefix}base_link``
placed by the ``*origin`` block. The file can also instantiate the macro on a ``world`` link (at the
assembly's base placement), so ``xacro`` expands it into a complete URDF equal to the plain export.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from timor_core.common.names import XACRO_PREFIX, check_name, check_prefix, name_attr, ros_name, xml_escape
from timor_core.errors import InputError
from timor_core.export.formats.urdf import default_robot_name, links_and_joints, origin_xml
from timor_core.export.formats.urdf_options import UrdfOptions, write_description

if TYPE_CHECKING:
    from pathlib import Path

    from timor_core.export.formats.ros2_control import Ros2ControlConfig
    from timor_core.model.assembly import ModuleAssembly

__all__ = ["assembly_to_xacro", "XACRO_NS", "PREFIX"]

XACRO_NS = "http://www.ros.org/wiki/xacro"
PREFIX = XACRO_PREFIX
"""The literal prefix every name in the macro starts with (the macro's ``prefix`` parameter)."""
ROOT_WORLD = PREFIX + "world"
"""The macro's root link when the robot's root is named ``world``."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# xacro's own tags: <xacro:include .../> calls xacro's include, never a macro of that name (xacro 2.x eval_all)
_XACRO_TAGS = frozenset(("arg", "attribute", "call", "element", "if", "include", "insert_block", "macro", "property",
                         "unless"))  # fmt: skip


def _literal(text: str) -> str:
    """Escape ``${`` and ``$(`` so xacro keeps them as text."""
    return text.replace("${", "$${").replace("$(", "$$(")


def _macro_body(assembly: ModuleAssembly, options: UrdfOptions) -> str:
    """Links and joints of the robot with ``${prefix}`` names (two-space indented like the URDF export)."""
    link_chunks, joints, root = links_and_joints(assembly, replace(options, prefix=PREFIX), literal=True, what="xacro")
    joint = (
        f'  <joint name="{PREFIX}${{parent}}_to_base_link" type="fixed">\n'
        '    <xacro:insert_block name="origin"/>\n'
        f'    <parent link="${{parent}}"/>\n    <child link="{name_attr(root, True)}"/>\n  </joint>\n'
    )
    if root == ROOT_WORLD:  # the robot's root is its world (an import keeping UR's names): none when it is the parent
        joint = f"  <xacro:if value=\"${{parent != prefix + 'world'}}\">\n{_indent(joint, 2)}  </xacro:if>\n"
    out = [joint]
    out.extend(link_chunks)
    out.extend(joints)
    return "".join(out)


def _outer_frame(assembly: ModuleAssembly, prefix: str) -> tuple[str, bool]:
    """The frame the instantiated macro hangs from, and whether the file declares it: ``world``; for a robot whose
    root is ``world`` itself (an import keeping UR's names) nothing at the origin (its world is the world), else
    ``timor_world``, as in the URDF export."""
    if prefix + assembly.tree().links[0].name != "world":
        return "world", True
    if np.array_equal(assembly.base_placement, np.eye(4)):
        return "world", False
    return "timor_world", True


def _indent(text: str, spaces: int) -> str:
    pad = " " * spaces
    return "".join(pad + line if line.strip() else line for line in text.splitlines(keepends=True))


def assembly_to_xacro(
    assembly: ModuleAssembly,
    macro_name: str | None = None,
    *,
    name: str | None = None,
    instantiate: bool = True,
    prefix: str = "",
    ros2_control: Ros2ControlConfig | None = None,
    options: UrdfOptions | None = None,
    write_to: str | Path | None = None,
    **mesh: Any,
) -> str:
    """A xacro file defining the macro ``macro_name(prefix parent *origin)`` for this assembly.

    ``macro_name`` defaults to the robot name (see ``default_robot_name``). With ``instantiate`` the
    file also adds a ``world`` link and calls the macro with ``prefix`` on it at the base placement,
    so ``xacro`` expands it to a complete URDF; without it, the file only defines the macro (for
    ``xacro:include``). ``ros2_control`` puts a ``<ros2_control name="${prefix}<name>">`` block in the
    macro. ``options`` (or the keywords ``mesh_uri``, ``package``, ``wrl``) are those of ``assembly_to_urdf``;
    the macro's names start with its ``prefix`` parameter instead of ``options.prefix``. ``write_to`` as for
    ``assembly_to_urdf``.
    """
    unknown = sorted(set(mesh) - {"mesh_uri", "package", "wrl"})
    if unknown:
        raise InputError(f"unknown xacro option(s): {', '.join(unknown)}", value=unknown)
    urdf_options = UrdfOptions.build(options, **mesh)
    robot_name = check_name(name, "robot name") if name is not None else default_robot_name(assembly)
    macro = macro_name if macro_name is not None else ros_name(robot_name)
    if macro_name is None and (not _NAME.fullmatch(macro) or macro in _XACRO_TAGS):
        macro = "robot_" + macro
    if not _NAME.fullmatch(macro):
        raise InputError("a macro name must be letters, digits and underscores, not starting with a digit", value=macro)
    if macro in _XACRO_TAGS:
        raise InputError(f"a macro name must not be one of xacro's own tags ({', '.join(sorted(_XACRO_TAGS))}): "
                         f"<xacro:{macro}> would call xacro's, not the macro", value=macro)  # fmt: skip
    check_prefix(prefix)
    body = _macro_body(assembly, urdf_options)
    if ros2_control is not None:
        from timor_core.export.formats.ros2_control import ros2_control_xml

        body += ros2_control_xml(assembly, ros2_control, prefix=PREFIX, robot_name=robot_name, for_xacro=True)
    out = [
        '<?xml version="1.0"?>\n',
        f'<robot name="{_literal(xml_escape(robot_name))}" xmlns:xacro="{XACRO_NS}">\n',
        f'  <xacro:macro name="{macro}" params="prefix parent *origin">\n',
        _indent(body, 2),
        "  </xacro:macro>\n",
    ]
    if instantiate:
        parent, declared = _outer_frame(assembly, prefix)
        out.append(
            (f'  <link name="{parent}"/>\n' if declared else "")
            + f'  <xacro:{macro} prefix="{prefix}" parent="{parent}">\n'
            f"    {origin_xml(assembly.base_placement)}\n"
            f"  </xacro:{macro}>\n"
        )
    out.append("</robot>\n")
    text = "".join(out)
    return text if write_to is None else write_description(text, write_to, assembly, urdf_options)
