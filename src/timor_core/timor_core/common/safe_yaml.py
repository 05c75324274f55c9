"""The one YAML reader of timor: every YAML file the project reads (EtherCAT slave configurations, a bring-up
package's ``bringup.yaml``, its MoveIt configuration at launch) goes through :func:`load_yaml`.

YAML can do more than a configuration needs, and some of it is an attack: an alias repeats a node (nine nested
aliases of ten make a billion strings from a 1 kB file), a tag names a type to construct, a document nested
100,000 levels deep keeps PyYAML's scanner busy for minutes, an integer of 5,000 digits is a ValueError. So: no
aliases, no tags, at most the ``max_json_depth`` limit of nested collections, numbers of at most
``max_number_digits`` characters, files of at most ``MAX_YAML_BYTES``. Anything else is an InputError naming the
file, the field the caller gives (``path``) and the line. ``.nan`` and ``.inf`` are read (ethercat_driver_ros2's
slave configurations write ``default: .nan``): a caller checks the numbers it uses.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from timor_core.errors import InputError, TimorError
from timor_core.limits import limit_hint, limits, read_input_bytes

__all__ = ["MAX_YAML_BYTES", "load_yaml", "yaml_from_text"]

MAX_YAML_BYTES = 1 << 20
"""Largest YAML file read (a slave configuration or a bring-up package's data is a few kB)."""


class _RefusedError(TimorError):
    """What the loader refuses, with the line it is on (turned into an InputError by :func:`yaml_from_text`)."""

    def __init__(self, message: str, mark: Any, value: Any = ...) -> None:
        super().__init__(message)
        self.message, self.line, self.value = message, (mark.line + 1 if mark is not None else None), value


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader without aliases and tags, its nesting bounded, its numbers bounded and finite."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent):  # an alias can multiply the document (billion laughs)
            raise _RefusedError("YAML aliases are not accepted", event.start_mark, f"*{event.anchor}")
        if getattr(event, "tag", None) is not None:
            raise _RefusedError("YAML tags are not accepted", event.start_mark, event.tag)
        self._depth += 1
        try:
            if self._depth > limits().max_json_depth:
                raise _RefusedError(f"nested too deeply ({limit_hint('max_json_depth')})", event.start_mark)
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def need_more_tokens(self) -> bool:
        """PyYAML's, but no look-ahead past a flow level deeper than the limit (the composer refuses the document
        before it needs those tokens): a line of ``[`` was scanned ahead up to 1024 characters, each bracket
        against all open levels, ~0.2 s of CPU before the composer's check refused it."""
        if self.tokens and self.flow_level > limits().max_json_depth:
            return False
        return bool(super().need_more_tokens())

    def _number(self, node: Any, construct: Any) -> Any:
        if len(node.value) > limits().max_number_digits:
            raise _RefusedError(f"a number of {len(node.value)} characters ({limit_hint('max_number_digits')})",
                           node.start_mark, node.value)  # fmt: skip
        return construct(self, node)

    def _int(self, node: Any) -> Any:
        return self._number(node, yaml.SafeLoader.construct_yaml_int)

    def _float(self, node: Any) -> Any:
        return self._number(node, yaml.SafeLoader.construct_yaml_float)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader._int)
_Loader.add_constructor("tag:yaml.org,2002:float", _Loader._float)


def yaml_from_text(data: bytes | str, *, file: str | Path | None = None, path: str | None = None) -> Any:
    """The document of YAML ``data`` (one document, the rules of the module docstring), else an InputError naming
    ``file``, ``path`` (the field that named the file, if any) and the line."""
    if isinstance(data, bytes):
        if b"\x00" in data:
            raise InputError("not a YAML file (binary)", file=file, path=path)
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text (byte {exc.start})", file=file, path=path) from None
    loader = _Loader(data)
    try:
        return loader.get_single_data()
    except _RefusedError as exc:
        where = f" (line {exc.line})" if exc.line is not None else ""
        raise InputError(exc.message + where, file=file, path=path, value=exc.value) from None
    except (yaml.YAMLError, ValueError, OverflowError) as exc:  # ValueError: a date such as 2001-13-45
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"not valid YAML: {first}", file=file, path=path) from None
    finally:
        loader.dispose()


def load_yaml(file: str | Path, *, path: str | None = None, what: str = "YAML file",
              max_bytes: int = MAX_YAML_BYTES) -> Any:  # fmt: skip
    """The document of a YAML file (a regular file of at most ``max_bytes``), read by :func:`yaml_from_text`."""
    try:
        data = read_input_bytes(file, what=what, max_bytes=max_bytes)
    except InputError as exc:
        raise InputError(exc.message, file=file, path=path, value=exc.value) from None
    return yaml_from_text(data, file=file, path=path)
