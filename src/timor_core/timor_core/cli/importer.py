"""``timor import``: a robot's URDF as a one-module set (``modules.json`` with its meshes beside it), which every
robot command then takes as ``DB MODULE`` (see ``timor_core.export.urdf_import.importer``)."""

from __future__ import annotations

import argparse
import shlex
import sys
import warnings
from pathlib import Path

from timor_core.common.gc_pause import paused_gc
from timor_core.errors import InputError

__all__ = ["register"]


def _connector(text: str):
    """``TYPE[:SIZE[,SIZE...][:GENDER]]`` -> ToolConnector (e.g. ``robco:0.08:m``)."""
    from timor_core.export.urdf_import.importer import ToolConnector

    parts = text.split(":")
    if not parts[0] or len(parts) > 3:
        raise argparse.ArgumentTypeError(f"expected TYPE[:SIZE[,SIZE...][:GENDER]], got {text!r}")
    try:
        size = tuple(float(v) for v in parts[1].split(",") if v) if len(parts) > 1 else ()
    except ValueError:
        raise argparse.ArgumentTypeError(f"connector sizes must be numbers, got {parts[1]!r}") from None
    connector = ToolConnector(parts[0], size, parts[2] if len(parts) > 2 else "m")
    try:
        connector.to_json()  # its checks: a finite size in range (not nan), a known gender
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None
    return connector


def _cmd_import(args: argparse.Namespace) -> int:
    output = Path(args.output)
    if output.suffix != ".json":
        raise InputError("-o must name a .json file (the module set; its meshes are copied beside it)",
                         path="-o", value=args.output)  # fmt: skip
    with paused_gc():  # the collector would walk the new module's 500,000 objects (100,000 links) in vain
        return _import(args, output)


def _import(args: argparse.Namespace, output: Path) -> int:
    from timor_core.export.urdf_import.importer import MeshesLeftOut, ToolConnector, db_from_urdf

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", MeshesLeftOut)
        db = db_from_urdf(
            Path(args.urdf),
            [Path(d) for d in args.package_dir],
            module_id=args.module_id,
            tcp_link=args.tcp_link,
            keep_names=args.keep_names,
            tool_connector=args.tool_connector or ToolConnector(),
            missing_meshes=args.meshes,
        )
    for w in caught:
        if isinstance(w.message, MeshesLeftOut):
            print(f"left out {len(w.message.meshes)} mesh(es) not found (--meshes skip):", file=sys.stderr)
            print("".join(f"  {m}\n" for m in w.message.meshes), end="", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    db.to_json_file(output)
    module = next(iter(db))
    dof = sum(j.actuated for j in module.joints)
    command = shlex.join(["timor", "fk", str(output), module.id])  # runs as printed, whatever the path and ID
    print(f"wrote {output}: module {module.id!r} ({dof} DOF, {len(module.bodies)} links); e.g. {command}",
          file=sys.stderr)  # fmt: skip
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``timor import``."""
    p = sub.add_parser("import", help="a robot's URDF as a one-module set (modules.json) for every robot command")
    p.add_argument("urdf", help="the URDF file (a xacro file must be expanded first: xacro FILE > robot.urdf)")
    p.add_argument("-o", "--output", required=True, help="the module set to write (modules.json); meshes go beside")
    p.add_argument("--package-dir", action="append", default=[], metavar="DIR",
                   help="folder holding the packages of package:// mesh names (repeatable; ROS_PACKAGE_PATH and "
                   "AMENT_PREFIX_PATH are searched too)")  # fmt: skip
    p.add_argument("--tcp-link", help="the link that carries the tool frame (default: guessed, tool-frame names first)")
    p.add_argument("--keep-names", action="store_true", help="keep the URDF's link and joint names and root")
    p.add_argument("--module-id", help="the module's ID (default: the robot's name)")
    p.add_argument(
        "--meshes",
        choices=("error", "skip"),
        default="error",
        help="a mesh file that is not found: refuse the URDF (error, default) or leave the mesh out and import "
        "kinematics, dynamics and primitive shapes (skip; the meshes left out are listed)",
    )
    p.add_argument(
        "--tool-connector",
        type=_connector,
        metavar="TYPE[:SIZE[:GENDER]]",
        help="the tool link's connector, made to fit another set's gripper (default: eef, the TCP)",
    )
    p.set_defaults(func=_cmd_import)
