#!/usr/bin/env python3
"""Reference side of the benchmark: timor-python 1.1.1, run under the reference venv's Python.

    ../refvenv/bin/python benchmarks/ref_worker.py --probe       # can the reference be imported?
    ../refvenv/bin/python benchmarks/ref_worker.py --urdf-all    # URDF of all 20 IMPROV assemblies
    ../refvenv/bin/python benchmarks/ref_worker.py < spec.json   # figures as JSON (what run.py does)

It uses the same harness as our side (``measure`` in run.py, which imports only the standard library
at module level) and never imports timor_core. timor-python downloads schemas and module sets on
import; offline, the shim ``timor_offline`` from ``<repo>/../shared/bench-ref`` (on PYTHONPATH, or
found there) is imported first if it exists.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

import run  # noqa: E402  (the shared harness; stdlib-only at import time)


class RefAdapter:
    """timor-python 1.1.1 through its public API."""

    name = "ref"

    def __init__(self) -> None:
        t0 = run._now()
        _import_reference()
        from timor import ModuleAssembly, ModulesDB

        self.import_ms = run._ms(t0)
        # the reference logs a warning per body without collision geometry on every robot build; writing those
        # to the captured stderr would be timed, so keep its logger to errors (ours does not log while building)
        logging.getLogger("Timor").setLevel(logging.ERROR)
        self.ModulesDB = ModulesDB
        self.ModuleAssembly = ModuleAssembly
        try:
            from importlib.metadata import version

            self.version = version("timor-python")
        except Exception:  # noqa: BLE001
            self.version = "?"

    def load_db(self, path):
        return self.ModulesDB.from_json_file(Path(path))

    def assembly(self, db, ids):
        return self.ModuleAssembly.from_serial_modules(db, ids)

    def urdf(self, A) -> str:
        return A.to_urdf()

    def robot(self, A):
        return A.robot

    def pairs(self, robot) -> int:
        # the reference builds (and filters) its collision pairs inside .robot already
        return len(robot.collision_pairs)

    def limits(self, robot):
        jl = robot.joint_limits
        return jl[0], jl[1]

    def fk(self, robot, q):
        return robot.fk(q)

    def tcp_position(self, robot, q):
        return robot.fk(q).homogeneous[:3, 3]

    def tcp_pose(self, robot, q):
        return robot.fk(q).homogeneous

    # inverse kinematics: PinRobot.ik defaults (ik_method 'jacobian' for six DOF, max_iter=1000 in total over
    # random restarts, ignore_self_collisions=False, i.e. a SelfCollisionFree outer constraint)
    ik_settings = (
        "robot.ik(ToleratedPose): defaults (jacobian method, max_iter=1000, self-colliding solutions rejected);"
        " robot._rng = default_rng(k) before the call"
    )

    def ik_goal(self, T, projections, intervals):
        import numpy as np
        from timor.task import Tolerance
        from timor.utilities.tolerated_pose import ToleratedPose
        from timor.utilities.transformation import Transformation

        # what ToleratedPose.from_json_data builds from toleranceProjection / tolerance (nominal frame)
        tolerance = Tolerance.Composed(
            [
                Tolerance.ToleranceBase.from_projection(p, np.asarray(v, dtype=float))
                for p, v in zip(projections, intervals)
            ]
        )
        return ToleratedPose(Transformation(np.asarray(T, dtype=float)), tolerance)

    def ik(self, robot, goal, seed):
        import numpy as np

        # the reference draws its start and restart configurations from robot._rng (no rng argument)
        robot._rng = np.random.default_rng(seed)
        return robot.ik(goal)

    def ik_valid(self, robot, goal, q) -> bool:
        return bool(goal.valid(robot.fk(q)))

    def self_collision(self, robot, q) -> bool:
        return bool(robot.has_self_collision(q))

    def ngeoms(self, robot) -> int:
        return int(robot.collision.ngeoms)

    def dof(self, robot) -> int:
        return int(robot.dof)


def _import_reference() -> None:
    """``import timor_offline`` (which imports timor) if the shim is reachable, else ``import timor``."""
    try:
        import timor_offline  # noqa: F401
    except ModuleNotFoundError as exc:
        if exc.name != "timor_offline":
            raise
        if run.SHIM_DIR.is_dir():
            sys.path.insert(0, str(run.SHIM_DIR))
            import timor_offline  # noqa: F401
        else:
            import timor  # noqa: F401


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--probe" in argv:
        _import_reference()
        return 0
    return run.worker_main(RefAdapter, argv)


if __name__ == "__main__":
    sys.exit(main())
