"""Read a robot's assembly from its CANopen bus: which drive answers at which node id, and so which joint module.

``discover_canopen(bus, profile, db)`` scans the bus (python ``canopen`` over ``python-can``), reads each node's
identity object 0x1018 (vendor id, product code, serial number), maps (vendor id, product code) to a joint module
through the hardware profile, and orders the joints by node id: the drive with the lowest node id is the joint
nearest the base (the profile's node-id rule, ``first_node_id`` upwards). Between and around the joints go the
profile's ``links`` (module IDs before, between and after the joints; default: the set's base module first, its
end effector last, nothing between; a profile's ``chain`` gives ``base``, ``end_effector`` and ``links``: the
module IDs after each joint). Refused, with node id and code named: an unknown product, two drives of one
node id, no base or end-effector module.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from timor_core.errors import InputError, TimorError
from timor_core.export.hardware import HardwareProfile

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.model.db import ModulesDB

__all__ = ["DiscoveryError", "FoundNode", "scan_identities", "chain_from_nodes", "discover_canopen"]


class DiscoveryError(TimorError):
    """The bus does not describe a robot the module set can build (names node id and code)."""


@dataclass(frozen=True)
class FoundNode:
    """A node that answered on the bus, with its identity object."""

    node_id: int
    vendor_id: int
    product_code: int
    revision: int
    serial: int


def scan_identities(network: Any, node_ids: range = range(1, 128), timeout: float = 0.5) -> list[FoundNode]:
    """The nodes of a connected ``canopen.Network`` that answer an SDO read of 0x1018, by node id.

    Uses canopen's scanner (one SDO request to every node id at once), then reads the identity of each node
    that answered. ``timeout`` is how long to listen for answers to the scan.
    """
    network.scanner.reset()
    network.scanner.search(limit=max(node_ids) + 1)
    time.sleep(timeout)
    found = []
    for node_id in sorted(set(network.scanner.nodes) & set(node_ids)):
        node = network.add_node(node_id, object_dictionary=None) if node_id not in network else network[node_id]
        sdo = node.sdo

        def read(sub: int, sdo: Any = sdo) -> int:
            return int.from_bytes(sdo.upload(0x1018, sub), "little")

        try:
            found.append(FoundNode(node_id, read(1), read(2), read(3), read(4)))
        except Exception as exc:  # noqa: BLE001 - a node that does not answer its identity object
            raise DiscoveryError(f"node {node_id}: cannot read its identity object 0x1018 ({exc})") from None
    return found


def chain_from_nodes(nodes: list[FoundNode], profile: HardwareProfile, db: ModulesDB) -> list[str]:
    """The serial module IDs of the robot on the bus (see the module docstring)."""
    by_code: dict[tuple[int | None, int | None], str] = {}
    for module_id, drive in profile.drives.items():
        if drive.product_code is None:
            raise InputError(f"drive of module {module_id!r} has no product_code to recognise it", file=profile.source)
        by_code[(drive.vendor_id, drive.product_code)] = module_id
    seen: dict[int, FoundNode] = {}
    joints = []
    for node in sorted(nodes, key=lambda n: n.node_id):
        if node.node_id in seen:
            raise DiscoveryError(f"node id {node.node_id} answers twice (two drives share it)")
        seen[node.node_id] = node
        module = by_code.get((node.vendor_id, node.product_code)) or by_code.get((None, node.product_code))
        if module is None:
            raise DiscoveryError(
                f"node {node.node_id}: unknown drive (vendor 0x{node.vendor_id:08X}, "
                f"product 0x{node.product_code:08X}); add it to the hardware profile"
            )
        joints.append(module)
    if not joints:
        raise DiscoveryError("no drive answered on the bus")
    chain = profile.chain
    base = chain.base if chain is not None and chain.base else None
    eef = chain.end_effector if chain is not None and chain.end_effector else None
    if base is None:
        base = next((m.id for m in db if any(c.type == "base" for c in m.connectors.values())), None)
    if eef is None:
        eef = next((m.id for m in db if any(c.type == "eef" for c in m.connectors.values())), None)
    if base is None or base not in db:
        raise DiscoveryError(
            f"no base module: the module set has none, or the profile's chain.base is unknown ({base})"
        )
    if eef is None or eef not in db:
        raise DiscoveryError(f"no end-effector module: the set has none, or chain.end_effector is unknown ({eef})")
    links = chain.links if chain is not None else ()
    ids = [base]
    for k, joint in enumerate(joints):
        ids.append(joint)
        ids.extend(links[k] if k < len(links) else ())
    return [*ids, eef]


def discover_canopen(
    channel: str, interface: str, profile: HardwareProfile, db: ModulesDB, bitrate: int | None = None
) -> tuple[ModuleAssembly, list[FoundNode]]:
    """Scan a CAN bus and build the assembly on it (``interface``: python-can's, e.g. socketcan or virtual)."""
    import canopen

    from timor_core.model.assembly import ModuleAssembly

    network = canopen.Network()
    try:
        network.connect(channel=channel, interface=interface, bitrate=bitrate or profile.bus.bitrate)
    except Exception as exc:  # noqa: BLE001 - python-can raises many kinds
        raise DiscoveryError(f"cannot open CAN channel {channel!r} ({interface}): {exc}") from None
    try:
        nodes = scan_identities(network)
    finally:
        network.disconnect()
    ids = chain_from_nodes(nodes, profile, db)
    try:
        return ModuleAssembly.from_serial_modules(db, ids), nodes
    except TimorError as exc:
        raise DiscoveryError(f"the modules found ({' '.join(ids)}) do not form a robot: {exc}") from None
