"""Growing an assembly by random modules (the reference's ``add_random_from_db``), e.g. for random robots.

Kept apart from ``assembly`` (which calls it) so that file stays one concept: the assembly is passed in.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from timor_core.common.seeds import as_generator
from timor_core.errors import AssemblyError
from timor_core.model.module import Module


class NoFitError(AssemblyError, LookupError):
    """No module of the set fits the assembly any more (a LookupError too, as the reference raises)."""


__all__ = ["free_connectors", "add_random_module", "NoFitError"]

ModuleAssembly = Any  # timor_core.model.assembly.ModuleAssembly (it imports this module)


def free_connectors(assembly: ModuleAssembly) -> list[tuple[int, str]]:
    """(module index, connector ID) of every connector not used by a connection, the base connector or as
    an end-effector (``eef``) connector."""
    used = set(assembly.used_connectors()) | {tuple(assembly.base_connector)}
    out = []
    for i, module in enumerate(assembly.modules):
        for cid, connector in module.connectors.items():
            if (i, cid) not in used and connector.type not in ("base", "eef"):
                out.append((i, cid))
    return out


def add_random_module(
    assembly: ModuleAssembly,
    db_filter: Callable[[Module], bool] | None = None,
    rng: np.random.Generator | int | None = None,
) -> int:
    """Attach a random module of the assembly's set (one ``db_filter`` accepts) to a random free connector,
    by a random fitting connector; an empty assembly gets a random base module. Returns the new index.

    NoFitError (a LookupError) when no module fits anywhere (a complete robot, or a filter that leaves nothing).
    """
    rng = as_generator(rng, "rng")
    db = assembly.db
    accepted = [m for m in db if db_filter is None or db_filter(m)]
    if not assembly.modules:
        bases = [m for m in accepted if m.is_base]
        if not bases:
            raise NoFitError("no base module to start the assembly with")
        return int(assembly.start_with(bases[int(rng.integers(len(bases)))].id))
    options = [
        (i, ci, m.id, cj)
        for i, ci in free_connectors(assembly)
        for m in accepted
        if not m.is_base
        for a, cj in db.connections_between(assembly.module_ids[i], m.id)
        if a == ci
    ]
    if not options:
        raise NoFitError("no module of the set fits a free connector of the assembly")
    i, ci, module_id, cj = options[int(rng.integers(len(options)))]
    try:
        return int(assembly.add(module_id, (i, ci), cj))
    except AssemblyError as exc:  # limits (max_modules, max_dof): nothing more can be added
        raise NoFitError(str(exc)) from None
