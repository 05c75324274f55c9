"""Files a mesh names (session 57): an OBJ's ``mtllib`` and a COLLADA file's textures are never opened, since timor
reads only the geometry. trimesh, given the mesh's path, opened them: a ``mtllib`` naming a FIFO beside the mesh
hung the load of a module set forever."""

from __future__ import annotations

import os
import textwrap
import time

import pytest
from hostile import run_python, time_cap

from timor_core.model.meshes import clear_mesh_cache, load_mesh

TRIANGLE = "v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 3\n"


@pytest.fixture(autouse=True)
def _fresh_cache():
    clear_mesh_cache()
    yield
    clear_mesh_cache()


def test_an_obj_whose_material_library_is_a_fifo_loads_at_once(tmp_path):
    os.mkfifo(tmp_path / "parts.mtl")  # nobody ever writes it: opening it for reading blocks
    (tmp_path / "link.obj").write_text("mtllib parts.mtl\nusemtl red\n" + TRIANGLE)
    start = time.monotonic()
    with time_cap(10):  # a wall-clock alarm: trimesh swallowed it in the blocked open and went on after 10 s
        mesh = load_mesh(tmp_path / "link.obj")
    assert time.monotonic() - start < 5.0
    assert mesh.faces.tolist() == [[0, 1, 2]]


def test_loading_a_mesh_opens_no_file_but_the_mesh(tmp_path):
    (tmp_path / "parts.mtl").write_text("newmtl red\nKd 1 0 0\nmap_Kd texture.png\n")
    (tmp_path / "texture.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    (tmp_path / "link.obj").write_text("mtllib parts.mtl\nusemtl red\n" + TRIANGLE)
    code = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from timor_core.model.meshes import load_mesh
        opened = []
        sys.addaudithook(lambda event, args: opened.append(str(args[0])) if event == "open" else None)
        mesh = load_mesh(Path({str(tmp_path / "link.obj")!r}))
        print(len(mesh.faces), sorted({{p for p in opened if p.startswith({str(tmp_path)!r})}}))
        """
    )
    proc = run_python(code, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split(" ", 1) == ["1", f"[{str(tmp_path / 'link.obj')!r}]\n"]
