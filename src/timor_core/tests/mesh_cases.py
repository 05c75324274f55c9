"""The unit cube and the signed volume the mesh tests share (test_meshes.py,
test_mesh_vrml.py, test_mesh_coal.py)."""

from __future__ import annotations

import numpy as np

from timor_core.model.meshes import MeshData

# A unit cube [0, 1]^3 as ASCII STL (12 triangles, outward normals).
CUBE_V = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0], [0, 0, 1], [1, 0, 1], [1, 1, 1], [0, 1, 1]], dtype=float)
CUBE_F = np.array(
    [
        [0, 2, 1], [0, 3, 2], [4, 5, 6], [4, 6, 7], [0, 1, 5], [0, 5, 4],
        [1, 2, 6], [1, 6, 5], [2, 3, 7], [2, 7, 6], [3, 0, 4], [3, 4, 7],
    ]
)  # fmt: skip


def signed_volume(mesh: MeshData) -> float:
    a, b, c = (mesh.vertices[mesh.faces[:, k]] for k in range(3))
    return float(np.einsum("ij,ij->i", a, np.cross(b, c)).sum() / 6.0)
