"""What the tests of the two ahead-of-time builds share (``test_ik_aot.py``, ``test_proof_aot.py``): a build of one
set's kernels in a folder of its own that held an older build, made once per test file (each file is one
``xdist_group``, so one worker builds it), the build already in place where a test only needs some build, that set's
folder, memo and the compiled-kernels choice put back after each test, and the check of a numba without
``numba.pycc``."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
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
