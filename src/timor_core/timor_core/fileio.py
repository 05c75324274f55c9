"""Atomic file writes: a crash or a bad input never leaves a half-written or lost user file."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["atomic_write_text", "atomic_copy", "write_json"]


def atomic_write_text(path: Path, text: str) -> None:
    """Write text to path atomically: a temp file in the same folder, fsync, then rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def atomic_copy(src: Path, dst: Path) -> None:
    """Copy a file atomically: a temp file beside the target, then rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".tmp", dir=dst.parent)
    os.close(fd)
    try:
        shutil.copyfile(src, tmp)
        os.replace(tmp, dst)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def write_json(path: str | Path, data: Any, indent: int = 2) -> Path:
    """Write JSON atomically (creating the folder); NaN and infinity are refused, as JSON has none."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, json.dumps(data, indent=indent, allow_nan=False) + "\n")
    return path
