"""The base of the search filters (``search.filtering.filters`` lists the default chain): a filter is a small object
with a ``name`` and ``__call__(candidate) -> bool`` that, where it refuses, says why in the candidate."""

from __future__ import annotations

from typing import ClassVar

from timor_core.search.filtering.filter_state import Candidate

__all__ = ["Filter"]


class Filter:
    """A filter: ``name`` and ``__call__(candidate) -> bool``; on failure it calls ``candidate.fail``."""

    name: ClassVar[str] = ""

    def __call__(self, c: Candidate) -> bool:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"
