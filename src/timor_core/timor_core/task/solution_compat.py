"""The reference toolbox's (timor-python 1.1.1) names on a Solution, for scripts moving over.

A mixin: ``solution.q`` / ``dq`` / ``ddq`` / ``time_steps`` (the trajectory's arrays), ``t_goals``,
``failed_goals``, ``module_assembly`` and ``to_json_string()`` read as they did there. It uses the solution's
``task``, ``assembly``, ``trajectory``, ``goal_times``, ``achieved``, ``goal_time`` and ``to_json_data``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

__all__ = ["SolutionCompat", "trajectory_array"]


def trajectory_array(field: str, doc: str) -> Any:
    """A read-only property giving the solution's ``trajectory.<field>``."""

    def get(self: Any) -> np.ndarray:
        return getattr(self.trajectory, field)

    return property(get, doc=doc)


class SolutionCompat:
    """timor-python's names on a Solution (mixed into it; not used alone)."""

    task: Any
    assembly: Any
    trajectory: Any
    goal_times: Any
    achieved: Any
    goal_time: Any
    to_json_data: Any

    q = trajectory_array("q", "(N, dof) joint positions of the trajectory.")
    dq = trajectory_array("dq", "(N, dof) joint velocities of the trajectory.")
    ddq = trajectory_array("ddq", "(N, dof) joint accelerations of the trajectory.")
    time_steps = trajectory_array("t", "(N,) sample times of the trajectory (s).")

    @property
    def module_assembly(self) -> Any:
        """The solution's assembly (timor-python's name of ``assembly``)."""
        return self.assembly

    @property
    def t_goals(self) -> dict[str, float]:
        """Goal ID -> time: the given goal times (CoBRA ``goal2time``) as they are, else the time each achieved
        goal was found at (goals not achieved left out)."""
        if self.goal_times is not None:
            return dict(self.goal_times)
        found = {goal.id: self.goal_time(goal) for goal in self.task.goals}
        return {goal_id: t for goal_id, t in found.items() if t is not None}

    @property
    def failed_goals(self) -> tuple[Any, ...]:
        """The task's goals this solution does not achieve, in task order."""
        return tuple(goal for goal in self.task.goals if not self.achieved(goal))

    def to_json_string(self) -> str:
        """The solution JSON as text (see ``to_json_data``)."""
        return json.dumps(self.to_json_data(), indent=2)
