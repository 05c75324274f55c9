"""URDF import: an existing (monolithic) robot as one CoBRA module, so tasks, IK, solutions and search use it.

Each URDF link becomes a body (mass, inertia about the centre of mass, visual and collision geometry, mirrored
meshes included), each joint a module joint with the URDF's origin and axis, so every link frame is the URDF's
(CoBRA joints move about z; an imported joint keeps its own axis in the timor extension ``axis``). The module
gets a ``base`` connector on the root link and an ``eef`` connector on the tool link (or a connector of a type
you give, so another set's gripper attaches). Mesh names resolve through ``package://`` (in the given package
folders, then ``ROS_PACKAGE_PATH`` and ``AMENT_PREFIX_PATH``), ``file://`` and paths relative to the URDF.
Unlimited limits: a missing or zero ``effort``/``velocity`` and magnitudes from ``URDF_UNLIMITED`` on are read as
unlimited, the convention of the URDF export. Every other number must be finite and in the ranges of
:mod:`timor_core.export.urdf_import.urdf_numbers`.

Bounded memory: the text is parsed in small chunks and each child of ``<robot>`` read once complete, then dropped,
so the parsed XML never holds more than about a chunk and the child still open; links and joints beyond
``max_urdf_links``, and shapes beyond ``max_urdf_shapes``, are refused as soon as they are counted, and a child
(with the text up to the next) longer than ``max_urdf_element_chars`` as soon as so much of it is parsed, which bounds
its elements, its nesting and its attributes (``timor_core.limits``).

What q means: one entry per revolute, prismatic and continuous joint, in Pinocchio's joint order. Mimic joints
become independent joints (as with Pinocchio's default ``buildModelFromUrdf``). A continuous joint takes one
entry, its angle, where Pinocchio's own model of the file takes two (cos, sin).
"""

from __future__ import annotations

import os
import warnings
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from timor_core.common.gc_pause import paused_gc
from timor_core.common.path_memo import resolving_paths
from timor_core.errors import FormatError, InputError, TimorError, ValidationError, short_repr
from timor_core.export.urdf_import.urdf_build import UrdfParts, module_set
from timor_core.export.urdf_import.urdf_reader import XACRO_NAMESPACE, UrdfReader
from timor_core.export.urdf_import.urdf_reader import resolve_package_uri as resolve_package_uri
from timor_core.export.urdf_import.urdf_tree import TOOL_NAMES as TOOL_NAMES
from timor_core.export.urdf_import.urdf_tree import check_tree
from timor_core.export.urdf_import.urdf_tree import guess_tool_link as guess_tool_link
from timor_core.limits import check_number, limit_hint, limits, read_input_text
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB
from timor_core.model.parts import GENDERS

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

__all__ = [
    "ToolConnector",
    "MeshesLeftOut",
    "MISSING_MESHES",
    "db_from_urdf",
    "assembly_from_urdf",
    "resolve_package_uri",
    "guess_tool_link",
]


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
        size = [
            check_number(s, "connector size", 0.0, "max_module_size_m", path="tool_connector.size") for s in self.size
        ]
        return {"ID": "tcp", "pose": np.eye(4).tolist(), "gender": self.gender, "type": self.type, "size": size}


MISSING_MESHES = ("error", "skip")
"""What the import does with a mesh file it does not find: refuse the URDF, or leave the mesh out."""


class MeshesLeftOut(TimorError, UserWarning):  # noqa: N818 - a warning, never raised
    """The meshes an import with ``missing_meshes="skip"`` left out (``meshes``: each as its URDF path and file);
    issued as a warning, never raised."""

    def __init__(self, file: Path | None, meshes: Sequence[str]) -> None:
        self.file, self.meshes = file, tuple(meshes)
        shown = "; ".join(self.meshes[:20]) + (f"; and {len(self.meshes) - 20} more" if len(self.meshes) > 20 else "")
        super().__init__(f"{file or '<URDF>'}: {len(self.meshes)} mesh(es) not found and left out: {shown}")


def _read_text(urdf: str | Path) -> tuple[str, Path | None]:
    if isinstance(urdf, Path) or (isinstance(urdf, str) and "<robot" not in urdf):
        file = Path(urdf).resolve()
        return read_input_text(file, what="URDF file"), file
    return str(urdf), None


_CHUNK = 1 << 14
"""Characters of URDF text fed to the XML parser at a time: the parsed elements of about one chunk (and of the child
still open) are in memory, and still in the processor's cache when they are read (1 MiB chunks made reading 100,000
links 0.4 s slower)."""


def _is_xacro(element: ET.Element) -> bool:
    """Whether an element or one below it is xacro's: a tag in xacro's namespace, ``${...}`` or ``$(...)``."""
    return any(
        e.tag.startswith(f"{{{XACRO_NAMESPACE}}}") or any("${" in v or "$(" in v for v in e.attrib.values())
        for e in element.iter()
    )


def _path(element: ET.Element) -> str:
    """An element as a path for a message: ``link[@name='base']`` (a hostile tag or name cut short)."""
    name = element.get("name")
    tag = short_repr(element.tag, 60)[1:-1]
    return tag if name is None else f"{tag}[@name={short_repr(name, 60)}]"


class _Children:
    """The children of a URDF's ``<robot>``, each handed to the reader once complete and then dropped, so the parsed
    tree never holds more than about one chunk and the one child still open. A xacro file (a macro, a property,
    ``${...}`` or ``$(...)`` left unexpanded; read as URDF its macros would silently vanish) or another root is noted,
    and nothing more read. After each chunk, ``progressed`` says whether a child of the root (or the root) began: the
    importer bounds the text between two such steps (``max_urdf_element_chars``).

    The parser's tree builder is given an outer element first (its public ``start``), so the document's root is that
    element's child, reachable while the parser still runs: no per-element events, no per-element Python call."""

    def __init__(self, reader: UrdfReader, suspicious: bool) -> None:
        self.reader, self.suspicious = reader, suspicious  # suspicious: the text has xacro's marks somewhere
        builder = ET.TreeBuilder()
        self.outer = builder.start("outer", {})  # never part of the document: expat parses only the URDF's text
        self.parser = ET.XMLParser(target=builder)
        self.root: ET.Element | None = None
        self.xacro = False
        self.open: ET.Element | None = None  # the root's last child after the last chunk, perhaps still open
        self.progressed = False

    def feed(self, text: str) -> None:
        """Parse a chunk, then read the children completed by it."""
        self.parser.feed(text)
        self._take(last=False)

    def close(self) -> None:
        """End the parse (ParseError for a document cut short), then read the last children."""
        self.parser.close()
        self._take(last=True)

    def pending(self) -> str:
        """Where the parser is, for a message: the root's last child (perhaps still open), else the root."""
        if self.open is not None:
            return _path(self.open)
        return "the text before the root's start tag ends" if self.root is None else _path(self.root)

    def _take(self, last: bool) -> None:
        root = self.root
        began = root is None
        if root is None:
            if not len(self.outer):
                self.progressed = False
                return
            self.root = root = self.outer[0]
            self.xacro = self.suspicious and _is_xacro(ET.Element(root.tag, root.attrib))
        complete = len(root) if last else len(root) - 1  # the last child may still be open
        if complete > 0:
            self._read(root, complete)
        child = root[-1] if len(root) else None
        self.progressed = began or child is not self.open  # the root or a child of it began
        self.open = child

    def _read(self, root: ET.Element, complete: int) -> None:
        """Hand the first ``complete`` children of the root to the reader, then drop them."""
        reading = root.tag == "robot"
        reader = self.reader
        for child in root[:complete]:
            if self.suspicious and not self.xacro:
                self.xacro = _is_xacro(child)
            if not reading or self.xacro:
                break
            tag = child.tag
            if tag == "link":
                reader.link(child)
            elif tag == "joint":
                reader.joint(child)
        del root[:complete]


def _feed(text: str, file: Path | None, children: _Children) -> None:
    """Feed the text chunk by chunk, bounding what one child of ``<robot>`` holds in memory: the text fed after the
    chunk in which the last child began, without the next beginning (that child, the text after it, the next start
    tag; or before the root's start tag ends), must not exceed ``max_urdf_element_chars``, else an InputError naming
    where. Counted after that chunk, so only a longer stretch is refused. While no child begins the chunks double:
    expat reads a token cut across chunks again from its start at each one (a 60 MB attribute fed 16 KiB at a time
    took 93 s), so a long token costs a few passes, not thousands."""
    most = limits().max_urdf_element_chars
    k = since = 0
    size = _CHUNK
    while k < len(text):
        end = min(k + size, len(text))
        children.feed(text[k:end])
        span = end - since
        if children.progressed:
            since, size = end, _CHUNK
        elif span > most:
            message = f"one child of <robot>, with the text up to the next, is longer than {most} characters"
            raise InputError(f"{message} ({limit_hint('max_urdf_element_chars')})", file=file, path=children.pending())
        else:
            size = max(_CHUNK, min(span, most + 1 - span))  # doubling, to just past the limit
        k = end


def _stream(text: str, file: Path | None, reader: UrdfReader) -> str:
    """Parse a URDF text chunk by chunk, its links and joints read as they come (see :class:`_Children`); the robot's
    name. A DOCTYPE, malformed XML, a xacro file or another root than ``<robot>`` is refused, named, before any wrong
    value the reader found."""
    # each "!" or "$" first: a one-character search runs at memchr's speed, two characters at a third of it (50 MB)
    if "!" in text and ("<!DOCTYPE" in text or "<!ENTITY" in text):
        raise FormatError("a URDF must not declare a DOCTYPE or entities", file=file)
    xacro = FormatError("this is a xacro file, not a URDF: expand it first (xacro FILE > robot.urdf)", file=file)
    if file is not None and file.suffix == ".xacro":
        raise xacro
    children = _Children(reader, XACRO_NAMESPACE in text or ("$" in text and ("${" in text or "$(" in text)))
    try:
        _feed(text, file, children)
        children.close()
    except ET.ParseError as exc:
        if "unbound prefix" in str(exc):  # xacro:... without xacro's namespace declared
            raise xacro from None
        raise FormatError(f"not well-formed XML: {exc}", file=file) from None
    root = children.root
    assert root is not None  # a text without an element is a ParseError
    if children.xacro:
        raise xacro
    if root.tag != "robot":
        raise FormatError("the root element must be <robot>", file=file, value=root.tag)
    return root.get("name") or "robot"


def db_from_urdf(
    urdf: str | Path,
    package_dirs: Sequence[str | Path] | Mapping[str, str | Path] = (),
    *,
    module_id: str | None = None,
    tcp_link: str | None = None,
    joint_extras: Mapping[str, Mapping[str, Any]] | None = None,
    keep_names: bool = False,
    tool_connector: ToolConnector | None = None,
    missing_meshes: str = "error",
) -> ModulesDB:
    """A module set with one module: the robot of a URDF file (or URDF text).

    ``tcp_link`` carries the tool connector (default: :func:`guess_tool_link`). ``module_id`` defaults to the
    robot's name. ``joint_extras`` adds CoBRA joint fields URDF cannot hold (``gearRatio``, ``motorInertia``, an
    acceleration limit in ``limits``), by joint name. ``keep_names``: the robot's links and joints keep the
    URDF's names byte for byte and its root (no ``m0_`` prefix, no ``base_link``; ``-``, ``/`` and spaces kept, each
    export escapes them), so controller and MoveIt configurations written for the URDF apply. ``tool_connector``:
    the type, size and gender of the connector at the tool link.
    ``missing_meshes``: ``"error"`` (a mesh file that is not found is a MeshError) or ``"skip"`` (kinematics,
    dynamics and primitive shapes are imported, each missing mesh is left out and named in a
    :class:`MeshesLeftOut` warning).
    """
    if missing_meshes not in MISSING_MESHES:
        raise InputError(f"missing_meshes must be one of {', '.join(MISSING_MESHES)}", path="missing_meshes",
                         value=missing_meshes)  # fmt: skip
    with paused_gc(), resolving_paths():  # millions of objects, no cycles: the collector would cost a third
        options = (keep_names, tool_connector, missing_meshes == "skip")
        return _db_from_urdf(urdf, package_dirs, module_id, tcp_link, joint_extras, *options)


def _db_from_urdf(
    urdf: str | Path,
    package_dirs: Sequence[str | Path] | Mapping[str, str | Path],
    module_id: str | None,
    tcp_link: str | None,
    joint_extras: Mapping[str, Mapping[str, Any]] | None,
    keep_names: bool,
    tool_connector: ToolConnector | None,
    skip_missing: bool = False,
) -> ModulesDB:
    text, file = _read_text(urdf)
    dirs: Sequence[Path] | Mapping[str, Path]
    if isinstance(package_dirs, Mapping):
        dirs = {k: Path(v) for k, v in package_dirs.items()}
    else:
        dirs = [Path(d) for d in package_dirs]
    reader = UrdfReader(file, dirs, skip_missing)
    robot_name = _stream(text, file, reader)
    del text
    if reader.joint_error is not None:
        raise reader.joint_error
    urdf_joints, names = reader.joints, reader.names
    tree = check_tree(names, urdf_joints, file)  # before a link's wrong value: no cycle, one root
    if reader.link_error is not None:
        raise reader.link_error
    links = reader.links
    if reader.skipped:
        warnings.warn(MeshesLeftOut(file, reader.skipped), stacklevel=3)
    actuated = {uj.child: uj.kind != "fixed" for uj in urdf_joints}
    tcp = tcp_link if tcp_link is not None else guess_tool_link(tree, actuated, names)
    if tcp not in actuated and tcp != tree.root:
        raise ValidationError("tcp_link names no link of the URDF", file=file, path="tcp_link", value=tcp)
    flip = np.diag([1.0, -1.0, -1.0, 1.0]).tolist()  # the base connector faces the world (rotation pi about x)
    connectors: dict[str, list[dict[str, Any]]] = {tree.root: [], tcp: []}
    connectors[tree.root].append({"ID": "base", "pose": flip, "gender": "f", "type": "base", "size": []})
    connectors[tcp].append((tool_connector or ToolConnector()).to_json())
    base_dir = file.parent if file is not None else Path.cwd()
    if reader.meshes:
        base_dir = _mesh_base(base_dir, [p.parent for _, p in reader.meshes])
    for params, path in reader.meshes:
        params["file"] = path.relative_to(base_dir).as_posix()
    header: dict[str, Any] = {"ID": module_id or robot_name, "name": robot_name}
    if keep_names:
        header["keepNames"] = True
    parts = UrdfParts(links, urdf_joints, reader, connectors, joint_extras or {})
    return module_set(header, parts, base_dir, file, robot_name)


def _mesh_base(urdf_dir: Path, mesh_dirs: list[Path]) -> Path:
    """The folder the set names its meshes from: the URDF's and its meshes' common folder (a ROS package's
    ``meshes/...``), unless that climbs above the URDF's parent folder (a URDF written elsewhere naming an installed
    package's meshes): then the meshes' own common folder's parent, so no mesh name spells the machine's folders
    (``work/main/.venv/lib/...``, ``home/alice/...``) into the set, its copies and a bring-up package. Where the
    common folder is no higher than that (a URDF naming two packages' meshes beside it: example-robot-data's
    anymal-kinova), it stays: the names are as before, not longer."""
    common = Path(os.path.commonpath([str(urdf_dir), *(str(d) for d in mesh_dirs)]))
    own = Path(os.path.commonpath([str(d) for d in mesh_dirs]))
    if common.is_relative_to(urdf_dir.parent) or common.is_relative_to(own.parent):
        return common
    return own.parent


def assembly_from_urdf(
    urdf: str | Path,
    package_dirs: Sequence[str | Path] | Mapping[str, str | Path] = (),
    *,
    tcp_link: str | None = None,
    joint_extras: Mapping[str, Mapping[str, Any]] | None = None,
    keep_names: bool = False,
    tool_connector: ToolConnector | None = None,
    missing_meshes: str = "error",
) -> ModuleAssembly:
    """A one-module assembly of the robot in a URDF (see ``db_from_urdf``)."""

    db = db_from_urdf(urdf, package_dirs, tcp_link=tcp_link, joint_extras=joint_extras, keep_names=keep_names,
                      tool_connector=tool_connector, missing_meshes=missing_meshes)  # fmt: skip
    return ModuleAssembly.from_serial_modules(db, [next(iter(db)).id])
