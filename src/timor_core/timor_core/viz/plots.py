"""Matplotlib figures (Agg, PNG or SVG by suffix): GA convergence, filter funnels, joint trajectories, comparisons."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from timor_core.viz import VizError, require
from timor_core.viz.figure_files import save_figure

if TYPE_CHECKING:
    from timor_core.kinematics.trajectory import Trajectory
    from timor_core.search.evaluation.result import SearchResult

__all__ = ["plot_convergence", "plot_funnel", "plot_trajectory", "plot_compare", "robot_limits"]


def _figure(width: float = 7.0, height: float = 4.0):
    require("matplotlib")
    from matplotlib.figure import Figure

    return Figure(figsize=(width, height), layout="constrained")


def _label(result: SearchResult, k: int, many: bool) -> str:
    return f"{result.optimizer} #{k}" if many else result.optimizer


def plot_convergence(results: Sequence[SearchResult], path: str | Path) -> Path:
    """GA convergence per trial: the lightest valid robot so far (top) and how many goals the best and the median
    individual of each generation miss (bottom; penalised costs decoded). Other searches: best cost over
    evaluations."""
    from timor_core.search.genetic.ga import trial_histories

    fig = _figure(7.0, 5.5)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    drawn, ga = 0, False
    for k, result in enumerate(results):
        trials = trial_histories(result)
        name = _label(result, k, len(results) > 1)
        penalty = float(result.settings.get("penalty", 1e6))
        for trial, points in enumerate(trials):
            ga = True
            g = np.array([p["generation"] for p in points])
            best = np.array([p["best_fitness_cost"] for p in points], dtype=float)
            median = np.array([p["median_cost"] for p in points], dtype=float)
            valid_best = np.where(best < penalty, best, np.inf)
            so_far = np.minimum.accumulate(valid_best)
            shown = np.isfinite(so_far)
            label = f"{name} trial {trial}" if len(results) > 1 else f"trial {trial}"
            color = None
            if shown.any():
                final = so_far[-1]
                color = top.step(g[shown], so_far[shown], where="post", label=f"{label}: {final:.2f}")[0].get_color()
            scale = penalty if penalty > 0 else np.inf  # penalty 0: no goal counts as missed in the fitness
            line = bottom.step(g, np.floor(best / scale), where="post", color=color, label=f"{label}: best")[0]
            bottom.step(g, np.floor(median / scale), where="post", ls="--", color=line.get_color(), alpha=0.6)
            drawn += 1
        if not trials:
            points = [p for p in result.history if p.get("best_cost") is not None]
            if points:
                x = [p["evaluations"] for p in points]
                top.step(x, [p["best_cost"] for p in points], where="post", label=f"{name}: best")
                bottom.set_xlabel("evaluated assemblies")
                drawn += 1
    if not drawn:
        raise VizError("no convergence history in these results (no generations, no valid assembly found)")
    cost = results[0].cost if results else "cost"
    top.set_ylabel(f"best valid {cost}")
    top.set_title(f"convergence: {results[0].task_id}" if results else "convergence")
    top.grid(alpha=0.3)
    if top.get_legend_handles_labels()[0]:
        top.legend(fontsize=7, title="lightest valid robot", title_fontsize=7)
    if ga:
        bottom.set_ylabel("goals missed")
        bottom.yaxis.get_major_locator().set_params(integer=True)
        bottom.text(
            0.99, 0.95, "solid: best, dashed: median", transform=bottom.transAxes, ha="right", va="top", fontsize=7
        )
    bottom.set_xlabel(bottom.get_xlabel() or "generation")
    bottom.grid(alpha=0.3)
    if not ga:  # goals missed per generation is the GA's: other searches' lower panel stayed empty
        bottom.set_visible(False)
        top.tick_params(labelbottom=True)
        top.set_xlabel(bottom.get_xlabel())
    return save_figure(fig, path)


def plot_funnel(result: SearchResult, path: str | Path) -> Path:
    """How many assemblies entered and passed each filter of a search (log scale), with time per filter."""
    funnel = result.funnel
    names = list(funnel.names)
    if not names:
        raise VizError("this result has no filter funnel")
    fig = _figure(7.0, 0.5 * len(names) + 1.5)
    ax = fig.add_subplot()
    y = np.arange(len(names))[::-1]
    entered = [funnel.entered[n] for n in names]
    passed = [funnel.passed[n] for n in names]
    ax.barh(y, entered, color="#cccccc", label="entered")
    ax.barh(y, passed, color="#3a7bd5", label="passed")
    for yi, n, e, p in zip(y, names, entered, passed):
        ax.text(max(p, 1), yi, f" {p}/{e}  {funnel.time[n]:.2f} s", va="center", fontsize=8)
    ax.set_yticks(y, names)
    ax.set_xscale("symlog")
    ax.set_xlabel("assemblies")
    ax.set_title(f"filter funnel: {result.task_id} ({result.evaluations} assemblies, {result.valid} valid)")
    ax.legend(fontsize=8, loc="lower right")
    return save_figure(fig, path)


def plot_trajectory(
    trajectory: Trajectory,
    path: str | Path,
    *,
    tau: np.ndarray | None = None,
    limits: dict[str, np.ndarray] | None = None,
) -> Path:
    """Joint positions, velocities and (if given) torques over time, with their limits dashed.

    ``limits`` may hold ``q`` (2×dof), ``dq`` (dof) and ``tau`` (dof), e.g. from :func:`robot_limits`.
    """
    limits = limits or {}
    rows = [("q", trajectory.q, "position"), ("dq", trajectory.dq, "velocity")]
    if tau is not None:
        rows.append(("tau", np.asarray(tau), "torque / force"))
    fig = _figure(8.0, 2.3 * len(rows))
    axes = fig.subplots(len(rows), 1, sharex=True, squeeze=False)[:, 0]
    t = trajectory.t
    for ax, (key, values, title) in zip(axes, rows):
        for j in range(values.shape[1]):
            line = ax.plot(t, values[:, j], lw=1.2, label=f"joint {j}")[0]
            bound = limits.get(key)
            if bound is None:
                continue
            low, high = (bound[0][j], bound[1][j]) if np.ndim(bound) == 2 else (-bound[j], bound[j])
            for b in (low, high):
                if np.isfinite(b):
                    ax.axhline(b, ls="--", lw=0.8, color=line.get_color(), alpha=0.6)
        ax.set_ylabel(title)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=min(trajectory.dof, 6), loc="upper right")
    axes[-1].set_xlabel("time / s")
    return save_figure(fig, path)


def robot_limits(robot) -> dict[str, np.ndarray]:
    """The position, velocity and torque limits of a PinRobot, as :func:`plot_trajectory` wants them."""
    return {"q": robot.joint_limits, "dq": robot.velocity_limits, "tau": robot.torque_limits}


def plot_compare(results: Sequence[SearchResult], path: str | Path, labels: Sequence[str] | None = None) -> Path:
    """A bar chart of the best cost of several results, each bar labelled with its best assembly."""
    if not results:
        raise VizError("nothing to compare")
    labels = list(labels) if labels else [f"{r.optimizer} #{k}" for k, r in enumerate(results)]
    fig = _figure(max(5.0, 1.4 * len(results) + 2), 4.5)
    ax = fig.add_subplot()
    costs = [r.best_cost if r.found and r.best_cost is not None else np.nan for r in results]
    x = np.arange(len(results))
    bars = ax.bar(x, np.nan_to_num(costs, nan=0.0), color=["#3a7bd5" if r.found else "#dd4444" for r in results])
    for bar, r in zip(bars, results):
        text = " ".join(r.best_ids) if r.best_ids is not None else "none found"
        ax.annotate(text, (bar.get_x() + bar.get_width() / 2, bar.get_height()), ha="center", va="bottom", fontsize=7)
    ax.set_xticks(x, labels, rotation=20, ha="right", fontsize=8)
    ax.set_ylabel(f"best cost ({results[0].cost or 'cost'})")
    ax.set_title("best assemblies")
    return save_figure(fig, path)
