"""MoveIt 2 configuration files for an assembly, as the MoveIt Setup Assistant writes them.

One folder gets ``<name>.urdf`` (with a ``<ros2_control>`` block), ``<name>.srdf``, ``kinematics.yaml``,
``joint_limits.yaml``, ``ros2_controllers.yaml``, ``moveit_controllers.yaml``, ``initial_positions.yaml``,
``pilz_cartesian_limits.yaml`` and ``ompl_planning.yaml`` (MoveIt 2 Jazzy+ keys). ``moveit_config_data``
gives the YAML contents as plain dicts, ``move_group_parameters`` turns them into move_group's parameters
(the layout of ``moveit_configs_utils``) and ``ros2_control_node_parameters`` gives those of ros2_control_node (both
:mod:`.moveit_parameters`', re-exported here).
Every text is generated before anything is written, each file is written atomically, and other files in the
folder are left alone. YAML is written by PyYAML (:func:`timor_core.export.formats.yaml_text.to_yaml`).
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from timor_core.common.fileio import write_files
from timor_core.common.names import check_tf_frames
from timor_core.errors import AssemblyError, InputError
from timor_core.export.formats.moveit_parameters import move_group_parameters, ros2_control_node_parameters
from timor_core.export.formats.ros2_control import Ros2ControlConfig, controlled_joints, initial_positions
from timor_core.export.formats.ros_distro import DEFAULT_DISTRO, check_distro, ompl_pipeline
from timor_core.export.formats.srdf import PlanningChain, assembly_to_srdf, planning_groups
from timor_core.export.formats.urdf import UrdfOptions, assembly_to_urdf, default_robot_name
from timor_core.export.formats.urdf_options import warn_relative_meshes
from timor_core.export.formats.yaml_text import to_yaml
from timor_core.limits import check_int, check_number

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

__all__ = [
    "CartesianLimits",
    "MoveItOptions",
    "MOVEIT_FILES",
    "MOVE_GROUP_FILES",
    "write_moveit_config",
    "moveit_config_data",
    "moveit_config_texts",
    "move_group_parameters",
    "ros2_control_node_parameters",
    "to_yaml",
]

KDL_PLUGIN = "kdl_kinematics_plugin/KDLKinematicsPlugin"
ARM_CONTROLLER = "arm_controller"
JOINT_STATE_BROADCASTER = "joint_state_broadcaster"
CM_KEY = "/**/controller_manager"
"""The controller manager's key in ros2_controllers.yaml: its node in any namespace."""
MOVEIT_FILES = (
    "kinematics.yaml",
    "joint_limits.yaml",
    "ros2_controllers.yaml",
    "moveit_controllers.yaml",
    "initial_positions.yaml",
    "pilz_cartesian_limits.yaml",
    "ompl_planning.yaml",
)
"""The YAML files of a config folder (besides ``<name>.urdf`` and ``<name>.srdf``)."""
MOVE_GROUP_FILES = (
    "kinematics.yaml",
    "joint_limits.yaml",
    "pilz_cartesian_limits.yaml",
    "ompl_planning.yaml",
    "moveit_controllers.yaml",
)
"""The YAML files move_group's parameters are made of (``move_group_parameters``)."""


@dataclass(frozen=True)
class CartesianLimits:
    """Cartesian limits of the Pilz industrial motion planner (m/s, m/s², rad/s; deceleration negative)."""

    max_trans_vel: float = 1.0
    max_trans_acc: float = 2.25
    max_trans_dec: float = -5.0
    max_rot_vel: float = 1.57


@dataclass(frozen=True)
class MoveItOptions:
    """Options of a MoveIt config (see ``write_moveit_config``); invalid values raise InputError."""

    name: str | None = None
    prefix: str = ""
    ros2_control: Ros2ControlConfig | None = None
    group: str = "manipulator"
    n_samples: int = 1000
    seed: int = 0
    mesh_uri: str = "file"
    package: str | None = None
    update_rate: int = 100
    velocity_scaling: float = 0.1
    acceleration_scaling: float = 0.1
    kinematics_resolution: float = 0.005
    kinematics_timeout: float = 0.005
    cartesian_limits: CartesianLimits | None = None
    #: rad/s² (m/s² for prismatic joints) for joints the module set gives no acceleration limit (an imported URDF
    #: has none): MoveIt's time parameterization refuses every plan of a joint without one; None: leave it out
    default_acceleration: float | None = 5.0
    #: the ROS 2 distro whose MoveIt reads the files (the ompl_planning.yaml layout differs for Humble)
    distro: str = DEFAULT_DISTRO

    def __post_init__(self) -> None:
        object.__setattr__(self, "distro", check_distro(self.distro, "MoveIt option distro"))
        for label in ("velocity_scaling", "acceleration_scaling"):
            value = getattr(self, label)
            if not 0 < value <= 1:
                raise InputError(f"{label} must be in (0, 1]", value=value)
        # fixed ranges (README, Limits): KDL's search step at most 1 rad, its timeout at most 60 s per call, the
        # controller manager's loop at most 10 kHz
        check_number(self.kinematics_resolution, "kinematics_resolution", 0.0, 1.0, low_open=True)
        check_number(self.kinematics_timeout, "kinematics_timeout", 0.0, 60.0, low_open=True)
        if self.default_acceleration is not None:
            check_number(self.default_acceleration, "default_acceleration", 0.0, 1e6, low_open=True)
        check_int(self.n_samples, "n_samples", 1, "max_samples")
        check_int(self.update_rate, "update_rate (Hz)", 1, 10_000)
        self.urdf_options  # noqa: B018  (checks prefix, mesh_uri and package now, not when writing)

    @property
    def urdf_options(self) -> UrdfOptions:
        """The names and mesh references of the URDF (``prefix``, ``mesh_uri``, ``package``)."""
        return UrdfOptions.build(None, prefix=self.prefix, mesh_uri=self.mesh_uri, package=self.package)

    @classmethod
    def build(cls, options: MoveItOptions | None = None, **overrides: Any) -> MoveItOptions:
        """``options`` (default: all defaults) with the keyword ``overrides`` applied; unknown keywords raise."""
        unknown = sorted(set(overrides) - {f.name for f in fields(cls)})
        if unknown:
            raise InputError(f"unknown MoveIt option(s): {', '.join(unknown)}", value=unknown)
        if options is None:
            return cls(**overrides)
        return replace(options, **overrides) if overrides else options


def _comment(text: str) -> str:
    return "".join(f"# {line}\n" for line in text.splitlines()) + "\n"


# -- the files ------------------------------------------------------------------------------------
_COMMENTS = {
    "joint_limits.yaml": (
        "Joint limits for MoveIt, from the module set (they extend or override the URDF's).\n"
        "Where the module set gives no acceleration limit, max_acceleration is timor's default_acceleration\n"
        "(MoveIt's time parameterization and the Pilz planner need one for every joint)."
    ),
    "ros2_controllers.yaml": "Controllers of ros2_control's controller manager",
    "moveit_controllers.yaml": "How MoveIt executes trajectories",
    "initial_positions.yaml": "Initial positions of the ros2_control mock hardware",
    "pilz_cartesian_limits.yaml": "Cartesian limits of the Pilz industrial motion planner",
    "ompl_planning.yaml": "The OMPL planning pipeline",
}

OMPL_PLANNER_CONFIGS: dict[str, dict[str, Any]] = {
    "RRTConnectkConfigDefault": {"type": "geometric::RRTConnect", "range": 0.0},
    "RRTkConfigDefault": {"type": "geometric::RRT", "range": 0.0, "goal_bias": 0.05},
    "RRTstarkConfigDefault": {
        "type": "geometric::RRTstar",
        "range": 0.0,
        "goal_bias": 0.05,
        "delay_collision_checking": 1,
    },
    "PRMkConfigDefault": {"type": "geometric::PRM", "max_nearest_neighbors": 10},
}
"""OMPL planner configurations of every group; the first is the group's default."""
MOTION_CHECK_STEP = 0.01
"""rad: MoveIt's OMPL checks every motion at least this often, in MoveIt's joint-space distance (the sum of the
joints' |dq|, so no frame of the arm moves more than MOTION_CHECK_STEP x its distance from the joints between two
checks: under the pick-and-place task's 1 cm margin for the 3-joint robco arm, test_moveit_motion_check).
move_group's ValidateSolution
then checks the time-parametrized waypoints, which lie between the checked states; with a coarser step (0.002 of the
extent: 0.036 rad, up to ~2 cm for that arm) it refused its own plan where the path grazed the padded crate
(INVALID_MOTION_PLAN, -2; test_moveit_scene under load; benchmarks/README.md, "The ROS suite from a fresh clone, its
bytecode, and move_group's motion-check step")."""


def _joint_limits(assembly: ModuleAssembly, opts: MoveItOptions) -> dict[str, Any]:
    limits: dict[str, Any] = {}
    for link in controlled_joints(assembly, opts.prefix):
        lim = link.movable_joint().limits
        acceleration = float(lim.acceleration) if math.isfinite(lim.acceleration) else opts.default_acceleration
        entry: dict[str, Any] = {}
        entry["has_velocity_limits"] = math.isfinite(lim.velocity)
        entry["max_velocity"] = float(lim.velocity) if math.isfinite(lim.velocity) else 0.0
        entry["has_acceleration_limits"] = acceleration is not None
        entry["max_acceleration"] = float(acceleration) if acceleration is not None else 0.0
        limits[link.movable_joint_name()] = entry
    return {
        "default_velocity_scaling_factor": float(opts.velocity_scaling),
        "default_acceleration_scaling_factor": float(opts.acceleration_scaling),
        "joint_limits": limits,
    }


POSE_DOF = 6
"""Joints a chain needs for KDL to solve full 6-D poses; with fewer, it solves the tip's position only."""


def _kinematics(n_joints: int, opts: MoveItOptions) -> dict[str, Any]:
    """A group's kinematics.yaml entry: KDL, position-only IK for an arm that cannot reach arbitrary 6-D poses.

    KDL's full-pose IK of a 3-joint arm never converges, so OMPL could sample no goal state for a pose or position
    goal; with ``position_only_ik`` the plugin solves the tip position and the goal's other constraints are checked
    on the solutions it finds.
    """
    entry: dict[str, Any] = {
        "kinematics_solver": KDL_PLUGIN,
        "kinematics_solver_search_resolution": float(opts.kinematics_resolution),
        "kinematics_solver_timeout": float(opts.kinematics_timeout),
    }
    if n_joints < POSE_DOF:
        entry["position_only_ik"] = True
    return entry


def _interfaces(config: Ros2ControlConfig) -> tuple[list[str], list[str]]:
    """Command and state interfaces of the joint trajectory controller (a combination it supports)."""
    command = next((i for i in ("position", "velocity", "effort") if i in config.command_interfaces), None)
    if command is None:
        raise InputError(
            "the joint trajectory controller needs a position, velocity or effort command interface",
            value=list(config.command_interfaces),
        )
    state: list[str] = [i for i in ("position", "velocity") if i in config.state_interfaces]
    return [command], state


def joint_space_extent(ranges: list[float]) -> float:
    """MoveIt's extent of a group's joint space (JointModelGroup::getMaximumExtent): the sum of the joints' ranges;
    a joint without finite limits spans 2 pi, as MoveIt bounds a continuous joint."""
    return sum(r if math.isfinite(r) and r > 0 else 2 * math.pi for r in ranges)


def segment_fraction(ranges: list[float]) -> float:
    """OMPL's ``longest_valid_segment_fraction`` for joints of these ranges: MOTION_CHECK_STEP over the extent."""
    return round(MOTION_CHECK_STEP / joint_space_extent(ranges), 8)


def _ompl_planning(groups: dict[str, list[float]], distro: str) -> dict[str, Any]:
    """ompl_planning.yaml: the pipeline, the planner configurations and, per group (its joints' ranges), its
    default planner and its motion-check step."""
    out = {**ompl_pipeline(distro), "planner_configs": copy.deepcopy(OMPL_PLANNER_CONFIGS)}
    for group, ranges in groups.items():
        if group in out:  # MoveIt reads the group's settings and the pipeline's from the same level
            raise InputError(
                f"the planning group name {group!r} is a key of ompl_planning.yaml's OMPL pipeline "
                f"({', '.join(out)}): its settings would replace the pipeline's; choose another group name",
                path="group",
                value=group,
            )
        out[group] = {
            "default_planner_config": next(iter(OMPL_PLANNER_CONFIGS)),
            "planner_configs": list(OMPL_PLANNER_CONFIGS),
            "longest_valid_segment_fraction": segment_fraction(ranges),
        }
    return out


def _ros2_controllers(
    update_rate: int, joints: list[str], command: list[str], state: list[str], partial: bool = False
) -> dict[str, Any]:
    """ros2_controllers.yaml: the controller manager and the joint trajectory controller over ``joints``; with
    ``partial`` (several planning groups) it takes trajectories of some of them (one arm's, from MoveIt)."""
    return {  # "/**/": the node in any namespace (several robots, one per namespace)
        CM_KEY: {
            "ros__parameters": {
                "update_rate": update_rate,
                ARM_CONTROLLER: {"type": "joint_trajectory_controller/JointTrajectoryController"},
                JOINT_STATE_BROADCASTER: {"type": "joint_state_broadcaster/JointStateBroadcaster"},
            }
        },
        f"/**/{ARM_CONTROLLER}": {
            "ros__parameters": {
                "joints": joints,
                "command_interfaces": command,
                "state_interfaces": state,
                "allow_nonzero_velocity_at_trajectory_end": True,
                **({"allow_partial_joints_goal": True} if partial else {}),
            }
        },
    }


def _moveit_controllers(joints: list[str]) -> dict[str, Any]:
    """moveit_controllers.yaml: MoveIt executes trajectories through the arm controller's action."""
    return {
        "trajectory_execution": {
            "allowed_execution_duration_scaling": 1.2,
            "allowed_goal_duration_margin": 0.5,
            "allowed_start_tolerance": 0.01,
            "execution_duration_monitoring": True,
        },
        "moveit_controller_manager": "moveit_simple_controller_manager/MoveItSimpleControllerManager",
        "moveit_simple_controller_manager": {
            "controller_names": [ARM_CONTROLLER],
            ARM_CONTROLLER: {
                "type": "FollowJointTrajectory",
                "action_ns": "follow_joint_trajectory",
                "default": True,
                "joints": list(joints),
            },
        },
    }


def _check_groups_move(groups: tuple[tuple[str, PlanningChain], ...]) -> None:
    """AssemblyError for a planning group without a driven joint: a hand whose fingers all branch off its tool link
    (example-robot-data's Allegro hand) has no arm for MoveIt to plan nor for the trajectory controller to drive."""
    for name, chain in groups:
        if not chain.commanded:
            fingers = f"; its joints {list(chain.hand[:3])}... branch off the tool link (a hand)" if chain.hand else ""
            raise AssemblyError(
                f"MoveIt configuration: the planning group {name!r} ({chain.base_link} -> {chain.tip_link}) has no "
                f"driven joint{fingers}: there is no arm to plan for nor to drive (the URDF, xacro and SRDF exports "
                "work)"
            )


def moveit_config_data(
    assembly: ModuleAssembly, options: MoveItOptions | None = None, **overrides: Any
) -> dict[str, dict[str, Any]]:
    """The content of every YAML file of the MoveIt config as plain dicts, by file name (``MOVEIT_FILES``).

    Cheap (no SRDF sampling); see ``write_moveit_config`` for the options.
    """
    opts = MoveItOptions.build(options, **overrides)
    config = opts.ros2_control if opts.ros2_control is not None else Ros2ControlConfig()
    command, state = _interfaces(config)
    groups = planning_groups(assembly, opts.prefix, opts.group)
    _check_groups_move(groups)
    in_groups = {j for _, chain in groups for j in chain.commanded}  # every arm's, in the tree's order
    joints = [
        link.movable_joint_name()
        for link in assembly.tree(opts.prefix).actuated
        if link.movable_joint_name() in in_groups
    ]
    cart = opts.cartesian_limits if opts.cartesian_limits is not None else CartesianLimits()
    ranges = {
        link.movable_joint_name(): link.movable_joint().limits.upper - link.movable_joint().limits.lower
        for link in controlled_joints(assembly, opts.prefix)
    }
    return {
        "kinematics.yaml": {name: _kinematics(len(chain.joints), opts) for name, chain in groups},
        "joint_limits.yaml": _joint_limits(assembly, opts),
        "ros2_controllers.yaml": _ros2_controllers(opts.update_rate, joints, command, state, len(groups) > 1),
        "moveit_controllers.yaml": _moveit_controllers(joints),
        "initial_positions.yaml": {"initial_positions": initial_positions(assembly, config, opts.prefix)},
        "pilz_cartesian_limits.yaml": {
            "cartesian_limits": {
                "max_trans_vel": float(cart.max_trans_vel),
                "max_trans_acc": float(cart.max_trans_acc),
                "max_trans_dec": float(cart.max_trans_dec),
                "max_rot_vel": float(cart.max_rot_vel),
            }
        },
        "ompl_planning.yaml": _ompl_planning(
            {name: [ranges[j] for j in chain.joints] for name, chain in groups}, opts.distro
        ),
    }


def moveit_config_texts(
    assembly: ModuleAssembly, options: MoveItOptions | None = None, **overrides: Any
) -> dict[str, str]:
    """Every file of the MoveIt config, by file name (see ``write_moveit_config`` for the options)."""
    opts = MoveItOptions.build(options, **overrides)
    check_tf_frames(link.name for link in assembly.tree(opts.prefix).links)  # move_group and RSP publish them as TF
    data = moveit_config_data(assembly, opts)  # validates the interfaces before the (slow) SRDF sampling
    config = opts.ros2_control if opts.ros2_control is not None else Ros2ControlConfig()
    robot_name = opts.name if opts.name is not None else default_robot_name(assembly)
    texts = {
        f"{robot_name}.urdf": assembly_to_urdf(assembly, robot_name, opts.urdf_options, ros2_control=config),
        f"{robot_name}.srdf": assembly_to_srdf(
            assembly, name=robot_name, prefix=opts.prefix, n_samples=opts.n_samples, seed=opts.seed, group=opts.group
        ),
    }
    for file_name, content in data.items():
        comment = _COMMENTS.get(file_name)
        texts[file_name] = (_comment(comment) if comment else "") + to_yaml(content)
    return texts


def write_moveit_config(
    assembly: ModuleAssembly, out_dir: str | Path, options: MoveItOptions | None = None, **overrides: Any
) -> dict[str, Path]:
    """Write the MoveIt 2 config of a serial assembly into ``out_dir``; return the written paths by file name.

    The options are ``options`` (a MoveItOptions, default: all defaults) with keyword ``overrides`` applied,
    so ``write_moveit_config(a, folder, prefix="p_", n_samples=50)`` works as well.
    ``name`` is the robot name (default: set name + assembly hash); ``ros2_control`` defaults to mock
    hardware (``Ros2ControlConfig()``). The SRDF's collision matrix samples ``n_samples`` configurations
    from ``seed``. The controller ``arm_controller`` drives the group's non-passive joints through the
    first of the position, velocity, effort command interfaces. Unwritable folders raise InputError.
    """
    opts = MoveItOptions.build(options, **overrides)
    texts = moveit_config_texts(assembly, opts)
    folder = Path(out_dir)
    for file_name in texts:  # file names come from the robot name: never a path of their own
        if Path(file_name).name != file_name or file_name in ("", ".", ".."):
            raise InputError("a MoveIt config file name must be a plain file name", value=file_name)
    paths = write_files({folder / file_name: text for file_name, text in texts.items()})
    warn_relative_meshes(assembly, opts.urdf_options, folder)  # the URDF among them names the meshes
    return dict(zip(texts, paths))
