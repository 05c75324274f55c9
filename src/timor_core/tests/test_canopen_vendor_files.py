"""Other people's drive files, exactly (issue 37): ten public vendor EDS/DCF files (tests/data/vendor_eds/SOURCES)
are read as lely's ``dcfgen`` reads them, give bring-up packages that ros2_canopen's build macros build, and the
master writes nothing at boot that the EDS says is read-only; unit objects are read as ratios."""

from __future__ import annotations

import configparser
import re
import shutil
import struct
import sys
import warnings
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kit_build import kit_build
from vendor_files import ROBCO, VENDOR, bus_of, edit_eds, vendor_profile, yaml

from timor_core import ModuleAssembly, ModulesDB
from timor_core.cli.app import main
from timor_core.errors import InputError
from timor_core.hardware.bringup import write_bringup
from timor_core.hardware.eds import parse_eds, read_eds
from timor_core.hardware.eds_text import ini_sections, normalise_eds

KIT = Path(__file__).resolve().parents[4] / "shared" / "ros2-canopen"
VENV = Path(sys.prefix)
needs_kit = pytest.mark.skipif(
    not (KIT / "build_package.sh").is_file()
    or not (VENV / "share/lely_core_libraries/cmake/lely_core_librariesConfig.cmake").is_file()
    or not (VENV / "share/ament_cmake/cmake/ament_cmakeConfig.cmake").is_file(),
    reason="needs ../shared/ros2-canopen with its install.sh (and ament_cmake) run on this venv",
)
FILES = [line.split(" | ")[0] for line in (VENDOR / "SOURCES").read_text().splitlines() if not line.startswith("#")]
VENDORS = {line.split(" | ")[1].split(",")[0] for line in (VENDOR / "SOURCES").read_text().splitlines()[1:]}
WRITE = ("rw", "wo", "rww", "rwr")


def test_the_test_data_has_ten_vendors_with_sources():
    assert len(FILES) == 10 and len(VENDORS) == 10, VENDORS
    assert all((VENDOR / name).is_file() for name in FILES)


_LELY_READ: dict[tuple[str, bytes], int] = {}  # (file name, bytes) -> objects: lely's reader is the same on both


def _lely_reads(path: Path) -> int:
    """How many objects lely's own reader (dcf-tools, what dcfgen runs) finds in the file; raises if it cannot.
    A file of the same name and bytes as one already read (a vendor file normalised, then installed by the build)
    is not read again in the same process."""
    dcf = pytest.importorskip("dcf", reason="needs dcf-tools (lely's dcfgen), in the test extra")
    key = (path.name, path.read_bytes())
    if key not in _LELY_READ:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _LELY_READ[key] = len(dcf.Device(dcf.parse_file(str(path)), {"NODEID": 5}))
    return _LELY_READ[key]


@pytest.mark.xdist_group("vendor_kit_tree")  # on the builds' worker: their lely read of 7 installed files is this one
@pytest.mark.parametrize("name", FILES)
def test_each_vendor_file_is_read_as_lely_reads_it(name, tmp_path):
    """The normalised file is what lely reads; timor sees the same objects; an unchanged file stays byte for byte."""
    original = (VENDOR / name).read_bytes()
    eds = read_eds(VENDOR / name)
    (tmp_path / name).write_bytes(eds.content)
    objects = _lely_reads(tmp_path / name)
    assert objects == len({index for index, _ in eds.objects})
    if eds.original is None:
        assert eds.content == original and eds.changes == ()
    else:
        assert eds.original == original and eds.changes
        assert eds.content.startswith(b"; timor: normalised for lely's dcfgen")


@pytest.mark.parametrize("name", ["nanotec_n5_2_2.eds", "ingenia_eve_net_c.eds"])
def test_two_vendor_files_lely_cannot_read_as_published(name):
    with pytest.raises(ValueError, match=r"invalid literal for int\(\) with base 10: '0x|invalid value: 0\.0"):
        _lely_reads(VENDOR / name)


@pytest.fixture(scope="module")
def robco() -> ModuleAssembly:
    return ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ROBCO)


def test_the_hex_count_file_installs_normalised_with_the_original_beside_it(robco, tmp_path):
    result = write_bringup(robco, tmp_path / "src", vendor_profile(tmp_path / "hw", "nanotec_n5_2_2.eds"), n_samples=3)
    bus = result.folder / "config" / "bus"
    text = (bus / "nanotec_n5_2_2.eds").read_text()
    counts = re.findall(r"^SupportedObjects=(.*?)\r?$", text, re.M)
    assert counts == ["3", "114", "78"]  # 0x03, 0x72, 0x4E
    assert "; timor: normalised for lely's dcfgen" in text and "SupportedObjects: 0x4E -> 78" in text
    assert (bus / "original" / "nanotec_n5_2_2.eds").read_bytes() == (VENDOR / "nanotec_n5_2_2.eds").read_bytes()
    assert not (bus / "original" / "maxon_epos4_50_15.dcf").exists()


@pytest.mark.parametrize(
    ("section", "key", "value", "why"),
    [
        ("6040", "DataType", "six", "not an integer"),
        ("6041", "AccessType", "readonly", "not one of ro, wo, rw"),
        ("607A", "DefaultValue", "12 apples", "not an integer"),
        ("OptionalObjects", "SupportedObjects", "many", "not a count"),
    ],
)
def test_a_value_lely_cannot_read_is_refused_by_timor_bringup_naming_file_section_key_value(
    tmp_path, capsys, section, key, value, why
):
    profile = vendor_profile(tmp_path / "hw", "pilz_prbt_0_1.dcf")
    edit_eds(tmp_path / "hw" / "eds" / "pilz_prbt_0_1.dcf", section, **{key: value})
    code = main(["bringup", "--db", "robco_like", "--modules", *ROBCO, "--hardware", str(profile),
                 "-o", str(tmp_path / "ws"), "--samples", "3"])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"pilz_prbt_0_1.dcf [{section}] {key} = {value!r}: {why}" in err and "lely's dcfgen cannot read" in err
    assert not (tmp_path / "ws").exists()


def test_two_different_values_for_one_key_are_refused_and_repeats_merged(tmp_path):
    path = tmp_path / "d.eds"
    text = (VENDOR / "elmo_gold.dcf").read_text(encoding="latin-1")
    path.write_text(text.replace("[6040]\n", "[6040]\nDataType=0x0006\n", 1), encoding="latin-1")
    assert normalise_eds(path.read_bytes(), path).changes  # the same value twice: kept once
    path.write_text(text.replace("[6040]\n", "[6040]\nDataType=0x0007\n", 1), encoding="latin-1")
    with pytest.raises(InputError, match=r"\[6040\] DataType = '0x0006': given twice with different values"):
        normalise_eds(path.read_bytes(), path)


def test_a_file_read_again_is_parsed_once_and_each_reader_gets_its_own_table(tmp_path, monkeypatch):
    """The same bytes at the same path: an equal Eds without a second parse (a profile's drives share files, a
    bring-up reads its profile twice); each reader has its own objects table; changed bytes are parsed anew."""
    import timor_core.hardware.eds as eds_module

    path = tmp_path / "elmo_gold.dcf"
    path.write_bytes((VENDOR / "elmo_gold.dcf").read_bytes())
    first = read_eds(path)
    parses: list[Path] = []
    monkeypatch.setattr(eds_module, "normalise_eds", lambda data, at, field: parses.append(at) or normalise_eds(
        data, at, field))  # fmt: skip
    again = read_eds(path, "drives.J.eds")  # as a profile reads it
    assert again == first and parses == [] and again.objects is not first.objects
    again.objects.clear()
    assert read_eds(path) == first and parses == []  # a reader's change to its table stays its own
    edit_eds(path, "6040", AccessType="ro")
    edited = read_eds(path)
    assert parses == [path] and edited.get(0x6040).access == "ro" and first.get(0x6040).access != "ro"
    (tmp_path / "copy").mkdir()
    copy = shutil.copy(VENDOR / "elmo_gold.dcf", tmp_path / "copy" / "elmo_gold.dcf")
    assert read_eds(copy) == replace(first, path=copy) and len(parses) == 1  # the same file in another folder
    shutil.copy(VENDOR / "elmo_gold.dcf", tmp_path / "other.dcf")  # its name is in the normalised file's header
    assert read_eds(tmp_path / "other.dcf").path == tmp_path / "other.dcf" and len(parses) == 2


# -- item 1 with the real build


def _bin(path: Path) -> dict[tuple[int, int], bytes]:
    """The SDO writes of a dcfgen .bin (concise DCF: count, then index u16, sub u8, size u32, data)."""
    data = path.read_bytes()
    (n,) = struct.unpack_from("<L", data)
    out, at = {}, 4
    for _ in range(n):
        index, sub, size = struct.unpack_from("<HBL", data, at)
        out[(index, sub)] = data[at + 7 : at + 7 + size]
        at += 7 + size
    return out


@pytest.fixture(scope="module")
def kit_tree(tmp_path_factory) -> Path:
    """One folder where the vendor files' packages are built in turn (their tests share one xdist worker)."""
    return tmp_path_factory.mktemp("kit")


@needs_kit
@pytest.mark.slow
@pytest.mark.xdist_group("vendor_kit_tree")  # one worker builds them all in one configured tree
@pytest.mark.parametrize("name", FILES)
def test_each_vendor_file_builds_and_boots_without_writing_a_read_only_object(robco, tmp_path, kit_tree, name):
    """``timor bringup`` + ros2_canopen's generate_dcf() (lely dcfgen) for each file alone on a two-joint arm; every
    SDO the master writes at boot (the devices' .bin) is to an object the EDS lets it write. (The CMake configure of
    the first file's package is reused by the others: see kit_build.py.)"""
    profile = vendor_profile(tmp_path / "hw", name)
    result = write_bringup(robco, tmp_path / "src", profile, name="v", n_samples=3)
    install = kit_build(result.folder, kit_tree)
    config = install / "share" / "v_bringup" / "config" / "bus"
    bus = yaml.safe_load((config / "bus.yml").read_text())
    devices = [k for k in bus if k not in ("options", "master")]
    assert len(devices) == 2 and all((config / f"{d}.bin").is_file() for d in devices)
    dcf = config / bus[devices[0]]["dcf"]
    eds = read_eds(dcf)  # the installed file, as lely read it
    assert _lely_reads(dcf) == len({index for index, _ in eds.objects})
    assert (config / "original" / dcf.name).is_file() == (read_eds(VENDOR / name).original is not None)
    for device in devices:
        for index, sub in _bin(config / f"{device}.bin"):
            obj = eds.get(index, sub)
            assert obj is not None and obj.access in WRITE, (device, hex(index), sub, obj)


def test_a_fixed_pdo_set_is_used_as_the_drive_has_it(robco, tmp_path):
    """AMD's file fixes its PDO mapping (the count of entries is const): the master writes no mapping and uses the
    drive's own PDOs that carry what the velocity command needs, nothing else."""
    profile = vendor_profile(tmp_path / "hw", "amd_foc_mc.eds")
    dev = [*bus_of(robco, profile).values()][0]
    assert dev["velocity_mode"] == 3
    assert dev["rpdo"] == {
        2: {"enabled": True, "cob_id": "auto"},
        3: {"enabled": True, "cob_id": "auto"},
        1: {"enabled": False},
        4: {"enabled": False},
    }  # 2: 6040+6060, 3: 6040+60FF; 4: 6071
    assert sorted(k for k, v in dev["tpdo"].items() if v.get("enabled")) == [2, 3, 4]  # 6061, 606C, 6064
    assert all("mapping" not in v for v in [*dev["rpdo"].values(), *dev["tpdo"].values()])


def test_the_notations_vendor_tools_write_are_rewritten_to_what_lely_reads(tmp_path):
    """One vendor file (Pilz) given every notation the normaliser rewrites; lely's reader refuses the result of
    each edit alone (checked here) and reads the normalised file, with the values CiA 306 gives them."""
    text = (VENDOR / "pilz_prbt_0_1.dcf").read_text()
    edits = {
        "hex count": ("[OptionalObjects]\nSupportedObjects=", "[OptionalObjects]\nSupportedObjects=0x"),
        "octal and signed": ("[6040]\n", "[6040]\nLowLimit=+010\n"),
        "node id last": ("[1014]\n", "[1014]\nParameterValue=0x80+$NODEID\n"),
        "indented key": ("[6041]\n", "[6041]\n  HighLimit=0xFFFF\n"),
        "repeated section": ("[6060]\n", "[6060]\nLowLimit=-128\n\n[6060]\n"),
        "REAL32 decimal": ("[6041]\n", "[6041]\n"),  # replaced below: an object of its own
        "not key=value": ("[Comments]\n", "[Comments]\nthis line has no equals sign\n"),
    }
    count = int(re.search(r"\[OptionalObjects\]\nSupportedObjects=(\d+)", text).group(1))
    edits["hex count"] = (
        f"[OptionalObjects]\nSupportedObjects={count}",
        f"[OptionalObjects]\nSupportedObjects={count:#x}",
    )
    edits["REAL32 decimal"] = (
        "[6041]\n",
        "[2F00]\nParameterName=real\nObjectType=0x7\nDataType=0x0008\n"
        "AccessType=rw\nDefaultValue=1.5\nPDOMapping=0\n\n[6041]\n",
    )  # also not listed
    path = tmp_path / "d.dcf"
    for name, (old, new) in edits.items():
        assert old in text, name
        path.write_text(text.replace(old, new, 1))
        if name not in ("REAL32 decimal",):  # lely does not read an unlisted object: no error, but no object
            with pytest.raises(Exception):  # noqa: B017 - lely raises ValueError, KeyError or a configparser error
                _lely_reads(path)
        text = text.replace(old, new, 1)
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("cp1252").replace(b"PRBT", "PRBT \u00b0".encode("cp1252"), 1))
    eds = read_eds(path)
    (tmp_path / "n.dcf").write_bytes(eds.content)
    assert _lely_reads(tmp_path / "n.dcf") == len({index for index, _ in eds.objects})
    assert eds.number(0x2F00) == 0x3FC00000  # 1.5 as lely reads REAL32: its bit pattern
    ini = eds.content.decode("utf-8")
    assert "LowLimit=8" in ini and "ParameterValue=$NODEID+0x80" in ini and "\nHighLimit=0xFFFF" in ini
    assert re.findall(r"^\[6060\]", ini, re.M) == ["[6060]"]  # the repeated section merged into the first
    assert "; this line has no equals sign" in ini and "\u00b0" in ini
    assert "byte-order mark removed" in eds.changes and "text re-encoded from Windows-1252 to UTF-8" in eds.changes
    assert eds.original == path.read_bytes()


_LINES = st.sampled_from([
    "[DeviceInfo]", "[MandatoryObjects]", "[OptionalObjects]", "[ManufacturerObjects]", "[1000]", "[1018]",
    "[1018sub0]", "[1018sub01]", "[6040]", "[2000]", "[2000sub1]", "[Comments]", "SupportedObjects=0x2",
    "SupportedObjects=99999999", "1=0x1000", "2=0x1018", "3=0x6040", "SubNumber=2", "ObjectType=0x7",
    "DataType=0x0007", "DataType=0x0002", "DataType=0x0008", "AccessType=RW", "AccessType=const", "AccessType=xx",
    "ParameterName=p", "DefaultValue=0xFD", "DefaultValue=$NODEID+0x80", "DefaultValue=0x80+$NodeId",
    "DefaultValue=1.5e3", "DefaultValue=010", "DefaultValue=+7", "DefaultValue=08", "PDOMapping=1",
    "VendorNumber=0x9A", "ProductNumber=419", "  LowLimit=1", "no equals", "; comment", "", "key:value",
])  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(_LINES, st.text(max_size=30)), max_size=40))
def test_normalising_any_text_refuses_by_input_error_or_gives_a_fixed_point(lines):
    """Whatever the text: an InputError naming file and section, or a file that normalises to itself again."""
    path = Path("fuzz.eds")
    try:
        first = normalise_eds("\n".join(lines).encode("utf-8", "surrogatepass"), path)
    except InputError as exc:
        assert "fuzz.eds [" in str(exc)
        return
    again = normalise_eds(first.data, path)
    assert again.changes == () and again.data == first.data


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(_LINES, st.text(max_size=30)), max_size=40), st.sampled_from(["\n", "\r\n", "\r"]))
def test_reading_any_text_as_an_eds_gives_an_eds_or_an_input_error(lines, end):
    try:
        eds = parse_eds(end.join(["[DeviceInfo]", *lines]).encode("utf-8", "surrogatepass"), Path("fuzz.eds"))
    except InputError:
        return
    assert eds.content.decode("utf-8") and all(0 <= i <= 0xFFFF and 0 <= s <= 0xFF for i, s in eds.objects)


_WORD = st.text(st.characters(blacklist_characters="\n\r=:;#[]", blacklist_categories=("Cs",)), max_size=6)
_INI_LINES = st.builds(
    "{}{}".format,
    st.sampled_from(["", "", "", " ", "\t"]),  # indented: a continuation line to configparser, or not
    st.one_of(
        st.builds("[{}]".format, _WORD),  # a section (maybe "[]", "[ ]", a repeated one)
        st.builds("{}{}{}".format, _WORD, st.sampled_from(["=", ":", " = ", " : "]), _WORD),  # key=value
        st.builds("{}{}".format, st.sampled_from(["; ", "#", ""]), _WORD),  # a comment, a line without a key
        st.sampled_from(["[DEFAULT]", "[6040]", "[6040", "[a]b=c", "=x", "a : b = c", "DataType = 7 ; a comment"]),
        _LINES,
    ),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_INI_LINES, max_size=30))
def test_the_eds_reader_reads_any_text_as_configparser_reads_it(lines):
    """The EDS reader's INI reader (line by line for a plain file) gives Python's configparser's sections and values,
    or its error, whatever the text."""
    text = "\n".join(["[DeviceInfo]", *lines])
    ini = configparser.RawConfigParser(strict=False, interpolation=None, comment_prefixes=(";", "#"))
    try:
        ini.read_string(text)
    except configparser.Error as exc:
        with pytest.raises(type(exc)):
            ini_sections(text)
        return
    assert ini_sections(text) == {name: dict(ini[name].items()) for name in ini.sections()}
