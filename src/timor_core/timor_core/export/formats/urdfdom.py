"""urdfdom's ``check_urdf``: the parser robot_state_publisher and MoveIt use, run on a URDF file.

Pinocchio's wheels bring the tool (cmeel's urdfdom, next to the Python executable); Debian's
``liburdfdom-tools`` puts it on the PATH.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from timor_core.errors import TimorError

__all__ = ["check_urdf_command", "check_urdf", "unchecked_urdfs", "ToolMissingError"]


class ToolMissingError(TimorError, FileNotFoundError):
    """An external tool timor runs (check_urdf) is not installed."""


def check_urdf_command() -> str | None:
    """The path of ``check_urdf`` (the one beside this Python first), or None if it is not installed."""
    beside = Path(sys.executable).with_name("check_urdf")
    return str(beside) if beside.exists() else shutil.which("check_urdf")


def _unwrapped(command: str) -> tuple[str, dict[str, str] | None]:
    """What to run for ``command`` and in which environment (None: this process's). cmeel's wrapper script (pip's
    pin installs one beside Python) starts a Python only to run the binary of its prefix with the prefix's libraries
    on ``LD_LIBRARY_PATH`` (``cmeel.run.cmeel_run``): that binary is run here the same way, ~2 ms of CPU a check
    instead of ~75; the command itself where it is no such wrapper beside this Python or the binary is not there."""
    if Path(command).parent != Path(sys.executable).parent:  # another environment's: its own cmeel, not ours
        return command, None
    try:
        with open(command, "rb") as script:
            head = script.read(512)
        spec = importlib.util.find_spec("cmeel") if b"cmeel_run" in head else None
    except (OSError, ImportError, ValueError):
        return command, None
    if spec is None or not spec.submodule_search_locations:
        return command, None
    prefix = Path(list(spec.submodule_search_locations)[0]).parent / "cmeel.prefix"
    binary = prefix / "bin" / Path(command).name
    if not binary.is_file():
        return command, None
    lib, paths = str(prefix / "lib"), os.environ.get("LD_LIBRARY_PATH", "")
    env = dict(os.environ, LD_LIBRARY_PATH=paths if lib in paths.split(":") else f"{lib}:{paths}" if paths else lib)
    return str(binary), env


def check_urdf(path: str | Path, timeout: float = 60.0) -> tuple[bool, str]:
    """Run ``check_urdf`` on a file: (accepted, its output).

    ToolMissingError (a FileNotFoundError) if the tool is missing.
    """
    command = check_urdf_command()
    if command is None:
        raise ToolMissingError("check_urdf (urdfdom) is not installed: pip install pin, or install liburdfdom-tools")
    executable, env = _unwrapped(command)
    out = subprocess.run([executable, str(path)], capture_output=True, text=True, timeout=timeout, env=env)
    ok = out.returncode == 0 and "Successfully Parsed XML" in out.stdout
    return ok, out.stdout[-2000:] + out.stderr[-2000:]


def unchecked_urdfs(folder: str | Path, seen: set[Path]) -> list[Path]:
    """The regular ``*.urdf`` files below ``folder`` not in ``seen`` (resolved paths); adds them to ``seen``."""
    found = []
    for path in sorted(Path(folder).rglob("*.urdf")):
        if path.is_file() and not path.is_symlink() and path.resolve() not in seen:
            seen.add(path.resolve())
            found.append(path)
    return found
