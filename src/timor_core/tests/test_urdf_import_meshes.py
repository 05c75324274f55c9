"""Issue 37 item 6: a URDF imported without its meshes (``missing_meshes="skip"``, ``timor import --meshes skip``),
and the command ``timor import`` prints for the user to run next, run as printed. Item 7's last part: a set made
from a URDF saves with its meshes after the reference's ``urdf2json`` round trip through its JSON data.

The robot is UR5 of example-robot-data 6.0.0 (``robots/ur_description/urdf/ur5_robot.urdf``; upstream
ros-industrial/universal_robot, BSD; example-robot-data BSD-3-Clause), copied into a folder without its meshes as a
user gets a description package's URDF alone; one variant gets a primitive collision box and the robot name
``Piper single`` (a name with a space, as the issue's Piper arm).
"""

from __future__ import annotations

import copy
import json
import os
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from urdf_agreement import robots_share

from timor_core import ModuleAssembly, ModulesDB, PinRobot
from timor_core.cli.app import main
from timor_core.errors import MeshError
from timor_core.export.urdf_import.importer import MeshesLeftOut, assembly_from_urdf, db_from_urdf
from timor_core.model.geometry import Box, Mesh

SHARE = robots_share()
pytestmark = pytest.mark.skipif(SHARE is None, reason="example-robot-data is not installed")
UR5 = "robots/ur_description/urdf/ur5_robot.urdf"
SRC = Path(__file__).resolve().parents[1]


@pytest.fixture
def alone(tmp_path, monkeypatch) -> Path:
    """UR5's URDF alone in a folder (no package path leads to its meshes); the forearm's collision is a box."""
    for var in ("ROS_PACKAGE_PATH", "AMENT_PREFIX_PATH"):
        monkeypatch.delenv(var, raising=False)
    text = (SHARE / UR5).read_text()
    text = re.sub(r'(<collision>\s*<geometry>\s*)<mesh filename="[^"]*forearm.stl"/>',
                  r'\1<box size="0.1 0.1 0.4"/>', text, count=1)  # fmt: skip
    assert '<box size="0.1 0.1 0.4"/>' in text
    folder = tmp_path / "only urdf"
    folder.mkdir()
    (folder / "ur5.urdf").write_text(text.replace('<robot name="ur5"', '<robot name="Piper single"', 1))
    return folder / "ur5.urdf"


def test_missing_meshes_are_refused_by_default(alone):
    with pytest.raises(MeshError, match="package 'example-robot-data' not found"):
        db_from_urdf(alone)


def test_skip_imports_kinematics_dynamics_and_primitives_and_names_what_it_left_out(alone):
    with pytest.warns(MeshesLeftOut) as caught:
        skipped = assembly_from_urdf(alone, missing_meshes="skip")
    (warning,) = [w.message for w in caught if isinstance(w.message, MeshesLeftOut)]
    assert len(warning.meshes) == 13  # 7 visual + 7 collision meshes, one collision now a box
    assert any("link[@name='forearm_link']/visual[1]/mesh@filename" in m and "forearm.dae" in m
               for m in warning.meshes)  # fmt: skip
    assert str(alone) in str(warning)
    full = assembly_from_urdf(SHARE / UR5, [SHARE.parent])
    a, b = skipped.robot, full.robot
    assert a.joints == b.joints
    rng = np.random.default_rng(3)
    for q in rng.uniform(-3, 3, (5, a.dof)):
        np.testing.assert_allclose(a.fk(q), b.fk(q), atol=1e-12)
        np.testing.assert_allclose(a.mass_matrix(q), b.mass_matrix(q), atol=1e-12)
    bodies = {body.id: body for body in next(iter(skipped.db)).bodies}
    assert not any(isinstance(g, Mesh) for body in bodies.values() for g in (*body.visual, *body.collision))
    assert [type(g) for g in bodies["forearm_link"].collision] == [Box]


def test_missing_meshes_takes_only_error_or_skip(alone):
    from timor_core.errors import InputError

    with pytest.raises(InputError, match="missing_meshes"):
        db_from_urdf(alone, missing_meshes="ignore")


def test_the_cli_skips_meshes_and_its_printed_command_runs_as_printed(alone, tmp_path, capsys):
    out = tmp_path / "my robots" / "modules.json"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the CLI reports the meshes itself, no Python warning escapes
        code = main(["import", str(alone), "-o", str(out), "--meshes", "skip"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "left out 13 mesh(es)" in err and "link[@name='wrist_3_link']/collision[1]" in err
    printed = err.rsplit("e.g. ", 1)[1].strip()
    assert shlex.split(printed) == ["timor", "fk", str(out), "Piper single"]
    env = {**os.environ, "PYTHONPATH": str(SRC / "timor_core") + os.pathsep + os.environ.get("PYTHONPATH", "")}
    shell = f'timor() {{ {shlex.quote(sys.executable)} -m timor_core.cli "$@"; }}\n{printed}\n'
    run = subprocess.run(["sh", "-c", shell], capture_output=True, text=True, env=env, timeout=300)
    assert run.returncode == 0, run.stderr
    assert '"tcp"' in run.stdout


def test_the_default_cli_import_still_refuses_missing_meshes(alone, tmp_path, capsys):
    code = main(["import", str(alone), "-o", str(tmp_path / "m.json")])
    assert code != 0
    assert "mesh" in capsys.readouterr().err


def test_a_set_made_from_a_urdf_saves_with_its_meshes_after_the_urdf2json_round_trip(tmp_path):
    """The reference's test_urdf2json: ``from_monolithic_robot``, ``to_json_data``, ``from_json_data`` with no folder
    given, then saved: the meshes go beside the saved set, which loads to the same robot."""
    robot = PinRobot.from_urdf(SHARE / "robots/panda_description/urdf/panda.urdf", SHARE.parent)
    assembly = ModuleAssembly.from_monolithic_robot(robot)
    data = assembly.db.to_json_data()
    for again in (ModulesDB.from_json_data(data), ModulesDB.from_json_data(copy.deepcopy(data))):
        saved = again.to_json_file(tmp_path / f"set{id(again)}" / "modules.json")
        files = sorted(p.relative_to(saved.parent).as_posix() for p in saved.parent.rglob("*.dae"))
        assert files and files == sorted({m.file for m in again.meshes() if m.file.endswith(".dae")})
        loaded = ModulesDB.from_json_file(saved)
        assert len(loaded.meshes()) == len(assembly.db.meshes()) > 0
        reloaded = ModuleAssembly.from_serial_modules(loaded, [m.id for m in loaded])
        q = robot.random_configuration(np.random.default_rng(4))
        np.testing.assert_allclose(reloaded.robot.fk(q), robot.fk(q), atol=1e-12)
    assert json.loads(json.dumps(data)) == data  # still plain JSON for every other reader


def test_a_set_of_modules_from_two_sets_saves_with_the_meshes(tmp_path):
    """The README's way to put another set's gripper on an imported arm, ``ModulesDB([*db, gripper])``, has no folder
    of its own; saved, it still carries the arm's meshes (it wrote a modules.json naming meshes it had not copied,
    which no command could load: 'mesh file not found')."""
    from timor_core.export.urdf_import.importer import ToolConnector

    arm = db_from_urdf(SHARE / UR5, [SHARE.parent], tool_connector=ToolConnector("robco", (0.1,), "m"))
    both = ModulesDB([*arm, ModulesDB.from_name("robco_like")["gripper"]])
    assert both.base_dir is None and both.meshes()
    saved = both.to_json_file(tmp_path / "ur5_gripper" / "modules.json")
    loaded = ModulesDB.from_json_file(saved)
    assert sorted(m.file for m in loaded.meshes()) == sorted(m.file for m in both.meshes())
    assert all(m.path.is_file() and m.path.is_relative_to(saved.parent) for m in loaded.meshes())
    q = np.linspace(-1, 1, 6)
    expected = ModuleAssembly.from_serial_modules(both, ["ur5", "gripper"]).robot.fk(q)
    np.testing.assert_allclose(ModuleAssembly.from_serial_modules(loaded, ["ur5", "gripper"]).robot.fk(q), expected)
