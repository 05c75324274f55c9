"""Subcommands of ``timor`` for ROS and simulator artefacts: ``moveit-config``, ``xacro``, ``srdf`` and ``mjcf``.

Also the ``<ros2_control>`` variant of ``timor urdf`` (its ``--ros2-control`` and ``--plugin`` flags).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from timor_core.cli.args import (
    add_mesh_arguments,
    add_robot_arguments,
    limited,
    name,
    output_folder,
    relative_mesh_warnings,
    seed,
    serial_assembly,
)

__all__ = ["register", "cmd_urdf_ros2_control"]


def _ros2_control(args: argparse.Namespace, default: bool = False):
    """The Ros2ControlConfig the flags ask for (None if neither --ros2-control nor --plugin, unless default)."""
    from timor_core.export.formats.ros2_control import Ros2ControlConfig

    if args.plugin:
        return Ros2ControlConfig(plugin=args.plugin)
    if default or getattr(args, "ros2_control", False):
        return Ros2ControlConfig()
    return None


def _emit(args: argparse.Namespace, text: str, what: str) -> None:
    """Print to stdout, or write ``args.output`` atomically (creating its folder)."""
    if args.output is None:
        sys.stdout.write(text)
        return
    from timor_core.common.fileio import atomic_write_text

    path = Path(args.output)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, text)
    print(f"wrote {path} ({what}, {len(text)} bytes)", file=sys.stderr)


def _export_description(
    args: argparse.Namespace, render, *positional, ros2_control_default: bool = False, **options
) -> int:
    """Render a robot description with the common flags (prefix, meshes, ros2_control) and emit it."""
    assembly = serial_assembly(args)
    with relative_mesh_warnings():
        text = render(
            assembly,
            *positional,
            prefix=args.prefix,
            mesh_uri=args.mesh_uri,
            package=args.package,
            ros2_control=_ros2_control(args, default=ros2_control_default),
            write_to=args.output,  # written by the exporter, which warns of relative mesh paths
            **options,
        )
        if args.output is None:
            sys.stdout.write(text)
        else:
            print(f"wrote {args.output} ({assembly.dof} DOF, {len(text)} bytes)", file=sys.stderr)
    return 0


def cmd_urdf_ros2_control(args: argparse.Namespace) -> int:
    """``timor urdf`` with a ``<ros2_control>`` block (called by cli's urdf command for these flags)."""
    from timor_core.export.formats.urdf import assembly_to_urdf

    return _export_description(args, assembly_to_urdf, args.name, ros2_control_default=True)


def _cmd_xacro(args: argparse.Namespace) -> int:
    from timor_core.export.formats.xacro import assembly_to_xacro

    return _export_description(args, assembly_to_xacro, args.macro, name=args.name, instantiate=not args.macro_only)


def _cmd_srdf(args: argparse.Namespace) -> int:
    from timor_core.export.formats.srdf import assembly_to_srdf

    assembly = serial_assembly(args)
    text = assembly_to_srdf(
        assembly, name=args.name, prefix=args.prefix, n_samples=args.samples, seed=args.seed, group=args.group
    )
    _emit(args, text, f"{text.count('<disable_collisions')} disabled pairs")
    return 0


def _cmd_mjcf(args: argparse.Namespace) -> int:
    from timor_core.export.formats.mjcf import MJCFOptions, assembly_to_mjcf

    assembly = serial_assembly(args)
    options = MJCFOptions(
        balance_inertia=args.balance_inertia, actuators=args.actuators, contact_excludes=not args.no_excludes
    )
    text = assembly_to_mjcf(assembly, args.name, options=options, write_to=args.output)
    if args.output is None:
        sys.stdout.write(text)
    else:
        meshes = Path(args.output).with_name(f"{Path(args.output).stem}_meshes")
        extra = f", meshes in {meshes}" if meshes.is_dir() else ""
        print(f"wrote {args.output} ({assembly.dof} DOF{extra})", file=sys.stderr)
    return 0


def _cmd_moveit_config(args: argparse.Namespace) -> int:
    from timor_core.export.formats.moveit_config import write_moveit_config

    assembly = serial_assembly(args)
    with relative_mesh_warnings():
        written = write_moveit_config(
            assembly,
            args.output,
            name=args.name,
            prefix=args.prefix,
            ros2_control=_ros2_control(args, default=True),
            group=args.group,
            n_samples=args.samples,
            seed=args.seed,
            mesh_uri=args.mesh_uri,
            package=args.package,
        )
        for path in written.values():
            print(path)
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``moveit-config``, ``xacro``, ``srdf`` and ``mjcf`` to the ``timor`` parser."""

    def common(sp: argparse.ArgumentParser) -> None:
        add_robot_arguments(sp)
        sp.add_argument("--name", type=name, help="robot name (default: set name + assembly hash)")
        sp.add_argument("--prefix", default="", help="prefix for every link and joint name")

    def sampling(sp: argparse.ArgumentParser) -> None:
        sp.add_argument(
            "--samples", type=limited("max_samples"), default=1000, help="random configurations (default 1000)"
        )
        sp.add_argument("--seed", type=seed, default=0, help="seed of the random configurations (default 0)")
        sp.add_argument("--group", type=name, default="manipulator", help="planning group name (default manipulator)")

    plugin_help = "ros2_control hardware plugin (default mock_components/GenericSystem)"

    mc = sub.add_parser("moveit-config", help="write a MoveIt 2 config (URDF, SRDF, YAML files) of a serial assembly")
    common(mc)
    mc.add_argument(
        "-o", "--output", type=output_folder, required=True, help="output folder (other files in it are left alone)"
    )
    mc.add_argument("--plugin", help=plugin_help)
    sampling(mc)
    add_mesh_arguments(mc)
    mc.set_defaults(func=_cmd_moveit_config)

    xa = sub.add_parser("xacro", help="write a xacro macro (prefix parent *origin) of a serial assembly")
    common(xa)
    xa.add_argument("-o", "--output", help="output file (default: stdout); written atomically")
    xa.add_argument("--macro", help="macro name (default: the robot name)")
    xa.add_argument("--macro-only", action="store_true", help="only define the macro (no world link, no call)")
    xa.add_argument("--ros2-control", action="store_true", help="add a <ros2_control> block to the macro")
    xa.add_argument("--plugin", help=plugin_help + "; implies --ros2-control")
    add_mesh_arguments(xa)
    xa.set_defaults(func=_cmd_xacro)

    sr = sub.add_parser("srdf", help="write the MoveIt SRDF (group, home, collision matrix) of a serial assembly")
    common(sr)
    sr.add_argument("-o", "--output", help="output file (default: stdout); written atomically")
    sampling(sr)
    sr.set_defaults(func=_cmd_srdf)

    mj = sub.add_parser("mjcf", help="write a MuJoCo model (MJCF, compiled by MuJoCo) of a serial assembly")
    add_robot_arguments(mj)
    mj.add_argument("--name", type=name, help="model name (default: set name + assembly hash)")
    mj.add_argument(
        "-o", "--output", help="output file; its meshes go to <stem>_meshes beside it (default: stdout, absolute paths)"
    )
    mj.add_argument(
        "--balance-inertia", action="store_true", help="let MuJoCo adjust inertia violating A + B >= C (else refused)"
    )
    mj.add_argument("--actuators", choices=("motor", "none"), default="motor", help="a motor per joint (default)")
    mj.add_argument("--no-excludes", action="store_true", help="keep MuJoCo's parent-child filter, no <exclude>s")
    mj.set_defaults(func=_cmd_mjcf)
