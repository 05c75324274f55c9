"""Bring-up packages built as ../shared/ros2-canopen's build_package.sh builds them, several in one CMake configure.

The first package built in a folder is built by build_package.sh itself (CMake configure, build, install: ~1 CPU-s
of the ~1.7 is the configure). A package after it with the same CMakeLists.txt and package.xml (checked: the
configure reads nothing else of a package; generate_dcf's steps and the installs run at build time, and its first
step empties the bus folders of build and install) is synced into that source folder and built and installed with
the script's own ``cmake --build``/``--install`` in its environment; CMake must not configure again (asserted).
Checked once for the ten vendor files of test_canopen_vendor_files.py: each installed package equals a fresh
build_package.sh build's byte for byte (install path aside). Tests sharing a folder share an xdist_group.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

KIT = Path(__file__).resolve().parents[4] / "shared" / "ros2-canopen"
VENV = Path(sys.prefix)


def _sync(package: Path, into: Path) -> None:
    """Make ``into`` hold ``package``'s files: new or changed files copied, others removed; a file with the same
    bytes is left as it is (its time too, so CMake does not configure again)."""
    theirs = {p.relative_to(package) for p in package.rglob("*") if p.is_file()}
    for p in [p for p in into.rglob("*") if p.is_file() and p.relative_to(into) not in theirs]:
        p.unlink()
    for rel in theirs:
        target = into / rel
        if not target.is_file() or target.read_bytes() != (package / rel).read_bytes():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(package / rel, target)


def kit_build(package: Path, tree: Path) -> Path:
    """Build and install ``package`` in ``tree`` as the kit's build_package.sh does (see the module docstring);
    the install folder."""
    src, out = tree / "src" / package.name, tree / "out"
    if not src.exists():
        shutil.copytree(package, src)
        run = subprocess.run(["bash", str(KIT / "build_package.sh"), str(VENV), str(src), str(out)],
                             capture_output=True, text=True, timeout=600)  # fmt: skip
        assert run.returncode == 0, run.stdout[-4000:]
        return out / "install"
    for name in ("CMakeLists.txt", "package.xml"):
        assert (package / name).read_bytes() == (src / name).read_bytes(), f"{name} differs: configure anew"
    _sync(package, src)
    env = {**os.environ, "PATH": f"{VENV}/bin:{os.environ['PATH']}", "VIRTUAL_ENV": str(VENV),
           "CMAKE_PREFIX_PATH": str(VENV), "AMENT_PREFIX_PATH": str(VENV)}  # fmt: skip
    cmake = shutil.which("cmake") or str(VENV / "bin" / "cmake")  # the script's choice (before its PATH change)
    for step in (["--build", str(out / "build"), "-j", str(os.cpu_count() or 1)], ["--install", str(out / "build")]):
        run = subprocess.run([cmake, *step], capture_output=True, text=True, timeout=600, env=env)
        assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]
        assert "-- Configuring done" not in run.stdout, "CMake configured anew"  # the tree was reused
    return out / "install"
