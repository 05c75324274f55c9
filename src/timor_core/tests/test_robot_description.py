"""timor_core.ros.robot_description: assemblies from IDs or JSON, URDF + SRDF, modules as JSON text (no ROS)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from timor_core import ConnectorError, FormatError, InputError, ModulesDB, UnknownModuleError
from timor_core.ros.robot_description import (
    DescriptionError,
    assembly_from_ids_or_json,
    db_with_modules,
    describe,
    module_from_json_text,
    module_to_json_text,
)

CHAIN = ["base", "J2", "i_45", "J2", "J2", "eef"]


@pytest.fixture(scope="module")
def db() -> ModulesDB:
    return ModulesDB.from_name("geometric_primitive_modules")


def test_db_with_modules_adds_and_replaces(db):
    j2 = db.by_id("J2").to_json()
    j2["header"]["ID"] = "J2b"
    new, added = db_with_modules(db, [module_from_json_text(json.dumps(j2))])
    assert added == ["J2b"] and new.ids[-1] == "J2b" and "J2b" not in db
    j1 = module_from_json_text(module_to_json_text(db.by_id("J1")))
    again, added = db_with_modules(new, [j1])
    assert added == [] and list(again.ids) == list(new.ids)
    with pytest.raises(InputError, match="invalid JSON"):
        module_from_json_text("{")
    with pytest.raises(InputError):
        module_from_json_text(json.dumps({"header": {"ID": "J2b"}}))


def test_assembly_from_ids_or_json(db):
    a = assembly_from_ids_or_json(db, CHAIN)
    assert a.module_ids == CHAIN
    b = assembly_from_ids_or_json(db, assembly_json=json.dumps(a.to_json_data()))
    assert b.to_json_data() == a.to_json_data()
    with pytest.raises(UnknownModuleError, match="NOPE"):
        assembly_from_ids_or_json(db, ["base", "NOPE"])
    with pytest.raises(ConnectorError):
        assembly_from_ids_or_json(db, ["base", "eef", "J2"])
    with pytest.raises(FormatError, match="invalid JSON"):
        assembly_from_ids_or_json(db, assembly_json="{")
    with pytest.raises(InputError, match="not both"):
        assembly_from_ids_or_json(db, CHAIN, json.dumps(a.to_json_data()))
    with pytest.raises(InputError, match="empty"):
        assembly_from_ids_or_json(db)


def test_describe_is_deterministic_with_prefix(db):
    a = assembly_from_ids_or_json(db, CHAIN)
    d1 = describe(a, prefix="r1_", srdf=False)
    d2 = describe(assembly_from_ids_or_json(db, CHAIN), prefix="r1_", srdf=False)
    assert d1.urdf == d2.urdf and d1.srdf is None
    assert '<link name="r1_base_link">' in d1.urdf
    assert d1.module_ids == tuple(CHAIN)
    assert json.loads(d1.assembly_json)["moduleOrder"] == CHAIN


def test_describe_writes_srdf_or_names_the_step(db, monkeypatch):
    a = assembly_from_ids_or_json(db, CHAIN)
    d = describe(a, srdf_samples=20)
    assert "<robot" in d.srdf and "manipulator" in d.srdf
    import timor_core.export.formats.srdf as srdf_module

    def broken(*_a, **_k):
        raise InputError("no")

    monkeypatch.setattr(srdf_module, "assembly_to_srdf", broken)
    with pytest.raises(DescriptionError) as info:
        describe(a, srdf_samples=20)
    assert info.value.step == "srdf"


def test_describe_ros2_control(db):
    a = assembly_from_ids_or_json(db, CHAIN)
    d = describe(a, srdf=False, ros2_control_plugin="mock_components/GenericSystem")
    assert "<ros2_control" in d.urdf and "mock_components/GenericSystem" in d.urdf
    (block,) = ET.fromstring(d.urdf).findall("ros2_control")
    assert block.findtext("hardware/plugin") == "mock_components/GenericSystem"
    assert [j.get("name") for j in block.findall("joint")] == list(a.robot.model.names)[1:]
    with pytest.raises(DescriptionError) as info:  # a plugin name the block cannot hold: the step is named
        describe(a, srdf=False, ros2_control_plugin='bad"/><x')
    assert info.value.step == "urdf"
