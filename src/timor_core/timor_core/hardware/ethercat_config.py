"""Check an ethercat_driver_ros2 slave configuration (the YAML file of a drive's ``slave_config``) when the
package is written, against what ethercat_generic_plugins reads (generic_ec_slave.cpp, generic_ec_cia402_drive.cpp):
``vendor_id`` and ``product_id`` (required, uint32), ``rpdo``/``tpdo`` lists of PDOs with ``channels`` whose
``type`` is one of int8..uint64 (any other gives a zero-size channel), and the drive's command interface mapped
in an RPDO and its position state in a TPDO; the profile's vendor id / product code must agree with the file's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from timor_core.common.safe_yaml import load_yaml
from timor_core.errors import InputError

__all__ = ["MAX_SLAVE_CONFIG_BYTES", "SlaveConfig", "read_slave_config"]

MAX_SLAVE_CONFIG_BYTES = 1 << 20
_TYPES = ("int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64")


@dataclass(frozen=True)
class SlaveConfig:
    """What timor checks of a slave configuration."""

    path: Path
    vendor_id: int
    product_id: int
    command_interfaces: tuple[str, ...]
    state_interfaces: tuple[str, ...]


def _load(path: Path, field: str) -> Any:
    """The file's YAML through the project's one safe loader (no aliases or tags, bounded size, depth, numbers)."""
    return load_yaml(path, path=field, what="slave configuration", max_bytes=MAX_SLAVE_CONFIG_BYTES)


def _uint32(d: dict, key: str, path: Path, field: str) -> int:
    value = d.get(key)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 0xFFFFFFFF:
        raise InputError(f"the slave configuration needs {key} as an unsigned 32-bit integer (file {path})",
                         path=field, value=value)  # fmt: skip
    return value


def read_slave_config(path: Path, field: str, vendor_id: int | None, product_code: int | None) -> SlaveConfig:
    """Parse and check a slave configuration; InputError naming the file, the profile field and the value."""
    data = _load(path, field)
    if not isinstance(data, dict):
        raise InputError(f"the slave configuration is not a YAML mapping (file {path})", path=field)
    vendor, product = _uint32(data, "vendor_id", path, field), _uint32(data, "product_id", path, field)
    for given, got, key in ((vendor_id, vendor, "vendor_id"), (product_code, product, "product_code")):
        if given is not None and given != got:
            raise InputError(
                f"the profile's {key} 0x{given:08X} differs from the slave configuration's 0x{got:08X} (file {path})",
                path=field.rsplit(".", 1)[0] + f".{key}",
                value=f"0x{given:08X}",
            )
    interfaces: dict[str, list[str]] = {"rpdo": [], "tpdo": []}
    for kind in ("rpdo", "tpdo"):
        pdos = data.get(kind, [])
        if not isinstance(pdos, list):
            raise InputError(f"{kind} must be a list of PDOs (file {path})", path=field, value=type(pdos).__name__)
        for k, pdo in enumerate(pdos):
            channels = pdo.get("channels") if isinstance(pdo, dict) else None
            if not isinstance(channels, list):
                raise InputError(f"{kind}[{k}] has no list of channels (file {path})", path=field)
            for c, ch in enumerate(channels):
                if not isinstance(ch, dict) or not isinstance(ch.get("index"), int):
                    raise InputError(f"{kind}[{k}].channels[{c}] needs an integer index (file {path})", path=field)
                if ch.get("type") not in _TYPES:
                    raise InputError(f"{kind}[{k}].channels[{c}].type must be one of {', '.join(_TYPES)} (file {path})",
                                     path=field, value=ch.get("type"))  # fmt: skip
                name = ch.get("command_interface" if kind == "rpdo" else "state_interface")
                if name is not None:
                    interfaces[kind].append(str(name))
    return SlaveConfig(path, vendor, product, tuple(interfaces["rpdo"]), tuple(interfaces["tpdo"]))
