"""What each hardware route puts into a bring-up package: the ``<ros2_control>`` block, extra URDF, extra files.

Routes: ``mock`` (mock_components/GenericSystem), ``gazebo`` (gz_ros2_control), and those of a hardware profile:
``canopen`` (canopen_ros2_control/RobotSystem over ros2_canopen, with a ``bus.yml`` lely's dcfgen accepts),
``ethercat`` (ethercat_driver_ros2, one EcCiA402Drive per joint), ``plugin`` (a vendor plugin with per-joint
parameters). File paths inside the URDF are written with the token ``CONFIG_DIR``: the xacro turns it into
``$(arg config_dir)``, which the package's launch files fill with its installed ``config`` folder.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from timor_core.common.names import name_attr
from timor_core.errors import InputError
from timor_core.export.formats.ros2_control import JointModule, Ros2ControlConfig
from timor_core.hardware.canopen_bus import BUS_NAME, bus_devices, bus_yml, command_interface
from timor_core.hardware.profiles import HardwareProfile, JointDrive, joint_drives
from timor_core.model.module import triangle_inequality_violation

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

__all__ = ["CONFIG_DIR", "RouteFiles", "route_files"]

CONFIG_DIR = "@CONFIG_DIR@"


@dataclass(frozen=True)
class RouteFiles:
    """The route's ``<ros2_control>`` config, URDF additions and files (path in the package -> text or file)."""

    route: str
    control: Ros2ControlConfig
    urdf_extra: str = ""
    files: dict[str, str | bytes | Path] = field(default_factory=dict)
    drives: tuple[JointDrive, ...] = ()
    packages: tuple[str, ...] = ()  # ROS packages the control launch needs besides ros2_control


def _gazebo_block(assembly: ModuleAssembly, prefix: str) -> str:
    """The gz_ros2_control plugin; and the robot welded to Gazebo's world (unless the URDF has a world link)."""
    weld = ""
    root = assembly.tree(prefix).links[0].name  # base_link, or the URDF's root for an import keeping names
    if np.array_equal(assembly.base_placement, np.eye(4)) and root != f"{prefix}world":
        weld = (
            f'  <link name="{prefix}world"/>\n'
            f'  <joint name="{prefix}world_to_base_link" type="fixed">\n'
            f'    <parent link="{prefix}world"/>\n    <child link="{name_attr(root)}"/>\n  </joint>\n'
        )
    return weld + (
        "  <gazebo>\n"
        '    <plugin filename="gz_ros2_control-system" name="gz_ros2_control::GazeboSimROS2ControlPlugin">\n'
        f"      <parameters>{CONFIG_DIR}/ros2_controllers.yaml</parameters>\n"
        "    </plugin>\n"
        "  </gazebo>\n"
    )


def _check_inertials(assembly: ModuleAssembly, prefix: str) -> None:
    """What Gazebo needs: every body a joint moves, together with the bodies welded to it (sdformat lumps them into
    one link), has a positive mass; every body with mass has a physical inertia (positive, A + B >= C)."""
    links = assembly.tree(prefix).links
    group = list(range(len(links)))  # the moving link (or the root) each link is welded to
    for k, link in enumerate(links):
        if link.joint_type == "fixed" and link.parent is not None:
            group[k] = group[link.parent]  # parents come before children
    total = [0.0] * len(links)
    for k, link in enumerate(links):
        total[group[k]] += float(link.body.mass)
        mass = float(link.body.mass)
        if mass > 0:
            moments = triangle_inequality_violation(link.body.inertia)
            if moments is not None or np.linalg.eigvalsh(np.asarray(link.body.inertia, dtype=float))[0] <= 0:
                raise InputError(
                    f"module {link.module.id!r} body {link.body.id!r}: Gazebo needs a physical inertia (positive "
                    "principal moments with A + B >= C)",
                    value=moments or np.asarray(link.body.inertia).tolist(),
                )
    for k, link in enumerate(links):
        if link.joint_type != "fixed" and not (total[k] > 0 and math.isfinite(total[k])):
            raise InputError(
                f"module {link.module.id!r} body {link.body.id!r}: Gazebo needs mass on what joint "
                f"{link.joint_name} moves (the body and the bodies welded to it weigh nothing)",
                value=total[k],
            )


def route_files(assembly: ModuleAssembly, route: str | HardwareProfile, prefix: str = "") -> RouteFiles:
    """The ``<ros2_control>`` config and files of a route: ``"mock"``, ``"gazebo"`` or a hardware profile."""
    if route == "mock":
        return RouteFiles("mock", Ros2ControlConfig())
    if route == "gazebo":
        _check_inertials(assembly, prefix)
        config = Ros2ControlConfig(plugin="gz_ros2_control/GazeboSimSystem")
        return RouteFiles("gazebo", config, _gazebo_block(assembly, prefix), packages=("ros_gz_sim",))
    if not isinstance(route, HardwareProfile):
        raise InputError("unknown hardware route (mock, gazebo, or a hardware profile)", value=route)
    drives = tuple(joint_drives(assembly, route, prefix))
    if route.route == "canopen":
        return _canopen_route(route, drives)
    if route.route == "ethercat":
        return _ethercat_route(route, drives)
    assert route.plugin is not None
    config = Ros2ControlConfig(
        plugin=route.plugin,
        hardware_parameters=dict(route.hardware_parameters),
        joint_parameters={jd.joint: {"node_id": str(jd.node_id), **jd.drive.parameters} for jd in drives},
    )
    return RouteFiles("plugin", config, drives=drives, packages=(route.plugin.split("/")[0],))


def _canopen_route(profile: HardwareProfile, drives: tuple[JointDrive, ...]) -> RouteFiles:
    """canopen_ros2_control/RobotSystem over ros2_canopen: bus.yml and the drives' EDS/DCF files."""
    devices = bus_devices(drives, profile)
    commands = {dev.command for dev in devices}
    if len(commands) > 1:
        raise InputError(
            "the drives' operation modes give different command interfaces (one controller commands all "
            "joints): " + ", ".join(f"{dev.module_id}: {dev.command}" for dev in devices),
            file=profile.source,
            path="$.drives",
        )
    files: dict[str, str | bytes | Path] = {f"config/{BUS_NAME}/bus.yml": bus_yml(devices, profile)}
    for dev in devices:
        files[f"config/{BUS_NAME}/{dev.dcf}"] = dev.content
        if dev.original is not None:  # the vendor's file as it came, for reference (dcfgen reads the one above)
            files[f"config/{BUS_NAME}/original/{dev.dcf}"] = dev.original
    params = {
        "bus_config": f"{CONFIG_DIR}/{BUS_NAME}/bus.yml",
        "master_config": f"{CONFIG_DIR}/{BUS_NAME}/master.dcf",
        "master_bin": "",
        "can_interface_name": profile.bus.interface,
        **profile.hardware_parameters,
    }
    config = Ros2ControlConfig(
        plugin="canopen_ros2_control/RobotSystem",
        hardware_parameters=params,
        command_interfaces=tuple(commands) or ("position",),
        joint_parameters={dev.joint: {"device_name": dev.name} for dev in devices},
    )
    return RouteFiles("canopen", config, files=files, drives=drives, packages=("canopen_ros2_control",))


def _ethercat_route(profile: HardwareProfile, drives: tuple[JointDrive, ...]) -> RouteFiles:
    """ethercat_driver_ros2: one EcCiA402Drive per joint, the slave configurations copied into config/ethercat."""
    files: dict[str, str | bytes | Path] = {}
    modules: dict[str, tuple[JointModule, ...]] = {}
    names: dict[Path, str] = {}
    for jd in drives:
        slave, info = jd.drive.slave_config, jd.drive.slave_info
        assert slave is not None and info is not None
        command = command_interface(jd.drive.mode, f"$.drives.{jd.module_id}")
        for kind, needed, have in (("rpdo command_interface", command, info.command_interfaces),
                                   ("tpdo state_interface", "position", info.state_interfaces)):  # fmt: skip
            if needed not in have:
                raise InputError(
                    f"the slave configuration maps no {kind} {needed!r} (the {jd.drive.operation_mode} mode "
                    f"needs it; file {slave})",
                    file=profile.source,
                    path=f"$.drives.{jd.module_id}.slave_config",
                    value=sorted(have),
                )
        if slave not in names:
            stem = re.sub(r"[^A-Za-z0-9_.-]", "_", slave.stem).strip(".") or "slave"
            name, k = f"{stem}.yaml", 2
            while name in names.values():
                name, k = f"{stem}_{k}.yaml", k + 1
            names[slave] = name
            files[f"config/ethercat/{name}"] = slave
        modules[jd.joint] = (
            JointModule(
                name=f"{jd.joint}_drive",
                plugin="ethercat_generic_plugins/EcCiA402Drive",
                parameters={
                    "alias": "0",
                    "position": str(jd.node_id),
                    "mode_of_operation": str(jd.drive.mode),
                    "slave_config": f"{CONFIG_DIR}/ethercat/{names[slave]}",
                },
            ),
        )
    params = {
        "master_id": str(profile.bus.master_id),
        "control_frequency": str(profile.bus.control_frequency),
        **profile.hardware_parameters,
    }
    config = Ros2ControlConfig(
        plugin="ethercat_driver/EthercatDriver", hardware_parameters=params, joint_modules=modules
    )
    return RouteFiles("ethercat", config, files=files, drives=drives, packages=("ethercat_driver",))
