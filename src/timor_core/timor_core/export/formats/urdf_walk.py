"""The links and joints of an assembly's URDF, composed from text memoized per module instance in context.

A module instance's text depends only on its context: the module, its index, its entry connector, whether it
keeps its own names, and (below the root) the instance and connector it hangs from. Such a :class:`Fragment` is
compiled once per module set and export options and kept in a trie (each fragment holds its children), so a
search space of serial robots, which uses the same few modules at the same positions again and again (32,768
robots of about 11 modules in experiment 1 of the Timor paper), writes a robot by walking cached fragments.

Which connectors of an instance carry children decides the instance's :class:`Template`: its links in the
order Pinocchio numbers joints (depth first, children in the byte order of their joint names, as
:func:`timor_core.model.tree.depth_first_order`), with a slot where each child instance's subtree goes, and its
free connectors (tool frames). Composing the templates depth first gives the links and joints; their free
connectors breadth first (the order of :func:`timor_core.model.tree.build_tree`) give the tool frames.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from timor_core.common.names import ros_name
from timor_core.export.formats.urdf_options import UrdfOptions
from timor_core.export.formats.urdf_parts import joint_xml, link_body_xml, link_xml, origin_xml, tool_xml
from timor_core.model.module import Connector, Module
from timor_core.model.tree import TreeLink, connection_offset, connector_pose, instance_links, root_offset

__all__ = ["Free", "Template", "Fragment", "Writer", "writer_of", "compose", "tool_frames", "tool_xml_of", "Tools"]

Free = tuple[bool, str, str]
"""A connector left free: (is it an end-effector connector, its link's name, its pose as an ``<origin>``)."""
Slot = int
Item = tuple[str, str] | Slot  # (links text, joints text) of consecutive links, or the child instance there
Tools = list[tuple[str, str, str]]  # (link, tool name, origin) of each tool frame


class Template:
    """An instance's text for one set of connected connectors (``sig``: (connector, child instance) pairs)."""

    __slots__ = ("items", "sig", "children", "eefs", "tcp", "then")

    def __init__(self, items: tuple[Item, ...], sig: tuple[tuple[str, int], ...], free: tuple[Free, ...]) -> None:
        self.items = items
        self.sig = sig
        self.children = tuple(b for _, b in sig)
        self.eefs = tuple((link, origin) for eef, link, origin in free if eef)  # tool frames
        self.tcp = next(((link, origin) for eef, link, origin in free if not eef), None)  # a tcp, without tools
        # text, then one child's subtree (a link of a chain): composed without keeping a place to come back to
        self.then = items[1] if len(items) == 2 and isinstance(items[0], tuple) and isinstance(items[1], int) else -1


class Fragment:
    """One module instance in its context, compiled: its links' and joints' text and its templates."""

    __slots__ = (
        "inst",
        "module",
        "entry",
        "keep",
        "exit",
        "parent_inst",
        "links",
        "rank",
        "texts",
        "kids",
        "connectors",
        "plain",
        "as_child",
        "dof",
        "order_json",
        "conn_json",
        "next",
        "templates",
        "writer",
    )

    def __init__(
        self, writer: Writer, inst: int, module: Module, entry: str, keep: bool, links: list[TreeLink]
    ) -> None:
        self.writer, self.inst, self.module, self.entry, self.keep, self.links = (
            writer,
            inst,
            module,
            entry,
            keep,
            links,
        )
        self.exit: str | None = None  # the parent's connector this instance hangs from (None: the root)
        self.parent_inst = -1  # the parent's instance (-1: the root)
        self.texts: list[tuple[str, str]] = []  # per link: its <link> and the <joint> to its parent
        self.kids: list[list[tuple[bytes, int]]] = [[] for _ in links]  # per link: (joint name, child link)
        for k, link in enumerate(links):
            if k:
                self.kids[link.parent].append((str(link.joint_name).encode(), k))  # type: ignore[index]
        self.connectors: list[list[Connector]] = [[c for c in link.body.connectors if c.id != entry] for link in links]
        self.rank = {c.id: k for k, c in enumerate(c for cs in self.connectors for c in cs)}  # walk order
        names = [ros_name(j.id) for j in module.joints]
        self.plain = (  # no name of this instance can equal another instance's (no global check needed)
            not writer.keeps(module)
            and len({link.name for link in links}) == len(links)
            and len(set(names)) == len(names)
            and not any(n.startswith("to_m") or "_to_tool" in n or "_to_tcp" in n for n in names)
        )
        self.as_child: tuple[tuple[str, int], ...] = ()  # this instance as its parent's only child (a chain)
        self.dof = module.dof
        self.order_json = writer.json_of(module.id)
        self.conn_json = ""  # the connection from the parent, as the assembly JSON of a chain writes it
        self.next: dict[Any, Any] = {}  # children by context; in a chain from IDs also (child, template) by ID
        self.templates: dict[tuple[tuple[str, int], ...], Template] = {}

    def template(self, sig: tuple[tuple[str, int], ...]) -> Template:
        """The template for children at the connectors of ``sig`` (cached)."""
        found = self.templates.get(sig)
        if found is None:
            found = self.templates[sig] = self._template(sig)
        return found

    def _template(self, sig: tuple[tuple[str, int], ...]) -> Template:
        prefix = self.writer.options.prefix
        slot_of = {c: j for j, (c, _) in enumerate(sig)}
        kids = [list(k) for k in self.kids]
        free: list[Free] = []
        for k, link in enumerate(self.links):
            for c in self.connectors[k]:
                j = slot_of.get(c.id)
                if j is not None:
                    kids[k].append((f"{prefix}m{self.inst}_to_m{sig[j][1]}".encode(), ~sig[j][1]))
                elif c.is_eef or not c.is_base:
                    free.append((c.is_eef, link.name, origin_xml(connector_pose(link, c))))
        items: list[Item] = []
        stack = [0]
        while stack:
            x = stack.pop()
            if x < 0:
                items.append(~x)
                continue
            text = self.texts[x]
            last = items[-1] if items else None
            if isinstance(last, tuple):  # consecutive links: one piece of text
                items[-1] = (last[0] + text[0], last[1] + text[1])
            else:
                items.append(text)
            stack.extend(reversed([kid for _, kid in sorted(kids[x], key=lambda kid: kid[0])]))
        return Template(tuple(items), sig, tuple(free))


class Writer:
    """The fragments of one module set for one set of export options (kept in the set's cache)."""

    def __init__(self, db: Any, options: UrdfOptions, literal: bool) -> None:
        self.db, self.options, self.literal = db, options, literal
        self.package = options.package_for(db.name)
        self.keep_ids = frozenset(m.id for m in db if m.header.extra.get("keepNames") is True)
        self.roots: dict[Any, Fragment | None] = {}
        self.fragments: dict[tuple, Fragment] = {}
        self.poses: dict[bytes, tuple[str, bool]] = {}
        self._json: dict[str, str] = {}

    def keeps(self, module: Module) -> bool:
        """Whether ``module`` may keep its own names (then the instance's names need the global check)."""
        return module.id in self.keep_ids

    def json_of(self, text: str) -> str:
        """``json.dumps(text)`` (cached: module and connector IDs recur in every robot's name)."""
        found = self._json.get(text)
        if found is None:
            found = self._json[text] = json.dumps(text)
        return found

    def root(self, inst: int, module: Module, base: str, keep: bool) -> Fragment:
        """The fragment of the base instance ``inst`` mounted at its connector ``base`` (cached)."""
        key = (inst, module.id, base, keep)
        found = self.roots.get(key)
        if found is None:
            connector = module.connectors[base]
            prefix = self.options.prefix
            links = instance_links(module, inst, connector.body_id, None, None, root_offset(connector), 0, prefix, keep)
            found = self.roots[key] = self._compiled(Fragment(self, inst, module, base, keep, links), None)
        return found

    def child(self, parent: Fragment, exit_id: str, inst: int, module: Module, entry: str, keep: bool) -> Fragment:
        """The fragment of instance ``inst`` entered at ``entry``, hanging from ``parent``'s ``exit_id`` (cached)."""
        key = (exit_id, inst, module.id, entry, keep)
        found = parent.next.get(key)
        if found is None:
            found = parent.next[key] = self._child(parent, exit_id, inst, module, entry, keep)
        return found

    def _child(self, parent: Fragment, exit_id: str, inst: int, module: Module, entry: str, keep: bool) -> Fragment:
        """A fragment depends on its parent's instance, module, entry and names only (shared by all paths there)."""
        key = (parent.inst, parent.module.id, parent.entry, parent.keep, exit_id, inst, module.id, entry, keep)
        found = self.fragments.get(key)
        if found is None:
            exit_conn = parent.module.connectors[exit_id]
            exit_link = next(link for link in parent.links if link.body.id == exit_conn.body_id)
            connector = module.connectors[entry]
            offset = connection_offset(exit_link, exit_conn, connector)
            joint = f"{self.options.prefix}m{parent.inst}_to_m{inst}"
            prefix = self.options.prefix
            links = instance_links(module, inst, connector.body_id, -1, joint, offset, 0, prefix, keep)
            found = self._compiled(Fragment(self, inst, module, entry, keep, links), exit_link.name)
            found.exit, found.parent_inst, found.as_child = exit_id, parent.inst, ((exit_id, inst),)
            found.conn_json = f"[{parent.inst}, {self.json_of(exit_id)}, {inst}, {self.json_of(entry)}]"
            self.fragments[key] = found
        return found

    def _compiled(self, fragment: Fragment, parent_name: str | None) -> Fragment:
        links, options = fragment.links, self.options
        for k, link in enumerate(links):
            body = link_body_xml(link, options.mesh_uri, self.package, options.wrl)
            if self.literal:  # xacro keeps "${" and "$(" in file names as text
                body = body.replace("${", "$${").replace("$(", "$$(")
            literal = self.literal
            if k:
                joint = joint_xml(link, links[link.parent].name, literal)  # type: ignore[index]
            else:
                joint = joint_xml(link, parent_name, literal) if parent_name is not None else ""
            fragment.texts.append((link_xml(link, body, literal), joint))
        return fragment

    def pose(self, placement: Any) -> tuple[str, bool]:
        """The base placement as the assembly JSON writes it, and whether it is not the identity (cached)."""
        key = placement.tobytes()
        found = self.poses.get(key)
        if found is None:
            if len(self.poses) > 1000:  # placements differ per robot: keep the cache small
                self.poses.clear()
            text = json.dumps([[[float(v) for v in row] for row in placement]])
            found = self.poses[key] = (text, not np.array_equal(placement, np.eye(4)))
        return found


def writer_of(db: Any, options: UrdfOptions, literal: bool = False) -> Writer:
    """The fragment writer of module set ``db`` for ``options`` (kept in the set's cache; pickles leave it)."""
    key = ("urdf-fragments", options, literal)
    found = db._cache.get(key)
    if found is None:
        found = db._cache[key] = Writer(db, options, literal)
    return found


def compose(templates: Sequence[Template | None], root: int) -> tuple[list[str], list[str]]:
    """The links and joints of the whole tree, depth first: each child instance's subtree at its slot."""
    links: list[str] = []
    joints: list[str] = []
    stack: list[tuple[tuple[Item, ...], int]] = []
    template: Any = templates[root]
    while template.then >= 0:
        text = template.items[0]
        links.append(text[0])
        joints.append(text[1])
        template = templates[template.then]
    items: tuple[Item, ...] = template.items
    pos = 0
    while True:
        n = len(items)
        while pos < n:
            item = items[pos]
            pos += 1
            if item.__class__ is int:
                if pos < n:  # more after the child's subtree (a chain's child comes last: nothing to keep)
                    stack.append((items, pos))
                items, pos = templates[item].items, 0  # type: ignore[index,union-attr]
                n = len(items)
            else:
                links.append(item[0])  # type: ignore[index]
                joints.append(item[1])  # type: ignore[index]
        if not stack:
            return links, joints
        items, pos = stack.pop()


def tool_frames(templates: Sequence[Template | None], root: int, prefix: str, taken: set[str] | None) -> Tools:
    """(link, tool name, origin) of every tool frame: ``tool<k>`` at each free eef connector, breadth first, else
    ``tcp`` at the first free connector of the highest instance. ``taken``: link names a tool must avoid."""
    order = [root]
    eefs: list[tuple[str, str]] = []
    tcp: tuple[int, tuple[str, str]] | None = None
    for inst in order:  # breadth first (the list grows)
        template: Any = templates[inst]
        if template.eefs:
            eefs += template.eefs
        elif template.tcp is not None and (tcp is None or inst > tcp[0]):
            tcp = (inst, template.tcp)
        if template.children:
            order += template.children
    if eefs:
        names = [f"{prefix}tool{k}" for k in range(len(eefs))]
        if taken:
            names = [name if name not in taken else f"{prefix}timor_tool{k}" for k, name in enumerate(names)]
        return [(link, name, origin) for (link, origin), name in zip(eefs, names)]
    if tcp is None:
        return []
    name = f"{prefix}tcp" if not taken or f"{prefix}tcp" not in taken else f"{prefix}timor_tcp"
    return [(tcp[1][0], name, tcp[1][1])]


def tool_xml_of(frames: Tools, for_xacro: bool = False) -> tuple[list[str], list[str]]:
    """The ``<link>`` and ``<joint>`` elements of tool frames."""
    pairs = [tool_xml(link, name, origin, for_xacro) for link, name, origin in frames]
    return [p[0] for p in pairs], [p[1] for p in pairs]
