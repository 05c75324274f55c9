"""numba's on-disk cache for kernels that call into other files (``common/jit_cache.py``): keyed by those files'
text, so a change there (``box_bounds.cos_sin`` under ``sweep_bound._collisions``) is compiled anew, never loaded
stale from the cache; the proofs' composed kernels and the IK's tries are keyed so."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ahead_builds
import pytest

from timor_core.common import jit_cache
from timor_core.common.jit_cache import cache_folders, keyed, prune, sources_digest, user_wide_folder

_KERNEL = """
import sys
import numba
import helper
from timor_core.common.jit_cache import keyed

jit = numba.njit(cache=True)
step = jit(helper.step)


def twice(x):
    return 2.0 * step(x)


kernel = keyed(twice, [helper.__file__]) if sys.argv[1] == "keyed" else twice
print(jit(kernel)(1.0))
"""


def _twice(x: float, k: float = 2.0) -> float:
    return k * x


def test_a_keyed_copy_runs_the_same_and_is_named_by_the_files(tmp_path):
    """The copy computes what the function does; its qualified name ends in the files' digest, the same while they
    are unchanged, another after a change in either."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("x = 1\n")
    b.write_text("y = 2\n")
    copy = keyed(_twice, [a, b])  # type: ignore[arg-type]
    assert copy(3.0) == 6.0 and copy(3.0, k=3.0) == 9.0 and copy.__name__ == _twice.__name__
    assert copy.__qualname__ == f"_twice_{sources_digest([a, b])}" == keyed(_twice, [a, b]).__qualname__  # type: ignore[arg-type]
    b.write_text("y = 3\n")
    assert keyed(_twice, [a, b]).__qualname__ != copy.__qualname__  # type: ignore[arg-type]


@pytest.mark.slow
def test_a_change_in_a_called_file_is_compiled_anew_not_loaded_from_numbas_cache(tmp_path):
    """A cached kernel calling a cached helper of another file, run in a fresh process, the helper's file changed,
    run again: keyed, it gives the new helper's result (numba alone checks only the kernel's file: stale)."""
    (tmp_path / "helper.py").write_text("def step(x):\n    return x + 1.0\n")
    (tmp_path / "kernel.py").write_text(textwrap.dedent(_KERNEL))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"), "PYTHONPATH": os.pathsep.join(
        [str(tmp_path), *sys.path])}  # fmt: skip

    def run() -> str:
        out = subprocess.run([sys.executable, "kernel.py", "keyed"], cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=300)  # fmt: skip
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    assert run() == "4.0"
    assert any((tmp_path / "cache").rglob("*.nbi")), "numba cached the kernel"
    (tmp_path / "helper.py").write_text("def step(x):\n    return x + 2.0  # changed\n")
    assert run() == "6.0"
    kept = sorted(p.name.split("-")[0] for p in (tmp_path / "cache").rglob("kernel.twice_*.nbi"))
    assert kept == [f"kernel.twice_{sources_digest([tmp_path / 'helper.py'])}"], "the old digest's files removed"


def test_the_proofs_composed_kernels_and_the_ik_tries_are_keyed_by_the_files_they_call(monkeypatch):
    """``sweep_bound._collisions`` (``cos_sin`` of ``box_bounds.py``), the fused proof and sweep with their helpers
    are named by the proofs' kernel sources, the IK's tries by ``ik_jit.py``: a change in ``box_bounds.py`` alone
    renames the first."""
    from timor_core.kinematics import ik_jit, ik_jit_tries
    from timor_core.search.filtering import proof_fused, proof_kernel, sweep_bound, sweep_fused

    same = lambda function: function  # noqa: E731 (no compilation: the names are what is checked)
    digest = sources_digest(proof_kernel.AHEAD.sources)
    collisions = sweep_bound.py_kernels(same)["collisions"]
    assert collisions.__qualname__ == f"_collisions_{digest}"
    assert proof_fused.calling_compiled_fused(same).__qualname__ == f"fused_proof_{digest}"
    assert sweep_fused.calling_compiled_sweep(same).__qualname__ == f"fused_sweep_{digest}"
    ik_digest = sources_digest(ik_jit.SOURCES)
    assert ik_jit_tries.run_tries.py_func.__qualname__ == f"run_tries_{ik_digest}"
    assert ik_jit.descend.py_func.__qualname__ == f"descend_{ik_digest}"
    real = Path.read_bytes
    monkeypatch.setattr(Path, "read_bytes", lambda p: real(p) + b"#" if p.name == "box_bounds.py" else real(p))
    assert sweep_bound.py_kernels(same)["collisions"].__qualname__ != collisions.__qualname__


@dataclasses.dataclass(frozen=True)
class _Compiled:
    """What a recording jit gives for a function: the function itself (no compilation)."""

    function: types.FunctionType

    def __call__(self, *args: Any) -> Any:
        return self.function(*args)


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """``code`` and the code objects nested in it (inner functions, comprehensions)."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _calls_other_files(function: types.FunctionType, seen: dict[int, bool]) -> bool:
    """Whether ``function`` calls (directly or through the compiled functions it calls) a function compiled by the
    recording jit from another file: its machine code then holds another file's kernel, which numba's cache never
    checks. numba's own dispatchers it calls (the helpers numba inlines, ``proof_kernel.inlining``) are followed too."""
    if id(function) not in seen:
        seen[id(function)] = False
        called = {name for code in _codes(function.__code__) for name in code.co_names}
        found = [function.__globals__.get(name) for name in sorted(called)]
        helpers = [f.function if isinstance(f, _Compiled) else f.py_func for f in found if hasattr(f, "py_func")
                   or isinstance(f, _Compiled)]  # fmt: skip
        seen[id(function)] = any(
            h.__code__.co_filename != function.__code__.co_filename or _calls_other_files(h, seen) for h in helpers
        )
    return seen[id(function)]


def test_every_composed_function_calling_another_files_kernel_is_keyed():
    """Every function the proofs' compositions give their jit (``fused_proof``, ``fused_sweep``, ``_collisions`` and
    every helper of theirs: ``measure_all``, ``halved``, ...) that calls, directly or not, a compiled function of
    another file has the kernels' digest in its qualified name (an unkeyed helper's stale cache would be linked into a
    fresh kernel); and every kernel of ``ik_jit_tries.py`` (which call ``ik_jit.py``'s) the IK's digest."""
    from timor_core.kinematics import ik_jit, ik_jit_tries
    from timor_core.search.filtering import proof_fused, proof_kernel, sweep_bound, sweep_fused

    received: list[types.FunctionType] = []

    def jit(function: types.FunctionType) -> _Compiled:
        received.append(function)
        return _Compiled(function)

    roots = [proof_fused.calling_compiled_fused(jit), sweep_fused.calling_compiled_sweep(jit)]
    roots.append(sweep_bound.py_kernels(jit)["collisions"])
    digest = sources_digest(proof_kernel.AHEAD.sources)
    seen: dict[int, bool] = {}
    calling = [f for f in received + roots if _calls_other_files(f, seen)]
    assert {"fused_proof", "fused_sweep", "_collisions", "measure_all", "halved", "measure_lanes"} <= {
        f.__name__ for f in calling
    }  # (measure_lanes: cos_sin of box_bounds.py under the helpers numba inlines into it)
    helpers = [f for f in received if f.__name__ in {*proof_fused.HELPERS, *sweep_fused.HELPERS}]
    assert {f.__name__ for f in helpers} == {*proof_fused.HELPERS, *sweep_fused.HELPERS}
    unkeyed = sorted({f.__qualname__ for f in calling + helpers if not f.__qualname__.endswith(f"_{digest}")})
    assert not unkeyed, f"composed functions calling other files' kernels without the digest: {unkeyed}"
    ik_digest = sources_digest(ik_jit.SOURCES)
    own = [k for k in vars(ik_jit_tries).values() if getattr(k, "__module__", "") == ik_jit_tries.__name__]
    kernels = [k.py_func for k in own if getattr(k, "py_func", None) is not None]
    assert {k.__name__ for k in kernels} == {"run_tries", "plateau_stop", "within"}
    assert all(k.__qualname__.endswith(f"_{ik_digest}") for k in kernels)


def test_every_ik_kernel_calling_another_files_kernel_is_keyed_by_those_files():
    """The IK's descents (``ik_jit.py``) call the goal's residual (``ik_jit_residual.py``) and the tries
    (``ik_jit_tries.py``) both: every kernel of theirs that reaches (directly or not) a kernel of another file is named
    by the digest of ``ik_jit.SOURCES``, which holds every file reached (one left out: an edit there would leave
    numba's stale machine code in use)."""
    pytest.importorskip("numba")
    from timor_core.kinematics import ik_jit, ik_jit_residual, ik_jit_tries

    modules = (ik_jit, ik_jit_residual, ik_jit_tries)
    kernels = [k for m in modules for k in vars(m).values() if getattr(k, "__module__", "") == m.__name__]
    reached = ahead_builds.kernel_files(k for k in kernels if hasattr(k, "py_func"))
    by_name = {k.py_func.__name__: k.py_func for k in kernels if hasattr(k, "py_func")}
    across = {name for name, files in reached.items() if len(files) > 1}
    assert {"descend", "best_start", "linearize", "_pose_terms", "run_tries"} <= across
    assert not across & {"terms", "log3", "forward", "_guard"}  # (their own file's kernels only)
    assert set().union(*reached.values()) - {"ik_jit_tries.py"} <= {p.name for p in ik_jit.SOURCES}
    digest = sources_digest(ik_jit.SOURCES)
    unkeyed = sorted(name for name in across if not by_name[name].__qualname__.endswith(f"_{digest}"))
    assert not unkeyed, f"kernels calling another file's kernels without the digest: {unkeyed}"


_OLD, _OTHER = "0123456789ab", "ba9876543210"


@pytest.mark.parametrize("numba_cache_dir", [False, True])
def test_keying_removes_that_kernels_files_of_other_digests_only(tmp_path, monkeypatch, numba_cache_dir):
    """Keying a kernel removes numba's cache files of that kernel (module and qualified name) under another digest,
    index and data, in ``__pycache__`` beside its file or in ``NUMBA_CACHE_DIR``'s folder for it; the current digest's
    files, another kernel's, another module's and the unkeyed kernel's stay."""
    source, helper = tmp_path / "mod.py", tmp_path / "helper.py"
    source.write_text("def kern(x):\n    return x\n")
    helper.write_text("y = 1\n")
    if numba_cache_dir:
        monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path / "cache"))
    else:
        monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    names: dict[str, Any] = {}
    exec(compile(source.read_text(), str(source), "exec"), names)  # (a function whose file is mod.py)
    digest = sources_digest([helper])
    folder = cache_folders(source)[0]
    folder.mkdir(parents=True)
    stale = [f"mod.kern_{_OLD}-1.py311.nbi", f"mod.kern_{_OLD}-1.py311.1.nbc", f"mod.kern_{_OTHER}-3.py311.2.nbc"]
    kept = [f"mod.kern_{digest}-1.py311.nbi", f"mod.kern_{digest}-1.py311.1.nbc", "mod.kern-1.py311.nbi"]
    kept += [f"mod.kern2_{_OLD}-5.py311.nbi", f"other.kern_{_OLD}-1.py311.nbi", f"mod.kern_{_OLD}-1.py311.txt"]
    for name in stale + kept:
        (folder / name).write_bytes(b"x")
    assert keyed(names["kern"], [helper]).__qualname__ == f"kern_{digest}"
    assert sorted(p.name for p in folder.iterdir()) == sorted(kept)


_CACHED = """
import numba


@numba.njit(cache=True)
def one(x):
    return x + 1.0


@numba.njit(cache=True)
def two(x):
    return x * 2.0


print(one(1.0) + two(1.0))
"""


@pytest.mark.slow
def test_prune_removes_numbas_files_of_a_modules_older_text_from_the_user_wide_folder(tmp_path, monkeypatch):
    """Two modules' kernels cached in numba's user-wide folder (its locator forced, ``XDG_CACHE_HOME`` a temporary
    folder), one module edited so that its kernels move down a line and run again: numba leaves the first text's
    files (named by the old lines); :func:`prune` removes exactly those, index and data, and keeps the new text's, the
    other module's and a file that is not numba's; with nothing stale it removes nothing."""
    package = tmp_path / "package"
    package.mkdir()
    for module in ("kern", "other"):
        (package / f"{module}.py").write_text(_CACHED)
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "xdg"), "NUMBA_CACHE_LOCATOR_CLASSES": "UserWideCacheLocator"}
    env.pop("NUMBA_CACHE_DIR", None)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)

    def run(module: str) -> set[str]:
        out = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=package, env=env, capture_output=True,
                             text=True, timeout=300)  # fmt: skip
        assert out.returncode == 0 and out.stdout.strip() == "4.0", out.stderr
        return {p.name for p in folder.iterdir()}

    folder = user_wide_folder(package / "kern.py")
    assert folder.parent == tmp_path / "xdg" / "numba"
    run("other")
    first = run("kern")
    old = {name for name in first if name.startswith("kern.")}
    assert len(old) == 4 and all("-5.py" in name or "-10.py" in name for name in old), first
    (folder / "notes.txt").write_text("not numba's")
    assert prune(package) == []
    (package / "kern.py").write_text("# a line more: the kernels move down\n" + _CACHED)
    second = run("kern")
    assert old < second, "numba left the old text's files"
    removed = prune(package)
    assert {p.name for p in removed} == old and all(p.parent == folder for p in removed)
    assert {p.name for p in folder.iterdir()} == second - old
    assert prune(package) == []


def test_keying_prunes_each_kernels_folder_once_a_process(tmp_path, monkeypatch):
    """:func:`keyed` (what the IK's and the proofs' kernels go through on numba's path) prunes the folder of the
    kernel's file, once a process: the product cleans its own kernels' stale cache files where it makes them."""
    pruned: list[Path] = []
    monkeypatch.setattr(jit_cache, "prune", pruned.append)
    jit_cache._prune_once.cache_clear()
    source = tmp_path / "mod.py"
    source.write_text("def kern(x):\n    return x\n")
    names: dict[str, Any] = {}
    exec(compile(source.read_text(), str(source), "exec"), names)
    keyed(names["kern"], [source])
    keyed(names["kern"], [source])
    assert pruned == [tmp_path]
    jit_cache._prune_once.cache_clear()
