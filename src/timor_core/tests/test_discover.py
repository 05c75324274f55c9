"""Reading the assembly from a live CANopen bus (issue 16), end to end on python-can's virtual bus with simulated
CiA 402 drives (canopen.LocalNode from the example EDS): no hardware needed."""

from __future__ import annotations

import uuid

import pytest

canopen = pytest.importorskip("canopen")

from timor_core.cli.app import main  # noqa: E402
from timor_core.errors import InputError  # noqa: E402
from timor_core.hardware.discover import (  # noqa: E402
    DiscoveryError,
    FoundNode,
    chain_from_nodes,
    discover_canopen,
    new_network,
)
from timor_core.hardware.profiles import HardwareProfile  # noqa: E402


@pytest.fixture
def profile(robco) -> HardwareProfile:
    return HardwareProfile.for_db(robco.base_dir, "canopen")


@pytest.fixture
def bus(profile):
    """A virtual CAN channel with simulated drives; ``add(node_id, product_code)`` puts one on it."""
    channel = f"timor_{uuid.uuid4().hex[:8]}"
    network = new_network()  # its disconnect at the end does not wait canopen's second for the reader thread
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
    assembly, nodes = discover_canopen(bus.channel, "virtual", profile, robco, expect=3)
    assert assembly.module_ids == ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
    assert [(n.node_id, n.serial, n.product_code) for n in nodes] == [
        (2, 1002, 0x402),
        (3, 1003, 0x402),
        (4, 1004, 0x402),
    ]


def test_an_unknown_drive_is_named_by_node_id_and_product_code(bus, profile, robco):
    bus(2)
    bus(3, product_code=0xBEEF)
    with pytest.raises(DiscoveryError, match=r"node 3: vendor 0x00000F1E product 0x0000BEEF .*unknown drive"):
        discover_canopen(bus.channel, "virtual", profile, robco, expect=2)


def test_an_empty_bus_is_an_error(bus, profile, robco):
    with pytest.raises(DiscoveryError, match="no drive answered"):
        discover_canopen(bus.channel, "virtual", profile, robco)


def test_a_bus_with_fewer_drives_than_expected_is_refused_naming_those_that_answered(bus, profile, robco):
    """``expect``: the scan ends once that many drives answered; fewer within the scan's window are refused (a
    missing last drive, which no gap in the node ids shows)."""
    for node_id in (2, 3, 4):
        bus(node_id)
    with pytest.raises(DiscoveryError, match=r"4 drives expected, 3 answered within 0.5 s \(node ids 2, 3, 4\)"):
        discover_canopen(bus.channel, "virtual", profile, robco, expect=4)
    with pytest.raises(InputError, match="expected drives: 1 to 127"):
        discover_canopen(bus.channel, "virtual", profile, robco, expect=0)


def test_duplicate_node_ids_and_missing_base_are_refused(profile, robco):
    node = FoundNode(2, 0xF1E, 0x402, 1, 0)
    with pytest.raises(DiscoveryError, match="node id 2 answers twice"):
        chain_from_nodes([node, node], profile, robco)
    no_base = HardwareProfile(profile.route, profile.bus, profile.drives, chain=type(profile.chain)(base="nosuch"))
    with pytest.raises(DiscoveryError, match="no base module"):
        chain_from_nodes([node], no_base, robco)


def test_a_network_of_discovery_reads_in_short_cycles_so_its_disconnect_returns_at_once():
    """canopen's reader thread waits up to NOTIFIER_CYCLE per read and disconnect() joins it: canopen's 1 s made
    every discovery and every simulator wait a second after its work; new_network's cycle is short."""
    from timor_core.hardware.discover import NOTIFIER_CYCLE

    network = new_network()
    network.connect(channel=f"timor_{uuid.uuid4().hex[:8]}", interface="virtual")
    try:
        assert network.notifier.timeout == NOTIFIER_CYCLE <= 0.1 < canopen.Network.NOTIFIER_CYCLE
    finally:
        network.disconnect()


def test_cli_discover_prints_the_assembly_and_writes_its_bringup(bus, tmp_path, capsys):
    for node_id in (2, 3, 4):
        bus(node_id)
    code = main(["discover", "--can", bus.channel, "--interface", "virtual", "--db", "robco_like", "--expect", "3",
                 "-o", str(tmp_path), "--samples", "10"])  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert captured.out.strip() == "base J L_250 J L_150 J L_150 gripper"
    assert "node 2: vendor 0x00000F1E product 0x00000402" in captured.err
    (package,) = tmp_path.glob("*_bringup")
    assert (package / "config" / "bus" / "bus.yml").is_file()


def _sims(profile, *specs, **kw):
    from timor_core.hardware.canopen_sim import SimDrive

    drive = profile.drives["J"]
    return [SimDrive(n, drive.eds, drive.vendor_id, drive.product_code, serial=s, **kw) for n, s in specs]


def test_two_drives_at_one_node_id_are_refused_naming_it(profile, robco):
    from timor_core.hardware.canopen_sim import simulated_bus

    channel = f"timor_{uuid.uuid4().hex[:8]}"
    with simulated_bus(channel, "virtual", _sims(profile, (2, 2), (3, 3), (3, 99), (4, 4))):
        with pytest.raises(DiscoveryError, match=r"node id 3 answered more than once: two drives share it"):
            discover_canopen(channel, "virtual", profile, robco)


def test_a_drive_missing_between_others_or_from_the_chain_is_named(profile, robco):
    from timor_core.hardware.canopen_sim import simulated_bus

    channel = f"timor_{uuid.uuid4().hex[:8]}"
    with simulated_bus(channel, "virtual", _sims(profile, (2, 2), (4, 4))):
        with pytest.raises(DiscoveryError, match=r"the bus lacks node id 3: .*node ids 2..4 \(found 2, 4\)"):
            discover_canopen(channel, "virtual", profile, robco, expect=2)
    channel = f"timor_{uuid.uuid4().hex[:8]}"
    with simulated_bus(channel, "virtual", _sims(profile, (2, 2), (3, 3))):  # the chain has links for 3 joints
        with pytest.raises(DiscoveryError, match=r"the bus lacks node id 4"):
            discover_canopen(channel, "virtual", profile, robco, expect=2)


def test_a_drive_with_only_the_mandatory_identity_entries_is_found(profile, robco):
    """CiA 301 makes only 0x1018 sub 1 (vendor id) mandatory: product, revision and serial may be absent."""
    from timor_core.hardware.canopen_sim import simulated_bus

    channel = f"timor_{uuid.uuid4().hex[:8]}"
    with simulated_bus(channel, "virtual", _sims(profile, (2, 2), (3, 3), (4, 4), mandatory_only=True)):
        assembly, nodes = discover_canopen(channel, "virtual", profile, robco, expect=3)
    assert assembly.module_ids == ["base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper"]
    assert [(n.vendor_id, n.product_code, n.revision, n.serial) for n in nodes] == [(0xF1E, None, None, None)] * 3


@pytest.mark.xdist_group("udp_multicast")  # its sockets hear every group on their port: one such test at a time
def test_discover_from_a_shell_against_a_simulator_in_another_process(tmp_path, capsys):
    """docs/hardware.md's commands: ``timor canopen-sim`` in its own process (as from another shell), ``timor
    discover`` in this one, over python-can's udp_multicast interface (a multicast group on this host). (Both as
    child processes, the guide's commands as written: test_hardware_guide.py.)"""
    import random
    import subprocess
    import sys

    from hostile import run_cli_here

    group = f"239.74.{random.randint(1, 254)}.{random.randint(1, 254)}"
    pytest.importorskip("can")  # only a plain install skips: msgpack (python-can[multicast]) is a dependency
    sim = subprocess.Popen(
        [sys.executable, "-m", "timor_core.cli", "canopen-sim", "--can", group, "--db", "robco_like",
         "--drive", "2:J", "--drive", "3:J", "--drive", "4:J", "--seconds", "60"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert sim.stdout is not None and sim.stdout.readline().strip() == "ready"
        proc = run_cli_here(capsys, ["discover", "--can", group, "--interface", "udp_multicast", "--db", "robco_like",
                                     "--expect", "3", "-o", str(tmp_path), "--samples", "5"])  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.strip() == "base J L_250 J L_150 J L_150 gripper"
        assert "node 4: vendor 0x00000F1E product 0x00000402 revision 1 serial 4" in proc.stderr
        assert (next(tmp_path.glob("*_bringup")) / "config" / "bus" / "bus.yml").is_file()
    finally:
        sim.terminate()
        sim.wait(timeout=30)
    assert sim.returncode == 0, sim.stderr.read() if sim.stderr else ""
