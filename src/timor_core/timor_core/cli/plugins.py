"""Subcommands other packages add to ``timor`` through the ``timor.cli`` entry point group (importlib.metadata):
timor_ros adds ``timor ros``. Each entry point names a ``register(subparsers) -> None``.

timor_core does not import those packages (they depend on it). A known subcommand whose package is not installed
(``ros``) is still listed, and running it ends with a ``PluginMissingError`` saying what to install.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Callable
from importlib import metadata

from timor_core.errors import TimorError

__all__ = ["GROUP", "KNOWN", "PluginMissingError", "register"]

GROUP = "timor.cli"
#: subcommand -> what provides it, for the message when it is not installed
KNOWN = {
    "ros": "the timor_ros package (ROS 2 nodes): run scripts/setup_ros.sh (or make ros), or source a ROS 2 "
    "workspace with timor_ros built",
}


class PluginMissingError(TimorError):
    """A subcommand whose package is not installed."""


def _refuse(name: str) -> Callable[[argparse.Namespace], int]:
    def refuse(_args: argparse.Namespace) -> int:
        raise PluginMissingError(f"timor {name} needs {KNOWN[name]}")

    return refuse


def register(sub: argparse._SubParsersAction) -> None:
    """Add the subcommands of every installed ``timor.cli`` entry point; a placeholder for each known one that is
    not installed (or whose registration cannot be loaded)."""
    found = set()
    for entry in sorted(metadata.entry_points(group=GROUP), key=lambda e: e.name):
        try:
            entry.load()(sub)
        except Exception as exc:  # noqa: BLE001 - a broken plugin must not take the whole CLI down
            logging.getLogger(__name__).warning("timor: the %s subcommands of %s cannot be loaded: %s",
                                                entry.name, entry.value, exc)  # fmt: skip
            continue
        found.add(entry.name)
    for name in sorted(set(KNOWN) - found):
        placeholder = sub.add_parser(name, help=f"(not installed: needs {KNOWN[name].split(':')[0]})")
        placeholder.add_argument("arguments", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
        placeholder.set_defaults(func=_refuse(name))
