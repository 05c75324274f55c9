"""The module set, chain and CLI runners the command line's tests share (test_cli.py, test_cli_robots.py)."""

from __future__ import annotations

import json
from pathlib import Path

from timor_core.cli.app import main

NAME = "geometric_primitive_modules"
CHAIN = ["base", "J2", "i_45", "J2", "J2", "eef"]
GPM_FILE = Path(__file__).resolve().parents[1] / "timor_core" / "data" / NAME / "modules.json"


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def gpm() -> dict:
    return json.loads(GPM_FILE.read_text(encoding="utf-8"))


def write_set(folder: Path, data: dict | None = None, text: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "modules.json"
    path.write_text(text if text is not None else json.dumps(data, indent=2), encoding="utf-8")
    return path
