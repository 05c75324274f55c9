"""The ``timor`` command line: one module per group of subcommands, a thin layer over the library."""

from timor_core.cli.app import main

__all__ = ["main"]
