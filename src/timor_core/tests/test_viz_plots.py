"""Plots of search results and trajectories: PNG and SVG files with content, and the ``timor plot`` command."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("matplotlib")

from timor_core.cli.app import main  # noqa: E402
from timor_core.kinematics.planning import plan  # noqa: E402
from timor_core.model.assembly import ModuleAssembly  # noqa: E402
from timor_core.search.evaluation.result import SearchResult  # noqa: E402
from timor_core.search.filtering.filters import Funnel  # noqa: E402
from timor_core.viz import VizError  # noqa: E402
from timor_core.viz.plots import plot_compare, plot_convergence, plot_funnel, plot_trajectory, robot_limits  # noqa: E402


def _ga_result(offset: float = 0.0, found: bool = True) -> SearchResult:
    funnel = Funnel(("dof", "reach", "ik"))
    for k in range(40):
        funnel.record(None if k % 5 == 0 else ("dof", "reach", "ik")[k % 3], "why", (0.001, 0.002, 0.01))
    history = [
        {
            "trial": t,
            "generation": g,
            "evaluations": 20 * g,
            "time": 0.1 * g,
            "best_cost": 5.0 - 0.1 * g + offset,
            "best_fitness_cost": 6.0 - 0.2 * g + t + offset,
            "median_cost": 9.0 - 0.1 * g + t + offset,
        }
        for t in range(2)
        for g in range(10)
    ]
    return SearchResult(
        "GeneticSearch",
        "simple/PTP_1",
        "geometric_primitive_modules",
        "mass",
        best_ids=("base", "J2", "eef") if found else None,
        best_cost=4.0 + offset if found else None,
        funnel=funnel,
        history=history,
        evaluations=40,
        valid=8,
    )


def _check(path, kind: str) -> None:
    data = path.read_bytes()
    if kind == "png":
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    else:
        text = data.decode()
        assert "<svg" in text and text.count("<path") > 10


@pytest.mark.parametrize("kind", ["png", "svg"])
def test_convergence_funnel_compare(tmp_path, kind):
    results = [_ga_result(), _ga_result(1.0, found=False)]
    _check(plot_convergence(results, tmp_path / f"c.{kind}"), kind)
    _check(plot_funnel(results[0], tmp_path / f"f.{kind}"), kind)
    _check(plot_compare(results, tmp_path / f"b.{kind}"), kind)


@pytest.mark.parametrize("kind", ["png", "svg"])
def test_trajectory_with_limits(primitives, tmp_path, kind):
    robot = ModuleAssembly.from_serial_modules(primitives, ["base", "J2", "J2", "eef"]).robot
    trajectory = plan(robot, np.zeros(2), np.array([1.0, -0.5]), rng=0)
    tau = np.array([robot.id(q, dq, ddq) for q, dq, ddq in zip(trajectory.q, trajectory.dq, trajectory.ddq)])
    _check(plot_trajectory(trajectory, tmp_path / f"t.{kind}", tau=tau, limits=robot_limits(robot)), kind)


def test_convergence_without_history_is_a_clear_error(tmp_path):
    empty = SearchResult("ExhaustiveSearch", "t", "db", "mass")
    with pytest.raises(VizError, match="no convergence history"):
        plot_convergence([empty], tmp_path / "c.png")
    assert not list(tmp_path.iterdir())


def test_cli_plot(tmp_path, capsys):
    files = []
    for k, offset in enumerate((0.0, 0.5)):
        files.append(str(_ga_result(offset).to_json_file(tmp_path / f"r{k}.json")))
    for kind, args in (("convergence", files), ("compare", files), ("funnel", files[:1])):
        out = tmp_path / f"{kind}.png"
        assert main(["plot", kind, *args, "-o", str(out)]) == 0, capsys.readouterr().err
        _check(out, "png")
    assert main(["plot", "funnel", *files, "-o", str(tmp_path / "x.png")]) == 2
    assert "one result file" in capsys.readouterr().err


def test_convergence_of_a_search_without_generations_has_one_panel(tmp_path):
    """The lower panel (goals the GA's best and median miss per generation) stayed an empty frame under an exhaustive
    search's curve; only the GA's plot has it, and the other's x axis is labelled where it is drawn."""
    exhaustive = SearchResult("ExhaustiveSearch", "t", "db", "mass")
    exhaustive.history = [{"evaluations": n, "time": 0.0, "best_cost": 9.0 - n / 100} for n in (10, 200, 400)]
    one = plot_convergence([exhaustive], tmp_path / "exhaustive.svg").read_text()
    assert one.count('<g id="axes_') == 1
    assert plot_convergence([_ga_result()], tmp_path / "ga.svg").read_text().count('<g id="axes_') == 2
