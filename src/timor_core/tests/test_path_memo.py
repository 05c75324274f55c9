"""common/path_memo: within ``resolving_paths`` a path resolves to what ``Path.resolve`` makes of it (the same path,
or the same error), in a tree of folders, files, ``..``, symlinks to files and folders (relative and absolute),
dangling symlinks and symlink loops; and each folder is looked at once, not once per file below it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from timor_core.common.path_memo import resolved, resolving_paths
from timor_core.export.urdf_import.importer import db_from_urdf


def _tree(root: Path) -> None:
    """Folders a/b, files, symlinks of every kind (to a file, to a folder, relative, absolute, dangling, a loop)."""
    (root / "a" / "b").mkdir(parents=True)
    for name in ("a/f.stl", "a/b/g.stl", "h.stl"):
        (root / name).write_text("x")
    links = {
        "a/to_b": "b",  # a folder, relative
        "a/b/up": "..",  # a folder above
        "to_a": str(root / "a"),  # a folder, absolute
        "a/to_f": "f.stl",  # a file, relative
        "a/b/to_h": str(root / "h.stl"),  # a file, absolute
        "dangling": "nowhere/x.stl",
        "loop1": "loop2",
        "loop2": "loop1",
        "a/b/self": "self",
    }
    for name, target in links.items():
        os.symlink(target, root / name)


_PARTS = ["a", "b", "to_b", "up", "to_a", "f.stl", "g.stl", "h.stl", "to_f", "to_h", "dangling", "loop1", "self",
          "..", ".", "missing"]  # fmt: skip


def _outcome(call, path: Path):
    try:
        return call(path)
    except (OSError, RuntimeError, ValueError) as exc:
        return type(exc), str(exc)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(_PARTS), min_size=1, max_size=5), min_size=1, max_size=8))
def test_resolved_in_a_scope_is_path_resolve(paths):
    """Several paths resolved in one scope (so later ones use the folders earlier ones remembered), each asked
    twice: every answer is ``Path.resolve``'s, path or error."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp).resolve()
        _tree(root)
        candidates = [root.joinpath(*parts) for parts in paths]
        expected = [_outcome(Path.resolve, p) for p in candidates]
        with resolving_paths():
            got = [_outcome(resolved, p) for p in candidates + candidates]
        assert got == expected + expected


def test_outside_a_scope_nothing_is_remembered(tmp_path):
    """Outside ``resolving_paths`` a symlink changed between two calls is followed anew; inside, the first answer
    stands (the files are taken not to move during one import)."""
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    os.symlink("one", tmp_path / "link")
    path = tmp_path / "link" / "m.stl"
    with resolving_paths():
        first = resolved(path)
        (tmp_path / "link").unlink()
        os.symlink("two", tmp_path / "link")
        assert resolved(path) == first == tmp_path / "one" / "m.stl"
    assert resolved(path) == tmp_path / "two" / "m.stl"


def test_an_import_looks_at_each_folder_once(tmp_path, monkeypatch):
    """A URDF of 40 links sharing two mesh folders 6 levels down: the import calls ``lstat`` a few times per
    distinct folder and file, not once per folder level per mesh per look-up (about 2,500 before)."""
    folder = tmp_path.joinpath("p", "q", "r", "s", "t", "meshes")
    folder.mkdir(parents=True)
    (folder / "sub").mkdir()
    stl = "solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\n"
    stl += "endsolid t\n"
    for name in ("v.stl", "c.stl", "sub/w.stl"):
        (folder / name).write_text(stl)
    shapes = (("visual", "v.stl"), ("collision", "c.stl"), ("visual", "sub/w.stl"))
    meshes = "".join(f'<{t}><geometry><mesh filename="p/q/r/s/t/meshes/{n}"/></geometry></{t}>' for t, n in shapes)
    links = "".join(f'<link name="l{k}">{meshes}</link>' for k in range(40))
    joints = "".join(f'<joint name="j{k}" type="fixed"><parent link="l{k - 1}"/><child link="l{k}"/></joint>'
                     for k in range(1, 40))  # fmt: skip
    urdf = tmp_path / "r.urdf"
    urdf.write_text(f'<robot name="r">{links}{joints}</robot>')
    calls = []
    lstat = os.lstat

    def counting(path, *args, **kwargs):
        calls.append(path)
        return lstat(path, *args, **kwargs)

    monkeypatch.setattr(os, "lstat", counting)
    db = db_from_urdf(urdf)
    monkeypatch.undo()
    depth = len(tmp_path.parts)
    assert len(next(iter(db)).bodies) == 40
    assert len(calls) <= 3 * (depth + 12), len(calls)
