"""URDF export of an assembly: links per body, joints per module joint and per connection. One writer.

Every assembly (serial chain or tree) is written the same way: a walk from the base connector through the
module instances, composing text memoized per instance in context (:mod:`timor_core.export.formats.urdf_walk`), so
writing many robots of one module set costs little more than joining strings (experiment 1 of the Timor paper).
:func:`urdf_of_serial` starts the same walk from a list of module IDs, without building the assembly.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np

from timor_core.common.names import check_name, xml_escape
from timor_core.errors import AssemblyError, InputError, TimorError, URDFError
from timor_core.export.formats.urdf_options import MESH_URI_MODES, WRL_MODES, UrdfOptions, write_description
from timor_core.export.formats.urdf_parts import URDF_UNLIMITED, origin_xml, robot_name_of, world_xml
from timor_core.export.formats.urdf_walk import (
    Fragment,
    Template,
    Tools,
    Writer,
    compose,
    tool_frames,
    tool_xml_of,
    writer_of,
)
from timor_core.limits import check_count
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.assembly_models import placement_matrix
from timor_core.model.tree import keeps_names

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

    from timor_core.export.formats.ros2_control import Ros2ControlConfig
    from timor_core.model.db import ModulesDB

__all__ = [
    "assembly_to_urdf",
    "urdf_of_serial",
    "links_and_joints",
    "default_robot_name",
    "UrdfOptions",
    "URDF_UNLIMITED",
    "MESH_URI_MODES",
    "WRL_MODES",
    "origin_xml",
]

_HEAD = '<?xml version="1.0"?>\n<robot name="'
_IDENTITY_POSE = json.dumps([[[float(v) for v in row] for row in np.eye(4)]])
_MISSING: Any = object()


def default_robot_name(assembly: ModuleAssembly) -> str:
    """A deterministic robot name: the module set's name and a short hash of the assembly."""
    return robot_name_of(assembly.db.name, json.dumps(assembly.to_json_data(), sort_keys=True))


def assembly_to_urdf(
    assembly: ModuleAssembly,
    name: str | None = None,
    options: UrdfOptions | None = None,
    *,
    ros2_control: Ros2ControlConfig | None = None,
    write_to: str | Path | None = None,
    **overrides: Any,
) -> str:
    """The URDF of an assembly.

    ``options`` (a :class:`UrdfOptions`; the keywords ``prefix``, ``mesh_uri``, ``package`` and ``wrl`` build or
    override one): ``mesh_uri`` ``file`` (absolute file:// URIs), ``package`` (``package://<package>/<path in
    set>``), ``relative`` (the path as written in the module set) or ``path`` (plain absolute paths, for MuJoCo);
    ``wrl`` ``visual`` writes a body's VRML convex decomposition as its visual mesh (what URDF consumers can
    read), ``keep`` keeps the .wrl file.
    The root link is ``base_link``; each free ``eef`` connector gets a link ``tool0``, ``tool1``, ...
    A non-identity base placement adds a ``world`` link. Closed chains raise URDFError.
    ``ros2_control`` appends a ``<ros2_control>`` block for the actuated joints
    (see timor_core.export.formats.ros2_control). ``write_to`` also writes the text to that file, atomically
    (:func:`~.urdf_options.write_description`: with ``mesh_uri="relative"`` into another folder than the module
    set's, a :class:`~.urdf_options.RelativeMeshPaths` warning).
    """
    writer = writer_of(assembly.db, UrdfOptions.build(options, **overrides))
    walk = _walk(assembly, writer, "URDF")
    root = assembly.base_connector[0]
    taken = _checked_links(assembly, walk, writer, "URDF")
    pose_json, placed = writer.pose(assembly.base_placement)
    robot_name = (
        check_name(name, "robot name") if name is not None else _default_name(assembly, writer, walk, pose_json)
    )
    links, joints = compose(walk.templates, root)
    tools = tool_frames(walk.templates, root, writer.options.prefix, taken)
    if taken is not None:
        _check_unique(walk.order, tools)
    world = None
    if placed:
        world = world_xml(writer.options.prefix, walk.order[0].links[0].name, assembly.base_placement)
    extra = ""
    if ros2_control is not None:
        from timor_core.export.formats.ros2_control import ros2_control_xml

        extra = ros2_control_xml(assembly, ros2_control, prefix=writer.options.prefix, robot_name=robot_name)
    text = _document(robot_name, links, joints, tools, world, extra)
    return text if write_to is None else write_description(text, write_to, assembly, writer.options)


def links_and_joints(
    assembly: ModuleAssembly, options: UrdfOptions, *, literal: bool = False, what: str = "URDF"
) -> tuple[list[str], list[str], str]:
    """The ``<link>`` and ``<joint>`` elements of the URDF of ``assembly`` (two-space indented), tool frames
    included, without the world link, and the root link's name. ``literal``: ``${`` and ``$(`` in link bodies
    are escaped for xacro."""
    writer = writer_of(assembly.db, options, literal)
    walk = _walk(assembly, writer, what)
    root = assembly.base_connector[0]
    taken = _checked_links(assembly, walk, writer, what)
    links, joints = compose(walk.templates, root)
    tools = tool_frames(walk.templates, root, options.prefix, taken)
    if taken is not None:
        _check_unique(walk.order, tools)
    tool_links, tool_joints = tool_xml_of(tools, literal)
    return links + tool_links, joints + tool_joints, walk.order[0].links[0].name


def urdf_of_serial(
    db: ModulesDB,
    module_ids: Sequence[str],
    name: str | None = None,
    options: UrdfOptions | None = None,
    *,
    base_placement: np.ndarray | None = None,
    **overrides: Any,
) -> str:
    """``ModuleAssembly.from_serial_modules(db, module_ids, base_placement).to_urdf(name, options)``, fast.

    Same text and same errors as that call, without building the assembly: the walk of :func:`assembly_to_urdf`
    from the module IDs, about a hundred times faster than the reference toolbox per robot. Meant for
    enumerating serial search spaces (``timor paper exp1``).
    """
    ids = module_ids if type(module_ids) is list else list(module_ids)
    if not all(type(m) is str for m in ids):
        ids = [str(m) for m in ids]
    text = None
    if ids:
        check_count(len(ids), "max_modules", "the number of modules in an assembly")
        try:
            opts = UrdfOptions.build(options, **overrides)
        except InputError:  # raised below, after the assembly's own errors (as building it first would)
            opts = None
        if opts is not None:
            text = _serial_text(writer_of(db, opts), ids, name, base_placement)
    if text is None:  # anything the walk from IDs does not decide: build the assembly (its errors, or its URDF)
        assembly = ModuleAssembly.from_serial_modules(db, ids, base_placement)
        return assembly_to_urdf(assembly, name, options, **overrides)
    return text


# -- the walk ------------------------------------------------------------------------------------------
def _tree_error(assembly: ModuleAssembly, writer: Writer, what: str) -> NoReturn:
    """Raise the error building the assembly's kinematic tree raises, as a URDFError."""
    try:
        assembly.tree(writer.options.prefix)
    except AssemblyError as exc:
        raise URDFError(f"cannot write {what}: {exc}") from None
    raise URDFError(f"cannot write {what}: the modules do not form a tree from the base connector")


class _Walk:
    """An assembly's instances: fragments breadth first from the base, fragments and templates by instance."""

    __slots__ = ("order", "fragments", "templates", "plain")

    def __init__(self, n: int) -> None:
        self.order: list[Fragment] = []
        self.fragments: list[Fragment | None] = [None] * n
        self.templates: list[Template | None] = [None] * n
        self.plain = True  # no two names can be equal (no global check needed)


def _walk(assembly: ModuleAssembly, writer: Writer, what: str) -> _Walk:
    """Walk the assembly from its base connector through its connections; URDFError if it is not such a tree."""
    modules = assembly.modules
    n = len(modules)
    if not n or len(assembly.connections) != n - 1:
        _tree_error(assembly, writer, what)
    at: list[dict[str, tuple[int, str]]] = [{} for _ in range(n)]  # per instance: connector -> the other side
    for a, ca, b, cb in assembly.connections:
        at[a][ca] = (b, cb)
        at[b][cb] = (a, ca)
    keep = [keeps_names(m, modules) for m in modules] if writer.keep_ids else [False] * n
    base, base_connector = assembly.base_connector
    walk = _Walk(n)
    order, fragments = walk.order, walk.fragments
    order.append(writer.root(base, modules[base], base_connector, keep[base]))
    fragments[base] = order[0]
    ids, templates, plain = assembly.module_ids, walk.templates, True
    for fragment in order:  # breadth first (the list grows)
        out = [(c, other) for c, other in at[fragment.inst].items() if c != fragment.entry]
        rank, known = fragment.rank, fragment.next
        if len(out) > 1:
            if any(c not in rank for c, _ in out):
                _tree_error(assembly, writer, what)
            out.sort(key=lambda pair: rank[pair[0]])
        sig = []
        for c, (b, cb) in out:
            if fragments[b] is not None or c not in rank:
                _tree_error(assembly, writer, what)
            child = known.get((c, b, ids[b], cb, keep[b]))  # (what writer.child looks up first)
            if child is None:
                child = writer.child(fragment, c, b, modules[b], cb, keep[b])
            fragments[b] = child
            order.append(child)
            sig.append((c, b))
        plain = plain and fragment.plain
        key = tuple(sig)
        templates[fragment.inst] = fragment.templates.get(key) or fragment.template(key)
    walk.plain = plain
    if len(order) != n:
        _tree_error(assembly, writer, what)
    return walk


def _checked_links(assembly: ModuleAssembly, walk: _Walk, writer: Writer, what: str) -> set[str] | None:
    """None if no two names can be equal (plain fragments only), else the link names (checked to differ)."""
    if walk.plain:
        return None
    names = [link.name for f in walk.order for link in f.links]
    if len(set(names)) != len(names):
        _tree_error(assembly, writer, what)  # "two links are named ..."
    return set(names)


def _check_unique(order: list[Fragment], tools: Tools) -> None:
    """URDFError if two links or two joints (tool frames included) have the same name."""
    names = [link.name for f in order for link in f.links] + [tool for _, tool, _ in tools]
    joints = [str(link.joint_name) for f in order for link in f.links if link.parent is not None]
    joints += [f"{link}_to_{tool}" for link, tool, _ in tools]
    for kind, seq in (("link", names), ("joint", joints)):
        if len(set(seq)) != len(seq):
            twice = sorted({n for n in seq if seq.count(n) > 1})
            raise URDFError(f"the module IDs give two {kind}s the same name: {', '.join(map(str, twice))}")


def _default_name(assembly: ModuleAssembly, writer: Writer, walk: _Walk, pose_json: str) -> str:
    """:func:`default_robot_name`, from cached JSON pieces (what sorted-keys ``json.dumps`` of the assembly gives)."""
    j, fragments = writer.json_of, walk.fragments
    connections = []
    for a, ca, b, cb in assembly.connections:
        f: Any = fragments[b]
        if f.parent_inst == a and f.exit == ca and f.entry == cb:
            connections.append(f.conn_json)
        else:
            connections.append(f"[{a}, {j(ca)}, {b}, {j(cb)}]")
    order = [f.order_json for f in fragments]  # type: ignore[union-attr]
    return _robot_name(writer, assembly.base_connector, pose_json, connections, order)


def _robot_name(writer: Writer, base: tuple[int, str], pose_json: str, connections: list[str], order: list[str]) -> str:
    """The default robot name of an assembly from the JSON texts of its parts (sorted-keys ``json.dumps``)."""
    set_name = writer.db.name
    return robot_name_of(
        set_name,
        f'{{"baseConnection": [[{base[0]}, {writer.json_of(base[1])}, 0]], "basePose": {pose_json},'
        f' "moduleConnection": [{", ".join(connections)}], "moduleOrder": [{", ".join(order)}],'
        f' "moduleSet": {writer.json_of(set_name)}}}',
    )


def _document(name: str, links: list[str], joints: list[str], tools: Tools, world: tuple[str, str] | None,
              extra: str = "") -> str:  # fmt: skip
    tool_links, tool_joints = tool_xml_of(tools)
    out = [_HEAD, xml_escape(name), '">\n', *links, *tool_links]
    if world is not None:
        out.append(world[0])
    out += joints
    out += tool_joints
    if world is not None:
        out.append(world[1])
    out.append(extra)
    out.append("</robot>\n")
    return "".join(out)


# -- from module IDs -----------------------------------------------------------------------------------
def _serial_root(writer: Writer, module_id: str) -> Fragment | None:
    try:
        module = writer.db.by_id[module_id]
    except TimorError:
        return None
    if len(module.base_connectors) != 1 or writer.keeps(module):
        return None
    root = writer.root(0, module, module.base_connectors[0].id, False)
    return root if root.plain else None


def _serial_next(writer: Writer, prev: Fragment, module_id: str) -> tuple[Fragment, Template] | None:
    """The next instance of a chain and ``prev``'s template with it as its only child (None: the assembly decides)."""
    try:
        module = writer.db.by_id[module_id]
    except TimorError:
        return None
    if writer.keeps(module):
        return None
    fits = [(a, b) for a, b in writer.db.connections_between(prev.module.id, module_id) if a != prev.entry]
    if len(fits) != 1:
        return None
    step = writer.child(prev, fits[0][0], prev.inst + 1, module, fits[0][1], False)
    return (step, prev.template(step.as_child)) if step.plain else None


def _serial_text(writer: Writer, ids: list[str], name: str | None, placement: Any) -> str | None:
    """The URDF of the chain of ``ids`` (each module joined to the next), or None where the assembly decides."""
    step = writer.roots.get(ids[0], _MISSING)
    if step is _MISSING:
        step = writer.roots[ids[0]] = _serial_root(writer, ids[0])
    if step is None:
        return None
    chain = [step]
    templates: list[Template | None] = []
    for module_id in ids[1:]:
        nxt = step.next.get(module_id, _MISSING)
        if nxt is _MISSING:
            nxt = step.next[module_id] = _serial_next(writer, step, module_id)
        if nxt is None:
            return None
        step = nxt[0]
        chain.append(step)
        templates.append(nxt[1])
    templates.append(step.template(()))
    check_count(sum([s.dof for s in chain]), "max_dof", "the degrees of freedom of an assembly")
    pose_json, world = _IDENTITY_POSE, False
    if placement is not None:
        try:
            placement = placement_matrix(placement)
        except InputError:
            return None
        pose_json, world = writer.pose(placement)
    if name is None:
        connections = [s.conn_json for s in chain[1:]]
        name = _robot_name(writer, (0, chain[0].entry), pose_json, connections, [s.order_json for s in chain])
    else:
        name = check_name(name, "robot name")
    links, joints = compose(templates, 0)
    tools = tool_frames(templates, 0, writer.options.prefix, None)
    world_pair = world_xml(writer.options.prefix, chain[0].links[0].name, placement) if world else None
    return _document(name, links, joints, tools, world_pair)
