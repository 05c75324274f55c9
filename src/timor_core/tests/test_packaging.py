"""The packages build with colcon under the setuptools each ROS 2 distro's Ubuntu ships (issue 22).

Ubuntu 22.04 (Humble) has setuptools 59.6, which reads no ``[project]`` table; Ubuntu 24.04 (Jazzy, Kilted) has
68.1.2, which refused the SPDX ``license = "MIT"`` of one. The metadata is therefore declarative in setup.cfg.
The slow test builds src/timor_core and src/timor_ros with colcon (from PyPI) in a venv pinned to each setuptools
and checks what got installed; it needs the package index (skipped without it).
"""

from __future__ import annotations

import configparser
import os
import subprocess
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[1]
SRC = CORE.parent
#: Ubuntu 22.04's, Ubuntu 24.04's, and whatever is current on the index
SETUPTOOLS = ("59.6.0", "68.1.2", "")


def test_metadata_is_declarative_for_every_setuptools():
    text = (CORE / "pyproject.toml").read_text(encoding="utf-8")
    assert "[project]" not in text  # 68.1.2 validates such a table and refused ours
    cfg = configparser.ConfigParser()
    cfg.read(CORE / "setup.cfg")
    assert cfg["metadata"]["name"] == "timor_core" and cfg["metadata"]["license"] == "MIT"
    requires = cfg["options"]["install_requires"].split()
    for dist in ("numpy", "scipy", "pycollada", "tqdm", "pygad", "pin", "coal", "trimesh", "networkx", "numba"):
        assert any(r.startswith(dist + ">=") for r in requires), dist
    # setuptools 59.6 turns python_requires of setup.cfg into an object colcon cannot read back
    assert "python_requires" not in cfg["options"]


def _clean_env() -> dict[str, str]:
    """This environment without a ROS prefix or Python path of its own (as on a machine without make ros), and with
    PYTHONDONTWRITEBYTECODE: setuptools' install step then skips byte-compiling the installed packages, which no check
    here reads (a colcon build 1.8-1.9 instead of 2.2-2.8 CPU-s, 2026-11-29, load ~4); without make test's bytecode
    folder (the venv's setuptools is read compiled from beside its sources: _pip_into)."""
    drop = ("AMENT_PREFIX_PATH", "CMAKE_PREFIX_PATH", "COLCON_PREFIX_PATH", "PYTHONPATH", "VIRTUAL_ENV", *_PYC)
    return {**{k: v for k, v in os.environ.items() if k not in drop}, "PYTHONDONTWRITEBYTECODE": "1"}


#: make test's bytecode folder (PYTHONPYCACHEPREFIX) is left out of pip's and colcon's processes: pip then compiles the
#: setuptools it pins into the venv's own __pycache__ folders, where the build's Python processes read it
_PYC = ("PYTHONPYCACHEPREFIX",)


def _pip_env() -> dict[str, str]:
    """The environment of pip: without make test's bytecode folder (pip's compiled files go beside what it installs),
    writing no bytecode of pip's own modules (pip compiles the installed files all the same)."""
    return {**{k: v for k, v in os.environ.items() if k not in _PYC}, "PYTHONDONTWRITEBYTECODE": "1"}


def _pip_into(venv: Path, compiled: bool = False) -> list[str]:
    """This environment's pip installing into ``venv`` (``pip --python``, run with :func:`_pip_env`): the venv is made
    without pip of its own, whose ensurepip step cost 4.1 CPU-s (66 s at load 16, 2026-11-29) and which colcon does not
    use. ``compiled``: pip compiles what it installs, else not (a setuptools install 0.73 instead of 1.0 CPU-s; colcon
    and its dependencies 1.5 instead of 3.5). The setuptools each build uses is compiled: a colcon build's several
    Python processes (PYTHONDONTWRITEBYTECODE, see _clean_env) each compiled setuptools anew without, 3.4-3.9 instead
    of 1.9-2.3 CPU-s a build (2026-11-29, load 10-15)."""
    return [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
            "--disable-pip-version-check", *(() if compiled else ("--no-compile",))]  # fmt: skip


@pytest.fixture(scope="module")
def colcon_venv(tmp_path_factory) -> Path:
    venv = tmp_path_factory.mktemp("colcon") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    pip = _pip_into(venv)
    got = subprocess.run(
        [*pip, "colcon-core", "colcon-python-setup-py", "colcon-ros", "colcon-package-selection"],
        capture_output=True, text=True, timeout=600, env=_pip_env(),
    )  # fmt: skip
    if got.returncode != 0:
        pytest.skip(f"colcon could not be installed from the package index: {got.stderr[-500:]}")
    return venv


@pytest.mark.slow
@pytest.mark.xdist_group("colcon_venv")  # one worker builds the module's venv once (it takes a minute), not each
@pytest.mark.parametrize("version", SETUPTOOLS, ids=lambda v: f"setuptools-{v or 'current'}")
def test_colcon_builds_the_python_packages(colcon_venv, tmp_path, version):
    spec = f"setuptools=={version}" if version else "setuptools"
    pin = subprocess.run(
        [*_pip_into(colcon_venv, compiled=True), "--upgrade", spec],
        capture_output=True, text=True, timeout=300, env=_pip_env(),
    )  # fmt: skip
    if pin.returncode != 0:
        pytest.skip(f"{spec} could not be installed from the package index: {pin.stderr[-300:]}")
    build = subprocess.run(
        [str(colcon_venv / "bin" / "colcon"), "--log-base", str(tmp_path / "log"), "build",
         "--base-paths", str(SRC / "timor_core"), str(SRC / "timor_ros"),
         "--build-base", str(tmp_path / "build"), "--install-base", str(tmp_path / "install"),
         "--event-handlers", "console_direct-"],
        capture_output=True, text=True, timeout=600, cwd=tmp_path, env=_clean_env(),
    )  # fmt: skip
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    assert "Finished <<< timor_core" in build.stdout and "Finished <<< timor_ros" in build.stdout, build.stdout
    install = tmp_path / "install"
    site = next((install / "timor_core" / "lib").glob("python3*/site-packages"))
    for data in ("robco_like/modules.json", "geometric_primitive_modules/modules.json", "tasks/pick_and_place.json"):
        assert (site / "timor_core" / "data" / data).is_file(), data
    assert (site / "timor_core" / "py.typed").is_file()
    templates = site / "timor_core" / "hardware" / "bringup_templates"  # launch files of generated bring-up packages
    launch_files = {f"{name}.launch.py" for name in ("control", "moveit", "sim", "view")}
    assert {p.name for p in templates.glob("*.launch.py")} == launch_files
    assert (install / "timor_core" / "bin" / "timor").is_file()
    assert (install / "timor_core" / "share" / "timor_core" / "package.xml").is_file()
    assert (install / "timor_core" / "share" / "ament_index" / "resource_index" / "packages" / "timor_core").is_file()
    share = install / "timor_ros" / "share" / "timor_ros"
    assert {p.name for p in (share / "launch").iterdir()} >= {"assembly.launch.py", "moveit.launch.py"}
    requires = next(site.glob("timor_core-0.1.0*-info")) / "requires.txt"
    assert "pygad>=3.3" in requires.read_text()
