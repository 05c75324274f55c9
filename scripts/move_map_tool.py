"""What the move-map scripts share (move_map_export.py, move_map_search.py): finding the text files of a tree,
rewriting them with a map's ``rewrite``, and the command line (``--check``, ``--git-mv``, ``--ruff``)."""

from __future__ import annotations

import argparse
import subprocess
from collections.abc import Callable
from pathlib import Path

TEXT_SUFFIXES = {".py", ".md", ".toml", ".cfg", ".txt", ".yaml", ".yml", ".sh", ".rst", ".ini", ".xml", ".json"}
TEXT_NAMES = {"Makefile", "Dockerfile"}
SKIPPED_FOLDERS = {".git", ".venv", "__pycache__", "node_modules", ".mypy_cache"}


def text_files(paths: list[Path]) -> list[Path]:
    """The text files under the given files and folders (.git, virtual environments and caches left out)."""
    found = []
    for path in paths:
        candidates = [path] if path.is_file() else path.rglob("*")
        for p in candidates:
            if any(part in SKIPPED_FOLDERS for part in p.parts):
                continue
            if p.is_file() and (p.suffix in TEXT_SUFFIXES or p.name in TEXT_NAMES or p.name.endswith(".launch.py")):
                found.append(p)
    return found


def rewrite_files(
    paths: list[Path], rewrite: Callable[..., str], check: bool = False, skip: frozenset[str] = frozenset()
) -> list[Path]:
    """Rewrite (or with check, only list) every file that names an old place (``skip``: file names left alone)."""
    changed = []
    for p in text_files(paths):
        if p.name in skip:
            continue
        try:
            old = p.read_text()
        except UnicodeDecodeError:
            continue
        new = rewrite(old, markdown=p.suffix == ".md")
        if new != old:
            changed.append(p)
            if not check:
                p.write_text(new)
    return changed


def main(
    argv: list[str] | None,
    doc: str,
    rewrite: Callable[..., str],
    git_mv: Callable[[Path], None],
    skip: frozenset[str] = frozenset(),
) -> int:
    """A move-map script's command line: git mv (once), then rewrite or check the given paths."""
    parser = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--check", action="store_true", help="only list the files naming an old place")
    parser.add_argument("--git-mv", type=Path, metavar="REPO", help="do the moves in this repository")
    parser.add_argument("--ruff", metavar="RUFF", help="sort the imports of the rewritten files with this ruff")
    args = parser.parse_args(argv)
    if args.git_mv:
        git_mv(args.git_mv)
    changed = rewrite_files(args.paths, rewrite, check=args.check, skip=skip)
    for p in changed:
        print(p)
    python = [str(p) for p in changed if p.suffix == ".py"]
    if args.ruff and python and not args.check:
        subprocess.run([args.ruff, "check", "--select", "I", "--fix", "--quiet", *python], check=False)
        subprocess.run([args.ruff, "format", "--quiet", *python], check=False)
    return 1 if (args.check and changed) else 0
