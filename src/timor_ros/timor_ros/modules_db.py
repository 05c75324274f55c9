"""modules_db node: a timor module set served as read-only parameters.

Parameters (all read-only, set at start):
  db            embedded set name (``geometric_primitive_modules``, ``robco_like``) or a modules.json path
  editable      allow adding/replacing modules at runtime through set_parameters (default false)
  persist       with editable: write each accepted edit back to the modules.json, atomically (default false)
Published (read-only):
  module_ids            IDs in set order
  db_name, db_source, db_base_dir, db_ignore_collisions
  modules.<key>         one per module: its CoBRA JSON (``<key>``: timor_ros.parameters.module_param_key)

With ``editable:=true`` the ``modules.*`` parameters are writable: a new or changed module is parsed and
validated with timor_core before it is accepted (a bad one is refused with the reason); ``module_ids`` follows
along. Removing modules is not supported.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import NoReturn

from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter

from timor_core import ModulesDB, TimorError
from timor_core.common.fileio import atomic_write_text
from timor_core.errors import explain

from .common import declare, guarded, param
from .parameters import MODULE_PARAM_PREFIX, db_to_parameters, db_with_module_parameters


class ModulesDBNode(Node):
    def __init__(self, **kwargs) -> None:
        super().__init__("modules_db", allow_undeclared_parameters=True, **kwargs)
        declare(
            self, "db", "geometric_primitive_modules", "embedded module set name or modules.json path", read_only=True
        )
        declare(self, "editable", False, "allow adding/replacing modules.<ID> at runtime", read_only=True)
        declare(self, "persist", False, "write accepted edits back to the modules.json (atomic)", read_only=True)
        self.editable = bool(param(self, "editable"))
        self.persist = bool(param(self, "persist"))
        source = str(param(self, "db"))
        self.db = ModulesDB.load(source)
        if self.persist and (not self.editable or self.db.source is None or _is_embedded(self.db)):
            raise TimorError("persist:=true needs editable:=true and a modules.json file (not an embedded set)")
        self._lock = threading.Lock()
        self._internal = False
        ro = not self.editable
        declare(self, "module_ids", list(self.db.ids), "IDs of the modules, in set order", read_only=ro)
        declare(self, "db_name", self.db.name, "name of the module set", read_only=True)
        declare(self, "db_source", str(self.db.source or ""), "file the set was loaded from", read_only=True)
        declare(self, "db_base_dir", str(self.db.base_dir or ""), "folder mesh paths are relative to", read_only=True)
        declare(self, "db_ignore_collisions", self.db.ignore_collisions, "collision-ignore mode", read_only=True)
        for name, text in db_to_parameters(self.db).items():
            declare(self, name, text, f"CoBRA JSON of module {name[len(MODULE_PARAM_PREFIX) :]}", read_only=ro)
        self.add_pre_set_parameters_callback(
            guarded(self, "set_parameters", lambda _reason, parameters: parameters)(self._add_module_ids)
        )
        self.add_on_set_parameters_callback(
            guarded(self, "set_parameters", lambda reason, _p: SetParametersResult(successful=False, reason=reason))(
                self._validate
            )
        )
        self.get_logger().info(
            f"serving module set {self.db.name!r} ({len(self.db)} modules) from {self.db.source}"
            + (" (editable" + (", persisted)" if self.persist else ")") if self.editable else "")
        )

    # -- runtime edits -----------------------------------------------------------------------------
    def _add_module_ids(self, parameters: list[Parameter]) -> list[Parameter]:
        """Module edits carry the updated ``module_ids`` along, so both change atomically."""
        edits = [p for p in parameters if p.name.startswith(MODULE_PARAM_PREFIX)]
        if not edits or any(p.name == "module_ids" for p in parameters):
            return parameters
        try:
            new, _ = db_with_module_parameters(self.db, {p.name: p.value for p in edits})
        except TimorError:
            return parameters  # _validate refuses it with the reason
        if list(new.ids) != list(self.db.ids):
            self._internal = True
            return [*parameters, Parameter("module_ids", value=list(new.ids))]
        return parameters

    def _validate(self, parameters: list[Parameter]) -> SetParametersResult:
        internal, self._internal = self._internal, False
        edits = {p.name: p.value for p in parameters if p.name.startswith(MODULE_PARAM_PREFIX)}
        others = [p.name for p in parameters if not p.name.startswith(MODULE_PARAM_PREFIX)]
        if not self.editable:
            return SetParametersResult(successful=False, reason="the module set is read-only (editable:=false)")
        if any(n != "module_ids" for n in others) or ("module_ids" in others and not internal):
            return SetParametersResult(
                successful=False, reason=f"only modules.<ID> can be set (refused: {', '.join(others)})"
            )
        if any(p.type_ == Parameter.Type.NOT_SET for p in parameters):
            return SetParametersResult(successful=False, reason="removing modules is not supported")
        if not edits:
            return SetParametersResult(successful=True)
        with self._lock:
            try:
                new, added = db_with_module_parameters(self.db, edits)
            except TimorError as exc:
                self.get_logger().warn(f"set_parameters refused: {explain(exc)}")
                return SetParametersResult(successful=False, reason=explain(exc))
            if self.persist and self.db.source is not None:  # persist needs a file (checked at start-up)
                try:
                    atomic_write_text(Path(self.db.source), new.to_json_string() + "\n")
                except OSError as exc:
                    return SetParametersResult(successful=False, reason=f"cannot write {self.db.source}: {exc}")
            self.db = new
        self.get_logger().info(f"module set updated: {', '.join(edits)} (new: {', '.join(added) or 'none'})")
        return SetParametersResult(successful=True)


def _is_embedded(db: ModulesDB) -> bool:
    from importlib import resources

    root = Path(str(resources.files("timor_core") / "data")).resolve()
    return db.source is not None and Path(db.source).resolve().is_relative_to(root)


def main(argv: list[str] | None = None) -> NoReturn:
    from .runner import exit_now, spin_nodes

    exit_now(spin_nodes([ModulesDBNode], argv if argv is not None else sys.argv))


if __name__ == "__main__":
    sys.exit(main())
