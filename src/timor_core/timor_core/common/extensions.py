"""Operations a lower layer offers and a higher layer implements (dependency inversion).

Users look for ``assembly.to_urdf()``, ``assembly.robot`` or ``robot.visualize()`` on the model and robot classes
(the reference toolbox has them there), but their code lives in the export, kinematics and viz layers, which
import the model. So the higher layer registers its function here when it is imported, and the method looks
it up by name: no lower layer imports a higher one. ``timor_core/__init__`` imports every layer that
implements something, so importing anything from ``timor_core`` makes all of them available.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from timor_core.errors import TimorError

__all__ = ["OPERATIONS", "implements", "implementation"]

F = TypeVar("F", bound=Callable[..., Any])

OPERATIONS = {
    "assembly_to_urdf": "timor_core.export.urdf",
    "assembly_to_xacro": "timor_core.export.xacro",
    "assembly_to_srdf": "timor_core.export.srdf",
    "assembly_to_mjcf": "timor_core.export.mjcf",
    "assembly_from_urdf": "timor_core.export.urdf_import",
    "build_robot": "timor_core.kinematics.build",
    "show_robot": "timor_core.viz.operations",
    "show_task": "timor_core.viz.operations",
    "show_solution": "timor_core.viz.operations",
}
"""Every operation and the module that implements it (for messages and the architecture test)."""

_IMPLEMENTATIONS: dict[str, Callable[..., Any]] = {}


def implements(name: str) -> Callable[[F], F]:
    """Decorator: register the function as the implementation of operation ``name``."""
    if name not in OPERATIONS:
        raise TimorError(f"unknown operation {name!r} (known: {', '.join(OPERATIONS)})")

    def register(fn: F) -> F:
        _IMPLEMENTATIONS[name] = fn
        return fn

    return register


def implementation(name: str) -> Callable[..., Any]:
    """The registered implementation of operation ``name`` (TimorError if its layer was never imported)."""
    fn = _IMPLEMENTATIONS.get(name)
    if fn is None:
        where = OPERATIONS.get(name, "?")
        raise TimorError(f"{name} is implemented in {where}, which is not loaded: import timor_core (or {where})")
    return fn
