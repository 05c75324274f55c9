"""timor_core: modules, assemblies, URDF export and Pinocchio models for modular reconfigurable robots.

Importable without ROS. The main API mirrors the Timor toolbox::

    from timor_core import ModulesDB, ModuleAssembly
    db = ModulesDB.from_name("geometric_primitive_modules")
    A = ModuleAssembly.from_serial_modules(db, ("base", "J2", "i_45", "J2", "J2", "eef"))
    urdf = A.to_urdf()
    q0 = A.robot.random_configuration()
"""

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
from timor_core.kinematics.robot import PinRobot
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB, embedded_db_names
from timor_core.model.module import Body, Connector, Joint, Module, connectors_compatible, modules_compatible

# the layers that implement operations the model and robot classes offer (see timor_core.common.extensions)
from timor_core.export import mjcf, srdf, urdf, urdf_import, xacro  # noqa: E402,F401  isort: skip
from timor_core.kinematics import build as _build  # noqa: E402,F401  isort: skip
import timor_core.viz.operations  # noqa: E402,F401  isort: skip

__version__ = "0.1.0"

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
