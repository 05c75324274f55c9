"""Obstacles of a task: collision (and visual) geometry placed in the world."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from timor_core.common import jsonfields as jf
from timor_core.model.geometry import Geometry, geometries_from_json

__all__ = ["Obstacle"]


@dataclass(eq=False)
class Obstacle:
    """A static obstacle; its geometry poses are world poses (as in CoBRA task files)."""

    id: str
    collision: tuple[Geometry, ...]
    visual: tuple[Geometry, ...] | None = None
    name: str | None = None
    extra: dict = field(default_factory=dict)
    _forms: dict = field(default_factory=dict)  # how the JSON wrote the geometry (object or list), for round trips

    @property
    def display_name(self) -> str:
        """The name if set, else the ID."""
        return self.name or self.id

    @classmethod
    def from_json(
        cls, data: Any, path: str, base_dir: Path | None, json_file: Path | None, missing: str = "error"
    ) -> Obstacle:
        """Parse one obstacle; mesh assets resolve relative to the task folder ``base_dir``."""
        d = jf.obj(data, path)
        oid = jf.string(jf.req(d, "ID", path), f"{path}.ID")
        name = d.get("name")
        if name is not None:
            name = jf.string(name, f"{path}.name", nonempty=False)
        collision = geometries_from_json(
            jf.req(d, "collision", path), f"{path}.collision", base_dir, json_file, missing
        )
        visual = None
        if "visual" in d:
            visual = geometries_from_json(d["visual"], f"{path}.visual", base_dir, json_file, missing)
        forms = {k: "object" for k in ("collision", "visual") if isinstance(d.get(k), dict)}
        extra = {k: v for k, v in d.items() if k not in ("ID", "name", "collision", "visual")}
        if "name" in d and name is None:
            extra["_null_name"] = True
        return cls(oid, collision, visual, name, extra, forms)

    def to_json(self) -> dict:
        """The CoBRA JSON of this obstacle."""
        out: dict[str, Any] = {"ID": self.id}
        if self.name is not None or self.extra.get("_null_name"):
            out["name"] = self.name

        def geoms(key: str, gs: tuple[Geometry, ...]):
            items = [g.to_json() for g in gs]
            return items[0] if self._forms.get(key) == "object" and len(items) == 1 else items

        out["collision"] = geoms("collision", self.collision)
        if self.visual is not None:
            out["visual"] = geoms("visual", self.visual)
        out.update({k: v for k, v in self.extra.items() if k != "_null_name"})
        return out
