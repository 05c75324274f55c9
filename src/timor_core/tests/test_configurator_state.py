"""The configurator's page-independent logic: designs, undo/redo, attachments, checks and the background GA."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

import numpy as np
import pytest
from conftest import SHARED

from timor_core import ModuleAssembly
from timor_core.errors import TimorError, UnknownModuleError
from timor_core.task.feedback import format_feedback, load_task, solve_feedback
from timor_core.viz.configurator_state import (
    Attachment,
    ConfiguratorError,
    Design,
    DesignState,
    OptimizeRun,
    OptimizeSettings,
    check_design,
    ga_seed_genes,
)

USER_STUDY = SHARED / "data" / "cobra" / "tasks" / "user_study.json"
needs_user_study = pytest.mark.skipif(not USER_STUDY.is_file(), reason=f"user-study task not found at {USER_STUDY}")
GOOD = ("base", "J", "L_250", "J", "L_150", "J", "L_150", "gripper")  # reaches both goals, 11.02 kg


@pytest.fixture(scope="module")
def task():
    if not USER_STUDY.is_file():
        pytest.skip(f"user-study task not found at {USER_STUDY}")
    return load_task(USER_STUDY, False)


def test_default_design_is_a_one_joint_robot(robco):
    state = DesignState(robco)
    assert state.design == Design(("base", "J", "gripper"))
    assert state.error == "" and state.assembly.dof == 1
    assert not state.can_undo and not state.can_redo
    assert state.slot_options(0) == ("base",) and "base" not in state.slot_options(1)


def test_build_the_good_design_by_edits_and_undo_redo(robco):
    state = DesignState(robco)
    for module in GOOD[2:-1]:
        assert state.add_slot(module)  # inserted before the gripper
    assert state.design.chain == GOOD
    assert state.assembly == ModuleAssembly.from_serial_modules(robco, GOOD)
    assert state.set_slot(2, "I_100") and state.design.chain[2] == "I_100"
    assert not state.set_slot(2, "I_100")  # no change, no history entry
    assert state.undo() and state.design.chain == GOOD
    assert state.redo() and state.design.chain[2] == "I_100"
    assert state.undo() and state.remove_slot(6) and state.design.chain == GOOD[:6] + GOOD[7:]
    assert not state.can_redo  # a new edit clears the redo stack
    while state.undo():
        pass
    assert state.design.chain == ("base", "J", "gripper")
    assert state.add_slot("J", position=1) and state.design.chain == ("base", "J", "J", "gripper")


def test_invalid_designs_are_kept_with_the_reason(robco):
    state = DesignState(robco)
    state.set_slot(1, "gripper")  # gripper - gripper does not connect
    assert state.assembly is None and "gripper" in state.error
    assert state.free_connectors() == []
    assert state.undo() and state.error == ""
    with pytest.raises(ConfiguratorError, match="no slot 7"):
        state.set_slot(7, "J")
    with pytest.raises(UnknownModuleError):
        state.add_slot("no_such_module")
    with pytest.raises(ConfiguratorError, match="at least one"):
        DesignState(robco, ["base"]).remove_slot(0)


def test_attach_to_a_free_connector(robco):
    state = DesignState(robco, ["base", "J", "L_250"])
    free = state.free_connectors()
    assert free == [(2, "L_250_distal_connector")]
    assert "J" in state.fitting_modules(*free[0]) and "base" not in state.fitting_modules(*free[0])
    assert state.attach(*free[0], "J")
    assert state.design.attachments == (Attachment(2, "L_250_distal_connector", "J"),)
    assert state.assembly == ModuleAssembly.from_serial_modules(robco, ["base", "J", "L_250", "J"])
    (i, c) = state.free_connectors()[0]
    assert i == 3 and state.attach(i, c, "gripper") and state.assembly.dof == 2
    with pytest.raises(ConfiguratorError, match="not a free connector"):
        state.attach(0, "nope", "J")
    assert state.add_slot("I_50", position=1) and [a.parent for a in state.design.attachments] == [3, 4]
    assert state.assembly.module_ids == ["base", "I_50", "J", "L_250", "J", "gripper"]
    assert state.remove_slot(3) and state.design.attachments == ()  # its subtree goes with the slot
    state.undo()
    assert state.detach(0) and state.design.attachments == ()
    assert state.design.to_json()["chain"] == ["base", "I_50", "J", "L_250"]


@needs_user_study
@pytest.mark.parametrize("chain", [GOOD, ("base", "J", "gripper"), ("base", "J", "I_300", "J", "gripper")])
def test_check_is_timor_solve(robco, task, chain):
    """The configurator's verdict per goal is exactly what ``timor solve`` computes and prints."""
    state = DesignState(robco, chain)
    result = check_design(task, state.assembly, state.design)
    expected = solve_feedback(task, ModuleAssembly.from_serial_modules(robco, chain), seed=0)
    assert [(g.id, g.reached, g.reason) for g in result.goals] == [
        (e["id"], e["reached"], e["reason"]) for e in expected["goals"]
    ]
    for g, e in zip(result.goals, expected["goals"]):
        assert g.q == (None if e["q"] is None else tuple(e["q"]))
        assert g.text in result.text
    assert result.cost == pytest.approx(expected["cost"]) and result.cost_descriptor == "mass"
    assert result.text == format_feedback(task, state.assembly, expected, "mass")
    assert result.design == state.design and result.summary in result.text
    if chain == GOOD:
        assert result.all_reached and result.cost == pytest.approx(11.02)
        robot = state.assembly.robot
        for g in result.goals:  # the shown pose really is at the goal
            T = robot.fk(np.asarray(g.q))
            assert np.allclose(T[:3, 3], task.goal(g.id).goal_pose.world[:3, 3], atol=2e-3)
    else:
        assert result.reached < len(task.goals)
        assert all(g.reason for g in result.goals if not g.reached)


def test_ga_seed_genes_round_trip(robco):
    from timor_core.search import GeneticSearch

    ga = GeneticSearch(robco, max_dof=6, progress=False, workers=1)
    genes = ga_seed_genes(ga, GOOD)
    assert genes is not None and ga.decode(genes) == GOOD and ga.is_valid(ga.decode(genes))
    assert ga.decode(ga_seed_genes(ga, ["base", "J", "J", "I_50", "L_100", "gripper"])) == (
        "base",
        "J",
        "J",
        "I_50",
        "L_100",
        "gripper",
    )
    assert ga_seed_genes(ga, ["base", "I_50", "J", "gripper"]) is None  # the first slot holds a joint
    assert ga_seed_genes(ga, ["base", "J"]) is None  # no end effector


@needs_user_study
def test_optimize_from_the_current_design_reports_progress(robco, task):
    updates = []
    run = OptimizeRun(task, robco, GOOD, OptimizeSettings(generations=2, population=6), on_update=updates.append)
    assert run.progress.seeded
    progress = run.start().join(timeout=120)
    assert progress.done and not progress.error and progress.stopped == "exhausted"
    assert progress.best_ids is not None and progress.best_cost <= 11.02 + 1e-9  # never worse than the seed
    assert progress.generation == 2 and progress.evaluated >= 1
    assert len(updates) >= 2 and not updates[0].done and updates[-1].done
    assert [u.evaluated for u in updates] == sorted(u.evaluated for u in updates)
    assert "generation 2/2" in progress.text


@needs_user_study
def test_optimize_stops_on_request(robco, task):
    first = threading.Event()
    run = OptimizeRun(
        task, robco, None, OptimizeSettings(generations=500, population=6), on_update=lambda p: first.set()
    )
    run.start()
    assert first.wait(60)
    run.stop()
    progress = run.join(timeout=60)
    assert not run.running and progress.done and progress.stopped == "stopped"
    assert progress.generation < 500


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_cli_port_in_use_is_one_line_and_exit_2():
    pytest.importorskip("viser")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        cmd = [sys.executable, "-m", "timor_core.cli", "configurator", "--db", "robco_like", "--port", str(port)]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert lines == [
        f"error: port {port} on 127.0.0.1 is already in use: close the other program or pass another --port"
    ]
    assert "Traceback" not in proc.stderr


def test_cli_bad_db_is_a_timor_error(capsys):
    pytest.importorskip("viser")
    from timor_core.cli.app import main

    assert main(["configurator", "--db", "no_such_set", "--port", str(_free_port())]) == 2
    assert "is neither an embedded module set" in capsys.readouterr().err


def test_errors_are_timor_errors():
    assert issubclass(ConfiguratorError, TimorError)


@needs_user_study
def test_the_page_without_a_browser(robco, task):
    """The viser page's handlers on a live server: render, check, optimize, use the best design, export."""
    pytest.importorskip("viser")
    from timor_core.viz.configurator import Configurator, export_files
    from timor_core.viz.configurator_exports import EXPORT_LABELS

    page = Configurator(robco, task, port=0, design=list(GOOD))
    try:
        assert "3 DOF" in page.status.content and [h.value for h in page._slot_handles] == list(GOOD)
        assert [h.label for h in page._slider_handles] == page.state.assembly.robot.joints
        page._check(None)
        assert "2 of 2 goal(s) reached" in page.check_text.content and page.goal_choice.value == "g1"
        assert page.goal_choice.options == ("joint sliders", "g1", "g2")
        page.state.add_slot("I_50")
        page.render()
        assert page.check is None and "Check" in page.check_text.content
        page.state.undo()
        page.render()
        page.generations.value, page.population.value = 2, 4
        page._optimize(None)
        page.run.join(timeout=120)
        assert "done (exhausted)" in page.progress_text.content and not page.use_best_button.disabled
        page._use_best(None)
        page.render()
        assert page.state.design.chain == page.run.progress.best_ids and page.run.progress.best_cost <= 11.02 + 1e-9
        assert EXPORT_LABELS == ("URDF", "xacro", "SRDF", "assembly JSON")
        name, content = export_files(page.state.assembly, "URDF")
        assert name.endswith(".urdf") and content.startswith(b"<?xml")
        for label, suffix in zip(EXPORT_LABELS[1:], (".urdf.xacro", ".srdf", ".json")):  # every button's file
            name, content = export_files(page.state.assembly, label)
            assert name.endswith(suffix) and len(content) > 100, (label, name, content[:80])
    finally:
        page.close()
    page.close()  # twice is fine
