"""urdfdom's ``check_urdf``: the parser robot_state_publisher and MoveIt use, run on a URDF file.

Pinocchio's wheels bring the tool (cmeel's urdfdom, next to the Python executable); Debian's
``liburdfdom-tools`` puts it on the PATH.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

from timor_core.errors import TimorError

__all__ = ["check_urdf_command", "check_urdf", "unwrapped", "unchecked_urdfs", "ToolMissingError"]


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
    binary, env = unwrapped(command)
    out = subprocess.run([binary, str(path)], capture_output=True, text=True, timeout=timeout, env=env)
    ok = out.returncode == 0 and "Successfully Parsed XML" in out.stdout
    return ok, out.stdout[-2000:] + out.stderr[-2000:]


@functools.lru_cache(maxsize=8)
def _cmeel_tool(command: str) -> tuple[str, str] | None:
    """(binary, library folder) that cmeel's wrapper script ``command`` runs, if it is one for this Python."""
    try:
        with open(command, "rb") as f:
            head = f.read(512)
    except OSError:
        return None
    shebang = head.split(b"\n", 1)[0][2:].strip().decode(errors="replace")
    if not head.startswith(b"#!") or b"cmeel_run" not in head or Path(shebang) != Path(sys.executable):
        return None
    spec = importlib.util.find_spec("cmeel")  # found, not imported
    if spec is None or spec.origin is None:
        return None
    prefix = Path(spec.origin).parent.parent / "cmeel.prefix"  # as cmeel.run.cmeel_run finds it (CMEEL_PREFIX)
    binary = prefix / "bin" / Path(command).name
    return (str(binary), f"{prefix}/lib") if os.access(binary, os.X_OK) else None


def unwrapped(command: str) -> tuple[str, dict[str, str] | None]:
    """The program to run for ``command`` and its environment (None: this process's).

    Pinocchio's wheels install their tools as cmeel wrapper scripts: Python that starts, puts ``cmeel.prefix/lib``
    first on LD_LIBRARY_PATH and runs ``cmeel.prefix/bin/<tool>`` with the same arguments. Here that binary with
    that environment (the Python start cost ~0.1 CPU-s a call); any other command as it is.
    """
    tool = _cmeel_tool(command)
    if tool is None:
        return command, None
    binary, lib = tool
    env = dict(os.environ)
    old = env.get("LD_LIBRARY_PATH")
    env["LD_LIBRARY_PATH"] = lib if not old else old if lib in old else f"{lib}:{old}"  # cmeel_run's rule
    return binary, env


def unchecked_urdfs(folder: str | Path, seen: set[Path]) -> list[Path]:
    """The regular ``*.urdf`` files below ``folder`` not in ``seen`` (resolved paths); adds them to ``seen``."""
    found = []
    for path in sorted(Path(folder).rglob("*.urdf")):
        if path.is_file() and not path.is_symlink() and path.resolve() not in seen:
            seen.add(path.resolve())
            found.append(path)
    return found
