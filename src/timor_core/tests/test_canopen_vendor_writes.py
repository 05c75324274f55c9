"""What the CANopen master writes to real vendor drives at boot (hardware.eds, hardware.bringup): each written object
checked against the EDS, read-only objects left as the drive has them, unit factors of one accepted in every encoding
and other factors refused naming the objects and values."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from vendor_files import ROBCO, bus_of, edit_eds, vendor_profile

from timor_core import ModuleAssembly, ModulesDB
from timor_core.errors import InputError


@pytest.fixture(scope="module")
def robco() -> ModuleAssembly:
    return ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ROBCO)


def _ratio(path: Path, index: int, num: str, den: str) -> None:
    """Give an EDS copy the ratio object ``index`` = num/den (a record of two UNSIGNED32, as CiA 402 has it)."""
    edit_eds(path, f"{index:04X}", ParameterName=f"ratio 0x{index:04X}", ObjectType="0x9", SubNumber="3")
    edit_eds(path, f"{index:04X}sub0", ParameterName="entries", DataType="0x0005", AccessType="const", DefaultValue="2")
    for sub, value in ((1, num), (2, den)):
        edit_eds(path, f"{index:04X}sub{sub}", ParameterName=f"sub {sub}", DataType="0x0007", AccessType="rw",
                 PDOMapping="0", DefaultValue=value)  # fmt: skip


# -- item 2: nothing written at boot to what the EDS declares read-only


def test_a_read_only_interpolation_period_holding_the_wanted_value_is_not_written(robco, tmp_path):
    profile = vendor_profile(tmp_path / "hw", "elmo_gold.dcf")
    eds = tmp_path / "hw" / "eds" / "elmo_gold.dcf"
    edit_eds(eds, "60C2sub2", AccessType="ro", DefaultValue="0xFD")  # INTEGER8 -3, fixed by the drive
    dev = [*bus_of(robco, profile).values()][0]
    assert [(s["index"], s["sub_index"]) for s in dev["sdo"]] == [(0x60C2, 1), (0x6060, 0)]
    edit_eds(eds, "60C2sub2", DefaultValue="-6")
    with pytest.raises(InputError, match=r"elmo_gold.dcf \[60C2sub2\] AccessType=ro: object 0x60C2 sub 2 .*"
                       r"cannot be written at boot, and the drive holds -6, not -3"):  # fmt: skip
        bus_of(robco, profile)


@pytest.mark.parametrize(
    ("section", "keys", "message"),
    [
        ("607A", {"AccessType": "ro"}, r"\[607A\] AccessType=ro: object 0x607A sub 0 .* cannot be in a RPDO"),
        ("6041", {"AccessType": "wo"}, r"\[6041\] AccessType=wo: object 0x6041 sub 0 .* cannot be in a TPDO"),
        ("6060", {"AccessType": "ro"}, r"\[6060\] AccessType=ro: .*holds 0, not 8"),
        ("1601sub1", {"AccessType": "const"}, r"\[1601sub1\] AccessType=const: .* to set up RPDO 2"),
        ("1400sub1", {"AccessType": "ro"}, r"\[1400sub1\] AccessType=ro: .* to set up RPDO 1"),
    ],
)
def test_every_object_the_master_writes_is_checked_against_the_eds(robco, tmp_path, section, keys, message):
    profile = vendor_profile(tmp_path / "hw", "elmo_gold.dcf")
    edit_eds(tmp_path / "hw" / "eds" / "elmo_gold.dcf", section, **keys)
    with pytest.raises(InputError, match=message):
        bus_of(robco, profile)


def test_a_read_only_heartbeat_and_cob_id_are_left_as_the_drive_has_them(robco, tmp_path):
    profile = vendor_profile(tmp_path / "hw", "elmo_gold.dcf")
    eds = tmp_path / "hw" / "eds" / "elmo_gold.dcf"
    dev = [*bus_of(robco, profile).values()][0]
    assert dev["heartbeat_producer"] == 1000 and 3 in dev["tpdo"]
    edit_eds(eds, "1017", AccessType="ro")
    edit_eds(eds, "1802sub1", AccessType="ro")
    dev = [*bus_of(robco, profile).values()][0]
    assert "heartbeat_producer" not in dev and 3 not in dev["tpdo"] and dev["tpdo"][4] == {"enabled": False}


# -- item 3: unit objects as ratios


@pytest.mark.parametrize(
    "ratios",
    [
        {0x6091: ("5308416", "5308416")},  # gear ratio 5308416/5308416
        {0x6092: ("2048", "1"), 0x6093: ("2048", "2048")},  # feed constant, position factor 1
        {0x6092: ("2048", "1"), 0x608F: ("2048", "1")},  # feed in encoder increments per revolution
        {0x6091: ("3", "2"), 0x6092: ("0x3", "0x2")},  # gear ratio = feed constant
        {0x6096: ("7", "7")},  # velocity factor 7/7
    ],
)
def test_every_encoding_of_a_unit_factor_of_one_is_accepted(robco, tmp_path, ratios):
    profile = vendor_profile(tmp_path / "hw", "elmo_gold.dcf", encoder_counts=2048)
    for index, (num, den) in ratios.items():
        _ratio(tmp_path / "hw" / "eds" / "elmo_gold.dcf", index, num, den)
    dev = [*bus_of(robco, profile).values()][0]
    assert math.isclose(dev["scale_pos_to_dev"], 2048 * 101 / (2 * math.pi), rel_tol=1e-9)  # increments


@pytest.mark.parametrize(
    ("ratios", "named"),
    [
        ({0x6093: ("3", "2")}, "0x6093 position factor 3/2"),
        ({0x6091: ("5308416", "5308416"), 0x6092: ("2", "1")},
         "0x6091 gear ratio 5308416/5308416, 0x6092 feed constant 2/1"),
        ({0x6096: ("2", "1")}, "0x6096 velocity factor 2/1"),
    ],
)  # fmt: skip
def test_a_factor_that_is_not_one_is_refused_naming_the_objects_and_values(robco, tmp_path, ratios, named):
    profile = vendor_profile(tmp_path / "hw", "elmo_gold.dcf")
    for index, (num, den) in ratios.items():
        _ratio(tmp_path / "hw" / "eds" / "elmo_gold.dcf", index, num, den)
    with pytest.raises(InputError, match=re.escape(named) + r".*not a factor of 1\): give scale_pos_to_dev"):
        bus_of(robco, profile)
