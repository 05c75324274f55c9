"""The :class:`~timor_core.kinematics.build.SerialArm` of a search's chains from the segments between their joints,
each taken once from a kinematic tree (issue 38 item 1).

Why: the chains past the family filter need their robot's kinematics for the ``ik`` filter (most of them fail it),
and the kinematic tree they come from cost ~0.3 ms a chain in the search, most of what is left of a robot's build.
An arm's numbers are products of the tree's link origins, and every one of them restarts at a joint: joint k's
placement in joint k-1's frame is the product of the origins of the links from joint k-1's to joint k's, which
depend only on the modules from joint k-1's module to joint k's and the connector the first is entered by (a serial
assembly joins each next pair in one way); the first joint's also on the base placement (one per task), the TCP's
on the modules from the last joint's module on. So those products, taken from the tree of the first chain that had
them, are the very numbers every later chain's own tree would give (``tests/test_arm_segments.py`` compares them
bit for bit, and with the robot's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from timor_core.errors import TimorError
from timor_core.kinematics.build import SerialArm, check_mass, serial_arm
from timor_core.kinematics.ik import DEFAULT_IK_CONFIG, IKResult, solve_arm_ik

if TYPE_CHECKING:
    from timor_core.kinematics.pose import ToleratedPose
    from timor_core.model.module import Module
    from timor_core.search.filtering.filter_state import Candidate, TaskContext

__all__ = ["ArmSegments", "build_kinematics", "kinematic_ik"]

Key = tuple[tuple[str, ...], str]
"""The modules from one joint's module to the next joint's (the first: from the base; the TCP's: to the end) and the
connector the first of them is entered by."""


class ArmSegments:
    """One task's segments (see the module docstring): per :data:`Key`, a joint's placement, axis (0/1/2) and
    limits, or the TCP's placement; :meth:`arm` gives a chain's arm from them, else from its tree (and keeps its
    segments)."""

    def __init__(self) -> None:
        self.joints: dict[Key, tuple[np.ndarray, int, float, float]] = {}
        self.tools: dict[Key, np.ndarray] = {}
        self.kinds: dict[str, bool | None] = {}  # module ID: has one revolute joint (None: more, or another kind)
        self.eef: dict[str, bool] = {}  # module ID: has an end-effector connector
        self.checked: set[str] = set()  # modules whose collision geometry a tree's check passed

    @classmethod
    def of(cls, ctx: TaskContext) -> ArmSegments:
        """The task's (kept on its ``TaskContext``, made on first use)."""
        found = getattr(ctx, "arm_segments", None)
        if found is None:
            found = ArmSegments()
            ctx.arm_segments = found
        return found

    def arm(self, c: Candidate) -> SerialArm | None:
        """The candidate's arm (``serial_arm`` of its assembly at its base placement: the same numbers), from the
        segments where every one of them is known, else from its tree; raises what that raises."""
        assembly = c.require_assembly()
        keys = self._keys(c)
        if keys is not None and self._known(keys, c.ids):
            check_mass(assembly)  # (the collision geometry of each module: checked with the tree that had it)
            steps = [self.joints[k] for k in keys[:-1]]
            limits = np.array([[s[2] for s in steps], [s[3] for s in steps]])
            return SerialArm.of(np.array([s[0] for s in steps]), [s[1] for s in steps], limits,
                                self.tools[keys[-1]], assembly.base_placement)  # fmt: skip
        arm = serial_arm(assembly, assembly.base_placement)
        if arm is not None and keys is not None and len(keys) == arm.dof + 1:
            for k, key in enumerate(keys[:-1]):
                self.joints.setdefault(key, (arm.chain.placements[k], int(arm.chain.kinds[k]), float(arm.lower[k]),
                                             float(arm.upper[k])))  # fmt: skip
            self.tools.setdefault(keys[-1], arm.chain.tool)
            self.checked.update(c.ids)
        return arm

    def _known(self, keys: list[Key], ids: tuple[str, ...]) -> bool:
        """Every segment known, and every module's collision geometry checked."""
        return keys[-1] in self.tools and all(k in self.joints for k in keys[:-1]) and self.checked.issuperset(ids)

    def _keys(self, c: Candidate) -> list[Key] | None:
        """The chain's segment keys, joints first, the TCP's last; None where the segments cannot stand for its tree:
        a module with another joint than one revolute joint, an end-effector connector before the last joint's
        module (the TCP could be another), or no joint."""
        ids, join = c.ids, c.require_join()
        keys: list[Key] = []
        a = 0
        for b, module in enumerate(join.modules):
            m = ids[b]
            kind = self.kinds[m] if m in self.kinds else self._kind(m, module)
            if kind is None:
                return None
            if kind:
                if any(self.eef[x] for x in ids[a:b]):
                    return None
                keys.append((ids[a : b + 1], join.entries[a]))
                a = b
        if not keys:
            return None
        keys.append((ids[a:], join.entries[a]))
        return keys

    def _kind(self, m: str, module: Module) -> bool | None:
        joints = module.joints
        plain = len(joints) <= 1 and all(j.type in ("revolute", "continuous") for j in joints)
        self.eef[m] = any(c.is_eef for c in module.connectors.values())
        kind = self.kinds[m] = bool(joints) if plain else None
        return kind


def build_kinematics(c: Candidate) -> bool:
    """What the filters up to ``ik`` need of the candidate's robot: with the family filter on (the exhaustive search:
    its ``workspace`` filter needs the robot only for goals no witness reached and the modules' bounds did not
    check), the robot's :class:`SerialArm` where it has one (``candidate.arm``; the robot is built on first use,
    ``Candidate.require_robot``), else the robot (``Candidate.build_robot``); False (the candidate failed, the reason
    says why) where that does not build."""
    if c.robot is not None or c.arm is not None:
        return True
    if c.ctx.config.family_filter:
        try:
            c.arm = ArmSegments.of(c.ctx).arm(c)
        except TimorError as exc:  # (what the robot's build raises first)
            return c.no_model(exc)
        if c.arm is not None:
            return True
    return c.build_robot()


def kinematic_ik(c: Candidate, pose: ToleratedPose, rng: np.random.Generator) -> IKResult:
    """``robot.ik(pose, rng=rng, ignore_self_collision=True, max_n_tries=ik_tries, max_iter=ik_iter, details=True)``
    of the candidate's robot (``FilterConfig``'s), from its :class:`SerialArm` alone where it has one and the robot
    is not built: the same result (``kinematics.ik.solve_arm_ik``: the same tries, configuration and verdict; a
    failure's reason measures the miss by the arm's own kinematics, Pinocchio's to rounding)."""
    cfg = c.ctx.config
    if c.robot is None and c.arm is not None:
        config = DEFAULT_IK_CONFIG.overridden(max_iter=cfg.ik_iter, max_n_tries=cfg.ik_tries)  # (as PinRobot.ik)
        found = solve_arm_ik(c.arm, pose.world, pose.tolerance, rng, config)
        if found is not None:
            return found
    return c.require_robot().ik(pose, rng=rng, ignore_self_collision=True, max_n_tries=cfg.ik_tries,
                                max_iter=cfg.ik_iter, details=True)  # fmt: skip
