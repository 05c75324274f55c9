"""Geometry of bodies and obstacles: box, cylinder, sphere, mesh and empty, each with a pose.

A body's visual or collision geometry is a tuple of these (several entries = composed geometry).
Collision objects for coal are built lazily and cached on the (immutable) geometry object.
"""

from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.common.path_memo import resolved
from timor_core.common.transforms import IDENTITY
from timor_core.errors import FormatError, MeshError, ValidationError

__all__ = [
    "Geometry",
    "Box",
    "Cylinder",
    "Sphere",
    "Mesh",
    "Empty",
    "geometry_from_json",
    "geometries_from_json",
    "mesh_from_json",
    "pose_json",
    "GEOMETRY_PARAMETERS",
    "UNREAD_PARAMETERS",
    "unread_fields",
]

log = logging.getLogger(__name__)


def pose_json(T: np.ndarray) -> list[list[float]]:
    """A 4x4 pose as nested lists of floats (CoBRA JSON)."""
    return np.asarray(T, dtype=float).tolist()


GEOMETRY_PARAMETERS = {"box": ("x", "y", "z"), "cylinder": ("r", "z"), "sphere": ("r",), "mesh": ("file", "scale")}
"""The parameters each geometry type reads (``empty`` none)."""
UNREAD_PARAMETERS = "_parameters"
"""The key of a geometry's ``extra`` holding the parameters its type does not read (written back as they were)."""


@dataclass(frozen=True, eq=False)
class Geometry:
    """A geometric primitive or mesh placed at ``pose`` in its body's (or the world's) frame."""

    pose: np.ndarray = field(default_factory=lambda: IDENTITY)
    extra: dict = field(default_factory=dict)
    type_name: ClassVar[str] = ""

    def parameters_json(self) -> dict:
        """The ``parameters`` object of the CoBRA geometry."""
        raise NotImplementedError

    def to_json(self) -> dict:
        """The CoBRA JSON description of this geometry (with the parameters and fields it does not read, as read)."""
        parameters = self.parameters_json()
        out: dict[str, Any] = {"type": self.type_name, "parameters": parameters, "pose": pose_json(self.pose)}
        if self.extra:
            out["parameters"] = {**parameters, **self.extra.get(UNREAD_PARAMETERS, {})}
            out.update((k, v) for k, v in self.extra.items() if k != UNREAD_PARAMETERS)
        return out

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self.to_json() == other.to_json()  # type: ignore[union-attr]

    def __hash__(self) -> int:
        return id(self)

    def coal_shapes(self) -> list[tuple[Any, np.ndarray]]:
        """Collision shapes (coal objects) with their poses relative to this geometry's frame's parent."""
        cached = self.__dict__.get("_coal")
        if cached is None:
            cached = self._make_coal()
            object.__setattr__(self, "_coal", cached)
        return cached

    def _make_coal(self) -> list[tuple[Any, np.ndarray]]:
        raise NotImplementedError

    def check_coal(self) -> None:
        """Raise what :meth:`coal_shapes` would raise, without building what cannot fail (a primitive: nothing)."""

    @property
    def volume(self) -> float:
        """The enclosed volume in m³ (a mesh's from its closed triangle surface; 0 for an empty geometry)."""
        raise NotImplementedError


@dataclass(frozen=True, eq=False)
class Box(Geometry):
    """An axis-aligned box of full edge lengths x, y, z centred at its pose."""

    x: float = 0.0
    y: float = 0.0
    z: float = 0.0
    type_name: ClassVar[str] = "box"

    def parameters_json(self) -> dict:
        return {"x": self.x, "y": self.y, "z": self.z}

    @property
    def volume(self) -> float:
        return float(self.x * self.y * self.z)

    def _make_coal(self):
        import coal

        return [(coal.Box(self.x, self.y, self.z), self.pose)]


@dataclass(frozen=True, eq=False)
class Cylinder(Geometry):
    """A cylinder of radius r and full length z along its pose's z axis, centred at its pose."""

    r: float = 0.0
    z: float = 0.0
    type_name: ClassVar[str] = "cylinder"

    def parameters_json(self) -> dict:
        return {"r": self.r, "z": self.z}

    @property
    def volume(self) -> float:
        return float(math.pi * self.r**2 * self.z)

    def _make_coal(self):
        import coal

        return [(coal.Cylinder(self.r, self.z), self.pose)]


@dataclass(frozen=True, eq=False)
class Sphere(Geometry):
    """A sphere of radius r centred at its pose."""

    r: float = 0.0
    type_name: ClassVar[str] = "sphere"

    def parameters_json(self) -> dict:
        return {"r": self.r}

    @property
    def volume(self) -> float:
        return float(4 / 3 * math.pi * self.r**3)

    def _make_coal(self):
        import coal

        return [(coal.Sphere(self.r), self.pose)]


@dataclass(frozen=True, eq=False)
class Mesh(Geometry):
    """A mesh file (STL/OBJ/DAE, or a VRML convex decomposition) scaled and placed at its pose.

    ``file`` is the path as written in the JSON (relative to the module set's folder); ``path`` is the
    resolved, existing file.
    """

    file: str = ""
    path: Path = Path()
    scale: tuple[float, float, float] = (1.0, 1.0, 1.0)
    source: tuple[str | None, str | None] = (None, None)  # (JSON file, JSON path) that named the mesh
    missing: bool = False  # the file was absent and skipped on request: no shapes, written back unchanged
    scalar_scale: bool = False  # the JSON gave one number for all three axes
    type_name: ClassVar[str] = "mesh"

    def parameters_json(self) -> dict:
        if self.scalar_scale and len(set(self.scale)) == 1:
            return {"file": self.file, "scale": float(self.scale[0])}
        return {"file": self.file, "scale": [float(s) for s in self.scale]}

    @property
    def is_convex_decomposition(self) -> bool:
        """True for VRML files, which hold one convex piece per shape."""
        return self.path.suffix.lower() == ".wrl"

    def load(self):
        """The triangle data (``MeshData`` or ``ConvexParts``), loaded once and cached."""
        from timor_core.model.meshes import load_mesh

        try:
            return load_mesh(self.path, self.scale, json_file=self.source[0], json_path=self.source[1])
        except MeshError as exc:
            if self.source[0] is None:
                raise
            raise MeshError(exc.message, file=exc.file, path=exc.path, value=self.file) from None

    @property
    def volume(self) -> float:
        """From the closed triangle surface (each convex piece of a decomposition summed), scale applied."""
        data = self.load()
        parts = getattr(data, "parts", (data,))
        return float(sum(abs(part.volume) for part in parts))

    def check_coal(self) -> None:
        """The file loaded (a bad one: a MeshError naming it), a convex decomposition's hulls built (a degenerate
        piece: a MeshError); a triangle mesh's BVH tree, which cannot fail, is left to :meth:`coal_shapes`."""
        if self.missing:
            return
        from timor_core.model.meshes import ConvexParts

        if isinstance(self.load(), ConvexParts):
            self.coal_shapes()

    def _make_coal(self):
        from timor_core.model.meshes import ConvexParts, to_coal_bvh, to_coal_convex

        if self.missing:
            return []
        data = self.load()
        if isinstance(data, ConvexParts):
            return [(to_coal_convex(part), self.pose) for part in data.parts]
        return [(to_coal_bvh(data), self.pose)]


@dataclass(frozen=True, eq=False)
class Empty(Geometry):
    """No geometry (a body that is invisible or never collides)."""

    type_name: ClassVar[str] = "empty"

    def parameters_json(self) -> dict:
        return {}

    def _make_coal(self):
        return []

    @property
    def volume(self) -> float:
        return 0.0


def unread_fields(geometry: Geometry) -> list[tuple[str, str]]:
    """What a geometry's JSON held that no reader uses, as (JSON path below the geometry, field): its own fields
    (``""``) and the parameters its type does not read (``".parameters"``: ``w`` of a box)."""
    out = [("", k) for k in geometry.extra if not k.startswith("_")]
    return out + [(".parameters", k) for k in geometry.extra.get(UNREAD_PARAMETERS, {})]


def geometry_from_json(
    data: Any, path: str, base_dir: Path | None = None, json_file: Path | None = None, missing: str = "error"
) -> Geometry:
    """Parse one CoBRA geometry object; meshes are resolved (and must exist) relative to ``base_dir``.

    ``missing="skip"`` turns a mesh file that does not exist (inside ``base_dir``) into a logged warning and
    a ``Mesh`` with ``missing=True`` that has no collision shapes but is written back unchanged.
    """
    d = jf.obj(data, path)
    kind = jf.string(jf.req(d, "type", path), f"{path}.type")
    params = jf.obj(d.get("parameters", {}), f"{path}.parameters")
    ppath = f"{path}.parameters"
    T = jf.pose(d["pose"], f"{path}.pose") if "pose" in d else IDENTITY
    extra = {k: v for k, v in d.items() if k not in ("type", "parameters", "pose")}
    unread = {k: v for k, v in params.items() if k not in GEOMETRY_PARAMETERS.get(kind, ())}
    if unread:  # kept for the round trip; ``timor task validate`` and ``timor db validate`` name them
        extra[UNREAD_PARAMETERS] = unread

    def positive(key: str) -> float:
        return jf.number(jf.req(params, key, ppath), f"{ppath}.{key}", min_value=0.0)

    if kind == "box":
        return Box(pose=T, extra=extra, x=positive("x"), y=positive("y"), z=positive("z"))
    if kind == "cylinder":
        return Cylinder(pose=T, extra=extra, r=positive("r"), z=positive("z"))
    if kind == "sphere":
        return Sphere(pose=T, extra=extra, r=positive("r"))
    if kind == "mesh":
        return mesh_from_json(params, ppath, T, extra, base_dir, json_file, missing)
    if kind == "empty":
        return Empty(pose=T, extra=extra)
    raise FormatError(
        "unknown geometry type (expected box, cylinder, sphere, mesh or empty)", path=f"{path}.type", value=kind
    )


def mesh_from_json(
    params: dict,
    ppath: str,
    T: np.ndarray,
    extra: dict,
    base_dir: Path | None,
    json_file: Path | None,
    missing: str,
) -> Mesh:
    """The Mesh of a geometry's ``parameters`` (at JSON path ``ppath``): its file resolved inside ``base_dir`` and
    of a known format, its scale (one number or three, none zero); see ``geometry_from_json`` for ``missing``."""
    from timor_core.model.meshes import MESH_EXTENSIONS, resolve_mesh_path

    file_field = jf.string(jf.req(params, "file", ppath), f"{ppath}.file")
    scale = params.get("scale", [1.0, 1.0, 1.0])
    scalar = isinstance(scale, (int, float)) and not isinstance(scale, bool)
    if scalar:
        scale = [scale] * 3
    scale_v = jf.vector(scale, f"{ppath}.scale", 3)
    if np.any(scale_v == 0):  # a negative factor mirrors the mesh (URDF allows it; faces are turned)
        raise ValidationError("mesh scale must not be zero", path=f"{ppath}.scale", value=scale)
    if base_dir is None:
        raise FormatError("a mesh needs the folder of its module set to resolve", path=f"{ppath}.file")
    mesh_scale = (float(scale_v[0]), float(scale_v[1]), float(scale_v[2]))
    source = (str(json_file) if json_file else None, f"{ppath}.file")

    def mesh(mesh_path: Path, absent: bool = False) -> Mesh:
        return Mesh(
            pose=T,
            extra=extra,
            file=file_field,
            path=mesh_path,
            scale=mesh_scale,
            source=source,
            missing=absent,
            scalar_scale=scalar,
        )

    try:
        found = resolve_mesh_path(file_field, base_dir, json_file=json_file, json_path=f"{ppath}.file")
    except MeshError:
        candidate = resolved(Path(base_dir) / file_field)
        inside = candidate.is_relative_to(resolved(Path(base_dir)))
        if missing != "skip" or not inside or _present(candidate):
            raise
        log.warning("%s: %s: mesh file %s not found; skipped", json_file, f"{ppath}.file", file_field)
        return mesh(candidate, absent=True)
    if found.suffix.lower() not in MESH_EXTENSIONS:
        raise MeshError(
            f"unsupported mesh format {found.suffix!r} (supported: {', '.join(sorted(MESH_EXTENSIONS))})",
            file=json_file,
            path=f"{ppath}.file",
            value=file_field,
        )
    return mesh(found)


def _present(path: Path) -> bool:
    """Whether something is at ``path`` (an unusable name, e.g. one too long, counts as present: not skipped)."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    except OSError:
        return True
    return True


def geometries_from_json(
    data: Any, path: str, base_dir: Path | None = None, json_file: Path | None = None, missing: str = "error"
) -> tuple[Geometry, ...]:
    """Parse a geometry list (composed geometry) or a single geometry object."""
    if data is None:
        return ()
    if isinstance(data, dict):
        return (geometry_from_json(data, path, base_dir, json_file, missing),)
    items = jf.array(data, path)
    return tuple(geometry_from_json(g, f"{path}[{i}]", base_dir, json_file, missing) for i, g in enumerate(items))
