"""timor_core: modules, assemblies, URDF export and Pinocchio models for modular reconfigurable robots.

Importable without ROS. The main API mirrors the Timor toolbox::

    from timor_core import ModulesDB, ModuleAssembly
    db = ModulesDB.from_name("geometric_primitive_modules")
    A = ModuleAssembly.from_serial_modules(db, ("base", "J2", "i_45", "J2", "J2", "eef"))
    urdf = A.to_urdf()
    q0 = A.robot.random_configuration()

The names are imported on first use (PEP 562): ``import timor_core`` costs next to nothing, ``PinRobot`` loads
Pinocchio, ``ModulesDB`` only the model layer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from timor_core.errors import (
    AssemblyError,
    ConnectorError,
    FormatError,
    InputError,
    MeshError,
    TimorError,
    UnknownModuleError,
    URDFError,
    ValidationError,
)

if TYPE_CHECKING:
    from timor_core.kinematics.robot import PinRobot
    from timor_core.model.assembly import ModuleAssembly
    from timor_core.model.db import ModulesDB, embedded_db_names
    from timor_core.model.module import Body, Connector, Joint, Module, connectors_compatible, modules_compatible

__version__ = "0.1.0"

_WHERE = {  # public name -> the module that defines it (imported when the name is first asked for)
    "ModulesDB": "timor_core.model.db",
    "embedded_db_names": "timor_core.model.db",
    "ModuleAssembly": "timor_core.model.assembly",
    "PinRobot": "timor_core.kinematics.robot",
    "Module": "timor_core.model.module",
    "Body": "timor_core.model.module",
    "Connector": "timor_core.model.module",
    "Joint": "timor_core.model.module",
    "connectors_compatible": "timor_core.model.module",
    "modules_compatible": "timor_core.model.module",
}


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its defining module on first use."""
    where = _WHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'timor_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(where), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


__all__ = [
    "ModulesDB",
    "ModuleAssembly",
    "PinRobot",
    "Module",
    "Body",
    "Connector",
    "Joint",
    "connectors_compatible",
    "modules_compatible",
    "embedded_db_names",
    "TimorError",
    "InputError",
    "FormatError",
    "ValidationError",
    "MeshError",
    "UnknownModuleError",
    "ConnectorError",
    "AssemblyError",
    "URDFError",
]
