"""A chain of cheap-first filters that decides whether a serial assembly can serve a task, and says why not.

An assembly is a tuple of module IDs (base first, end effector last). The default chain, cheapest first:

==============  =========================================================================================
``assembly``    the modules join into a chain (as ``ModuleAssembly.from_serial_modules`` joins them, by look-ups
                on the IDs; the assembly is built once a later filter needs it: the robot, a new segment's cut)
``bound``       the assembly-level cost (mass, numJ, moduleCost; no trajectory needed) is *below* the best
                valid cost found so far ("a lighter solution is already known"); from the modules alone where
                the cost is a sum over them, before any model is built
``limits``      module count, degrees of freedom and (optionally) the reach bound within the configured limits
``family``      (exhaustive search) no goal is proven out of reach for a whole family of chains holding this one
                (``search.family_proof``: the same joints, links of other lengths; a look-up once proven), nor
                out of reach free of the obstacles by the ``ik`` filter's sweep proof, from the modules alone,
                where it proved that goal for other chains of the family (``search.sweep_proof.early_refusal``)
``robot``       the Pinocchio/coal model builds and has a TCP (placed at the task's nominal base placement)
``workspace``   every pose goal lies within the robot's reach bound plus the tolerance's position slack
                (``ik.outside_workspace``: a necessary condition, checked before any IK), and the first goal is
                not proven out of reach at its orientation by a branch and bound over the joint angles
                (``search.reach_proof``, at most ``FilterConfig.proof_budget`` boxes per goal)
``ik``          kinematic IK per pose goal, ignoring obstacles and self-collision; first the ``ik_task`` filter's
                proof for a goal it proved for other chains of the family (``search.sweep_proof``)
``ik_task``     task-aware IK per goal (obstacles with the task's safety margin, self-collision), seeded with
                the ``ik`` solution; where that collides, first a proof that every configuration at the goal
                hits an obstacle box (``search.sweep_proof``)
``torques``     static torques at the goal configurations within the joint limits (else IK again with the
                torque check)
``joint_limits`` the goal configurations within the joint position limits and every ``validJointAngles``
                constraint of the task or goal (else a few more IK tries)
==============  =========================================================================================

Each filter is a small object (``filter_base.Filter``) with a ``name`` and ``__call__(candidate) -> bool``; the
filters up to ``workspace`` are here, the per-goal ones from ``ik`` on in ``goal_filters``; a failing filter writes a
short reason key (bounded vocabulary, e.g. ``"g1: collision with obstacle wall"``) and a detailed reason into
the :class:`Candidate`. Intermediate results (the robot, per-goal configurations) live in the candidate and are
reused by later filters. ``search.filter_chain.FilterChain`` runs the filters and counts, per filter, how many
candidates entered and passed, and why they failed (a :class:`Funnel`).

Everything is deterministic: the IK of an assembly is seeded from ``FilterConfig.seed`` and the assembly's IDs,
so an assembly gets the same verdict in any process and in any order.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from timor_core.errors import TimorError
from timor_core.kinematics.ik import outside_workspace
from timor_core.kinematics.reach import position_slack, reach_gap
from timor_core.search.filtering.arm_segments import build_kinematics
from timor_core.search.filtering.family_proof import COVERED, FamilyProofs
from timor_core.search.filtering.filter_base import Filter
from timor_core.search.filtering.filter_state import (
    Candidate,
    FilterConfig,
    GoalIK,
    PoseGoal,
    TaskContext,
    reason_category,
)
from timor_core.search.filtering.funnel import Funnel
from timor_core.search.filtering.goal_filters import IKFilter, JointLimitsFilter, TaskIKFilter, TorqueFilter
from timor_core.search.filtering.quick_reach import UNREACHABLE, first_unreachable
from timor_core.search.filtering.reach_proof import pose_chain, proof_reason, unreachable_pose
from timor_core.search.filtering.sweep_proof import early_refusal

if TYPE_CHECKING:
    from timor_core.kinematics.pose import ToleratedPose
    from timor_core.kinematics.robot import PinRobot

__all__ = [
    "FilterConfig", "GoalIK", "PoseGoal", "TaskContext", "Candidate", "Filter", "AssemblyFilter", "BoundFilter",
    "LimitsFilter", "FamilyFilter", "RobotFilter", "WorkspaceFilter", "IKFilter", "TaskIKFilter", "TorqueFilter",
    "JointLimitsFilter", "Funnel", "default_filters", "DEFAULT_FILTER_NAMES", "reason_category",
]  # fmt: skip


class AssemblyFilter(Filter):
    """The modules join into a serial chain (each neighbouring pair in exactly one way): from the IDs by cached
    look-ups (``candidate.join``; the assembly is built when a later filter needs it), else building it says why."""

    name = "assembly"

    def __call__(self, c: Candidate) -> bool:
        c.join = c.ctx.join(c.ids)
        if c.join is not None:
            return True
        from timor_core.model.assembly import ModuleAssembly

        try:
            c.assembly = ModuleAssembly.from_serial_modules(c.ctx.db, c.ids, c.ctx.placement)
        except TimorError as exc:
            return c.fail(f"cannot assemble: {type(exc).__name__}", f"cannot assemble: {exc}")
        c.require_join()  # (not reached: the look-ups refuse only what cannot be built)
        return True


class BoundFilter(Filter):
    """The assembly-level cost is below the best valid cost found so far (always computes ``candidate.cost``): from
    the modules alone where the cost is a sum over them (the same value to the last bit), else from the assembly."""

    name = "bound"

    def __call__(self, c: Candidate) -> bool:
        cost = c.ctx.cost.evaluate_modules(c.require_join().modules)
        c.cost = float(cost if cost is not None else c.ctx.cost.evaluate_assembly(c.require_assembly()))
        if not math.isfinite(c.cost):
            return c.fail("cost not finite", f"cost {c.cost} is not finite")
        if c.ctx.config.bound and c.cost >= c.bound:  # exact comparison keeps results order-independent
            return c.fail(
                "cost not below the best found", f"cost {c.cost:.6g} is not below the best valid {c.bound:.6g} found"
            )
        return True


class LimitsFilter(Filter):
    """Module count, degrees of freedom and reach within the configured limits."""

    name = "limits"

    def __call__(self, c: Candidate) -> bool:
        cfg = c.ctx.config
        n = len(c.ids)
        if cfg.max_modules is not None and n > cfg.max_modules:
            return c.fail("too many modules", f"{n} modules > max_modules {cfg.max_modules}")
        dof = c.require_join().dof
        if cfg.min_dof is not None and dof < cfg.min_dof:
            return c.fail("too few DOF", f"{dof} DOF < min_dof {cfg.min_dof}")
        if cfg.max_dof is not None and dof > cfg.max_dof:
            return c.fail("too many DOF", f"{dof} DOF > max_dof {cfg.max_dof}")
        if cfg.max_reach is not None:
            if not c.build_robot():
                return False
            reach = c.require_robot().reach()
            if reach > cfg.max_reach:
                return c.fail("too long", f"reach bound {reach:.3f} m > max_reach {cfg.max_reach:g} m")
        return True


class FamilyFilter(Filter):
    """A goal proven out of reach: by a certificate of the chain's family (a proven chain with the same joints and
    links of nearly the same lengths, ``search.family_proof``: a look-up; every goal in task order), else by its
    own proof (the goals whose last proofs in the family had the largest margins first); then out of reach free of
    the obstacles by the sweep proof (``search.sweep_proof.early_refusal``); only where ``FilterConfig.family_proof``
    is on (the exhaustive search's default). The workspace filter then leaves the proof out."""

    name = "family"

    def __call__(self, c: Candidate) -> bool:
        cfg = c.ctx.config
        if not cfg.family_filter or not c.ctx.goals:
            return True  # (stop_early off: every goal is to be tried, so none may end the candidate here)
        proofs = FamilyProofs.of(c.ctx)
        cut = proofs.cut_serial(c.ids, c.require_join(), c.require_assembly)
        if cut is None:
            return True
        c.family = cut.rotations
        found = proofs.refusal(cut, c.reached, c.witnesses)
        if found is not None:
            return self._refuse(c, found.goal, UNREACHABLE, proof_reason(found.boxes) if found.boxes else COVERED)
        swept = early_refusal(c, cut)  # the ik filter's sweep proof, from the modules, where the family's record has it
        return True if swept is None else self._refuse(c, swept[0], reason_category(swept[1]), swept[1])

    def _refuse(self, c: Candidate, k: int, short: str, reason: str) -> bool:
        g = c.ctx.goals[k]
        rec = c.goal(g.id)
        rec.success, rec.stage, rec.reason = False, self.name, reason
        return c.fail(f"{g.id}: {short}", f"goal {g.id}: {reason}")


class RobotFilter(Filter):
    """The robot builds (at the task's base placement, with its gravity) and has a TCP: with the family filter on,
    the arm's kinematics alone (``kinematics.build.SerialArm``), the Pinocchio/coal model made when a later filter
    first needs it; else the model."""

    name = "robot"

    def __call__(self, c: Candidate) -> bool:
        if c.robot is None and c.ctx.config.stop_early and c.ids and c.ctx.db[c.ids[-1]].is_end_effector:
            beyond = first_unreachable(c)
            if beyond is not None:  # the workspace filter refuses it: no model needed (~0.4 ms saved)
                c.beyond_reach = beyond
                return True
        return build_kinematics(c)


def _gap(robot: PinRobot, pose: ToleratedPose) -> float:
    """How far a pose's position lies beyond the robot's reach, allowing for its tolerance (0: maybe reachable):
    the distance from the base against the reach bound, then the nested bounds of ``kinematics.reach``."""
    gap = outside_workspace(robot, robot.tcp, pose.world, pose.tolerance)
    return max(gap, reach_gap(robot, robot.tcp, pose.world[:3, 3], position_slack(pose.tolerance)))


class WorkspaceFilter(Filter):
    """Every pose goal lies within reach: the distance from the base within the reach bound, and the nested reach
    bounds of the first joints (``kinematics.reach``), each with the tolerance's position slack."""

    name = "workspace"

    def __call__(self, c: Candidate) -> bool:
        if c.robot is None and c.beyond_reach is not None:  # the modules alone exclude a goal (search.quick_reach)
            return self._refuse(c, *c.beyond_reach)
        if c.robot is None and c.arm is not None and c.within_reach:
            return True  # the same bounds from the modules passed every goal (search.quick_reach): robot unbuilt
        ok = True
        for k, g in enumerate(c.ctx.goals):
            if k in c.reached and not g.path:
                continue  # the family filter found a configuration within the slacks: no sound bound refuses it
            robot = c.require_robot()
            gaps = [_gap(robot, p) for p in (g.pose, *g.path)]
            worst = int(np.argmax(gaps))
            gap = gaps[worst]
            if gap > 0:
                rec = c.goal(g.id)
                rec.success, rec.stage = False, self.name
                where = f" (pose {worst} of its trajectory)" if g.path else ""
                rec.reason = f"{gap:.3f} m outside the workspace{where} (reach bound {robot.reach():.3f} m)"
                if ok:
                    c.fail(f"{g.id}: outside workspace", f"goal {g.id}: {rec.reason}")
                ok = False
                if c.ctx.config.stop_early:
                    return False
        if ok and c.ctx.config.proof_budget and c.ctx.goals and not c.ctx.config.family_filter:
            # every goal within the distance bounds: try to prove the first one out of reach (the one the IK would
            # try first, so a refused robot has reached no goal either way: the GA's fitness counts them)
            chain, g = pose_chain(c.require_robot()), c.ctx.goals[0]
            boxes = (
                None
                if chain is None
                else unreachable_pose(chain, g.pose.world, g.pose.tolerance, c.ctx.config.proof_budget)
            )
            if boxes is not None:
                return self._refuse(c, g.id, UNREACHABLE, proof_reason(boxes))
        return ok

    def _refuse(self, c: Candidate, goal_id: str, short: str, reason: str) -> bool:
        rec = c.goal(goal_id)
        rec.success, rec.stage, rec.reason = False, self.name, reason
        return c.fail(f"{goal_id}: {short}", f"goal {goal_id}: {reason}")


DEFAULT_FILTER_NAMES = (
    "assembly",
    "bound",
    "limits",
    "family",
    "robot",
    "workspace",
    "ik",
    "ik_task",
    "torques",
    "joint_limits",
)


def default_filters() -> list[Filter]:
    """The default chain, cheapest first (see the module docstring)."""
    return [
        AssemblyFilter(),
        BoundFilter(),
        LimitsFilter(),
        FamilyFilter(),
        RobotFilter(),
        WorkspaceFilter(),
        IKFilter(),
        TaskIKFilter(),
        TorqueFilter(),
        JointLimitsFilter(),
    ]
