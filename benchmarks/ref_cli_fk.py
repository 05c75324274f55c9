#!/usr/bin/env python3
"""The reference toolbox's equivalent of ``timor fk DB MODULE ...``: the TCP pose of a serial assembly at q = 0,
as JSON on stdout. Run by the reference venv's Python, as a whole process (``benchmarks/cold_start.py``):

    ../refvenv/bin/python benchmarks/ref_cli_fk.py ../shared/data/cobra/modules/IMPROV/modules.json 1 21 4 21 5 23 12

timor-python downloads schemas on import; offline, the shim ``timor_offline`` of ``../shared/bench-ref`` is
imported first when it exists (see benchmarks/README.md).
"""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

SHIM = Path(__file__).resolve().parents[2] / "shared" / "bench-ref"


def main(argv: list[str]) -> int:
    if SHIM.is_dir():
        if str(SHIM) not in sys.path:
            sys.path.insert(0, str(SHIM))
        import timor_offline  # noqa: F401
    import numpy as np
    from timor import ModuleAssembly, ModulesDB

    logging.getLogger("Timor").setLevel(logging.ERROR)  # a warning per body without collision geometry otherwise
    db = ModulesDB.from_json_file(Path(argv[0]))
    robot = ModuleAssembly.from_serial_modules(db, tuple(argv[1:])).robot
    tcp = robot.fk(np.zeros(robot.dof)).homogeneous
    print(json.dumps({"tcp": tcp.tolist()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
