"""Subcommands of ``timor`` for real hardware: ``bringup`` (a ROS 2 bring-up package for mock hardware, Gazebo,
CANopen, EtherCAT or a vendor plugin) and ``discover`` (the assembly on a live CANopen bus)."""

from __future__ import annotations

import argparse
import sys
import threading
from typing import TYPE_CHECKING

from timor_core.cli.args import (
    add_robot_arguments,
    limited,
    load_db,
    name,
    output_folder,
    positive_int,
    seed,
    serial_assembly,
)
from timor_core.errors import InputError
from timor_core.export.formats.ros_distro import DEFAULT_DISTRO, DISTROS

if TYPE_CHECKING:
    from timor_core.hardware.profiles import HardwareProfile

__all__ = ["register"]


def _cmd_bringup(args: argparse.Namespace) -> int:
    from timor_core.hardware.bringup import write_bringup

    result = write_bringup(
        serial_assembly(args),
        args.output,
        args.hardware,
        name=args.name,
        prefix=args.prefix,
        n_samples=args.samples,
        seed=args.seed,
        ros_distro=args.ros_distro,
    )
    print(result.folder)
    print(f"wrote {result.package} ({result.route} hardware, {len(result.files)} files)", file=sys.stderr)
    return 0


def _cmd_discover(args: argparse.Namespace) -> int:
    from timor_core.hardware.bringup import load_route, write_bringup
    from timor_core.hardware.discover import discover_canopen

    db = load_db(args.db)
    profile = _profile(args)
    assembly, nodes = discover_canopen(args.can, args.interface, profile, db, bitrate=args.bitrate,
                                       expect=args.expect)  # fmt: skip
    for node in nodes:
        print(node.describe(), file=sys.stderr)
    print(" ".join(assembly.module_ids))
    if args.output:
        route = load_route(assembly, profile)
        result = write_bringup(assembly, args.output, route, n_samples=args.samples)
        print(f"wrote {result.folder}", file=sys.stderr)
    return 0


def _cmd_canopen_sim(args: argparse.Namespace) -> int:
    import signal

    from timor_core.hardware.canopen_sim import sim_drives, simulated_bus

    profile = _profile(args)
    drives = sim_drives(profile, args.drive)
    with simulated_bus(args.can, args.interface, drives):
        for d in drives:
            print(f"simulating node {d.node_id}: vendor 0x{d.vendor_id:08X} product 0x{d.product_code:08X}",
                  file=sys.stderr)  # fmt: skip
        print("ready", flush=True)
        stop = threading.Event()  # set by SIGTERM: the simulator ends at once, not at its next look
        signal.signal(signal.SIGTERM, lambda signum, frame: stop.set())
        stop.wait(args.seconds or None)
    return 0


def _profile(args: argparse.Namespace) -> HardwareProfile:
    """The ``--profile`` given, else the module set's CANopen profile."""
    from timor_core.hardware.profiles import HardwareProfile

    if args.profile:
        return HardwareProfile.from_json_file(args.profile)
    db = load_db(args.db)
    if db.base_dir is None:
        raise InputError("the module set has no folder with a hardware profile: give --profile", value=args.db)
    return HardwareProfile.for_db(db.base_dir, "canopen")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``bringup`` and ``discover`` to the ``timor`` parser."""
    bu = sub.add_parser("bringup", help="write a ROS 2 bring-up package (URDF, controllers, MoveIt, launch files)")
    add_robot_arguments(bu)
    bu.add_argument(
        "--hardware",
        default="mock",
        help="mock (default), gazebo, canopen, ethercat, plugin (the set's hardware_<route>.json), "
        "or the path of a hardware profile",
    )
    bu.add_argument("-o", "--output", type=output_folder, required=True, help="folder that gets <robot>_bringup")
    bu.add_argument("--name", type=name, help="robot name (default: set name + assembly hash)")
    bu.add_argument("--prefix", default="", help="prefix for every link and joint name")
    bu.add_argument(
        "--samples", type=limited("max_samples"), default=1000, help="configurations for the SRDF (default 1000)"
    )
    bu.add_argument("--seed", type=seed, default=0, help="seed of those configurations (default 0)")
    bu.add_argument("--ros-distro", choices=DISTROS, default=DEFAULT_DISTRO,
                    help=f"ROS 2 distro of the robot's computer (MoveIt files; default {DEFAULT_DISTRO})")  # fmt: skip
    bu.set_defaults(func=_cmd_bringup)

    di = sub.add_parser("discover", help="read the assembly from a live CANopen bus (identity objects 0x1018)")
    di.add_argument("--can", required=True, help="CAN channel, e.g. can0 (python-can)")
    di.add_argument("--interface", default="socketcan", help="python-can interface: socketcan (default), virtual, ...")
    di.add_argument("--bitrate", type=positive_int, help="bitrate (default: the profile's)")
    di.add_argument("--db", required=True, help="modules.json, its folder, or an embedded set name")
    di.add_argument("--profile", help="hardware profile (default: the set's hardware_canopen.json)")
    di.add_argument("--expect", type=positive_int,
                    help="number of drives on the bus: the scan ends once that many answered, and fails if fewer "
                    "do (default: it waits 0.5 s for any)")  # fmt: skip
    di.add_argument("-o", "--output", type=output_folder, help="also write the robot's bring-up package here")
    di.add_argument(
        "--samples", type=limited("max_samples"), default=1000, help="configurations for the SRDF (default 1000)"
    )
    di.set_defaults(func=_cmd_discover)

    si = sub.add_parser("canopen-sim", help="simulate CiA 402 drives of a hardware profile on a CAN bus (for discover)")
    si.add_argument("--can", required=True, help="CAN channel (udp_multicast: a multicast group, e.g. 239.74.163.2)")
    si.add_argument("--interface", default="udp_multicast", help="python-can interface (default udp_multicast)")
    si.add_argument("--db", required=True, help="modules.json, its folder, or an embedded set name")
    si.add_argument("--profile", help="hardware profile (default: the set's hardware_canopen.json)")
    si.add_argument("--drive", action="append", required=True, metavar="NODE_ID:MODULE_ID",
                    help="a drive to simulate: node id and the joint module whose drive it is (repeat)")  # fmt: skip
    si.add_argument("--seconds", type=float, default=0.0, help="stop after this long (default: until stopped)")
    si.set_defaults(func=_cmd_canopen_sim)
