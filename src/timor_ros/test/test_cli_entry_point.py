"""`timor ros` comes from timor_ros's `timor.cli` entry point (setup.py): installed here, the CLI finds it with
importlib.metadata and runs it; timor_core never imports timor_ros (see src/timor_core/tests/test_cli_plugins.py)."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata


def test_timor_ros_registers_the_ros_subcommand():
    (entry,) = [e for e in metadata.entry_points(group="timor.cli") if e.name == "ros"]
    assert entry.value == "timor_ros.cli:register" and entry.dist is not None and entry.dist.name == "timor_ros"


def test_timor_ros_up_runs_through_the_entry_point():
    run = subprocess.run([sys.executable, "-m", "timor_core.cli", "ros", "up", "--help"], capture_output=True,
                         text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert "usage: timor ros up" in run.stdout and "--ros2-control PLUGIN" in run.stdout
    bad = subprocess.run([sys.executable, "-m", "timor_core.cli", "ros", "up", "--db", "/no/such/modules.json",
                          "--no-search"], capture_output=True, text=True, timeout=120)  # fmt: skip
    assert bad.returncode == 2, bad.stderr[-2000:]
    assert "/no/such/modules.json" in bad.stderr
