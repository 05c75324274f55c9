"""Reading the assembly from a live CANopen bus (issue 16), end to end on python-can's virtual bus with simulated
CiA 402 drives (canopen.LocalNode from the example EDS): no hardware needed."""

from __future__ import annotations

import uuid

import pytest

canopen = pytest.importorskip("canopen")

from timor_core.cli.app import main  # noqa: E402
from timor_core.export.discover import DiscoveryError, FoundNode, chain_from_nodes, discover_canopen  # noqa: E402
from timor_core.export.hardware import HardwareProfile  # noqa: E402


@pytest.fixture
def profile(robco) -> HardwareProfile:
    return HardwareProfile.for_db(robco.base_dir, "canopen")


@pytest.fixture
def bus(profile):
    """A virtual CAN channel with simulated drives; ``add(node_id, product_code)`` puts one on it."""
    channel = f"timor_{uuid.uuid4().hex[:8]}"
    network = canopen.Network()
    network.connect(channel=channel, interface="virtual", receive_own_messages=False)
    eds = str(profile.drives["J"].eds)

    def add(node_id: int, product_code: int | None = None, serial: int = 0) -> None:
        node = canopen.LocalNode(node_id, eds)
        if product_code is not None:
            node.sdo[0x1018][2].raw = product_code
        node.sdo[0x1018][4].raw = serial
        network.add_node(node)

    add.channel = channel  # type: ignore[attr-defined]
    yield add
    network.disconnect()


def test_the_robot_on_the_bus_is_found_in_node_id_order(bus, profile, robco):
    for node_id, serial in ((4, 1004), (2, 1002), (3, 1003)):  # added out of order
        bus(node_id, serial=serial)
    assembly, nodes = discover_canopen(bus.channel, "virtual", profile, robco)
    assert assembly.module_ids == ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
    assert [(n.node_id, n.serial, n.product_code) for n in nodes] == [
        (2, 1002, 0x402),
        (3, 1003, 0x402),
        (4, 1004, 0x402),
    ]


def test_an_unknown_drive_is_named_by_node_id_and_product_code(bus, profile, robco):
    bus(2)
    bus(3, product_code=0xBEEF)
    with pytest.raises(DiscoveryError, match=r"node 3: unknown drive .*product 0x0000BEEF"):
        discover_canopen(bus.channel, "virtual", profile, robco)


def test_an_empty_bus_is_an_error(bus, profile, robco):
    with pytest.raises(DiscoveryError, match="no drive answered"):
        discover_canopen(bus.channel, "virtual", profile, robco)


def test_duplicate_node_ids_and_missing_base_are_refused(profile, robco):
    node = FoundNode(2, 0xF1E, 0x402, 1, 0)
    with pytest.raises(DiscoveryError, match="node id 2 answers twice"):
        chain_from_nodes([node, node], profile, robco)
    no_base = HardwareProfile(profile.route, profile.bus, profile.drives, chain=type(profile.chain)(base="nosuch"))
    with pytest.raises(DiscoveryError, match="no base module"):
        chain_from_nodes([node], no_base, robco)


def test_cli_discover_prints_the_assembly_and_writes_its_bringup(bus, tmp_path, capsys):
    for node_id in (2, 3, 4):
        bus(node_id)
    code = main(["discover", "--can", bus.channel, "--interface", "virtual", "--db", "robco_like",
                 "-o", str(tmp_path), "--samples", "10"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.strip() == "base J L_250 J L_150 J L_150 gripper"
    assert "node 2: vendor 0x00000F1E product 0x00000402" in captured.err
    (package,) = tmp_path.glob("*_bringup")
    assert (package / "config" / "bus" / "bus.yml").is_file()
