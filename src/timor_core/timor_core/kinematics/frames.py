"""Named frames of a task: ``world`` plus user frames (``frames`` in the task JSON), goal frames
(``goal.<ID>``) and the base constraint's frame (``constraint.base``), so a pose can be given
relative to another frame (``nominalParent``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from timor_core.common import jsonfields as jf
from timor_core.common.transforms import IDENTITY
from timor_core.errors import FormatError, ValidationError

__all__ = ["Frame", "FrameTree", "WORLD"]

WORLD = "world"


@dataclass(frozen=True, eq=False)
class Frame:
    """A frame: its pose relative to its parent frame."""

    name: str
    parent: str
    transform: np.ndarray

    def __eq__(self, other: object) -> bool:
        """Same name and parent, and the same transform up to 1e-9."""
        if not isinstance(other, Frame):
            return NotImplemented
        return (
            self.name == other.name
            and self.parent == other.parent
            and bool(np.allclose(self.transform, other.transform, atol=1e-9))
        )

    __hash__ = None  # type: ignore[assignment]  # holds an array


class FrameTree:
    """Frames by name, each relative to a parent; ``world`` is the root."""

    def __init__(self) -> None:
        self._frames: dict[str, Frame] = {}
        self._world_cache: dict[str, np.ndarray] = {}

    @classmethod
    def from_json(cls, data: Any, path: str = "$.frames") -> FrameTree:
        """Parse ``{"name": {"parent": "...", "transformation": 4x4}}`` (parents may come in any order)."""
        tree = cls()
        d = jf.obj(data, path)
        pending = {}
        for name, spec in d.items():
            fp = f"{path}.{name}"
            if name == WORLD or "." in name or name == "nominal":
                raise ValidationError("reserved frame name ('world', 'nominal' or containing '.')", path=fp, value=name)
            spec = jf.obj(spec, fp)
            parent = jf.string(spec.get("parent", WORLD), f"{fp}.parent")
            T = jf.pose(spec["transformation"], f"{fp}.transformation") if "transformation" in spec else IDENTITY
            pending[name] = (parent, T)
        while pending:
            ready = [n for n, (p, _) in pending.items() if p == WORLD or p in tree._frames]
            if not ready:
                name = next(iter(pending))
                raise ValidationError(
                    "frame parent is unknown or the frames form a cycle",
                    path=f"{path}.{name}.parent",
                    value=pending[name][0],
                )
            for n in ready:
                parent, T = pending.pop(n)
                tree.add(n, T, parent)
        return tree

    def to_json(self) -> dict:
        """User frames only (names without a '.'); goal and constraint frames are written by their owners."""
        return {
            f.name: {"parent": f.parent, "transformation": f.transform.tolist()}
            for f in self._frames.values()
            if "." not in f.name
        }

    def add(self, name: str, transform: np.ndarray, parent: str = WORLD) -> Frame:
        """Add a frame; its parent must exist."""
        if name in self._frames or name == WORLD:
            raise ValidationError("frame defined twice", value=name)
        if parent != WORLD and parent not in self._frames:
            raise FormatError("unknown parent frame", value=parent)
        frame = Frame(name, parent, np.asarray(transform, dtype=float))
        self._frames[name] = frame
        self._world_cache.clear()
        return frame

    def __getitem__(self, name: str) -> Frame:
        """The frame called ``name`` (``world`` is the identity at the root)."""
        if name == WORLD:
            return Frame(WORLD, WORLD, IDENTITY)
        try:
            return self._frames[name]
        except KeyError:
            raise FormatError("unknown frame", value=name) from None

    def __iter__(self) -> Iterator[Frame]:
        """The frames but world, in the order they were added (parents before children)."""
        return iter(self._frames.values())

    def __eq__(self, other: object) -> bool:
        """Same frame names, each with the same parent and (up to 1e-9) the same transform."""
        if not isinstance(other, FrameTree):
            return NotImplemented
        if self._frames.keys() != other._frames.keys():
            return False
        return all(
            f.parent == other._frames[n].parent and np.allclose(f.transform, other._frames[n].transform, atol=1e-9)
            for n, f in self._frames.items()
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __contains__(self, name: object) -> bool:
        return name == WORLD or name in self._frames

    def __len__(self) -> int:
        return len(self._frames)

    def names(self) -> list[str]:
        """Names of all frames but world."""
        return list(self._frames)

    def in_world(self, name: str) -> np.ndarray:
        """The pose of a frame in the world."""
        if name == WORLD:
            return IDENTITY
        cached = self._world_cache.get(name)
        if cached is None:
            try:
                frame = self._frames[name]
            except KeyError:
                raise FormatError("unknown frame", value=name) from None
            cached = self.in_world(frame.parent) @ frame.transform
            self._world_cache[name] = cached
        return cached
