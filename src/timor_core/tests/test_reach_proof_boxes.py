"""The reach proof's boxes (search.reach_proof, proof_numpy, proof_kernel): a box of a random chain is refused only
by what it spares, halving tiles each box, and the compiled bounds are numpy's (without numba too)."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reach_cases import BOX_CASES, DBS, SPACES, TOLERANCES
from scipy.spatial.transform import Rotation

from timor_core import ModuleAssembly
from timor_core.kinematics.reach import position_slack
from timor_core.search.filtering.proof_kernel import halve_boxes, use_compiled
from timor_core.search.filtering.proof_numpy import halve_boxes_numpy
from timor_core.search.filtering.reach_proof import box_excess, chain_poses, pose_chain, rotation_slack


@pytest.fixture(scope="module", autouse=True)
def _default_bounds():
    """The tests below choose the numpy or the compiled bounds; the rest of the suite gets the default rule."""
    yield
    use_compiled(None)


@settings(max_examples=60, deadline=None)
@BOX_CASES
def test_a_box_is_refused_only_by_what_it_spares(name, pick, seed, width, tolerance, compiled):
    """The bound behind every cut (:func:`box_excess`), checked against the chain's own poses: wherever a
    configuration of a refused box has the TCP's rotation within the tolerance's angle, its TCP is farther than the
    slack plus the box's excess from the goal, or its last joint's origin that far from where it would have to be
    (the margin certificates rely on); no such configuration is in a box refused by orientation (inf). Both the
    numpy and the compiled bounds."""
    use_compiled(compiled)
    space = SPACES[name]
    rng = np.random.default_rng(seed)
    robot = ModuleAssembly.from_serial_modules(DBS[name], space[int(pick * space.count)]).robot
    chain = pose_chain(robot)
    if chain is None:
        return
    n, tol = chain.dof, TOLERANCES[tolerance]
    centres = rng.uniform(-np.pi, np.pi, (16, n))
    half = rng.uniform(0, width, (16, n))
    q = centres[:, None, :] + half[:, None, :] * rng.uniform(-1, 1, (16, 32, n))
    q[:, 0] = centres + half * rng.choice([-1.0, 1.0], (16, n))  # a corner of each box
    at = chain_poses(chain, q.reshape(-1, n))
    # a goal near one of the sampled poses, turned by less than the tolerance allows: many samples are within it
    k = rng.integers(len(at.tcp))
    goal = np.eye(4)
    goal[:3, :3] = at.frames[k].T @ Rotation.from_rotvec(rng.normal(size=3) * 0.2).as_matrix()
    goal[:3, 3] = at.tcp[k] + rng.normal(size=3) * rng.choice([0.001, 0.05, 0.3])
    excess = np.repeat(box_excess(chain, goal, tol, centres, half), 32)
    turned = Rotation.from_matrix(np.einsum("mkj,jl->mkl", at.frames, goal[:3, :3])).magnitude()
    upright = turned <= rotation_slack(tol)
    assert not np.any(upright & np.isinf(excess))
    slack = position_slack(tol)
    miss = np.linalg.norm(at.tcp - goal[:3, 3], axis=1) - slack
    # the last joint's origin must be |offset| from the goal, within the tolerance's angle of R_g offset: a cap
    y = at.wrist - goal[:3, 3]
    length, direction = np.linalg.norm(chain.offset), goal[:3, :3] @ chain.offset
    off = np.arccos(np.clip(y @ direction / np.maximum(np.linalg.norm(y, axis=1) * length, 1e-300), -1, 1))
    beyond = np.maximum(off - rotation_slack(tol), 0.0)
    to_cap = np.sqrt(
        np.maximum((y**2).sum(axis=1) + length**2 - 2 * np.linalg.norm(y, axis=1) * length * np.cos(beyond), 0)
    )
    wrist_miss = to_cap - slack
    checked = upright & np.isfinite(excess) & (excess > 0)
    assert np.all(np.maximum(miss, wrist_miss)[checked] >= excess[checked] - 1e-9)


@settings(max_examples=60, deadline=None)
@given(
    n=st.integers(1, 6),
    m=st.integers(1, 5),
    times=st.integers(1, 4),
    shared=st.booleans(),
    seed=st.integers(0, 2**31),
    compiled=st.booleans(),
)
def test_halving_tiles_each_box(n, m, times, shared, seed, compiled):
    """The proof refuses a box only through its children, so they must cover it: each box's ``2**times`` children
    lie inside it, fill its volume, and every point of it is in one of them; each cut halves a side of largest
    half-width times weight (:func:`halve_boxes`, numpy and compiled, against a plain reading of that rule)."""
    use_compiled(compiled)
    rng = np.random.default_rng(seed)
    centres, half = rng.uniform(-3, 3, (m, n)), rng.uniform(0.01, 3, (m, n))
    weights = rng.uniform(0.0, 1.0, n if shared else (m, n))
    children, child_half = halve_boxes(centres, half, weights, times)
    k = 2**times
    assert children.shape == child_half.shape == (m * k, n)
    for b in range(m):
        kids, kid_half = children[b * k : (b + 1) * k], child_half[b * k : (b + 1) * k]
        assert np.all(kids - kid_half >= centres[b] - half[b] - 1e-12)
        assert np.all(kids + kid_half <= centres[b] + half[b] + 1e-12)
        assert np.isclose(np.prod(2 * kid_half, axis=1).sum(), np.prod(2 * half[b]))
        points = centres[b] + half[b] * rng.uniform(-1, 1, (64, n))
        inside = np.all(np.abs(points[:, None, :] - kids[None]) <= kid_half[None] + 1e-12, axis=2)
        assert inside.any(axis=1).all()
        h, w = half[b].copy(), weights if shared else weights[b]
        for _ in range(times):
            side = int(np.argmax(h * w))
            h[side] /= 2
        assert np.allclose(kid_half, h)


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(sorted(DBS)),
    pick=st.floats(0, 1, exclude_max=True),
    seed=st.integers(0, 2**31),
    width=st.sampled_from([0.01, 0.3, math.pi]),
    tolerance=st.sampled_from(sorted(TOLERANCES)),
)
def test_the_compiled_bounds_are_the_numpy_bounds(name, pick, seed, width, tolerance):
    """The compiled bounds and halving (box by box) give what the numpy ones (arrays of boxes) give: the same boxes
    refused by orientation, the same excess up to rounding (arccos near 1: ~1e-7), the same cut sides and
    children."""
    space = SPACES[name]
    rng = np.random.default_rng(seed)
    chain = pose_chain(ModuleAssembly.from_serial_modules(DBS[name], space[int(pick * space.count)]).robot)
    if chain is None:
        return
    n = chain.dof
    centres, half = rng.uniform(-np.pi, np.pi, (64, n)), rng.uniform(0, width, (64, n))
    at = chain_poses(chain, centres[:1] + rng.uniform(-0.01, 0.01, (1, n)))
    goal = np.eye(4)
    goal[:3, :3] = at.frames[0].T @ Rotation.from_rotvec(rng.normal(size=3) * 0.1).as_matrix()
    goal[:3, 3] = at.tcp[0] + rng.normal(size=3) * rng.choice([0.001, 0.05, 0.3])
    use_compiled(True)
    excess = box_excess(chain, goal, TOLERANCES[tolerance], centres, half)
    use_compiled(False)
    want = box_excess(chain, goal, TOLERANCES[tolerance], centres, half)
    assert np.array_equal(np.isinf(excess), np.isinf(want))
    finite = np.isfinite(want)
    assert np.allclose(excess[finite], want[finite], rtol=0, atol=1e-6)
    weights = rng.uniform(0.0, 1.0, (64, n))
    use_compiled(True)
    kids, kid_half = halve_boxes(centres, half, weights, 3)
    want_kids, want_half = halve_boxes_numpy(centres, half, weights, 3)
    assert np.allclose(kids, want_kids, rtol=0, atol=1e-12) and np.array_equal(kid_half, want_half)


def test_without_numba_the_numpy_bounds_go_on(tmp_path):
    """A platform without numba's wheels (and no kernels built ahead of time: an empty ``AHEAD_FOLDER``): once the
    rule would load the compiled bounds, the import fails, a warning says so, and the proof goes on with the numpy
    bounds (the same numbers); asking for the compiled ones fails."""
    code = textwrap.dedent(
        f"""
        import logging, sys
        sys.modules["numba"] = None  # import numba raises ImportError
        logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(message)s")
        import numpy as np
        from timor_core.search.filtering import proof_kernel as pk
        from timor_core.search.filtering.proof_numpy import BoxGoal, measure_boxes_numpy
        from timor_core.common import compiled
        from pathlib import Path
        pk.AHEAD_FOLDER = Path({str(tmp_path)!r})
        compiled.LOAD_AFTER = 0.0
        steps = (np.tile(np.eye(3), (3, 1, 1)), np.array([[0, 0, 0.1], [0.3, 0, 0], [0.2, 0, 0]]))
        goal = BoxGoal(np.array([0.4, 0.1, 0.3]), np.eye(3), 0.01, 0.1, np.array([1.0, 0, 0]), 0.2, (0.005, 0.05), 0.01)
        centres, half = np.array([[0.1, 0.2], [1.0, -2.0]]), np.full((2, 2), 0.3)
        for _ in range(2):
            got = pk.measure_boxes(steps, centres, half, goal)
        want = measure_boxes_numpy(steps, centres, half, goal)
        print("same", np.array_equal(got[0], want[0]) and got[1] == want[1] and np.array_equal(got[2], want[2]))
        pk.use_compiled(True)
        try:
            pk.measure_boxes(steps, centres, half, goal)
        except ImportError:
            print("forced: ImportError")
        """
    )
    env = {k: v for k, v in os.environ.items() if k != "TIMOR_COMPILED"}  # the rule, not the suite's choice
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stderr
    assert "numba is not available" in out.stdout and out.stdout.count("numba is not available") == 1, out.stdout
    assert "same True" in out.stdout and "forced: ImportError" in out.stdout, out.stdout
