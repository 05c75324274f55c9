#!/usr/bin/env python3
"""Run a command and report its wall time and the CPU time of every process it started, orphans included.

    python benchmarks/reap.py python -m pytest -q src/timor_core/tests/test_dask_search.py

This process makes itself a child subreaper (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): processes whose parent ends
before them (a multiprocessing fork server and the Dask workers forked from it) are handed to it, and it waits for
them all, so their user+sys time is counted in its ``RUSAGE_CHILDREN``; ``/usr/bin/time`` counts only the processes
that were waited for by their own parents. Prints one line on stderr: ``REAP rc R wall W (all ended A) cpu C user U
sys S load L``.
"""

from __future__ import annotations

import ctypes
import os
import resource
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def main(argv: list[str]) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise SystemExit("prctl(PR_SET_CHILD_SUBREAPER) failed: Linux only")
    t0 = time.perf_counter()
    rc = subprocess.call(argv)
    wall = time.perf_counter() - t0
    while True:  # the orphans handed to this process: wait for them too
        try:
            os.wait()
        except ChildProcessError:
            break
    ended = time.perf_counter() - t0
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    print(
        f"REAP rc {rc} wall {wall:.2f} (all ended {ended:.2f}) cpu {u.ru_utime + u.ru_stime:.2f} user {u.ru_utime:.2f}"
        f" sys {u.ru_stime:.2f} load {os.getloadavg()[0]:.2f}",
        file=sys.stderr,
    )
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
