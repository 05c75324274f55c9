"""Read a drive's EDS/DCF file (CiA 306, an INI file) far enough to configure it: identity, objects, units.

A bring-up package is only as good as the vendor file it names, so the file is read and checked when the
package is written, not when ``dcfgen`` runs at build time: size-limited, text (no NUL bytes), INI sections,
``[DeviceInfo]``, the CiA 402 objects ros2_canopen's Cia402Driver reads and writes. What it gives:

- identity: ``VendorNumber``/``ProductNumber`` of ``[DeviceInfo]``, else the values of 0x1018 sub 1/2;
- every (sub-)object with its data type, access and whether it can be PDO-mapped;
- the CiA 402 units: 0x60A8 (SI unit position), 0x60A9 (SI unit velocity), 0x608F (encoder increments per
  motor revolution); unit codes understood: increment 0xB5, rad 0x10, degree 0x41, revolution 0xB4, metre 0x01.
"""

from __future__ import annotations

import configparser
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from timor_core.errors import InputError
from timor_core.hardware.eds_text import cia_int, ini_sections, normalise_eds

__all__ = ["MAX_EDS_BYTES", "EdsObject", "Eds", "SiUnit", "read_eds", "parse_eds", "si_unit"]

MAX_EDS_BYTES = 8 << 20
"""Largest EDS/DCF read (real drive files are 30 KB to 1 MB)."""

_LISTS = ("MANDATORYOBJECTS", "OPTIONALOBJECTS", "MANUFACTUREROBJECTS")
_SECTION = re.compile(r"([0-9A-F]{4})(?:SUB([0-9A-F]{1,2}))?")
_BITS = {0x1: 1, 0x2: 8, 0x3: 16, 0x4: 32, 0x5: 8, 0x6: 16, 0x7: 32, 0x8: 32, 0x10: 24, 0x11: 64, 0x15: 64,
         0x16: 24, 0x18: 40, 0x19: 48, 0x1A: 56, 0x1B: 64}  # fmt: skip
#: CiA 303-2 unit codes the scale factors understand: angle units per revolution, length units per metre.
_ANGLE = {0x10: ("rad", 2 * math.pi), 0x41: ("degree", 360.0), 0xB4: ("revolution", 1.0)}
_LENGTH = {0x01: ("metre", 1.0)}
_TIME = {0x03: ("second", 1.0), 0x47: ("minute", 60.0), 0x48: ("hour", 3600.0)}


@dataclass(frozen=True)
class EdsObject:
    """One (sub-)object of the object dictionary."""

    index: int
    sub: int
    name: str
    data_type: int | None
    access: str
    pdo_mapping: bool
    default: str | None
    value: str | None  # ParameterValue (a DCF's configured value)

    @property
    def bits(self) -> int | None:
        """Size in a PDO, for the data types a PDO can carry."""
        return _BITS.get(self.data_type) if self.data_type is not None else None


@dataclass(frozen=True)
class SiUnit:
    """A CiA 402 SI unit object (0x60A8/0x60A9): a power of ten times a position unit (per time unit)."""

    raw: int
    exponent: int
    unit: str
    per_turn: float | None  # angle units per revolution (None: a length unit)
    per_metre: float | None
    time: str = ""  # velocity: the time unit
    time_s: float | None = None  # its length in seconds

    def describe(self) -> str:
        per = f" per {self.time}" if self.time else ""
        return f"0x{self.raw:08X} (10^{self.exponent} {self.unit}{per})"


@dataclass(frozen=True)
class Eds:
    """What timor uses of one EDS/DCF file."""

    path: Path
    vendor_name: str
    vendor_id: int | None
    product_code: int | None
    objects: dict[tuple[int, int], EdsObject]
    content: bytes = b""  # the file as lely's dcfgen reads it (eds_text.normalise_eds)
    original: bytes | None = None  # the vendor's bytes when ``content`` differs from them
    changes: tuple[str, ...] = ()  # what the normalisation changed
    # per listed object, the sub-indices lely's dcf.Device gives it (record headers and CompactSubObj arrays too)
    lely_subs: Mapping[int, frozenset[int]] = field(default_factory=dict)

    def get(self, index: int, sub: int = 0) -> EdsObject | None:
        return self.objects.get((index, sub))

    def has(self, index: int, sub: int = 0) -> bool:
        return (index, sub) in self.objects

    def number(self, index: int, sub: int = 0) -> int | None:
        """The object's configured value (ParameterValue), else its default; None if absent, empty, or
        depending on the node id (``$NODEID``)."""
        obj = self.get(index, sub)
        if obj is None:
            return None
        for text in (obj.value, obj.default):
            if text is None or not text.strip() or "$" in text:
                continue
            return cia_int(text)
        return None


def si_unit(raw: int, velocity: bool, where: str) -> SiUnit:
    """Decode a 0x60A8/0x60A9 value (bits 24-31 exponent, 16-23 position unit, 8-15 time unit), or raise
    InputError for a unit the scale factors cannot use (the profile can give them instead)."""
    exponent = (raw >> 24) & 0xFF
    exponent = exponent - 256 if exponent > 127 else exponent
    unit, time = (raw >> 16) & 0xFF, (raw >> 8) & 0xFF
    if unit in _ANGLE:
        name, per_turn, per_metre = _ANGLE[unit][0], _ANGLE[unit][1], None
    elif unit in _LENGTH:
        name, per_turn, per_metre = _LENGTH[unit][0], None, _LENGTH[unit][1]
    elif unit == 0xB5:  # increments of the encoder (maxon EPOS4: 0x60A8 = 0x00B50000, "inc")
        name, per_turn, per_metre = "increment", None, None
    else:
        raise InputError(
            f"{where}: position unit code 0x{unit:02X} is not one timor converts (increment, rad, degree, "
            "revolution, metre); "
            "give scale_pos_to_dev/scale_vel_to_dev in the profile",
            value=f"0x{raw:08X}",
        )
    time_name, time_s = "", None
    if velocity:
        if time not in _TIME:
            raise InputError(
                f"{where}: time unit code 0x{time:02X} is not one timor converts (second, minute, hour); give "
                "scale_vel_to_dev in the profile",
                value=f"0x{raw:08X}",
            )
        time_name, time_s = _TIME[time]
    return SiUnit(raw, exponent, name, per_turn, per_metre, time_name, time_s)


def read_eds(path: Path, field: str = "eds") -> Eds:
    """Read and parse an EDS/DCF file; InputError naming the file and the field for anything not usable."""
    try:
        size = path.stat().st_size
        if size > MAX_EDS_BYTES:
            raise InputError(f"{field}: file too large for an EDS/DCF (limit {MAX_EDS_BYTES} bytes)", value=size)
        with path.open("rb") as f:
            data = f.read(MAX_EDS_BYTES + 1)
    except OSError as exc:
        raise InputError(f"{field}: cannot read ({exc.strerror})", file=path) from None
    try:
        return parse_eds(data, path, field)
    except InputError as exc:  # name the EDS file itself (the error is located in the profile later)
        raise InputError(f"{exc.message} (file {path})", path=exc.path, value=exc.value) from None


_PARSED: OrderedDict[tuple[bytes, str], Eds] = OrderedDict()  # the last files parsed, by content
_PARSED_MOST = 16
_PARSED_BYTES = 1 << 20  # files up to 1 MiB are remembered (vendor EDS files are 20-200 kB)
_PARSED_LOCK = threading.Lock()


def parse_eds(data: bytes, path: Path, field: str = "eds") -> Eds:
    """Parse the bytes of an EDS/DCF file (see :func:`read_eds`) as lely's dcfgen reads them: normalised by
    :func:`~timor_core.hardware.eds_text.normalise_eds` first.

    The same bytes under the same file name are parsed once (a profile's drives often share one file, a
    bring-up reads its profile more than once, a vendor file is copied into many packages): the result of the
    last 16 files is kept, and each call gets it with its own path and its own copy of the objects' table; a file
    that changed is other bytes, parsed anew. Refusals are not kept (they name the path and the field).
    """
    if not isinstance(data, bytes):  # a bytearray or memoryview: not a key, parsed as it is
        return _parse_eds(data, path, field)
    key = (data, Path(path).name)  # a parse reads the path's name only (and names path and field in refusals)
    with _PARSED_LOCK:
        eds = _PARSED.get(key)
        if eds is not None:
            _PARSED.move_to_end(key)
    if eds is None:
        eds = _parse_eds(data, path, field)
        if len(data) <= _PARSED_BYTES:
            with _PARSED_LOCK:
                _PARSED[key] = eds
                while len(_PARSED) > _PARSED_MOST:
                    _PARSED.popitem(last=False)
    return replace(eds, path=path, objects=dict(eds.objects))


def _parse_eds(data: bytes, path: Path, field: str) -> Eds:
    """The parse behind :func:`parse_eds` (not remembered)."""
    if len(data) > MAX_EDS_BYTES:
        raise InputError(f"{field}: file too large for an EDS/DCF (limit {MAX_EDS_BYTES} bytes)", value=len(data))
    if not data.strip():
        raise InputError(f"{field}: the EDS/DCF file is empty", value=len(data))
    if b"\x00" in data:
        raise InputError(f"{field}: not an EDS/DCF text file (it holds NUL bytes)", value=data[:16])
    normalised = normalise_eds(data, path, field)
    text = normalised.data.decode("utf-8")
    try:
        ini = ini_sections(text.replace("\r\n", "\n").replace("\r", "\n"))  # line ends as lely reads them
    except configparser.Error as exc:
        first = str(exc).splitlines()[0]
        raise InputError(f"{field}: not an EDS/DCF file (INI sections expected): {first}", value=path.name) from None
    sections = {name.upper(): name for name in ini}
    if "DEVICEINFO" not in sections:
        raise InputError(f"{field}: not an EDS/DCF file: no [DeviceInfo] section", value=path.name)
    info = ini[sections["DEVICEINFO"]]
    objects: dict[tuple[int, int], EdsObject] = {}
    listed = {cia_int(v) for n in _LISTS if n in sections for k, v in ini[sections[n]].items() if k.isdigit()}
    for upper, name in sections.items():
        m = _SECTION.fullmatch(upper)
        if m is None or int(m.group(1), 16) not in listed:
            continue  # lely's dcfgen reads only the objects of [MandatoryObjects] etc. (normalise_eds lists all)
        s = ini[name]
        if m.group(2) is None and s.get("subnumber", "").strip() not in ("", "0"):
            continue  # a record/array header: its sub-objects are sections of their own
        try:
            data_type = int(s.get("datatype", ""), 0) if s.get("datatype", "").strip() else None
        except ValueError:
            raise InputError(f"{field}: [{name}] DataType is not a number", value=s.get("datatype")) from None
        key = (int(m.group(1), 16), int(m.group(2), 16) if m.group(2) else 0)
        objects[key] = EdsObject(
            key[0], key[1], s.get("parametername", "").strip(), data_type, s.get("accesstype", "").strip().lower(),
            bool(cia_int(s.get("pdomapping", "") or "0")), s.get("defaultvalue"), s.get("parametervalue"),
        )  # fmt: skip
    if not objects:
        raise InputError(f"{field}: the EDS/DCF file describes no objects", value=path.name)
    eds = Eds(path, info.get("vendorname", "").strip(), None, None, objects)
    vendor = _identity(info, "vendornumber", field) or eds.number(0x1018, 1) or None
    product = _identity(info, "productnumber", field) or eds.number(0x1018, 2) or None
    original = data if normalised.changes else None
    subs = _lely_subs(ini, sections, listed)
    return Eds(path, eds.vendor_name, vendor, product, objects, normalised.data, original, normalised.changes, subs)


def _lely_subs(
    ini: Mapping[str, Mapping[str, str]], sections: Mapping[str, str], listed: set[int | None]
) -> dict[int, frozenset[int]]:
    """The sub-indices of each listed, described object as lely's ``dcf.Object`` reads them: a record's sub-sections
    below 0xFF (``SubNumber``), 0..N of a ``CompactSubObj=N`` array, else sub 0 (what its PDO code looks up)."""
    out: dict[int, frozenset[int]] = {}
    for upper, name in sections.items():
        m = _SECTION.fullmatch(upper)
        if m is None or m.group(2) is not None or int(m.group(1), 16) not in listed:
            continue
        index, s = int(m.group(1), 16), ini[name]
        sub_number, compact = (cia_int(s.get(k, "").strip() or "0") for k in ("subnumber", "compactsubobj"))
        if sub_number:
            out[index] = frozenset(k for k in range(0xFF) if f"{upper}SUB{k:X}" in sections)
        else:
            out[index] = frozenset(range(compact + 1)) if compact else frozenset((0,))
    return out


def _identity(info: Mapping[str, str], key: str, field: str) -> int | None:
    text = info.get(key, "").strip()
    if not text:
        return None
    try:
        return int(text, 0)
    except ValueError:
        raise InputError(f"{field}: [DeviceInfo] {key} is not a number", value=text) from None
