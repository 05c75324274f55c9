"""ros2_canopen's bus configuration for a robot's CiA 402 drives, checked against each drive's EDS/DCF file.

``bus_devices`` plans one ``ros2_canopen::Cia402Driver`` device per actuated joint: its device name (the
``device_name`` that canopen_ros2_control/RobotSystem looks up), node id, the EDS/DCF file it is configured from,
the command interface its mode of operation gives (``position_mode``/``velocity_mode``/``effort_mode``), the
scale factors between joint units and drive units, the PDO mapping and the SDOs for cyclic modes. ``bus_yml``
writes them in the flat form that ros2_canopen's ``generate_dcf()`` feeds to lely's ``dcfgen`` (the form of its
canopen_tests/robot_control, the RobotSystem example).

PDOs (``canopen_pdo``): as in ros2_canopen's CiA 402 examples, every object the master writes at boot checked
against the EDS's access type and PDO-mappability. Cyclic modes also set the interpolation time period 0x60C2 to
the SYNC period. A mode the drive's supported drive modes (0x6502) exclude is refused. Scale factors:
``canopen_units``. The EDS/DCF file is installed as lely's dcfgen reads it (``eds_text``), the vendor's own
bytes beside it in ``original/`` when they differ.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from timor_core.errors import InputError
from timor_core.export.formats.yaml_text import to_yaml
from timor_core.hardware.canopen_pdo import NAMES, Pdo, boot_sdos, check_lely_device, plan_pdos, writable
from timor_core.hardware.canopen_units import drive_scales
from timor_core.hardware.profiles import HardwareProfile, JointDrive

__all__ = ["BUS_NAME", "SYNC_PERIOD_US", "BusDevice", "bus_devices", "bus_yml", "command_interface"]

BUS_NAME = "bus"  # config/bus/bus.yml, built by generate_dcf(bus)
SYNC_PERIOD_US = 10_000
_PERIOD_MS = SYNC_PERIOD_US // 1000
_CYCLIC = (7, 8, 9, 10)
_COMMAND = {1: "position", 7: "position", 8: "position", 3: "velocity", 9: "velocity", 4: "effort", 10: "effort"}
_HEARTBEAT_MS = 1000
_DEVICE_CHARS = 64


@dataclass(frozen=True)
class BusDevice:
    """One drive of the bus as bus.yml configures it."""

    name: str  # its key in bus.yml = the joint's device_name
    joint: str
    module_id: str
    node_id: int
    dcf: str  # file name in config/bus/
    content: bytes  # that file (the vendor's as lely reads it, with the profile's identity where it has none)
    original: bytes | None  # the vendor's bytes when ``content`` normalises them (installed in original/)
    command: str  # position / velocity / effort
    mode: int
    scale_pos_to_dev: float
    scale_vel_to_dev: float
    rpdo: tuple[Pdo, ...]
    tpdo: tuple[Pdo, ...]
    off_rpdo: tuple[int, ...]  # further PDOs the drive has, switched off
    off_tpdo: tuple[int, ...]
    sdo: tuple[tuple[int, int, int, str], ...]  # index, sub-index, value, comment
    vendor_id: int
    product_code: int
    heartbeat: int | None = _HEARTBEAT_MS  # 0x1017 producer heartbeat (None: read-only, left as the drive has it)


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
    """bus.yml's key of a joint's drive: letters, digits, '_', not a key of bus.yml's own; at most _DEVICE_CHARS
    (dcfgen writes ``<name>.bin``, and a file name holds 255 bytes: a URDF's joint name may be longer)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", joint) or "joint"
    if name[0].isdigit() or name in ("master", "options", "defaults", "nodes"):
        name = f"joint_{name}"
    if len(name) > _DEVICE_CHARS:
        name = f"{name[: _DEVICE_CHARS - 9]}_{hashlib.sha1(joint.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"
    base, k = name, 2
    while name in taken:  # the suffix within the limit too (two 64-character names alike but for a '-' and a '.')
        name, k = f"{base[: _DEVICE_CHARS - len(str(k)) - 1]}_{k}", k + 1
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
        rpdo, tpdo, off_rpdo, off_tpdo = plan_pdos(eds, command, where)
        check_lely_device(eds, where)  # after the objects the driver needs, which it names by their role
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
        sdo = boot_sdos(eds, sdo, where)
        heartbeat = None if eds.has(0x1017) and not writable(eds, 0x1017, 0) else _HEARTBEAT_MS
        pos, vel = drive_scales(jd, eds, where)
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
        content = _with_identity(eds.content, d.vendor_id, d.product_code) if fill else eds.content
        out.append(BusDevice(
            _device_name(jd.joint, names), jd.joint, jd.module_id, jd.node_id, files[key], content, eds.original,
            command, d.mode, pos, vel, rpdo, tpdo, off_rpdo, off_tpdo, tuple(sdo), d.vendor_id, d.product_code,
            heartbeat,
        ))  # fmt: skip
    return out


def _pdo_data(kind: str, pdos: tuple[Pdo, ...], off: tuple[int, ...]) -> dict[int, dict[str, Any]]:
    """The ``rpdo``/``tpdo`` section of a device: the used PDOs (a fixed one keeps the drive's mapping: no
    ``mapping``, so dcfgen writes none), then the ones switched off."""
    out: dict[int, dict[str, Any]] = {}
    for pdo in pdos:
        data: dict[str, Any] = {"enabled": True, "cob_id": "auto"}
        if kind == "tpdo":
            data["transmission"] = 1
        if not pdo.fixed:
            data["mapping"] = [{"index": i, "sub_index": 0} for i in pdo.entries]
        out[pdo.number] = data
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
        **({"heartbeat_producer": dev.heartbeat} if dev.heartbeat is not None else {}),
        "scale_pos_to_dev": float(dev.scale_pos_to_dev),
        "scale_pos_from_dev": 1.0 / dev.scale_pos_to_dev,
        "scale_vel_to_dev": float(dev.scale_vel_to_dev),
        "scale_vel_from_dev": 1.0 / dev.scale_vel_to_dev,
        "sdo": [{"index": i, "sub_index": s, "value": v} for i, s, v, _ in dev.sdo],
        "rpdo": _pdo_data("rpdo", dev.rpdo, dev.off_rpdo),
        "tpdo": _pdo_data("tpdo", dev.tpdo, dev.off_tpdo),
    }


def _pdo_comment(pdo: Pdo) -> str:
    own = " (the drive's own mapping)" if pdo.fixed else ""
    return f"{pdo.number}{own}: " + ", ".join(f"0x{i:04X} {NAMES.get(i, '')}".rstrip() for i in pdo.entries)


def _bus_comments(devices: list[BusDevice]) -> list[str]:
    """What the numbers of bus.yml mean (YAML data carries no comments): per device its joint, module, SDOs, PDOs."""
    lines = ["# CANopen bus of the robot for ros2_canopen's generate_dcf(bus) (lely dcfgen). Written by timor."]
    for dev in devices:
        lines.append(f"# {dev.name}: joint {json.dumps(dev.joint)}, module {json.dumps(dev.module_id)}")
        lines += [f"#   sdo 0x{i:04X} sub {s} = {v}: {c}" for i, s, v, c in dev.sdo]
        for kind, pdos in (("rpdo", dev.rpdo), ("tpdo", dev.tpdo)):
            lines.append(f"#   {kind}: " + "; ".join(_pdo_comment(p) for p in pdos))
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
