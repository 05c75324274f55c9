"""Fill numba's cache for the kernels the core test suite compiles with numba although they are built ahead of time
(``make test`` runs this before pytest): the witness descent (``proof_kernel.reach_witness``) and the sweep proof's
bound (``sweep_bound.certain_collision``), which test_proof_aot.py compares with their ahead-built twins. On a fresh
clone numba otherwise compiles them inside that test (~7 CPU-s); afterwards a run loads them from the cache beside
their sources, as every later run does. The reach proofs' other kernels and the IK's are filled by ``load_compiled``
(the Makefile's line before)."""

from __future__ import annotations

import os

os.environ["TIMOR_AHEAD"] = "0"  # numba's kernels, not the ahead-built ones (whose build may be there)
os.environ["TIMOR_COMPILED"] = "1"

import numpy as np  # noqa: E402

from timor_core.search.filtering import proof_kernel as pk  # noqa: E402
from timor_core.search.filtering import sweep_bound as sb  # noqa: E402
from timor_core.search.filtering.proof_numpy import BoxGoal  # noqa: E402
from timor_core.search.filtering.reach_proof import chain_from_frames, chain_poses  # noqa: E402


def main() -> None:
    """Call each kernel once on a 2-joint chain with the argument types the search (and the test) gives it."""
    rng = np.random.default_rng(0)
    tcp = np.eye(4)
    chain = chain_from_frames(rng.normal(size=(2, 3)) * 0.3, rng.normal(size=(2, 3)), tcp)
    at = chain_poses(chain, rng.uniform(-np.pi, np.pi, (1, chain.dof)))
    goal = BoxGoal(at.tcp[0], at.frames[0], 0.002, 0.1, np.zeros(3), 0.0, (0.0, 0.0), 0.0)
    pk.reach_witness(chain.steps, rng.uniform(-np.pi, np.pi, (3, chain.dof)), goal)
    sweep = sb.ArmSweep(chain, rng.normal(size=(2, 3)) * 0.2, rng.integers(0, chain.dof, 2), rng.uniform(0.02, 0.1, 2),
                        np.zeros((0, 3)), np.zeros(0), np.arange(chain.dof), np.ones(chain.dof))  # fmt: skip
    obstacles = sb.ObstacleBoxes(rng.normal(size=(1, 3)) * 0.3, np.eye(3)[None], rng.uniform(0.05, 0.4, (1, 3)))
    sb.certain_collision(
        sweep, obstacles, rng.uniform(-np.pi, np.pi, (4, chain.dof)), np.full((4, chain.dof), 0.1), 0.0
    )


if __name__ == "__main__":
    main()
