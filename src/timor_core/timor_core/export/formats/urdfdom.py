"""urdfdom's ``check_urdf``: the parser robot_state_publisher and MoveIt use, run on a URDF file.

Pinocchio's wheels bring the tool (cmeel's urdfdom, next to the Python executable); Debian's
``liburdfdom-tools`` puts it on the PATH.
"""

from __future__ import annotations

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


def check_urdf(path: str | Path, timeout: float = 60.0) -> tuple[bool, str]:
    """Run ``check_urdf`` on a file: (accepted, its output).

    ToolMissingError (a FileNotFoundError) if the tool is missing.
    """
    command = check_urdf_command()
    if command is None:
        raise ToolMissingError("check_urdf (urdfdom) is not installed: pip install pin, or install liburdfdom-tools")
    out = subprocess.run([command, str(path)], capture_output=True, text=True, timeout=timeout)
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
