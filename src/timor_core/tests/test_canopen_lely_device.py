"""Drive files lely's dcfgen cannot build a slave from, and notation lely reads that timor refused (session 57).

lely's ``dcf.Device`` (what ``dcfgen`` builds each slave with) looks up 0x1000, 0x1018 sub 1, each PDO's mapping
object and every object a default mapping names; a file without them passed ``timor bringup`` and stopped the
package's build with a bare ``KeyError``. An inline comment after an AccessType and ``PDOMapping=0x0001`` are read
by lely as ``ro`` and as mappable; timor refused both. The drive files are real ones (tests/data/vendor_eds, and
the python canopen library's example drive in tests/data/canopen_py, SOURCES there)."""

from __future__ import annotations

import json
import re
import shutil
import sys
import warnings
from pathlib import Path

import pytest
from vendor_files import ROBCO, VENDOR, bus_of, edit_eds, vendor_profile

from timor_core import ModuleAssembly, ModulesDB
from timor_core.errors import InputError
from timor_core.hardware.bringup import write_bringup
from timor_core.hardware.canopen_pdo import check_lely_device
from timor_core.hardware.eds import read_eds

MAXON = "maxon_epos4_50_15.dcf"
OTHER = Path(__file__).parent / "data" / "canopen_py"
KIT = Path(__file__).resolve().parents[4] / "shared" / "ros2-canopen"
VENV = Path(sys.prefix)


@pytest.fixture(scope="module")
def robco() -> ModuleAssembly:
    return ModuleAssembly.from_serial_modules(ModulesDB.from_name("robco_like"), ROBCO)


def _drop(path: Path, section: str) -> None:
    """Remove one section of an EDS copy (a record's header and its sub-objects when ``section`` is an index)."""
    text = path.read_text(encoding="latin-1")
    cut = re.sub(rf"^\[{section}(sub[0-9A-F]+)?\]\r?\n(?:(?!\[).*\n)*", "", text, flags=re.M | re.I)
    assert cut != text, section
    path.write_text(cut, encoding="latin-1")


def _lely_device(path: Path) -> int:
    """Build lely's slave from the file as timor installs it (normalised); raises what dcfgen would raise; the
    number of objects lely read."""
    dcf = pytest.importorskip("dcf", reason="needs dcf-tools (lely's dcfgen), in the test extra")
    normalised = path.with_name("normalised_" + path.name)
    normalised.write_bytes(read_eds(path).content)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return len(dcf.Device(dcf.parse_file(str(normalised)), {"NODEID": 5}))


def _map(sub: int, value: str):
    """Set TPDO 4's default mapping (the maxon file maps nothing there: count 0) to ``sub`` entries, the last one
    ``value``."""

    def edit(path: Path) -> None:
        edit_eds(path, "1A03sub0", ParameterValue=str(sub))
        edit_eds(path, f"1A03sub{sub}", ParameterValue=value)

    return edit


_CUTS = {  # what is taken from the maxon EPOS4 DCF -> what the refusal names
    "no device type": (lambda p: _drop(p, "1000"), "[1000]: missing: object 0x1000 sub 0 (device type)"),
    "no identity": (lambda p: _drop(p, "1018"), "[1018sub1]: missing: object 0x1018 sub 1"),
    "no vendor-ID": (lambda p: _drop(p, "1018sub1"), "[1018sub1]: missing"),
    "RPDO 4 without mapping": (lambda p: _drop(p, "1603"), "[1603]: missing: RPDO 4 has its communication object"),
    "mapping names an absent object": (
        _map(1, "0x21FF0010"),
        "[1A03sub1]: ParameterValue=0x21FF0010: TPDO 4 maps object 0x21FF sub 0, which the file does not describe",
    ),
    "mapping names an absent sub-index": (
        _map(2, "0x606C0520"),
        "[1A03sub2]: ParameterValue=0x606C0520: TPDO 4 maps object 0x606C sub 5",
    ),
    "dummy of no data type": (
        _map(1, "0x00000008"),
        "[1A03sub1]: ParameterValue=0x00000008: TPDO 4 maps object 0x0000 sub 0",
    ),
}


@pytest.mark.parametrize("case", list(_CUTS))
def test_a_file_lely_cannot_build_a_slave_from_is_refused_naming_file_and_object(robco, tmp_path, case):
    cut, needle = _CUTS[case]
    profile = vendor_profile(tmp_path / "hw", MAXON, vendor_id="0xFB", product_code="0x65520000")
    cut(tmp_path / "hw" / "eds" / MAXON)
    with pytest.raises(KeyError):  # lely itself: the build would stop here
        _lely_device(tmp_path / "hw" / "eds" / MAXON)
    with pytest.raises(InputError) as info:
        bus_of(robco, profile)
    assert f"{MAXON} {needle}" in info.value.message and "lely's dcfgen cannot build" in info.value.message
    assert info.value.path == "$.drives.J.eds"


def _add(text: str):
    def edit(path: Path) -> None:
        path.write_text(path.read_text(encoding="latin-1") + text, encoding="latin-1")

    return edit


def _both(*edits):
    def edit(path: Path) -> None:
        for e in edits:
            e(path)

    return edit


_COMPACT = (
    "\n[2FF0]\nParameterName=Gains\nObjectType=0x8\nDataType=0x0006\nAccessType=ro\nPDOMapping=1\nCompactSubObj=4\n"
)
_LELY_BUILDS = {  # lely's dcf.Device reads these; timor's check must pass them (s57-review2)
    "a mapped sub-index of a CompactSubObj array": _both(_add(_COMPACT), _map(1, "0x2FF00110")),
    "a mapping object with no sub-objects": lambda p: _drop(p, "1A03sub[0-9A-F]+"),
}


@pytest.mark.parametrize("case", list(_LELY_BUILDS))
def test_a_file_lely_builds_a_slave_from_passes_the_check(robco, tmp_path, case):
    """Objects as lely's ``dcf.Object`` reads them: 0..N of a ``CompactSubObj=N`` array, and a record header
    without sub-sections is an object (an empty mapping); the check refused both."""
    profile = vendor_profile(tmp_path / "hw", MAXON)
    _LELY_BUILDS[case](tmp_path / "hw" / "eds" / MAXON)
    _lely_device(tmp_path / "hw" / "eds" / MAXON)
    eds = read_eds(tmp_path / "hw" / "eds" / MAXON)
    check_lely_device(eds, "$.drives.J")
    bus_of(robco, profile)


def test_a_pdo_communication_header_without_its_mapping_object_is_refused(robco, tmp_path):
    """TPDO 4's communication object without sub-sections is still an object to lely, which then looks up 0x1A03."""
    profile = vendor_profile(tmp_path / "hw", MAXON)
    _both(lambda p: _drop(p, "1803sub[0-9A-F]+"), lambda p: _drop(p, "1A03(sub[0-9A-F]+)?"))(
        tmp_path / "hw" / "eds" / MAXON
    )
    with pytest.raises(KeyError):
        _lely_device(tmp_path / "hw" / "eds" / MAXON)
    with pytest.raises(InputError, match=r"\[1A03\]: missing: TPDO 4 has its communication object 0x1803"):
        bus_of(robco, profile)


def test_a_dummy_entry_of_a_data_type_is_what_lely_reads_and_kept(robco, tmp_path):
    profile = vendor_profile(tmp_path / "hw", MAXON)
    _map(1, "0x00050008")(tmp_path / "hw" / "eds" / MAXON)  # a gap of an UNSIGNED8
    _lely_device(tmp_path / "hw" / "eds" / MAXON)
    assert bus_of(robco, profile) == bus_of(robco, vendor_profile(tmp_path / "plain", MAXON))


def test_inline_comments_and_a_padded_pdo_mapping_flag_read_as_lely_reads_them(robco, tmp_path):
    """``AccessType=rww ; note`` is ``rww`` to lely (an inline comment after whitespace) and ``PDOMapping=0x0001``
    is mappable (``bool(int(v, 0))``): the same bus as the vendor's file, and lely reads the installed copy."""
    profile = vendor_profile(tmp_path / "hw", MAXON)
    path = tmp_path / "hw" / "eds" / MAXON
    text = path.read_text(encoding="latin-1")
    text = re.sub(r"^(AccessType=\w+)(\r?)$", r"\1  ; checked by the vendor\2", text, flags=re.M)
    text = re.sub(r"^PDOMapping=1(\r?)$", r"PDOMapping=0x0001\1", text, flags=re.M)
    path.write_text(text, encoding="latin-1")
    eds, plain = read_eds(path), read_eds(VENDOR / MAXON)
    assert {k: (o.access, o.pdo_mapping) for k, o in eds.objects.items()} == {
        k: (o.access, o.pdo_mapping) for k, o in plain.objects.items()
    }
    assert eds.get(0x6040) is not None and eds.get(0x6040).pdo_mapping and eds.get(0x6040).access == "rw"
    _lely_device(path)
    assert bus_of(robco, profile) == bus_of(robco, vendor_profile(tmp_path / "plain", MAXON))


def _e35_profile(folder: Path, mode: str = "cyclic_synchronous_position") -> Path:
    (folder / "eds").mkdir(parents=True)
    shutil.copy(OTHER / "e35.eds", folder / "eds" / "e35.eds")
    drive = {"eds": "eds/e35.eds", "encoder_counts": 4096, "gear_ratio": 101, "operation_mode": mode}
    profile = {"route": "canopen", "bus": {"first_node_id": 2}, "drives": {"J": drive}}
    (folder / "p.json").write_text(json.dumps(profile))
    return folder / "p.json"


def test_the_canopen_librarys_example_drive_is_read_as_lely_reads_it(robco, tmp_path):
    """e35.eds lists an object it does not describe (0x6505), misses a list entry and describes one it does not list
    (0x2FFF): the installed copy says so, lely reads it, every TPDO/RPDO it has is configured or switched off."""
    eds = read_eds(OTHER / "e35.eds")
    assert any("0x6505 has no section" in c for c in eds.changes) and any("0x2FFF described" in c for c in eds.changes)
    (tmp_path / "e35.eds").write_bytes(eds.content)
    assert _lely_device(tmp_path / "e35.eds") == len({index for index, _ in eds.objects}) == 211
    bus = bus_of(robco, _e35_profile(tmp_path / "hw"))
    for device in bus.values():
        assert device["position_mode"] == 8 and set(device["rpdo"]) == set(device["tpdo"]) == {1, 2, 3, 4}


needs_kit = pytest.mark.skipif(
    not (KIT / "build_package.sh").is_file()
    or not (VENV / "share/lely_core_libraries/cmake/lely_core_librariesConfig.cmake").is_file()
    or not (VENV / "share/ament_cmake/cmake/ament_cmakeConfig.cmake").is_file(),
    reason="needs ../shared/ros2-canopen with its install.sh (and ament_cmake) run on this venv",
)


@pytest.mark.slow
@needs_kit
def test_the_canopen_librarys_example_drive_builds_with_generate_dcf(robco, tmp_path):
    from kit_build import kit_build

    result = write_bringup(robco, tmp_path / "src", _e35_profile(tmp_path / "hw", "profile_velocity"), n_samples=3)
    config = kit_build(result.folder, tmp_path / "tree") / "share" / result.package / "config" / "bus"
    assert (config / "master.dcf").is_file() and len(list(config.glob("*_joint.bin"))) == 2
