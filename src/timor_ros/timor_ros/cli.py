"""``timor ros up``: the subcommands timor_ros adds to ``timor`` through the ``timor.cli`` entry point (setup.py);
``timor`` finds them with importlib.metadata and never imports timor_ros itself.

rclpy and the nodes are imported only when a command runs, so ``timor --help`` stays fast and works where rclpy
cannot be loaded (the command then says why).
"""

from __future__ import annotations

import argparse

from timor_core.errors import TimorError

__all__ = ["RosUnavailableError", "register"]


class RosUnavailableError(TimorError):
    """timor_ros is installed but rclpy (or the interfaces it was built with) cannot be loaded."""


def _cmd_ros_up(args: argparse.Namespace) -> int:
    try:
        from timor_ros.runner import exit_now
        from timor_ros.up import up
    except ImportError as exc:
        raise RosUnavailableError(
            f"timor ros needs rclpy and timor_interfaces ({exc}); run scripts/setup_ros.sh or source a ROS 2 "
            "workspace with timor_ros"
        ) from None

    return exit_now(
        up(
            args.db,
            args.modules or (),
            args.prefix,
            editable=args.editable,
            persist=args.persist,
            ros2_control_plugin=args.ros2_control,
            srdf=not args.no_srdf,
            search=not args.no_search,
            ros_args=args.ros_args or (),
        )
    )  # ends the process: no interpreter finalization after the nodes are down (see exit_now)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``timor ros`` to the ``timor`` parser (the ``timor.cli`` entry point ``ros``)."""
    ros = sub.add_parser("ros", help="ROS 2 nodes (needs rclpy and timor_ros)")
    rs = ros.add_subparsers(dest="ros_command", required=True)
    up = rs.add_parser(
        "up",
        help="run the modules_db, assembly and search nodes in one process until Ctrl-C",
        description="Serve a module set as parameters (/modules_db), publish the robot description of an "
        "assembly on /robot_description and /robot_description_semantic (/assembly/set_assembly reconfigures it) "
        "and offer the /search/search action.",
    )
    up.add_argument("--db", required=True, help="modules.json, its folder, or an embedded set name")
    up.add_argument("--modules", nargs="+", help="module IDs of a serial chain published at start, base first")
    up.add_argument("--prefix", default="", help="prefix for every link and joint name")
    up.add_argument("--editable", action="store_true", help="allow adding/replacing modules through parameters")
    up.add_argument("--persist", action="store_true", help="with --editable: write edits back to the file")
    up.add_argument("--ros2-control", metavar="PLUGIN", help="add a <ros2_control> block with this hardware plugin")
    up.add_argument("--no-srdf", action="store_true", help="do not publish /robot_description_semantic")
    up.add_argument("--no-search", action="store_true", help="do not start the search node")
    up.add_argument("--ros-args", nargs=argparse.REMAINDER, help="passed to rclpy (e.g. --ros-args -r __ns:=/r1)")
    up.set_defaults(func=_cmd_ros_up)
