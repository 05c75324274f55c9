"""Every ``timor`` command of docs/hardware.md runs as written (the guide from modules to a moving robot)."""

from __future__ import annotations

import json
import os
import random
import shlex
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
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
    assert [c.split()[1] for c in COMMANDS] == [
        "bringup", "bringup", "bringup", "bringup", "discover", "canopen-sim", "discover"]  # fmt: skip


def _epos4_profile(folder: Path) -> None:
    """The guide's hw/epos4.json (its JSON block) beside the maxon DCF it names."""
    blocks = [b.split("```", 1)[0] for b in GUIDE.read_text().split("```json")[1:]]
    block = next(b for b in blocks if "maxon_epos4" in b)
    (folder / "hw" / "eds").mkdir(parents=True)
    (folder / "hw" / "epos4.json").write_text(json.dumps(json.loads(block)))
    shutil.copy(Path(__file__).parent / "data" / "vendor_eds" / "maxon_epos4_50_15.dcf", folder / "hw" / "eds")


@pytest.fixture(scope="module")
def simulator() -> Iterator[str]:
    """The guide's ``timor canopen-sim ... &`` on another multicast group, in its own process, once ready: its group.
    The module's two discovers over udp_multicast read it in turn (it only answers reads); it ends when the module's
    tests are done (after 300 s at the latest, should this process die first)."""
    group = f"239.74.{random.randint(1, 254)}.{random.randint(1, 254)}"
    (line,) = [c for c in COMMANDS if c.split()[1] == "canopen-sim"]
    argv = [a for a in shlex.split(line)[1:] if a != "&"]
    argv = [group if a == "239.74.163.2" else a for a in argv] + ["--seconds", "300"]
    sim = subprocess.Popen([sys.executable, "-m", "timor_core.cli", *argv], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert sim.stdout is not None and sim.stdout.readline().strip() == "ready", sim.communicate(timeout=30)[1]
        yield group
    finally:
        sim.terminate()
        sim.wait(timeout=30)


RUN = [c for c in COMMANDS if c.split()[1] != "canopen-sim"]  # the simulator runs beside its discover


# python-can's udp_multicast sockets hear every group on their port: simulators of parallel tests must not overlap
@pytest.mark.xdist_group("udp_multicast")
@pytest.mark.parametrize("command", RUN, ids=[f"{k}-{c.split()[1]}" for k, c in enumerate(RUN)])
def test_guide_command_runs(command, tmp_path, capsys, request):
    argv = shlex.split(command)[1:]
    network = None
    if "hw/epos4.json" in argv:
        _epos4_profile(tmp_path)
    if "udp_multicast" in argv:
        group = request.getfixturevalue("simulator")
        argv = [group if a == "239.74.163.2" else a for a in argv]
    elif argv[0] == "discover":  # the guide's can0 becomes a virtual bus with three simulated drives
        canopen = pytest.importorskip("canopen")
        from timor_core import ModulesDB
        from timor_core.hardware.discover import new_network

        channel = f"guide_{uuid.uuid4().hex[:8]}"
        network = new_network()  # its disconnect does not wait canopen's second for the reader thread
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
    if "hw/epos4.json" in argv:
        bus = (package / "config" / "bus" / "bus.yml").read_text()
        assert "scale_pos_to_dev: 65841.7" in bus and "scale_vel_to_dev: 964.4" in bus  # the guide's table


def test_the_hardware_extra_brings_what_the_guides_simulator_needs():
    """``pip install 'timor-core[hardware]'`` is enough for the guide: its ``timor canopen-sim``/``discover`` use
    python-can's udp_multicast interface, which needs python-can's ``multicast`` extra (msgpack)."""
    import configparser

    from packaging.requirements import Requirement

    cfg = configparser.ConfigParser()
    cfg.read(Path(__file__).resolve().parents[1] / "setup.cfg")
    extras = cfg["options.extras_require"]
    for extra in ("hardware", "test"):
        reqs = {r.name: r for r in (Requirement(line) for line in extras[extra].split("\n") if line.strip())}
        assert "multicast" in reqs["python-can"].extras, f"[{extra}] lacks python-can[multicast]: {reqs['python-can']}"
        assert "canopen" in reqs


@pytest.mark.xdist_group("udp_multicast")
def test_the_guides_simulator_and_discover_run_in_two_shells(tmp_path, simulator):
    """docs/hardware.md's ``timor canopen-sim ... &`` and ``timor discover ...`` as written, each in its own
    process (on a random multicast group instead of the guide's, so that parallel runs do not meet). Only a
    plain install without python-can skips; a missing msgpack fails (the hardware extra must bring it)."""
    pytest.importorskip("can", reason="python-can is not installed (plain install without the hardware extra)")
    pytest.importorskip("canopen", reason="canopen is not installed (plain install without the hardware extra)")
    (discover,) = [c for c in COMMANDS if "udp_multicast" in c]
    argv = [simulator if a == "239.74.163.2" else a for a in shlex.split(discover)[1:]]
    run = subprocess.run([sys.executable, "-m", "timor_core.cli", *argv, "--samples", "5"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "base J L_250 J L_150 J L_150 gripper"
    assert (next((tmp_path / "ws" / "src").glob("*_bringup")) / "config" / "bus" / "bus.yml").is_file()
