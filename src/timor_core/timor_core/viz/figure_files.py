"""Writing a matplotlib figure to a file (PNG, SVG, PDF by its suffix), atomically: a temp file, then rename."""

from __future__ import annotations

from pathlib import Path

from timor_core.common.fileio import atomic_target
from timor_core.errors import InputError

__all__ = ["save_figure"]


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
