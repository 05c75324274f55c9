"""ToleratedPose: a nominal pose (possibly relative to another frame) with a tolerance around it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.errors import FormatError
from timor_core.kinematics.frames import WORLD, FrameTree
from timor_core.kinematics.tolerance import DEFAULT_TOLERANCE, Tolerance, tolerance_from_json

__all__ = ["ToleratedPose"]


@dataclass(eq=False)
class ToleratedPose:
    """A desired pose and the tolerance within which a real pose counts as reaching it."""

    nominal: np.ndarray  # relative to ``parent``
    tolerance: Tolerance = field(default_factory=lambda: DEFAULT_TOLERANCE)
    parent: str = WORLD
    frames: FrameTree | None = None
    has_tolerance: bool = True  # False if the JSON gave none (then the default applies, and is not written)
    extra: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        """A pose relative to a frame must come with the frames that define it: otherwise it would silently be taken
        relative to the world."""
        if self.parent != WORLD and (self.frames is None or self.parent not in self.frames):
            given = "no frames were given" if self.frames is None else "the frames given do not define it"
            raise FormatError(f"nominalParent names an unknown frame ({given})", path="nominalParent",
                              value=self.parent)  # fmt: skip

    @property
    def world(self) -> np.ndarray:
        """The nominal pose in world coordinates."""
        if self.parent == WORLD or self.frames is None:
            return self.nominal
        return self.frames.in_world(self.parent) @ self.nominal

    def valid(self, real: np.ndarray) -> bool:
        """True if the real pose (world coordinates) lies within the tolerance around the nominal pose."""
        return bool(self.tolerance.valid(self.world, real))

    @classmethod
    def from_json(cls, data: Any, path: str, frames: FrameTree | None = None, name: str | None = None) -> ToleratedPose:
        """Parse ``{"nominal": 4x4, "nominalParent"?, "toleranceProjection"?, "tolerance"?}``; register ``name``."""
        d = jf.obj(data, path)
        nominal = jf.pose(jf.req(d, "nominal", path), f"{path}.nominal")
        parent = jf.string(d.get("nominalParent", WORLD), f"{path}.nominalParent")
        if parent != WORLD and (frames is None or parent not in frames):
            given = "no frames were given" if frames is None else "the task defines no such frame"
            raise FormatError(f"nominalParent names an unknown frame ({given})", path=f"{path}.nominalParent",
                              value=parent)  # fmt: skip
        has_tol = "toleranceProjection" in d or "tolerance" in d
        if has_tol:
            tolerance = tolerance_from_json(
                d.get("toleranceProjection", []),
                d.get("tolerance", []),
                path,
                frames=d.get("toleranceFrame"),
                resolve_frame=frames.in_world if frames is not None else None,
            )
        else:
            tolerance = DEFAULT_TOLERANCE
        extra = {
            k: v
            for k, v in d.items()
            if k not in ("nominal", "nominalParent", "toleranceProjection", "tolerance", "toleranceFrame")
        }
        if "toleranceFrame" in d:
            extra["_frames"] = True
        pose = cls(nominal, tolerance, parent, frames, has_tol, extra)
        if frames is not None and name is not None and name not in frames:
            frames.add(name, nominal, parent)
        return pose

    def to_json(self) -> dict:
        """The CoBRA JSON of this pose."""
        out: dict[str, Any] = {"nominal": self.nominal.tolist()}
        if self.parent != WORLD:
            out["nominalParent"] = self.parent
        if self.has_tolerance:
            projections, intervals = self.tolerance.to_json()
            out["toleranceProjection"] = list(projections)
            out["tolerance"] = [list(i) for i in intervals]
            if any(f != "nominal" for f in self.tolerance.frames) or "_frames" in self.extra:
                out["toleranceFrame"] = list(self.tolerance.frames)
        out.update({k: v for k, v in self.extra.items() if k != "_frames"})
        return out
