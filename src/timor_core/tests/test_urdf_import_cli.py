"""Issue 24 item 6: ``timor import`` and the robot commands on its result; the README's import block runs as shown
(``$ROBOTS`` mapped to example-robot-data's robots folder)."""

from __future__ import annotations

import json
import os
import shlex
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from conftest import REPO
from urdf_agreement import robots_share

from timor_core import PinRobot
from timor_core.cli.app import main

SHARE = robots_share()
pytestmark = pytest.mark.skipif(SHARE is None, reason="example-robot-data is not installed")


def _block() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Importing a robot's URDF", 1)[1].split("\n## ", 1)[0]
    block = section.split("```bash", 1)[1].split("```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.startswith("timor ")]


def _run(capsys, argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_the_readme_import_block_runs(tmp_path, capsys, monkeypatch):
    commands = _block()
    assert len(commands) == 6 and commands[0].startswith("timor import")
    monkeypatch.chdir(tmp_path)
    outputs = {}
    for command in commands:
        argv = shlex.split(command.replace("$ROBOTS", str(SHARE / "robots")))[1:]
        code, out, err = _run(capsys, argv)
        assert code == 0, (command, err)
        outputs[command.split()[1]] = out
    fk = json.loads(outputs["fk"])
    q = np.array([0, 0, 0, -1.5, 0, 1.5, 0.7, 0.02, 0.02])
    robot = PinRobot.from_urdf(SHARE / "robots/panda_description/urdf/panda.urdf", SHARE.parent)
    np.testing.assert_allclose(fk["tcp"], robot.fk(q), atol=1e-12)
    srdf = ET.parse(tmp_path / "panda.srdf").getroot()
    assert len(srdf.find("group[@name='manipulator_eef']").findall("joint")) == 2
    ur5 = ET.parse(tmp_path / "ur5.urdf").getroot()
    # --keep-names keeps the UR5's ROS-Industrial names with '-' byte for byte (issue 37)
    assert {"shoulder_pan_joint", "wrist_3_joint", "base_link-base_fixed_joint", "wrist_3_link-tool0_fixed_joint"} <= {
        j.get("name") for j in ur5.findall("joint")
    }
    data = json.loads((tmp_path / "ur5r" / "modules.json").read_text())
    connectors = [c for b in data["modules"][0]["bodies"] for c in b["connectors"]]
    assert {"ID": "tcp", "type": "robco", "size": [0.1], "gender": "m"}.items() <= next(
        c for c in connectors if c["ID"] == "tcp"
    ).items()
    assert (tmp_path / "panda" / "meshes").is_dir()  # the meshes were copied beside the set


@pytest.mark.invalid_urdf
def test_import_errors_are_one_line(tmp_path, capsys):
    xacro = tmp_path / "arm.urdf.xacro"
    xacro.write_text('<robot xmlns:xacro="http://www.ros.org/wiki/xacro" name="a"><xacro:macro name="m"/></robot>')
    code, _, err = _run(capsys, ["import", str(xacro), "-o", str(tmp_path / "m.json")])
    assert code == 2 and "xacro" in err and str(xacro) in err and "Traceback" not in err
    urdf = SHARE / "robots/ur_description/urdf/ur5_robot.urdf"
    code, _, err = _run(capsys, ["fk", str(urdf), "ur5"])
    assert code == 2 and "timor import" in err
    code, _, err = _run(capsys, ["import", str(urdf), "--package-dir", str(SHARE.parent), "--tcp-link", "nope",
                                 "-o", str(tmp_path / "x" / "modules.json")])  # fmt: skip
    assert code == 2 and "tcp_link" in err and "nope" in err
    assert not (tmp_path / "x" / "modules.json").exists()
    code, _, err = _run(capsys, ["import", str(urdf), "-o", str(tmp_path / "y.txt")])
    assert code == 2 and ".json" in err
    assert os.listdir(tmp_path) == ["arm.urdf.xacro"]
