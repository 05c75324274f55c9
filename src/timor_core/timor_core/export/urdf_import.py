"""URDF import: an existing (monolithic) robot as one CoBRA module, so tasks, IK, solutions and search use it.

Each URDF link becomes a body (mass, inertia about the centre of mass, visual and collision geometry, mirrored
meshes included), each joint a module joint with the URDF's origin and axis, so every link frame is the URDF's
(CoBRA joints move about z; an imported joint keeps its own axis in the timor extension ``axis``). The module
gets a ``base`` connector on the root link and an ``eef`` connector on the tool link (or a connector of a type
you give, so another set's gripper attaches). Mesh names resolve through ``package://`` (in the given package
folders, then ``ROS_PACKAGE_PATH`` and ``AMENT_PREFIX_PATH``), ``file://`` and paths relative to the URDF.
Unlimited limits: a missing or zero ``effort``/``velocity`` and magnitudes from ``URDF_UNLIMITED`` on are read as
unlimited, the convention of the URDF export.

What q means: one entry per revolute, prismatic and continuous joint, in Pinocchio's joint order. Mimic joints
become independent joints (as with Pinocchio's default ``buildModelFromUrdf``). A continuous joint takes one
entry, its angle, where Pinocchio's own model of the file takes two (cos, sin).
"""

from __future__ import annotations

import gc
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from timor_core.errors import FormatError, InputError, ValidationError
from timor_core.export.urdf_build import module_set
from timor_core.export.urdf_reader import XACRO_NAMESPACE, UrdfReader, check_tree
from timor_core.export.urdf_reader import resolve_package_uri as resolve_package_uri
from timor_core.limits import read_input_text
from timor_core.model.db import ModulesDB
from timor_core.model.parts import GENDERS

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

__all__ = ["ToolConnector", "db_from_urdf", "assembly_from_urdf", "resolve_package_uri", "guess_tool_link"]

#: Link names that say "tool frame", best first (``fnmatch``-like, lower case): the TCP guess prefers them.
TOOL_NAMES = (r"tool0", r"(.*_)?tcp", r"(.*_)?end_?effector(_link)?", r"(.*_)?ee_link", r"(.*_)?flange")
_TOOL_PATTERN = re.compile("|".join(f"({p.replace('(', '(?:')})" for p in TOOL_NAMES))  # group k: pattern k


@dataclass(frozen=True)
class ToolConnector:
    """The connector at the tool link: ``eef`` (default) makes it the robot's TCP; another type lets a module of
    another set (a gripper) attach there, if its connector has the same type and size and the other gender."""

    type: str = "eef"
    size: tuple[float, ...] = ()
    gender: str = "m"

    def to_json(self) -> dict[str, Any]:
        """The CoBRA connector JSON at the tool link's frame."""
        if self.gender not in GENDERS:
            raise InputError("connector gender must be m, f or h", path="tool_connector.gender", value=self.gender)
        if self.type == "base":
            raise InputError("the tool connector cannot be of the base type", path="tool_connector.type",
                             value=self.type)  # fmt: skip
        return {"ID": "tcp", "pose": np.eye(4).tolist(), "gender": self.gender, "type": self.type,
                "size": [float(s) for s in self.size]}  # fmt: skip


def guess_tool_link(children: Mapping[str, list[str]], actuated: Mapping[str, bool], root: str,
                    order: Sequence[str]) -> str:  # fmt: skip
    """The tool link: a link named like a tool frame (``TOOL_NAMES``, best pattern first; among several, one on
    or below the main chain, else the first in the file), else the end of the main chain: from the root into the
    child with the most joints below it, stopping where equal branches with joints split (a hand's fingers)."""
    below: dict[str, int] = {}
    stack, walk = [root], []
    while stack:
        n = stack.pop()
        walk.append(n)
        stack.extend(children.get(n, []))
    for n in reversed(walk):
        below[n] = int(actuated.get(n, False)) + sum(below[c] for c in children.get(n, []))
    chain = [root]
    while children.get(chain[-1]):
        kids = children[chain[-1]]
        best = max(below[k] for k in kids)
        top = [k for k in kids if below[k] == best]
        if len(top) != 1:
            break
        chain.append(top[0])
    under = {chain[-1]}  # everything below the end of the main chain
    stack = [chain[-1]]
    while stack:
        for c in children.get(stack.pop(), []):
            under.add(c)
            stack.append(c)
    preferred = set(chain) | under
    by_rank: dict[int, list[str]] = {}  # one pass over the names: the rank of the first pattern each matches
    for n in order:
        m = _TOOL_PATTERN.fullmatch(n.lower())
        if m is not None and m.lastindex is not None:
            by_rank.setdefault(m.lastindex, []).append(n)
    if by_rank:
        matches = by_rank[min(by_rank)]
        return next((n for n in matches if n in preferred), matches[0])
    return chain[-1]


def _read_text(urdf: str | Path) -> tuple[str, Path | None]:
    if isinstance(urdf, Path) or (isinstance(urdf, str) and "<robot" not in urdf):
        file = Path(urdf).resolve()
        return read_input_text(file, what="URDF file"), file
    return str(urdf), None


def _refuse_xacro(root: ET.Element | None, file: Path | None, parse_error: str = "", text: str | None = None) -> None:
    """A xacro file (a macro, a property, ``${...}`` or ``$(...)`` left unexpanded) is refused, named: read as
    URDF its macros would silently vanish. An expanded URDF may keep the xacro namespace declaration."""
    found = file is not None and file.suffix == ".xacro" or "unbound prefix" in parse_error
    suspicious = text is None or XACRO_NAMESPACE in text or "${" in text or "$(" in text
    for element in root.iter() if root is not None and suspicious else ():
        if found:
            break
        found = element.tag.startswith(f"{{{XACRO_NAMESPACE}}}") or any(
            "${" in v or "$(" in v for v in element.attrib.values()
        )
    if found:
        raise FormatError("this is a xacro file, not a URDF: expand it first (xacro FILE > robot.urdf)", file=file)


_JSON_TO_URDF = ((".parameters.file", "/mesh@filename"), (".parameters.scale", "/mesh@scale"),
                 (".inertia", "/inertial/inertia"), (".mass", "/inertial/mass"), (".limits", "/limit"))  # fmt: skip


def _urdf_path(rest: str) -> str:
    """The URDF spelling of the part of a module-JSON path below a body or joint (``.visual[0].parameters.file``
    -> ``/visual[1]/mesh@filename``; URDF counts elements from 1)."""
    rest = re.sub(r"\.(visual|collision)\[(\d+)\]", lambda m: f"/{m.group(1)}[{int(m.group(2)) + 1}]", rest)
    for json_part, urdf_part in _JSON_TO_URDF:
        rest = rest.replace(json_part, urdf_part)
    return rest


def _located(exc: InputError, file: Path | None, bodies: list[dict], joints: list[dict]) -> InputError:
    """The error of the generated module JSON, re-pointed at the URDF link or joint it came from."""
    path = exc.path or ""
    m = re.match(r"\$\.modules\[0\]\.(bodies|joints)\[(\d+)\](.*)", path)
    if m:
        kind, k, rest = m.group(1), int(m.group(2)), m.group(3)
        items = bodies if kind == "bodies" else joints
        if k < len(items):
            path = f"{'link' if kind == 'bodies' else 'joint'}[@name='{items[k]['ID']}']{_urdf_path(rest)}"
    err = type(exc).__new__(type(exc))
    InputError.__init__(err, exc.message, file=file, path=path or None, value=exc.value)
    return err


def db_from_urdf(
    urdf: str | Path,
    package_dirs: Sequence[str | Path] | Mapping[str, str | Path] = (),
    *,
    module_id: str | None = None,
    tcp_link: str | None = None,
    joint_extras: Mapping[str, Mapping[str, Any]] | None = None,
    keep_names: bool = False,
    tool_connector: ToolConnector | None = None,
) -> ModulesDB:
    """A module set with one module: the robot of a URDF file (or URDF text).

    ``tcp_link`` carries the tool connector (default: :func:`guess_tool_link`). ``module_id`` defaults to the
    robot's name. ``joint_extras`` adds CoBRA joint fields URDF cannot hold (``gearRatio``, ``motorInertia``, an
    acceleration limit in ``limits``), by joint name. ``keep_names``: the robot's links and joints keep the
    URDF's names and root (no ``m0_`` prefix, no ``base_link``), so controller and MoveIt configurations written
    for the URDF apply. ``tool_connector``: the type, size and gender of the connector at the tool link.
    """
    enabled = gc.isenabled()
    gc.disable()  # the import allocates millions of objects for a big URDF and makes no cycles: the cyclic collector
    try:  # would spend about a third of the time looking for some
        return _db_from_urdf(urdf, package_dirs, module_id, tcp_link, joint_extras, keep_names, tool_connector)
    finally:
        if enabled:
            gc.enable()


def _db_from_urdf(
    urdf: str | Path,
    package_dirs: Sequence[str | Path] | Mapping[str, str | Path],
    module_id: str | None,
    tcp_link: str | None,
    joint_extras: Mapping[str, Mapping[str, Any]] | None,
    keep_names: bool,
    tool_connector: ToolConnector | None,
) -> ModulesDB:
    text, file = _read_text(urdf)
    if "<!DOCTYPE" in text or "<!ENTITY" in text:
        raise FormatError("a URDF must not declare a DOCTYPE or entities", file=file)
    try:
        root = ET.fromstring(text)
    except ET.ParseError as exc:
        _refuse_xacro(None, file, str(exc))
        raise FormatError(f"not well-formed XML: {exc}", file=file) from None
    _refuse_xacro(root, file, text=text)
    if root.tag != "robot":
        raise FormatError("the root element must be <robot>", file=file, value=root.tag)
    dirs: Sequence[Path] | Mapping[str, Path]
    if isinstance(package_dirs, Mapping):
        dirs = {k: Path(v) for k, v in package_dirs.items()}
    else:
        dirs = [Path(d) for d in package_dirs]
    reader = UrdfReader(file, dirs)
    link_elements = root.findall("link")
    urdf_joints = [reader.joint(j) for j in root.findall("joint")]
    names = [e.get("name", "") for e in link_elements]
    root_link = check_tree(names, urdf_joints, file)  # before anything walks the links: no cycle, one root
    bodies = [reader.body(e) for e in link_elements]
    joints = [j.data for j in urdf_joints]
    for j in joints:
        extra = dict((joint_extras or {}).get(j["ID"], {}))
        if "limits" in extra:
            j["limits"] = {**j.get("limits", {}), **extra.pop("limits")}
        j.update(extra)
    children: dict[str, list[str]] = {}
    for uj in urdf_joints:
        children.setdefault(uj.parent, []).append(uj.child)
    actuated = {uj.child: uj.kind != "fixed" for uj in urdf_joints}
    tcp = tcp_link if tcp_link is not None else guess_tool_link(children, actuated, root_link, names)
    if tcp not in actuated and tcp != root_link:
        raise ValidationError("tcp_link names no link of the URDF", file=file, path="tcp_link", value=tcp)
    flip = np.diag([1.0, -1.0, -1.0, 1.0]).tolist()  # the base connector faces the world (rotation pi about x)
    by_name = {b["ID"]: b for b in bodies}
    by_name[root_link]["connectors"].append({"ID": "base", "pose": flip, "gender": "f", "type": "base", "size": []})
    by_name[tcp]["connectors"].append((tool_connector or ToolConnector()).to_json())
    robot_name = root.get("name") or "robot"
    base_dir = file.parent if file is not None else Path.cwd()
    if reader.meshes:
        base_dir = Path(os.path.commonpath([str(base_dir), *(str(p.parent) for _, p in reader.meshes)]))
    for params, path in reader.meshes:
        params["file"] = path.relative_to(base_dir).as_posix()
    header: dict[str, Any] = {"ID": module_id or robot_name, "name": robot_name}
    if keep_names:
        header["keepNames"] = True
    try:
        return module_set(header, bodies, joints, base_dir, file, robot_name)
    except InputError as exc:
        raise _located(exc, file, bodies, joints) from None


def assembly_from_urdf(
    urdf: str | Path,
    package_dirs: Sequence[str | Path] | Mapping[str, str | Path] = (),
    *,
    tcp_link: str | None = None,
    joint_extras: Mapping[str, Mapping[str, Any]] | None = None,
    keep_names: bool = False,
    tool_connector: ToolConnector | None = None,
) -> ModuleAssembly:
    """A one-module assembly of the robot in a URDF (see ``db_from_urdf``)."""
    from timor_core.model.assembly import ModuleAssembly

    db = db_from_urdf(urdf, package_dirs, tcp_link=tcp_link, joint_extras=joint_extras, keep_names=keep_names,
                      tool_connector=tool_connector)  # fmt: skip
    return ModuleAssembly.from_serial_modules(db, [next(iter(db)).id])
