#!/usr/bin/env python3
"""Experiment 1 of the Timor paper, side by side with the reference toolbox (timor-python 1.1.1) in one run.

    python benchmarks/exp1.py                  # ours over all 32,768, then the reference (3-20 min)
    python benchmarks/exp1.py --limit 500      # quick: the first 500 assemblies on every side
    python benchmarks/exp1.py --json > e.json  # table on stderr, JSON report on stdout
    python benchmarks/exp1.py --no-ref         # our figure only

Experiment 1: enumerate the Science Robotics 2019 IMPROV space (32,768 six-DOF serial robots) and generate
the URDF string of every assembly. The paper: 127 s, 3.9 ms per assembly (reference, i7-11700KF).

- **ours**: the CLI path, ``timor paper exp1 --db IMPROV/modules.json --json`` in a fresh process
  (``python -m timor_core.cli.app``, the repository's source first on PYTHONPATH): compiling the space,
  iterating it, ``urdf_of_serial(db, ids)`` for every assembly (the text of ``from_serial_modules`` +
  ``to_urdf``, from strings compiled per module set).
- **ours, API**: the same loop with ``ModuleAssembly.from_serial_modules(db, ids).to_urdf()`` (an assembly
  object per robot, as on the reference's line), in a fresh process.
- **ref, same robots**: the same tuples of module IDs (our space's order) through the reference's
  ``ModuleAssembly.from_serial_modules(db, ids).to_urdf()``. First a fixed sample (every k-th position,
  at most 4,096 assemblies spread over the space), then, if the projected total fits ``--ref-budget``
  seconds, all the others too (each assembly once: the total is measured, not projected); otherwise the
  total is extrapolated from the sample and the report says so.
- **ref, own iterator**: the reference's ``configuration_search.LiuIterator.Science2019`` + ``to_urdf``
  for the same count. It cannot express the Science 2019 rules (joint order, link patterns), so it runs
  on the 11 modules the space uses with six DOF, at most 3 links between joints and at most 1 before the
  end effector: the closest superset it can describe. Its ``len()`` (and that of its default
  configuration) is reported; the measured assemblies are its first ones, in its depth-first order
  (the same first-sample-then-continue budget rule applies). The report says how many of them lie in
  the Science 2019 space and how long they are.

The reference side runs under the reference interpreter (``run.resolve_ref_python``: ../refvenv) as
``exp1.py --ref-worker`` with ``ref_worker.RefAdapter`` and its offline shim; this file imports only
the standard library and ``run`` at module level (``ref_worker`` inside the worker), so that interpreter can load it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import run  # noqa: E402  (the shared benchmark helpers; stdlib-only at import time)

FULL_COUNT = 32_768
SAMPLE = 4_096  # at most this many assemblies in the first (sample) pass of a reference measurement
REF_BUDGET_S = 480.0  # run a reference measurement on all assemblies only if it is projected to fit this
ITER_OPTIONS = {  # the reference iterator's closest superset of the Science 2019 space
    "min_dof": 6,
    "max_dof": 6,
    "max_links_between_joints": 3,
    "max_links_before_first_joint": 0,
    "max_links_after_last_joint": 1,
}


# -- the reference worker (runs under the reference interpreter) --------------------------------------
def ref_measure(spec: dict) -> dict:
    """Time the reference on ``spec['mode']``: ``same`` (our tuples) or ``iter`` (its Science2019 iterator).

    ``seconds`` / ``cpu_seconds``: wall-clock / CPU time of the timed parts, summed over the assemblies (or
    projected from the first pass when ``extrapolated``).
    """
    import ref_worker

    ad = ref_worker.RefAdapter()  # imports the reference through the offline shim, quiets its logger
    db = ad.load_db(spec["modules_json"])
    count, budget = int(spec["count"]), float(spec["budget_s"])
    out: dict = {"version": ad.version, "python": platform.python_version(), "mode": spec["mode"], "count": count}
    if spec["mode"] == "same":
        ids_list = [tuple(a) for a in spec["assemblies"]][:count]
        step = max(1, math.ceil(count / SAMPLE))
        first = set(range(0, count, step))
        clock = _Clock()
        for i in sorted(first):
            clock.urdf(ad, db, ids_list[i])
        out.update(sample_step=step, sample_count=len(first), sample_seconds=clock.wall)
        scale = count / len(first)
        if scale > 1 and clock.wall * scale <= budget:
            for i in range(count):
                if i not in first:
                    clock.urdf(ad, db, ids_list[i])
            scale = 1.0
        out.update(measured=clock.n, extrapolated=scale > 1, **clock.figures(scale))
        return out

    from timor.configuration_search.LiuIterator import Science2019

    keep = set(spec["keep_modules"])
    sub = ad.ModulesDB([m for m in db if m.id in keep], name=db.name)
    out["default_len"] = len(Science2019(db))  # on the whole IMPROV set, default options (not timed)
    out["options"] = ITER_OPTIONS
    clock = _Clock()
    it = clock.build(lambda: Science2019(sub, **ITER_OPTIONS))
    out["len"] = len(it)
    ids: list = []
    n_first = min(count, SAMPLE)
    clock.iterate(it, n_first, ids)
    out.update(sample_count=clock.n, sample_seconds=clock.wall)
    scale = count / clock.n if clock.n == n_first else 1.0
    if clock.n < n_first:  # the iterator ran out: report what it yielded
        out.update(count=clock.n, exhausted=True)
    if scale > 1 and clock.build_wall + (clock.wall - clock.build_wall) * scale <= budget:
        clock.iterate(it, count - n_first, ids)
        scale = 1.0
    out.update(measured=clock.n, extrapolated=scale > 1, build_seconds=clock.build_wall, **clock.figures(scale))
    out["ids"] = ids
    return out


class _Clock:
    """Wall-clock and CPU seconds of the timed parts, summed; for the iterator also ``next()`` alone."""

    def __init__(self) -> None:
        self.n = 0
        self.wall = self.cpu = self.next_wall = self.build_wall = self.build_cpu = 0.0

    def _add(self, t0: float, c0: float) -> None:
        self.wall += time.perf_counter() - t0
        self.cpu += time.process_time() - c0

    def urdf(self, ad, db, ids) -> None:
        t0, c0 = time.perf_counter(), time.process_time()
        ad.urdf(ad.assembly(db, ids))
        self._add(t0, c0)
        self.n += 1

    def build(self, make):
        t0, c0 = time.perf_counter(), time.process_time()
        obj = make()
        self._add(t0, c0)
        self.build_wall, self.build_cpu = self.wall, self.cpu
        return obj

    def iterate(self, it, n: int, ids_out: list) -> None:
        """``n`` times: the iterator's next assembly and its URDF (timed), its module IDs (not timed)."""
        for _ in range(n):
            t0, c0 = time.perf_counter(), time.process_time()
            try:
                A = next(it)
            except StopIteration:
                break
            t1 = time.perf_counter()
            A.to_urdf()
            self._add(t0, c0)
            self.next_wall += t1 - t0
            self.n += 1
            ids_out.append(list(A.original_module_ids))

    def figures(self, scale: float) -> dict:
        """Totals, the per-assembly part multiplied by ``scale`` (1: measured; > 1: extrapolated)."""
        out = {
            "seconds": self.build_wall + (self.wall - self.build_wall) * scale,
            "cpu_seconds": self.build_cpu + (self.cpu - self.build_cpu) * scale,
        }
        if self.next_wall:
            out["next_seconds"] = self.next_wall * scale
        return out


def ref_worker_main() -> int:
    spec = json.loads(sys.stdin.read())
    sys.stdout.write(json.dumps(ref_measure(spec)) + "\n")
    return 0


# -- the driver (runs under the project's interpreter) -------------------------------------------------
def run_ours(limit: int | None) -> tuple[dict | None, str]:
    """``timor paper exp1 --db IMPROV --json`` in a fresh process; its JSON plus the whole process's wall-clock
    and CPU time (import and DB load included)."""
    _, env = run.ours_command()  # the repository's source first on PYTHONPATH
    cmd = [sys.executable, "-m", "timor_core.cli", "paper", "exp1", "--db", str(run.IMPROV_JSON), "--json"]
    if limit:
        cmd += ["--limit", str(limit)]
    t0, r0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, cwd=str(run.REPO), timeout=run.WORKER_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    wall, r1 = time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return None, f"exit code {proc.returncode}: {proc.stderr.strip()[-2000:]}"
    out = json.loads(lines[-1])
    out.update(command=" ".join(["python", *cmd[1:]]), process_seconds=wall, process_cpu_seconds=cpu)
    return out, ""


API_SNIPPET = """
import json, logging, sys, time
from timor_core.model.assembly import ModuleAssembly
from timor_core.model.db import ModulesDB
from timor_core.paper.experiments import exp1_space
logging.getLogger("timor_core").setLevel(logging.ERROR)
db = ModulesDB.from_json_file(sys.argv[1])
limit = int(sys.argv[2]) if len(sys.argv) > 2 else None
t0, count = time.perf_counter(), 0
for ids in exp1_space(db).iter(stop=limit):
    ModuleAssembly.from_serial_modules(db, ids).to_urdf()
    count += 1
seconds = time.perf_counter() - t0
print(json.dumps({"count": count, "seconds": seconds, "ms_per_assembly": seconds / count * 1e3}))
"""


def run_ours_api(limit: int | None) -> tuple[dict | None, str]:
    """Our general API on the same loop, in a fresh process: ``ModuleAssembly.from_serial_modules(db, ids).to_urdf()``
    (an assembly object per robot, as the reference's line does; ``to_urdf`` routes serial chains to the same
    compiled writer)."""
    _, env = run.ours_command()
    cmd = [sys.executable, "-c", API_SNIPPET, str(run.IMPROV_JSON)] + ([str(limit)] if limit else [])
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, cwd=str(run.REPO), timeout=run.WORKER_TIMEOUT
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        return None, f"exit code {proc.returncode}: {proc.stderr.strip()[-2000:]}"
    return json.loads(lines[-1]), ""


def science_space():
    """Our Science 2019 space on IMPROV, the IDs of the modules it uses, and the paper's figures."""
    import logging

    from timor_core.model.db import ModulesDB
    from timor_core.paper.experiments import PAPER_EXP1, exp1_space

    logging.getLogger("timor_core").setLevel(logging.ERROR)  # IMPROV's L6 inertia warning, as in the CLI
    space = exp1_space(ModulesDB.from_json_file(run.IMPROV_JSON))
    used = sorted({m for ids in space for m in ids}, key=lambda m: (len(m), m))
    return space, used, PAPER_EXP1


def _line(label: str, fig: dict | None, ours_ms: float | None, note: str = "") -> str:
    if not fig:
        return f"{label:<48} {'-':>7} {'-':>10} {'-':>10} {'-':>9}  {note}"
    ms = fig["seconds"] / fig["count"] * 1e3
    ratio = f"{ms / ours_ms:.1f}x" if ours_ms else "-"
    return f"{label:<48} {fig['count']:>7} {fig['seconds']:>10.2f} {ms:>10.3f} {ratio:>9}  {note}"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] == "--ref-worker":
        return ref_worker_main()
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--limit", type=int, default=None, help="only the first N assemblies on every side (quick runs)")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout (the table on stderr)")
    p.add_argument("--no-ref", action="store_true", help="measure our side only")
    p.add_argument("--ref-python", default=None, help="reference interpreter (default $TIMOR_REF_PYTHON or ../refvenv)")
    p.add_argument(
        "--ref-budget",
        type=float,
        default=REF_BUDGET_S,
        help=f"a reference measurement covers all assemblies if projected to fit (default {REF_BUDGET_S:g} s)",
    )
    args = p.parse_args(argv)
    if args.limit is not None and args.limit < 1:
        p.error("--limit must be a positive integer")
    table_out = sys.stderr if args.json else sys.stdout
    if not run.IMPROV_JSON.is_file():
        run.log(f"SKIPPED: the IMPROV module set is not at {run.IMPROV_JSON}; nothing measured.")
        if args.json:
            print(json.dumps({"skipped": f"IMPROV module set missing: {run.IMPROV_JSON}"}))
        return 0

    library = run.git_state()
    space, used, paper = science_space()
    count = min(args.limit or len(space), len(space))
    errors: dict = {}

    run.log(f"[ours] timor paper exp1 over {count} assemblies ...")
    ours, err = run_ours(args.limit)
    if err:
        errors["ours"] = err
    run.log(f"[ours] the general API, from_serial_modules + to_urdf, over {count} assemblies ...")
    api, err = run_ours_api(args.limit)
    if err:
        errors["ours api"] = err

    ref_python, ref_error = (None, "--no-ref given") if args.no_ref else run.resolve_ref_python(args.ref_python)
    if ref_python:
        cmd, env = run.ref_command(ref_python)
        probe = subprocess.run(cmd + ["--probe"], capture_output=True, text=True, env=env, cwd=str(run.REPO))
        if probe.returncode != 0:
            ref_python, ref_error = None, f"{ref_python} cannot import timor-python: {probe.stderr.strip()[-500:]}"
    same = it = None
    if ref_python:
        _, env = run.ref_command(ref_python)
        cmd = [ref_python, str(Path(__file__).resolve()), "--ref-worker"]
        base = {"modules_json": str(run.IMPROV_JSON), "count": count, "budget_s": args.ref_budget}
        run.log(f"[ref] the same {count} assemblies: from_serial_modules + to_urdf ...")
        same, err = run.run_worker(
            cmd, {**base, "mode": "same", "assemblies": [list(space[i]) for i in range(count)]}, env
        )
        if err:
            errors["ref same"] = err
        run.log(f"[ref] its Science2019 iterator + to_urdf, {count} assemblies ...")
        it, err = run.run_worker(cmd, {**base, "mode": "iter", "keep_modules": used}, env)
        if err:
            errors["ref iter"] = err
    else:
        run.log(f"REFERENCE NOT AVAILABLE ({ref_error}); reporting our figure only.")

    ours_ms = ours["ms_per_assembly"] if ours else None
    iter_info = None
    if it:
        in_space = sum(1 for ids in it["ids"] if ids in space)
        lengths = [len(ids) for ids in it["ids"]]
        iter_info = {
            "in_science2019_space": in_space,
            "mean_modules": sum(lengths) / max(1, len(lengths)),
            "yields_32768": it["len"] == FULL_COUNT,
        }
    mean_ours = sum(len(space[i]) for i in range(count)) / count

    print(file=table_out)
    print(
        f"experiment 1 | timor_core ({library}, Python {platform.python_version()}) vs timor-python"
        f" {(same or it or {}).get('version', '(not measured)')} | {os.cpu_count()} CPUs | paper (reference on an"
        f" {paper['cpu']}): {paper['count']} in {paper['seconds']:g} s, {paper['ms_per_assembly']} ms per assembly",
        file=table_out,
    )
    head = f"{'':<48} {'count':>7} {'seconds':>10} {'ms/assem.':>10} {'ref/ours':>9}"
    print(head + "\n" + "-" * (len(head) + 2), file=table_out)
    print(_line("ours: timor paper exp1 (CLI)", ours, None), file=table_out)
    api_note = ""
    if api and same:
        api_ms = api["seconds"] / api["count"] * 1e3
        api_note = f"ref same assemblies / this: {same['seconds'] / same['count'] * 1e3 / api_ms:.1f}x"
    print(_line("ours: from_serial_modules+to_urdf (API)", api, None, api_note), file=table_out)
    if ref_python:
        note = ""
        if same and same["extrapolated"]:
            note = f"EXTRAPOLATED from {same['sample_count']} (every {same['sample_step']}th)"
        print(_line("ref: same assemblies, from_serial_modules+urdf", same, ours_ms, note), file=table_out)
        note = ""
        if it and it["extrapolated"]:
            note = f"EXTRAPOLATED from its first {it['sample_count']}"
        print(_line("ref: its Science2019 iterator + to_urdf", it, ours_ms, note), file=table_out)
    print(file=table_out)
    if ours:
        print(
            f"ours: whole process (import, DB load, run) {ours['process_seconds']:.1f} s wall,"
            f" {ours['process_cpu_seconds']:.1f} s CPU; mean {mean_ours:.2f} modules per assembly;"
            f" command: {ours['command']}",
            file=table_out,
        )
    if ours and (same or it):  # other jobs on a shared machine inflate wall-clock time, CPU time much less
        ours_cpu = ours["process_cpu_seconds"] / ours["count"] * 1e3
        parts = [f"ours {ours_cpu:.3f} (whole process, an upper bound)"]
        for label, fig in (("ref same assemblies", same), ("ref iterator", it)):
            if fig:
                ms = fig["cpu_seconds"] / fig["count"] * 1e3
                parts.append(f"{label} {ms:.3f} ({ms / ours_cpu:.1f}x)")
        print("CPU time, ms per assembly: " + "; ".join(parts), file=table_out)
    if it and "next_seconds" in it:
        ms_next = it["next_seconds"] / it["count"] * 1e3
        ms_all = it["seconds"] / it["count"] * 1e3
        print(
            f"ref iterator, ms per assembly: next() {ms_next:.2f} (includes its from_serial_modules),"
            f" to_urdf {ms_all - ms_next:.2f}",
            file=table_out,
        )
    if it:
        print(
            f"ref iterator: Science2019(IMPROV restricted to {', '.join(used)}, {ITER_OPTIONS}) has len"
            f" {it['len']}{' (= 32768)' if iter_info['yields_32768'] else ' -- NOT 32768'}; with default options on"
            f" the whole IMPROV set: {it['default_len']}. Of the {len(it['ids'])} assemblies it yielded here,"
            f" {iter_info['in_science2019_space']} lie in the Science 2019 space; mean"
            f" {iter_info['mean_modules']:.2f} modules per assembly (ours: {mean_ours:.2f}).",
            file=table_out,
        )
    for what, err in errors.items():
        print(f"ERROR in '{what}': {err}", file=table_out)

    if args.json:
        if it:
            it = {k: v for k, v in it.items() if k != "ids"}
        report = {
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
            "command": " ".join([Path(sys.executable).name, "benchmarks/exp1.py", *argv]),
            "library": library,
            "paper": paper,
            "ours": ours,
            "ours_api": api,
            "ours_mean_modules": mean_ours,
            "ref_same": same,
            "ref_iter": it,
            "ref_iter_info": iter_info,
            "reference_python": ref_python,
            "reference_error": None if ref_python else ref_error,
            "errors": errors,
        }
        print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
