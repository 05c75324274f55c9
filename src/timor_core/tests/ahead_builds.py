"""What the tests of the two ahead-of-time builds share (``test_ik_aot.py``, ``test_proof_aot.py``): a build of one
set's kernels in a folder of its own that held an older build, made once per test file (each file is one
``xdist_group``, so one worker builds it) only where the build for the sources as they are is not in place (``make
test`` makes that one before the suite with the same ``build``, ~7-11 CPU-s a set: the comparisons then run on it),
that set's folder, memo and the compiled-kernels choice put back after each test, the check of a real build's files
on a one-kernel build (older sources' builds removed, other CPUs' kept, no temporary files left), and the check of a
numba without ``numba.pycc``."""

from __future__ import annotations

import importlib
import types
from collections.abc import Callable, Iterable, Iterator
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from timor_core.common import compiled
from timor_core.errors import TimorError


def fixtures(kernel: ModuleType, builder: str) -> tuple[Any, Any, Any, Callable[[Path], None]]:
    """For the kernels of ``kernel`` (``ik_kernel`` or ``proof_kernel``: its ``AHEAD_FOLDER`` and ``AHEAD``), built by
    the module named ``builder`` (its ``build(folder)``): an autouse fixture putting the defaults back after each
    test, the module-scoped fixtures ``built`` (the folder of a build made here) and ``present`` (a folder holding a
    build for the sources as they are) and ``use(folder)`` (look for the build there)."""

    def use(folder: Path) -> None:
        kernel.AHEAD_FOLDER = folder
        kernel.AHEAD.forget()

    @pytest.fixture(autouse=True)
    def defaults_after() -> Iterator[None]:
        folder = kernel.AHEAD_FOLDER
        yield
        use(folder)
        compiled.use_compiled(None)

    @pytest.fixture(scope="module")
    def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
        """A build of the kernels (~10-15 s of CPU) in a folder of its own that held an older build: that one is
        removed, and no temporary files are left."""
        folder = tmp_path_factory.mktemp("ahead")
        stale = folder / f"{kernel.AHEAD.prefix}_0123456789abcdef{EXTENSION_SUFFIXES[0]}"
        stale.write_bytes(b"an older build")
        path = importlib.import_module(builder).build(folder)
        assert path.parent == folder and path.is_file() and not stale.exists()
        assert sorted(p.name for p in folder.iterdir()) == [path.name], "no temporary files left"
        return folder

    @pytest.fixture(scope="module")
    def present(request: pytest.FixtureRequest) -> Path:
        """The default folder where it holds the build for the sources as they are (``make test`` and ``make venv``
        build there: ``python -m timor_core.search.filtering.proof_aot --with-ik``), else ``built``: for the tests
        that need some build to look at, not a new one (a build costs ~10 CPU-s)."""
        folder = kernel.AHEAD_FOLDER
        return folder if kernel.AHEAD.path(folder).is_file() else request.getfixturevalue("built")

    return defaults_after, built, present, use


def kernel_files(kernels: Iterable[Any]) -> dict[str, set[str]]:
    """Per numba kernel (a dispatcher, its ``py_func``) reached from ``kernels`` through the compiled functions their
    code names (directly or not), by name: the files of the kernels it reaches, its own first. What numba compiles
    into a kernel's machine code: the files whose text must name its cache and a build of it."""
    reached: dict[int, tuple[str, set[str]]] = {}

    def files(function: types.FunctionType) -> set[str]:
        if id(function) not in reached:
            reached[id(function)] = (function.__name__, {Path(function.__code__.co_filename).name})
            codes, names = [function.__code__], set()
            while codes:  # (the code and the code objects nested in it)
                code = codes.pop()
                names |= set(code.co_names)
                codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
            called = [g.py_func for n in sorted(names) if hasattr(g := function.__globals__.get(n), "py_func")]
            for callee in called:
                reached[id(function)][1].update(files(callee))
        return reached[id(function)][1]

    for kernel in kernels:
        files(kernel.py_func)
    return {name: found for name, found in reached.values()}


def _twice(x: float) -> float:
    return 2.0 * x


def check_build_files(folder: Path) -> None:
    """A real build (numba's ahead-of-time compiler, a one-kernel module: ~2.5 CPU-s against ~7-11 for a set's
    kernels) in ``folder`` beside older builds of the same prefix (for any CPU and for another CPU), a build of the
    same sources for another CPU and another module's build: the file is in ``folder`` and loads with the kernel's
    results, the older builds are removed, the others kept, no temporary files are left, and a second build of the
    same file is a no-op."""
    from timor_core.common import ahead_build
    from timor_core.common.ahead import load_module

    suffix = EXTENSION_SUFFIXES[0]
    target = folder / f"tiny_aot_fedcba9876543210{suffix}"
    stale = [folder / f"tiny_aot_0123456789abcdef{suffix}", folder / f"tiny_aot_0123456789abcdef_0123456789ab{suffix}"]
    kept = [folder / "other_aot_0123.so", folder / f"tiny_aot_fedcba9876543210_0123456789ab{suffix}"]
    for path in stale + kept:
        path.write_bytes(b"another build")
    path = ahead_build.build_module(target, {"twice": (_twice, "f8(f8)")}, "tiny kernels", ahead_build.CC)
    assert path == target and path.is_file() and not any(p.exists() for p in stale) and all(p.exists() for p in kept)
    assert sorted(p.name for p in folder.iterdir()) == sorted(p.name for p in [path, *kept]), "no temporary files left"
    module = load_module(path, "tiny kernels", ["twice"])
    assert module is not None and module.twice(2.5) == 5.0
    built_at = path.stat().st_mtime_ns
    assert ahead_build.build_module(target, {}, "tiny kernels", None) == target and path.stat().st_mtime_ns == built_at


def check_no_compiler(kernel: ModuleType, builder: str, folder: Path, monkeypatch: pytest.MonkeyPatch,
                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """With ``numba.pycc`` missing (``builder``'s ``CC`` None): ``build(folder)`` raises a TimorError naming the
    ahead-of-time compiler, the command exits 1 naming ``numba.pycc`` on stderr, nothing is written in ``folder``,
    and ``kernel`` finds no build there."""
    module = importlib.import_module(builder)
    monkeypatch.setattr(module, "CC", None)
    with pytest.raises(TimorError, match="ahead-of-time compiler"):
        module.build(folder)
    assert module.main(["--folder", str(folder)]) == 1
    assert "numba.pycc" in capsys.readouterr().err
    assert not any(folder.iterdir())
    kernel.AHEAD_FOLDER = folder
    kernel.AHEAD.forget()
    assert kernel.ahead() is None
