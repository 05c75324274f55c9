"""Names timor writes into XML and file names: checked, escaped and made unique in one place.

User input (prefixes, robot names, module and body IDs, mesh file names) ends up in URDF/SRDF/xacro attributes
and in file names. A quote in a prefix used to inject XML, a ``../`` in a robot name wrote files outside the
output folder, and IDs that differ only in non-ASCII characters became the same link name. Every exporter goes
through these functions instead.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from pathlib import Path

from timor_core.errors import InputError

__all__ = [
    "format_number",
    "ros_name",
    "check_prefix",
    "check_name",
    "check_plugin",
    "xml_escape",
    "xacro_escape",
    "check_xacro_argument",
    "expand_xacro",
    "name_attr",
    "check_tf_frames",
    "check_xacro_names",
    "MAX_NAME_CHARS",
    "XACRO_PREFIX",
]

XACRO_PREFIX = "${prefix}"
"""The prefix of every name inside a xacro macro: the macro's own ``prefix`` parameter, expanded by xacro."""

MAX_NAME_CHARS = 200
"""Longest accepted prefix or name."""

_INVALID = re.compile(r"[^A-Za-z0-9_]")
_PREFIX = re.compile(r"[A-Za-z0-9_]*")
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*")
# characters XML 1.0 cannot hold at all, escaped or not
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def ros_name(text: str) -> str:
    """A valid ROS/URDF name part (letters, digits, underscores), distinct for distinct texts.

    A text that is already valid stays as it is; otherwise the invalid characters become ``_`` and a short
    hash of the original text is appended, so ``m1äöü`` and ``m1éèê`` do not both become ``m1___``.
    """
    clean = _INVALID.sub("_", text)
    if clean == text:
        return text
    return f"{clean}_{hashlib.sha1(text.encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def check_prefix(prefix: object, what: str = "prefix") -> str:
    """A prefix for link and joint names: letters, digits and underscores only (may be empty)."""
    if prefix == XACRO_PREFIX:
        return prefix
    if not isinstance(prefix, str) or not _PREFIX.fullmatch(prefix) or len(prefix) > MAX_NAME_CHARS:
        raise InputError(
            f"the {what} must be letters, digits and underscores (at most {MAX_NAME_CHARS} characters)",
            value=prefix,
        )
    return prefix


def check_name(name: object, what: str = "name") -> str:
    """A robot, group or package name that is also a safe file name: letters, digits, ``_``, ``.``, ``-``.

    It must start with a letter, digit or underscore and contain no ``..``; so it can never climb out of an
    output folder or inject markup.
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name) or ".." in name or len(name) > MAX_NAME_CHARS:
        raise InputError(
            f"the {what} must be letters, digits, '_', '.' and '-' (starting with a letter, digit or '_', "
            f"no '..', at most {MAX_NAME_CHARS} characters)",
            value=name,
        )
    return name


_PLUGIN = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:(?:/|::)[A-Za-z_][A-Za-z0-9_]*)*")


def check_plugin(plugin: object, what: str = "ros2_control hardware plugin") -> str:
    """A pluginlib class name such as ``mock_components/GenericSystem`` or ``ns::Class``."""
    if not isinstance(plugin, str) or not _PLUGIN.fullmatch(plugin) or len(plugin) > MAX_NAME_CHARS:
        raise InputError(
            f"the {what} must be a plugin class name such as mock_components/GenericSystem "
            "(letters, digits, '_', separated by '/' or '::')",
            value=plugin,
        )
    return plugin


def xml_escape(text: str, what: str = "text") -> str:
    """Escape text for an XML attribute or element (``& < > " '``); refuse characters XML cannot hold."""
    bad = _NOT_XML.search(text)
    if bad:
        raise InputError(f"the {what} contains a character XML cannot hold (U+{ord(bad.group()):04X})", value=text)
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&quot;")
        .replace("'", "&apos;")
    )


def format_number(v: float) -> str:
    """A number for XML/URDF text: shortest round-trip repr, ``0`` for |v| < 1e-12, ``inf``/``-inf`` as such."""
    v = float(v)
    if abs(v) < 1e-12:
        return "0"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return repr(v)


_DOLLARS = re.compile(r"(\$+)(.?)", re.S)


def xacro_escape(text: str) -> str:
    """Text that xacro expands back to itself (nothing in it evaluated): a run of ``$`` before ``{`` or ``(``
    gets one more ``$`` (xacro drops one); a run of two or more before anything else (an error in xacro) becomes
    ``${'$'}`` per ``$``."""

    def one(m: re.Match[str]) -> str:
        run, after = m.group(1), m.group(2)
        if after in ("{", "("):
            return "$" + run + after
        return (run if len(run) == 1 else "${'$'}" * len(run)) + after

    return _DOLLARS.sub(one, text)


def check_xacro_argument(name: str, value: str) -> str:
    """``value`` of xacro argument ``name``; refused (an InputError naming the argument) if it holds a ``$(...)``,
    which xacro would run (``$(eval ...)``, ``$(env ...)``): ``${...}`` and markup stay text."""
    if "$(" in value:
        raise InputError(f"launch argument {name!r} cannot hold a xacro substitution '$(...)'", value=value)
    return value


def expand_xacro(file: str | Path, mappings: dict[str, str]) -> str:
    """The URDF text of xacro ``file`` with the arguments ``mappings``; xacro's own errors as an InputError naming
    the file."""
    import xacro

    try:
        return xacro.process_file(str(file), mappings=mappings).toxml()
    except xacro.XacroException as exc:
        raise InputError(f"xacro refused the robot description: {exc}", file=file) from None


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]*")


def name_attr(name: str, for_xacro: bool = False) -> str:
    """A link or joint name as XML attribute text: a URDF name is any text (an imported robot keeping its names
    has ``-``, ``/``, spaces), so it is escaped, never rewritten. ``for_xacro``: inside a xacro macro, where a
    name starts with ``${prefix}``, the rest also escaped so that xacro expands it to itself."""
    if _PLAIN_NAME.fullmatch(name):
        return name
    head = XACRO_PREFIX if for_xacro and name.startswith(XACRO_PREFIX) else ""
    text = xml_escape(name[len(head) :], "link or joint name")
    if "\t" in text or "\n" in text or "\r" in text:  # a parser reads them in an attribute as spaces
        if for_xacro:
            check_xacro_names([name[len(head) :]])
        text = text.replace("\t", "&#9;").replace("\n", "&#10;").replace("\r", "&#13;")
    return head + xacro_escape(text) if for_xacro else text


def check_xacro_names(names: Iterable[str]) -> None:
    """Refuse the link and joint names xacro cannot hold, naming the consumer and the name: xacro writes a tab,
    newline or return in an attribute as it is, and XML reads it back as a space."""
    for name in names:
        if "\t" in name or "\n" in name or "\r" in name:
            raise InputError(
                f"xacro cannot hold the name {name!r}: it writes a tab, newline or return in an attribute as it is, "
                "and every XML reader takes it for a space; rename the link or joint (the URDF export keeps it)",
                value=name,
            )


def check_tf_frames(names: Iterable[str]) -> None:
    """Refuse the link names TF cannot hold, naming the consumer and the name: tf2 drops a leading ``/`` from a frame
    it receives (robot_state_publisher's ``/arm`` arrives as ``arm``) and refuses to look one up. Every other name
    (``-``, ``/`` inside, spaces) is a valid tf2 frame and is kept."""
    for name in names:
        if name.startswith("/"):
            raise InputError(
                f"tf2 (robot_state_publisher's TF) cannot hold the link name {name!r}: it drops the leading '/' and "
                "refuses lookups of such a frame; rename the link (URDF, xacro and SRDF exports keep it)",
                value=name,
            )
