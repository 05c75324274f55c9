"""A module set's look-ups by ID and by name, both called and indexed: ``db.by_id("J")`` (timor) and
``db.by_id["J"]`` (timor-python, where ``by_id`` and ``by_name`` were dictionaries) give the same module.

A mixin of ``ModulesDB``, so db.py stays one concept; it uses the set's ``name``, ``_modules``, ``__iter__`` and
``_module_by_id``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, Any, NoReturn

from timor_core.errors import InputError, UnknownModuleError

if TYPE_CHECKING:
    from timor_core.model.module import Module

__all__ = ["ModuleLookup", "ModuleLookups"]


class ModuleLookup(dict):
    """A read-only dict of module IDs (or names) to modules that is also called: ``lookup(key)`` is ``lookup[key]``.

    A key it lacks goes to ``find``, which raises ``UnknownModuleError`` (a ``KeyError``, so ``in`` and ``get`` work
    as for any dict) naming the set and its IDs. A dict, so a look-up by ID costs what the method did before (the
    search looks modules up per assembly); changing it raises ``InputError``.
    """

    __slots__ = ("_find",)

    def __init__(self, table: Mapping[str, Module], find: Callable[[str], Module]) -> None:
        super().__init__(table)
        self._find = find

    __call__ = dict.__getitem__

    def __missing__(self, key: str) -> Module:
        return self._find(key)

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise InputError("a module set's look-up is read-only (module sets are immutable)", value=args[:1])

    __setitem__ = __delitem__ = __ior__ = clear = pop = popitem = setdefault = update = _read_only  # type: ignore

    def __reduce__(self) -> tuple[Any, ...]:
        return (ModuleLookup, (dict(self), self._find))

    def __repr__(self) -> str:
        return f"ModuleLookup({list(self)!r})"


class ModuleLookups:
    """``by_id`` and ``by_name`` of a ModulesDB (mixed into it; not used alone)."""

    name: str
    _modules: dict[str, Module]

    def __iter__(self) -> Iterator[Module]:  # provided by ModulesDB
        raise NotImplementedError

    def _module_by_id(self, module_id: str) -> Module:  # provided by ModulesDB
        raise NotImplementedError

    @cached_property
    def by_id(self) -> ModuleLookup:
        """The module with this ``header.ID``: ``db.by_id(id)``, or ``db.by_id[id]`` as in timor-python."""
        return ModuleLookup(self._modules, self._module_by_id)

    @cached_property
    def by_name(self) -> ModuleLookup:
        """The module with this readable ``header.name`` (must be unique): ``db.by_name(name)`` or ``[name]``."""
        count = Counter(m.name for m in self)
        return ModuleLookup({m.name: m for m in self if count[m.name] == 1}, self._module_by_name)

    def _module_by_name(self, name: str) -> Module:
        found = [m for m in self if m.name == name]
        if len(found) != 1:
            raise UnknownModuleError(f"module set {self.name!r} has {len(found)} modules named {name!r}")
        return found[0]
