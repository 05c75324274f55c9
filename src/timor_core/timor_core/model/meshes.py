"""Mesh files of module bodies: safe path resolution, loading (STL/OBJ/DAE/PLY/VRML) and coal conversion.

Loaded meshes are immutable (read-only arrays) and cached, so many robots built from the same module set
share one copy of every mesh and of its coal collision object.
"""

from __future__ import annotations

import os
import re
import stat as stat_module
import threading
import weakref
import zlib
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

import coal
import numpy as np

from timor_core.errors import MeshError
from timor_core.limits import limits

__all__ = [
    "MESH_EXTENSIONS",
    "ConvexParts",
    "MeshData",
    "clear_mesh_cache",
    "load_mesh",
    "read_vrml",
    "resolve_mesh_path",
    "to_coal_bvh",
    "to_coal_convex",
]

#: File extensions load_mesh understands (lower case); .wrl/.vrml are read as convex decompositions.
MESH_EXTENSIONS: frozenset[str] = frozenset({".stl", ".obj", ".dae", ".ply", ".wrl", ".vrml"})
_TRIMESH_EXTENSIONS = frozenset({".stl", ".obj", ".dae", ".ply"})
_VRML_EXTENSIONS = frozenset({".wrl", ".vrml"})

_CACHE_SIZE = 512
_URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.\-]*://")


def _readonly(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


# ---------------------------------------------------------------------------------------------------------
# Data classes
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class MeshData:
    """Triangle mesh(es) in the mesh file's own frame, scale already applied.

    Arrays are copied on construction and read-only; equality and hashing are by identity.
    """

    vertices: np.ndarray
    faces: np.ndarray

    def __post_init__(self) -> None:
        try:
            vertices = np.array(self.vertices, dtype=np.float64)
            faces = np.array(self.faces, dtype=np.int64)
        except (TypeError, ValueError) as exc:
            raise MeshError(f"mesh arrays are not numeric: {exc}") from exc
        if vertices.ndim != 2 or vertices.shape[1] != 3:
            raise MeshError("mesh vertices must have shape (N, 3)", value=vertices.shape)
        if faces.ndim != 2 or faces.shape[1] != 3 or faces.shape[0] == 0:
            raise MeshError("mesh faces must have shape (M, 3) with M >= 1", value=faces.shape)
        if not np.all(np.isfinite(vertices)):
            raise MeshError("mesh vertices contain NaN or infinite coordinates")
        if faces.min() < 0 or faces.max() >= len(vertices):
            raise MeshError(
                f"mesh face indices must lie in [0, {len(vertices)})",
                value=(int(faces.min()), int(faces.max())),
            )
        object.__setattr__(self, "vertices", _readonly(vertices))
        object.__setattr__(self, "faces", _readonly(faces))

    @cached_property
    def bounds(self) -> np.ndarray:
        """Axis-aligned bounding box as a read-only (2, 3) array [min, max]."""
        return _readonly(np.array([self.vertices.min(axis=0), self.vertices.max(axis=0)]))


@dataclass(frozen=True, eq=False)
class ConvexParts:
    """A convex decomposition: one MeshData per convex piece (as in IMPROV's VRML files)."""

    parts: tuple[MeshData, ...]

    def __post_init__(self) -> None:
        parts = tuple(self.parts)
        if not parts:
            raise MeshError("a convex decomposition needs at least one part")
        if not all(isinstance(part, MeshData) for part in parts):
            raise MeshError("every convex part must be a MeshData")
        object.__setattr__(self, "parts", parts)

    @cached_property
    def bounds(self) -> np.ndarray:
        """Axis-aligned bounding box of all parts as a read-only (2, 3) array [min, max]."""
        stacked = np.array([part.bounds for part in self.parts])
        return _readonly(np.array([stacked[:, 0].min(axis=0), stacked[:, 1].max(axis=0)]))

    def merged(self) -> MeshData:
        """All parts concatenated into a single MeshData (e.g. for visualisation)."""
        offsets = np.cumsum([0] + [len(part.vertices) for part in self.parts[:-1]])
        return MeshData(
            np.concatenate([part.vertices for part in self.parts]),
            np.concatenate([part.faces + off for part, off in zip(self.parts, offsets, strict=True)]),
        )


# ---------------------------------------------------------------------------------------------------------
# Path resolution
# ---------------------------------------------------------------------------------------------------------


def resolve_mesh_path(
    file_field: str,
    base_dir: Path,
    *,
    json_file: str | Path | None = None,
    json_path: str | None = None,
) -> Path:
    """Resolve a CoBRA mesh ``file`` field against the module set's folder and return the resolved path.

    Relative paths are taken relative to base_dir; absolute paths and ``file://`` URIs are accepted only if
    they lie inside base_dir (after resolving symlinks and '..'); other URI schemes and missing files raise.
    """
    base = Path(base_dir)

    def fail(message: str, file: Path | None = None) -> MeshError:
        return MeshError(message, file=json_file if json_file is not None else file, path=json_path, value=file_field)

    if not isinstance(file_field, str) or not file_field.strip():
        raise fail("mesh file must be a non-empty string")
    if "\x00" in file_field:
        raise fail("mesh file path contains a NUL character")
    if _URI_RE.match(file_field):
        parsed = urlparse(file_field)
        if parsed.scheme.lower() != "file":
            raise fail(
                f"unsupported URI scheme '{parsed.scheme}://' for a mesh file; "
                "use a path relative to the module set's folder"
            )
        if parsed.netloc not in ("", "localhost"):
            raise fail(f"file:// URI names a remote host '{parsed.netloc}'")
        candidate = Path(unquote(parsed.path))
        if not candidate.is_absolute():
            raise fail("file:// URI must hold an absolute path")
    else:
        candidate = Path(file_field)
        if not candidate.is_absolute():
            candidate = base / candidate
    try:
        base_resolved = base.resolve()
        resolved = candidate.resolve()
    except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: symlink loop on older Pythons
        raise fail(f"cannot resolve mesh file path: {exc}", candidate) from exc
    if not resolved.is_relative_to(base_resolved):
        raise fail(f"mesh file lies outside the module set's folder {base_resolved}", candidate)
    try:
        st = os.stat(resolved)
    except FileNotFoundError:
        raise fail(f"mesh file not found: {resolved}", candidate) from None
    except OSError as exc:  # a name too long, a permission problem, ...
        raise fail(f"cannot access mesh file: {exc.strerror or exc}", candidate) from None
    if not stat_module.S_ISREG(st.st_mode):
        raise fail(f"mesh file is not a regular file: {resolved}", candidate)
    return resolved


# ---------------------------------------------------------------------------------------------------------
# VRML 2.0 reader
# ---------------------------------------------------------------------------------------------------------

_VRML_TOKEN_RE = re.compile(r'"(?:[^"\\]|\\.)*"|#[^\n\r]*|[{}\[\]]|[^\s,{}\[\]#"]+|"')
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
        self.tokens: list[tuple[str, int]] = [
            (m.group(), m.start()) for m in _VRML_TOKEN_RE.finditer(text) if not m.group().startswith("#")
        ]
        # atom flags per token, a sentinel past the end; a lone '"' (unterminated string) is none, so next() reports it
        self.atoms = [token != '"' and self.is_atom(token) for token, _ in self.tokens] + [False]
        self.i = 0
        self.defs: dict[str, _VrmlNode | None] = {}

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
            raise self.error(f"expected '{token}' but found '{got}'", self.tokens[self.i - 1][1])

    @staticmethod
    def is_atom(token: str) -> bool:
        return token in ("TRUE", "FALSE", "NULL") or token.startswith('"') or _VRML_NUMBER_RE.match(token) is not None

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
            raise self.error(f"expected a node type but found '{token}'", pos)
        self.expect("{")
        fields: dict[str, Any] = {}
        while self.peek() != "}":
            if self.peek() == "ROUTE":
                self.skip_route()
                continue
            name = self.next()
            if not self.is_identifier(name):
                raise self.error(f"expected a field name in {token} but found '{name}'", self.tokens[self.i - 1][1])
            fields[name] = self.value(token, name)
        self.expect("}")
        return _VrmlNode(token, fields, self.text.count("\n", 0, pos) + 1)

    def value(self, node_type: str, field: str) -> Any:
        token = self.peek()
        if token == "[":
            self.next()
            items: list[Any] = []
            while (token := self.peek()) != "]":
                if self.atoms[self.i]:
                    j = self.atoms.index(False, self.i)  # a run of atoms (e.g. all coordinates) at once
                    items.extend(t for t, _ in self.tokens[self.i : j])
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
                atoms.append(self.next())
            return atoms
        if token in _VRML_PUNCT:
            raise self.error(f"field '{field}' of {node_type} has no value")
        return self.node()


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


def _vrml_collect(node: _VrmlNode, transform: np.ndarray, out: list[MeshData], file: Path) -> None:
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
            _vrml_collect(child, transform, out, file)


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
        for node in _VrmlParser(text, path).parse():
            _vrml_collect(node, np.eye(4), parts, path)
    except RecursionError as exc:
        raise MeshError("VRML nesting too deep", file=path, value=str(path)) from exc
    if not parts:
        raise MeshError("VRML file holds no Shape with an IndexedFaceSet", file=path, value=str(path))
    return parts


# ---------------------------------------------------------------------------------------------------------
# Loading and caching
# ---------------------------------------------------------------------------------------------------------

_mesh_cache: OrderedDict[tuple[str, int, int, tuple[float, float, float]], MeshData | ConvexParts] = OrderedDict()
_mesh_cache_lock = threading.Lock()


def clear_mesh_cache() -> None:
    """Forget all meshes cached by load_mesh (coal objects are released with their MeshData)."""
    with _mesh_cache_lock:
        _mesh_cache.clear()


def _scaled(mesh: MeshData, scale: np.ndarray) -> MeshData:
    if np.all(scale == 1.0):
        return mesh
    faces = mesh.faces[:, ::-1] if np.prod(scale) < 0 else mesh.faces
    return MeshData(mesh.vertices * scale, faces)


def _load_trimesh(path: Path) -> MeshData:
    import trimesh

    loaded = trimesh.load_mesh(str(path))
    if isinstance(loaded, (list, tuple)):  # very old trimesh versions return several meshes
        loaded = trimesh.util.concatenate(loaded)
    vertices = np.asarray(getattr(loaded, "vertices", np.zeros((0, 3))), dtype=np.float64)
    faces = np.asarray(getattr(loaded, "faces", np.zeros((0, 3))), dtype=np.int64)
    if len(faces) == 0:
        raise MeshError("the file holds no triangles")
    return MeshData(vertices, faces)


def load_mesh(
    path: Path,
    scale: Sequence[float] | float = (1.0, 1.0, 1.0),
    *,
    json_file: str | Path | None = None,
    json_path: str | None = None,
) -> MeshData | ConvexParts:
    """Load a mesh file with a per-axis scale; .wrl/.vrml files give ConvexParts, other formats a MeshData.

    Results are cached by (resolved path, mtime, size, scale), so repeated loads return the same object.
    """
    path = Path(path)
    shown = json_file if json_file is not None else path

    def fail(message: str) -> MeshError:
        if json_file is not None:
            message = f"{path}: {message}"
        return MeshError(message, file=shown, path=json_path, value=str(path))

    try:
        factors = np.broadcast_to(np.asarray(scale, dtype=np.float64), (3,)).copy()
    except (TypeError, ValueError) as exc:
        raise MeshError(
            "mesh scale must be a number or three numbers", file=shown, path=json_path, value=scale
        ) from exc
    if not np.all(np.isfinite(factors)) or np.any(factors == 0.0):
        raise MeshError("mesh scale must be finite and non-zero", file=shown, path=json_path, value=scale)
    suffix = path.suffix.lower()
    if suffix not in MESH_EXTENSIONS:
        raise fail(f"unknown mesh file extension '{path.suffix}' (supported: {', '.join(sorted(MESH_EXTENSIONS))})")
    try:
        resolved = path.resolve()
        stat = resolved.stat()
    except FileNotFoundError as exc:
        raise fail("mesh file not found") from exc
    except (OSError, RuntimeError, ValueError) as exc:
        raise fail(f"cannot access mesh file: {exc}") from exc
    if not resolved.is_file():
        raise fail("mesh file is not a regular file")
    if stat.st_size > limits().max_mesh_bytes:
        raise fail(
            f"mesh file of {stat.st_size} bytes exceeds the limit max_mesh_bytes ({limits().max_mesh_bytes}); "
            "raise it with TIMOR_MAX_MESH_BYTES or timor_core.limits.set_limits(max_mesh_bytes=...)"
        )
    key = (
        str(resolved),
        stat.st_mtime_ns,
        stat.st_size,
        (float(factors[0]), float(factors[1]), float(factors[2])),
    )
    with _mesh_cache_lock:
        cached = _mesh_cache.get(key)
        if cached is not None:
            _mesh_cache.move_to_end(key)
            return cached

    result: MeshData | ConvexParts
    if suffix in _VRML_EXTENSIONS:
        try:
            parts = read_vrml(resolved)
        except MeshError as exc:
            raise fail(exc.message) from exc
        result = ConvexParts(tuple(_scaled(part, factors) for part in parts))
    else:
        try:
            mesh = _load_trimesh(resolved)
        except MeshError as exc:
            raise fail(exc.message) from exc
        except Exception as exc:  # trimesh raises all sorts of errors for broken files
            raise fail(f"cannot read mesh file: {type(exc).__name__}: {exc}") from exc
        result = _scaled(mesh, factors)
    triangles = sum(len(p.faces) for p in result.parts) if isinstance(result, ConvexParts) else len(result.faces)
    if triangles > limits().max_mesh_triangles:
        raise fail(
            f"mesh has {triangles} triangles, more than the limit max_mesh_triangles ({limits().max_mesh_triangles})"
        )

    with _mesh_cache_lock:
        result = _mesh_cache.setdefault(key, result)  # another thread may have been faster
        _mesh_cache.move_to_end(key)
        while len(_mesh_cache) > _CACHE_SIZE:
            _mesh_cache.popitem(last=False)
    return result


# ---------------------------------------------------------------------------------------------------------
# coal conversion
# ---------------------------------------------------------------------------------------------------------

_bvh_cache: weakref.WeakKeyDictionary[MeshData, coal.BVHModelOBBRSS] = weakref.WeakKeyDictionary()
_convex_cache: weakref.WeakKeyDictionary[MeshData, coal.ConvexBase] = weakref.WeakKeyDictionary()
_coal_lock = threading.Lock()


def to_coal_bvh(mesh: MeshData) -> coal.BVHModelOBBRSS:
    """A coal triangle BVH (OBBRSS) of the mesh for concave collision geometry, cached per MeshData object."""
    with _coal_lock:
        cached = _bvh_cache.get(mesh)
    if cached is not None:
        return cached
    model = coal.BVHModelOBBRSS()
    model.beginModel(len(mesh.faces), len(mesh.vertices))
    model.addVertices(np.ascontiguousarray(mesh.vertices, dtype=np.float64))
    model.addTriangles(np.ascontiguousarray(mesh.faces, dtype=np.int64))
    model.endModel()
    with _coal_lock:
        return _bvh_cache.setdefault(mesh, model)


def _hull_triangles(points: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Vertices and outward-oriented triangles of the convex hull of points (flat sets via joggling)."""
    from scipy.spatial import ConvexHull, QhullError

    try:
        hull = ConvexHull(points)
    except QhullError:
        hull = ConvexHull(points, qhull_options="QJ")  # coplanar points: a flat, two-sided hull
    used, triangles = np.unique(hull.simplices, return_inverse=True)
    triangles = triangles.reshape(-1, 3)
    vertices = points[used]
    corner = vertices[triangles]
    normals = np.cross(corner[:, 1] - corner[:, 0], corner[:, 2] - corner[:, 0])
    inward = np.einsum("ij,ij->i", normals, hull.equations[:, :3]) < 0
    triangles[inward] = triangles[inward][:, ::-1]
    return vertices, triangles


def _robustly_3d(points: np.ndarray) -> bool:
    """True if the points span a volume clearly (coal's convexHull crashes on flat or near-flat input)."""
    if len(points) < 4:
        return False
    sv = np.linalg.svd(points - points.mean(axis=0), compute_uv=False)
    return bool(sv[0] > 0 and sv[-1] > 1e-3 * sv[0])


def _unique_rows(a: np.ndarray) -> np.ndarray:
    """The distinct rows of ``a`` in lexicographic order, like ``np.unique(a, axis=0)`` (which imports numpy.ma on
    first use: 15-20 ms of a cold start)."""
    a = np.asarray(a, dtype=float).reshape(-1, 3)
    if len(a) == 0:
        return a
    s = a[np.lexsort(a.T[::-1])]
    keep = np.ones(len(s), dtype=bool)
    keep[1:] = np.any(s[1:] != s[:-1], axis=1)
    return s[keep]


def to_coal_convex(mesh: MeshData) -> coal.ConvexBase:
    """A coal.Convex of the convex hull of the mesh's vertices, cached per MeshData object.

    Clearly three-dimensional point sets use coal's own hull; flat or near-flat ones use scipy's qhull
    (coal.Convex.convexHull crashes on flat input in coal 3.0.3).
    """
    with _coal_lock:
        cached = _convex_cache.get(mesh)
    if cached is not None:
        return cached
    points = _unique_rows(mesh.vertices)
    if _robustly_3d(points):  # coal's own qhull is safe here, and needs no scipy import (slow on cold start)
        coal_points = coal.StdVec_Vec3s()
        coal_points.extend(list(points))
        convex = coal.Convex.convexHull(coal_points, True, None)
        with _coal_lock:
            return _convex_cache.setdefault(mesh, convex)
    try:
        vertices, triangles = _hull_triangles(points)
    except Exception as exc:  # QhullError: fewer than 4 points, or all on a line
        if len(points) == 3 and np.linalg.norm(np.cross(points[1] - points[0], points[2] - points[0])) > 0:
            # a single triangle: two-sided
            vertices, triangles = points, np.array([[0, 1, 2], [0, 2, 1]])
        else:
            raise MeshError(
                "cannot build a convex hull: the mesh vertices are degenerate (a point or a line)",
                value=len(points),
            ) from exc
    coal_points = coal.StdVec_Vec3s()
    coal_points.extend(list(vertices))
    coal_triangles = coal.StdVec_Triangle()
    coal_triangles.extend([coal.Triangle(int(a), int(b), int(c)) for a, b, c in triangles])
    convex = coal.Convex(coal_points, coal_triangles)
    with _coal_lock:
        return _convex_cache.setdefault(mesh, convex)
