"""OMPL's sampling planners (the library behind MoveIt's planners) over timor's robot model.

``ompl_path(start, goal, is_valid, lower, upper, planner=...)`` plans in joint space with OMPL (PyPI ``ompl``):
the joint limits are the bounds of a real vector state space, ``is_valid`` (timor's coal collision checker with the
task's obstacles and margin) is the state validity checker, and motions are checked at ``check_resolution`` (as
timor's own planner does). ``kinematics.planning.plan`` uses it when ``PlannerConfig.planner`` names one of
``OMPL_PLANNERS``. OMPL is optional: without it, asking for one of its planners raises InputError.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from timor_core.errors import InputError
from timor_core.limits import check_number

__all__ = ["OMPL_PLANNERS", "ompl_available", "ompl_path"]

OMPL_PLANNERS = ("RRTConnect", "RRTstar", "BITstar", "PRM")
"""The OMPL planners offered by name (OMPL's class names)."""

_SEEDED = False


def ompl_available() -> bool:
    """Whether OMPL's Python bindings can be imported."""
    try:
        import ompl.base  # noqa: F401
    except ImportError:
        return False
    return True


def ompl_path(
    start: np.ndarray,
    goal: np.ndarray,
    is_valid: Callable[[np.ndarray], bool],
    lower: np.ndarray,
    upper: np.ndarray,
    *,
    planner: str = "RRTConnect",
    time_limit: float = 1.0,
    check_resolution: float = 0.02,
    seed: int | None = None,
    simplify: bool = True,
    first_solution: bool = False,
) -> np.ndarray | None:
    """A collision-free joint-space path (waypoints, start first) from OMPL, or None if none was found in time.

    ``check_resolution`` is the largest distance between two validity checks along a motion (rad); anytime
    planners (RRTstar, BITstar, PRM) use the whole ``time_limit`` to shorten their path, RRTConnect returns its
    first. ``seed`` seeds OMPL's random generator, once per process (OMPL accepts no new seed after its first random
    number: the first call of a process is repeatable, later ones are not). ``first_solution`` stops an anytime
    planner at its first exact solution instead of shortening it until ``time_limit``.
    """
    if planner not in OMPL_PLANNERS:
        raise InputError(f"unknown OMPL planner (one of {', '.join(OMPL_PLANNERS)})", value=planner)
    time_limit = check_number(time_limit, "time_limit", 0.0, "max_plan_seconds", low_open=True)
    check_resolution = check_number(check_resolution, "check_resolution", "min_check_resolution", 100.0)
    try:
        from ompl import base as ob
        from ompl import geometric as og
        from ompl import util as ou
    except ImportError:
        raise InputError("OMPL's planners need the ompl package (pip install ompl)", value=planner) from None
    ou.setLogLevel(ou.LogLevel.LOG_ERROR)
    global _SEEDED
    if seed is not None and not _SEEDED:  # OMPL takes one seed per process, before its first random number
        ou.RNG.setSeed(int(seed) % (2**31 - 1) + 1)
        _SEEDED = True
    try:
        limits = (time_limit, check_resolution, simplify, first_solution)
        path = _solve(ob, og, start, goal, is_valid, lower, upper, planner, *limits)
    except RuntimeError as exc:  # OMPL's own refusals (bounds, resolution, ...): a typed error naming the query
        raise InputError(
            f"OMPL's {planner} refused the query (check_resolution {check_resolution:g}, time_limit {time_limit:g},"
            f" bounds {np.round(lower, 6).tolist()}..{np.round(upper, 6).tolist()}): {exc}",
            value=planner,
        ) from None
    if path is None or len(path) < 2:
        return None
    path[0], path[-1] = start, goal
    return path


def _solve(ob, og, start, goal, is_valid, lower, upper, planner, time_limit, check_resolution, simplify, first):
    """One query through OMPL's SimpleSetup: the waypoints of an exact solution, or None."""
    n = len(start)
    space = ob.RealVectorStateSpace(n)
    bounds = ob.RealVectorBounds(n)
    for i in range(n):
        bounds.setLow(i, float(lower[i]))
        bounds.setHigh(i, float(upper[i]))
    space.setBounds(bounds)
    setup = og.SimpleSetup(space)
    buffer = np.empty(n)

    def valid(state) -> bool:
        for i in range(n):
            buffer[i] = state[i]
        return bool(is_valid(buffer.copy()))

    setup.setStateValidityChecker(valid)
    info = setup.getSpaceInformation()
    extent = float(space.getMaximumExtent())
    info.setStateValidityCheckingResolution(min(1.0, check_resolution / extent) if extent > 0 else 0.01)
    a, b = space.allocState(), space.allocState()
    for i in range(n):
        a[i], b[i] = float(start[i]), float(goal[i])
    setup.setStartAndGoalStates(a, b)
    setup.setPlanner(getattr(og, planner)(info))
    path, objective = None, None
    try:
        if first:  # any path satisfies the objective: an optimizing planner stops at its first exact solution
            objective = ob.PathLengthOptimizationObjective(info)
            objective.setCostThreshold(ob.Cost(float("inf")))
            setup.setOptimizationObjective(objective)
        solved = setup.solve(float(time_limit))
        if solved and setup.haveExactSolutionPath():
            if simplify:
                setup.simplifySolution(min(1.0, float(time_limit)))
            found = setup.getSolutionPath()
            path = np.array([[found.getState(k)[i] for i in range(n)] for k in range(found.getStateCount())])
    finally:  # drop OMPL's objects while their types are alive (nanobind warns about leaks at exit otherwise)
        # reference counting frees them here: they form no cycles (a gc.collect() after this found 0 unreachable
        # objects per query), and a full collection cost ~0.3 s a query in a big process (a pytest worker)
        del setup, info, a, b, space, bounds, objective
    return path
