"""What :func:`timor_core.common.jit_cache.prune` keeps: every file it cannot judge stale (an index of another numba
version or one that does not read, the ahead-of-time builds, numba's temporary files, files that are not numba's) and
every file of a compile or a load under way in another process (numba writes a kernel's index before its data, and a
load that finds its data gone compiles anew)."""

from __future__ import annotations

import hashlib
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from timor_core.common import jit_cache
from timor_core.common.jit_cache import prune

PY = f"py{sys.version_info[0]}{sys.version_info[1]}{getattr(sys, 'abiflags', '')}"
_MODULE = "import numba\n\n\n@numba.njit(cache=True)\ndef one(x):\n    return x + 1.0\n"


def _index(path: Path, version: str, stamp: object) -> None:
    """An index as numba writes it: its version, then the pickled ``(stamp, overloads)``."""
    with open(path, "wb") as f:
        pickle.dump(version, f, protocol=-1)
        f.write(pickle.dumps((stamp, {}), protocol=-1))


def test_prune_keeps_what_it_cannot_judge_and_removes_the_stale_and_the_orphaned(tmp_path, monkeypatch):
    """In ``__pycache__``: the files of an index written for another text go, and a data file without any index; an
    index of another numba version, one that does not read (and their data), a fresh index, numba's temporary files,
    the ahead-of-time ``.so`` builds and other files stay; a folder where nothing can be removed raises nothing."""
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    package = tmp_path / "package"
    cache = package / "__pycache__"
    cache.mkdir(parents=True)
    (package / "kern.py").write_text(_MODULE)
    now = hashlib.sha256((package / "kern.py").read_bytes()).digest()
    version = jit_cache._caching().numba.__version__
    _index(cache / "kern.one-4.py311.nbi", version, now)  # fresh
    _index(cache / "kern.old-9.py311.nbi", version, b"another text")  # stale
    _index(cache / "kern.other-4.py311.nbi", "0.1.0", b"another text")  # another numba's
    _index(cache / "gone.one-4.py311.nbi", "0.1.0", b"another text")  # another numba's, its module gone
    (cache / "kern.torn-4.py311.nbi").write_bytes(b"not a pickle")
    for base in ("kern.one-4.py311", "kern.old-9.py311", "kern.other-4.py311", "gone.one-4.py311", "kern.torn-4.py311"):
        (cache / f"{base}.1.nbc").write_bytes(b"data")
    (cache / "kern.lone-7.py311.1.nbc").write_bytes(b"data")  # its index removed: never read
    kept = [
        "kern.one-4.py311.nbi.tmp.0123456789abcdef",  # numba writing an index
        "kern.one-4.py311.2.nbc.tmp.0123456789abcdef",  # numba writing data
        "proof_aot_871bd598db34025b_15475692f468.cpython-311-x86_64-linux-gnu.so",
        "ik_aot_401d34e16fa15871_generic.cpython-311-x86_64-linux-gnu.so",
        "kern.cpython-311.pyc",
        "notes.txt",
    ]
    for name in kept:
        (cache / name).write_bytes(b"x")
    before = {p.name for p in cache.iterdir()}
    stale = {"kern.old-9.py311.nbi", "kern.old-9.py311.1.nbc", "kern.lone-7.py311.1.nbc"}

    real_unlink = os.unlink

    def refused(path, *args, **kwargs):
        raise PermissionError(13, "read-only", str(path))

    monkeypatch.setattr(os, "unlink", refused)  # (a read-only folder: as root, chmod would not refuse)
    assert prune(package) == []
    assert {p.name for p in cache.iterdir()} == before
    monkeypatch.setattr(os, "unlink", real_unlink)

    assert {p.name for p in prune(package)} == stale
    assert {p.name for p in cache.iterdir()} == before - stale
    assert prune(package) == []


_CHILD = """
import os, sys
from pathlib import Path
from numba.core import caching
from timor_core.common.jit_cache import prune

folder, drop = Path(sys.argv[1]), sys.argv[2] == "drop"
removed = []
files = caching.IndexDataCacheFile
save_data, load_data = files._save_data, files._load_data


def saving(self, name, data):  # another process prunes between numba's index and its data
    removed.extend(prune(folder))
    save_data(self, name, data)


def loading(self, name):  # another process prunes between numba's index read and its data read
    if drop:
        os.unlink(self._index_path)  # (and another removed the index meanwhile)
    removed.extend(prune(folder))
    return load_data(self, name)


files._save_data, files._load_data = saving, loading
import kern

print(kern.one(1.0), sum(kern.one.stats.cache_hits.values()), sorted(p.name for p in removed))
"""


@pytest.mark.slow
def test_a_prune_amid_numbas_save_or_load_breaks_neither(tmp_path):
    """Pruned between numba's index and data writes, nothing of the kernel goes and the next process loads it from
    the cache; pruned just before a load reads its data, nothing goes; where the index is gone by then, the prune
    removes the data and numba compiles anew (the right value, no error) and caches it again."""
    package = tmp_path / "package"
    package.mkdir()
    (package / "kern.py").write_text(_MODULE)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")

    def run(drop: bool = False) -> str:
        out = subprocess.run([sys.executable, "-c", _CHILD, str(package), "drop" if drop else "keep"], cwd=package,
                             env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert run() == "2.0 0 []"  # compiled, saved with a prune amid: nothing removed
    names = {p.name for p in (package / "__pycache__").iterdir() if ".nb" in p.name}
    assert names == {f"kern.one-4.{PY}.nbi", f"kern.one-4.{PY}.1.nbc"}, names
    assert run() == "2.0 1 []"  # loaded from the cache, a prune amid: nothing removed
    assert run(drop=True) == f"2.0 0 ['kern.one-4.{PY}.1.nbc']"  # its data removed under it: compiled anew
    assert run() == "2.0 1 []"  # and cached again
