"""robot.visualize(), task.visualize() and solution.visualize(): registered here, where importing is cheap (the
viewer needs trimesh, about half a second to import); the viewer is imported on first use."""

from __future__ import annotations

from timor_core.common.extensions import implements

__all__: list[str] = []


@implements("show_robot")
def _show_robot(*args, **kwargs):
    from timor_core.viz.viewer import show_robot

    return show_robot(*args, **kwargs)


@implements("show_task")
def _show_task(*args, **kwargs):
    from timor_core.viz.viewer import show_task

    return show_task(*args, **kwargs)


@implements("show_solution")
def _show_solution(*args, **kwargs):
    from timor_core.viz.viewer import show_solution

    return show_solution(*args, **kwargs)
