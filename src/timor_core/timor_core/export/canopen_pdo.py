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
the EDS describes).
"""

from __future__ import annotations

from timor_core.errors import InputError
from timor_core.export.eds import Eds

__all__ = ["NAMES", "TARGET", "Pdos", "plan_pdos", "boot_sdos", "writable"]

NAMES = {0x6040: "controlword", 0x6041: "statusword", 0x6060: "modes of operation",
         0x6061: "modes of operation display", 0x6064: "position actual value", 0x606C: "velocity actual value",
         0x607A: "target position", 0x60FF: "target velocity", 0x6071: "target torque"}  # fmt: skip
TARGET = {"position": 0x607A, "velocity": 0x60FF, "effort": 0x6071}
_WRITE = ("rw", "wo", "rww", "rwr")
_DIRECTION = {"RPDO": ("rw", "wo", "rww"), "TPDO": ("ro", "rw", "rwr", "const")}
_OPTIONAL = (0x6060, 0x6061, 0x606C)

Pdos = tuple[tuple[int, ...], ...]


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


def _off(eds: Eds, base: int, first: int) -> tuple[int, ...]:
    """The further PDOs to switch off: those whose COB-ID the master can write (or that are off already)."""
    out = []
    for k in range(first, 512):
        if not eds.has(base + k, 1):
            continue
        cob_id = eds.number(base + k, 1)
        if writable(eds, base + k, 1) or cob_id is not None and cob_id & 0x80000000:
            out.append(k + 1)
    return tuple(out)


def plan_pdos(eds: Eds, command: str, where: str) -> tuple[Pdos, Pdos, tuple[int, ...], tuple[int, ...]]:
    """RPDOs, TPDOs (their mapped objects) and the RPDO/TPDO numbers to switch off (module docstring)."""
    rpdo = (_entries(eds, "RPDO", 0, (0x6040, 0x6060), command, where),
            _entries(eds, "RPDO", 1, (TARGET[command],), command, where))  # fmt: skip
    tpdo = (_entries(eds, "TPDO", 0, (0x6041, 0x6061), command, where),
            _entries(eds, "TPDO", 1, (0x6064, 0x606C), command, where))  # fmt: skip
    for kind, pdos in (("RPDO", rpdo), ("TPDO", tpdo)):
        for k, entries in enumerate(pdos):
            _check_pdo(eds, kind, k, entries, where)
    return rpdo, tpdo, _off(eds, 0x1400, 2), _off(eds, 0x1800, 2)
