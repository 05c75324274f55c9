"""Mesh files of module bodies: safe path resolution, loading (STL/OBJ/DAE/PLY/VRML) and coal conversion.

Loaded meshes are immutable (read-only arrays) and cached, so many robots built from the same module set
share one copy of every mesh and of its coal collision object.
"""

from __future__ import annotations

import io
import os
import re
import stat as stat_module
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

import numpy as np

from timor_core.common.path_memo import path_memory, resolved
from timor_core.errors import InputError, MeshError
from timor_core.limits import limits, read_input_bytes
from timor_core.model.mesh_data import ConvexParts, MeshData
from timor_core.model.vrml import read_vrml

if TYPE_CHECKING:
    import coal  # imported where a shape is made: reading a module set (or writing its URDF) needs no coal

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
    Within ``resolving_paths`` (one import) a name found once is not looked up again.
    """
    memory = path_memory()
    if memory is None or not isinstance(file_field, str):
        return _resolve_mesh_path(file_field, base_dir, json_file, json_path)
    key = ("mesh", file_field, str(base_dir))
    found = memory.get(key)
    if found is None:
        found = memory[key] = _resolve_mesh_path(file_field, base_dir, json_file, json_path)
    return found


def _resolve_mesh_path(file_field: str, base_dir: Path, json_file: str | Path | None, json_path: str | None) -> Path:
    """:func:`resolve_mesh_path`, looked up."""
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
        base_resolved = resolved(base)
        found = resolved(candidate)
    except (OSError, RuntimeError, ValueError) as exc:  # RuntimeError: symlink loop on older Pythons
        raise fail(f"cannot resolve mesh file path: {exc}", candidate) from exc
    if not found.is_relative_to(base_resolved):
        raise fail(f"mesh file lies outside the module set's folder {base_resolved}", candidate)
    try:
        st = os.stat(found)
    except FileNotFoundError:
        raise fail(f"mesh file not found: {found}", candidate) from None
    except OSError as exc:  # a name too long, a permission problem, ...
        raise fail(f"cannot access mesh file: {exc.strerror or exc}", candidate) from None
    if not stat_module.S_ISREG(st.st_mode):
        raise fail(f"mesh file is not a regular file: {found}", candidate)
    return found


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
    """The triangles of a mesh file, read by trimesh from its bytes alone: no resolver, so the files a mesh names
    (an OBJ's ``mtllib``, a COLLADA texture) are never opened; timor uses the geometry only. By its path, trimesh
    opened them unchecked: a ``mtllib`` naming a FIFO beside the mesh hung the load, a large file was read whole."""
    import trimesh

    try:
        data = read_input_bytes(path, what="mesh file", max_bytes=limits().max_mesh_bytes)
    except InputError as exc:  # swapped for a FIFO or grown since it was checked
        raise MeshError(exc.message) from None
    loaded = trimesh.load_mesh(io.BytesIO(data), file_type=path.suffix.lower().lstrip("."))
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

    factors = _scale_factors(scale, shown, json_path)
    suffix = path.suffix.lower()
    if suffix not in MESH_EXTENSIONS:
        raise fail(f"unknown mesh file extension '{path.suffix}' (supported: {', '.join(sorted(MESH_EXTENSIONS))})")
    found, stat = _checked_file(path, fail)
    key = (str(found), stat.st_mtime_ns, stat.st_size, (float(factors[0]), float(factors[1]), float(factors[2])))
    with _mesh_cache_lock:
        cached = _mesh_cache.get(key)
        if cached is not None:
            _mesh_cache.move_to_end(key)
            return cached
    result = _read_scaled(found, suffix, factors, fail)
    with _mesh_cache_lock:
        result = _mesh_cache.setdefault(key, result)  # another thread may have been faster
        _mesh_cache.move_to_end(key)
        while len(_mesh_cache) > _CACHE_SIZE:
            _mesh_cache.popitem(last=False)
    return result


def _scale_factors(scale: Sequence[float] | float, shown: str | Path, json_path: str | None) -> np.ndarray:
    """The three scale factors of a mesh (one number applies to every axis): finite and non-zero."""
    try:
        factors = np.broadcast_to(np.asarray(scale, dtype=np.float64), (3,)).copy()
    except (TypeError, ValueError) as exc:
        raise MeshError(
            "mesh scale must be a number or three numbers", file=shown, path=json_path, value=scale
        ) from exc
    if not np.all(np.isfinite(factors)) or np.any(factors == 0.0):
        raise MeshError("mesh scale must be finite and non-zero", file=shown, path=json_path, value=scale)
    return factors


def _checked_file(path: Path, fail: Callable[[str], MeshError]) -> tuple[Path, os.stat_result]:
    """The resolved mesh file and its status: it exists, is a regular file and is within ``max_mesh_bytes``."""
    try:
        found = resolved(path)
        stat = found.stat()
    except FileNotFoundError as exc:
        raise fail("mesh file not found") from exc
    except (OSError, RuntimeError, ValueError) as exc:
        raise fail(f"cannot access mesh file: {exc}") from exc
    if not found.is_file():
        raise fail("mesh file is not a regular file")
    if stat.st_size > limits().max_mesh_bytes:
        raise fail(
            f"mesh file of {stat.st_size} bytes exceeds the limit max_mesh_bytes ({limits().max_mesh_bytes}); "
            "raise it with TIMOR_MAX_MESH_BYTES or timor_core.limits.set_limits(max_mesh_bytes=...)"
        )
    return found, stat


def _read_scaled(
    file: Path, suffix: str, factors: np.ndarray, fail: Callable[[str], MeshError]
) -> MeshData | ConvexParts:
    """Read the mesh file (VRML: convex parts, else trimesh), scale it, and check its triangle count."""
    result: MeshData | ConvexParts
    if suffix in _VRML_EXTENSIONS:
        try:
            parts = read_vrml(file)
        except MeshError as exc:
            raise fail(exc.message) from exc
        result = ConvexParts(tuple(_scaled(part, factors) for part in parts))
    else:
        try:
            mesh = _load_trimesh(file)
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
    import coal

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
    import coal

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
