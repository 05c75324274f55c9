"""Every ``timor`` command of docs/hardware.md runs as written (the guide from modules to a moving robot)."""

from __future__ import annotations

import os
import shlex
import uuid
from pathlib import Path

import pytest
from conftest import REPO

from timor_core.cli.app import main

GUIDE = REPO / "docs" / "hardware.md"


def _commands() -> list[str]:
    text = GUIDE.read_text()
    blocks = [b.split("```", 1)[0] for b in text.split("```bash")[1:]]
    return [line.strip() for block in blocks for line in block.splitlines() if line.startswith("timor ")]


COMMANDS = _commands()


def test_the_guide_has_its_commands():
    assert [c.split()[1] for c in COMMANDS] == ["bringup", "bringup", "bringup", "discover"]


@pytest.mark.parametrize("command", COMMANDS, ids=[c.split()[-3] for c in COMMANDS])
def test_guide_command_runs(command, tmp_path, capsys):
    argv = shlex.split(command)[1:]
    network = None
    if argv[0] == "discover":  # the guide's can0 becomes a virtual bus with three simulated drives
        canopen = pytest.importorskip("canopen")
        from timor_core import ModulesDB

        channel = f"guide_{uuid.uuid4().hex[:8]}"
        network = canopen.Network()
        network.connect(channel=channel, interface="virtual", receive_own_messages=False)
        eds = Path(ModulesDB.from_name("robco_like").base_dir) / "hardware" / "cia402_drive.eds"
        for node_id in (2, 3, 4):
            network.add_node(canopen.LocalNode(node_id, str(eds)))
        argv = [a if a != "can0" else channel for a in argv] + ["--interface", "virtual"]
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        code = main([*argv, "--samples", "50"])
    finally:
        os.chdir(cwd)
        if network is not None:
            network.disconnect()
    assert code == 0, capsys.readouterr().err
    (package,) = (tmp_path / "ws" / "src").glob("*_bringup")
    assert (package / "package.xml").is_file() and (package / "launch" / "control.launch.py").is_file()
    if argv[0] == "discover":
        assert capsys.readouterr().out.strip() == "base J L_250 J L_150 J L_150 gripper"
