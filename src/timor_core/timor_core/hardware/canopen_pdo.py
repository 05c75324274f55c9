"""What the CANopen master writes to a CiA 402 drive at boot, checked against the drive's EDS before it is planned.

lely's ``dcfgen`` turns bus.yml into SDO writes the master sends when the drive boots: the ``sdo`` entries, and
for each PDO its COB-ID (communication parameter sub 1), a TPDO's transmission type (sub 2) and its mapping
(sub 0, the entries, sub 0 again). A drive answers a write to a read-only or constant object with an SDO abort
(0x06010002) and its boot fails, so every such object is checked here against the EDS's ``AccessType``: a
read-only ``sdo`` entry is left out when the EDS says it already holds the wanted value and refused naming the
object otherwise; a PDO parameter that would be written but is read-only is refused; a PDO that is to be switched
off but whose COB-ID is read-only is left as the drive has it. Each mapped object must be PDO-mappable
(``PDOMapping=1``) and accessible in its direction (an RPDO writes it: rw, wo, rww; a TPDO reads it: ro, rw,
rwr, const).

PDOs as in ros2_canopen's CiA 402 examples: RPDO 1 controlword + modes of operation, RPDO 2 the target of the
mode; TPDO 1 statusword + modes of operation display, TPDO 2 position + velocity actual value (all on SYNC);
further PDOs of the drive are switched off. The optional 0x6060/0x6061/0x606C stay off the PDOs when they
cannot be mapped, or when the drive's mapping object has no sub-index for them (lely writes only sub-indices
the EDS describes). A drive whose mapping cannot be written (its number of entries ``const``, a fixed PDO set)
is used with its own PDOs instead: those that map only objects the driver reads or writes, as long as they
carry the required ones.

Besides, :func:`check_lely_device` checks what lely's ``dcfgen`` looks up to build a slave from the file
at all (``dcf.Device``): the mandatory objects 0x1000 and 0x1018 sub 1, for every PDO communication object its
mapping object, and every object its default mapping names. A file without them passes CiA 306 parsing but
stops the package's build with a ``KeyError``, so it is refused here naming the file and the object.
"""

from __future__ import annotations

from dataclasses import dataclass

from timor_core.errors import InputError
from timor_core.hardware.eds import Eds

__all__ = ["NAMES", "TARGET", "Pdo", "plan_pdos", "boot_sdos", "writable", "check_lely_device"]

NAMES = {0x6040: "controlword", 0x6041: "statusword", 0x6060: "modes of operation",
         0x6061: "modes of operation display", 0x6064: "position actual value", 0x606C: "velocity actual value",
         0x607A: "target position", 0x60FF: "target velocity", 0x6071: "target torque"}  # fmt: skip
TARGET = {"position": 0x607A, "velocity": 0x60FF, "effort": 0x6071}
_WRITE = ("rw", "wo", "rww", "rwr")
_DIRECTION = {"RPDO": ("rw", "wo", "rww"), "TPDO": ("ro", "rw", "rwr", "const")}
_OPTIONAL = (0x6060, 0x6061, 0x606C)
# the data types lely's dcf.DataType knows: a dummy entry (index < 0x1000) of a PDO mapping must name one
_DUMMY_TYPES = frozenset((*range(0x1, 0xE), 0xF, *range(0x10, 0x17), *range(0x18, 0x1C)))


@dataclass(frozen=True)
class Pdo:
    """One PDO of the drive the master uses: its number (1 = 0x1400/0x1800), the objects it carries, and whether
    that mapping is the drive's own (``fixed``: its count cannot be written, so bus.yml leaves it as it is)."""

    number: int
    entries: tuple[int, ...]
    fixed: bool = False


def writable(eds: Eds, index: int, sub: int) -> bool:
    """Whether the master may write the (sub-)object at boot (AccessType rw, wo, rww, rwr)."""
    obj = eds.get(index, sub)
    return obj is not None and obj.access in _WRITE


def _refuse(eds: Eds, index: int, sub: int, why: str, where: str) -> InputError:
    obj = eds.get(index, sub)
    access = obj.access if obj is not None else "absent"
    section = f"{index:04X}sub{sub:X}" if sub or eds.has(index, 1) else f"{index:04X}"
    name = f" ({obj.name})" if obj is not None and obj.name else ""
    return InputError(
        f"{eds.path.name} [{section}] AccessType={access}: object 0x{index:04X} sub {sub}{name} {why}",
        file=eds.path,
        path=f"{where}.eds",
        value=access,
    )


def boot_sdos(eds: Eds, wanted: list[tuple[int, int, int, str]], where: str) -> list[tuple[int, int, int, str]]:
    """The ``sdo`` entries to write: a read-only one is left out when the EDS's value already is the wanted one
    (a drive that fixes 0x60C2 sub 2 at -3), and refused naming the object when it is not."""
    out = []
    for index, sub, value, comment in wanted:
        if writable(eds, index, sub):
            out.append((index, sub, value, comment))
        elif eds.get(index, sub) is not None and eds.number(index, sub) == value:
            continue  # read-only, and already what the master would write
        else:
            have = eds.number(index, sub)
            raise _refuse(eds, index, sub, f"cannot be written at boot, and the drive holds {have}, not {value} "
                          f"({comment})", where)  # fmt: skip
    return out


def _mappable(eds: Eds, index: int, kind: str, required: bool, command: str, where: str) -> bool:
    obj = eds.get(index)
    if obj is None:
        if required or index in (0x6060, 0x6061):
            raise InputError(
                f"{eds.path.name} has no object 0x{index:04X} ({NAMES[index]}) that the {command} command "
                "of ros2_canopen's Cia402Driver needs",
                file=eds.path,
                path=f"{where}.operation_mode",
            )
        return False
    fits = obj.pdo_mapping and obj.access in _DIRECTION[kind]
    if required and not fits:
        why = "cannot be PDO-mapped (PDOMapping=0)" if not obj.pdo_mapping else f"cannot be in a {kind}"
        raise _refuse(eds, index, 0, why, where)
    return fits


def _entries(eds: Eds, kind: str, k: int, wanted: tuple[int, ...], command: str, where: str) -> tuple[int, ...]:
    """The objects of one PDO: the required first one(s), the optional ones that can be mapped and fit."""
    mapping = (0x1600 if kind == "RPDO" else 0x1A00) + k
    out: list[int] = []
    for index in wanted:
        optional = index in _OPTIONAL
        if _mappable(eds, index, kind, not optional, command, where) and (
            not optional or eds.has(mapping, len(out) + 1)
        ):
            out.append(index)
    return tuple(out)


def _check_pdo(eds: Eds, kind: str, k: int, entries: tuple[int, ...], where: str) -> None:
    comm = (0x1400 if kind == "RPDO" else 0x1800) + k
    mapping = comm + 0x200
    if not eds.has(comm, 1) or not eds.has(mapping, len(entries)):
        raise InputError(
            f"{eds.path.name} has no {kind} {k + 1} with {len(entries)} entries "
            f"(0x{comm:04X}, 0x{mapping:04X}) for ros2_canopen's CiA 402 mapping",
            file=eds.path,
            path=f"{where}.eds",
        )
    bits = sum(obj.bits or 64 for obj in (eds.get(i) for i in entries) if obj is not None)
    if bits > 64:
        raise InputError(f"{eds.path.name}: {kind} {k + 1} would carry {bits} bits (at most 64)", path=where)
    written = [(comm, 1), *((mapping, s) for s in range(len(entries) + 1))]
    if kind == "TPDO" and eds.number(comm, 2) != 1:
        written.append((comm, 2))  # transmission type: on every SYNC
    for index, sub in written:
        if not writable(eds, index, sub):
            raise _refuse(eds, index, sub, f"is written at boot to set up {kind} {k + 1}", where)


def _fixed_entries(eds: Eds, mapping: int) -> tuple[int, ...] | None:
    """The objects a PDO mapping holds by default (its EDS values), None if not all are given."""
    count = eds.number(mapping, 0)
    if not count or not 0 < count <= 64:  # CiA 301: at most 64 mapped objects
        return None
    values = [eds.number(mapping, sub) for sub in range(1, count + 1)]
    if None in values:
        return None
    return tuple(v >> 16 for v in values if v is not None)


def _fixed(eds: Eds, kind: str, required: set[int], optional: set[int], command: str, where: str) -> list[Pdo]:
    """The drive's own PDOs that carry only wanted objects, each adding one; empty if the required are not all
    covered."""
    base = 0x1400 if kind == "RPDO" else 0x1800
    chosen: list[Pdo] = []
    covered: set[int] = set()
    for k in range(512):
        entries = _fixed_entries(eds, base + 0x200 + k) if eds.has(base + k, 1) else None
        if not entries or not set(entries) <= required | optional or set(entries) <= covered:
            continue
        if not all(_mappable(eds, i, kind, False, command, where) for i in entries):
            continue
        written = [(base + k, 1)] + ([(base + k, 2)] if kind == "TPDO" and eds.number(base + k, 2) != 1 else [])
        if all(writable(eds, i, s) for i, s in written):
            chosen.append(Pdo(k + 1, entries, fixed=True))
            covered |= set(entries)
    for pdo in list(chosen):  # one that the others already carry is not needed
        if set(pdo.entries) <= {i for other in chosen if other is not pdo for i in other.entries}:
            chosen.remove(pdo)
    return chosen if required <= covered else []


def _layout(eds: Eds, kind: str, groups: tuple[tuple[int, ...], ...], command: str, where: str) -> tuple[Pdo, ...]:
    """ros2_canopen's layout in PDOs 1, 2, ...; else, for a fixed PDO set, the drive's own PDOs that fit."""
    try:
        pdos = tuple(Pdo(k + 1, _entries(eds, kind, k, group, command, where)) for k, group in enumerate(groups))
        for pdo in pdos:
            _check_pdo(eds, kind, pdo.number - 1, pdo.entries, where)
        return pdos
    except InputError as exc:
        wanted = {i for group in groups for i in group}
        required = wanted - set(_OPTIONAL)
        for index in required:
            _mappable(eds, index, kind, True, command, where)
        fixed = _fixed(eds, kind, required, wanted & set(_OPTIONAL), command, where)
        if not fixed:
            raise exc from None
        return tuple(fixed)


def _off(eds: Eds, base: int, used: tuple[Pdo, ...]) -> tuple[int, ...]:
    """The further PDOs to switch off: those whose COB-ID the master can write (or that are off already)."""
    out = []
    numbers = {pdo.number for pdo in used}
    for k in range(512):
        if k + 1 in numbers or not eds.has(base + k, 1):
            continue
        cob_id = eds.number(base + k, 1)
        if writable(eds, base + k, 1) or cob_id is not None and cob_id & 0x80000000:
            out.append(k + 1)
    return tuple(out)


def plan_pdos(
    eds: Eds, command: str, where: str
) -> tuple[tuple[Pdo, ...], tuple[Pdo, ...], tuple[int, ...], tuple[int, ...]]:
    """RPDOs, TPDOs and the RPDO/TPDO numbers to switch off (module docstring)."""
    rpdo = _layout(eds, "RPDO", ((0x6040, 0x6060), (TARGET[command],)), command, where)
    tpdo = _layout(eds, "TPDO", ((0x6041, 0x6061), (0x6064, 0x606C)), command, where)
    return rpdo, tpdo, _off(eds, 0x1400, rpdo), _off(eds, 0x1800, tpdo)


def _lely_refuse(eds: Eds, where: str, section: str, why: str, value: str = "") -> InputError:
    return InputError(
        f"{eds.path.name} [{section}]: {why}, and lely's dcfgen cannot build the drive's configuration from such a "
        "file (fix the file or ask the vendor for a complete one)",
        file=eds.path,
        path=f"{where}.eds",
        value=value or section,
    )


def _mapping_entry(eds: Eds, mapping: int, sub: int, kind: str, where: str) -> None:
    """One default entry of a PDO mapping, as lely resolves it: a dummy data type, or a described (sub-)object."""
    value = eds.number(mapping, sub) or 0
    if value == 0:
        return
    index, entry_sub = value >> 16 & 0xFFFF, value >> 8 & 0xFF
    found = index in _DUMMY_TYPES and entry_sub == 0 if index < 0x1000 else entry_sub in eds.lely_subs.get(index, ())
    if not found:
        obj = eds.get(mapping, sub)
        key = "ParameterValue" if obj is not None and obj.value and obj.value.strip() else "DefaultValue"
        raise _lely_refuse(
            eds, where, f"{mapping:04X}sub{sub:X}",
            f"{key}=0x{value:08X}: {kind} {(mapping & 0x1FF) + 1} maps object 0x{index:04X} sub {entry_sub}, "
            "which the file does not describe", f"0x{value:08X}",
        )  # fmt: skip


def check_lely_device(eds: Eds, where: str) -> None:
    """Refuse a file lely's dcfgen cannot build a slave from (module docstring), naming the file and the object."""
    for index, sub, what in ((0x1000, 0, "device type"), (0x1018, 1, "identity object: vendor-ID")):
        if sub not in eds.lely_subs.get(index, ()):
            section = f"{index:04X}" if sub == 0 else f"{index:04X}sub{sub:X}"
            raise _lely_refuse(eds, where, section, f"missing: object 0x{index:04X} sub {sub} ({what}) is "
                               "mandatory in CiA 301")  # fmt: skip
    indices = eds.lely_subs  # a record header without sub-objects is an object to lely too
    for kind, comm in (("RPDO", 0x1400), ("TPDO", 0x1800)):
        for k in range(512):
            if comm + k not in indices:
                continue
            mapping = comm + 0x200 + k
            if mapping not in indices:
                raise _lely_refuse(eds, where, f"{mapping:04X}", f"missing: {kind} {k + 1} has its communication "
                                   f"object 0x{comm + k:04X} but no mapping object 0x{mapping:04X}")  # fmt: skip
            count = eds.number(mapping, 0) or 0
            for sub in range(1, min(count, 255) + 1):
                if sub in indices[mapping]:
                    _mapping_entry(eds, mapping, sub, kind, where)
