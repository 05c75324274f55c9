"""The steps every launch file takes before it starts anything (:mod:`.launch_arguments` has their arguments): a
``name:=value`` it does not declare refused, the values checked as strings (known names, no NUL, bounded length),
flags and namespaces parsed, the external packages it would start required, and the launch description that runs its
nodes once the arguments are set. Any problem ends the launch with one :class:`LaunchRefusedError` and nothing
running. ROS is imported only inside the functions that look at the installed packages or build the launch
description: the module itself needs no ROS.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from timor_core.errors import InputError, TimorError
from timor_core.limits import limit_hint, limits

__all__ = ["LaunchRefusedError", "check_arguments", "check_namespace", "checked_plan", "controller_manager",
           "launch_description", "parse_auto_flag", "parse_flag", "refuse_unknown_arguments",
           "require_packages"]  # fmt: skip

Plan = TypeVar("Plan")


class LaunchRefusedError(TimorError):
    """A launch refused before it started any process (unknown or bad argument, missing package)."""

    def __init__(self, reason: str) -> None:
        super().__init__(f"{reason}; nothing was started")


_NAMESPACE = re.compile(r"[A-Za-z][A-Za-z0-9_]*(/[A-Za-z][A-Za-z0-9_]*)*")
_TRUE, _FALSE = ("true", "1", "yes", "on"), ("false", "0", "no", "off")


def check_arguments(args: Mapping[str, object], known: Mapping[str, object]) -> dict[str, str]:
    """The arguments as strings, each a known name, without NUL characters and at most ``max_path_chars`` long
    (a launch argument is a name, a flag, a number or a path); else an InputError naming the argument."""
    unknown = sorted(str(k) for k in set(args) - set(known))
    if unknown:
        raise InputError(f"unknown launch argument (expected one of {', '.join(known)})", value=unknown[0])
    longest = limits().max_path_chars
    out = {}
    for name, value in args.items():
        text = value if isinstance(value, str) else str(value)
        if "\x00" in text:
            raise InputError(f"launch argument {name!r} contains a NUL character", value=text)
        if len(text) > longest:
            raise InputError(
                f"launch argument {name!r} has {len(text)} characters, more than the {limit_hint('max_path_chars')}"
                f" ({longest})",
                value=text,
            )
        out[str(name)] = text
    return out


def parse_flag(name: str, value: str) -> bool:
    """A boolean launch argument: true/false (also 1/0, yes/no, on/off); anything else is refused."""
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise InputError(f"launch argument {name!r} must be true or false", value=value)


def parse_auto_flag(name: str, value: str) -> bool | None:
    """A boolean launch argument that may also be ``auto`` (None: decided by what is installed)."""
    return None if str(value).strip().lower() == "auto" else parse_flag(name, value)


def check_namespace(value: str) -> str:
    """The ``namespace`` argument: names of letters, digits and '_' separated by '/' (leading and trailing '/' and
    blanks are dropped: ``/r1/`` -> ``r1``), or empty for the root; else an InputError."""
    namespace = str(value).strip().strip("/")
    if namespace and not _NAMESPACE.fullmatch(namespace):
        raise InputError(
            "launch argument 'namespace' must be a ROS namespace (letters, digits, '_', separated by '/')",
            value=value,
        )
    return namespace


def controller_manager(namespace: str) -> str:
    """The full name of the controller manager of a namespace (what the spawners are told)."""
    return "/" + "/".join(p for p in (*namespace.strip("/").split("/"), "controller_manager") if p)


def refuse_unknown_arguments(launch_file: str, declared: Iterable[str], argv: list[str] | None = None) -> None:
    """When ``launch_file`` is the file given to ``ros2 launch``, refuse a ``name:=value`` it does not declare
    (``ros2 launch`` ignores them silently, so ``rvis:=false`` would start RViz). Not checked when another launch
    file includes this one: that file may have arguments of its own."""
    argv = sys.argv if argv is None else argv
    if not any(Path(a).name == launch_file for a in argv[1:]):
        return
    known = set(declared)
    unknown = [a.split(":=", 1)[0] for a in argv[1:] if ":=" in a and a.split(":=", 1)[0] not in known]
    if unknown:
        raise LaunchRefusedError(
            f"{launch_file}: unknown launch argument {unknown[0]!r} (its arguments: {', '.join(sorted(known))})"
        )


def require_packages(packages: Iterable[str], switches: Mapping[str, str] | None = None) -> None:
    """One LaunchRefusedError naming every package that is not installed (and the argument that leaves it out)."""
    from ament_index_python.packages import PackageNotFoundError, get_package_prefix

    missing = []
    for package in dict.fromkeys(packages):
        try:
            get_package_prefix(package)
        except (PackageNotFoundError, ValueError):
            switch = (switches or {}).get(package)
            missing.append(f"{package} (leave it out with {switch})" if switch else package)
    if missing:
        raise LaunchRefusedError(f"not installed: {', '.join(missing)}")


def launch_description(declared: Mapping[str, tuple[str, str]], launch: Callable[[Any], list]) -> Any:
    """What every timor launch file's ``generate_launch_description`` returns: its arguments declared (name ->
    (default, description)) and ``launch(context)`` run once their values are set (an ``OpaqueFunction``)."""
    # ignore: where mypy also checks src/timor_ros, it reads src/timor_ros/launch/ (launch files) as package `launch`
    from launch import LaunchDescription  # type: ignore[attr-defined]
    from launch.actions import DeclareLaunchArgument, OpaqueFunction

    arguments = [DeclareLaunchArgument(k, default_value=v, description=d) for k, (v, d) in declared.items()]
    return LaunchDescription([*arguments, OpaqueFunction(function=launch)])


def checked_plan(
    context: Any, launch_file: str, declared: Iterable[str], parse: Callable[[dict[str, str]], Plan]
) -> Plan:
    """A launch file's validated arguments (``parse`` of the values in the launch ``context``), after refusing
    unknown command-line arguments; a bad value is one LaunchRefusedError naming the file and the argument."""
    names = list(declared)
    refuse_unknown_arguments(launch_file, names)
    configs: Mapping[str, str] = context.launch_configurations
    try:
        return parse({name: configs[name] for name in names if name in configs})
    except InputError as exc:
        raise LaunchRefusedError(f"{launch_file}: {exc}") from None
