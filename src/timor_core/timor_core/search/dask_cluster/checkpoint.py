"""What a search checkpoint records about its search, and the checks on reading one back.

A checkpoint is resumed only for the same search: it records a digest of everything that decides the answer (the
task's content and its mesh assets, the module set's content and meshes, the space and the order it is walked in,
the cost, the filters' settings), and a resume with any of them changed is refused naming what changed (the task's
ID alone let a task changed under the same ID resume and report the old robot). Every number read back must be
finite and within range, else the error names the file and the field.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from timor_core.common import jsonfields as jf
from timor_core.errors import InputError
from timor_core.model.db import ModulesDB
from timor_core.search.dask_cluster.dask_connect import ClusterError
from timor_core.search.filtering.filters import Filter, FilterConfig
from timor_core.task import Task

__all__ = ["CHECKPOINT_VERSION", "DIGEST_NAMES", "changed_parts", "read_checkpoint", "refuse_changed", "search_digests"]

CHECKPOINT_VERSION = 2
"""Version 2 added the digests (a version 1 checkpoint cannot show that it belongs to the search)."""
MAX_COUNT = 2**63 - 1
"""Largest integer in a checkpoint (positions, counts)."""
DIGEST_NAMES = {
    "task": "the task (its content or its mesh assets)",
    "db": "the module set (its content or its meshes)",
    "space": "the search space (its options, order or range)",
    "cost": "the cost",
    "filters": "the filters' settings",
}
"""The parts of a search a checkpoint records, as named when one differs."""


def _digest(*parts: Any, files: Iterable[Path] = ()) -> str:
    h = hashlib.sha256()
    for part in parts:
        h.update(json.dumps(part, sort_keys=True, default=repr).encode())
        h.update(b"\0")
    for path in sorted({Path(p) for p in files}):
        h.update(str(path.name).encode() + b"\0")
        try:
            with path.open("rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    h.update(block)
        except OSError:
            h.update(b"\0missing\0")
    return h.hexdigest()[:32]


def search_digests(
    task: Task, db: ModulesDB, cost: str, config: FilterConfig, filters: Sequence[Filter] | None, space: Any
) -> dict[str, str]:
    """The digest of each part of a search (see :data:`DIGEST_NAMES`); ``space``: what fixes the positions."""
    return {
        "task": _digest(task.to_json_data(), files=(m.path for m in task.meshes() if not m.missing)),
        "db": _digest(db.to_json_data(), files=(m.path for m in db.meshes() if not m.missing)),
        "space": _digest(space),
        "cost": _digest(cost),
        "filters": _digest(config.to_json(), [type(f).__qualname__ for f in filters or ()]),
    }


def changed_parts(recorded: Any, current: dict[str, str]) -> list[str]:
    """The names of the parts whose digest differs from the checkpoint's (every part, if it has none)."""
    recorded = recorded if isinstance(recorded, dict) else {}
    return [DIGEST_NAMES[k] for k in current if recorded.get(k) != current[k]]


def refuse_changed(recorded: Any, current: dict[str, str], path: str | Path | None) -> None:
    """ClusterError naming every part of the search that differs from what the checkpoint recorded."""
    changed = changed_parts(recorded, current)
    if changed:
        raise ClusterError(
            f"the checkpoint is of another search: {', '.join(changed)} changed since it was written"
            " (start a new search, or resume with the same inputs)",
            file=path,
            path="$.digests",
        )


def read_checkpoint(path: Path) -> dict:
    """A checkpoint file's JSON object: its kind and version checked, every number finite and in range."""
    try:
        d = jf.load_json_file(path)
    except InputError as exc:
        raise ClusterError(f"cannot resume from {path}: {exc.message}", file=path) from None
    if not isinstance(d, dict) or d.get("kind") != "timor-search-checkpoint":
        raise ClusterError(f"cannot resume from {path}: not a timor search checkpoint (a JSON object)", file=path)
    if d.get("version") != CHECKPOINT_VERSION:
        raise ClusterError(
            f"cannot resume from {path}: a checkpoint of version {CHECKPOINT_VERSION} is needed (it records the"
            " digests that show it belongs to this search); start the search again",
            file=path,
            path="$.version",
            value=d.get("version"),
        )
    _check_numbers(d, "$", path)
    return d


def _check_numbers(value: Any, where: str, path: Path) -> None:
    """ClusterError naming the file and the JSON path of a number that is not finite or out of range."""
    stack = [(value, where)]
    while stack:
        v, at = stack.pop()
        if isinstance(v, dict):
            stack.extend((x, f"{at}.{k}") for k, x in v.items())
        elif isinstance(v, list):
            stack.extend((x, f"{at}[{i}]") for i, x in enumerate(v))
        elif isinstance(v, bool) or v is None or isinstance(v, str):
            continue
        elif (isinstance(v, float) and not math.isfinite(v)) or not -MAX_COUNT <= v <= MAX_COUNT:
            raise ClusterError(
                f"cannot resume: a number that is not finite or out of range (at most {MAX_COUNT:.3g} in size)",
                file=path,
                path=at,
                value=v if isinstance(v, float) else f"{str(v)[:20]}...",
            )
