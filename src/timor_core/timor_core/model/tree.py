"""The kinematic tree of an assembly: one link per body, rooted at the base connector.

This is the paper's Algorithm 1 (a breadth-first walk from the base connector) done once, shared by
the URDF writer and the direct Pinocchio builder, so both describe exactly the same robot. The links are then
put in the order in which Pinocchio's URDF loader (and so the reference toolbox, PyBullet and MoveIt) number
the joints: depth first, the children of a link in the byte order of their joint names (urdfdom keeps a link's
child joints sorted by name). A configuration q therefore means the same in our model and in any model loaded
from our URDF, for serial chains and for trees alike.

Conventions:
* Every link's frame is where its incoming joint puts it; ``body_in_link`` places the body frame in it.
* A module entered through the child body of one of its joints is walked "backwards": the joint keeps
  its coordinate q and its z axis, thanks to Rz(-q) = Rx(π) · Rz(q) · Rx(π) (likewise for prismatic; a joint
  with another ``axis`` a uses a half turn F about a line perpendicular to a: R_a(-q) = F · R_a(q) · F).
* The root link ``base_link`` is the mounting frame: the base connector frame rotated by π about x.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from timor_core.common.gc_pause import paused_gc
from timor_core.common.names import check_prefix, ros_name
from timor_core.common.transforms import IDENTITY, ROT_X_PI, inv, readonly
from timor_core.errors import AssemblyError
from timor_core.model.module import Body, Connector, Joint, Module
from timor_core.model.parts import Z_AXIS

ModuleAssembly = Any  # timor_core.model.assembly.ModuleAssembly (it imports this module)
__all__ = [
    "OrientedLink",
    "axis_flip",
    "oriented_module",
    "TreeLink",
    "ToolFrame",
    "KinematicTree",
    "build_tree",
    "instance_links",
    "keeps_names",
    "connection_offset",
    "root_offset",
    "connector_pose",
    "depth_first_order",
    "ros_name",
]


@dataclass(frozen=True)
class OrientedLink:
    """A body of a module seen from the module's entry body."""

    body: Body
    body_in_link: np.ndarray
    parent: int | None  # index of the parent link within the oriented module
    joint: Joint | None  # the module joint between parent and this link
    origin: np.ndarray  # pose of the joint frame in the parent *link* frame (at q = 0)
    reversed: bool = False


def axis_flip(axis: tuple[float, float, float]) -> np.ndarray:
    """A half turn that maps the joint axis onto its negative: Rx(π) for z, else about a perpendicular line."""
    if axis == Z_AXIS:
        return ROT_X_PI
    a = np.asarray(axis, dtype=float)
    u = np.cross(a, [1.0, 0.0, 0.0] if abs(a[0]) < 0.9 else [0.0, 1.0, 0.0])
    u /= np.linalg.norm(u)
    F = np.eye(4)
    F[:3, :3] = 2.0 * np.outer(u, u) - np.eye(3)
    return readonly(F)


def oriented_module(module: Module, entry_body: str) -> tuple[tuple[OrientedLink, ...], dict[str, int]]:
    """The module's bodies as a tree walked from ``entry_body`` (cached per module and entry body)."""
    key = ("oriented", entry_body)
    cached = module._cache.get(key)
    if cached is not None:
        return cached
    links: list[OrientedLink] = [OrientedLink(module.body[entry_body], IDENTITY, None, None, IDENTITY)]
    index = {entry_body: 0}
    touching: dict[str, list[Joint]] = {}  # the joints at each body, in module order (linear in the joints)
    for j in module.joints:
        touching.setdefault(j.parent, []).append(j)
        if j.child != j.parent:
            touching.setdefault(j.child, []).append(j)
    queue = deque([0])
    while queue:
        i = queue.popleft()
        here = links[i]
        bid = here.body.id
        for j in touching.get(bid, ()):
            if j.parent == bid and j.child not in index:
                origin = here.body_in_link @ j.pose_parent
                link = OrientedLink(module.body[j.child], j.pose_child, i, j, readonly(origin))
            elif j.child == bid and j.parent not in index:
                flip = axis_flip(j.axis)
                origin = here.body_in_link @ inv(j.pose_child) @ flip
                link = OrientedLink(
                    module.body[j.parent], readonly(flip @ inv(j.pose_parent)), i, j, readonly(origin), True
                )
            else:
                continue
            index[link.body.id] = len(links)
            queue.append(len(links))
            links.append(link)
    result = (tuple(links), index)
    module._cache[key] = result
    return result


@dataclass(frozen=True)
class TreeLink:
    """One link of the assembly's kinematic tree and the joint that attaches it to its parent."""

    name: str
    instance: int  # index of the module in the assembly
    module: Module
    body: Body
    body_in_link: np.ndarray
    parent: int | None  # index of the parent TreeLink
    joint_name: str | None
    joint_type: str  # 'fixed' for connections; otherwise the module joint's type
    joint: Joint | None
    origin: np.ndarray  # joint frame in the parent link frame

    def movable_joint(self) -> Joint:
        """The movable joint that attaches this link (AssemblyError for a link attached rigidly)."""
        if self.joint is None or self.joint_type == "fixed":
            raise AssemblyError(f"link {self.name!r} is not attached by a movable joint")
        return self.joint

    def movable_joint_name(self) -> str:
        """The URDF name of the movable joint that attaches this link (AssemblyError if there is none)."""
        if self.joint is None or self.joint_name is None or self.joint_type == "fixed":
            raise AssemblyError(f"link {self.name!r} is not attached by a movable joint")
        return self.joint_name


@dataclass(frozen=True)
class ToolFrame:
    """A free end-effector connector: ``tool0``, ``tool1``, ..."""

    name: str
    link: int
    pose: np.ndarray  # in the link frame
    instance: int
    connector_id: str


@dataclass(frozen=True)
class KinematicTree:
    """Links in depth-first order (parents before children; see the module docstring) and the tool frames.

    ``breadth_first_joints`` names the actuated joints in the breadth-first order that timor used before
    version 0.2 for trees, so configurations saved then can be migrated.
    """

    links: tuple[TreeLink, ...]
    tools: tuple[ToolFrame, ...]
    prefix: str
    breadth_first_joints: tuple[str, ...] = ()
    fallback_tcp: ToolFrame | None = None
    """Without ``eef`` connectors: a frame ``tcp`` at a free connector of the last module (as the reference toolbox
    places its TCP), so FK and IK work on any assembly; None when there are tools."""

    @property
    def tcp_frames(self) -> tuple[ToolFrame, ...]:
        """The tool frames, or the fallback TCP when there is none."""
        return self.tools if self.tools or self.fallback_tcp is None else (self.fallback_tcp,)

    @property
    def actuated(self) -> tuple[TreeLink, ...]:
        """Links attached by a movable joint, in tree order: one per degree of freedom."""
        return tuple(link for link in self.links if link.joint_type != "fixed")


def _link_name(prefix: str, instance: int, body_id: str) -> str:
    return f"{prefix}m{instance}_{ros_name(body_id)}"


def instance_links(
    module: Module,
    inst: int,
    entry_body: str,
    parent_link: int | None,
    joint_name: str | None,
    entry_offset: np.ndarray,
    first: int,
    prefix: str = "",
    keep_names: bool = False,
) -> list[TreeLink]:
    """The links of module instance ``inst`` entered through ``entry_body``: one step of :func:`build_tree`.

    ``parent_link`` is None for the root (then ``entry_offset`` places the entry body in ``base_link``), else the
    index of the link the instance hangs from, with ``entry_offset`` as the origin of the connection joint
    ``joint_name``; ``first`` is the index the instance's first link gets (its links' parents count from it).
    Shared with the compiled serial URDF writer, so both compute every transform the same way. ``keep_names``:
    links and joints are named exactly as the module's bodies and joints (the root too; ``-``, ``/`` and spaces
    kept, each exporter escapes them as its format requires), see :func:`keeps_names`.
    """
    olinks, _ = oriented_module(module, entry_body)

    def link_name(body_id: str) -> str:
        return f"{prefix}{body_id}" if keep_names else _link_name(prefix, inst, body_id)

    def joint_name_of(joint: Joint) -> str:
        return f"{prefix}{joint.id}" if keep_names else f"{prefix}m{inst}_{ros_name(joint.id)}"

    is_root = parent_link is None
    entry_b = entry_offset if is_root else IDENTITY  # body frame of the entry body in its link frame
    out: list[TreeLink] = []
    for ol in olinks:
        if ol.parent is None:
            name = f"{prefix}base_link" if is_root and not keep_names else link_name(ol.body.id)
            origin = IDENTITY if is_root else entry_offset
            out.append(TreeLink(name, inst, module, ol.body, entry_b, parent_link, joint_name, "fixed", None, origin))
            continue
        j = ol.joint
        assert j is not None
        origin = readonly(entry_b @ ol.origin) if ol.parent == 0 and is_root else ol.origin
        out.append(
            TreeLink(
                link_name(ol.body.id),
                inst,
                module,
                ol.body,
                ol.body_in_link,
                first + ol.parent,
                joint_name_of(j),
                j.type,
                j,
                origin,
            )
        )
    return out


def keeps_names(module: Module, modules: Sequence[Module]) -> bool:
    """Whether ``module``'s links keep its own names in an assembly of ``modules``: it asks so (``keepNames`` in
    its header, set by a URDF import with ``keep_names``) and occurs once (two copies would clash)."""
    return module.header.extra.get("keepNames") is True and sum(m is module or m.id == module.id for m in modules) == 1


def connection_offset(link: TreeLink, connector: Connector, other: Connector) -> np.ndarray:
    """Origin, in ``link``'s frame, of the fixed joint from ``connector`` (on ``link``'s body) to ``other``."""
    return readonly(link.body_in_link @ connector.pose @ ROT_X_PI @ inv(other.pose))


def connector_pose(link: TreeLink, connector: Connector) -> np.ndarray:
    """Pose of ``connector`` (on ``link``'s body) in ``link``'s frame: where a tool frame at it goes."""
    return readonly(link.body_in_link @ connector.pose)


def root_offset(base: Connector) -> np.ndarray:
    """Pose of the base body in ``base_link`` (the mounting frame: base connector rotated by π about x)."""
    return readonly(ROT_X_PI @ inv(base.pose))


Pending = tuple[int, str, "int | None", "str | None", np.ndarray, str]
"""A module instance still to walk: (instance, entry body, parent link, joint name, entry offset, entry connector)."""


def build_tree(assembly: ModuleAssembly, prefix: str = "") -> KinematicTree:
    """Walk the assembly breadth-first from its base connector (the paper's Algorithm 1)."""
    check_prefix(prefix)
    if not assembly.modules:
        raise AssemblyError("an empty assembly has no robot: it needs at least one module")
    if len(assembly.connections) != len(assembly.modules) - 1:
        raise AssemblyError("the assembly contains a closed kinematic chain; URDF and Pinocchio models need a tree")
    with paused_gc():  # a big assembly's tree is many objects without cycles
        links, tools, free = _walk(assembly, prefix)
        return _ordered_tree(links, tools, free, prefix)


def _walk(assembly: ModuleAssembly, prefix: str) -> tuple[list[TreeLink], list[ToolFrame], list[ToolFrame]]:
    """The links of every module instance in breadth-first order, the tool frames (end-effector connectors) and the
    other free connectors; refuses a closed chain and modules not connected to the base."""
    modules = assembly.modules
    partner: dict[tuple[int, str], tuple[int, str]] = {}  # connector -> (other instance, other connector)
    for a, ca, b, cb in assembly.connections:
        partner[(a, ca)] = (b, cb)
        partner[(b, cb)] = (a, ca)
    links: list[TreeLink] = []
    tools: list[ToolFrame] = []
    free: list[ToolFrame] = []  # free connectors that are neither base nor eef
    base_i, base_c = assembly.base_connector
    base_conn = modules[base_i].connectors[base_c]
    # root: the base body, in the mounting frame (base connector rotated by pi about x)
    pending: list[Pending] = [(base_i, base_conn.body_id, None, None, root_offset(base_conn), base_c)]
    visited = [False] * len(modules)
    while pending:
        next_pending: list[Pending] = []
        for inst, entry_body, parent_link, joint_name, entry_offset, entry_conn in pending:
            if visited[inst]:
                raise AssemblyError("the assembly contains a closed kinematic chain")
            visited[inst] = True
            module = modules[inst]
            olinks, _ = oriented_module(module, entry_body)
            first = len(links)
            keep = keeps_names(module, modules)
            links.extend(
                instance_links(module, inst, entry_body, parent_link, joint_name, entry_offset, first, prefix, keep)
            )
            for k, ol in enumerate(olinks):  # connectors of this module: children or tools
                for c in ol.body.connectors:
                    if c.id != entry_conn:
                        _follow(c, inst, first + k, links, modules, partner, prefix, next_pending, tools, free)
        pending = next_pending
    if not all(visited):
        missing = [i for i, v in enumerate(visited) if not v]
        raise AssemblyError(f"modules at indices {missing} are not connected to the base")
    return links, tools, free


def _follow(
    c: Connector,
    inst: int,
    link_index: int,
    links: list[TreeLink],
    modules: Sequence[Module],
    partner: dict[tuple[int, str], tuple[int, str]],
    prefix: str,
    pending: list[Pending],
    tools: list[ToolFrame],
    free: list[ToolFrame],
) -> None:
    """A connector of link ``link_index``: the module connected to it joins ``pending``, else it is a tool frame
    (end effector) or a free connector (neither base nor end effector)."""
    link = links[link_index]
    other = partner.get((inst, c.id))
    if other is not None:
        j_inst, j_conn = other
        cj = modules[j_inst].connectors[j_conn]
        offset = connection_offset(link, c, cj)
        pending.append((j_inst, cj.body_id, link_index, f"{prefix}m{inst}_to_m{j_inst}", offset, j_conn))
    elif c.is_eef:
        tools.append(ToolFrame("", link_index, connector_pose(link, c), inst, c.id))
    elif not c.is_base:
        free.append(ToolFrame("", link_index, connector_pose(link, c), inst, c.id))


def _ordered_tree(links: list[TreeLink], tools: list[ToolFrame], free: list[ToolFrame], prefix: str) -> KinematicTree:
    """The tree of the walked links in depth-first order, with named tool frames (or the fallback TCP: the last
    module's free connector when no end effector has one); refuses two links of one name."""
    legacy = tuple(link.joint_name for link in links if link.joint_type != "fixed" and link.joint_name)
    order = depth_first_order(links)
    new_index = {old: new for new, old in enumerate(order)}
    ordered = tuple(_reparented(links[old], new_index) for old in order)
    taken = {link.name for link in links}
    if len(taken) != len(links):
        counts: dict[str, int] = {}
        for link in links:
            counts[link.name] = counts.get(link.name, 0) + 1
        twice = next(name for name, n in counts.items() if n > 1)
        raise AssemblyError(f"two links are named {twice!r} (modules that keep their URDF names clash)")
    named = tuple(
        ToolFrame(_tool_name(prefix, k, taken), new_index[t.link], t.pose, t.instance, t.connector_id)
        for k, t in enumerate(tools)
    )
    fallback = None
    if not tools and free:
        last = max(free, key=lambda t: t.instance)  # the last module's (last listed) free connector
        tcp = f"{prefix}tcp" if f"{prefix}tcp" not in taken else f"{prefix}timor_tcp"
        fallback = ToolFrame(tcp, new_index[last.link], last.pose, last.instance, last.connector_id)
    return KinematicTree(ordered, named, prefix, legacy, fallback)


def _tool_name(prefix: str, k: int, taken: set[str]) -> str:
    """``tool<k>``, or ``timor_tool<k>`` where a link kept from a URDF already has that name (UR's ``tool0``)."""
    name = f"{prefix}tool{k}"
    return name if name not in taken else f"{prefix}timor_tool{k}"


def _reparented(link: TreeLink, new_index: dict[int, int]) -> TreeLink:
    if link.parent is None or new_index[link.parent] == link.parent:
        return link  # (a chain keeps its order: no copy per link)
    return replace(link, parent=new_index[link.parent])


def depth_first_order(links: list[TreeLink]) -> list[int]:
    """Indices of ``links`` (root first) depth first, siblings in the byte order of their joint names.

    This is how Pinocchio's URDF parser numbers joints: urdfdom stores a link's child joints in a map keyed
    by name, and Pinocchio walks the tree recursively.
    """
    children: list[list[int]] = [[] for _ in links]
    roots = []
    for i, link in enumerate(links):
        if link.parent is None:
            roots.append(i)
        else:
            children[link.parent].append(i)
    order: list[int] = []
    stack = list(reversed(roots))
    while stack:
        i = stack.pop()
        order.append(i)
        kids = sorted(children[i], key=lambda c: (links[c].joint_name or "").encode())
        stack.extend(reversed(kids))
    return order
