"""Simulated CiA 402 drives on a python-can bus, so ``timor discover`` can be tried without hardware.

Each simulated drive is a python ``canopen`` LocalNode built from its EDS (the profile's), answering SDO reads of
its object dictionary, with the identity object 0x1018 set to the profile's vendor id and product code and a
serial number. On python-can's ``udp_multicast`` interface the simulator and ``timor discover`` can run in two
processes (``timor canopen-sim`` in one shell, ``timor discover --interface udp_multicast`` in another); on
``virtual`` only within one process; on ``socketcan`` against a vcan interface where the kernel has one.
What a simulation cannot show: bus timing, a real drive's state machine, two real drives at one node id (their
identical frames merge on a real bus), anything after the identity read.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from timor_core.errors import InputError
from timor_core.hardware.discover import new_network
from timor_core.hardware.profiles import HardwareProfile

__all__ = ["SimDrive", "sim_drives", "simulated_bus"]


@dataclass(frozen=True)
class SimDrive:
    """One simulated drive: node id, its EDS and identity; ``mandatory_only`` leaves out 0x1018 sub 2-4."""

    node_id: int
    eds: Path
    vendor_id: int
    product_code: int
    serial: int = 0
    revision: int = 1
    mandatory_only: bool = False


def sim_drives(profile: HardwareProfile, specs: list[str]) -> list[SimDrive]:
    """Drives from ``NODE_ID:MODULE_ID`` specs (the module's drive in the profile), serial = node id."""
    out = []
    for spec in specs:
        node, _, module = spec.partition(":")
        try:
            node_id = int(node, 0)
        except ValueError:
            raise InputError("--drive is NODE_ID:MODULE_ID", value=spec) from None
        drive = profile.drives.get(module)
        if drive is None or drive.eds is None or not 1 <= node_id <= 127:
            raise InputError("--drive NODE_ID:MODULE_ID needs a node id 1..127 and a CANopen drive of the profile",
                             file=profile.source, value=spec)  # fmt: skip
        assert drive.vendor_id is not None and drive.product_code is not None
        out.append(SimDrive(node_id, drive.eds, drive.vendor_id, drive.product_code, serial=node_id))
    return out


@contextmanager
def simulated_bus(channel: str, interface: str, drives: list[SimDrive]) -> Iterator[Any]:
    """Connect the simulated drives to a python-can channel for the ``with`` block (one network per drive, so two
    drives may share a node id, as on a miswired bus)."""
    import canopen

    networks = []
    try:
        for sim in drives:
            network = new_network()
            network.connect(channel=channel, interface=interface, receive_own_messages=False)
            networks.append(network)
            node = canopen.LocalNode(sim.node_id, str(sim.eds))
            identity: Any = node.object_dictionary[0x1018]  # a record (checked by the EDS reader)
            sdo: Any = node.sdo
            if sim.mandatory_only:
                for sub in (2, 3, 4):
                    entry = identity.subindices.pop(sub, None)
                    if entry is not None:
                        identity.names.pop(entry.name, None)
            values = {1: sim.vendor_id, 2: sim.product_code, 3: sim.revision, 4: sim.serial}
            for sub, value in values.items():
                if sub in identity.subindices:
                    sdo[0x1018][sub].raw = value
            network.add_node(node)
        yield networks
    finally:  # each disconnect waits at most discover.NOTIFIER_CYCLE for its reader thread
        for network in networks:
            network.disconnect()
