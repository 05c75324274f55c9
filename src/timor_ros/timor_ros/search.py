"""search node: the action ~/search (timor_interfaces/action/Search) runs timor_core's configuration search.

Goals run one at a time in an executor worker thread, with feedback (assemblies evaluated, best cost and
modules so far) and cancellation. With ``apply_result`` the best assembly is sent to the assembly node's
``set_assembly`` service, i.e. applied through the same transaction as any other reconfiguration.
Parameters: modules_db_node (modules_db), assembly_node (assembly; relative names resolve in this node's namespace),
workers (1: in this process),
service_timeout (s), trusted_task_folders (a goal's task_path is opened only inside these; default: the embedded
tasks and the node's working folder).
"""

from __future__ import annotations

import json
import sys
import threading
from typing import NoReturn

from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node
from rclpy.parameter import Parameter

from timor_core import TimorError
from timor_core.errors import explain
from timor_core.task.trusted import trusted_task_path
from timor_interfaces.action import Search
from timor_interfaces.srv import SetAssembly

from .common import ModulesDBClient, ServiceCallError, call_service, declare, guarded, param, resolve_name
from .search_runner import Progress, ids_list, load_task_request, nan_if_none, search

__all__ = ["SearchNode", "main"]


class SearchNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("search", **kwargs)
        declare(self, "modules_db_node", "modules_db", "node serving the module set as parameters", read_only=True)
        declare(self, "assembly_node", "assembly", "node whose set_assembly applies a result", read_only=True)
        declare(self, "workers", 1, "processes evaluating assemblies (1: in this process)", read_only=True)
        declare(self, "service_timeout", 5.0, "seconds to wait for other nodes' services", read_only=True)
        declare(self, "trusted_task_folders", Parameter.Type.STRING_ARRAY, "folders task_path may name", read_only=True)
        self.timeout = float(param(self, "service_timeout"))
        self.workers = int(param(self, "workers"))
        self.trusted = list(param(self, "trusted_task_folders", empty=[]))
        self.db_client = ModulesDBClient(self, str(param(self, "modules_db_node")), self.timeout)
        group = ReentrantCallbackGroup()
        target = resolve_name(self, str(param(self, "assembly_node")))
        self._apply: Client = self.create_client(SetAssembly, f"{target}/set_assembly", callback_group=group)
        self._busy = threading.Lock()
        self._server = ActionServer(
            self,
            Search,
            "~/search",
            execute_callback=guarded(self, "search", self._refuse_goal)(self._execute),
            goal_callback=guarded(self, "search goal", lambda _reason, _goal: GoalResponse.REJECT)(self._on_goal),
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=group,
        )

    def _on_goal(self, _goal: Search.Goal) -> GoalResponse:
        if self._busy.locked():
            self.get_logger().warn("search goal rejected: a search is running")
            return GoalResponse.REJECT
        return GoalResponse.ACCEPT

    def _refuse_goal(self, reason: str, goal_handle) -> Search.Result:
        """A goal whose execution raised: aborted with the reason (never an empty message)."""
        goal_handle.abort()
        return Search.Result(best_cost=float("nan"), message=f"search failed: {reason}")

    def _execute(self, goal_handle) -> Search.Result:
        with self._busy:
            return self._run(goal_handle)

    def _run(self, goal_handle) -> Search.Result:
        goal: Search.Goal = goal_handle.request
        out = Search.Result(best_cost=float("nan"))

        def feedback(p: Progress) -> None:
            goal_handle.publish_feedback(
                Search.Feedback(
                    evaluated=p.evaluated, best_cost=nan_if_none(p.best_cost), best_modules=ids_list(p.best_ids)
                )
            )

        try:
            db = self.db_client.get()
            path = str(trusted_task_path(goal.task_path, self.trusted)) if goal.task_path.strip() else ""
            task = load_task_request(goal.task_json, path, goal.task_name)
            result, canceled = search(
                task,
                db,
                algorithm=goal.algorithm or "exhaustive",
                cost=goal.cost or "mass",
                budget_seconds=goal.budget_seconds,
                budget_evals=goal.budget_evals,
                seed=goal.seed,
                space=goal.space,
                workers=self.workers,
                on_progress=feedback,
                cancel=lambda: goal_handle.is_cancel_requested,
            )
        except (TimorError, ServiceCallError, OSError) as exc:
            out.message = f"search failed: {explain(exc)}"
            self.get_logger().warn(f"search goal refused: {explain(exc)}")
            goal_handle.abort()
            return out
        out.best_modules = ids_list(result.best_ids)
        out.best_cost = nan_if_none(result.best_cost)
        out.result_json = json.dumps(result.to_json_data())
        out.stopped = result.stopped
        out.success = result.found
        out.message = result.summary().splitlines()[1] + f" ({result.evaluations} evaluated, {result.stopped})"
        if canceled:
            goal_handle.canceled()
            return out
        if goal.apply_result and result.found:
            try:
                r = call_service(self._apply, SetAssembly.Request(modules=out.best_modules), self.timeout * 4)
                out.applied = bool(r.success)
                out.message += (
                    f"; applied: {r.message}" if r.success else f"; NOT applied ({r.failed_step}): {r.message}"
                )
            except ServiceCallError as exc:
                out.message += f"; NOT applied: {exc}"
            out.success = out.success and out.applied
        goal_handle.succeed()
        return out


def main(argv: list[str] | None = None) -> NoReturn:
    from .runner import exit_now, spin_nodes

    exit_now(spin_nodes([SearchNode], argv if argv is not None else sys.argv))


if __name__ == "__main__":
    sys.exit(main())
