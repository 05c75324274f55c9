"""The move map of issue 39, item 2: ``timor_core/search/`` split by concern, and the one rewrite of every reference.

``search/`` held 35 modules in one folder. They now live in (each package imports only from those above it here)

* ``timor_core/search/spaces/``            what is searched and in which order: the space rules (``rules``), the
                                           space (``space``), its iteration (``iterator``), the presets, the cost
                                           order (``cost_order``) and index ranges done (``ranges``)
* ``timor_core/search/filtering/``         what rules an assembly out before or while it is built: the filters and
                                           their chain, the funnel, the reach bounds and proofs (``quick_reach``,
                                           ``space_reach``, ``reach_proof``, ``proof_numpy``, ``proof_kernel``,
                                           ``family_proof``) and the certificates shared between workers (``lessons``)
* ``timor_core/search/evaluation/``        an assembly evaluated (``evaluate``), many on local processes
                                           (``parallel``), a sequence under a budget (``optimizer``), the progress
                                           bar and the result
* ``timor_core/search/dask_cluster/``      a Dask cluster as the evaluator (``cluster``, ``dask_connect``,
                                           ``dask_worker``) and the search checkpoints (``checkpoint``)
* ``timor_core/search/exhaustive_search/`` the exhaustive search (``exhaustive``) and its cost order in shards
                                           (``shards``, ``shard_worker``, ``shard_share``, ``local_shards``)
* ``timor_core/search/genetic/``           the GA (``ga``, ``ga_coding``, ``ga_run``, ``ga_local``)

No module is renamed and no package has the name of a module, so a rewritten name is never rewritten again.

Usage (from a repository root; the lead runs the second form on a branch made before the split, then merges)::

    python scripts/move_map_search.py --git-mv .          # do the moves with git mv (once, on the old layout)
    python scripts/move_map_search.py PATH...             # rewrite references old -> new in these files/folders
    python scripts/move_map_search.py --check PATH...     # list the files that still name an old place (exit 1)
    python scripts/move_map_search.py --ruff .venv/bin/ruff PATH...   # rewrite, then sort the imports and format

A file that another branch added to ``search/`` is not in the map: after the merge it still sits in ``search/``;
``git mv`` it to the package of its concern (and add it to MOVES if other branches import it).

The rewrite is textual and touches dotted module names (``timor_core.search.ga_run`` in imports, strings for
``monkeypatch``/``mock.patch``, docstrings), file paths (``timor_core/search/ga.py``, ``search/ga.py``) and, in
Markdown only, the short dotted names of the docs (```search.ga```). The public API ``from timor_core.search
import ...`` (the package ``__init__``) is unchanged; only a module taken from it as an attribute
(``from timor_core.search import cost_order``) is imported from its new package.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import move_map_tool  # beside this script (scripts/)

PACKAGES: dict[str, tuple[str, ...]] = {
    "spaces": ("rules", "iterator", "space", "presets", "cost_order", "ranges"),
    "filtering": (
        "filters", "filter_chain", "filter_state", "funnel", "quick_reach", "space_reach", "reach_proof",
        "proof_numpy", "proof_kernel", "family_proof", "lessons",
    ),
    "evaluation": ("evaluate", "parallel", "optimizer", "progress", "result"),
    "dask_cluster": ("cluster", "dask_connect", "dask_worker", "checkpoint"),
    "exhaustive_search": ("exhaustive", "shards", "shard_worker", "shard_share", "local_shards"),
    "genetic": ("ga", "ga_coding", "ga_run", "ga_local"),
}  # fmt: skip

#: old module under timor_core.search -> new module under timor_core.search
MOVES: dict[str, str] = {m: f"{package}.{m}" for package, modules in PACKAGES.items() for m in modules}

_NAMES = "|".join(sorted(MOVES, key=len, reverse=True))
DOTTED = re.compile(rf"\btimor_core\.search\.({_NAMES})(?!\w)")
PATHS = re.compile(rf"(?<![\w.])((?:timor_core/)?)search/({_NAMES})(?!\w)")
SHORT = re.compile(rf"(?<![\w./])search\.({_NAMES})(?!\w)")  # Markdown only: `search.ga`
#: ``from timor_core.search import cost_order, paper_exp2_space``: a module taken as the package's attribute
FROM_PACKAGE = re.compile(r"^([ \t]*)from timor_core\.search import (\([^)]*\)|[^\n(]*)", re.MULTILINE)
#: names of the public API (search/__init__) that are also module names: the function, not the module
PUBLIC = {"evaluate"}


def _split_package_import(m: re.Match) -> str:
    """A ``from timor_core.search import ...`` naming moved modules: those imported from their new package."""
    indent, names = m.group(1), m.group(2).strip("()")
    items = [n.strip() for n in names.replace("\n", " ").split(",") if n.strip() and not n.strip().startswith("#")]
    moved = [n for n in items if n.split(" as ")[0].strip() in MOVES and n.split(" as ")[0].strip() not in PUBLIC]
    if not moved:
        return m.group(0)
    kept = [n for n in items if n not in moved]
    lines = [f"{indent}from timor_core.search import {', '.join(kept)}"] if kept else []
    for n in moved:
        package = MOVES[n.split(" as ")[0].strip()].split(".")[0]
        lines.append(f"{indent}from timor_core.search.{package} import {n}")
    return "\n".join(lines)


def rewrite(text: str, markdown: bool = False) -> str:
    """The text with every reference to an old place of search/ replaced by the new one."""
    if not markdown:
        text = FROM_PACKAGE.sub(_split_package_import, text)
    text = DOTTED.sub(lambda m: f"timor_core.search.{MOVES[m.group(1)]}", text)
    text = PATHS.sub(lambda m: f"{m.group(1)}search/{MOVES[m.group(2)].replace('.', '/')}", text)
    if markdown:
        text = SHORT.sub(lambda m: f"search.{MOVES[m.group(1)]}", text)
    return text


def git_mv(root: Path) -> None:
    """Move the files of timor_core/search/ to their new packages with git mv (history kept)."""
    pkg = root / "src" / "timor_core" / "timor_core" / "search"
    for folder in PACKAGES:
        (pkg / folder).mkdir(parents=True, exist_ok=True)
    for old, new in MOVES.items():
        target = pkg / (new.replace(".", "/") + ".py")
        subprocess.run(["git", "mv", str(pkg / f"{old}.py"), str(target)], cwd=root, check=True)


def main(argv: list[str] | None = None) -> int:
    return move_map_tool.main(argv, __doc__, rewrite, git_mv, skip=frozenset({"move_map_search.py"}))


if __name__ == "__main__":
    sys.exit(main())
