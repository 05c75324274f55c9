"""Hardware profiles: which drive sits in which joint module, how it is addressed, and on which bus.

A profile is a JSON file beside a module set's ``modules.json`` (``hardware_<route>.json``, or any file given by
path). It names one route for the whole robot and, per joint module ID, the drive in it::

    {"route": "canopen",
     "bus": {"interface": "can0", "bitrate": 1000000, "master_node_id": 1, "first_node_id": 2},
     "drives": {"J": {"eds": "eds/cia402_drive.eds", "vendor_id": "0x00000F1E", "product_code": "0x00000402",
                      "encoder_counts": 4096, "gear_ratio": 101, "operation_mode": "cyclic_synchronous_position"}}}

Routes: ``canopen`` (CiA 402 drives through ros2_canopen), ``ethercat`` (CiA 402 drives through
ethercat_driver_ros2: ``slave_config``, ``alias``), ``plugin`` (any vendor ros2_control plugin with per-joint
``parameters``). Node ids (CANopen) and slave positions (EtherCAT) follow the chain: the k-th joint of the robot
(base first, URDF joint order) gets ``first_node_id + k`` (position ``k``), unless a drive gives a fixed
``node_id``/``position`` (allowed only for a module that occurs once in the robot).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from timor_core.common import jsonfields as jf
from timor_core.common.names import check_plugin, xml_escape
from timor_core.errors import InputError
from timor_core.hardware.eds import MAX_EDS_BYTES, Eds, read_eds
from timor_core.hardware.ethercat_config import MAX_SLAVE_CONFIG_BYTES, SlaveConfig, read_slave_config

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

__all__ = ["ROUTES", "OPERATION_MODES", "Drive", "Bus", "Chain", "HardwareProfile", "JointDrive", "joint_drives"]

ROUTES = ("canopen", "ethercat", "plugin")
_INTERFACE = re.compile(r"[A-Za-z0-9_.:-]{1,64}")  # socketcan names (can0, vcan0), udp_multicast groups
#: CiA 402 modes of operation (object 0x6060) by name.
OPERATION_MODES = {
    "profile_position": 1,
    "profile_velocity": 3,
    "homing": 6,
    "interpolated_position": 7,
    "cyclic_synchronous_position": 8,
    "cyclic_synchronous_velocity": 9,
    "cyclic_synchronous_torque": 10,
}


def _int(value: Any, path: str, low: int = 0, high: int = 0xFFFFFFFF) -> int:
    """An integer, also written as a hex string ("0x0402")."""
    if isinstance(value, str):
        try:
            value = int(value, 0)
        except ValueError:
            raise InputError("expected an integer (decimal or 0x hex)", path=path, value=value) from None
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InputError(f"expected an integer in [{low}, {high}]", path=path, value=value)
    return value


@dataclass(frozen=True)
class Drive:
    """The drive in one joint module."""

    module_id: str
    eds: Path | None = None  # CANopen: the EDS/DCF file
    slave_config: Path | None = None  # EtherCAT: the ethercat_driver_ros2 slave configuration (YAML)
    vendor_id: int | None = None
    product_code: int | None = None
    encoder_counts: int | None = None  # per motor revolution (default: the EDS's 0x608F)
    gear_ratio: float = 1.0  # motor revolutions per joint revolution (prismatic joints: per metre)
    operation_mode: str = "cyclic_synchronous_position"
    node_id: int | None = None  # fixed node id / slave position; default: by the chain
    parameters: dict[str, str] = field(default_factory=dict)  # plugin route: per-joint <param>s
    scale_pos_to_dev: float | None = None  # overrides what the EDS's units give (drive units per rad or m)
    scale_vel_to_dev: float | None = None
    eds_info: Eds | None = field(default=None, compare=False, repr=False)  # the parsed EDS (CANopen)
    slave_info: SlaveConfig | None = field(default=None, compare=False, repr=False)  # checked (EtherCAT)

    def turns_per_unit(self, prismatic: bool = False) -> float:
        """Motor revolutions per joint radian, or per metre for a prismatic joint."""
        return self.gear_ratio / (1.0 if prismatic else 2 * math.pi)

    @property
    def mode(self) -> int:
        """The CiA 402 mode of operation number."""
        return OPERATION_MODES[self.operation_mode]


@dataclass(frozen=True)
class Bus:
    """The bus of the robot: CAN interface and bitrate, or the EtherCAT master."""

    interface: str = "can0"
    bitrate: int = 1_000_000
    master_node_id: int = 1
    first_node_id: int = 2
    master_id: int = 0  # EtherCAT master index
    control_frequency: int = 100  # Hz, EtherCAT


@dataclass(frozen=True)
class Chain:
    """The modules the bus cannot see: ``base`` first, ``links[k]`` after the k-th joint, ``end_effector`` last."""

    base: str | None = None
    end_effector: str | None = None
    links: tuple[tuple[str, ...], ...] = ()


@dataclass(frozen=True)
class HardwareProfile:
    """A route, its bus and the drive of every joint module; ``folder`` resolves the files it names."""

    route: str
    bus: Bus
    drives: dict[str, Drive]
    plugin: str | None = None
    hardware_parameters: dict[str, str] = field(default_factory=dict)
    source: Path | None = None
    chain: Chain | None = None  # how a robot read from the bus is completed (see timor_core.hardware.discover)

    @classmethod
    def from_json_file(cls, path: str | Path) -> HardwareProfile:
        """Read and check a profile file (size-limited like every input file)."""
        path = Path(path)
        try:
            return cls.from_json_data(jf.load_json_file(path), folder=path.parent, source=path)
        except InputError as exc:
            raise exc.located(file=path) from None

    @classmethod
    def for_db(cls, db_folder: str | Path, route: str) -> HardwareProfile:
        """The profile a module set ships for a route (``hardware_<route>.json`` beside its modules.json)."""
        path = Path(db_folder) / f"hardware_{route}.json"
        if not path.is_file():
            raise InputError(f"the module set has no {route} hardware profile (expected {path})", value=route)
        return cls.from_json_file(path)

    @classmethod
    def from_json_data(cls, data: Any, folder: Path, source: Path | None = None) -> HardwareProfile:
        d = jf.obj(data, "$")
        route = jf.string(jf.req(d, "route", "$"), "$.route")
        if route not in ROUTES:
            raise InputError(f"unknown route (expected one of {', '.join(ROUTES)})", path="$.route", value=route)
        b = jf.obj(d.get("bus", {}), "$.bus")
        interface = jf.string(b.get("interface", "can0"), "$.bus.interface")
        if not _INTERFACE.fullmatch(interface):
            raise InputError(
                "not a CAN interface name (letters, digits, '_', '.', ':', '-'; at most 64)",
                path="$.bus.interface",
                value=interface,
            )
        bus = Bus(
            interface=interface,
            bitrate=_int(b.get("bitrate", 1_000_000), "$.bus.bitrate", 10_000, 1_000_000),
            master_node_id=_int(b.get("master_node_id", 1), "$.bus.master_node_id", 1, 127),
            first_node_id=_int(b.get("first_node_id", 2), "$.bus.first_node_id", 1, 127),
            master_id=_int(b.get("master_id", 0), "$.bus.master_id", 0, 15),
            control_frequency=_int(b.get("control_frequency", 100), "$.bus.control_frequency", 1, 100_000),
        )
        plugin = None
        if route == "plugin":
            plugin = check_plugin(jf.string(jf.req(d, "plugin", "$"), "$.plugin"))
        params = _parameters(d.get("hardware_parameters", {}), "$.hardware_parameters")
        drives = {}
        for module_id, spec in jf.obj(jf.req(d, "drives", "$"), "$.drives").items():
            drives[module_id] = _drive(module_id, spec, f"$.drives.{module_id}", route, folder)
        chain = None
        if "chain" in d:
            c = jf.obj(d["chain"], "$.chain")
            groups = jf.array(c.get("links", []), "$.chain.links")
            links = tuple(
                tuple(
                    jf.string(m, f"$.chain.links[{i}][{j}]") for j, m in enumerate(jf.array(g, f"$.chain.links[{i}]"))
                )
                for i, g in enumerate(groups)
            )
            base = jf.string(c["base"], "$.chain.base") if "base" in c else None
            eef = jf.string(c["end_effector"], "$.chain.end_effector") if "end_effector" in c else None
            chain = Chain(base, eef, links)
        return cls(route, bus, drives, plugin, params, source, chain)


def _parameters(value: Any, path: str) -> dict[str, str]:
    """A profile's ``<param>`` texts by name, each name and text one XML can hold (else an InputError naming the
    field ``path.name``: the file is added by ``from_json_file``)."""
    out = {}
    for key, text in jf.obj(value, path).items():
        for part in (str(key), str(text)):
            try:
                xml_escape(part, "parameter")
            except InputError as exc:
                raise InputError(exc.message, path=f"{path}.{key}", value=part) from None
        out[str(key)] = str(text)
    return out


def profile_file(value: Any, path: str, folder: Path, max_bytes: int = MAX_EDS_BYTES) -> Path:
    """A file a profile names: a relative path that stays inside the profile's folder (no absolute path, no
    ``..``, no symlink out), a regular file of at most ``max_bytes``. Raises InputError naming field and value."""
    text = jf.string(value, path)
    if "\x00" in text:
        raise InputError("a file name cannot hold a NUL byte", path=path, value=text)
    if Path(text).is_absolute() or ".." in Path(text).parts or text.startswith("~"):
        raise InputError("must be a path inside the profile's folder (relative, without '..')", path=path, value=text)
    root = folder.resolve()
    try:
        target = (root / text).resolve()
        inside = target.is_relative_to(root)
        is_file = target.is_file()
        size = target.stat().st_size if is_file else 0
    except (OSError, RuntimeError) as exc:
        raise InputError(f"cannot read ({exc})", path=path, value=text) from None
    if not inside:
        raise InputError(f"leads out of the profile's folder (a symlink to {target})", path=path, value=text)
    if not is_file:
        raise InputError(f"file not found in {root}", path=path, value=text)
    if size > max_bytes:
        raise InputError(f"file too large ({size} bytes, limit {max_bytes})", path=path, value=text)
    return target


def _hex(value: int | None) -> str:
    return "none" if value is None else f"0x{value:08X}"


def _identity(s: dict, path: str, eds: Eds) -> tuple[int, int]:
    """The drive's (vendor id, product code): the profile's and the EDS's must agree; one of them must give it."""
    out: list[int] = []
    for key, from_eds, what in (("vendor_id", eds.vendor_id, "VendorNumber / 0x1018 sub 1"),
                                ("product_code", eds.product_code, "ProductNumber / 0x1018 sub 2")):  # fmt: skip
        given = _int(s[key], f"{path}.{key}") if key in s else None
        if given is not None and from_eds is not None and given != from_eds:
            raise InputError(
                f"the profile's {key} {_hex(given)} differs from the EDS's {_hex(from_eds)} ({eds.path.name}, {what})",
                path=f"{path}.{key}",
                value=_hex(given),
            )
        if from_eds is None and given == 0:
            raise InputError(
                f"the EDS {eds.path.name} gives no {key} ({what}) and 0 would make the master check nothing at boot: "
                "give the drive's (timor discover prints it)",
                path=f"{path}.{key}",
                value=given,
            )
        if given is None and from_eds is None:
            raise InputError(
                f"the EDS {eds.path.name} gives no {key} ({what}): give it in the profile", path=f"{path}.{key}"
            )
        value = given if given is not None else from_eds
        assert value is not None  # one of them is set (above)
        out.append(value)
    return out[0], out[1]


def _scale(s: dict, key: str, path: str) -> float | None:
    if key not in s:
        return None
    value = jf.number(s[key], f"{path}.{key}", min_value=1e-12)
    if not 0 < value <= 1e12:
        raise InputError("expected a positive number up to 1e12", path=f"{path}.{key}", value=value)
    return value


def _drive(module_id: str, spec: Any, path: str, route: str, folder: Path) -> Drive:
    s = jf.obj(spec, path)
    mode = jf.string(s.get("operation_mode", "cyclic_synchronous_position"), f"{path}.operation_mode")
    if mode not in OPERATION_MODES:
        modes = ", ".join(OPERATION_MODES)
        raise InputError(f"unknown operation mode (one of {modes})", path=f"{path}.operation_mode", value=mode)
    gear = jf.number(s.get("gear_ratio", 1.0), f"{path}.gear_ratio", min_value=1e-6)
    if gear > 1e6:
        raise InputError("expected a gear ratio in [1e-6, 1e6]", path=f"{path}.gear_ratio", value=gear)
    low = 1 if route == "canopen" else 0
    kwargs: dict[str, Any] = {
        "encoder_counts": _int(s["encoder_counts"], f"{path}.encoder_counts", 1, 1 << 31)
        if "encoder_counts" in s
        else None,
        "gear_ratio": gear,
        "operation_mode": mode,
        "node_id": _int(s["node_id"], f"{path}.node_id", low, 127 if route == "canopen" else 65535)
        if "node_id" in s
        else None,
        "vendor_id": _int(s["vendor_id"], f"{path}.vendor_id") if "vendor_id" in s else None,
        "product_code": _int(s["product_code"], f"{path}.product_code") if "product_code" in s else None,
        "parameters": _parameters(s.get("parameters", {}), f"{path}.parameters"),
        "scale_pos_to_dev": _scale(s, "scale_pos_to_dev", path),
        "scale_vel_to_dev": _scale(s, "scale_vel_to_dev", path),
    }
    if route == "canopen":
        eds_path = profile_file(jf.req(s, "eds", path), f"{path}.eds", folder)
        eds = read_eds(eds_path, f"{path}.eds")
        kwargs["vendor_id"], kwargs["product_code"] = _identity(s, path, eds)
        kwargs["eds"], kwargs["eds_info"] = eds_path, eds
    elif route == "ethercat":
        field_ = f"{path}.slave_config"
        config = profile_file(jf.req(s, "slave_config", path), field_, folder, MAX_SLAVE_CONFIG_BYTES)
        info = read_slave_config(config, field_, kwargs["vendor_id"], kwargs["product_code"])
        kwargs.update(slave_config=config, slave_info=info, vendor_id=info.vendor_id, product_code=info.product_id)
    return Drive(module_id, **kwargs)


@dataclass(frozen=True)
class JointDrive:
    """One actuated joint of a robot with the drive that moves it and its bus address."""

    joint: str  # URDF joint name
    module_id: str
    drive: Drive
    node_id: int  # CANopen node id, or EtherCAT slave position
    prismatic: bool = False


def joint_drives(assembly: ModuleAssembly, profile: HardwareProfile, prefix: str = "") -> list[JointDrive]:
    """Assign a drive and a bus address to every actuated joint, in URDF order; raise InputError naming the
    module for a joint module without a drive, a fixed address given to a module used twice, or a clash."""
    links = [link for link in assembly.tree(prefix).actuated if link.joint is not None and not link.joint.passive]
    counts: dict[str, int] = {}
    for link in links:
        counts[link.module.id] = counts.get(link.module.id, 0) + 1
    out: list[JointDrive] = []
    taken: dict[int, str] = {}
    for k, link in enumerate(links):
        drive = profile.drives.get(link.module.id)
        if drive is None:
            raise InputError(
                f"joint {link.joint_name}: module {link.module.id!r} has no drive in the hardware profile",
                file=profile.source,
                value=link.module.id,
            )
        if drive.node_id is not None and counts[link.module.id] > 1:
            raise InputError(
                f"module {link.module.id!r} occurs {counts[link.module.id]} times but its drive has the fixed "
                "address node_id: give addresses by the chain instead",
                file=profile.source,
                value=drive.node_id,
            )
        base = profile.bus.first_node_id if profile.route == "canopen" else 0
        address = drive.node_id if drive.node_id is not None else base + k
        where = f"$.drives.{link.module.id}.node_id" if drive.node_id is not None else "$.bus.first_node_id"
        if profile.route == "canopen" and (not 1 <= address <= 127 or address == profile.bus.master_node_id):
            raise InputError(
                f"joint {link.joint_name}: node id {address} is out of 1..127 or the master's "
                f"({profile.bus.master_node_id})",
                file=profile.source,
                path=where,
                value=address,
            )
        if address in taken:
            raise InputError(
                f"joints {taken[address]} and {link.joint_name} have the same bus address {address}",
                file=profile.source,
                path=where,
                value=address,
            )
        taken[address] = str(link.joint_name)
        out.append(JointDrive(str(link.joint_name), link.module.id, drive, address, link.joint_type == "prismatic"))
    return out
