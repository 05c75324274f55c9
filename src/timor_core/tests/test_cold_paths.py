"""What a fresh process loads on its way to a URDF or a robot (issue 25, cold start): reading a module set with
meshes and writing its URDF import neither coal nor Pinocchio; the faster rigid-transform check says what
``np.allclose`` said."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import IMPROV_FILE
from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core.common.transforms import is_rigid

SRC = str(Path(__file__).resolve().parents[1])
HEAVY = (
    "pinocchio", "coal", "scipy", "trimesh", "matplotlib", "pygad", "networkx", "manifold3d", "viser", "yaml", "numba",
)  # fmt: skip


def _is_rigid_with_allclose(T: np.ndarray, tol: float = 1e-6) -> bool:
    """The check as it was written before (np.allclose)."""
    if T.shape != (4, 4) or not np.all(np.isfinite(T)):
        return False
    if not np.allclose(T[3], (0.0, 0.0, 0.0, 1.0), atol=tol):
        return False
    R = T[:3, :3]
    return bool(np.allclose(R.T @ R, np.eye(3), atol=tol) and abs(np.linalg.det(R) - 1.0) < tol)


@settings(max_examples=400, deadline=None)
@given(
    axis=st.lists(st.floats(-1, 1), min_size=3, max_size=3),
    angle=st.floats(-4, 4),
    t=st.lists(st.floats(-1e3, 1e3), min_size=3, max_size=3),
    noise=st.sampled_from([0.0, 1e-9, 3e-7, 9e-7, 1.1e-6, 5e-6, 1e-3]),
    where=st.integers(0, 15),
    mirror=st.booleans(),
)
def test_is_rigid_says_what_allclose_said(axis, angle, t, noise, where, mirror):
    a = np.asarray(axis)
    a = a / np.linalg.norm(a) if np.linalg.norm(a) > 1e-6 else np.array([0.0, 0.0, 1.0])
    K = np.array([[0, -a[2], a[1]], [a[2], 0, -a[0]], [-a[1], a[0], 0]])
    T = np.eye(4)
    T[:3, :3] = np.eye(3) + np.sin(angle) * K + (1 - np.cos(angle)) * K @ K
    if mirror:
        T[:3, 0] *= -1
    T[:3, 3] = t
    T.flat[where] += noise
    assert is_rigid(T) == _is_rigid_with_allclose(T)


def test_the_urdf_of_a_module_set_with_meshes_needs_neither_coal_nor_pinocchio():
    if not IMPROV_FILE.is_file():
        pytest.skip(f"real IMPROV data not available (expected {IMPROV_FILE})")
    code = f"""
import io, json, sys
from contextlib import redirect_stdout
from timor_core.cli.app import main
with redirect_stdout(io.StringIO()) as out:
    code = main(["urdf", {str(IMPROV_FILE)!r}, "1", "21", "4", "21", "5", "23", "12"])
print(json.dumps({{"code": code, "meshes": out.getvalue().count("<mesh "),
                  "heavy": [m for m in {HEAVY!r} if m in sys.modules]}}))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=SRC)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["code"] == 0 and got["meshes"] > 0 and got["heavy"] == [], got
