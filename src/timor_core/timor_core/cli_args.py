"""Argument helpers shared by the ``timor`` subcommand modules (cli, cli_export, cli_view, cli_configurator)."""

from __future__ import annotations

import argparse

__all__ = ["load_db", "serial_assembly", "positive_int", "nonnegative_float"]


def load_db(source: str):
    """The module set of ``--db``: a modules.json, its folder, or an embedded set name."""
    from .db import ModulesDB

    return ModulesDB.load(source)


def serial_assembly(args: argparse.Namespace):
    """The serial assembly of ``args.modules`` (base first) from the module set ``args.db``."""
    from .assembly import ModuleAssembly

    return ModuleAssembly.from_serial_modules(load_db(args.db), args.modules)


def nonnegative_float(text: str) -> float:
    """argparse type: a number >= 0."""
    try:
        x = float(text)
    except ValueError:
        x = -1.0
    if not x >= 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative number, got {text!r}")
    return x


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1."""
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return n
