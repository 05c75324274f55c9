"""The proofs' bounds in lanes (search/filtering/box_lanes.py ``measure_lanes``, what the fused proofs and sweeps
measure their boxes with): the same excess, weights, centres' misses and near flag as the box-by-box kernels of
box_bounds.py (``poses``, ``position``, ``orientation``) to the last bit, for chains of 1-6 joints, any number of
boxes (chunks of ``LANES``, and the caches of the last angles' cosines carried across their ends), goals with and
without a rotation slack, wrist cap and centres' misses; compiled by numba and as the Python function it compiles."""

from __future__ import annotations

import functools

import numba
import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from timor_core.search.filtering import box_lanes
from timor_core.search.filtering import proof_kernel as pk
from timor_core.search.filtering.box_bounds import trig_table
from timor_core.search.filtering.box_lanes import LANES


@functools.cache
def _kernels() -> tuple:
    """numba's compilations: measure_lanes, and box_bounds' poses, position and orientation."""
    jit = numba.njit(cache=False, fastmath=False, nogil=True)
    boxwise = {name: jit(kernel) for name, kernel in pk.py_kernels(jit).items()}
    return jit(pk.lane_kernels(jit)["measure_lanes"]), boxwise["poses"], boxwise["position"], boxwise["orientation"]


def _boxes(rng: np.random.Generator, n: int, m: int) -> tuple[np.ndarray, np.ndarray]:
    """``m`` boxes as a proof's levels make them: the whole turn, or a small box of it (a deep level's, where the
    first-order bound and the second-order rests decide), halved (across random sides) until there are at least
    ``m``, then ``m`` of them kept in order (siblings share most angles and half-widths: the kernels' caches)."""
    deep = rng.random() < 0.5
    centres = rng.uniform(-np.pi, np.pi, (1, n)) if deep else np.zeros((1, n))
    half = np.full((1, n), np.pi / 2.0 ** int(rng.integers(4, 12)) if deep else np.pi)
    while len(centres) < m:
        centres, half = pk.halve_boxes(centres, half, rng.uniform(0.5, 2.0, (len(centres), n)), int(rng.integers(1, 3)))
    keep = np.sort(rng.choice(len(centres), m, replace=False)) if m < len(centres) else np.arange(m)
    return np.ascontiguousarray(centres[keep]), np.ascontiguousarray(half[keep])


def _case(rng: np.random.Generator, n: int, m: int) -> tuple:
    """A random chain of n joints, m boxes and a goal: (steps, centres, half, goal arrays, params)."""
    rots = Rotation.random(n + 1, random_state=rng.integers(2**31)).as_matrix()
    steps = (np.ascontiguousarray(rots), rng.normal(size=(n + 1, 3)) * 0.2)
    gpos, gaxes = rng.normal(size=3) * 0.3, Rotation.random(random_state=rng.integers(2**31)).as_matrix()
    direction = rng.normal(size=3)
    slack, theta = rng.choice([0.001, 0.05, 0.3, np.inf]), rng.choice([0.0, 0.05, 0.5, 2.0, np.pi])
    params = np.array(
        [slack, theta, rng.choice([0.0, 0.1]), rng.uniform(0, 0.3), rng.uniform(0, 1), rng.uniform(0, 0.2)]
    )
    goal = (np.ascontiguousarray(gpos), np.ascontiguousarray(gaxes), direction / np.linalg.norm(direction))
    return steps, *_boxes(rng, n, m), goal, params


def _boxwise(case: tuple, centres_wanted: bool) -> tuple:
    """box_bounds' kernels one box after the other (what measure_lanes must equal)."""
    _, poses, position, orientation = _kernels()
    (rotations, translations), centres, half, (gpos, gaxes, direction), params = case
    m, n = centres.shape
    tcp, rot, origins, jaxes = np.empty((m, 3)), np.empty((m, 3, 3)), np.empty((m, n, 3)), np.empty((m, n, 3))
    excess, weights, rest = np.empty(m), np.empty((m, n)), np.empty((m, n))
    centre = np.empty(m if centres_wanted else 0)
    trig = trig_table()
    poses(rotations, translations, centres, tcp, rot, origins, jaxes, trig)
    position(tcp, origins, jaxes, half, gpos, params[0], direction, params[2], params[1], params[5], excess, weights,
             rest, trig)  # fmt: skip
    near = orientation(tcp, rot, jaxes, half, rest, gpos, gaxes, params[0], params[1], params[3], params[4], excess,
                       centre, trig)  # fmt: skip
    return excess, weights, centre, near


def _lanes(kernel, case: tuple, centres_wanted: bool) -> tuple:
    (rotations, translations), centres, half, (gpos, gaxes, direction), params = case
    m, n = centres.shape
    excess, weights, centre = np.empty(m), np.empty((m, n)), np.empty(m if centres_wanted else 0)
    near = kernel(rotations, translations, centres, half, gpos, gaxes, direction, params, excess, weights, centre,
                  trig_table())  # fmt: skip
    return excess, weights, centre, near


@pytest.mark.parametrize("sizes", [(0, 1, 2, 7, 40), (LANES - 1, LANES, LANES + 1, 3 * LANES + 5)])
def test_the_lanes_give_the_box_by_box_bounds_bit_for_bit(sizes):
    """measure_lanes, compiled, equals box_bounds' kernels run box by box: excess (refusals' inf included), weights,
    centres' misses and the near flag, to the last bit, on 1-6 joints, box counts within one chunk and across
    chunks' ends, every kind of goal; the cases cover refused and open boxes and both flags."""
    lanes, seen = _kernels()[0], {"inf": 0, "finite": 0, "near": set()}
    rng = np.random.default_rng(sum(sizes))
    for k in range(36):
        case = _case(rng, 1 + k % 6, sizes[k % len(sizes)])
        for centres_wanted in (True, False):
            want, got = _boxwise(case, centres_wanted), _lanes(lanes, case, centres_wanted)
            for name, a, b in zip(("excess", "weights", "centre"), got[:3], want[:3], strict=True):
                assert np.array_equal(a, b), (k, name, np.flatnonzero(a.ravel() != b.ravel())[:5])
            assert got[3] == want[3], k
            seen["inf"] += int(np.isinf(want[0]).sum())
            seen["finite"] += int(np.isfinite(want[0]).sum())
            seen["near"].add(bool(want[3]))
    assert seen["inf"] and seen["finite"], seen
    assert sizes[0] or seen["near"] == {True, False}, seen


def test_the_lanes_python_function_is_what_numba_compiles():
    """The Python function measure_lanes (what numba compiles, run as it is where the fused proofs run in Python)
    gives the compiled one's values, bit for bit, across a chunk's end."""
    rng = np.random.default_rng(3)
    lanes, python = _kernels()[0], pk.lane_kernels()["measure_lanes"]
    for k in range(4):
        case = _case(rng, 2 + k, LANES + 3)
        for a, b in zip(_lanes(python, case, True), _lanes(lanes, case, True), strict=True):
            assert np.array_equal(a, b), k


def test_the_lanes_helpers_are_inlined():
    """What measure_lanes calls per chunk is inlined by numba (proof_kernel.inlining: a compiled call takes and drops a
    reference to each array it is given, ~5 % of the compiled proofs); the bounds' kernels it shares are not."""
    jit = numba.njit(cache=False, fastmath=False, nogil=True)
    names = pk.lane_kernels(jit)["measure_lanes"].__globals__
    helpers = [name for name in box_lanes.LANE_HELPERS if name != "measure_lanes"]
    assert len(helpers) == len(box_lanes.LANE_HELPERS) - 1 > 5
    for name in helpers:
        assert names[name].targetoptions.get("inline") == "always", name
    assert names["cos_sin"].targetoptions.get("inline", "never") == "never"
