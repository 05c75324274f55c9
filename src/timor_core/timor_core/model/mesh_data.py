"""Triangle meshes as immutable data: a mesh (vertices, faces) and a convex decomposition (pieces)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np

from timor_core.errors import MeshError

__all__ = ["MeshData", "ConvexParts", "readonly_array"]


def readonly_array(array: np.ndarray) -> np.ndarray:
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
        object.__setattr__(self, "vertices", readonly_array(vertices))
        object.__setattr__(self, "faces", readonly_array(faces))

    @cached_property
    def bounds(self) -> np.ndarray:
        """Axis-aligned bounding box as a read-only (2, 3) array [min, max]."""
        return readonly_array(np.array([self.vertices.min(axis=0), self.vertices.max(axis=0)]))

    @property
    def volume(self) -> float:
        """The signed volume enclosed by the triangles (positive for outward-facing faces of a closed surface)."""
        v = self.vertices[self.faces]
        return float(np.einsum("ij,ij->i", v[:, 0], np.cross(v[:, 1], v[:, 2])).sum() / 6.0)


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
        return readonly_array(np.array([stacked[:, 0].min(axis=0), stacked[:, 1].max(axis=0)]))

    def merged(self) -> MeshData:
        """All parts concatenated into a single MeshData (e.g. for visualisation)."""
        offsets = np.cumsum([0] + [len(part.vertices) for part in self.parts[:-1]])
        return MeshData(
            np.concatenate([part.vertices for part in self.parts]),
            np.concatenate([part.faces + off for part, off in zip(self.parts, offsets, strict=True)]),
        )


# ---------------------------------------------------------------------------------------------------------
