"""PinRobot: the Pinocchio model of an assembly with its coal collision model, built directly.

The model is built from the same kinematic tree as the URDF export, with the same frame names, so a
model loaded from the URDF and this one agree. Coal shapes are shared between robots (modules are
immutable); only placements and collision pairs are per robot. The dynamics, joint limits and collision checks are
mixins of their own files (:mod:`.dynamics`, :mod:`.robot_limits`, :mod:`.robot_collisions`; timor-python's
names: :mod:`.robot_compat`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pinocchio as pin

from timor_core.common.seeds import as_generator
from timor_core.errors import AssemblyError, InputError
from timor_core.kinematics.dynamics import RobotDynamics
from timor_core.kinematics.geometry_models import visual_model
from timor_core.kinematics.robot_collisions import RobotCollisions
from timor_core.kinematics.robot_compat import RobotCompat
from timor_core.kinematics.robot_limits import RobotLimits

if TYPE_CHECKING:
    from timor_core.model.assembly import ModuleAssembly

__all__ = ["PinRobot"]

_MAKING = threading.Lock()


class PinRobot(RobotDynamics, RobotLimits, RobotCollisions, RobotCompat):
    """A robot model: kinematics, dynamics and self-collision of one assembly.

    Configurations ``q`` have ``dof`` entries (one per actuated joint, in tree order).
    """

    def __init__(
        self,
        model: pin.Model,
        collision: pin.GeometryModel | Callable[[], pin.GeometryModel],
        tcp: int | None,
        assembly: ModuleAssembly | None,
        ignore_collisions: str,
        tree=None,
        joint_of=None,
        frame_of=None,
        place_of=None,
    ) -> None:
        self.model = model
        self.data = model.createData()
        self._collision = collision
        self.assembly = assembly
        self.ignore_collisions = ignore_collisions
        self._tcp = tcp
        self._tree = tree
        self._link_frames = (joint_of, frame_of, place_of)
        self._collision_data: pin.GeometryData | None = None
        self._pairs_ready = False
        self._visual: pin.GeometryModel | None = None
        self._q = pin.neutral(model)
        self._sample_lo = np.where(model.lowerPositionLimit > -1e300, model.lowerPositionLimit, -np.pi)
        self._sample_span = (
            np.where(model.upperPositionLimit < 1e300, model.upperPositionLimit, np.pi) - self._sample_lo
        )

    @classmethod
    def from_urdf(
        cls,
        urdf_file: str | Path,
        package_dir: str | Path | None = None,
        *,
        tcp_link: str | None = None,
        base_placement: np.ndarray | None = None,
        **options: Any,
    ) -> PinRobot:
        """The robot of a URDF file, through a one-module assembly (``robot.assembly``), as in the reference.

        ``package_dir`` is a folder holding the packages ``package://`` mesh names refer to (ROS_PACKAGE_PATH
        and AMENT_PREFIX_PATH are searched too); ``tcp_link``, ``keep_names``, ``tool_connector`` see
        ``timor_core.export.urdf_import.importer.db_from_urdf``; ``base_placement`` (4x4) places the robot in the world.
        """
        dirs = [Path(package_dir)] if package_dir is not None else []
        from timor_core.export.urdf_import.importer import assembly_from_urdf  # delegation (docs/architecture.md)

        assembly = assembly_from_urdf(Path(urdf_file), dirs, tcp_link=tcp_link, **options)
        if base_placement is not None:
            assembly.base_placement = base_placement
        return assembly.robot

    @property
    def collision(self) -> pin.GeometryModel:
        """The coal collision model, made on first use when the robot was given how to make it (its meshes' BVH
        trees can take longer than the rest of a robot, which a caller of kinematics alone never needs)."""
        gm = self._collision
        if not isinstance(gm, pin.GeometryModel):
            with _MAKING:  # one model per robot, whichever thread asks first
                gm = self._collision
                if not isinstance(gm, pin.GeometryModel):
                    gm = self._collision = gm()
        return gm

    # -- description -------------------------------------------------------------------------------
    @property
    def dof(self) -> int:
        """Degrees of freedom."""
        return self.model.nv

    @property
    def joints(self) -> list[str]:
        """Names of the actuated joints, in configuration order."""
        return list(self.model.names)[1:]

    @property
    def mass(self) -> float:
        """Total mass in kg."""
        return float(sum(inertia.mass for inertia in self.model.inertias))

    @property
    def has_end_effector(self) -> bool:
        """True if the assembly ends in a free ``eef`` connector (the TCP is then ``tool0``)."""
        return bool(self._tree.tools) if self._tree is not None else self._tcp is not None

    @property
    def tcp(self) -> int:
        """Frame index of the tool centre point: ``tool0``; for a robot without an end effector the frame ``tcp``
        at a free connector of its last module (as the reference toolbox does; ``has_end_effector`` tells)."""
        if self._tcp is None:
            raise AssemblyError("this robot has no end effector and no free connector: there is no TCP")
        return self._tcp

    @property
    def tcp_name(self) -> str:
        """Name of the TCP frame."""
        return self.model.frames[self.tcp].name

    @property
    def placement(self) -> np.ndarray:
        """The base placement (pose of ``base_link`` in the world)."""
        return self.model.frames[1].placement.homogeneous if self.model.nframes > 1 else np.eye(4)

    @property
    def frame_names(self) -> list[str]:
        """All frame names (links, joints, tool frames)."""
        return [f.name for f in self.model.frames]

    # -- configuration -----------------------------------------------------------------------------
    @property
    def q(self) -> np.ndarray:
        """The current configuration (a copy)."""
        return self._q.copy()

    @q.setter
    def q(self, value) -> None:
        self._q = self.check_q(value)

    def check_q(self, q) -> np.ndarray:
        """A configuration as a finite float vector of ``dof`` entries (None: the current one), or an InputError."""
        if q is None:
            return self._q
        if type(q) is np.ndarray and q.dtype == np.float64 and q.shape == self._q.shape:  # the hot path
            square = float(q @ q)
            if square - square == 0.0:  # finite (inf - inf and NaN are NaN)
                return q
        try:
            q = np.asarray(q, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InputError(f"configuration must be {self.model.nq} numbers", value=q) from None
        if q.shape != (self.model.nq,):
            raise InputError(f"configuration must have {self.model.nq} entries", value=q.tolist())
        if not np.all(np.isfinite(q)):
            raise InputError("configuration must be finite", value=q.tolist())
        return q

    def _check_vector(self, v, name: str) -> np.ndarray:
        """A finite vector of ``dof`` entries (velocities, accelerations), or an InputError naming it."""
        try:
            v = np.asarray(v, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise InputError(f"{name} must be {self.model.nv} numbers", value=v) from None
        if v.shape != (self.model.nv,):
            raise InputError(f"{name} must have {self.model.nv} entries", value=v.tolist())
        if not np.all(np.isfinite(v)):
            raise InputError(f"{name} must be finite", value=v.tolist())
        return v

    def frame_id(self, frame: str | int) -> int:
        """The index of a frame given by name or index; an unknown frame is an InputError, never a crash.

        Pinocchio answers an unknown name with an index past the end, and indexing with it reads out of
        bounds: every user-given frame goes through here before it reaches Pinocchio.
        """
        if isinstance(frame, str):
            if not self.model.existFrame(frame):
                raise InputError(f"no frame named {frame!r} (see frame_names)", value=frame)
            try:
                return int(self.model.getFrameId(frame))
            except ValueError:  # several frames match, e.g. a URDF joint and link of the same name
                kinds = ", ".join(f"{k} ({f.type.name})" for k, f in enumerate(self.model.frames) if f.name == frame)
                raise InputError(f"several frames are named {frame!r}: give the index of one: {kinds}",
                                 value=frame) from None  # fmt: skip
        if isinstance(frame, (int, np.integer)) and not isinstance(frame, (bool, np.bool_)):
            if not 0 <= int(frame) < self.model.nframes:
                raise InputError(f"frame index must be in 0..{self.model.nframes - 1}", value=frame)
            return int(frame)
        raise InputError("a frame is given by its name or index", value=frame)

    def random_configuration(
        self, rng: np.random.Generator | int | None = None, count: int | None = None
    ) -> np.ndarray:
        """A configuration drawn uniformly within the joint limits ([-π, π] where a joint has none); with ``count``,
        that many as the rows of one array (one draw: the IK's random starts). Same numbers as ``rng.uniform``."""
        shape = self._sample_lo.shape if count is None else (count, *self._sample_lo.shape)
        draw = as_generator(rng, "rng").random(shape)
        return self._sample_lo + self._sample_span * draw

    @property
    def sample_box(self) -> tuple[np.ndarray, np.ndarray]:
        """(low ends, widths) of the box ``random_configuration`` draws from: ``low + width * uniform(0, 1)``."""
        return self._sample_lo, self._sample_span

    def within_limits(self, q=None) -> bool:
        """True if q is within the position limits."""
        q = self.check_q(q)
        return bool(np.all(q >= self.model.lowerPositionLimit) and np.all(q <= self.model.upperPositionLimit))

    # -- kinematics --------------------------------------------------------------------------------
    def fk(self, q=None, kind: Literal["tcp", "joints", "full"] = "tcp"):
        """Forward kinematics in the world frame.

        ``tcp``: the 4×4 pose of tool0; ``joints``: (dof, 4, 4) joint frames; ``full``: a dict of every
        frame name to its 4×4 pose.
        """
        q = self.check_q(q)
        pin.forwardKinematics(self.model, self.data, q)
        if kind == "tcp":
            return pin.updateFramePlacement(self.model, self.data, self.tcp).homogeneous
        if kind == "joints":
            return np.array([self.data.oMi[j].homogeneous for j in range(1, self.model.njoints)])
        if kind == "full":
            pin.updateFramePlacements(self.model, self.data)
            return {f.name: self.data.oMf[i].homogeneous for i, f in enumerate(self.model.frames)}
        raise InputError("kind must be 'tcp', 'joints' or 'full'", value=kind)

    def frame_pose(self, frame: str, q=None) -> np.ndarray:
        """Pose of a named frame in the world."""
        q = self.check_q(q)
        fid = self.frame_id(frame)
        pin.forwardKinematics(self.model, self.data, q)
        return pin.updateFramePlacement(self.model, self.data, fid).homogeneous

    def jacobian(self, q=None, frame: str | None = None, reference: str = "world_aligned") -> np.ndarray:
        """The 6×dof frame Jacobian ([v; ω]) of the TCP (or a named frame).

        ``reference``: ``world_aligned`` (origin at the frame, axes of the world), ``local`` or ``world``.
        """
        q = self.check_q(q)
        refs = {
            "world_aligned": pin.ReferenceFrame.LOCAL_WORLD_ALIGNED,
            "local": pin.ReferenceFrame.LOCAL,
            "world": pin.ReferenceFrame.WORLD,
        }
        if not isinstance(reference, str) or reference not in refs:
            raise InputError(f"reference must be one of {list(refs)}", value=reference)
        fid = self.tcp if frame is None else self.frame_id(frame)
        # eigenpy returns a flat (6,) array for a single joint: keep the documented 6 x dof shape
        return pin.computeFrameJacobian(self.model, self.data, q, fid, refs[reference]).reshape(6, self.model.nv)

    def reach(self, frame: int | None = None) -> float:
        """An upper bound of the distance from the base (the origin of ``base_link``, wherever the robot is placed)
        to a frame (the TCP), over all configurations."""
        fid = self.tcp if frame is None else self.frame_id(frame)
        cache = self.__dict__.setdefault("_reach", {})
        if fid not in cache:
            f = self.model.frames[fid]
            total = float(np.linalg.norm(f.placement.translation))
            base = self.placement[:3, 3]
            j = f.parentJoint
            while j > 0:
                # the first joint's placement is in the world: measure it from the base, not the world's origin
                offset = self.model.jointPlacements[j].translation - (base if self.model.parents[j] == 0 else 0.0)
                total += float(np.linalg.norm(offset))
                if "P" in self.model.joints[j].shortname():  # prismatic: add its largest extension
                    idx = self.model.joints[j].idx_q
                    lo, hi = self.model.lowerPositionLimit[idx], self.model.upperPositionLimit[idx]
                    total += float(max(abs(lo), abs(hi))) if max(abs(lo), abs(hi)) < 1e300 else np.inf
                j = self.model.parents[j]
            cache[fid] = total
        return cache[fid]

    # -- inverse kinematics ------------------------------------------------------------------------
    def ik(
        self,
        pose,
        tolerance=None,
        q_init=None,
        task=None,
        max_iter: int | None = None,
        max_n_tries: int | None = None,
        rng=None,
        check_static_torques: bool = False,
        ignore_self_collision: bool = False,
        margin: float = 0.0,
        details: bool = False,
        config=None,
        joint_mask=None,
        ik_cost_function=None,
        ik_method: str | None = None,
        ignore_self_collisions: bool | None = None,
        allow_random_restart: bool = True,
    ):
        """Inverse kinematics: ``(q, success)`` for a 4×4 pose or a ToleratedPose.

        Without a tolerance the default applies (0.1 mm, 0.1°). With a ``task`` the solution is also free
        of collisions with its obstacles; self-collision is always checked unless ignored;
        ``check_static_torques`` requires holding torques within limits. Deterministic given ``rng``.
        ``details=True`` returns the full IKResult (tries, reason for failure, ...). ``config``: an
        ``timor_core.kinematics.ik.IKConfig`` with every setting of the solver (``max_iter``/``max_n_tries``
        override it).
        As in the reference: ``joint_mask`` (True: the joint may move; the others keep ``q_init``),
        ``ik_cost_function(robot, q, desired) -> float`` (the least-cost of ``config.solutions`` valid solutions
        wins; give ``config=IKConfig(solutions=k)`` to compare k), ``ik_method`` ``"jacobian"`` or ``"scipy"``,
        ``ignore_self_collisions`` (timor-python's spelling), ``allow_random_restart=False`` (one try, from ``q_init``).
        """
        from timor_core.kinematics.ik import DEFAULT_IK_CONFIG, solve_ik
        from timor_core.kinematics.tolerance import DEFAULT_TOLERANCE

        desired = pose
        if hasattr(pose, "nominal") and hasattr(pose, "tolerance"):
            desired = pose.world
            tolerance = tolerance if tolerance is not None else pose.tolerance
        tolerance = tolerance if tolerance is not None else DEFAULT_TOLERANCE
        ignore_self_collision = ignore_self_collision or bool(ignore_self_collisions)
        config = (DEFAULT_IK_CONFIG if config is None else config).overridden(
            max_iter=max_iter, max_n_tries=max_n_tries if allow_random_restart else 1, method=ik_method
        )
        result = solve_ik(self, desired, tolerance, q_init=q_init, task=task, rng=rng, config=config,
                          check_self_collision=not ignore_self_collision, check_static_torques=check_static_torques,
                          margin=margin, joint_mask=joint_mask, cost_function=ik_cost_function)  # fmt: skip
        return result if details else (result.q, result.success)

    @property
    def visual(self) -> pin.GeometryModel:
        """The visual geometry model (built on first use)."""
        if self._visual is None:
            self._visual = visual_model(self._tree, *self._link_frames)
        return self._visual

    def visualize(self, q=None, **kwargs):
        """Show the robot at q in the browser viewer (needs the ``viz`` extra); returns the Viewer."""
        from timor_core.viz.viewer import show_robot  # delegation (docs/architecture.md)

        return show_robot(self, q, **kwargs)

    def __repr__(self) -> str:
        return f"PinRobot(dof={self.dof}, mass={self.mass:.3f} kg, frames={self.model.nframes})"
