"""A small VRML 2.0 reader: the IndexedFaceSets of a file (IMPROV's convex decompositions), with transforms.

Bounded by the input limits (file size, triangles); errors are MeshErrors naming the file and the place.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from timor_core.errors import MeshError
from timor_core.limits import limits
from timor_core.model.mesh_data import MeshData

__all__ = ["MAX_VRML_USE_NODES", "read_vrml"]


# ---------------------------------------------------------------------------------------------------------
# VRML 2.0 reader
# ---------------------------------------------------------------------------------------------------------

_VRML_RUN = r'(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?(?=[\s,{}\[\]#"]|$)[\s,]*)+'
"""A run of decimal numbers (coordinates, indices) with the spaces and commas between them: one token, split later
(most of a mesh file is such runs; str.split is far cheaper than a regex match per number on a cold start)."""
_VRML_TOKEN_RE = re.compile(f"(?P<run>{_VRML_RUN})" + r'|"(?:[^"\\]|\\.)*"|#[^\n\r]*|[{}\[\]]|[^\s,{}\[\]#"]+|"')
_VRML_RUN_RE = re.compile(_VRML_RUN)
_VRML_NUMBER_RE = re.compile(r"^[+-]?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?|0[xX][0-9a-fA-F]+)$")
_VRML_PUNCT = frozenset("{}[]")


@dataclass
class _VrmlNode:
    type: str
    fields: dict[str, Any]
    line: int


class _VrmlParser:
    """Recursive-descent parser for the node/field structure of a VRML 2.0 file (no PROTOs)."""

    def __init__(self, text: str, file: Path) -> None:
        self.text = text
        self.file = file
        matches = [m for m in _VRML_TOKEN_RE.finditer(text) if m.group()[0] != "#"]
        self.tokens: list[tuple[str, int]] = [(m.group(), m.start()) for m in matches]
        # atom flags per token, a sentinel past the end; a lone '"' (unterminated string) is none, so next() reports it
        self.atoms = [
            m.lastgroup == "run" or (token != '"' and self.is_atom(token))
            for m, (token, _) in zip(matches, self.tokens)
        ] + [False]
        self.i = 0
        self.defs: dict[str, _VrmlNode | None] = {}
        self.count = 0  # nodes written out in the file (a USE is not one)

    def error(self, message: str, pos: int | None = None) -> MeshError:
        if pos is None:
            pos = self.tokens[self.i][1] if self.i < len(self.tokens) else len(self.text)
        line = self.text.count("\n", 0, pos) + 1
        return MeshError(f"malformed VRML at line {line}: {message}", file=self.file, value=str(self.file))

    def peek(self) -> str:
        if self.i >= len(self.tokens):
            raise self.error("unexpected end of file (truncated?)")
        return self.tokens[self.i][0]

    def peek_after(self) -> str | None:
        return self.tokens[self.i + 1][0] if self.i + 1 < len(self.tokens) else None

    def next(self) -> str:
        token = self.peek()
        if token == '"':
            raise self.error("unterminated string")
        self.i += 1
        return token

    def expect(self, token: str) -> None:
        got = self.next()
        if got != token:
            raise self.error(f"expected '{token}' but found '{_first(got)}'", self.tokens[self.i - 1][1])

    @staticmethod
    def is_atom(token: str) -> bool:
        return (
            token in ("TRUE", "FALSE", "NULL")
            or token.startswith('"')
            or _VRML_NUMBER_RE.match(token) is not None
            or _VRML_RUN_RE.fullmatch(token) is not None
        )

    @staticmethod
    def atom_values(token: str) -> list[str]:
        """The values of an atom token: a run of numbers gives each number, any other atom itself."""
        return [token] if token[0] == '"' else token.replace(",", " ").split()

    def is_identifier(self, token: str) -> bool:
        return token not in _VRML_PUNCT and not self.is_atom(token)

    def parse(self) -> list[_VrmlNode]:
        nodes = []
        while self.i < len(self.tokens):
            if self.peek() == "ROUTE":
                self.skip_route()
                continue
            node = self.node()
            if node is not None:
                nodes.append(node)
        return nodes

    def skip_route(self) -> None:
        self.expect("ROUTE")
        self.next()
        self.expect("TO")
        self.next()

    def node(self) -> _VrmlNode | None:
        pos = self.tokens[self.i][1] if self.i < len(self.tokens) else len(self.text)
        token = self.next()
        if token == "NULL":
            return None
        if token == "USE":
            name = self.next()
            if name not in self.defs:
                raise self.error(f"USE of undefined name '{name}'", pos)
            return self.defs[name]
        if token == "DEF":
            name = self.next()
            node = self.node()
            self.defs[name] = node
            return node
        if token in ("PROTO", "EXTERNPROTO"):
            raise self.error(f"{token} declarations are not supported", pos)
        if not self.is_identifier(token):
            raise self.error(f"expected a node type but found '{_first(token)}'", pos)
        self.expect("{")
        fields: dict[str, Any] = {}
        while self.peek() != "}":
            if self.peek() == "ROUTE":
                self.skip_route()
                continue
            name = self.next()
            if not self.is_identifier(name):
                raise self.error(
                    f"expected a field name in {token} but found '{_first(name)}'", self.tokens[self.i - 1][1]
                )
            fields[name] = self.value(token, name)
        self.expect("}")
        self.count += 1
        return _VrmlNode(token, fields, self.text.count("\n", 0, pos) + 1)

    def value(self, node_type: str, field: str) -> Any:
        token = self.peek()
        if token == "[":
            self.next()
            items: list[Any] = []
            while (token := self.peek()) != "]":
                if self.atoms[self.i]:
                    j = self.atoms.index(False, self.i)  # a run of atoms (e.g. all coordinates) at once
                    for t, _ in self.tokens[self.i : j]:
                        items.extend(self.atom_values(t))
                    self.i = j
                elif token == '"':
                    self.next()  # raises: unterminated string
                elif token in ("DEF", "USE") or self.peek_after() == "{":
                    items.append(self.node())
                else:
                    raise self.error(f"unexpected '{token}' in the value of field '{field}' of {node_type}")
            self.next()
            return items
        if self.atoms[self.i]:
            atoms = []
            while self.atoms[self.i]:
                atoms.extend(self.atom_values(self.next()))
            return atoms
        if token in _VRML_PUNCT:
            raise self.error(f"field '{field}' of {node_type} has no value")
        return self.node()


def _first(token: str) -> str:
    """A token as an error message shows it: a run of numbers by its first number."""
    return token if token[:1] == '"' else (token.replace(",", " ").split() or [token])[0]


def _vrml_nodes(value: Any) -> Iterator[_VrmlNode]:
    if isinstance(value, _VrmlNode):
        yield value
    elif isinstance(value, list):
        yield from (item for item in value if isinstance(item, _VrmlNode))


def _vrml_numbers(node: _VrmlNode, field: str, default: Sequence[float], file: Path) -> np.ndarray:
    value = node.fields.get(field)
    if value is None:
        return np.asarray(default, dtype=np.float64)
    where = f"field '{field}' of {node.type} (line {node.line})"
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise MeshError(f"malformed VRML: {where} must hold numbers", file=file, value=str(file))
    try:
        numbers = np.asarray(value, dtype=np.float64)
    except ValueError as exc:
        raise MeshError(f"malformed VRML: {where} must hold numbers", file=file, value=str(file)) from exc
    if len(default) and numbers.shape != (len(default),):
        raise MeshError(
            f"malformed VRML: {where} needs {len(default)} numbers, got {numbers.size}",
            file=file,
            value=str(file),
        )
    if not np.all(np.isfinite(numbers)):
        raise MeshError(f"malformed VRML: {where} holds non-finite numbers", file=file, value=str(file))
    return numbers


def _axis_angle(rotation: np.ndarray) -> np.ndarray:
    axis, angle = rotation[:3], rotation[3]
    norm = np.linalg.norm(axis)
    if norm == 0.0 or angle == 0.0:
        return np.eye(3)
    x, y, z = axis / norm
    k = np.array([[0.0, -z, y], [z, 0.0, -x], [-y, x, 0.0]])
    return np.eye(3) + np.sin(angle) * k + (1.0 - np.cos(angle)) * (k @ k)


def _vrml_transform(node: _VrmlNode, file: Path) -> np.ndarray:
    """4x4 matrix of a VRML Transform: T * C * R * SR * S * SR^-1 * C^-1."""

    def homogeneous(linear: np.ndarray | None = None, offset: np.ndarray | None = None) -> np.ndarray:
        matrix = np.eye(4)
        if linear is not None:
            matrix[:3, :3] = linear
        if offset is not None:
            matrix[:3, 3] = offset
        return matrix

    translation = _vrml_numbers(node, "translation", (0.0, 0.0, 0.0), file)
    rotation = _axis_angle(_vrml_numbers(node, "rotation", (0.0, 0.0, 1.0, 0.0), file))
    scale = _vrml_numbers(node, "scale", (1.0, 1.0, 1.0), file)
    scale_orientation = _axis_angle(_vrml_numbers(node, "scaleOrientation", (0.0, 0.0, 1.0, 0.0), file))
    center = _vrml_numbers(node, "center", (0.0, 0.0, 0.0), file)
    return (
        homogeneous(offset=translation + center)
        @ homogeneous(rotation)
        @ homogeneous(scale_orientation @ np.diag(scale) @ scale_orientation.T)
        @ homogeneous(offset=-center)
    )


def _vrml_face_set(node: _VrmlNode, transform: np.ndarray, file: Path) -> MeshData:
    def fail(message: str) -> MeshError:
        return MeshError(f"malformed VRML: IndexedFaceSet (line {node.line}) {message}", file=file, value=str(file))

    coords = list(_vrml_nodes(node.fields.get("coord")))
    if len(coords) != 1 or coords[0].type != "Coordinate":
        raise fail("needs a 'coord Coordinate { point [...] }' field")
    points = _vrml_numbers(coords[0], "point", (), file)
    if points.size == 0 or points.size % 3:
        raise fail(f"has {points.size} point coordinates, which is not a positive multiple of 3")
    points = points.reshape(-1, 3)
    index = _vrml_numbers(node, "coordIndex", (), file)
    if index.size == 0 or np.any(index != np.round(index)):
        raise fail("needs a non-empty integer 'coordIndex' list")
    index = index.astype(np.int64)
    if np.any(index < -1) or np.any(index >= len(points)):
        raise fail(f"has coordIndex entries outside [-1, {len(points)})")
    if index.size % 4 == 0 and np.all(index[3::4] == -1) and np.all(index.reshape(-1, 4)[:, :3] >= 0):
        faces = index.reshape(-1, 4)[:, :3]
    else:
        triangles: list[tuple[int, int, int]] = []
        for polygon in np.split(index, np.flatnonzero(index == -1)):
            polygon = polygon[polygon >= 0]
            triangles.extend((polygon[0], polygon[k], polygon[k + 1]) for k in range(1, len(polygon) - 1))
        if not triangles:
            raise fail("has no face with three or more vertices")
        faces = np.array(triangles, dtype=np.int64)
    ccw = node.fields.get("ccw", ["TRUE"])
    flip = ccw == ["FALSE"]
    vertices = points @ transform[:3, :3].T + transform[:3, 3]
    if np.linalg.det(transform[:3, :3]) < 0:
        flip = not flip
    if flip:
        faces = faces[:, ::-1]
    used, faces = np.unique(faces, return_inverse=True)
    return MeshData(vertices[used], faces.reshape(-1, 3))


MAX_VRML_USE_NODES = 10_000
"""Most nodes that USE copies may add to a VRML file's own (each USE of a DEF'd node is walked again: twenty
nested DEFs each USE'd twice would be a million nodes, minutes of work, from a 1 kB file)."""


def _vrml_collect(node: _VrmlNode, transform: np.ndarray, out: list[MeshData], file: Path, budget: list[int]) -> None:
    budget[0] -= 1
    if budget[0] < 0:
        raise MeshError(f"VRML USE copies add more than {MAX_VRML_USE_NODES} nodes", file=file, value=str(file))
    if node.type == "Transform":
        transform = transform @ _vrml_transform(node, file)
    if node.type == "Shape":
        for geometry in _vrml_nodes(node.fields.get("geometry")):
            if geometry.type == "IndexedFaceSet":
                out.append(_vrml_face_set(geometry, transform, file))
            else:
                raise MeshError(
                    f"unsupported VRML geometry node {geometry.type} (line {geometry.line}); "
                    "only IndexedFaceSet is read",
                    file=file,
                    value=str(file),
                )
        return
    for value in node.fields.values():
        for child in _vrml_nodes(value):
            _vrml_collect(child, transform, out, file, budget)


def read_vrml(path: Path) -> list[MeshData]:
    """Read every Shape's IndexedFaceSet of a VRML 2.0 file (Transforms applied) as one MeshData each.

    Polygons are fan-triangulated and each part keeps only the vertices its faces use; raises MeshError
    on unreadable or malformed content and on geometry nodes other than IndexedFaceSet.
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise MeshError(f"cannot read mesh file: {exc.strerror or exc}", file=path, value=str(path)) from exc
    try:
        if data[:2] == b"\x1f\x8b":  # decompressed within the size limit: a small gzip bomb stays small
            inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = inflater.decompress(data, limits().max_mesh_bytes + 1)
            if len(data) > limits().max_mesh_bytes or inflater.unconsumed_tail:
                raise MeshError(
                    f"decompressed VRML exceeds the limit max_mesh_bytes ({limits().max_mesh_bytes})",
                    file=path,
                    value=str(path),
                )
        text = data.decode("utf-8")
    except (OSError, EOFError, UnicodeDecodeError, zlib.error) as exc:
        raise MeshError(f"cannot decode VRML file: {exc}", file=path, value=str(path)) from exc
    header = text.lstrip("\ufeff").split("\n", 1)[0].strip()
    if not header.startswith("#VRML V2.0"):
        raise MeshError(
            f"not a VRML 2.0 file (first line must start with '#VRML V2.0', got {header[:40]!r})",
            file=path,
            value=str(path),
        )
    parts: list[MeshData] = []
    try:
        parser = _VrmlParser(text, path)
        nodes = parser.parse()
        budget = [parser.count + MAX_VRML_USE_NODES]
        for node in nodes:
            _vrml_collect(node, np.eye(4), parts, path, budget)
    except RecursionError as exc:
        raise MeshError("VRML nesting too deep", file=path, value=str(path)) from exc
    if not parts:
        raise MeshError("VRML file holds no Shape with an IndexedFaceSet", file=path, value=str(path))
    return parts
