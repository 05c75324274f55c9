"""Numerical inverse kinematics over a tolerance's projected pose error (Levenberg–Marquardt).

Only what the tolerance forbids is driven to zero: a goal with x/y/z ±1 mm and a 45° rotation
tolerance leaves the solver free inside that box and cone, which makes tolerant goals fast and
robust. Random restarts within the joint limits; with a task, a solution must also be free of
self-collision and of collision with the task's obstacles (and, on request, within torque limits). The settings
and results are plain data in :mod:`.ik_config` (imported from here as before).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pinocchio as pin

from timor_core.common.seeds import as_generator
from timor_core.errors import InputError
from timor_core.kinematics import ik_kernel
from timor_core.kinematics.ik_config import DEFAULT_IK_CONFIG, IK_METHODS, IKConfig, IKResult
from timor_core.kinematics.ik_descent import (
    CONVERGED,
    compiled_route,
    crossable_mask,
    free_joints,
    lm_descend,
    none_frozen,
    route_of,
    scipy_descend,
)
from timor_core.kinematics.ik_residual import ANGLE_WEIGHT, pose_residual, projector
from timor_core.kinematics.reach import outside_workspace, workspace_gap

SerialArm = Any  # timor_core.kinematics.build.SerialArm (its module imports this one)
PinRobot = Any  # timor_core.kinematics.robot.PinRobot (it imports this module)
Task = Any  # a timor_core.task.Task (a higher layer): its obstacles are checked
__all__ = ["DEFAULT_IK_CONFIG", "IKConfig", "IKResult", "IK_METHODS", "outside_workspace", "pose_residual",
           "solve_arm_ik", "solve_ik"]  # fmt: skip


def solve_ik(
    robot: PinRobot,
    desired: np.ndarray,
    tolerance: Any,
    *,
    q_init: np.ndarray | None = None,
    task: Task | None = None,
    rng: np.random.Generator | int | None = None,
    config: IKConfig = DEFAULT_IK_CONFIG,
    check_self_collision: bool | None = None,
    check_static_torques: bool = False,
    margin: float = 0.0,
    frame: str | None = None,
    joint_mask: Sequence[bool] | np.ndarray | None = None,
    cost_function: Callable[[PinRobot, np.ndarray, np.ndarray], float] | None = None,
) -> IKResult:
    """Find q with fk(q) within ``tolerance`` of ``desired``; see PinRobot.ik for the options.

    ``joint_mask``: True for the joints the solver may move; the others keep their ``q_init`` values (required
    then). ``cost_function(robot, q, desired)``: among ``config.solutions`` valid solutions the one of least cost wins.
    """
    desired = _checked_pose(desired)
    config.check()
    rng = rng if type(rng) is np.random.Generator else as_generator(rng, "rng")
    fid = robot.tcp if frame is None else robot.frame_id(frame)
    q_init = robot.check_q(q_init) if q_init is not None else None
    free = free_joints(joint_mask, robot.dof, q_init)
    project = projector(tolerance, config.margin)
    gap = outside_workspace(robot, fid, desired, tolerance)
    if gap > 0:  # a cheap necessary condition: no configuration can reach it
        return _unreachable(robot, gap, q_init, rng)
    checker = _checker(robot, task, check_self_collision is not False, margin)
    torque_limits = robot.torque_limits if check_static_torques else None
    tries = _tries(robot, fid, desired, project, rng, config, q_init, free)
    rejections: Counter[str] = Counter()
    found: list[tuple[float, np.ndarray]] = []  # (custom cost, q) of valid solutions
    while tries.next_found():
        q = tries.q
        if not tries.checked and not project.valid(desired, tries.T):
            tries.refused()
            continue
        cause = _rejection(robot, q, checker, torque_limits)
        if cause is not None:
            rejections[cause] += 1
        elif cost_function is None:
            return IKResult(q.copy(), True, "", tries.tries, tries.iterations, 0.0, dict(rejections))
        else:
            found.append((float(cost_function(robot, q.copy(), desired)), q.copy()))
            if len(found) >= config.solutions:
                break
    best_q = tries.best_q if tries.best_res < math.inf else None
    progress = _Progress(tries.tries, tries.iterations, best_q, tries.best_res, rejections)
    if found:
        return progress.result(min(found, key=lambda item: item[0])[1], True)
    return progress.failure(robot, fid, desired, project, rng)


def solve_arm_ik(arm: SerialArm, desired: np.ndarray, tolerance: Any, rng: np.random.Generator | int | None,
                 config: IKConfig = DEFAULT_IK_CONFIG) -> IKResult | None:  # fmt: skip
    """``solve_ik(robot, desired, tolerance, rng=rng, config=config, check_self_collision=False)`` of the robot whose
    :class:`~.build.SerialArm` ``arm`` is, without that robot: the same tries of the same compiled kernels on the same
    chain, limits and draws, so the same result (the failure's reason says by how much the closest pose misses from
    the chain's own kinematics: Pinocchio's to rounding). None, the generator untouched, where the compiled kernels do
    not run this call (then only ``solve_ik`` does)."""
    desired = _checked_pose(desired)
    config.check()
    project = projector(tolerance, config.margin)
    low, span = arm.sample_box
    gap = workspace_gap(arm.base, arm.reach, desired, tolerance)
    if gap > 0:  # (_unreachable's, before any kernel)
        q0 = low + span * as_generator(rng, "rng").random(low.shape)
        return IKResult(q0, False, f"unreachable: {gap:.3f} m outside the robot's workspace", 0, 0, math.inf, {})
    params = project.lm_params(desired) if config.method == "jacobian" else None
    kernels = ik_kernel.ready() if params is not None else None
    if kernels is None or params is None:
        return None
    rng = rng if type(rng) is np.random.Generator else as_generator(rng, "rng")
    crossable = crossable_mask(arm.lower, arm.upper, config.max_step)
    route = route_of(arm.chain, (arm.lower, arm.upper), crossable, arm.sample_box, config, project)
    tries = ik_kernel.Tries(route, params, none_frozen(arm.dof), None, None, rng, config.max_n_tries, kernels)
    while tries.next_found():
        if not tries.checked and not project.valid(desired, tries.T):
            tries.refused()
            continue
        return IKResult(tries.q.copy(), True, "", tries.tries, tries.iterations, 0.0, {})
    best_q = tries.best_q if tries.best_res < math.inf else None
    miss = None if best_q is None else project(desired, ik_kernel.chain_pose(arm.chain, best_q))[0]
    q_out = best_q if best_q is not None else low + span * rng.random(low.shape)
    progress = _Progress(tries.tries, tries.iterations, best_q, tries.best_res)
    return progress.result(q_out, False, _reason(Counter(), miss))


def _tries(robot: PinRobot, fid: int, desired: np.ndarray, project: Any, rng: np.random.Generator, config: IKConfig,
           q_init: np.ndarray | None, free: np.ndarray) -> Any:  # fmt: skip
    """The call's tries: in the compiled kernels (:class:`.ik_kernel.Tries`) where this process runs them and the
    robot and goal suit them, else the interpreted loop (:class:`_InterpretedTries`); both run the same steps."""
    params = project.lm_params(desired)
    if params is not None:
        route = compiled_route(robot, fid, config, project)
        kernels = ik_kernel.ready() if route is not None else None
        if route is not None and kernels is not None:
            fixed = q_init if q_init is not None and not free.all() else None
            frozen = ~free if fixed is not None else none_frozen(robot.dof)
            return ik_kernel.Tries(route, params, frozen, q_init, fixed, rng, config.max_n_tries, kernels)
    return _InterpretedTries(robot, fid, desired, project, (project.lm_terms(desired), params), rng, config, q_init,
                             free)  # fmt: skip


class _InterpretedTries:
    """An IK call's tries in the interpreter, one at a time (the interface of :class:`.ik_kernel.Tries`)."""

    def __init__(self, robot: PinRobot, fid: int, desired: np.ndarray, project: Any, goal: tuple[Any, Any],
                 rng: np.random.Generator, config: IKConfig, q_init: np.ndarray | None,
                 free: np.ndarray) -> None:  # fmt: skip
        self.robot, self.fid, self.desired, self.project, self.goal = robot, fid, desired, project, goal
        self.rng, self.config, self.q_init, self.free = rng, config, q_init, free
        self.plateau = _Plateau(config)
        self.tries = self.iterations = 0
        self.best_q: np.ndarray | None = None
        self.best_res = math.inf
        self.q, self.T = np.empty(0), np.empty((4, 4))
        self.done = False
        self.checked = False  # the caller checks a converged try against the tolerance

    def next_found(self) -> bool:
        """Run tries until one converges (True: its ``q`` and pose ``T``), or the tries run out or the give-up rule
        stops them (False)."""
        robot, fid, config, free = self.robot, self.fid, self.config, self.free
        while not self.done and self.tries < config.max_n_tries:
            first = self.q_init if self.tries == 0 else None
            self.tries += 1
            q = _try_start(robot, fid, self.goal, self.rng, config, first, free, self.q_init)
            q, cost, T, used, cut = _descend(robot, fid, self.desired, self.project, q, free, config, self.goal)
            self.iterations += used
            if cost < self.best_res:
                self.best_q, self.best_res = q.copy(), cost
            if cost > CONVERGED:
                self.done = self.plateau.stop(self.best_res, cut)  # every try ends in a local minimum far away
                continue
            self.q, self.T = q, T
            return True
        return False

    def refused(self) -> None:
        """The last converged try does not meet the tolerance: it counts as a failed try for the give-up rule."""
        self.done = self.plateau.stop(self.best_res, False)


@dataclass
class _Progress:
    """An IK call so far: tries, iterations, the best q and its squared residual, why valid poses were refused."""

    tries: int = 0
    iterations: int = 0
    best_q: np.ndarray | None = None
    best_res: float = math.inf
    rejections: Counter[str] = field(default_factory=Counter)

    def result(self, q: np.ndarray, success: bool, reason: str = "") -> IKResult:
        """The call's result with ``q`` (a success: residual 0)."""
        residual = 0.0 if success else math.sqrt(self.best_res)
        return IKResult(q, success, reason, self.tries, self.iterations, residual, dict(self.rejections))

    def failure(self, robot: PinRobot, fid: int, desired: np.ndarray, project: Any,
                rng: np.random.Generator) -> IKResult:  # fmt: skip
        """The failed call's result: the best q and why (poses refused, or how far the closest pose misses)."""
        miss = None
        if not self.rejections and self.best_q is not None:  # by how much the closest pose misses, mm and degrees
            pin.forwardKinematics(robot.model, robot.data, self.best_q)
            miss = project(desired, pin.updateFramePlacement(robot.model, robot.data, fid).homogeneous)[0]
        q_out = self.best_q if self.best_q is not None else robot.random_configuration(rng)
        return self.result(q_out, False, _reason(self.rejections, miss))


def _checker(robot: PinRobot, task: Task | None, self_collision: bool, margin: float) -> Any:
    """The collision checker a solution must pass (None: neither obstacles nor self-collision to check)."""
    if task is None and not self_collision:
        return None
    return robot.collision_checker(task, margin, self_collision=self_collision)


def _descend(robot: PinRobot, fid: int, desired: np.ndarray, project: Any, q: np.ndarray, free: np.ndarray,
             config: IKConfig, goal: tuple[Any, Any]) -> tuple[np.ndarray, float, np.ndarray, int, bool]:  # fmt: skip
    """One try from q by the configured method: (q, squared residual, TCP pose, iterations, cut short); ``goal``:
    the projector's ``lm_terms`` and ``lm_params`` of the desired pose."""
    if config.method == "scipy":
        return scipy_descend(robot, fid, desired, project, q, free, config)
    return lm_descend(robot, fid, desired, project, q, free, config, *goal)


def _unreachable(robot: PinRobot, gap: float, q_init: np.ndarray | None, rng: np.random.Generator) -> IKResult:
    q0 = robot.random_configuration(rng) if q_init is None else np.asarray(q_init, dtype=float)
    return IKResult(q0, False, f"unreachable: {gap:.3f} m outside the robot's workspace", 0, 0, math.inf, {})


def _checked_pose(desired: Any) -> np.ndarray:
    """The desired pose as a finite 4x4 float array (InputError otherwise)."""
    try:
        desired = np.asarray(desired, dtype=float)
    except (TypeError, ValueError):
        raise InputError("the desired pose must be a 4x4 matrix of numbers", value=desired) from None
    if desired.shape != (4, 4):
        raise InputError("the desired pose must be a 4x4 matrix", value=desired.tolist())
    total = float(desired.sum())
    if total - total != 0.0 and not np.all(np.isfinite(desired)):  # a finite sum: every entry is finite
        raise InputError("the desired pose must be finite", value=desired.tolist())
    return desired


def _try_start(robot: PinRobot, fid: int, goal: tuple[Any, Any], rng: np.random.Generator, config: IKConfig,
               first: np.ndarray | None, free: np.ndarray, q_init: np.ndarray | None) -> np.ndarray:  # fmt: skip
    """Where a try starts: ``first`` (q_init, on the first try) clipped to the limits, else a random start whose
    frozen joints (``free`` False) keep their ``q_init`` values."""
    if first is not None:
        model = robot.model
        return np.clip(np.asarray(first, dtype=float).reshape(robot.dof), model.lowerPositionLimit,
                       model.upperPositionLimit)  # fmt: skip
    q = _start(robot, fid, goal, rng, config.start_candidates)
    if q_init is not None and not free.all():
        q[~free] = q_init[~free]
    return q


class _Plateau:
    """When to give up: every try ends in a local minimum far from the goal (``plateau_*`` and ``far_*`` of the
    IKConfig): the best residual has not improved by ``plateau_ratio`` for ``plateau_tries`` tries (or for
    ``far_plateau_tries`` tries not cut short at a limit while still farther than ``far_residual``)."""

    def __init__(self, config: IKConfig) -> None:
        self.config = config
        self.ref, self.count, self.far_count = math.inf, 0, 0

    def stop(self, best_res: float, cut: bool) -> bool:
        """After a failed try (``cut``: it was cut short at a limit), with the best squared residual so far."""
        c = self.config
        if not c.plateau_tries:
            return False
        if best_res < c.plateau_ratio * self.ref:
            self.ref, self.count, self.far_count = best_res, 0, 0
            return False
        self.count += 1
        self.far_count += not cut  # a try cut short at a limit says little about how far the goal is
        return best_res > c.plateau_residual**2 and (
            self.count >= c.plateau_tries
            or (0 < c.far_plateau_tries <= self.far_count and best_res > c.far_residual**2)
        )


def _start(robot: PinRobot, fid: int, goal: tuple[Any, Any], rng: np.random.Generator, k: int) -> np.ndarray:
    """A random start: of ``k`` random configurations (one draw) the one whose TCP is nearest the goal (weighted
    residual; ``goal``: ``lm_terms`` and ``lm_params`` of the goal's projector)."""
    if k <= 1:
        return robot.random_configuration(rng)
    model, data = robot.model, robot.data
    fk, place = pin.forwardKinematics, pin.updateFramePlacement
    candidates = robot.random_configuration(rng, k)
    terms, params = goal
    chain = ik_kernel.kernel_chain(model, fid) if params is not None else None
    jit = ik_kernel.ready() if chain is not None else None
    if jit is not None and chain is not None:
        return candidates[ik_kernel.start_index(jit, chain, candidates, params)].copy()
    best, best_cost = 0, math.inf
    for i, q in enumerate(candidates):
        fk(model, data, q)
        c = terms(place(model, data, fid))[1]
        if c < best_cost:
            best, best_cost = i, c
    return candidates[best].copy()


def _rejection(robot: PinRobot, q: np.ndarray, checker, torque_limits) -> str | None:
    """Why a configuration that reaches the pose is refused (None if it is fine)."""
    if checker is not None and checker.in_collision(q):
        hit = checker.first_hit(q)  # (the first obstacle's contact in the pairs' order, else the first contact)
        if hit is None:
            return "collision"
        if hit.kind == "obstacle":
            return f"collision with obstacle {hit.obstacle}"
        return f"self-collision ({hit.robot_geometry} / {hit.other})"
    if torque_limits is not None:
        tau = robot.static_torque(q)
        over = np.flatnonzero(np.abs(tau) > torque_limits)
        if over.size:
            j = int(over[np.argmax(np.abs(tau[over]) / torque_limits[over])])
            return f"torque limit of joint {robot.joints[j]} ({abs(tau[j]):.1f} > {torque_limits[j]:.1f})"
    return None


def _reason(rejections: Counter, miss: np.ndarray | None) -> str:
    """Why IK failed: the most common reason reached poses were refused, or how far the closest pose missed.

    Only the workspace check proves a goal "unreachable"; a search that ends without a solution says "no solution
    found", since more tries or other starts may still find one."""
    if rejections:
        cause, count = rejections.most_common(1)[0]
        return f"{cause} (in {count} of {sum(rejections.values())} reached configurations)"
    if miss is None:
        return "no solution found"
    position_mm = 1000.0 * float(np.linalg.norm(miss[:3]))
    angle_deg = math.degrees(float(np.linalg.norm(miss[3:])) / ANGLE_WEIGHT)
    miss_text = f"{position_mm:.3g} mm and {angle_deg:.3g} deg"
    return f"no solution found (the closest pose found misses the tolerance by {miss_text})"
