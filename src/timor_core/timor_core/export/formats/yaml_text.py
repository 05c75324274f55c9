"""YAML text of plain data for the files timor writes (MoveIt and ros2_control configs): PyYAML with the layout
those files have in ROS packages.

Block style, keys in the order given, lists indented under their key, tuples as lists, no line wrapping
(MoveIt's request adapter lists are long strings), floats always with a dot (``1.0e-05``, ``.inf``: what
ROS 2's parameter parser reads as a double), strings that parser would read as something else quoted.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from timor_core.errors import InputError

__all__ = ["to_yaml"]


class _Dumper(yaml.SafeDumper):
    """SafeDumper with lists indented under their key (``key:\\n  - a``), as ROS packages write them."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def ignore_aliases(self, data: Any) -> bool:
        """A value used twice is written twice: timor's YAML reader (``common.safe_yaml``) refuses aliases."""
        return True


_Dumper.add_representer(tuple, lambda dumper, data: dumper.represent_list(list(data)))
# ROS 2's parameter parser (rcl_yaml_param_parser) also reads y/Y/n/N as booleans: such strings get quotes
_Dumper.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))


def to_yaml(data: dict[str, Any]) -> str:
    """Block-style YAML of nested dicts, lists and scalars (InputError for anything else)."""
    try:
        return yaml.dump(data, Dumper=_Dumper, sort_keys=False, default_flow_style=False, allow_unicode=True,
                         width=2**31 - 1)  # fmt: skip
    except yaml.representer.RepresenterError as exc:
        raise InputError(f"cannot write as YAML: {exc}", value=data) from None
