"""Subcommands from other packages (`timor.cli` entry points): timor_core finds them with importlib.metadata and
never imports them; without timor_ros, `timor ros` says what to install (a PluginMissingError, exit 2). The real
timor_ros entry point: src/timor_ros/test/test_cli_entry_point.py."""

from __future__ import annotations

import argparse
import ast
import logging
from importlib import metadata
from pathlib import Path

import pytest

from timor_core.cli import plugins
from timor_core.cli.app import main
from timor_core.errors import TimorError

PACKAGE = Path(plugins.__file__).resolve().parents[1]


def register_hello(sub: argparse._SubParsersAction) -> None:
    """A stand-in plugin: ``timor hello --name X`` prints a greeting."""
    hello = sub.add_parser("hello")
    hello.add_argument("--name", default="world")
    hello.set_defaults(func=lambda args: print(f"hello {args.name}") or 0)


def _entry_points(monkeypatch, *entries: metadata.EntryPoint) -> None:
    monkeypatch.setattr(plugins.metadata, "entry_points", lambda group: [e for e in entries if e.group == group])


def test_timor_core_never_imports_timor_ros():
    found = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.relative_to(PACKAGE)}:{node.lineno}" for n in names if n.split(".")[0] == "timor_ros"]
    assert not found, found


def test_without_timor_ros_timor_ros_says_what_to_install(monkeypatch, capsys):
    _entry_points(monkeypatch)
    assert main(["ros", "up", "--db", "robco_like", "--modules", "base", "J"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: timor ros needs the timor_ros package") and "setup_ros.sh" in err
    assert issubclass(plugins.PluginMissingError, TimorError)
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "ros" in capsys.readouterr().out


def test_an_installed_entry_point_adds_its_subcommand(monkeypatch, capsys):
    _entry_points(monkeypatch, metadata.EntryPoint("hello", f"{__name__}:register_hello", plugins.GROUP),
                  metadata.EntryPoint("other", f"{__name__}:register_hello", "another.group"))  # fmt: skip
    assert main(["hello", "--name", "robot"]) == 0
    assert capsys.readouterr().out == "hello robot\n"


def test_a_broken_entry_point_leaves_the_rest_of_the_cli_working(monkeypatch, capsys, caplog):
    _entry_points(monkeypatch, metadata.EntryPoint("ros", "no_such_module_here:register", plugins.GROUP))
    caplog.set_level(logging.WARNING, logger=plugins.__name__)
    assert main(["ros", "up"]) == 2
    err = capsys.readouterr().err
    assert "timor ros needs the timor_ros package" in err
    assert "no_such_module_here" in err + caplog.text  # the warning (stderr or the log, as logging is set up)
    assert main(["db", "info", "robco_like"]) == 0


def test_timors_own_commands_do_not_look_up_entry_points(monkeypatch, capsys):
    def looked_up(group):
        raise AssertionError(f"entry points of {group} looked up")

    monkeypatch.setattr(plugins.metadata, "entry_points", looked_up)
    assert main(["-v", "db", "info", "robco_like"]) == 0  # 0.1 s of every command otherwise (issue 38 item 4)
    for other in (["ros", "up"], ["--help"], []):  # another package's command, the help, none: all are listed
        with pytest.raises(AssertionError, match="timor.cli"):
            main(other)
