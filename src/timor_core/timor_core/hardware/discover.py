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

import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from timor_core.errors import InputError, TimorError
from timor_core.hardware.profiles import HardwareProfile

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.model.db import ModulesDB

__all__ = ["DiscoveryError", "FoundNode", "new_network", "scan_identities", "chain_from_nodes", "discover_canopen"]

# canopen's Network reads its bus in a thread that waits at most NOTIFIER_CYCLE seconds per read (canopen's default:
# 1.0), and disconnect() joins that thread: with the default every disconnect waited up to a second after the work
# was done. A short cycle only wakes an idle reader more often; a frame is handed on the moment it arrives either way.
NOTIFIER_CYCLE = 0.05


class DiscoveryError(TimorError):
    """The bus does not describe a robot the module set can build (names node id and code)."""


@dataclass(frozen=True)
class FoundNode:
    """A node that answered on the bus, with its identity object."""

    node_id: int
    vendor_id: int
    product_code: int | None  # None: the drive has no 0x1018 sub 2 (optional in CiA 301)
    revision: int | None
    serial: int | None

    def describe(self) -> str:
        def hex_(v: int | None) -> str:
            return "none" if v is None else f"0x{v:08X}"

        return (f"node {self.node_id}: vendor {hex_(self.vendor_id)} product {hex_(self.product_code)} "
                f"revision {self.revision} serial {self.serial}")  # fmt: skip


def new_network() -> Any:
    """A ``canopen.Network`` (not yet connected) whose ``disconnect()`` returns within ``NOTIFIER_CYCLE`` seconds."""
    import canopen

    network = canopen.Network()
    network.NOTIFIER_CYCLE = NOTIFIER_CYCLE
    return network


def _scan_answers(network: Any, node_ids: range, timeout: float, expect: int | None) -> dict[int, int]:
    """Node id -> number of answers to canopen's scan (an SDO read of 0x1000 sent to every node id), collected for
    ``timeout`` seconds, or until ``expect`` node ids have answered."""
    answers: dict[int, int] = {}
    enough = threading.Event()

    def count(can_id: int, data: bytearray, timestamp: float) -> None:
        if len(data) >= 4 and data[1:4] == b"\x00\x10\x00":  # an answer about object 0x1000 sub 0
            answers[can_id - 0x580] = answers.get(can_id - 0x580, 0) + 1
            if expect is not None and len(answers) >= expect:
                enough.set()

    for node_id in node_ids:
        network.subscribe(0x580 + node_id, count)
    try:
        network.scanner.reset()
        network.scanner.search(limit=max(node_ids) + 1)
        enough.wait(timeout)
    finally:
        for node_id in node_ids:
            network.unsubscribe(0x580 + node_id, count)
    return dict(answers)


def scan_identities(
    network: Any, node_ids: range = range(1, 128), timeout: float = 0.5, expect: int | None = None
) -> list[FoundNode]:
    """The nodes of a connected ``canopen.Network`` that answer an SDO read, with their identity object 0x1018.

    One SDO request to every node id at once (canopen's scanner), answers taken for ``timeout`` seconds; a node id
    answered twice is refused (two drives share it). ``expect``: the number of drives on the bus; the scan ends as
    soon as that many node ids have answered (a drive answering later, a second one at a node id too, is not
    seen), and fewer answers are refused. Then 0x1018 of each node: sub 1 (mandatory) must answer, sub 2-4 may be
    absent.
    """
    if expect is not None and not 1 <= expect <= len(node_ids):
        raise InputError(f"expected drives: 1 to {len(node_ids)} (the node ids scanned)", path="expect", value=expect)
    answers = _scan_answers(network, node_ids, timeout, expect)
    twice = sorted(n for n, k in answers.items() if k > 1)
    if twice:
        raise DiscoveryError(f"node id {', '.join(map(str, twice))} answered more than once: two drives share it")
    if expect is not None and len(answers) < expect:
        raise DiscoveryError(
            f"{expect} drives expected, {len(answers)} answered within {timeout} s (node ids "
            f"{', '.join(map(str, sorted(answers))) or 'none'})"
        )
    found = []
    for node_id in sorted((set(network.scanner.nodes) | set(answers)) & set(node_ids)):
        node = network.add_node(node_id, object_dictionary=None) if node_id not in network else network[node_id]
        sdo = node.sdo

        def read(sub: int, sdo: Any = sdo, optional: bool = True) -> int | None:
            try:
                return int.from_bytes(sdo.upload(0x1018, sub), "little")
            except Exception as exc:  # noqa: BLE001 - an SDO abort (no such sub-object) or no answer
                if optional and getattr(exc, "code", None) in (0x06090011, 0x06020000):
                    return None  # SDO abort "sub-index/object does not exist": allowed for sub 2-4
                raise DiscoveryError(
                    f"node {node_id}: cannot read its identity object 0x1018 sub {sub} ({exc})"
                ) from None

        vendor = read(1, optional=False)
        assert vendor is not None
        found.append(FoundNode(node_id, vendor, read(2), read(3), read(4)))
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
        if node.product_code is None:  # no 0x1018 sub 2: the vendor alone must tell
            same = {m for (v, _), m in by_code.items() if v == node.vendor_id}
            module = same.pop() if len(same) == 1 else None
        if module is None:
            raise DiscoveryError(f"{node.describe()}: unknown drive; add it to the hardware profile")
        joints.append(module)
    if not joints:
        raise DiscoveryError("no drive answered on the bus")
    _check_complete(sorted(seen), profile)
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


def _check_complete(found: list[int], profile: HardwareProfile) -> None:
    """Refuse a bus that lacks drives the chain expects: node ids from ``first_node_id`` up to the highest found,
    or up to the number of joints of the profile's ``chain.links``."""
    first = profile.bus.first_node_id
    n = len(profile.chain.links) if profile.chain is not None and profile.chain.links else 0
    expected = set(range(first, max([*found, first + n - 1]) + 1))
    missing = sorted(expected - set(found))
    if missing:
        raise DiscoveryError(
            f"the bus lacks node id {', '.join(map(str, missing))}: the profile's chain expects joints at node ids "
            f"{first}..{max(expected)} (found {', '.join(map(str, found))})"
        )


def discover_canopen(
    channel: str,
    interface: str,
    profile: HardwareProfile,
    db: ModulesDB,
    bitrate: int | None = None,
    expect: int | None = None,
) -> tuple[ModuleAssembly, list[FoundNode]]:
    """Scan a CAN bus and build the assembly on it (``interface``: python-can's, e.g. socketcan or virtual;
    ``expect``: the number of drives, see :func:`scan_identities`)."""
    from timor_core.model.assembly import ModuleAssembly

    network = new_network()
    try:
        network.connect(channel=channel, interface=interface, bitrate=bitrate or profile.bus.bitrate)
    except Exception as exc:  # noqa: BLE001 - python-can raises many kinds
        raise DiscoveryError(f"cannot open CAN channel {channel!r} ({interface}): {exc}") from None
    try:
        nodes = scan_identities(network, expect=expect)
    finally:
        network.disconnect()
    ids = chain_from_nodes(nodes, profile, db)
    try:
        return ModuleAssembly.from_serial_modules(db, ids), nodes
    except TimorError as exc:
        raise DiscoveryError(f"the modules found ({' '.join(ids)}) do not form a robot: {exc}") from None
