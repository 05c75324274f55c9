"""``timor ros up``: the modules_db, assembly and search nodes in one process."""

from __future__ import annotations

from collections.abc import Sequence

from .assembly import AssemblyNode
from .common import override
from .modules_db import ModulesDBNode
from .runner import spin_nodes
from .search import SearchNode

__all__ = ["up"]


def up(
    db: str,
    modules: Sequence[str] = (),
    prefix: str = "",
    *,
    editable: bool = False,
    persist: bool = False,
    ros2_control_plugin: str | None = None,
    srdf: bool = True,
    search: bool = True,
    ros_args: Sequence[str] = (),
) -> int:
    """Run the nodes until SIGINT/SIGTERM; 0 after a clean shutdown, 2 if the module set cannot be loaded."""
    db_params = [override("db", db), override("editable", editable), override("persist", persist)]
    asm_params = [override("prefix", prefix), override("srdf", srdf)]
    if modules:
        asm_params.append(override("initial_assembly", list(modules)))
    if ros2_control_plugin:
        asm_params += [override("ros2_control", True), override("ros2_control_plugin", ros2_control_plugin)]
    factories = [ModulesDBNode, AssemblyNode] + ([SearchNode] if search else [])
    overrides = [db_params, asm_params] + ([[]] if search else [])
    return spin_nodes(factories, ["timor", *ros_args], overrides)
