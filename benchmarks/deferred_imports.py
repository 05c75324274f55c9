#!/usr/bin/env python3
"""What each call-time import of timor_core saves at import time: the figures of the deferral table (issue 39, item 3).

    python benchmarks/deferred_imports.py                  # 5 fresh processes per import, a Markdown table
    python benchmarks/deferred_imports.py --runs 3 --json  # JSON on stdout as well

For every import made inside a function body (an AST scan of timor_core, the delegations of docs/architecture.md
left out), one fresh interpreter imports the module that holds it, then the imported module, and reports the CPU
time (``time.process_time``) and wall time of that second import: what the module's own import would cost more if
the import sat at its top. 0 means the module's top-level imports load it already (the call-time import is only
habit). An import of a package that is not installed is reported as missing. Medians over ``--runs`` processes;
the load average is printed beside the figures (the machine is shared). Run it with ``src/timor_core`` compiled
(``python -m compileall``), as a ``pip install`` leaves it.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "timor_core" / "timor_core"
DELEGATING = {  # (module, imported module) of the delegations (docs/architecture.md): call-time by design
    ("timor_core.model.assembly_models", "timor_core.export.formats.urdf"),
    ("timor_core.model.assembly_models", "timor_core.export.formats.xacro"),
    ("timor_core.model.assembly_models", "timor_core.export.formats.srdf"),
    ("timor_core.model.assembly_models", "timor_core.export.formats.mjcf"),
    ("timor_core.model.assembly_models", "timor_core.export.urdf_import.importer"),
    ("timor_core.model.assembly_models", "timor_core.kinematics.build"),
    ("timor_core.kinematics.robot", "timor_core.export.urdf_import.importer"),
    ("timor_core.kinematics.robot", "timor_core.viz.viewer"),
    ("timor_core.task.task", "timor_core.viz.viewer"),
    ("timor_core.task.solution", "timor_core.viz.viewer"),
}
PROBE = r"""
import importlib, json, sys, time
module, target, names = sys.argv[1], sys.argv[2], sys.argv[3:]
importlib.import_module(module)
before = set(sys.modules)
c, w = time.process_time(), time.perf_counter()
try:
    importlib.import_module(target)
    for name in names:  # from X import y, y a module: X.y is loaded too
        try:
            importlib.import_module(f"{target}.{name}")
        except ModuleNotFoundError:
            pass  # y is a name defined in X
    loaded = set(sys.modules) == before
except ImportError as e:
    print(json.dumps({"missing": str(e)}))
else:
    print(json.dumps({"loaded": loaded, "cpu_ms": (time.process_time() - c) * 1e3,
                      "wall_ms": (time.perf_counter() - w) * 1e3}))
"""


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


NAMES: dict[tuple[str, str], set[str]] = {}  # (module, imported module) -> the names imported from it


def call_time_imports() -> dict[tuple[str, str], list[str]]:
    """(module, imported module) -> the ``function:line`` places of every import inside a function body."""
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    found: dict[tuple[str, str], list[str]] = {}

    def visit(node: ast.AST, module: str, function: str | None) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, module, child.name if function is None else f"{function}.{child.name}")
            elif isinstance(child, ast.ImportFrom) and function is not None:
                base = child.module or ""
                subs = [f"{base}.{a.name}" for a in child.names if f"{base}.{a.name}" in modules]
                for target in subs or [base]:
                    found.setdefault((module, target), []).append(f"{function}:{child.lineno}")
                    NAMES.setdefault((module, target), set()).update(a.name for a in child.names)
            elif isinstance(child, ast.Import) and function is not None:
                for alias in child.names:
                    found.setdefault((module, alias.name), []).append(f"{function}:{child.lineno}")
            else:
                visit(child, module, function)

    for path in sorted(PACKAGE.rglob("*.py")):
        visit(ast.parse(path.read_text()), module_name(path), None)
    return {k: v for k, v in found.items() if k not in DELEGATING}


def measure(module: str, target: str, runs: int, names: set[str]) -> dict:
    """Median marginal cost of importing target after module, over fresh processes."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(PACKAGE.parent), os.environ.get("PYTHONPATH", "")]))
    figures = []
    for _ in range(runs):
        probe = [sys.executable, "-c", PROBE, module, target, *sorted(names)]
        run = subprocess.run(probe, capture_output=True, text=True,
                             env=env, timeout=300)  # fmt: skip
        if run.returncode != 0:
            return {"error": run.stderr.strip().splitlines()[-1:]}
        got = json.loads(run.stdout.strip().splitlines()[-1])
        if "missing" in got or got["loaded"]:
            return got | {"cpu_ms": 0.0, "wall_ms": 0.0} if got.get("loaded") else got
        figures.append(got)
    return {"loaded": False, "cpu_ms": statistics.median(f["cpu_ms"] for f in figures),
            "wall_ms": statistics.median(f["wall_ms"] for f in figures), "runs": runs}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per import (default 5)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON on stdout too")
    parser.add_argument("--only", help="only the imports whose 'module target' contains this text")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()[0]
    rows = {}
    for (module, target), places in sorted(call_time_imports().items()):
        if args.only and args.only not in f"{module} {target}":
            continue
        names = NAMES.get((module, target), set())
        rows[f"{module} {target}"] = measure(module, target, args.runs, names) | {"places": places}
        print(f"{module} -> {target}: {rows[f'{module} {target}']}", file=sys.stderr, flush=True)
    print(f"| module | imports at call time | CPU ms saved | wall ms saved |  (load {load_before:.1f} -> "
          f"{os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs, medians of {args.runs})")  # fmt: skip
    print("| --- | --- | ---: | ---: |")
    for key, row in rows.items():
        module, target = key.split()
        cpu = "missing" if "missing" in row else ("error" if "error" in row else f"{row['cpu_ms']:.1f}")
        wall = f"{row['wall_ms']:.1f}" if "wall_ms" in row else "-"
        print(f"| `{module.removeprefix('timor_core.')}` | `{target.removeprefix('timor_core.')}` | {cpu} | {wall} |")
    if args.json:
        print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
