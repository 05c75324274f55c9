"""Experiments of the Timor paper, reproduced with timor_core.

Experiment 1 (Külz, Mayer, Althoff: *Timor Python: A Toolbox for Industrial Modular Robotics*, 2023):
enumerate the search space of Althoff et al., Science Robotics 2019, on the IMPROV module set (32,768
six-DOF serial robots) and generate the URDF of every one. The paper reports 127 s, i.e. 3.9 ms per
assembly, with the reference toolbox on an Intel i7-11700KF (:data:`PAPER_EXP1`).

>>> from timor_core import ModulesDB
>>> from timor_core.paper import exp1
>>> result = exp1(ModulesDB.from_json_file("IMPROV/modules.json"))     # doctest: +SKIP
>>> result.count, result.seconds, result.ms_per_assembly                 # doctest: +SKIP
(32768, 10.6, 0.32)

``timor paper exp1 --db IMPROV/modules.json [--json] [--limit N]`` runs the same from the command line.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, replace
from itertools import chain

from .assembly import ModuleAssembly
from .db import ModulesDB
from .errors import InputError
from .search import SearchSpaceError, SerialSpace, science2019_options

__all__ = ["EXP1_COUNT", "PAPER_EXP1", "Exp1Result", "exp1", "exp1_space"]

EXP1_COUNT = 32_768
"""Size of the Science Robotics 2019 IMPROV space."""

PAPER_EXP1 = {"count": EXP1_COUNT, "seconds": 127.0, "ms_per_assembly": 3.9, "cpu": "Intel i7-11700KF"}
"""Experiment 1 as the Timor paper reports it (reference toolbox)."""


@dataclass(frozen=True)
class Exp1Result:
    """What experiment 1 measured: URDFs generated, wall-clock seconds, milliseconds per assembly."""

    count: int
    seconds: float
    ms_per_assembly: float

    def to_json(self) -> dict:
        """``{"count", "seconds", "ms_per_assembly"}``."""
        return asdict(self)

    def summary(self) -> str:
        """One readable line, with the paper's figures for comparison."""
        p = PAPER_EXP1
        return (
            f"experiment 1: {self.count} URDFs of the Science Robotics 2019 IMPROV space in {self.seconds:.2f} s"
            f" ({self.ms_per_assembly:.3f} ms per assembly; paper, reference toolbox on an {p['cpu']}:"
            f" {p['count']} in {p['seconds']:.0f} s, {p['ms_per_assembly']} ms per assembly)"
        )


def exp1_space(db: ModulesDB) -> SerialSpace:
    """The Science Robotics 2019 space on ``db``; InputError unless ``db`` is the IMPROV set (or alike).

    ``db`` must hold every module the space uses (base '1', PB21/PB23, the links, end effector L3)
    and give exactly 32,768 assemblies; the five modules the space leaves out may be absent.
    """
    opt = science2019_options()
    needed = dict.fromkeys(
        chain(opt.bases or (), opt.end_effectors or (), *opt.classes.values(), *(opt.joint_sequences or ()))
    )
    where = f"module set {db.name!r}"
    missing = [m for m in needed if m not in db]
    if missing:
        raise InputError(
            f"{where} is not the IMPROV set: the Science Robotics 2019 space needs modules"
            f" {', '.join(needed)}; missing: {', '.join(missing)}",
            file=db.source,
        )
    opt = replace(opt, exclude=tuple(m for m in opt.exclude if m in db))  # left out anyway: may be absent
    try:
        space = SerialSpace(db, opt)
    except SearchSpaceError as exc:
        raise InputError(f"{where} does not fit the Science Robotics 2019 space: {exc}", file=db.source) from None
    if space.count != EXP1_COUNT:
        raise InputError(
            f"{where} gives {space.count} assemblies in the Science Robotics 2019 space, not {EXP1_COUNT}:"
            " it is not the IMPROV set (modules or connectors differ)",
            file=db.source,
        )
    return space


def exp1(db: ModulesDB, *, limit: int | None = None) -> Exp1Result:
    """Experiment 1: enumerate the space and build the URDF string of every assembly, timed.

    Timed: compiling the space (:func:`exp1_space`), iterating it, and for every assembly
    ``ModuleAssembly.from_serial_modules(db, ids).to_urdf()``. Not timed: loading ``db``.
    ``limit`` stops after the first ``limit`` assemblies of the space's order (quick runs).
    """
    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
        raise InputError("limit must be a positive integer", value=limit)
    t0 = time.perf_counter()
    space = exp1_space(db)
    count = 0
    for ids in space.iter(stop=limit):
        ModuleAssembly.from_serial_modules(db, ids).to_urdf()
        count += 1
    seconds = time.perf_counter() - t0
    return Exp1Result(count=count, seconds=seconds, ms_per_assembly=seconds / count * 1e3)
