"""The configurator web page: build a robot slot by slot, see it, check it against a task, optimize it, export it.

``Configurator(db, task, port=8080).serve()`` serves http://127.0.0.1:8080 until Ctrl-C. The page renders a
:class:`~.configurator_state.DesignState` and forwards every click to it; all logic lives there.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from timor_core.errors import TimorError
from timor_core.model.assembly import ModuleAssembly
from timor_core.task.feedback import assembly_cost, task_base_placement
from timor_core.viz.configurator_exports import EXPORT_LABELS, export_files
from timor_core.viz.configurator_state import (
    CheckResult,
    Design,
    DesignState,
    OptimizeProgress,
    OptimizeRun,
    OptimizeSettings,
    check_design,
)
from timor_core.viz.scene import GOAL_COLOR, ROBOT_COLOR, RobotScene, add_task
from timor_core.viz.viewer import DEFAULT_PORT, Viewer

if TYPE_CHECKING:
    from timor_core.model.db import ModulesDB
    from timor_core.task import Task

__all__ = ["Configurator", "export_files"]

logger = logging.getLogger(__name__)

BEST_COLOR = (90, 120, 230)
MISS_COLOR = (210, 60, 60)
SLIDERS = "joint sliders"
NONE = "(none)"


def _joint_range(lower: float, upper: float) -> tuple[float, float]:
    lo = lower if np.isfinite(lower) else -np.pi
    hi = upper if np.isfinite(upper) else np.pi
    return float(lo), float(max(hi, lo + 1e-3))


class Configurator:
    """The viser page: design panel, joint sliders, Check, Optimize and export buttons over one task."""

    def __init__(
        self,
        db: ModulesDB,
        task: Task | None = None,
        *,
        port: int = DEFAULT_PORT,
        host: str = "127.0.0.1",
        design: Design | list[str] | None = None,
        cost: str = "mass",
        seed: int = 0,
    ) -> None:

        self.cost = assembly_cost(cost).descriptor() or "mass"
        self.seed = seed
        self.db = db
        self.task = task
        placement = task_base_placement(task) if task is not None else None
        self.state = DesignState(db, design, placement)
        self.viewer = Viewer(port=port, host=host)
        self.server = self.viewer.server
        self.check: CheckResult | None = None
        self.run: OptimizeRun | None = None
        self._lock = threading.RLock()
        self._robot: RobotScene | None = None
        self._best: RobotScene | None = None
        self._best_ids: tuple[str, ...] | None = None
        self._slot_handles: list[Any] = []
        self._slider_handles: list[Any] = []
        self._closed = False
        self.server.initial_camera.position = (1.2, -1.2, 1.0)
        self.server.initial_camera.look_at = (0.0, 0.0, 0.3)
        if task is not None:
            add_task(self.server, task)
        self._build_gui()
        self.render()

    @property
    def url(self) -> str:
        """The page's address."""
        return self.viewer.url

    # -- the panel ---------------------------------------------------------------------------------
    def _build_gui(self) -> None:
        gui = self.server.gui
        gui.add_markdown(f"## timor configurator\nmodule set **{self.db.name}**" + self._task_line())
        self.status = gui.add_markdown("")
        with gui.add_folder("Design"):
            self.chain_folder = gui.add_folder("Chain")
            modules = [m.id for m in self.db if not m.is_base]
            self.new_module = gui.add_dropdown("new module", modules, initial_value=self._default_new(modules))
            self.add_button = gui.add_button("Add slot", hint="insert the new module before the end effector")
            self.remove_choice = gui.add_dropdown("slot to remove", ["1"])
            self.remove_button = gui.add_button("Remove slot")
            self.free_choice = gui.add_dropdown("free connector", [NONE])
            self.attach_module = gui.add_dropdown("attach module", [NONE])
            self.attach_button = gui.add_button("Attach")
            self.undo_button = gui.add_button("Undo")
            self.redo_button = gui.add_button("Redo")
        self.joint_folder = gui.add_folder("Joints")
        with gui.add_folder("Check", visible=self.task is not None):
            self.check_button = gui.add_button("Check", hint="inverse kinematics per goal, as `timor solve`")
            self.check_text = gui.add_markdown("Press **Check** to test the design against the task.")
            self.goal_choice = gui.add_dropdown("show robot at", [SLIDERS])
        with gui.add_folder("Optimize", visible=self.task is not None):
            self.generations = gui.add_number("generations", 20, min=1, max=1000, step=1)
            self.population = gui.add_number("population", 16, min=2, max=500, step=1)
            self.optimize_button = gui.add_button("Optimize", hint="genetic algorithm from the current design")
            self.stop_button = gui.add_button("Stop", disabled=True)
            self.progress_bar = gui.add_progress_bar(0.0)
            self.progress_text = gui.add_markdown("")
            self.use_best_button = gui.add_button("Use best design", disabled=True)
        with gui.add_folder("Export"):
            self.export_buttons = {label: gui.add_button(f"Download {label}") for label in EXPORT_LABELS}
        self.add_button.on_click(self._user(lambda e: self.state.add_slot(self.new_module.value)))
        self.remove_button.on_click(self._user(lambda e: self.state.remove_slot(int(self.remove_choice.value))))
        self.attach_button.on_click(self._user(self._attach))
        self.undo_button.on_click(self._user(lambda e: self.state.undo()))
        self.redo_button.on_click(self._user(lambda e: self.state.redo()))
        self.free_choice.on_update(self._user(self._update_attach_modules, render=False))
        self.check_button.on_click(self._user(self._check, render=False))
        self.goal_choice.on_update(self._user(self._show_goal, render=False))
        self.optimize_button.on_click(self._user(self._optimize, render=False))
        self.stop_button.on_click(self._user(self._stop, render=False))
        self.use_best_button.on_click(self._user(self._use_best))
        for label, button in self.export_buttons.items():
            button.on_click(self._user(partial(self._export, label=label), render=False))

    def _task_line(self) -> str:
        if self.task is None:
            return "; no task (start with `--task FILE` to check and optimize)"
        return f", task **{self.task.id}** ({len(self.task.goals)} goals, {len(self.task.obstacles)} obstacles)"

    def _default_new(self, modules: list[str]) -> str:
        joints = [m.id for m in self.db.joints]
        return joints[0] if joints else modules[0]

    def _user(self, action: Callable[[Any], Any], render: bool = True) -> Callable[[Any], None]:
        """Wrap a GUI callback: ignore programmatic updates, serialize, show TimorErrors on the page."""

        def callback(event: Any) -> None:
            if event.client is None:  # our own value assignments
                return
            with self._lock:
                try:
                    action(event)
                except TimorError as exc:
                    self._notify(event, "Cannot do that", str(exc), error=True)
                except Exception as exc:  # noqa: BLE001  (the page must survive any bug)
                    logger.exception("configurator callback failed")
                    self._notify(event, "Error", f"{type(exc).__name__}: {exc}", error=True)
                if render:
                    self.render()

        return callback

    def _notify(self, event: Any, title: str, body: str, error: bool = False) -> None:
        client = getattr(event, "client", None)
        if client is not None:
            client.add_notification(title, body, auto_close_seconds=8.0, color="red" if error else None)

    # -- rendering the design ----------------------------------------------------------------------
    def render(self) -> None:
        """Show the current design: slots, status, robot, sliders, attach options; forget a stale check."""
        with self._lock:
            self._render_slots()
            assembly = self.state.assembly
            if assembly is None:
                self.status.content = f"**Design cannot be built:** {self.state.error}"
            else:
                self.status.content = (
                    f"**{assembly.dof} DOF**, {len(assembly)} modules, {assembly.mass:.3f} kg:"
                    f" `{' '.join(assembly.module_ids)}`"
                )
            self._render_robot(assembly)
            self._render_sliders(assembly)
            n = len(self.state.design.chain)
            self.remove_choice.options = [str(k) for k in range(n)]
            self.remove_choice.value = str(n - 2 if n > 2 else n - 1)
            free = (
                [f"{i} {assembly.module_ids[i]}: {c}" for i, c in self.state.free_connectors()]
                if assembly is not None
                else []  # free_connectors() is empty then as well
            )
            self.free_choice.options = free or [NONE]
            self._update_attach_modules(None)
            self.undo_button.disabled = not self.state.can_undo
            self.redo_button.disabled = not self.state.can_redo
            self.add_button.disabled = False
            if self.check is not None and self.check.design != self.state.design:
                self.check = None
                self.check_text.content = "The design changed: press **Check** again."
                self.goal_choice.options = [SLIDERS]

    def _render_slots(self) -> None:
        chain = self.state.design.chain
        current = [h.value for h in self._slot_handles]
        if current == list(chain):
            return
        for h in self._slot_handles:
            h.remove()
        self._slot_handles = []
        with self.chain_folder:
            for k, module in enumerate(chain):
                options = self.state.slot_options(k)
                if module not in options:
                    options = (*options, module)
                handle = self.server.gui.add_dropdown(f"slot {k}", options, initial_value=module)

                def set_slot(e: Any, k: int = k) -> None:
                    self.state.set_slot(k, e.target.value)

                handle.on_update(self._user(set_slot))
                self._slot_handles.append(handle)
        atts = self.state.design.attachments
        if atts:
            with self.chain_folder:
                text = "\n".join(f"- {a.module} on module {a.parent} ({a.connector})" for a in atts)
                self._slot_handles.append(self.server.gui.add_markdown(f"attached:\n{text}"))

    def _render_robot(self, assembly: ModuleAssembly | None) -> None:
        if self._robot is not None and (assembly is None or self._robot.robot is not assembly.robot):
            self._robot.remove()
            self._robot = None
        if assembly is not None and self._robot is None:
            self._robot = RobotScene(self.server, assembly.robot, root="/robot")

    def _render_sliders(self, assembly: ModuleAssembly | None) -> None:
        robot = None if assembly is None else assembly.robot
        names = [] if robot is None else robot.joints
        if [h.label for h in self._slider_handles] == names and self._slider_handles:
            return
        for h in self._slider_handles:
            h.remove()
        self._slider_handles = []
        if robot is None:
            return
        limits = robot.joint_limits
        with self.joint_folder:
            for j, name in enumerate(names):
                lo, hi = _joint_range(limits[0, j], limits[1, j])
                initial = float(np.clip(robot.q[j], lo, hi))
                slider = self.server.gui.add_slider(name, min=lo, max=hi, step=0.01, initial_value=initial)
                slider.on_update(self._user(self._slider_moved, render=False))
                self._slider_handles.append(slider)

    def _slider_moved(self, event: Any) -> None:
        if self._robot is None:
            return
        q = np.array([h.value for h in self._slider_handles], dtype=float)
        self._robot.update(q)
        self._robot.set_color(ROBOT_COLOR)
        self.goal_choice.value = SLIDERS

    def _pose(self, q: np.ndarray) -> None:
        """Show the robot at q and move the sliders there (without triggering them)."""
        if self._robot is None:
            return
        self._robot.update(q)
        for h, v in zip(self._slider_handles, q):
            h.value = float(np.clip(v, h.min, h.max))

    # -- attaching -----------------------------------------------------------------------------------
    def _free_selection(self) -> tuple[int, str] | None:
        value = self.free_choice.value
        if value == NONE:
            return None
        index, rest = value.split(" ", 1)
        return int(index), rest.split(": ", 1)[1]

    def _update_attach_modules(self, event: Any) -> None:
        selection = self._free_selection()
        options = list(self.state.fitting_modules(*selection)) if selection else []
        self.attach_module.options = options or [NONE]
        self.attach_button.disabled = not options

    def _attach(self, event: Any) -> None:
        selection = self._free_selection()
        if selection is None or self.attach_module.value == NONE:
            return
        self.state.attach(*selection, self.attach_module.value)

    # -- checking ------------------------------------------------------------------------------------
    def _check(self, event: Any) -> None:
        assembly = self.state.assembly
        if self.task is None:
            return
        if assembly is None:
            self.check_text.content = f"Cannot check: {self.state.error}"
            return
        self.check_button.disabled = True
        self.check_text.content = "checking ..."
        try:
            result = check_design(self.task, assembly, self.state.design, seed=self.seed, cost=self.cost)
        finally:
            self.check_button.disabled = False
        self.check = result
        lines = [f"- {g.text}" for g in result.goals]  # one item per goal, worded as `timor solve` prints it
        self.check_text.content = (
            f"**{result.summary}**\n\n" + "\n".join(lines) + f"\n\n<small>checked in {result.seconds:.2f} s</small>"
        )
        options = [SLIDERS, *(g.id for g in result.goals)]
        self.goal_choice.options = options
        first = next((g for g in result.goals if g.q is not None), None)
        if first is not None:
            self.goal_choice.value = first.id
            self._show_goal(None)

    def _show_goal(self, event: Any) -> None:
        if self._robot is None or self.check is None:
            return
        goal_id = self.goal_choice.value
        if goal_id == SLIDERS:
            self._robot.set_color(ROBOT_COLOR)
            return
        g = self.check.goal(goal_id)
        if g.q is None:
            self._robot.set_color(MISS_COLOR)
            self._notify(event, f"goal {g.id} not reached", g.reason, error=True)
            return
        self._pose(np.asarray(g.q))
        self._robot.set_color(GOAL_COLOR)

    # -- optimizing ----------------------------------------------------------------------------------
    def _optimize(self, event: Any) -> None:
        if self.task is None or (self.run is not None and self.run.running):
            return
        settings = OptimizeSettings(
            generations=int(self.generations.value),
            population=int(self.population.value),
            seed=self.seed,
            cost=self.cost,
        )
        chain = self.state.design.chain if not self.state.design.attachments else None
        self._best_ids = None
        self.run = OptimizeRun(self.task, self.db, chain, settings, on_update=self._on_progress)
        self.optimize_button.disabled = True
        self.stop_button.disabled = False
        self.use_best_button.disabled = True
        self.progress_bar.value = 0.0
        seeded = "from the current design" if self.run.progress.seeded else "from random designs"
        self.progress_text.content = f"starting ({seeded}) ..."
        self.run.start()

    def _stop(self, event: Any) -> None:
        if self.run is not None:
            self.run.stop()
            self.progress_text.content += " (stopping after this generation)"

    def _on_progress(self, p: OptimizeProgress) -> None:
        with self._lock:
            if self._closed:
                return
            self.progress_bar.value = 100.0 * min(p.generation, p.generations) / max(p.generations, 1)
            self.progress_text.content = p.text
            if p.best_ids is not None and p.best_ids != self._best_ids:
                self._show_best(p, p.best_ids)
            if p.done:
                self.optimize_button.disabled = False
                self.stop_button.disabled = True
                self.use_best_button.disabled = p.best_ids is None

    def _show_best(self, p: OptimizeProgress, best_ids: tuple[str, ...]) -> None:
        if self._best is not None:
            self._best.remove()
            self._best = None
        self._best_ids = best_ids
        try:
            assembly = ModuleAssembly.from_serial_modules(self.db, best_ids, self.state.base_placement)
        except TimorError:
            return
        self._best = RobotScene(self.server, assembly.robot, root="/best", color=BEST_COLOR)
        q = next((q for q in p.best_q.values() if q is not None), None)
        if q is not None:
            self._best.update(np.asarray(q))

    def _use_best(self, event: Any) -> None:
        if self.run is None or self.run.progress.best_ids is None:
            return
        self.state.replace(self.run.progress.best_ids)
        if self._best is not None:
            self._best.remove()
            self._best = None
        self.use_best_button.disabled = True

    # -- exporting -----------------------------------------------------------------------------------
    def _export(self, event: Any, label: str) -> None:
        assembly = self.state.assembly
        if assembly is None:
            self._notify(event, "Nothing to export", self.state.error, error=True)
            return
        name, content = export_files(assembly, label)
        event.client.send_file_download(name, content, save_immediately=True)

    # -- lifetime ------------------------------------------------------------------------------------
    def serve(self, on_ready: Callable[[], None] | None = None) -> None:
        """Serve until Ctrl-C, then shut down cleanly; ``on_ready`` runs once Ctrl-C is handled (see Viewer.wait)."""
        try:
            self.viewer.wait(on_ready=on_ready)
        finally:
            self.close()

    def close(self) -> None:
        """Stop a running optimization and the server (safe to call twice)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        if self.run is not None and self.run.running:
            self.run.stop()
            self.run.join(timeout=10.0)
        self.viewer.close()
