"""The models an assembly generates: its kinematic tree, URDF, xacro, SRDF, MJCF, its Pinocchio robot, and the
one-module assembly of a robot. A mixin of ModuleAssembly, so ``assembly.to_urdf()`` and ``assembly.robot``
read as in the reference toolbox. The exporters and the robot builder live in higher layers: each method imports
the one public function it delegates to inside its body, at call time (the rule and the table of these
delegations: docs/architecture.md, enforced by test_architecture.py), so importing the model imports none of
them. It uses the assembly's ``db``, ``base_placement``, ``modules``, ``_cache``,
``tree``, ``to_json_data`` and ``from_json_data``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from timor_core.common.fileio import atomic_write_text
from timor_core.common.transforms import IDENTITY, is_rigid, readonly
from timor_core.errors import AssemblyError, InputError
from timor_core.model.tree import KinematicTree, build_tree

PinRobot = Any  # timor_core.kinematics.robot.PinRobot (a higher layer: not imported here)
Ros2ControlConfig = Any  # timor_core.export.formats.ros2_control.Ros2ControlConfig (a higher layer: not imported here)
__all__ = ["AssemblyModels", "placement_matrix", "reference_wrl_mode", "written"]

ModuleAssembly = Any  # timor_core.model.assembly.ModuleAssembly (it mixes this class in)


class AssemblyModels:
    """Generated models of a ModuleAssembly (mixed into it; not used alone)."""

    db: Any
    base_placement: Any
    modules: Any
    _cache: Any
    to_json_data: Any
    from_json_data: Any

    def _whole(self) -> ModuleAssembly:
        """This object as the ModuleAssembly it is mixed into (what the exporters it delegates to take)."""
        return self

    def tree(self, prefix: str = "") -> KinematicTree:
        """The kinematic tree (links, joints, tool frames), cached per name prefix."""
        key = ("tree", prefix)
        tree = self._cache.get(key)
        if tree is None:
            tree = build_tree(self, prefix)
            self._cache[key] = tree
        return tree

    def to_urdf(
        self,
        name: str | None = None,
        write_to: str | Path | None = None,
        *,
        prefix: str = "",
        mesh_uri: str = "file",
        package: str | None = None,
        wrl: str | None = None,
        ros2_control: Ros2ControlConfig | None = None,
        replace_wrl: bool | None = None,
        handle_missing_assets: str | None = None,
    ) -> str:
        """The URDF of this assembly (see ``timor_core.export.formats.urdf.assembly_to_urdf`` for the options).

        ``ros2_control`` (an ``export.formats.ros2_control.Ros2ControlConfig``) adds a ``<ros2_control>`` block;
        ``write_to`` also writes the text to that file (atomically: an existing file is replaced whole or not at all;
        with ``mesh_uri="relative"`` into another folder than the module set's, a ``RelativeMeshPaths`` warning).
        ``wrl``: ``"visual"`` (default) or ``"keep"``; timor-python's ``replace_wrl=True`` / ``False`` says the same.
        """
        from timor_core.export.formats.urdf import assembly_to_urdf  # delegation (docs/architecture.md)

        return assembly_to_urdf(
            self._whole(),
            name=name,
            prefix=prefix,
            mesh_uri=mesh_uri,
            package=package,
            wrl=reference_wrl_mode(wrl, replace_wrl, handle_missing_assets),
            ros2_control=ros2_control,
            write_to=write_to,
        )

    def to_mjcf(self, name: str | None = None, *, options: Any = None, write_to: str | Path | None = None) -> str:
        """The MuJoCo model (MJCF) of this assembly, compiled by MuJoCo (``export.formats.mjcf``; needs mujoco).

        ``options``: an ``export.formats.mjcf.MJCFOptions``; ``write_to`` writes the XML and its meshes together.
        """
        from timor_core.export.formats.mjcf import assembly_to_mjcf  # delegation (docs/architecture.md)

        return assembly_to_mjcf(self._whole(), name, options=options, write_to=write_to)

    def to_xacro(self, macro_name: str | None = None, *, write_to: str | Path | None = None, **options: Any) -> str:
        """A xacro file with this assembly as a macro ``(prefix, parent, *origin)``.

        ``options`` are those of ``export.formats.xacro.assembly_to_xacro``; ``write_to`` as for :meth:`to_urdf`.
        """
        from timor_core.export.formats.xacro import assembly_to_xacro  # delegation (docs/architecture.md)

        return assembly_to_xacro(self._whole(), macro_name, write_to=write_to, **options)

    def to_srdf(self, *, write_to: str | Path | None = None, **options: Any) -> str:
        """The SRDF of this serial assembly for MoveIt (planning group, end effector, disabled collision pairs).

        ``options`` are those of ``export.formats.srdf.assembly_to_srdf``; ``write_to`` as for :meth:`to_urdf`.
        """
        from timor_core.export.formats.srdf import assembly_to_srdf  # delegation (docs/architecture.md)

        return written(assembly_to_srdf(self._whole(), **options), write_to)

    def to_pin_robot(
        self,
        base_placement: np.ndarray | None = None,
        ignore_collisions: str | None = None,
        prefix: str = "",
    ) -> PinRobot:
        """A new Pinocchio robot with its coal collision model, built directly (no URDF in between)."""
        placement = self.base_placement if base_placement is None else placement_matrix(base_placement)
        from timor_core.kinematics.build import build_robot  # delegation (docs/architecture.md)

        return build_robot(self._whole(), placement, ignore_collisions or self.db.ignore_collisions, prefix)

    @classmethod
    def from_monolithic_robot(cls, robot: PinRobot) -> ModuleAssembly:
        """A one-module assembly of a robot (e.g. from ``PinRobot.from_urdf``), as in the reference toolbox.

        A robot built from a multi-module assembly is fused into one module through its URDF; the base
        placement is kept.
        """
        from timor_core.export.urdf_import.importer import assembly_from_urdf  # delegation (docs/architecture.md)

        source = robot.assembly
        if source is None:
            raise AssemblyError("the robot has no assembly to take its modules from")
        if len(source.modules) == 1:
            fused = cls.from_json_data(source.db, source.to_json_data())
        else:
            unplaced = cls.from_json_data(source.db, source.to_json_data())
            unplaced.base_placement = np.eye(4)  # the placement stays the assembly's, not the module's
            extras = {}  # what URDF cannot carry: rotor inertia and acceleration limits
            for link in unplaced.tree().links:
                j = link.joint
                if j is not None and link.joint_type != "fixed":
                    extra: dict[str, Any] = {"gearRatio": j.gear_ratio, "motorInertia": j.motor_inertia}
                    extra = {k: v for k, v in extra.items() if v is not None}
                    if "acceleration" in j.limits_json:
                        extra["limits"] = {"acceleration": j.limits_json["acceleration"]}
                    extras[str(link.joint_name)] = extra
            folders = [source.db.base_dir] if source.db.base_dir is not None else []  # where its meshes may be
            fused = assembly_from_urdf(unplaced.to_urdf(mesh_uri="file"), folders, joint_extras=extras)
        fused.base_placement = source.base_placement
        return fused

    @property
    def robot(self) -> PinRobot:
        """The Pinocchio robot of this assembly (built once, then cached)."""
        robot = self._cache.get("robot")
        if robot is None:
            robot = self.to_pin_robot()
            self._cache["robot"] = robot
        return robot


def reference_wrl_mode(wrl: str | None, replace_wrl: bool | None, handle_missing_assets: str | None) -> str:
    """``to_urdf``'s VRML mode from timor's ``wrl`` or timor-python's ``replace_wrl`` (True: the visual mesh);
    timor-python's ``handle_missing_assets`` (copying meshes beside the URDF) is refused naming ``mesh_uri``."""
    if handle_missing_assets is not None:
        raise InputError(
            "to_urdf copies no meshes (timor-python's handle_missing_assets): the URDF names the module set's own "
            "mesh files (mesh_uri='file', 'package' with package=..., 'path' or 'relative')",
            value=handle_missing_assets,
        )
    if replace_wrl is None:
        return "visual" if wrl is None else wrl
    if wrl is not None:
        raise InputError("give wrl ('visual' or 'keep') or timor-python's replace_wrl, not both", value=replace_wrl)
    return "visual" if replace_wrl else "keep"


def placement_matrix(T: np.ndarray | None) -> np.ndarray:
    """A base placement as a read-only 4x4 float copy, checked rigid (InputError otherwise). The last one checked is
    kept with its bytes: the same values again (the search's candidates each give the task's placement twice, the
    assembly and its robot: ~25 us a check) get that read-only copy back without a check."""
    if T is None:
        return IDENTITY
    T = np.asarray(T, dtype=float)
    key = T.tobytes() if T.shape == (4, 4) else None
    last = _LAST_PLACEMENT[0]
    if key is not None and last is not None and last[0] == key:
        return last[1]
    if not is_rigid(T):
        raise InputError("base placement must be a 4x4 rigid transform", value=T.tolist())
    checked = readonly(T.copy())
    if key is not None:
        _LAST_PLACEMENT[0] = (key, checked)
    return checked


_LAST_PLACEMENT: list[tuple[bytes, np.ndarray] | None] = [None]


def written(text: str, path: str | Path | None) -> str:
    """Write ``text`` to ``path`` atomically (``atomic_write_text`` makes its folder) unless ``path`` is None; return
    ``text``."""
    if path is not None:
        atomic_write_text(path, text)
    return text
