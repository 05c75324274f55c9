"""The URDF of serial chains from strings compiled once per module set: :func:`urdf_of_serial`.

A search space of serial robots uses the same few modules at the same positions again and again (experiment 1
of the Timor paper: 32,768 robots of about 11 modules, drawn from 11 modules). For each module set and set of
export options this module compiles, once per *step* — position, previous module with its entry and exit
connectors, module with its entry connector — the instance's ``<link>`` elements, the joints inside it and the
fixed joint from the previous instance, with the same pieces as the general writer
(:mod:`timor_core.export.urdf_parts`). An assembly's URDF is then a walk through cached steps and a join.

The output is byte for byte that of :func:`timor_core.export.urdf.tree_to_urdf`. That holds when the links of
the chain come out in module order: every module's bodies form a chain from its entry body and the exit
connector sits on the last one, and no ID can give two links or joints the same name. Anything else (branching
modules, bodies after the exit, odd IDs, unknown modules, connectors that do not fit) goes to the general
writer, which also raises its errors.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from timor_core.common.names import check_name, check_prefix, ros_name, xml_escape
from timor_core.errors import InputError, TimorError
from timor_core.export.urdf_parts import (
    check_mesh_options,
    joint_xml,
    link_body_xml,
    link_xml,
    origin_xml,
    robot_name_of,
    tool_xml,
    world_xml,
)
from timor_core.limits import check_count
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.assembly_models import placement_matrix
from timor_core.model.db import ModulesDB
from timor_core.model.module import Module
from timor_core.model.tree import TreeLink, connection_offset, connector_pose, instance_links, root_offset

__all__ = ["urdf_of_serial", "serial_assembly_urdf"]

_MISSING: Any = object()
_HEAD = '<?xml version="1.0" encoding="utf-8"?>\n<robot name="'
_IDENTITY_POSE = json.dumps([[[float(v) for v in row] for row in np.eye(4)]])
Free = tuple[bool, str, str]  # (eef?, link name, origin of a connector left free)


def urdf_of_serial(
    db: ModulesDB,
    module_ids: Sequence[str],
    name: str | None = None,
    *,
    prefix: str = "",
    mesh_uri: str = "file",
    package: str | None = None,
    wrl: str = "visual",
    base_placement: np.ndarray | None = None,
) -> str:
    """``ModuleAssembly.from_serial_modules(db, module_ids, base_placement).to_urdf(name, ...)``, fast.

    Same text and same errors as that call (the options are those of ``assembly_to_urdf``), without building
    the assembly or its kinematic tree: about a hundred times faster than the reference toolbox per robot.
    Meant for enumerating serial search spaces (``timor paper exp1``).
    """
    ids = module_ids if type(module_ids) is list else list(module_ids)
    if not all(type(m) is str for m in ids):
        ids = [str(m) for m in ids]
    text = None
    if ids:
        check_count(len(ids), "max_modules", "the number of modules in an assembly")
        compiled = _compiled(db, prefix, mesh_uri, package, wrl)
        if compiled is not None:
            text = compiled.text(ids[0], ids[1:], name, base_placement, check_dof=True)
    if text is None:
        assembly = ModuleAssembly.from_serial_modules(db, ids, base_placement)
        return assembly.to_urdf(name, prefix=prefix, mesh_uri=mesh_uri, package=package, wrl=wrl)
    return text


def serial_assembly_urdf(
    assembly: ModuleAssembly,
    name: str | None = None,
    *,
    prefix: str = "",
    mesh_uri: str = "file",
    package: str | None = None,
    wrl: str = "visual",
) -> str | None:
    """The URDF of ``assembly`` by the compiled writer if it is a serial chain, else None.

    Serial: instance ``k`` joined to ``k + 1`` by connection ``k`` (as ``from_serial_modules`` builds them),
    mounted at instance 0. None also when the general writer must decide (see the module docstring).
    """
    conns = assembly.connections
    ids = assembly.module_ids
    if not ids or assembly.base_connector[0] != 0 or len(conns) != len(ids) - 1:
        return None
    for k, c in enumerate(conns):
        if c[0] != k or c[2] != k + 1:
            return None
    if any(m.header.extra.get("keepNames") for m in assembly.modules):
        return None  # names kept from a URDF: the general writer names them (see tree.keeps_names)
    compiled = _compiled(assembly.db, prefix, mesh_uri, package, wrl)
    if compiled is None:
        return None
    keys = [(ca, ids[k + 1], cb) for k, ca, _, cb in conns]
    return compiled.text((ids[0], assembly.base_connector[1]), keys, name, assembly.base_placement)


def _compiled(db: ModulesDB, prefix: str, mesh_uri: str, package: str | None, wrl: str) -> _Compiled | None:
    key = ("urdf-serial", db.name, prefix, mesh_uri, package, wrl)
    compiled = db._cache.get(key)
    if compiled is None:
        try:
            compiled = _Compiled(db, prefix, mesh_uri, package, wrl)
        except InputError:  # bad options: the general writer raises the error, in its order
            return None
        db._cache[key] = compiled
    return compiled


class _Step:
    """One module instance of a chain, compiled: its text and what the next step needs."""

    __slots__ = (
        "position",
        "module",
        "entry",
        "tree_links",
        "links",
        "joints",
        "dof",
        "order_json",
        "entry_json",
        "conn_json",
        "prev_free",
        "next",
        "final",
    )

    def __init__(self, position: int, module: Module, entry: str, tree_links: list[TreeLink]) -> None:
        self.position = position
        self.module = module
        self.entry = entry
        self.tree_links = tree_links
        self.links = ""
        self.joints = ""
        self.dof = module.dof
        self.order_json = json.dumps(module.id)
        self.entry_json = json.dumps(entry)
        self.conn_json = ""  # the connection from the previous instance, as the assembly JSON writes it
        self.prev_free: tuple[Free, ...] = ()  # the previous instance's free connectors
        self.next: dict[Any, _Step | None] = {}
        self.final: tuple[Free, ...] | None = None  # this instance's free connectors when it is the last


class _Compiled:
    """The steps compiled for one module set and one set of export options."""

    def __init__(self, db: ModulesDB, prefix: str, mesh_uri: str, package: str | None, wrl: str) -> None:
        self.db = db
        self.prefix = check_prefix(prefix)
        self.mesh_uri, self.wrl = mesh_uri, wrl
        self.package = check_mesh_options(db.name, mesh_uri, package, wrl)
        self.set_json = json.dumps(db.name)
        self.roots: dict[Any, _Step | None] = {}
        self.steps: dict[tuple, _Step | None] = {}
        self.poses: dict[bytes, tuple[str, bool]] = {}

    # -- one assembly ------------------------------------------------------------------------------
    def text(
        self, root_key: Any, keys: Sequence[Any], name: str | None, placement: Any, check_dof: bool = False
    ) -> str | None:
        """The URDF of the chain ``root_key`` (module ID, or (ID, base connector)) and ``keys`` (next module
        IDs, or (exit connector, ID, entry connector) triples); None if the general writer must do it.

        ``check_dof``: check the degrees of freedom and the placement, as building the assembly would.
        """
        step = self.roots.get(root_key, _MISSING)
        if step is _MISSING:
            step = self.roots[root_key] = self._root(root_key)
        if step is None:
            return None
        chain = [step]
        for key in keys:
            nxt = step.next.get(key, _MISSING)
            if nxt is _MISSING:
                nxt = step.next[key] = self._extend(step, key)
            if nxt is None:
                return None
            step = nxt
            chain.append(step)
        if check_dof:
            check_count(sum([s.dof for s in chain]), "max_dof", "the degrees of freedom of an assembly")
        if placement is None:
            pose_json, world = _IDENTITY_POSE, False
        else:
            if check_dof:  # the user's placement (an assembly's was checked when it was built)
                try:
                    placement = placement_matrix(placement)
                except InputError:
                    return None
            pose_json, world = self._pose(placement)
        if name is None:
            assembly_json = (
                f'{{"baseConnection": [[0, {chain[0].entry_json}, 0]], "basePose": {pose_json}, "moduleConnection": ['
                + ", ".join([s.conn_json for s in chain[1:]])
                + '], "moduleOrder": ['
                + ", ".join([s.order_json for s in chain])
                + f'], "moduleSet": {self.set_json}}}'
            )
            name = robot_name_of(self.db.name, assembly_json)
        else:
            name = check_name(name, "robot name")
        out = [_HEAD, xml_escape(name), '">\n']
        out += [s.links for s in chain]
        tail = self._tools([s.prev_free for s in chain if s.prev_free] + [self._final(step)])
        out += tail[0]
        if world:
            world_link, world_joint = world_xml(self.prefix, chain[0].tree_links[0].name, placement)
            out.append(world_link)
        out += [s.joints for s in chain]
        out += tail[1]
        if world:
            out.append(world_joint)
        out.append("</robot>\n")
        return "".join(out)

    def _tools(self, frees: list[tuple[Free, ...]]) -> tuple[list[str], list[str]]:
        """Tool links and joints: ``tool<k>`` at every free eef connector, else ``tcp`` at the last free one."""
        tools = [(link, origin) for free in frees for eef, link, origin in free if eef]
        names = [f"{self.prefix}tool{k}" for k in range(len(tools))]
        if not tools:
            last = [f for f in frees if any(not eef for eef, _, _ in f)]
            if last:
                tools = [next((link, origin) for eef, link, origin in last[-1] if not eef)]
                names = [f"{self.prefix}tcp"]
        pairs = [tool_xml(link, tool, origin) for (link, origin), tool in zip(tools, names)]
        return [p[0] for p in pairs], [p[1] for p in pairs]

    def _pose(self, placement: np.ndarray) -> tuple[str, bool]:
        key = placement.tobytes()
        found = self.poses.get(key)
        if found is None:
            if len(self.poses) > 1000:  # placements differ per robot: keep the cache small
                self.poses.clear()
            pose = json.dumps([[[float(v) for v in row] for row in placement]])
            found = self.poses[key] = (pose, not np.array_equal(placement, np.eye(4)))
        return found

    # -- compiling ---------------------------------------------------------------------------------
    def _module(self, module_id: str) -> Module | None:
        try:
            return self.db.by_id(module_id)
        except TimorError:
            return None

    def _root(self, key: Any) -> _Step | None:
        module_id, base_id = key if isinstance(key, tuple) else (key, None)
        module = self._module(module_id)
        if module is None:
            return None
        if base_id is None:
            if len(module.base_connectors) != 1:
                return None
            base = module.base_connectors[0]
        else:
            base = module.connectors[base_id]
        tree_links = instance_links(module, 0, base.body_id, None, None, root_offset(base), 0, self.prefix)
        step = _Step(0, module, base.id, tree_links)
        return step if self._compile(step, None) else None

    def _extend(self, prev: _Step, key: Any) -> _Step | None:
        if isinstance(key, tuple):
            exit_id, module_id, entry_id = key
        else:
            module_id = key
            if self._module(module_id) is None:
                return None
            options = [(a, b) for a, b in self.db.connections_between(prev.module.id, module_id) if a != prev.entry]
            if len(options) != 1:
                return None
            exit_id, entry_id = options[0]
        module = self._module(module_id)
        if module is None:
            return None
        i = prev.position + 1
        local = (i, prev.module.id, prev.entry, exit_id, module.id, entry_id)
        step = self.steps.get(local, _MISSING)
        if step is _MISSING:
            step = self.steps[local] = self._new_step(prev, i, exit_id, module, entry_id)
        return step

    def _new_step(self, prev: _Step, i: int, exit_id: str, module: Module, entry_id: str) -> _Step | None:
        exit_link = prev.tree_links[-1]
        exit_conn = prev.module.connectors[exit_id]
        if exit_conn.body_id != exit_link.body.id:  # bodies after the exit: links not in module order
            return None
        entry = module.connectors[entry_id]
        offset = connection_offset(exit_link, exit_conn, entry)
        joint = f"{self.prefix}m{i - 1}_to_m{i}"
        tree_links = instance_links(module, i, entry.body_id, 0, joint, offset, 0, self.prefix)
        step = _Step(i, module, entry_id, tree_links)
        if not self._compile(step, exit_link.name):
            return None
        step.conn_json = f"[{i - 1}, {json.dumps(exit_id)}, {i}, {json.dumps(entry_id)}]"
        step.prev_free = _free(prev, exit_id)
        return step

    def _compile(self, step: _Step, parent: str | None) -> bool:
        """Fill in the step's text; False if the general writer must write such a chain."""
        tl = step.tree_links
        if any(link.parent != k - 1 for k, link in enumerate(tl) if k):  # a branching module
            return False
        if len({link.name for link in tl}) != len(tl) or not _plain_joint_ids(step.module):
            return False
        options = (self.mesh_uri, self.package, self.wrl)
        step.links = "".join([link_xml(link, link_body_xml(link, *options)) for link in tl])
        joints = [joint_xml(tl[0], parent)] if parent is not None else []
        joints += [joint_xml(link, tl[k - 1].name) for k, link in enumerate(tl) if k]
        step.joints = "".join(joints)
        return True

    def _final(self, step: _Step) -> tuple[Free, ...]:
        if step.final is None:
            step.final = _free(step, None)
        return step.final


def _free(step: _Step, exit_id: str | None) -> tuple[Free, ...]:
    """The connectors of ``step``'s instance that are neither its entry nor ``exit_id``, and not base connectors."""
    out = []
    for link in step.tree_links:
        for c in link.body.connectors:
            if c.id == step.entry or c.id == exit_id or (c.is_base and not c.is_eef):
                continue
            out.append((c.is_eef, link.name, origin_xml(connector_pose(link, c))))
    return tuple(out)


def _plain_joint_ids(module: Module) -> bool:
    """No joint name of ``module`` can equal another joint's in a chain (``m<i>_to_m<j>``, ``..._to_tool<k>``)."""
    names = [ros_name(j.id) for j in module.joints]
    if len(set(names)) != len(names):
        return False
    return not any(n.startswith("to_m") or "_to_tool" in n or "_to_tcp" in n for n in names)
