#!/usr/bin/env python3
"""The reference toolbox's equivalent of ``timor fk DB MODULE ...`` (the TCP pose of a serial assembly at q = 0,
as JSON) and ``timor urdf DB MODULE ...`` (its URDF), on stdout. Run by the reference venv's Python, as a whole
process (``benchmarks/cold_start.py``):

    ../refvenv/bin/python benchmarks/ref_cli.py fk ../shared/data/cobra/modules/IMPROV/modules.json 1 21 4 21 5 23 12
    ../refvenv/bin/python benchmarks/ref_cli.py urdf ../shared/data/cobra/modules/IMPROV/modules.json 1 21 4 21 5 23 12

timor-python downloads schemas on import; offline, the shim ``timor_offline`` of ``../shared/bench-ref`` is
imported first when it exists (see benchmarks/README.md). Each command imports only what it uses.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

SHIM = Path(__file__).resolve().parents[2] / "shared" / "bench-ref"


def main(argv: list[str]) -> int:
    command, db_file, ids = argv[0], argv[1], tuple(argv[2:])
    if command not in ("fk", "urdf"):
        print("usage: ref_cli.py fk|urdf DB MODULE ...", file=sys.stderr)
        return 2
    if SHIM.is_dir():
        if str(SHIM) not in sys.path:
            sys.path.insert(0, str(SHIM))
        import timor_offline  # noqa: F401
    from timor import ModuleAssembly, ModulesDB

    logging.getLogger("Timor").setLevel(logging.ERROR)  # a warning per body without collision geometry otherwise
    assembly = ModuleAssembly.from_serial_modules(ModulesDB.from_json_file(Path(db_file)), ids)
    if command == "urdf":
        sys.stdout.write(assembly.to_urdf())
        return 0
    import json

    import numpy as np

    robot = assembly.robot
    print(json.dumps({"tcp": robot.fk(np.zeros(robot.dof)).homogeneous.tolist()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
