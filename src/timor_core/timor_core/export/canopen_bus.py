"""ros2_canopen's bus configuration for a robot's CiA 402 drives, checked against each drive's EDS/DCF file.

``bus_devices`` plans one ``ros2_canopen::Cia402Driver`` device per actuated joint: its device name (the
``device_name`` that canopen_ros2_control/RobotSystem looks up), node id, the EDS/DCF file it is configured from,
the command interface its mode of operation gives (``position_mode``/``velocity_mode``/``effort_mode``), the
scale factors between joint units and drive units, the PDO mapping and the SDOs for cyclic modes. ``bus_yml``
writes them in the flat form that ros2_canopen's ``generate_dcf()`` feeds to lely's ``dcfgen`` (the form of its
canopen_tests/robot_control, the RobotSystem example).

PDOs as in ros2_canopen's CiA 402 examples: RPDO 1 controlword + modes of operation, RPDO 2 the target of the
mode; TPDO 1 statusword + modes of operation display, TPDO 2 position + velocity actual value (all on SYNC);
further PDOs of the drive are switched off. An object the EDS does not have, or cannot map, is refused (the
optional 0x6060/0x6061/0x606C stay on SDO when not mappable). Cyclic modes also set the interpolation time
period 0x60C2 to the SYNC period. A mode the drive's supported drive modes (0x6502) exclude is refused.

Scale factors (``scale_pos_to_dev``: drive units per joint radian, or per metre): the drive's units come from
its EDS: 0x60A8/0x60A9 (SI unit position/velocity; absent: encoder increments, and increments per second), the
encoder's increments per motor revolution from the profile's ``encoder_counts`` or else 0x608F; the profile's
``gear_ratio`` is motor revolutions per joint revolution (per metre). ``scale_pos_to_dev``/``scale_vel_to_dev``
in the profile override both. A drive that scales positions itself (factor group 0x6091/0x6092 not 1/1, or the
older dimension indices 0x608A/0x608C set) needs both overrides.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from timor_core.errors import InputError
from timor_core.export.eds import Eds, SiUnit, si_unit
from timor_core.export.hardware import HardwareProfile, JointDrive
from timor_core.export.yaml_text import to_yaml

__all__ = ["BUS_NAME", "SYNC_PERIOD_US", "BusDevice", "bus_devices", "bus_yml", "command_interface"]

BUS_NAME = "bus"  # config/bus/bus.yml, built by generate_dcf(bus)
SYNC_PERIOD_US = 10_000
_PERIOD_MS = SYNC_PERIOD_US // 1000
_CYCLIC = (7, 8, 9, 10)
_COMMAND = {1: "position", 7: "position", 8: "position", 3: "velocity", 9: "velocity", 4: "effort", 10: "effort"}
_TARGET = {"position": 0x607A, "velocity": 0x60FF, "effort": 0x6071}
_NAMES = {0x6040: "controlword", 0x6041: "statusword", 0x6060: "modes of operation",
          0x6061: "modes of operation display", 0x6064: "position actual value", 0x606C: "velocity actual value",
          0x607A: "target position", 0x60FF: "target velocity", 0x6071: "target torque"}  # fmt: skip


@dataclass(frozen=True)
class BusDevice:
    """One drive of the bus as bus.yml configures it."""

    name: str  # its key in bus.yml = the joint's device_name
    joint: str
    module_id: str
    node_id: int
    dcf: str  # file name in config/bus/
    content: bytes  # that file (the vendor's, with the profile's identity added where the file has none)
    command: str  # position / velocity / effort
    mode: int
    scale_pos_to_dev: float
    scale_vel_to_dev: float
    rpdo: tuple[tuple[int, ...], ...]
    tpdo: tuple[tuple[int, ...], ...]
    off_rpdo: tuple[int, ...]  # further PDOs the drive has, switched off
    off_tpdo: tuple[int, ...]
    sdo: tuple[tuple[int, int, int, str], ...]  # index, sub-index, value, comment
    vendor_id: int
    product_code: int


def command_interface(mode: int, where: str = "$.drives.*") -> str:
    """The ros2_control command interface RobotSystem exports for a CiA 402 mode of operation (homing has none:
    InputError)."""
    if mode not in _COMMAND:
        raise InputError(
            "homing is not a mode to run a robot in: give a position, velocity or torque mode",
            path=f"{where}.operation_mode",
            value=mode,
        )
    return _COMMAND[mode]


def _device_name(joint: str, taken: set[str]) -> str:
    name = re.sub(r"[^A-Za-z0-9_]", "_", joint) or "joint"
    if name[0].isdigit() or name in ("master", "options", "defaults", "nodes"):
        name = f"joint_{name}"
    base, k = name, 2
    while name in taken:
        name, k = f"{base}_{k}", k + 1
    taken.add(name)
    return name


def _with_identity(data: bytes, vendor: int, product: int) -> bytes:
    """The file with VendorNumber/ProductNumber in [DeviceInfo] (lely's dcfgen puts them into master.dcf's
    expected identity 0x1F85/0x1F86, so the master checks the drive at boot)."""
    lines = data.decode("latin-1").splitlines(keepends=True)
    out, section = [], ""
    for line in lines:
        stripped = line.strip()
        if stripped.startswith("[") and stripped.endswith("]"):
            section = stripped[1:-1].strip().lower()
            out.append(line)
            if section == "deviceinfo":
                nl = "\r\n" if line.endswith("\r\n") else "\n"
                out += [f"; VendorNumber and ProductNumber from the hardware profile (timor){nl}",
                        f"VendorNumber=0x{vendor:08X}{nl}", f"ProductNumber=0x{product:08X}{nl}"]  # fmt: skip
            continue
        key = stripped.split("=", 1)[0].strip().lower()
        if section == "deviceinfo" and key in ("vendornumber", "productnumber"):
            continue
        out.append(line)
    return "".join(out).encode("latin-1")


def _unit(eds: Eds, index: int, velocity: bool, where: str) -> SiUnit | None:
    raw = eds.number(index)
    if raw is None:
        return None
    return si_unit(raw, velocity, f"{where}: {eds.path.name} 0x{index:04X}")


def _factor_group(eds: Eds, d_overrides: bool, where: str) -> None:
    """Refuse what the scale factors cannot account for (unless the profile gives them): a drive that scales
    positions itself (CiA 402 factor group 0x6091 gear ratio, 0x6092 feed constant, other than 1/1), or the
    older DSP 402 dimension indices 0x608A/0x608C set to a unit."""
    if d_overrides:
        return
    for index, name in ((0x6091, "gear ratio"), (0x6092, "feed constant")):
        pair = (eds.number(index, 1), eds.number(index, 2))
        if None not in pair and pair != (1, 1) and 0 not in pair:
            raise InputError(
                f"{eds.path.name}: the drive scales positions itself (0x{index:04X} {name} {pair[0]}/{pair[1]}): "
                "give scale_pos_to_dev and scale_vel_to_dev in the profile",
                file=eds.path,
                path=f"{where}.scale_pos_to_dev",
            )
    for index, name in ((0x608A, "position dimension index"), (0x608C, "velocity dimension index")):
        value = eds.number(index)
        if value and eds.number(0x60A8 if index == 0x608A else 0x60A9) is None:
            raise InputError(
                f"{eds.path.name}: 0x{index:04X} {name} {value} is a unit timor does not convert: give "
                "scale_pos_to_dev and scale_vel_to_dev in the profile",
                file=eds.path,
                path=f"{where}.scale_pos_to_dev",
                value=value,
            )


def _scales(jd: JointDrive, eds: Eds, where: str) -> tuple[float, float]:
    d = jd.drive
    _factor_group(eds, d.scale_pos_to_dev is not None and d.scale_vel_to_dev is not None, where)
    turns = d.turns_per_unit(jd.prismatic)
    pos_unit = _unit(eds, 0x60A8, False, where)
    vel_unit = _unit(eds, 0x60A9, True, where)
    counts: float | None = d.encoder_counts
    if counts is None:
        inc, rev = eds.number(0x608F, 1), eds.number(0x608F, 2)
        counts = inc / rev if inc and rev and (inc, rev) != (1, 1) else None

    def per_unit(unit: SiUnit | None, what: str) -> float:
        if unit is None or unit.unit == "increment":
            if counts is None:
                raise InputError(
                    f"{what}: the drive counts encoder increments and {eds.path.name} gives none per motor "
                    "revolution (0x608F): give encoder_counts in the profile",
                    file=eds.path,
                    path=f"{where}.encoder_counts",
                )
            value = counts * turns
        elif unit.per_turn is not None:
            value = turns * unit.per_turn
        elif jd.prismatic:
            value = unit.per_metre or 1.0
        else:
            raise InputError(f"{what}: {eds.path.name} gives a length unit for a revolute joint's drive", file=eds.path,
                             path=f"{where}.eds", value=unit.describe())  # fmt: skip
        return value / 10.0**unit.exponent if unit is not None else value

    pos = d.scale_pos_to_dev if d.scale_pos_to_dev is not None else per_unit(pos_unit, "position")
    if d.scale_vel_to_dev is not None:
        vel = d.scale_vel_to_dev
    elif vel_unit is None:
        vel = pos  # CiA 402 default: position units per second
    else:
        vel = per_unit(vel_unit, "velocity") * (vel_unit.time_s or 1.0)
    for key, value in (("scale_pos_to_dev", pos), ("scale_vel_to_dev", vel)):
        if not (math.isfinite(value) and 1e-12 <= value <= 1e12):
            raise InputError(
                f"{key} would be {value!r}: check gear_ratio, encoder_counts and the EDS units",
                path=f"{where}.gear_ratio",
                value=d.gear_ratio,
            )
    return pos, vel


def _pdos(eds: Eds, command: str, where: str) -> tuple[tuple[tuple[int, ...], ...], tuple[tuple[int, ...], ...]]:
    target = _TARGET[command]

    def mappable(index: int, required: bool) -> bool:
        obj = eds.get(index)
        if obj is None:
            if required or index in (0x6060, 0x6061):
                raise InputError(
                    f"{eds.path.name} has no object 0x{index:04X} ({_NAMES[index]}) that the {command} command "
                    "of ros2_canopen's Cia402Driver needs",
                    file=eds.path,
                    path=f"{where}.operation_mode",
                )
            return False
        if not obj.pdo_mapping and required:
            raise InputError(
                f"{eds.path.name}: object 0x{index:04X} ({_NAMES[index]}) cannot be PDO-mapped (PDOMapping=0)",
                file=eds.path,
                path=f"{where}.eds",
            )
        return obj.pdo_mapping

    rpdo = ((0x6040, *([0x6060] if mappable(0x6060, False) else [])), (target,) if mappable(target, True) else ())
    tpdo = ((0x6041, *([0x6061] if mappable(0x6061, False) else [])),
            (0x6064, *([0x606C] if mappable(0x606C, False) else [])))  # fmt: skip
    mappable(0x6040, True), mappable(0x6041, True), mappable(0x6064, True)
    for kind, base, pdos in (("RPDO", 0x1400, rpdo), ("TPDO", 0x1800, tpdo)):
        for k, entries in enumerate(pdos):
            if not eds.has(base + k, 1) or not eds.has(base + 0x200 + k, len(entries)):
                raise InputError(
                    f"{eds.path.name} has no {kind} {k + 1} with {len(entries)} entries "
                    f"(0x{base + k:04X}, 0x{base + 0x200 + k:04X}) for ros2_canopen's CiA 402 mapping",
                    file=eds.path,
                    path=f"{where}.eds",
                )
            bits = sum(obj.bits or 64 for obj in (eds.get(i) for i in entries) if obj is not None)
            if bits > 64:
                raise InputError(f"{eds.path.name}: {kind} {k + 1} would carry {bits} bits (at most 64)", path=where)
    return rpdo, tpdo


def _off(eds: Eds, base: int) -> tuple[int, ...]:
    return tuple(k + 1 for k in range(2, 512) if eds.has(base + k, 1))


def bus_devices(drives: tuple[JointDrive, ...] | list[JointDrive], profile: HardwareProfile) -> list[BusDevice]:
    """Plan the bus (see the module docstring); InputError naming the drive's field for anything its EDS refuses."""
    names: set[str] = set()
    files: dict[tuple[Path, int, int, bool], str] = {}
    used: set[str] = {"master.dcf"}  # dcfgen's output in the same folder
    out = []
    for jd in drives:
        d, eds = jd.drive, jd.drive.eds_info
        assert d.eds is not None and eds is not None and d.vendor_id is not None and d.product_code is not None
        where = f"$.drives.{jd.module_id}"
        command = command_interface(d.mode, where)
        supported = eds.number(0x6502)  # supported drive modes: bit k is mode k + 1
        if supported and not supported >> (d.mode - 1) & 1:
            raise InputError(
                f"{eds.path.name}: the drive does not support {d.operation_mode} (mode {d.mode}; its supported "
                f"drive modes 0x6502 are 0x{supported:08X})",
                file=eds.path,
                path=f"{where}.operation_mode",
                value=d.operation_mode,
            )
        rpdo, tpdo = _pdos(eds, command, where)
        sdo: list[tuple[int, int, int, str]] = []
        if d.mode in _CYCLIC:
            for sub in (1, 2):
                if not eds.has(0x60C2, sub):
                    raise InputError(
                        f"{eds.path.name} has no interpolation time period 0x60C2 sub {sub}, which the cyclic "
                        f"mode {d.operation_mode} needs",
                        file=eds.path,
                        path=f"{where}.operation_mode",
                        value=d.operation_mode,
                    )
            sdo += [(0x60C2, 1, _PERIOD_MS, f"interpolation time period: {_PERIOD_MS} (the SYNC period)"),
                    (0x60C2, 2, -3, "... in 10^-3 s")]  # fmt: skip
        sdo.append((0x6060, 0, d.mode, f"modes of operation: {d.operation_mode}"))
        pos, vel = _scales(jd, eds, where)
        fill = eds.vendor_id is None or eds.product_code is None
        key = (d.eds, d.vendor_id, d.product_code, fill) if fill else (d.eds, 0, 0, False)
        if key not in files:
            stem = re.sub(r"[^A-Za-z0-9_.-]", "_", d.eds.stem).strip(".") or "drive"
            suffix = d.eds.suffix.lower() if d.eds.suffix.lower() in (".eds", ".dcf") else ".eds"
            if fill:
                stem += f"_{d.vendor_id:08x}_{d.product_code:08x}"
            name, k = stem + suffix, 2
            while name in used:
                name, k = f"{stem}_{k}{suffix}", k + 1
            used.add(name)
            files[key] = name
        content = d.eds.read_bytes()
        if fill:
            content = _with_identity(content, d.vendor_id, d.product_code)
        out.append(BusDevice(
            _device_name(jd.joint, names), jd.joint, jd.module_id, jd.node_id, files[key], content, command,
            d.mode, pos, vel, rpdo, tpdo, _off(eds, 0x1400), _off(eds, 0x1800), tuple(sdo), d.vendor_id,
            d.product_code,
        ))  # fmt: skip
    return out


def _pdo_data(kind: str, pdos: tuple[tuple[int, ...], ...], off: tuple[int, ...]) -> dict[int, dict[str, Any]]:
    """The ``rpdo``/``tpdo`` section of a device: the mapped PDOs in order, then the ones switched off."""
    out: dict[int, dict[str, Any]] = {}
    for k, entries in enumerate(pdos):
        pdo: dict[str, Any] = {"enabled": True, "cob_id": "auto"}
        if kind == "tpdo":
            pdo["transmission"] = 1
        pdo["mapping"] = [{"index": i, "sub_index": 0} for i in entries]
        out[k + 1] = pdo
    out.update({k: {"enabled": False} for k in off})
    return out


def _device_data(dev: BusDevice) -> dict[str, Any]:
    return {
        "node_id": dev.node_id,
        "dcf": dev.dcf,
        "driver": "ros2_canopen::Cia402Driver",
        "package": "canopen_402_driver",
        "period": _PERIOD_MS,
        f"{dev.command}_mode": dev.mode,
        "heartbeat_producer": 1000,
        "scale_pos_to_dev": float(dev.scale_pos_to_dev),
        "scale_pos_from_dev": 1.0 / dev.scale_pos_to_dev,
        "scale_vel_to_dev": float(dev.scale_vel_to_dev),
        "scale_vel_from_dev": 1.0 / dev.scale_vel_to_dev,
        "sdo": [{"index": i, "sub_index": s, "value": v} for i, s, v, _ in dev.sdo],
        "rpdo": _pdo_data("rpdo", dev.rpdo, dev.off_rpdo),
        "tpdo": _pdo_data("tpdo", dev.tpdo, dev.off_tpdo),
    }


def _bus_comments(devices: list[BusDevice]) -> list[str]:
    """What the numbers of bus.yml mean (YAML data carries no comments): per device its joint, module, SDOs, PDOs."""
    lines = ["# CANopen bus of the robot for ros2_canopen's generate_dcf(bus) (lely dcfgen). Written by timor."]
    for dev in devices:
        lines.append(f"# {dev.name}: joint {json.dumps(dev.joint)}, module {json.dumps(dev.module_id)}")
        lines += [f"#   sdo 0x{i:04X} sub {s} = {v}: {c}" for i, s, v, c in dev.sdo]
        for kind, pdos in (("rpdo", dev.rpdo), ("tpdo", dev.tpdo)):
            names = "; ".join(", ".join(f"0x{i:04X} {_NAMES[i]}" for i in e) for e in pdos)
            lines.append(f"#   {kind}: {names}")
    return lines


def bus_yml(devices: list[BusDevice], profile: HardwareProfile) -> str:
    """The flat bus.yml (``options``, ``master``, one section per device) of ``generate_dcf``."""
    data: dict[str, Any] = {
        "options": {"dcf_path": "@BUS_CONFIG_PATH@"},
        "master": {
            "node_id": profile.bus.master_node_id,
            "driver": "ros2_canopen::MasterDriver",
            "package": "canopen_master_driver",
            "sync_period": SYNC_PERIOD_US,
        },
    }
    data.update({dev.name: _device_data(dev) for dev in devices})
    return "\n".join(_bus_comments(devices)) + "\n" + to_yaml(data)
