"""Hostile EDS/DCF text (session 57): numbers of thousands of digits and long runs of blanks in a drive file are
refused or read in linear time, never a ValueError from Python's integer reader nor minutes of regex backtracking."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from hostile import time_cap
from hypothesis import given, settings
from hypothesis import strategies as st
from vendor_files import VENDOR

from timor_core.errors import InputError
from timor_core.hardware.eds import parse_eds
from timor_core.hardware.eds_text import cia_int

BASE = (VENDOR / "nanotec_n5_2_2.eds").read_text(encoding="latin-1")
DIGITS = "9" * 5000  # past Python's 4,300-digit limit of int(str) and str(int)


def _parse(text: str, name: str = "drive.eds"):
    return parse_eds(text.encode("latin-1"), Path(name))


@pytest.mark.parametrize(
    "old, new, key, why",
    [
        ("VendorNumber=0x26C", f"VendorNumber={DIGITS}", "VendorNumber", "64 bits"),
        ("VendorNumber=0x26C", "VendorNumber=0" + "7" * 20000, "VendorNumber", "64 bits"),  # octal: read, written
        ("3=0x1018", f"3={DIGITS}", "[MandatoryObjects] 3", "not an object index"),
        ("SupportedObjects=0x03", f"SupportedObjects={DIGITS}", "SupportedObjects", "not a count"),
        ("DataType=0x0007", f"DataType={DIGITS}", "DataType", "64 bits"),
        ("SubNumber=0x05", f"SubNumber={DIGITS}", "SubNumber", "64 bits"),
        ("DefaultValue=0x0000026C", f"DefaultValue={DIGITS}", "DefaultValue", "64 bits"),
        ("DefaultValue=0x0000026C", "DefaultValue=-0x" + "F" * 20000, "DefaultValue", "64 bits"),
        ("DefaultValue=0x0000026C", "DefaultValue=0x10000000000000000", "DefaultValue", "64 bits"),  # 2**64
    ],
)
def test_an_eds_number_beyond_64_bits_is_an_input_error_naming_file_and_key(old, new, key, why):
    assert old in BASE
    with pytest.raises(InputError) as info:
        _parse(BASE.replace(old, new, 1))
    message = str(info.value)
    assert "drive.eds" in message and key in message and why in message
    assert len(message) < 1000  # the value is cut short in the message


def test_cia_int_reads_every_64_bit_value_and_nothing_wider():
    assert cia_int("18446744073709551615") == 2**64 - 1
    assert cia_int("0xFFFFFFFFFFFFFFFF") == 2**64 - 1 == cia_int("01777777777777777777777")
    assert cia_int("-0x" + "0" * 50 + "FF") == -255  # leading zeros are no size
    assert cia_int("18446744073709551616") is None and cia_int("0x10000000000000000") is None
    assert cia_int("9" * 5000) is None and cia_int("0" + "7" * 5000) is None


BLANKS = " " * 100_000  # a regex backtracking through them took minutes a value


@pytest.mark.parametrize(
    "old, new",
    [
        ("DefaultValue=0x0000026C", f"DefaultValue=1{BLANKS}x"),  # comment search: \s*[;#] at each blank
        ("DefaultValue=0x0000026C", f"DefaultValue=a{BLANKS}x$NODEID"),  # .+?\s*\+\s*\$NODEID
        ("DefaultValue=0x0000026C", f"DefaultValue=a{BLANKS}+"),
        ("3=0x1018", f"3=0x1018{BLANKS}x"),
        ("SupportedObjects=0x03", f"SupportedObjects=3{BLANKS}x"),
        ("DataType=0x0007", f"DataType=7{BLANKS}x"),
    ],
)
def test_long_runs_of_blanks_in_eds_values_are_refused_in_linear_time(old, new):
    start = time.process_time()
    with time_cap(10), pytest.raises(InputError, match="drive.eds"):
        _parse(BASE.replace(old, new, 1))
    assert time.process_time() - start < 2.0


@pytest.mark.parametrize(
    "value, read",
    [
        ("$NODEID+0x180", "$NODEID+0x180"),
        ("0x180 + $NODEID", "$NODEID+0x180"),
        ("$nodeid  +  384 ; comment", "$nodeid  +  384"),  # as lely reads it: kept
        ("$NODEID", "$NODEID"),
        (f"0x26C{BLANKS}; a comment after blanks", "0x26C"),
    ],
)
def test_node_id_values_and_comments_are_still_read_as_before(value, read):
    eds = _parse(BASE.replace("DefaultValue=0x0000026C", f"DefaultValue={value}", 1))
    assert eds.get(0x1018, 1).default is not None
    assert f"DefaultValue={read}" in eds.content.decode()


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet=" \t+-$NODEIx0;#9F", max_size=60))
def test_any_value_of_blanks_signs_and_node_ids_reads_or_is_an_input_error(value):
    try:
        _parse(BASE.replace("DefaultValue=0x0000026C", f"DefaultValue={value}", 1))
    except InputError as exc:
        assert "drive.eds" in str(exc)
