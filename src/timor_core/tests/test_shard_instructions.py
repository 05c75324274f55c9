"""``benchmarks/shard_instructions.py`` (a shard's instructions under valgrind): valgrind runs no AVX-512, so the
shard must load its kernels from builds for any CPU in a folder the script owns, never this CPU's builds (which died
with SIGILL); without valgrind, or where a tree's builds for any CPU cannot be had, it refuses saying what to do,
before running anything. Tested without valgrind: the refusals, and which builds the shard's process accepts."""

from __future__ import annotations

import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from timor_core.common.ahead import host_cpu
from timor_core.common.ahead_build import CC, build_kernels
from timor_core.kinematics import ik_kernel
from timor_core.search.filtering import cover_kernel, cut_kernel, proof_kernel

REPO = Path(__file__).resolve().parents[3]
SCRIPT = REPO / "benchmarks" / "shard_instructions.py"
LIBRARY = REPO / "src" / "timor_core"
pytestmark = pytest.mark.skipif(not SCRIPT.is_file(), reason="needs the repository's benchmarks/")


@pytest.fixture(scope="module")
def script():
    """The script as a module (benchmarks/ on the path only while it is imported)."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        return importlib.import_module("shard_instructions")
    finally:
        sys.path.remove(str(SCRIPT.parent))


def _nothing_runs(*args, **kwargs):
    raise AssertionError(f"ran {args[0] if args else kwargs}")


def test_without_valgrind_it_refuses_before_running_anything(script, monkeypatch, capsys):
    monkeypatch.setattr(script.shutil, "which", lambda tool: None)
    monkeypatch.setattr(script.subprocess, "run", _nothing_runs)
    assert script.main(["--before", str(LIBRARY), "task.json"]) == 2
    err = capsys.readouterr().err
    assert "needs valgrind and callgrind_annotate on PATH" in err and "apt-get install valgrind" in err


def test_a_tree_whose_kernels_for_any_cpu_cannot_be_had_is_refused_saying_how(script, tmp_path, monkeypatch, capsys):
    """The 'before' tree cannot build (here: it is no tree): one line naming why and the command that builds them,
    and no shard is run under valgrind."""
    fake = tmp_path / "tree"
    (fake / "timor_core").mkdir(parents=True)
    (fake / "timor_core" / "__init__.py").write_text("raise ImportError('not a timor_core tree')\n")
    monkeypatch.setattr(script.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(script, "count", _nothing_runs)
    assert script.main(["--before", str(fake), "task.json"]) == 2
    err = capsys.readouterr().err
    assert "not a timor_core tree" in err and "valgrind runs no AVX-512" in err
    assert f"PYTHONPATH={fake} python -m timor_core.search.filtering.proof_aot --generic --with-ik" in err


def _shard_prelude(script, folder: Path, sets: str = "SETS") -> subprocess.CompletedProcess:
    """The shard's first lines (the script's PRELUDE) in a process of this tree, loading from ``folder``."""
    code = script.PRELUDE + f"\nimport sys\ngeneric_only(sys.argv[1], {sets})\nprint('loaded')\n"
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(LIBRARY), "TIMOR_COMPILED": "1"}
    return subprocess.run([sys.executable, "-c", code, str(folder)], env=env, capture_output=True, text=True)


def test_the_shard_refuses_a_folder_without_builds_for_any_cpu(script, tmp_path):
    run = _shard_prelude(script, tmp_path)
    assert run.returncode == 1 and "loaded" not in run.stdout
    for kernels in (proof_kernel.AHEAD, cover_kernel.AHEAD, cut_kernel.AHEAD, ik_kernel.AHEAD):
        assert f"no build of the {kernels.what} for any CPU ({kernels.path(tmp_path, generic=True).name})" in run.stderr


def test_the_shard_refuses_a_build_for_this_cpu(script, tmp_path):
    """A build for this CPU in the folder would be loaded first and die under valgrind: refused by name."""
    mine = cut_kernel.AHEAD.path()
    if host_cpu() is None or not mine.is_file():
        pytest.skip("no build of the cut kernel for this CPU in this tree (make builds it)")
    shutil.copy2(mine, tmp_path / mine.name)
    run = _shard_prelude(script, tmp_path, "[cut_kernel.AHEAD]")
    assert run.returncode == 1 and f"{mine.name} is built for this CPU" in run.stderr, run.stderr


def test_the_shard_loads_a_build_for_any_cpu(script, tmp_path):
    """The cut kernel built for any CPU (~10 s) is what the shard's process loads from the folder."""
    if CC is None:
        pytest.skip("this numba has no ahead-of-time compiler")
    built = build_kernels(cut_kernel.AHEAD, tmp_path, cut_kernel.EXPORTS, CC, generic=True)
    cut_kernel.AHEAD.forget()  # (this process looks in its own folder again)
    assert host_cpu() is None or not built.name.split(".")[0].endswith(host_cpu())
    run = _shard_prelude(script, tmp_path, "[cut_kernel.AHEAD]")
    assert run.returncode == 0 and run.stdout.strip() == "loaded", run.stderr
