"""Subcommands of ``timor`` for this area (registered by :mod:`timor_core.cli`)."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    """Add this module's subcommands to the ``timor`` parser."""
