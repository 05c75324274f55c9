"""A vendor's EDS/DCF text normalised to what lely's ``dcfgen`` reads (CiA 306 as vendor tools write it).

Vendor tools accept more notation than lely's reader (``dcf-tools``, run by ros2_canopen's build macros): object
counts in hex (``SupportedObjects=0x4F``, read by ``int(..., 10)``), decimal floats for REAL32/REAL64 values
(read as bit patterns), octal or ``+``-signed integers, ``0x180+$NODEID``, hex negatives of signed types
(``0xFD`` for -3), duplicate keys, indented keys (a continuation line to Python's INI reader), a missing object
list, objects described but not listed (lely reads only listed ones), a UTF-8 byte-order mark, Latin-1 text.
:func:`normalise_eds` rewrites exactly those values into the notation lely accepts, keeps everything else
byte for byte, and says what it changed; what cannot be rewritten without guessing (an unreadable number, an
unknown access type, two different values for one key, a missing DataType) is refused naming the file, the
section, the key and the value. Only sections lely reads are checked: the object lists, the listed objects
and their sub-objects, the identity keys of ``[DeviceInfo]`` and ``[DeviceComissioning]``.
"""

from __future__ import annotations

import configparser
import math
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from timor_core.errors import InputError, short_repr

__all__ = ["Normalised", "normalise_eds", "cia_int", "ini_sections"]

_OBJECT = re.compile(r"([0-9A-F]{4})(?:SUB([0-9A-F]{1,2}))?")
_LISTS = ("MandatoryObjects", "OptionalObjects", "ManufacturerObjects")
_ACCESS = ("ro", "wo", "rw", "rwr", "rww", "const")
_INLINE = re.compile(r"\s[;#].*$")  # an inline comment as lely's INI reader drops it: after whitespace
_INT_KEYS = ("objecttype", "datatype", "subnumber", "compactsubobj", "pdomapping")
_VALUE_KEYS = ("defaultvalue", "parametervalue", "lowlimit", "highlimit")
_HEADER_INTS = {"deviceinfo": ("vendornumber", "productnumber", "revisionnumber", "compactpdo", "nrofrxpdo",
                               "nroftxpdo"),
                "devicecomissioning": ("nodeid", "lss_serialnumber")}  # fmt: skip
_SIGNED_BITS = {0x2: 8, 0x3: 16, 0x4: 32, 0x10: 24, 0x12: 40, 0x13: 48, 0x14: 56, 0x15: 64}
_INT_TYPES = (0x1, 0x5, 0x6, 0x7, 0x16, 0x18, 0x19, 0x1A, 0x1B, *_SIGNED_BITS)
_REAL = {0x8: ("<f", "<L", 8), 0x11: ("<d", "<Q", 16)}
_INT = re.compile(r"([+-]?)(0[xX][0-9A-Fa-f]+|0[0-7]*|[1-9][0-9]*)")
_LELY_INT = re.compile(r"-?(0x[0-9A-F]+|0|[1-9][0-9]*)", re.IGNORECASE)  # what int(value, 0) and lely accept
_LELY_VALUE = re.compile(r"(\$NODEID\s*\+\s*)?(?P<v>-?0x[0-9A-F]+|-?[0-9]+)", re.IGNORECASE)  # lely's Value
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")  # lines as Python's file reading splits them


def _uncommented(value: str) -> str:
    """The value without its trailing comment (from the first ``;`` or ``#``, with the blanks before it). Not a
    regular expression: ``\\s*[;#]`` searched in a run of blanks costs the run's length at each of its characters
    (a value of 100,000 blanks took minutes)."""
    cuts = [i for i in (value.find(";"), value.find("#")) if i >= 0]
    return value[: min(cuts)].rstrip() if cuts else value


def _nodeid_offset(text: str) -> str | None:
    """``$NODEID``'s offset in ``$NODEID+a`` or ``a+$NODEID`` (blanks around ``+`` allowed): ``a``; ``""`` for
    ``$NODEID`` alone; None without ``$NODEID`` at either end. Found by hand, in linear time (a regular expression
    of ``.+?\\s*\\+`` backtracks quadratically through a long run of blanks)."""
    if text.upper() == "$NODEID":
        return ""
    if text[:7].upper() == "$NODEID":
        rest = text[7:].lstrip()
        if rest.startswith("+") and rest[1:].strip():
            return rest[1:].lstrip()
    if text[-7:].upper() == "$NODEID":
        head = text[:-7].rstrip()
        if head.endswith("+") and head[:-1].strip():
            return head[:-1].rstrip()
    return None


def _lines(text: str) -> list[str]:
    """The lines with their ends, split where lely's INI reader splits (not at str.splitlines' form feeds etc.)."""
    return _LINE.findall(text)


def _cut(line: str) -> int:
    """Where an INI line's key ends: its first ``=`` or ``:``, -1 if it has neither."""
    equals = line.find("=")
    colon = line.find(":", 0, equals) if equals >= 0 else line.find(":")
    return colon if colon >= 0 else equals


@dataclass(frozen=True)
class Normalised:
    """A vendor file as lely's dcfgen reads it: the bytes, and what was changed (none: the original bytes)."""

    data: bytes
    changes: tuple[str, ...]


def cia_int(text: str) -> int | None:
    """An integer in CiA 306 notation (decimal, ``0x`` hex, ``0`` octal, optional sign) of at most 64 bits in
    magnitude (the widest CiA type), else None: a text of thousands of digits is no number a drive holds, and
    Python refuses to read one of more than 4,300 decimal digits or to write it back."""
    m = _INT.fullmatch(text.strip())
    if m is None:
        return None
    sign, digits = m.groups()
    significant = digits[2:].lstrip("0") if digits[:2].lower() == "0x" else digits.lstrip("0")
    if len(significant) > 22:  # 2**64 has 20 decimal, 17 hex, 22 octal digits: checked exactly below
        return None
    if digits[:2].lower() == "0x":
        value = int(digits, 16)
    elif digits.startswith("0") and len(digits) > 1:
        value = int(digits, 8)
    else:
        value = int(digits)
    if value >= 1 << 64:
        return None
    return -value if sign == "-" else value


class _Reader:
    """The file as INI sections (mirroring Python's configparser as lely uses it), with its line numbers."""

    def __init__(self, text: str, path: Path, field: str) -> None:
        self.path, self.field = path, field
        self.order: list[str] = []  # section names, upper-case, in file order
        self.names: dict[str, str] = {}  # upper -> as written
        self.keys: dict[str, dict[str, tuple[str, str]]] = {}  # upper section -> lower key -> (key, value)
        self.changes: list[str] = []
        section, keys = None, {}
        for number, raw in enumerate(_lines(text), 1):
            line = raw.strip()
            if not line or line[0] in ";#":
                continue
            if line.startswith("[") and line.endswith("]"):
                section = line[1:-1].strip()
                keys = self._section(section)
                continue
            cut = _cut(line)
            if section is None or cut <= 0:
                self.changes.append(f"line {number} {line[:40]!r}: not key=value in a section, commented out")
                continue
            key = line[:cut].strip()
            if raw[0].isspace():
                self.changes.append(f"[{section}] {key}: indentation removed (line {number})")
            if key.lower() in keys:
                self._key(section, key, line[cut + 1 :].strip())
            else:
                keys[key.lower()] = (key, line[cut + 1 :].strip())

    def _section(self, name: str) -> dict[str, tuple[str, str]]:
        """Start (or go on with) a section; its keys."""
        upper = name.upper()
        if upper in self.keys:
            self.changes.append(f"[{name}]: a second section of this name merged into the first")
            return self.keys[upper]
        self.order.append(upper)
        self.names[upper] = name
        self.keys[upper] = {}
        return self.keys[upper]

    def _key(self, section: str, key: str, value: str) -> None:
        """A key given again in its section: the first value kept (a different one refused where lely reads it)."""
        old = self.keys[section.upper()][key.lower()]
        read = _OBJECT.fullmatch(section.upper()) is not None or section.lower() in _HEADER_INTS
        if old[1] != value and read:
            self.refuse(
                section,
                key,
                value,
                f"given twice with different values ({short_repr(old[1], 120)} and {short_repr(value, 120)})",
            )
        self.changes.append(f"[{section}] {key}: repeated ({value!r}), the first ({old[1]!r}) kept")

    def get(self, section: str, key: str) -> str | None:
        entry = self.keys.get(section.upper(), {}).get(key.lower())
        return entry[1] if entry is not None else None

    def refuse(self, section: str, key: str, value: str, why: str) -> NoReturn:
        where = f"[{section}] {key}".strip() if key else f"[{section}]"
        shown = short_repr(value, 120)
        raise InputError(
            f"{self.field}: {self.path.name} {where} = {shown}: {why}, which lely's dcfgen cannot read "
            "(fix the file or ask the vendor for a CiA 306 one)",
            file=self.path,
            value=value,
        )


def _decode(data: bytes) -> tuple[str, list[str]]:
    changes = []
    if data.startswith(b"\xef\xbb\xbf"):
        data, changes = data[3:], ["byte-order mark removed"]
    try:
        return data.decode("utf-8"), changes
    except UnicodeDecodeError:
        return data.decode("cp1252", errors="replace"), [*changes, "text re-encoded from Windows-1252 to UTF-8"]


def _number(r: _Reader, section: str, key: str, value: str) -> str:
    """An integer key (DataType, SubNumber, ...) in the notation ``int(value, 0)`` reads."""
    text = _uncommented(value).strip()
    number = cia_int(text)
    if number is None:
        why = "not an integer of at most 64 bits in CiA 306 notation (decimal, 0x hex, 0 octal)"
        r.refuse(section, key, value, why)
    return text if _LELY_INT.fullmatch(text) else str(number)


def _int_value(r: _Reader, section: str, key: str, text: str, data_type: int) -> str:
    lely = _LELY_VALUE.fullmatch(text)
    if (
        text.upper() == "$NODEID"
        or lely is not None
        and _LELY_INT.fullmatch(lely.group("v"))
        and cia_int(lely.group("v")) is not None  # at most 64 bits
        and not (_SIGNED_BITS.get(data_type) and "0x" in lely.group("v").lower() and not lely.group(1))
    ):
        return text  # as lely reads it (a signed type's hex value is checked below)
    nodeid = _nodeid_offset(text)
    if nodeid is not None:
        return f"$NODEID+{_int_value(r, section, key, nodeid, data_type)}" if nodeid else "$NODEID"
    if data_type == 0x1 and text.lower() in ("true", "false"):
        return "1" if text.lower() == "true" else "0"
    number = cia_int(text)
    if number is None:
        r.refuse(section, key, text, "not an integer of at most 64 bits in CiA 306 notation")
    bits = _SIGNED_BITS.get(data_type)
    if bits and text.lower().startswith("0x") and (1 << (bits - 1)) <= number < (1 << bits):
        return str(number - (1 << bits))  # 0xFD of an INTEGER8 is -3
    return text if _LELY_INT.fullmatch(text) else str(number)


def _value(r: _Reader, section: str, key: str, value: str, data_type: int | None) -> str:
    """DefaultValue/ParameterValue/LowLimit/HighLimit of a basic data type in lely's notation."""
    text = _uncommented(value).strip()
    if not text or data_type is None:
        return value
    if data_type in _INT_TYPES:
        return _int_value(r, section, key, text, data_type)
    if data_type in _REAL:
        if _LELY_INT.fullmatch(text):
            return text  # lely reads an integer as the bit pattern
        try:
            number = float(text)
        except ValueError:
            r.refuse(section, key, value, "not a number")
        real, raw, width = _REAL[data_type]
        if data_type == 0x8 and math.isfinite(number) and abs(number) > 3.4028234663852886e38:
            r.refuse(section, key, value, "outside REAL32")
        bits = struct.unpack(raw, struct.pack(real, number))[0]
        return f"0x{bits:0{width}X}"
    return value


def _lists(r: _Reader) -> dict[str, list[int]]:
    """The object lists as lely reads them, with every object the file describes, each listed once."""
    listed: dict[str, list[int]] = {name: [] for name in _LISTS}
    seen: set[int] = set()
    for name in _LISTS:
        count_text = r.get(name, "SupportedObjects")
        count = 0 if count_text is None else cia_int(_uncommented(count_text))
        if count is None or not 0 <= count <= 0x10000:
            r.refuse(name, "SupportedObjects", count_text or "", "not a count (0 to 65536 objects)")
        for k in range(1, count + 1):
            entry = r.get(name, str(k))
            index = cia_int(_uncommented(entry)) if entry is not None else None
            if entry is not None and (index is None or not 0 <= index <= 0xFFFF):
                r.refuse(name, str(k), entry, "not an object index")
            if index is None:
                r.changes.append(f"[{name}] {k}: missing entry left out of the list")
            elif f"{index:04X}" not in r.keys:
                r.changes.append(f"[{name}] {k}: 0x{index:04X} has no section: left out of the list")
            elif index not in seen:
                seen.add(index)
                listed[name].append(index)
    for upper in r.order:
        m = _OBJECT.fullmatch(upper)
        if m is not None and m.group(2) is None and int(m.group(1), 16) not in seen:
            index = int(m.group(1), 16)
            name = "MandatoryObjects" if index in (0x1000, 0x1001, 0x1018) else (
                "ManufacturerObjects" if 0x2000 <= index < 0x6000 else "OptionalObjects")  # fmt: skip
            r.changes.append(f"[{name}]: 0x{index:04X} described but not listed: listed")
            seen.add(index)
            listed[name].append(index)
    return listed


def _object_section(r: _Reader, upper: str, out: dict[str, str]) -> None:
    """Check and normalise one listed (sub-)object section; ``out``: lower key -> new value."""
    name = r.names[upper]
    keys = r.keys[upper]
    for key in _INT_KEYS:
        if key in keys and keys[key][1].strip():
            out[key] = _number(r, name, keys[key][0], keys[key][1])
    record = any(int(out.get(k, "0"), 0) for k in ("subnumber", "compactsubobj") if k in out)
    if "parametername" not in keys:
        r.refuse(name, "ParameterName", "", "missing")
    if record and "compactsubobj" not in out:
        return  # a record/array header: its sub-objects are sections of their own
    if "datatype" not in out:
        r.refuse(name, "DataType", keys.get("datatype", ("", ""))[1], "missing")
    access = keys.get("accesstype", ("AccessType", ""))[1]
    if _INLINE.sub("", access).strip().lower() not in _ACCESS:
        r.refuse(name, "AccessType", access, f"not one of {', '.join(_ACCESS)}")
    if "accesstype" in keys:
        out["accesstype"] = _INLINE.sub("", access).strip()  # lely's reader drops an inline comment
    data_type = int(out["datatype"], 0)
    for key in _VALUE_KEYS:
        if key in keys:
            out[key] = _value(r, name, keys[key][0], keys[key][1], data_type)


def _edits(r: _Reader, listed: dict[str, list[int]]) -> dict[str, dict[str, str]]:
    """Per section (upper case): lower key -> normalised value, for every key lely reads as a number."""
    edits: dict[str, dict[str, str]] = {}
    indices = {i for objects in listed.values() for i in objects}
    for upper in r.order:
        m = _OBJECT.fullmatch(upper)
        if m is not None and int(m.group(1), 16) in indices:
            edits[upper] = {}
            _object_section(r, upper, edits[upper])
        elif upper.lower() in _HEADER_INTS:
            keys = r.keys[upper]
            edits[upper] = {k: _number(r, r.names[upper], keys[k][0], keys[k][1])
                            for k in _HEADER_INTS[upper.lower()] if k in keys and keys[k][1].strip()}  # fmt: skip
    return edits


def _list_lines(name: str, objects: list[int], nl: str) -> list[str]:
    return [f"[{name}]{nl}", f"SupportedObjects={len(objects)}{nl}",
            *(f"{k}=0x{index:04X}{nl}" for k, index in enumerate(objects, 1)), nl]  # fmt: skip


def _header(raw: str, r: _Reader) -> str:
    """A section header as lely looks it up: ``[1018sub1]``, not ``[1018sub01]``."""
    name = raw.strip()[1:-1].strip()
    m = _OBJECT.fullmatch(name.upper())
    if m is None or m.group(2) is None or f"{int(m.group(2), 16):X}" == m.group(2):
        return raw
    fixed = f"{m.group(1)}sub{int(m.group(2), 16):X}"
    r.changes.append(f"[{name}]: renamed [{fixed}] (lely looks sub-indices up without leading zeros)")
    return raw.replace(name, fixed)


def _rewrite(text: str, r: _Reader, listed: dict[str, list[int]], edits: dict[str, dict[str, str]]) -> str:
    """The text with the edits applied line by line, repeated sections merged into the first, repeated keys
    and lines that are not ``key=value`` dropped or commented out, and the object lists written anew."""
    nl = "\r\n" if "\r\n" in text else "\n"
    lists = {n.upper(): n for n in _LISTS}
    blocks: dict[str, list[str]] = {"": []}
    seen: dict[str, set[str]] = {"": set()}
    section, block, keep, edit, listing = "", blocks[""], seen[""], {}, False  # the section's
    for raw in _lines(text):
        raw = raw if raw[-1] in "\n\r" else raw + nl  # the last line: the lists may follow it
        line = raw.strip()
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip().upper()
            if section not in blocks:
                blocks[section] = _list_lines(lists[section], listed[lists[section]], nl) if section in lists else [
                    _header(raw, r)]  # fmt: skip
                seen[section] = set()
            block, keep, edit, listing = blocks[section], seen[section], edits.get(section, {}), section in lists
            continue
        if listing:
            continue  # the list's keys and comments: written anew
        if not line or line[0] in ";#":
            block.append(raw)
            continue
        cut = _cut(line)
        if cut <= 0 or not section:
            block.append(f"; {raw.lstrip()}")  # Python's INI reader would stop here
            continue
        key = line[:cut].strip()
        lower = key.lower()
        if lower in keep:
            continue
        keep.add(lower)
        value = line[cut + 1 :].strip()
        new = edit.get(lower, value)
        if new == value and not raw[0].isspace():
            block.append(raw)
        else:
            end = raw[len(raw.rstrip("\r\n")) :] or nl
            block.append(f"{key}={new}{end}")
    for upper, name in lists.items():
        if upper not in blocks:
            blocks[upper] = _list_lines(name, listed[name], nl)
    return "".join(line for block in blocks.values() for line in block)


def normalise_eds(data: bytes, path: Path, field: str = "eds") -> Normalised:
    """The file in the notation lely's dcfgen reads (see the module docstring); InputError naming file,
    section, key and value for what cannot be rewritten."""
    text, changes = _decode(data)
    r = _Reader(text, path, field)
    listed = _lists(r)
    edits = _edits(r, listed)
    out = _rewrite(text, r, listed, edits)
    changed = [*changes, *r.changes]
    for upper, keys in edits.items():
        for key, new in keys.items():
            old = r.keys[upper][key][1]
            if new != old:
                changed.append(f"[{r.names[upper]}] {r.keys[upper][key][0]}: {old} -> {new}")
    for name in _LISTS:
        old_count = r.get(name, "SupportedObjects")
        if old_count is None or old_count.strip() != str(len(listed[name])):
            changed.append(f"[{name}] SupportedObjects: {old_count} -> {len(listed[name])}")
    if not changed and out == text:
        return Normalised(data, ())
    if not changed:
        changed.append("object lists rewritten in order")
    head = [f"; timor: normalised for lely's dcfgen from the vendor's {path.name} (kept in original/)"]
    head += [f";   {c}" for c in changed[:40]] + (
        [f";   ... and {len(changed) - 40} more"] if len(changed) > 40 else []
    )
    nl = "\r\n" if "\r\n" in text else "\n"
    return Normalised((nl.join(head) + nl + out).encode("utf-8"), tuple(changed))


def ini_sections(text: str) -> dict[str, dict[str, str]]:
    """The sections of an INI text (name as written -> lower-case key -> value) as Python's
    ``RawConfigParser(strict=False, interpolation=None, comment_prefixes=(";", "#"))`` reads it, and its
    ``configparser.Error`` where it refuses the text.

    A plain text (what :func:`normalise_eds` writes: no indented line, every line a comment, a ``[section]`` or a
    ``key=value`` in a section, no ``[DEFAULT]``) is read here line by line, several times faster than by
    configparser; anything else is read by configparser itself, so the result is its own either way."""
    sections: dict[str, dict[str, str]] = {}
    keys: dict[str, str] | None = None
    for line in text.split("\n"):  # configparser reads a text's lines at "\n" only
        value = line.strip()
        if not value or value[0] in ";#":
            continue  # without indented lines, an empty line continues no value
        if line[0].isspace():
            return _configparser_sections(text)  # a continuation line, or one it may be
        if value[0] == "[":
            if value[-1] != "]" or len(value) < 3 or value == "[DEFAULT]":
                return _configparser_sections(text)
            keys = sections.setdefault(value[1:-1], {})  # strict=False: a repeated section goes on
            continue
        cut = _cut(value)
        if keys is None or cut <= 0:
            return _configparser_sections(text)  # no section yet, no key, or no delimiter: its error
        keys[value[:cut].rstrip().lower()] = value[cut + 1 :].strip()  # a repeated key: the last one
    return sections


def _configparser_sections(text: str) -> dict[str, dict[str, str]]:
    """:func:`ini_sections` by configparser itself."""
    ini = configparser.RawConfigParser(strict=False, interpolation=None, comment_prefixes=(";", "#"))
    ini.read_string(text)
    return {name: dict(ini[name].items()) for name in ini.sections()}
