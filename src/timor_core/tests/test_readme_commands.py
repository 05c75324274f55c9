"""Every ``timor`` command of the README's "Command line" block runs as shown (paths into ../shared mapped)."""

from __future__ import annotations

import os
import re
import shlex

import pytest
from conftest import EMBEDDED, REPO, SHARED

from timor_core.cli.app import main

TASKS = SHARED / "data" / "cobra" / "tasks"


def _commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    block = text.split("## Command line", 1)[1].split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.startswith("timor ")]


COMMANDS = _commands()
EXPECTED_EXIT = {"task validate": 1}  # PTP_2 names a missing mesh: the README says so


def test_the_block_is_found():
    assert len(COMMANDS) >= 8 and any(c.startswith("timor mjcf") for c in COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs(command, tmp_path, capsys):
    if "tasks/" in command and not TASKS.is_dir():
        pytest.skip(f"real CoBRA tasks not available (expected {TASKS})")
    if command.startswith("timor demo"):
        pytest.skip("timor demo is run by make demo's own test (test_cli) with the same arguments")
    command = command.replace("path/to/modules.json", str(EMBEDDED / "geometric_primitive_modules" / "modules.json"))
    command = re.sub(r"\btasks/", str(TASKS) + "/", command)
    argv = shlex.split(command)[1:]
    cwd = os.getcwd()
    os.chdir(tmp_path)  # outputs land in the test's folder
    try:
        code = main(argv)
    finally:
        os.chdir(cwd)
    kind = " ".join(argv[:2])
    assert code == EXPECTED_EXIT.get(kind, 0), capsys.readouterr().err
