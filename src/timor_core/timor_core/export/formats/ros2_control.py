"""The ``<ros2_control>`` block of a URDF: a hardware plugin and, per actuated joint, its interfaces.

Command interfaces carry the module set's limits as ``min``/``max`` parameters, so the controller manager
refuses commands the modules cannot follow; the position state interface gets the initial position.
Joint names are exactly the URDF's (same kinematic tree, same prefix).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from timor_core.common.names import check_plugin, check_prefix, name_attr, xml_escape
from timor_core.common.names import format_number as _num
from timor_core.errors import InputError
from timor_core.model.tree import TreeLink

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

__all__ = [
    "INTERFACES",
    "JointModule",
    "Ros2ControlConfig",
    "ros2_control_xml",
    "controlled_joints",
    "commanded",
    "initial_positions",
    "home_position",
]

INTERFACES = ("position", "velocity", "acceleration", "effort")
"""The standard hardware interface names of ros2_control (hardware_interface/types/hardware_interface_type_values)."""


@dataclass(frozen=True)
class JointModule:
    """A plugin element inside a ``<joint>``, e.g. ethercat_driver_ros2's ``<ec_module>`` of the joint's drive."""

    name: str
    plugin: str
    parameters: dict[str, str] = field(default_factory=dict)
    tag: str = "ec_module"


@dataclass(frozen=True)
class Ros2ControlConfig:
    """How to write the ``<ros2_control>`` block: hardware plugin, its parameters and the joint interfaces.

    ``initial_positions`` maps joint names (with or without the prefix) to positions; other joints start
    at zero clipped into their limits.
    """

    plugin: str = "mock_components/GenericSystem"
    name: str | None = None
    hardware_parameters: dict[str, str] = field(default_factory=dict)
    command_interfaces: tuple[str, ...] = ("position", "velocity", "effort")
    state_interfaces: tuple[str, ...] = ("position", "velocity", "effort")
    initial_positions: dict[str, float] | None = None
    joint_parameters: dict[str, dict[str, str]] = field(default_factory=dict)  # joint name -> its <param>s
    joint_modules: dict[str, tuple[JointModule, ...]] = field(default_factory=dict)  # joint name -> plugins

    def __post_init__(self) -> None:
        check_plugin(self.plugin)
        for attr in ("command_interfaces", "state_interfaces"):
            value = getattr(self, attr)
            if isinstance(value, str):
                value = (value,)
            value = tuple(value)
            unknown = [v for v in value if v not in INTERFACES]
            if unknown:
                raise InputError(f"{attr}: unknown interface (expected some of {', '.join(INTERFACES)})", value=unknown)
            if len(set(value)) != len(value):
                raise InputError(f"{attr}: an interface is listed twice", value=list(value))
            object.__setattr__(self, attr, value)
        if "position" not in self.state_interfaces:
            raise InputError("state_interfaces must include 'position'", value=list(self.state_interfaces))
        object.__setattr__(self, "hardware_parameters", {str(k): str(v) for k, v in self.hardware_parameters.items()})
        if self.initial_positions is not None:
            positions = {}
            for k, v in self.initial_positions.items():
                try:
                    x = float(v)
                except (TypeError, ValueError):
                    x = math.nan
                if not math.isfinite(x):
                    raise InputError(f"initial position of joint {k!r} must be a finite number", value=v)
                positions[str(k)] = x
            object.__setattr__(self, "initial_positions", positions)


def controlled_joints(assembly: ModuleAssembly, prefix: str = "") -> tuple[TreeLink, ...]:
    """The links attached by movable joints, in tree order (the URDF's non-fixed joints)."""
    return assembly.tree(prefix).actuated


def commanded(link: TreeLink) -> bool:
    """True if the joint is driven (not marked passive in the module set): it gets command interfaces."""
    return link.joint is not None and not link.joint.passive


def home_position(link: TreeLink) -> float:
    """Zero, clipped into the joint's position limits."""
    lim = link.movable_joint().limits
    return float(min(max(0.0, lim.lower), lim.upper))


def initial_positions(
    assembly: ModuleAssembly, config: Ros2ControlConfig | None = None, prefix: str = ""
) -> dict[str, float]:
    """Initial position of every movable joint by URDF name: the config's value, else the home position.

    Raises InputError for a config naming a joint the robot does not have, or a value outside the limits.
    """
    links = controlled_joints(assembly, prefix)
    given = dict(config.initial_positions or {}) if config is not None else {}
    out: dict[str, float] = {}
    for link in links:
        name = link.movable_joint_name()
        short = name[len(prefix) :]
        value = given.pop(name, None) if name in given else given.pop(short, None)
        if value is None:
            value = home_position(link)
        lim = link.movable_joint().limits
        if not lim.lower <= value <= lim.upper:
            raise InputError(
                f"initial position of joint {name!r} is outside its limits [{lim.lower}, {lim.upper}]", value=value
            )
        out[name] = float(value)
    if given:
        known = ", ".join(link.movable_joint_name() for link in links)
        raise InputError(f"initial_positions names joints the robot does not have (has: {known})", value=sorted(given))
    return out


def _escape(text: str, for_xacro: bool) -> str:
    text = xml_escape(text)
    return text.replace("${", "$${").replace("$(", "$$(") if for_xacro else text


def _limits(link: TreeLink, interface: str) -> tuple[float, float]:
    lim = link.movable_joint().limits
    if interface == "position":
        return lim.lower, lim.upper
    bound = {"velocity": lim.velocity, "acceleration": lim.acceleration, "effort": lim.torque}[interface]
    return -bound, bound


def _param(key: str, value: object, indent: int, for_xacro: bool) -> str:
    return " " * indent + f'<param name="{_escape(key, for_xacro)}">{_escape(str(value), for_xacro)}</param>\n'


def _joint_extras(config: Ros2ControlConfig, joint: str, prefix: str, for_xacro: bool) -> list[str]:
    """The per-joint ``<param>``s and plugin modules of a joint (looked up without, then with the prefix)."""
    short = joint[len(prefix) :] if prefix and joint.startswith(prefix) else joint
    params = config.joint_parameters.get(short) or config.joint_parameters.get(joint) or {}
    out = [_param(k, v, 6, for_xacro) for k, v in params.items()]
    for module in config.joint_modules.get(short) or config.joint_modules.get(joint) or ():
        tag = module.tag if module.tag.replace("_", "").isalnum() else "ec_module"
        out.append(f'      <{tag} name="{_escape(module.name, for_xacro)}">\n')
        out.append(f"        <plugin>{_escape(check_plugin(module.plugin), for_xacro)}</plugin>\n")
        out.extend(_param(k, v, 8, for_xacro) for k, v in module.parameters.items())
        out.append(f"      </{tag}>\n")
    return out


def ros2_control_xml(
    assembly: ModuleAssembly,
    config: Ros2ControlConfig,
    *,
    prefix: str = "",
    robot_name: str = "timor",
    for_xacro: bool = False,
) -> str:
    """The ``<ros2_control type="system">`` element (two-space indented, one trailing newline).

    Its name is the config's, else ``prefix + robot_name``. Passive joints get state interfaces only;
    infinite limits are left out. ``for_xacro`` escapes ``$`` in user text so xacro keeps it literally
    (the prefix may then be ``${prefix}``).
    """
    check_prefix(prefix)
    positions = initial_positions(assembly, config, prefix)
    name = _escape(config.name, for_xacro) if config.name is not None else prefix + _escape(robot_name, for_xacro)
    out = [
        f'  <ros2_control name="{name}" type="system">\n',
        "    <hardware>\n",
        f"      <plugin>{_escape(config.plugin, for_xacro)}</plugin>\n",
    ]
    for key, value in config.hardware_parameters.items():
        out.append(f'      <param name="{_escape(key, for_xacro)}">{_escape(value, for_xacro)}</param>\n')
    out.append("    </hardware>\n")
    for link in controlled_joints(assembly, prefix):
        out.append(f'    <joint name="{name_attr(str(link.joint_name), for_xacro)}">\n')
        if commanded(link):
            for interface in config.command_interfaces:
                lo, hi = _limits(link, interface)
                params = "".join(
                    f'        <param name="{key}">{_num(v)}</param>\n'
                    for key, v in (("min", lo), ("max", hi))
                    if math.isfinite(v)
                )
                if params:
                    out.append(f'      <command_interface name="{interface}">\n{params}      </command_interface>\n')
                else:
                    out.append(f'      <command_interface name="{interface}"/>\n')
        for interface in config.state_interfaces:
            if interface == "position":
                out.append(
                    '      <state_interface name="position">\n'
                    f'        <param name="initial_value">{_num(positions[link.movable_joint_name()])}</param>\n'
                    "      </state_interface>\n"
                )
            else:
                out.append(f'      <state_interface name="{interface}"/>\n')
        out.extend(_joint_extras(config, str(link.joint_name), prefix, for_xacro))
        out.append("    </joint>\n")
    out.append("  </ros2_control>\n")
    return "".join(out)
