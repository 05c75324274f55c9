"""Issue 13 items 1, 2 and 5: unlimited joint limits (read as the reference writes them, written as urdfdom
accepts them) and physically impossible inertia reported by ``timor db validate``."""

from __future__ import annotations

import json
import math
import xml.etree.ElementTree as ET
from pathlib import Path

import pinocchio as pin
import pytest
from conftest import IMPROV_FILE, check_urdf_file, primitives_json, write_db

from timor_core import ModuleAssembly, ModulesDB
from timor_core.cli.app import main
from timor_core.errors import FormatError, ValidationError
from timor_core.export.formats.moveit_config import MoveItOptions, write_moveit_config
from timor_core.export.formats.ros2_control import Ros2ControlConfig, ros2_control_xml
from timor_core.export.formats.urdf import URDF_UNLIMITED
from timor_core.model.validation import check_db_file, validate_db_file

yaml = pytest.importorskip("yaml")

CHAIN = ["base", "J1", "l_30", "J2", "i_30", "J2", "eef"]


def _unlimited_db_json() -> dict:
    """The embedded primitives with J2's effort, velocity and acceleration left open as the reference writes
    them (``Infinity``, Python's json extension) and J1's position limits open on both sides."""
    data = primitives_json()
    for module in data["modules"]:
        for joint in module.get("joints", []):
            if module["header"]["ID"] == "J2":
                joint["limits"].update(peakTorque=math.inf, velocity=math.inf, acceleration=math.inf)
            if module["header"]["ID"] == "J1":
                joint["limits"].update(positionLower=-math.inf, positionUpper=math.inf)
    return data


@pytest.fixture
def unlimited_file(tmp_path) -> Path:
    text = json.dumps(_unlimited_db_json(), indent=1)  # writes Infinity / -Infinity like the reference's sets
    assert "Infinity" in text and "-Infinity" in text
    path = tmp_path / "unlimited" / "modules.json"
    path.parent.mkdir()
    path.write_text(text)
    return path


def test_infinity_limits_are_read_and_written_back(unlimited_file, tmp_path):
    db = ModulesDB.from_json_file(unlimited_file)
    lim = db["J2"].joints[0].limits
    assert lim.torque == lim.velocity == lim.acceleration == math.inf
    assert db["J1"].joints[0].limits.lower == -math.inf and db["J1"].joints[0].limits.upper == math.inf
    assert validate_db_file(unlimited_file) == []
    saved = db.to_json_file(tmp_path / "copy" / "modules.json")
    assert ModulesDB.from_json_file(saved)["J2"].joints[0].limits.velocity == math.inf


@pytest.mark.parametrize(
    ("where", "edit"),
    [
        ("$.modules[1].bodies[0].mass", lambda m: m[1]["bodies"].__getitem__(0).update(mass=math.inf)),
        ("$.modules[1].bodies[0].r_com[2]", lambda m: m[1]["bodies"][0]["r_com"].__setitem__(2, -math.inf)),
        (
            "$.modules[1].joints[0].poseParent[0][3]",
            lambda m: m[1]["joints"][0].__setitem__(
                "poseParent", [[1, 0, 0, math.inf], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]]
            ),
        ),
        ("$.modules[1].header.cost", lambda m: m[1]["header"].update(cost=math.inf)),
    ],
)
def test_infinity_is_refused_where_a_finite_number_is_required(tmp_path, where, edit):
    data = primitives_json()
    edit(data["modules"])
    path = write_db(tmp_path, data)
    with pytest.raises(FormatError) as err:
        ModulesDB.from_json_file(path)
    assert err.value.path == where and "Infinity is allowed only for unlimited limits" in str(err.value)
    assert str(path) in str(err.value)
    assert [e.path for e in validate_db_file(path)] == [where]


def test_nan_stays_refused_even_for_limits(tmp_path):
    data = primitives_json()
    data["modules"][1]["joints"][0]["limits"]["velocity"] = math.nan
    with pytest.raises(FormatError, match="NaN"):
        ModulesDB.from_json_file(write_db(tmp_path, data))


@pytest.mark.parametrize(("key", "value"), [("positionLower", math.inf), ("positionUpper", -math.inf)])
def test_a_position_limit_infinite_on_the_wrong_side_is_refused(tmp_path, key, value):
    data = primitives_json()
    data["modules"][1]["joints"][0]["limits"][key] = value
    with pytest.raises(ValidationError) as err:
        ModulesDB.from_json_file(write_db(tmp_path, data))
    assert err.value.path == f"$.modules[1].joints[0].limits.{key}"


def test_velocity_minus_infinity_is_a_negative_limit(tmp_path):
    data = primitives_json()
    data["modules"][1]["joints"][0]["limits"]["velocity"] = -math.inf
    with pytest.raises(ValidationError, match="must not be negative"):
        ModulesDB.from_json_file(write_db(tmp_path, data))


def test_unlimited_limits_pass_urdfdom_and_every_consumer_agrees(unlimited_file, tmp_path):
    """URDF has no spelling for unlimited: ±1e9 in the URDF, 'no limit' in the MoveIt and ros2_control files."""
    A = ModuleAssembly.from_serial_modules(ModulesDB.from_json_file(unlimited_file), CHAIN)
    urdf_path = tmp_path / "robot.urdf"
    text = A.to_urdf("bot", write_to=urdf_path)
    assert "inf" not in text
    check_urdf_file(urdf_path)
    limits = {
        j.get("name"): j.find("limit").attrib for j in ET.fromstring(text).iter("joint") if j.find("limit") is not None
    }
    j1, j2a, j2b = limits.values()
    assert float(j1["lower"]) == -URDF_UNLIMITED and float(j1["upper"]) == URDF_UNLIMITED
    assert float(j2a["effort"]) == float(j2a["velocity"]) == URDF_UNLIMITED == float(j2b["velocity"])
    assert float(j1["velocity"]) == 2.0  # finite limits are written as they are
    model = pin.buildModelFromUrdf(str(urdf_path))
    assert list(model.velocityLimit) == [2.0, URDF_UNLIMITED, URDF_UNLIMITED]
    assert list(model.upperPositionLimit)[1:] == [2.9, 2.9]

    written = write_moveit_config(A, tmp_path / "cfg", name="bot", n_samples=20)
    check_urdf_file(written["bot.urdf"])
    joint_limits = yaml.safe_load(written["joint_limits.yaml"].read_text())["joint_limits"]
    entries = list(joint_limits.values())
    assert entries[0]["has_velocity_limits"] is True and entries[0]["max_velocity"] == 2.0
    for entry in entries[1:]:  # no acceleration limit in the set: timor's default (MoveIt's TOTG needs one)
        assert entry["has_velocity_limits"] is False and entry["has_acceleration_limits"] is True
        assert entry["max_acceleration"] == MoveItOptions().default_acceleration
    off = write_moveit_config(A, tmp_path / "cfg2", name="bot", n_samples=20, default_acceleration=None)
    entries = list(yaml.safe_load(off["joint_limits.yaml"].read_text())["joint_limits"].values())
    assert all(entry["has_acceleration_limits"] is False for entry in entries[1:])

    control = ET.fromstring(ros2_control_xml(A, Ros2ControlConfig()))
    for joint in control.iter("joint"):
        for interface in joint.iter("command_interface"):
            bounds = {p.get("name"): float(p.text) for p in interface.iter("param")}
            assert all(math.isfinite(v) and abs(v) < URDF_UNLIMITED for v in bounds.values())
            if joint.get("name").startswith("m1_") and interface.get("name") == "position":
                assert bounds == {}  # J1's position is unlimited: no min/max at all


def _impossible_inertia_file(tmp_path: Path) -> Path:
    data = primitives_json()
    data["modules"][2]["bodies"][1]["inertia"] = [[0.001, 0, 0], [0, 0.001, 0], [0, 0, 0.003]]  # 1 + 1 < 3
    return write_db(tmp_path, data)


def test_impossible_inertia_is_a_warning_and_an_error_with_strict(tmp_path, capsys):
    path = _impossible_inertia_file(tmp_path)
    ModulesDB.from_json_file(path)  # the loader accepts it (IMPROV ships such a module)
    report = check_db_file(path)
    assert report.errors == [] and len(report.warnings) == 1
    warning = report.warnings[0]
    assert warning.path == "$.modules[2].bodies[1].inertia"
    assert "module 'J2', body 'J2_distal'" in str(warning) and "triangle inequality" in str(warning)
    assert validate_db_file(path) == [] and list(map(str, validate_db_file(path, strict=True))) == [str(warning)]

    assert main(["db", "validate", str(path)]) == 0
    out, err = capsys.readouterr()
    assert "valid (1 warning)" in out and err.count("warning: ") == 1 and "J2_distal" in err
    assert main(["db", "validate", "--strict", str(path)]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("error: ") and "J2_distal" in err
    assert main(["db", "validate", "--json", str(path)]) == 0
    report_json = json.loads(capsys.readouterr().out)
    assert report_json["valid"] is True and len(report_json["warnings"]) == 1


def test_improv_module_7_is_reported(capsys):
    if not IMPROV_FILE.is_file():
        pytest.skip(f"real IMPROV data not available (expected {IMPROV_FILE})")
    warnings = check_db_file(IMPROV_FILE).warnings
    assert ["module '7', body '7'" in str(w) for w in warnings] == [True]
    assert main(["db", "validate", "--strict", str(IMPROV_FILE.parent)]) == 1
    assert "module '7'" in capsys.readouterr().err


def test_mujoco_refuses_exactly_what_validation_warns_about(tmp_path):
    """The warning is not ours alone: MuJoCo's own compiler refuses the URDF of that body."""
    mujoco = pytest.importorskip("mujoco")
    bad = ModuleAssembly.from_serial_modules(ModulesDB.from_json_file(_impossible_inertia_file(tmp_path)), CHAIN)
    good = ModuleAssembly.from_serial_modules(ModulesDB.from_name("geometric_primitive_modules"), CHAIN)
    mujoco.MjModel.from_xml_string(good.to_urdf("good"))
    with pytest.raises(ValueError, match="inertia"):
        mujoco.MjModel.from_xml_string(bad.to_urdf("bad"))
