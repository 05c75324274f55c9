"""Atomic binary outputs (MP4, PNG, SVG): write a temp file beside the target, then rename."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import InputError

__all__ = ["atomic_target", "save_figure"]


@contextmanager
def atomic_target(path: str | Path) -> Iterator[Path]:
    """Yield a temp path with the target's suffix; on success it replaces ``path``, on error it is removed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=path.suffix, dir=path.parent)
    os.close(fd)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; the output should get the usual permissions
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def save_figure(figure, path: str | Path, dpi: int = 120) -> Path:
    """Save a matplotlib figure atomically; the format follows the suffix (.png, .svg, .pdf)."""
    path = Path(path)
    fmt = path.suffix.lstrip(".").lower() or "png"
    supported = figure.canvas.get_supported_filetypes()
    if fmt not in supported:
        formats = ", ".join(sorted(supported))
        raise InputError(f"cannot write a figure as .{fmt} (formats: {formats})", value=str(path))
    with atomic_target(path) as tmp:
        figure.savefig(tmp, format=fmt, dpi=dpi, bbox_inches="tight")
    return path
