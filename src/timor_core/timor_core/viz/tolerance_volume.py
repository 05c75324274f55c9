"""The region of TCP positions a tolerance allows, as a triangle mesh (for viewers and videos).

Every family of position projections in one frame spans a solid in its own coordinates: a box for ``x``/``y``/``z``,
a sector of a hollow cylinder for ``r_cyl``/``phi_cyl`` (with ``z``), a sector of a hollow sphere for
``r_sph``/``theta``/``phi_sph``. The allowed region is the intersection of these solids (placed at the nominal
position, with the axes of their frame), computed with manifold's exact mesh booleans. Only the discretization of
curved faces is approximate. Unbounded sides are cut at ``span``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import trimesh

from timor_core.kinematics.tolerance_base import POSITION_PROJECTIONS, Interval

__all__ = ["tolerance_volume", "DEFAULT_SPAN"]

#: How far (m) an unbounded side of a tolerance volume is drawn.
DEFAULT_SPAN = 0.05

#: Segments per full turn of a curved face.
SEGMENTS = 48

_FAMILIES = {"box": ("x", "y", "z"), "cyl": ("r_cyl", "phi_cyl", "z"), "sph": ("r_sph", "theta", "phi_sph")}
_FULL = {
    "x": Interval(-math.inf, math.inf),
    "y": Interval(-math.inf, math.inf),
    "z": Interval(-math.inf, math.inf),
    "r_cyl": Interval(0.0, math.inf),
    "r_sph": Interval(0.0, math.inf),
    "phi_cyl": Interval(-math.pi, math.pi),
    "phi_sph": Interval(-math.pi, math.pi),
    "theta": Interval(0.0, math.pi),
}
_ANGLES = ("phi_cyl", "phi_sph", "theta")


def _cylindrical(p: np.ndarray) -> np.ndarray:
    r, phi, z = p.T
    return np.column_stack((r * np.cos(phi), r * np.sin(phi), z))


def _spherical(p: np.ndarray) -> np.ndarray:
    r, theta, phi = p.T
    return np.column_stack((r * np.sin(theta) * np.cos(phi), r * np.sin(theta) * np.sin(phi), r * np.cos(theta)))


def _parametric_solid(
    mapping: Callable[[np.ndarray], np.ndarray], ranges: Sequence[tuple[float, float]], steps: Sequence[int]
) -> trimesh.Trimesh | None:
    """The image of a parameter box under ``mapping``: its six faces as grids, mapped, then welded.

    Faces that collapse (a radius of 0, a polar angle of 0 or pi) drop out as degenerate triangles; faces that meet
    themselves (a full turn in azimuth) drop out in pairs. None if nothing closed is left.
    """
    vertices, faces = [], []
    offset = 0
    for axis in range(3):
        a, b = (axis + 1) % 3, (axis + 2) % 3
        ua = np.linspace(*ranges[a], steps[a] + 1)
        ub = np.linspace(*ranges[b], steps[b] + 1)
        A, B = np.meshgrid(ua, ub, indexing="ij")
        for side in (0, 1):
            p = np.empty((A.size, 3))
            p[:, axis], p[:, a], p[:, b] = ranges[axis][side], A.ravel(), B.ravel()
            vertices.append(mapping(p))
            idx = np.arange(A.size).reshape(A.shape) + offset
            q00, q10, q01, q11 = idx[:-1, :-1], idx[1:, :-1], idx[:-1, 1:], idx[1:, 1:]
            tri = np.concatenate(
                (np.stack((q00, q10, q11), -1).reshape(-1, 3), np.stack((q00, q11, q01), -1).reshape(-1, 3))
            )
            faces.append(tri if side else tri[:, ::-1])
            offset += A.size
    mesh = trimesh.Trimesh(np.concatenate(vertices), np.concatenate(faces), process=True)
    mesh.update_faces(mesh.nondegenerate_faces(height=1e-12))
    keys = np.sort(mesh.faces, axis=1)
    _, inverse, counts = np.unique(keys, axis=0, return_inverse=True, return_counts=True)
    mesh.update_faces(counts[inverse.ravel()] == 1)
    mesh.remove_unreferenced_vertices()
    trimesh.repair.fix_normals(mesh)
    return mesh if len(mesh.faces) and mesh.is_watertight else None


def _family_solid(family: str, iv: dict[str, Interval], span: float) -> trimesh.Trimesh | None:
    """One family's solid in its frame's coordinates (origin at the nominal position)."""

    def cut(name: str) -> tuple[float, float]:
        low, high = iv[name].low, iv[name].high
        if name in _ANGLES:
            return low, high
        c = min(max(0.0, low), high)  # the interval's point nearest 0
        return (low if math.isfinite(low) else c - span), (high if math.isfinite(high) else c + span)

    if family == "box":
        lows, highs = zip(*(cut(n) for n in ("x", "y", "z")))
        if min(h - lo for lo, h in zip(lows, highs)) <= 0:
            return None
        box = trimesh.creation.box(extents=np.subtract(highs, lows))
        box.apply_translation((np.add(lows, highs)) / 2)
        return box
    names = _FAMILIES[family]
    ranges = [cut(n) for n in names]
    if ranges[0][1] <= 0:  # the radius is bounded to 0: no volume
        return None
    steps = [1 if n not in _ANGLES else max(2, math.ceil(SEGMENTS * (r[1] - r[0]) / (2 * math.pi)))
             for n, r in zip(names, ranges)]  # fmt: skip
    return _parametric_solid(_cylindrical if family == "cyl" else _spherical, ranges, steps)


def tolerance_volume(tolerance, nominal: np.ndarray, span: float = DEFAULT_SPAN) -> trimesh.Trimesh | None:
    """The region of allowed TCP positions of a tolerance around a nominal pose, as a mesh in the world.

    None if the tolerance bounds no position, or the region is empty or under a millimetre across (it would not be
    visible). Rotation projections are not drawn.
    """
    nominal = np.asarray(nominal, dtype=float)
    groups: dict[str, tuple[np.ndarray, dict[str, Interval]]] = {}
    for part in tolerance.parts:
        if part.projection not in POSITION_PROJECTIONS:
            continue
        rotation, intervals = groups.setdefault(part.frame.name, (part.frame.matrix(nominal[:3, :3]), dict(_FULL)))
        merged = intervals[part.projection].intersect(part.interval)
        if merged is None:
            return None
        intervals[part.projection] = merged
    placed: list[tuple[str, np.ndarray, dict[str, Interval]]] = []
    for frame, (rotation, intervals) in groups.items():
        constrained = {p.projection for p in tolerance.parts if p.frame.name == frame}
        if constrained & {"r_cyl", "phi_cyl"}:
            placed.append(("cyl", rotation, intervals))
        if constrained & {"r_sph", "theta", "phi_sph"}:
            placed.append(("sph", rotation, intervals))
        if constrained & {"x", "y"} or ("z" in constrained and not constrained & {"r_cyl", "phi_cyl"}):
            placed.append(("box", rotation, intervals))
    solids: list[trimesh.Trimesh] = []
    for family, rotation, intervals in sorted(placed, key=lambda p: p[0] == "box"):
        # a box's open sides reach past the round solids it is cut with (radii are about the nominal position)
        reach = max([span] + [1.01 * float(np.linalg.norm(s.vertices - nominal[:3, 3], axis=1).max()) for s in solids])
        solid = _family_solid(family, intervals, reach if family == "box" else span)
        if solid is None:
            return None
        T = np.eye(4)
        T[:3, :3], T[:3, 3] = rotation, nominal[:3, 3]
        solids.append(solid)
        solid.apply_transform(T)
    if not solids:
        return None
    region = solids[0] if len(solids) == 1 else trimesh.boolean.intersection(solids, engine="manifold")
    if region.is_empty or region.extents.max() < 1e-3:
        return None
    return region
